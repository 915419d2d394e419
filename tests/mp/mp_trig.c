/*
 * mp_trig - counting events and triggered operations across processes
 * (<portals3_ext.h>), 3 ranks.
 *
 *   1. Forwarding without the host: rank 0 counts the puts that arrive in
 *      its inbox (PTL_CT_COMM) and has armed a triggered put of the whole
 *      inbox to rank 2 at threshold K. Rank 1 makes the K puts. In offload
 *      mode rank 0's application sleeps (no Portals call) meanwhile: only
 *      its NIC thread can count and fire. Rank 2 checks that the bytes it got
 *      are rank 1's, and rank 0's send counter says the put left.
 *      Rank 2's counter of the forward also fires a triggered 1 MiB get from
 *      rank 0 (a rendezvous reply: CMA pull or copy), counted by REPLY.
 *   2. Triggered reductions into another rank: ranks 0 and 2 arm a
 *      PtlTriggeredAtomicPut (SUM of int64, MAX of double) to rank 1's
 *      accumulators on a "go" counter; rank 1 sends each a "go" put. Rank 1's
 *      accumulator counter reaching 4 fires a triggered put of the int64
 *      result back to rank 0 (a chain across ranks). Both results are
 *      checked against a serial computation.
 */
#include "mp_util.h"

#include <portals3_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_IN (MP_PT_USER + 1)
#define PT_FWD (MP_PT_USER + 2)
#define PT_GO (MP_PT_USER + 3)
#define PT_ACC (MP_PT_USER + 4)
#define PT_BACK (MP_PT_USER + 5)
#define PT_BIG (MP_PT_USER + 6)
#define BIG (1u << 20)
#define K 16
#define SEG 512
#define NEL 32

static ptl_handle_ct_t ct_new(struct mp *m)
{
    ptl_handle_ct_t ct;
    MP_CHECK(PtlCTAlloc(m->ni, &ct));
    return ct;
}

static void ct_wait(ptl_handle_ct_t ct, ptl_size_t s, const char *what)
{
    ptl_ct_event_t ev;
    mp_doing(what);
    MP_CHECK(PtlCTWait(ct, s, &ev));
    if (ev.success != s || ev.failure != 0)
        mp_die("%s: counter {%llu, %llu}, expected {%llu, 0}", what,
               (unsigned long long)ev.success, (unsigned long long)ev.failure,
               (unsigned long long)s);
}

static int64_t ival(unsigned r, int i) { return (int64_t)(r * 1000003u) * (i - 7) + (int64_t)i * i; }
static double dval(unsigned r, int i) { return (double)((int)(r * 37u) % 11 - 5) * 0.5 + i * 0.25 - (r == 1 ? 3.0 : 0.0); }

int main(void)
{
    struct mp m;
    mp_init(&m, 3);
    const unsigned r = m.rank;
    static uint8_t inbox[K * SEG], fwd[K * SEG], src[K * SEG];
    static int64_t acc_i[NEL], back_i[NEL], mine_i[NEL];
    static double acc_d[NEL], mine_d[NEL];
    static uint8_t big[BIG];
    ptl_handle_ct_t cbig = PTL_CT_NONE;
    uint64_t gobuf = 0;
    ptl_handle_ct_t cin = PTL_CT_NONE, csend = PTL_CT_NONE, cfwd = PTL_CT_NONE,
                    cgo = PTL_CT_NONE, cacc = PTL_CT_NONE, cback = PTL_CT_NONE;
    ptl_handle_md_t in_md = PTL_INVALID_HANDLE, src_md = PTL_INVALID_HANDLE,
                    mi_md = PTL_INVALID_HANDLE, md_md = PTL_INVALID_HANDLE,
                    acc_i_md = PTL_INVALID_HANDLE, go_md = PTL_INVALID_HANDLE;

    /* ---- set-up, before the barrier -------------------------------------- */
    if (r == 0) {
        cin = ct_new(&m);
        csend = ct_new(&m);
        in_md = mp_post(&m, PT_IN, 1, inbox, sizeof inbox, PTL_MD_THRESH_INF,
                        PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE, PTL_RETAIN, NULL);
        MP_CHECK(PtlMDBindCT(in_md, cin, PTL_CT_COMM | PTL_CT_SEND));
        /* the inbox MD itself is the source of the forward: its SEND_END
         * counts into cin too, so the forward is seen as the K+1st */
        MP_CHECK(PtlTriggeredPut(in_md, 0, sizeof inbox, PTL_NO_ACK_REQ, m.ids[2], PT_FWD, 0, 2,
                                 0, 0, cin, K));
        cback = ct_new(&m);
        ptl_handle_md_t bmd = mp_post(&m, PT_BACK, 5, back_i, sizeof back_i, PTL_MD_THRESH_INF,
                                      PTL_MD_OP_PUT, PTL_EQ_NONE, PTL_RETAIN, NULL);
        MP_CHECK(PtlMDBindCT(bmd, cback, PTL_CT_COMM));
        mp_fill(big, BIG, 0, 9, 0);
        mp_post(&m, PT_BIG, 6, big, BIG, PTL_MD_THRESH_INF, PTL_MD_OP_GET, PTL_EQ_NONE,
                PTL_RETAIN, NULL);
    }
    if (r == 2) {
        cfwd = ct_new(&m);
        ptl_handle_md_t fmd = mp_post(&m, PT_FWD, 2, fwd, sizeof fwd, PTL_MD_THRESH_INF,
                                      PTL_MD_OP_PUT, PTL_EQ_NONE, PTL_RETAIN, NULL);
        MP_CHECK(PtlMDBindCT(fmd, cfwd, PTL_CT_COMM));
        cbig = ct_new(&m);
        ptl_handle_md_t gmd = mp_bind(&m, big, BIG, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        MP_CHECK(PtlMDBindCT(gmd, cbig, PTL_CT_REPLY));
        MP_CHECK(PtlTriggeredGet(gmd, 0, BIG, m.ids[0], PT_BIG, 0, 6, 0, cfwd, 1));
    }
    if (r == 1) {
        mp_fill(src, sizeof src, 1, 7, 0);
        src_md = mp_bind(&m, src, sizeof src, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        csend = ct_new(&m);
        MP_CHECK(PtlMDBindCT(src_md, csend, PTL_CT_SEND));
        /* accumulators start at rank 1's own contribution */
        for (int i = 0; i < NEL; i++) {
            acc_i[i] = ival(1, i);
            acc_d[i] = dval(1, i);
        }
        cacc = ct_new(&m);
        acc_i_md = mp_post(&m, PT_ACC, 10, acc_i, sizeof acc_i, PTL_MD_THRESH_INF,
                           PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE, PTL_RETAIN, NULL);
        ptl_handle_md_t dmd = mp_post(&m, PT_ACC, 11, acc_d, sizeof acc_d, PTL_MD_THRESH_INF,
                                      PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE,
                                      PTL_RETAIN, NULL);
        MP_CHECK(PtlMDBindCT(acc_i_md, cacc, PTL_CT_COMM));
        MP_CHECK(PtlMDBindCT(dmd, cacc, PTL_CT_COMM));
        /* when both ranks' two reductions are in: the int64 result to rank 0 */
        MP_CHECK(PtlTriggeredPut(acc_i_md, 0, sizeof acc_i, PTL_NO_ACK_REQ, m.ids[0], PT_BACK, 0,
                                 5, 0, 0, cacc, 4));
    }
    if (r == 0 || r == 2) {
        for (int i = 0; i < NEL; i++) {
            mine_i[i] = ival(r, i);
            mine_d[i] = dval(r, i);
        }
        mi_md = mp_bind(&m, mine_i, sizeof mine_i, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        md_md = mp_bind(&m, mine_d, sizeof mine_d, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        cgo = ct_new(&m);
        go_md = mp_post(&m, PT_GO, 3, &gobuf, sizeof gobuf, PTL_MD_THRESH_INF, PTL_MD_OP_PUT,
                        PTL_EQ_NONE, PTL_RETAIN, NULL);
        MP_CHECK(PtlMDBindCT(go_md, cgo, PTL_CT_COMM));
        MP_CHECK(PtlTriggeredAtomicPut(mi_md, 0, sizeof mine_i, PTL_NO_ACK_REQ, m.ids[1], PT_ACC,
                                       0, 10, 0, 0, PTL_SUM, PTL_INT64_T, cgo, 1));
        MP_CHECK(PtlTriggeredAtomicPut(md_md, 0, sizeof mine_d, PTL_NO_ACK_REQ, m.ids[1], PT_ACC,
                                       0, 11, 0, 0, PTL_MAX, PTL_DOUBLE, cgo, 1));
    }
    mp_barrier(&m);

    /* ---- 1. forwarding ---------------------------------------------------- */
    if (r == 1) {
        for (int k = 0; k < K; k++)
            MP_CHECK(PtlPutRegion(src_md, (ptl_size_t)k * SEG, SEG, PTL_NO_ACK_REQ, m.ids[0],
                                  PT_IN, 0, 1, (ptl_size_t)k * SEG, 0));
        ct_wait(csend, K, "1: rank 1's puts left");
    }
    if (r == 0) {
        const char *off = getenv("PTL_OFFLOAD");
        if (!off || strcmp(off, "0")) { /* offload: the NIC thread alone counts and fires */
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
        ct_wait(cin, K + 1, "1: inbox full and forwarded");
    }
    if (r == 2) {
        ct_wait(cfwd, 1, "1: forwarded inbox arrived");
        int64_t bad = mp_check_pattern(fwd, sizeof fwd, 1, 7, 0);
        if (bad >= 0)
            mp_die("1: forwarded byte %lld is not rank 1's", (long long)bad);
        mp_log("forwarded %zu bytes checked", sizeof fwd);
        ct_wait(cbig, 1, "1: triggered 1 MiB get replied");
        bad = mp_check_pattern(big, BIG, 0, 9, 0);
        if (bad >= 0)
            mp_die("1: byte %lld of the triggered get is not rank 0's", (long long)bad);
        mp_log("triggered get of %u bytes checked", BIG);
    }
    mp_barrier(&m);

    /* ---- 2. triggered reductions into rank 1, result back to rank 0 -------- */
    if (r == 1) {
        ptl_handle_md_t g = mp_bind(&m, &gobuf, sizeof gobuf, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        MP_CHECK(PtlPut(g, PTL_NO_ACK_REQ, m.ids[0], PT_GO, 0, 3, 0, 0));
        MP_CHECK(PtlPut(g, PTL_NO_ACK_REQ, m.ids[2], PT_GO, 0, 3, 0, 0));
        ct_wait(cacc, 4, "2: four reductions combined");
        for (int i = 0; i < NEL; i++) {
            int64_t want = ival(0, i) + ival(1, i) + ival(2, i);
            double wd = dval(0, i);
            if (dval(1, i) > wd)
                wd = dval(1, i);
            if (dval(2, i) > wd)
                wd = dval(2, i);
            if (acc_i[i] != want || acc_d[i] != wd)
                mp_die("2: element %d: sum %lld max %g, expected %lld %g", i,
                       (long long)acc_i[i], acc_d[i], (long long)want, wd);
        }
        mp_log("reductions checked (%d int64 sums, %d double maxima)", NEL, NEL);
    }
    if (r == 0 || r == 2)
        ct_wait(cgo, 1, "2: go arrived");
    if (r == 0) {
        ct_wait(cback, 1, "2: result came back");
        for (int i = 0; i < NEL; i++)
            if (back_i[i] != ival(0, i) + ival(1, i) + ival(2, i))
                mp_die("2: result element %d is %lld", i, (long long)back_i[i]);
        mp_log("result back at rank 0 checked");
    }
    mp_barrier(&m);
    if (r == 0)
        printf("mp_trig: OK\n");
    mp_fini(&m);
    return 0;
}
