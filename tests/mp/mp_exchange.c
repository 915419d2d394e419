/*
 * mp_exchange - all-pairs put, get and getput between every rank of the job
 * (itself included), checked byte for byte.
 *
 *   usage (under ptlrun): mp_exchange [size ...]     default sizes: 64 100000
 *
 * For each size: every rank puts `size` bytes (with an ACK) into every rank's
 * receive buffer at offset sender*size, and gets `size` bytes from every
 * rank's source buffer into its own buffer at offset peer*size. Then a getput
 * ring: rank r swaps its rank number into rank r+1's word and must get back
 * that rank's initial value.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_RECV (MP_PT_USER + 0)
#define PT_SRC  (MP_PT_USER + 1)
#define PT_WORD (MP_PT_USER + 2)

static void exchange(struct mp *m, uint64_t size, unsigned tag)
{
    const unsigned n = m->size, me = m->rank;
    uint8_t *recv = calloc(n, size ? size : 1), *gdst = calloc(n, size ? size : 1);
    uint8_t *src = malloc(size ? size : 1), *gsrc = malloc(size ? size : 1);
    if (!recv || !gdst || !src || !gsrc)
        mp_die("out of memory for %llu-byte buffers", (unsigned long long)size);
    mp_fill(src, size, me, tag, 0);
    mp_fill(gsrc, size, me, tag + 1000, 0);

    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 16 * n + 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t me_recv, me_src;
    mp_post(m, PT_RECV, tag, recv, n * size, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, &me_recv);
    mp_post(m, PT_SRC, tag, gsrc, size, PTL_MD_THRESH_INF, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE,
            eq, PTL_RETAIN, &me_src);
    ptl_handle_md_t smd = mp_bind(m, src, size, PTL_MD_THRESH_INF, 0, eq);
    ptl_handle_md_t gmd = mp_bind(m, gdst, n * size, PTL_MD_THRESH_INF, 0, eq);
    mp_barrier(m); /* every rank's MEs are posted */

    mp_doing("exchanging: waiting for events");
    for (unsigned i = 0; i < n; i++) {
        unsigned p = (me + i) % n; /* start with a different peer on every rank */
        MP_CHECK(PtlPut(smd, PTL_ACK_REQ, m->ids[p], PT_RECV, 0, tag, me * size, me));
        MP_CHECK(PtlGetRegion(gmd, p * size, size, m->ids[p], PT_SRC, 0, tag, 0));
    }

    /* Per size: n each of SEND_START/END, ACK, PUT_START/END (n senders),
     * REPLY_START/END, GET_START/END (n getters). */
    unsigned cnt[PTL_EVENT_UNLINK + 1] = {0};
    const unsigned total = 9 * n;
    uint8_t *put_from = calloc(n, 1);
    for (unsigned k = 0; k < total; k++) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, MP_WAIT_MS)) {
            char c[512] = "";
            size_t o = 0;
            for (int j = 0; j <= PTL_EVENT_ACK; j++)
                if (cnt[j] != n && j != PTL_EVENT_GETPUT_START && j != PTL_EVENT_GETPUT_END)
                    o += (size_t)snprintf(c + o, sizeof c - o, " %s %u",
                                          PtlEventKindStr((ptl_event_kind_t)j), cnt[j]);
            mp_die("size %llu: only %u of %u events after %d ms; short:%s",
                   (unsigned long long)size, k, total, MP_WAIT_MS, c);
        }
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("size %llu: %s failed (%s)", (unsigned long long)size,
                   PtlEventKindStr(ev.type), PtlNIFailStr(m->ni, ev.ni_fail_type));
        if (ev.type > PTL_EVENT_UNLINK || ev.type == PTL_EVENT_UNLINK ||
            ev.type == PTL_EVENT_GETPUT_START || ev.type == PTL_EVENT_GETPUT_END)
            mp_die("size %llu: unexpected %s", (unsigned long long)size,
                   PtlEventKindStr(ev.type));
        cnt[ev.type]++;
        switch (ev.type) {
        case PTL_EVENT_PUT_END: {
            unsigned s = (unsigned)ev.hdr_data;
            if (s >= n || put_from[s]++)
                mp_die("size %llu: PUT_END with bad or repeated sender %u",
                       (unsigned long long)size, s);
            if (ev.initiator.nid != m->ids[s].nid || ev.initiator.pid != m->ids[s].pid)
                mp_die("PUT_END from rank %u: initiator %u/%u, expected %u/%u", s,
                       ev.initiator.nid, ev.initiator.pid, m->ids[s].nid, m->ids[s].pid);
            if (ev.mlength != size || ev.rlength != size || ev.offset != s * size)
                mp_die("PUT_END from rank %u: rlength %llu mlength %llu offset %llu, expected "
                       "%llu/%llu/%llu", s, (unsigned long long)ev.rlength,
                       (unsigned long long)ev.mlength, (unsigned long long)ev.offset,
                       (unsigned long long)size, (unsigned long long)size,
                       (unsigned long long)(s * size));
            break;
        }
        case PTL_EVENT_ACK:
        case PTL_EVENT_REPLY_END:
        case PTL_EVENT_GET_END:
            if (ev.mlength != size)
                mp_die("size %llu: %s with mlength %llu", (unsigned long long)size,
                       PtlEventKindStr(ev.type), (unsigned long long)ev.mlength);
            break;
        default:
            break;
        }
    }
    for (int k = 0; k <= PTL_EVENT_ACK; k++)
        if (k != PTL_EVENT_GETPUT_START && k != PTL_EVENT_GETPUT_END && cnt[k] != n)
            mp_die("size %llu: %u %s events, expected %u", (unsigned long long)size, cnt[k],
                   PtlEventKindStr((ptl_event_kind_t)k), n);
    for (unsigned p = 0; p < n; p++) {
        int64_t bad = mp_check_pattern(recv + p * size, size, p, tag, 0);
        if (bad >= 0)
            mp_die("size %llu: byte %lld put by rank %u is wrong", (unsigned long long)size,
                   (long long)bad, p);
        bad = mp_check_pattern(gdst + p * size, size, p, tag + 1000, 0);
        if (bad >= 0)
            mp_die("size %llu: byte %lld got from rank %u is wrong", (unsigned long long)size,
                   (long long)bad, p);
    }
    mp_doing("after the exchange");
    mp_expect_none(eq, 20, "after the exchange");
    mp_barrier(m); /* nobody sends to these MEs any more */
    MP_CHECK(PtlMEUnlink(me_recv));
    MP_CHECK(PtlMEUnlink(me_src));
    MP_CHECK(PtlMDUnlink(smd));
    MP_CHECK(PtlMDUnlink(gmd));
    MP_CHECK(PtlEQFree(eq));
    free(put_from);
    free(recv);
    free(gdst);
    free(src);
    free(gsrc);
}

static void getput_ring(struct mp *m)
{
    const unsigned n = m->size, me = m->rank;
    uint64_t word = 1000u * me + 7, putv = me, getv = 0;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t wme;
    mp_post(m, PT_WORD, 0x55, &word, sizeof word, PTL_MD_THRESH_INF,
            PTL_MD_OP_GET | PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
            eq, PTL_RETAIN, &wme);
    ptl_handle_md_t pmd = mp_bind(m, &putv, sizeof putv, 1, PTL_MD_EVENT_START_DISABLE, eq);
    ptl_handle_md_t gmd = mp_bind(m, &getv, sizeof getv, 1, PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(m);
    unsigned t = (me + 1) % n;
    MP_CHECK(PtlGetPut(gmd, pmd, m->ids[t], PT_WORD, 0, 0x55, 0, me));
    static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_REPLY_END,
                                         PTL_EVENT_GETPUT_END};
    ptl_event_t ev[3];
    mp_expect_all(eq, k, 3, ev, "getput ring");
    if (getv != 1000u * t + 7)
        mp_die("getput from rank %u returned %llu, expected %u", t, (unsigned long long)getv,
               1000u * t + 7);
    if (ev[1].mlength != sizeof getv || ev[2].mlength != sizeof word)
        mp_die("getput: REPLY_END mlength %llu, GETPUT_END mlength %llu",
               (unsigned long long)ev[1].mlength, (unsigned long long)ev[2].mlength);
    mp_barrier(m);
    unsigned pred = (me + n - 1) % n;
    if (word != pred)
        mp_die("getput: my word is %llu, expected %u (swapped in by rank %u)",
               (unsigned long long)word, pred, pred);
    MP_CHECK(PtlMEUnlink(wme));
    (void)PtlMDUnlink(pmd); /* threshold 1, used up: may be gone already */
    (void)PtlMDUnlink(gmd);
    MP_CHECK(PtlEQFree(eq));
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    uint64_t def[] = {64, 100000};
    int nsz = argc > 1 ? argc - 1 : 2;
    for (int i = 0; i < nsz; i++) {
        uint64_t size = def[i % 2];
        if (argc > 1) {
            char *end;
            size = strtoull(argv[i + 1], &end, 0);
            if (*end || size > (1ull << 30))
                mp_die("bad size '%s'", argv[i + 1]);
        }
        exchange(&m, size, 10 + (unsigned)i);
    }
    getput_ring(&m);
    if (m.rank == 0)
        printf("mp_exchange: %u ranks: put/get/getput all pairs OK\n", m.size);
    mp_fini(&m);
    return 0;
}
