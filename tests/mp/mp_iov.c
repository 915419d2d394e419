/*
 * mp_iov - iovec MDs (PTL_MD_IOVEC) as the source and the target of
 * rendezvous-size transfers (an adversarial audit, 2026-11-30): pieces of
 * uneven sizes with gaps between them, local and remote offsets.
 *
 *   usage (under ptlrun, 2 ranks or more): mp_iov TOTAL NSRC NDST [LOFF ROFF]
 *
 * Rank 0's source MD has NSRC pieces (of a buffer twice TOTAL, with gaps)
 * and is also exposed for gets; rank 1 has a target MD of NDST pieces for
 * puts and another for its get. Round 1: rank 0 PtlPutRegion(LOFF, TOTAL -
 * max(LOFF, ROFF)) into rank 1 at ROFF (remotely managed offset), ACK.
 * Round 2: rank 1 PtlGetRegion of as many bytes into its MD at LOFF from
 * rank 0's at ROFF. Every byte is checked, and the gaps must be untouched.
 *
 * Over ofi a source of more than one piece was registered for the peer's
 * reads as its first piece only (tcp's fi_mr_regv takes one, mr_iov_limit
 * 1, and says nothing): every such put and get failed, and the job with it.
 * The engine now streams such memory through the queues (rndv_iov_max).
 */
#include "mp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT 6
static struct mp m;

/* split total into n pieces of uneven size (at least 1 each), placed in a
 * buffer of 2*total+n*64 with gaps; fill iov */
static uint8_t *mkiov(ptl_md_iovec_t *iov, int n, uint64_t total, uint64_t *bufsz, unsigned seed)
{
    uint64_t sz = 2 * total + (uint64_t)n * 64 + 4096;
    uint8_t *b = malloc(sz);
    if (!b)
        mp_die("out of memory");
    memset(b, 0xAB, sz);
    uint64_t left = total, pos = 17;
    srand(seed);
    for (int i = 0; i < n; i++) {
        uint64_t l;
        if (i == n - 1)
            l = left;
        else {
            uint64_t avg = left / (uint64_t)(n - i);
            l = avg / 2 + (uint64_t)rand() % (avg + 1);
            if (l == 0) l = 1;
            if (l > left - (uint64_t)(n - 1 - i)) l = left - (uint64_t)(n - 1 - i);
        }
        iov[i].iov_base = b + pos;
        iov[i].iov_len = l;
        pos += l + 1 + (uint64_t)rand() % 61; /* gap */
        left -= l;
    }
    *bufsz = sz;
    return b;
}

static void fill_iov(ptl_md_iovec_t *iov, int n, unsigned who, unsigned tag)
{
    uint64_t o = 0;
    for (int i = 0; i < n; i++) {
        mp_fill(iov[i].iov_base, iov[i].iov_len, who, tag, o);
        o += iov[i].iov_len;
    }
}

/* check that bytes [from, from+len) of the iovec concatenation hold pattern
 * (who,tag) starting at pattern index pfrom, others 0xAB; gaps untouched */
static void check_iov(const char *what, ptl_md_iovec_t *iov, int n, uint8_t *buf, uint64_t bufsz,
                      uint64_t from, uint64_t len, unsigned who, unsigned tag, uint64_t pfrom)
{
    uint64_t o = 0;
    uint8_t *covered = calloc(bufsz, 1);
    if (!covered)
        mp_die("out of memory");
    for (int i = 0; i < n; i++) {
        uint8_t *p = iov[i].iov_base;
        for (uint64_t k = 0; k < iov[i].iov_len; k++, o++) {
            covered[p + k - buf] = 1;
            uint8_t want = (o >= from && o < from + len) ? mp_pattern(who, tag, pfrom + o - from)
                                                          : 0xAB;
            if (p[k] != want)
                mp_die("%s: byte %llu of the iovec (piece %d +%llu) is %#x, want %#x", what,
                       (unsigned long long)o, i, (unsigned long long)k, p[k], want);
        }
    }
    for (uint64_t k = 0; k < bufsz; k++)
        if (!covered[k] && buf[k] != 0xAB)
            mp_die("%s: gap byte %llu of the buffer was written (%#x)", what,
                   (unsigned long long)k, buf[k]);
    free(covered);
}

static ptl_event_t want(ptl_handle_eq_t eq, ptl_event_kind_t k, const char *what)
{
    for (;;) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, 30000))
            mp_die("%s: no %s", what, PtlEventKindStr(k));
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("%s: %s failed (%u) mlength %llu", what, PtlEventKindStr(ev.type),
                   ev.ni_fail_type, (unsigned long long)ev.mlength);
        if (ev.type == k)
            return ev;
    }
}

/* Attach an ME (any source, match bits `bits`) with an iovec MD over iov[n]
 * that remote operations `op` may use at remotely managed offsets. */
static void expose(ptl_handle_eq_t eq, ptl_md_iovec_t *iov, int n, unsigned op,
                   ptl_match_bits_t bits, ptl_handle_me_t *me)
{
    ptl_md_t d = {.start = iov, .length = (ptl_size_t)n, .threshold = PTL_MD_THRESH_INF,
                  .options = PTL_MD_IOVEC | op | PTL_MD_MANAGE_REMOTE, .eq_handle = eq};
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    ptl_handle_md_t md;
    MP_CHECK(PtlMEAttach(m.ni, PT, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, me));
    MP_CHECK(PtlMDAttach(*me, d, PTL_RETAIN, &md));
}

int main(int argc, char **argv)
{
    if (argc < 4)
        mp_die("usage: mp_iov TOTAL NSRC NDST [LOFF ROFF]");
    uint64_t total = strtoull(argv[1], NULL, 0);
    int ns = atoi(argv[2]), nd = atoi(argv[3]);
    uint64_t loff = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
    uint64_t roff = argc > 5 ? strtoull(argv[5], NULL, 0) : 0;
    if (ns < 1 || ns > 64 || nd < 1 || nd > 64 || total < (uint64_t)(ns > nd ? ns : nd) ||
        loff >= total || roff >= total)
        mp_die("mp_iov: 1-64 pieces, TOTAL at least the pieces, offsets below TOTAL");
    uint64_t xl = total - (loff > roff ? loff : roff);
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    ptl_md_iovec_t siov[64], diov[64], giov[64];
    uint64_t ssz = 0, dsz = 0, gsz = 0;
    uint8_t *sb = NULL, *db = NULL, *gb = NULL;
    ptl_handle_me_t me;
    if (m.rank == 0) {
        sb = mkiov(siov, ns, total, &ssz, 11);
        fill_iov(siov, ns, 0, 3);
        expose(eq, siov, ns, PTL_MD_OP_GET, 2, &me);
    } else if (m.rank == 1) {
        db = mkiov(diov, nd, total, &dsz, 22);
        gb = mkiov(giov, nd, total, &gsz, 33);
        expose(eq, diov, nd, PTL_MD_OP_PUT, 1, &me);
    }
    mp_barrier(&m);
    /* round 1: put */
    int skip1 = getenv("SKIP_PUT") != NULL;
    if (skip1) {
    } else if (m.rank == 0) {
        ptl_md_t d = {.start = siov, .length = (ptl_size_t)ns, .threshold = PTL_MD_THRESH_INF,
                      .options = PTL_MD_IOVEC, .eq_handle = eq};
        ptl_handle_md_t smd;
        MP_CHECK(PtlMDBind(m.ni, d, PTL_RETAIN, &smd));
        MP_CHECK(PtlPutRegion(smd, loff, xl, PTL_ACK_REQ, m.ids[1], PT, 0, 1, roff, 0));
        ptl_event_t ev = want(eq, PTL_EVENT_ACK, "put");
        if (ev.mlength != xl)
            mp_die("put: ACK mlength %llu, want %llu", (unsigned long long)ev.mlength,
                   (unsigned long long)xl);
    } else if (m.rank == 1) {
        ptl_event_t ev = want(eq, PTL_EVENT_PUT_END, "put target");
        if (ev.mlength != xl || ev.offset != roff || ev.rlength != xl)
            mp_die("put target: mlength %llu offset %llu rlength %llu", (unsigned long long)ev.mlength,
                   (unsigned long long)ev.offset, (unsigned long long)ev.rlength);
        check_iov("put target", diov, nd, db, dsz, roff, xl, 0, 3, loff);
    }
    mp_barrier(&m);
    /* round 2: get */
    if (m.rank == 1) {
        ptl_md_t d = {.start = giov, .length = (ptl_size_t)nd, .threshold = PTL_MD_THRESH_INF,
                      .options = PTL_MD_IOVEC, .eq_handle = eq};
        ptl_handle_md_t gmd;
        MP_CHECK(PtlMDBind(m.ni, d, PTL_RETAIN, &gmd));
        MP_CHECK(PtlGetRegion(gmd, loff, xl, m.ids[0], PT, 0, 2, roff));
        ptl_event_t ev = want(eq, PTL_EVENT_REPLY_END, "get");
        if (ev.mlength != xl || ev.offset != loff)
            mp_die("get: REPLY_END mlength %llu offset %llu", (unsigned long long)ev.mlength,
                   (unsigned long long)ev.offset);
        check_iov("get", giov, nd, gb, gsz, loff, xl, 0, 3, roff);
    } else if (m.rank == 0) {
        ptl_event_t ev = want(eq, PTL_EVENT_GET_END, "get target");
        if (ev.mlength != xl || ev.offset != roff)
            mp_die("get target: mlength %llu offset %llu", (unsigned long long)ev.mlength,
                   (unsigned long long)ev.offset);
    }
    mp_barrier(&m);
    if (m.rank == 0)
        printf("mp_iov %llu %d %d %llu %llu: OK\n", (unsigned long long)total, ns, nd,
               (unsigned long long)loff, (unsigned long long)roff);
    mp_fini(&m);
    free(sb);
    free(db);
    free(gb);
    return 0;
}
