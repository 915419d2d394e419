/*
 * mp_sizes - every size around the protocol switch, and large transfers,
 * between pairs of ranks (rank 2k initiates, rank 2k+1 is the target; an odd
 * last rank only joins the barriers), checked byte for byte, with local and
 * remote offsets and with truncation.
 *
 *   usage (under ptlrun): mp_sizes size [size ...]
 *
 * Register it with a known PTL_EAGER_MAX (e.g. 1024) and the sizes 0, 1,
 * E-1, E, E+1, 1 MiB, 64 MiB: eager, the boundary, rendezvous. For each size S:
 *   put   PtlPutRegion(local offset LO, S bytes) to remote offset RO of an MD
 *         of RO+S+GUARD bytes: target bytes [RO, RO+S) = source bytes
 *         [LO, LO+S), everything else untouched; PUT_END/ACK/SEND_END lengths.
 *   put, truncated: target MD of RO + S/2 bytes with PTL_MD_TRUNCATE:
 *         mlength S/2 (PUT_END and ACK), nothing written past the MD.
 *   get   PtlGetRegion(local offset LO, S bytes, remote offset RO): REPLY_END
 *         mlength S at offset LO, data = target bytes [RO, RO+S).
 *   get, truncated: target MD of RO + S/2 bytes with PTL_MD_TRUNCATE.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_S (MP_PT_USER + 4)
#define LO 5
#define RO 3
#define GUARD 64
#define FILLER 0xEE

static uint8_t *xalloc(uint64_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        mp_die("out of memory (%llu bytes)", (unsigned long long)n);
    return p;
}

static void check_filler(const uint8_t *p, uint64_t from, uint64_t to, const char *what,
                         uint64_t size)
{
    for (uint64_t i = from; i < to; i++)
        if (p[i] != FILLER)
            mp_die("size %llu: %s: byte %llu outside the transfer was written",
                   (unsigned long long)size, what, (unsigned long long)i);
}

static void want_len(const ptl_event_t *ev, uint64_t mlen, uint64_t size, const char *what)
{
    if (ev->mlength != mlen)
        mp_die("size %llu: %s: %s mlength %llu, expected %llu", (unsigned long long)size, what,
               PtlEventKindStr(ev->type), (unsigned long long)ev->mlength,
               (unsigned long long)mlen);
}

/* One put or get, plain (trunc = false) or into a half-size truncating MD. */
static void one(struct mp *m, ptl_handle_eq_t eq, uint64_t size, unsigned tag, bool get,
                bool trunc)
{
    const bool ini = (m->rank & 1) == 0 && m->rank + 1 < m->size;
    const bool tgt = (m->rank & 1) == 1;
    const unsigned peer = m->rank ^ 1u;
    const uint64_t tlen = trunc ? RO + size / 2 : RO + size; /* target MD length */
    const uint64_t mlen = tlen - RO;                          /* bytes that move   */
    const char *what = get ? (trunc ? "truncated get" : "get")
                           : (trunc ? "truncated put" : "put");
    uint8_t *buf = NULL;
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;

    if (tgt) {
        buf = xalloc(tlen + GUARD);
        if (get) {
            mp_fill(buf, tlen, m->rank, tag, 0);
            memset(buf + tlen, FILLER, GUARD);
        } else {
            memset(buf, FILLER, tlen + GUARD);
        }
        unsigned opts = PTL_MD_MANAGE_REMOTE | (get ? PTL_MD_OP_GET : PTL_MD_OP_PUT) |
                        (trunc ? PTL_MD_TRUNCATE : 0);
        mp_post(m, PT_S, tag, buf, tlen, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, &me);
    } else if (ini) {
        buf = xalloc(LO + size + GUARD);
        if (get)
            memset(buf, FILLER, LO + size + GUARD);
        else
            mp_fill(buf, LO + size + GUARD, m->rank, tag, 0);
        md = mp_bind(m, buf, LO + size + GUARD, PTL_MD_THRESH_INF, 0, eq);
    }
    mp_barrier(m);

    if (ini) {
        ptl_event_t ev[3];
        if (get) {
            static const ptl_event_kind_t k[] = {PTL_EVENT_REPLY_START, PTL_EVENT_REPLY_END};
            MP_CHECK(PtlGetRegion(md, LO, size, m->ids[peer], PT_S, 0, tag, RO));
            mp_expect_all(eq, k, 2, ev, what);
            want_len(&ev[1], mlen, size, what);
            if (ev[1].offset != LO)
                mp_die("size %llu: %s: REPLY_END offset %llu, expected %d",
                       (unsigned long long)size, what, (unsigned long long)ev[1].offset, LO);
            int64_t bad = mp_check_pattern(buf + LO, mlen, peer, tag, RO);
            if (bad >= 0)
                mp_die("size %llu: %s: byte %lld of the reply is wrong",
                       (unsigned long long)size, what, (long long)bad);
            check_filler(buf, 0, LO, what, size);
            check_filler(buf, LO + mlen, LO + size + GUARD, what, size);
        } else {
            static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END,
                                                 PTL_EVENT_ACK};
            MP_CHECK(PtlPutRegion(md, LO, size, PTL_ACK_REQ, m->ids[peer], PT_S, 0, tag, RO,
                                  size));
            mp_expect_all(eq, k, 3, ev, what);
            want_len(&ev[1], size, size, what);
            want_len(&ev[2], mlen, size, what);
        }
    } else if (tgt) {
        ptl_event_kind_t ks = get ? PTL_EVENT_GET_START : PTL_EVENT_PUT_START;
        ptl_event_kind_t ke = get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END;
        mp_expect(eq, ks, what);
        ptl_event_t ev = mp_expect(eq, ke, what);
        want_len(&ev, mlen, size, what);
        if (ev.rlength != size || ev.offset != RO)
            mp_die("size %llu: %s: %s rlength %llu offset %llu, expected %llu/%d",
                   (unsigned long long)size, what, PtlEventKindStr(ke),
                   (unsigned long long)ev.rlength, (unsigned long long)ev.offset,
                   (unsigned long long)size, RO);
        if (!get) {
            int64_t bad = mp_check_pattern(buf + RO, mlen, peer, tag, LO);
            if (bad >= 0)
                mp_die("size %llu: %s: byte %lld put at offset %d is wrong",
                       (unsigned long long)size, what, (long long)bad, RO);
            check_filler(buf, 0, RO, what, size);
            check_filler(buf, RO + mlen, tlen + GUARD, what, size);
        } else {
            int64_t bad = mp_check_pattern(buf, tlen, m->rank, tag, 0);
            if (bad >= 0)
                mp_die("size %llu: %s: the get modified the source at %lld",
                       (unsigned long long)size, what, (long long)bad);
        }
    }
    mp_barrier(m); /* both sides are done with the buffers */
    if (tgt)
        MP_CHECK(PtlMEUnlink(me));
    if (ini)
        MP_CHECK(PtlMDUnlink(md));
    free(buf);
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (argc < 2)
        mp_die("usage: mp_sizes size [size ...]");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    for (int i = 1; i < argc; i++) {
        char *end;
        uint64_t size = strtoull(argv[i], &end, 0);
        if (*end || size > (1ull << 31))
            mp_die("bad size '%s'", argv[i]);
        unsigned tag = 100 + 4 * (unsigned)i;
        one(&m, eq, size, tag, false, false);
        one(&m, eq, size, tag + 1, false, true);
        one(&m, eq, size, tag + 2, true, false);
        one(&m, eq, size, tag + 3, true, true);
        if (m.rank == 0)
            printf("mp_sizes: %llu bytes: put, truncated put, get, truncated get OK\n",
                   (unsigned long long)size);
    }
    mp_fini(&m);
    return 0;
}
