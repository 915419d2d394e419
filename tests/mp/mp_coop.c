/*
 * mp_coop - the cooperative rendezvous (protocols/wire.h, PUSH/PDONE): in a
 * large CMA put the target pulls the first part while the initiator writes
 * the rest straight into the target's MD.
 *
 *   usage (under ptlrun -n 2): mp_coop
 *   White-box: reads each NI's cooperative counters (engine/nic.h) to check
 *   which path the puts took; everything else goes through the Portals API.
 *
 * Rank 0 initiates and rank 1 is the target, then both put to each other at
 * once. Every put asks for an ACK and is checked byte for byte at the
 * target, with guard bytes before and after the region it may write; the
 * events' lengths and offsets are checked on both sides:
 *   contig   contiguous MDs; sizes around PTL_RNDV_COOP_MIN and odd ones;
 *            local offset 5, remote offset 3 (nothing page aligned)
 *   iov      the target MD an iovec list of 7 pieces of odd lengths, the
 *            initiator MD one of 5
 *   iov64    the target MD as many pieces as an MD may have (max_md_iovecs)
 *   trunc    the target MD holds 3/4 of the put (PTL_MD_TRUNCATE): mlength
 *            and the ACK say 3/4, nothing past it is written
 *   window   8 puts in flight at once into one MD
 *   busy     the initiator computes for 500 ms without calling the library
 *            right after a 4 MiB put: the target's PUT_END must come first
 *            (in host-matching mode the target takes the part back)
 *   both     both ranks put to each other at the same time
 * Counters: with cooperation on (PTL_RNDV_COOP_MIN <= the sizes, CMA
 * working) the target split exactly the puts the rule allows, and each part
 * was written by exactly one side: the initiator (a PUSH served) or the
 * target, which took it back because the initiator had not claimed it when
 * the target's own part was done (shm_region.h, "Claim words"), or which the
 * initiator answered "0 written" (no op free: a short PDONE). With
 * PTL_RNDV_COOP_TAKEBACK=0 the target never takes a part back, so the
 * initiator pushes every part (or, with MP_COOP_RANK0_OPS=2, which gives rank
 * 0 PTL_MAX_OPS=2, answers some short). With PTL_RNDV_COOP_MIN=0 nothing
 * is split. Without CMA (refused) the test
 * exits 77: skipped.
 */
#include "api_int.h"
#include "mp_util.h"
#include "shm_region.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_C (MP_PT_USER + 9)
#define GUARD 4096
#define FILLER 0xEE
#define LO 5
#define RO 3
#define W 8

static struct mp m;
static uint64_t g_coop_min;  /* PTL_RNDV_COOP_MIN in force (0: off)        */
static unsigned g_expect_split; /* puts the target should have split so far */

static uint8_t *xalloc(uint64_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        mp_die("out of memory (%llu bytes)", (unsigned long long)n);
    return p;
}

struct counters {
    uint32_t split, push, shrt, stolen;
};
static struct counters counters(void)
{
    struct pt_nic *nic = pt_api_ni(m.ni);
    struct counters c = {LD_RELAXED(&nic->coop_split), LD_RELAXED(&nic->coop_push),
                         LD_RELAXED(&nic->coop_short), LD_RELAXED(&nic->coop_stolen)};
    return c;
}

/* Test-private words in the region header's padding (nothing else uses
 * them): each rank's counters, for its peer to read after a barrier. */
static _Atomic uint32_t *peer_board(unsigned rank)
{
    static char *region;
    if (!region)
        region = mp_map_job_region();
    return (_Atomic uint32_t *)(region + offsetof(struct pt_shm_hdr, pad_) + 256 + 16 * rank);
}

/* The target's side of one put (or of W puts into one MD): post, barrier,
 * collect PUT_END(s), check data and guards. `pieces` > 0: the MD is an
 * iovec list of that many pieces over the same buffer. */
static void target(unsigned tag, uint64_t size, uint64_t room, int pieces, int nputs,
                   ptl_handle_eq_t eq, bool barrier_first)
{
    uint64_t span = room * (uint64_t)nputs;
    uint8_t *buf = xalloc(span + 2 * GUARD);
    memset(buf, FILLER, span + 2 * GUARD);
    uint8_t *region = buf + GUARD;
    ptl_md_iovec_t *iov = NULL;
    void *start = region;
    ptl_size_t len = span;
    unsigned opt = PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_MANAGE_REMOTE;
    if (pieces > 0) {
        iov = calloc((size_t)pieces, sizeof *iov);
        uint64_t at = 0;
        for (int i = 0; i < pieces; i++) { /* odd lengths, the last takes the rest */
            uint64_t l = i + 1 < pieces ? span / (uint64_t)pieces + (uint64_t)(i * 37 % 11) : span - at;
            iov[i].iov_base = region + at;
            iov[i].iov_len = l;
            at += l;
        }
        start = iov;
        len = (ptl_size_t)pieces;
        opt |= PTL_MD_IOVEC;
    }
    ptl_handle_me_t me;
    ptl_handle_md_t md = mp_post(&m, PT_C, tag, start, len, PTL_MD_THRESH_INF, opt, eq,
                                 PTL_UNLINK, &me);
    if (barrier_first)
        mp_barrier(&m); /* the MD is there before any put leaves */
    uint64_t want = size < room - RO ? size : room - RO;
    int starts = 0, ends = 0;
    for (int k = 0; k < 2 * nputs; k++) { /* the puts' events may interleave */
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, MP_WAIT_MS))
            mp_die("tag %u: only %d of %d target events", tag, k, 2 * nputs);
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("tag %u: target event %d failed (%d)", tag, (int)ev.type, (int)ev.ni_fail_type);
        if (ev.type == PTL_EVENT_PUT_START) {
            starts++;
            continue;
        }
        if (ev.type != PTL_EVENT_PUT_END || ++ends > starts)
            mp_die("tag %u: unexpected target event %d", tag, (int)ev.type);
        if (ev.mlength != want || ev.rlength != size)
            mp_die("tag %u: PUT_END mlength %llu rlength %llu, expected %llu %llu", tag,
                   (unsigned long long)ev.mlength, (unsigned long long)ev.rlength,
                   (unsigned long long)want, (unsigned long long)size);
        if (ev.offset % room != RO)
            mp_die("tag %u: PUT_END offset %llu", tag, (unsigned long long)ev.offset);
    }
    /* Every byte of each put's window: the pattern where it was written,
     * the filler elsewhere (guards, the truncated tail). */
    for (int k = 0; k < nputs; k++) {
        uint64_t base = room * (uint64_t)k;
        uint64_t n = size < room - RO ? size : room - RO;
        int64_t bad = mp_check_pattern(region + base + RO, n, 0, tag + (unsigned)k, LO);
        if (bad >= 0)
            mp_die("tag %u put %d (size %llu): byte %lld of the data is wrong", tag, k,
                   (unsigned long long)size, (long long)bad);
        for (uint64_t i = 0; i < RO; i++)
            if (region[base + i] != FILLER)
                mp_die("tag %u put %d: byte before the put's offset written", tag, k);
        for (uint64_t i = base + RO + n; i < base + room; i++)
            if (region[i] != FILLER)
                mp_die("tag %u put %d: byte %llu past the put written", tag, k,
                       (unsigned long long)(i - base));
    }
    for (uint64_t i = 0; i < GUARD; i++)
        if (buf[i] != FILLER || region[span + i] != FILLER)
            mp_die("tag %u: a guard byte was written", tag);
    MP_CHECK(PtlMEUnlink(me));
    (void)md;
    free(iov);
    free(buf);
}

/* The initiator waits for its events the two ways clients do: sleeping in
 * PtlEQPoll (g_spin false) or spinning on PtlEQGet, which keeps it in the
 * library, ready to claim a PUSH at once. */
static bool g_spin;
static bool next_event(ptl_handle_eq_t eq, ptl_event_t *ev)
{
    if (!g_spin)
        return mp_poll(eq, ev, MP_WAIT_MS);
    uint64_t t0 = mp_now_ms();
    for (;;) {
        int rc = PtlEQGet(eq, ev);
        if (rc == PTL_OK)
            return true;
        if (rc != PTL_EQ_EMPTY)
            mp_die("PtlEQGet returned %d", rc);
        if (mp_now_ms() - t0 > MP_WAIT_MS)
            return false;
    }
}

/* The initiator's side: W = nputs puts of size bytes, put k into the
 * target's window k (remote offset k * room + RO), from local offset LO of
 * its own buffer k. `pieces` > 0: the source MD is an iovec list. */
static void initiator(unsigned tag, uint64_t size, uint64_t room, int pieces, int nputs,
                      unsigned peer, ptl_handle_eq_t eq, bool barrier_first)
{
    uint8_t *src[W];
    ptl_handle_md_t md[W];
    ptl_md_iovec_t iov[W][5];
    if (barrier_first)
        mp_barrier(&m);
    for (int k = 0; k < nputs; k++) {
        src[k] = xalloc(size + LO);
        mp_fill(src[k] + LO, size, 0, tag + (unsigned)k, LO);
        if (pieces > 0) {
            uint64_t total = size + LO, at = 0;
            for (int i = 0; i < 5; i++) {
                uint64_t l = i < 4 ? total / 5 + (uint64_t)i * 3 : total - at;
                iov[k][i].iov_base = src[k] + at;
                iov[k][i].iov_len = l;
                at += l;
            }
            md[k] = mp_bind(&m, iov[k], 5, PTL_MD_THRESH_INF, PTL_MD_IOVEC, eq);
        } else {
            md[k] = mp_bind(&m, src[k], size + LO, PTL_MD_THRESH_INF, 0, eq);
        }
    }
    for (int k = 0; k < nputs; k++)
        MP_CHECK(PtlPutRegion(md[k], LO, size, PTL_ACK_REQ, m.ids[peer], PT_C, 0, tag,
                              room * (uint64_t)k + RO, 0));
    uint64_t want = size < room - RO ? size : room - RO;
    for (int k = 0; k < 3 * nputs; k++) {
        ptl_event_t ev;
        if (!next_event(eq, &ev))
            mp_die("tag %u: only %d of %d initiator events", tag, k, 3 * nputs);
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("tag %u: event %d failed (%d)", tag, (int)ev.type, (int)ev.ni_fail_type);
        if (ev.type == PTL_EVENT_ACK && ev.mlength != want)
            mp_die("tag %u: ACK mlength %llu, expected %llu", tag, (unsigned long long)ev.mlength,
                   (unsigned long long)want);
        if (ev.type != PTL_EVENT_ACK && ev.type != PTL_EVENT_SEND_START &&
            ev.type != PTL_EVENT_SEND_END)
            mp_die("tag %u: unexpected event %d", tag, (int)ev.type);
    }
    for (int k = 0; k < nputs; k++) {
        MP_CHECK(PtlMDUnlink(md[k]));
        free(src[k]);
    }
}

/* One case, rank 0 -> rank 1; `split` says whether the target should split
 * each put of it. */
static void one_way(const char *name, unsigned tag, uint64_t size, uint64_t room, int tpieces,
                    int ipieces, int nputs, bool split, ptl_handle_eq_t eq)
{
    if (m.rank == 0)
        initiator(tag, size, room, ipieces, nputs, 1, eq, true);
    else
        target(tag, size, room, tpieces, nputs, eq, true);
    if (split) /* counted on both ranks: each checks its side of it */
        g_expect_split += (unsigned)nputs;
    mp_barrier(&m);
    printf("rank %u: %s: %d x %llu bytes OK\n", m.rank, name, nputs, (unsigned long long)size);
}

int main(void)
{
    /* MP_COOP_RANK0_OPS=n: rank 0 (the initiator) gets PTL_MAX_OPS=n, so
     * PUSHes find no op free and are answered short. */
    const char *ops0 = getenv("MP_COOP_RANK0_OPS"), *rid = getenv("PTL_MY_RID");
    bool tiny_ops = ops0 != NULL;
    if (tiny_ops && rid && atoi(rid) == 0)
        setenv("PTL_MAX_OPS", ops0, 1);
    mp_init(&m, 2);
    if (m.size != 2)
        mp_die("run with exactly 2 ranks");
    struct pt_nic *nic = pt_api_ni(m.ni);
    if (!nic->cma_ok) {
        printf("rank %u: CMA unavailable: skipped\n", m.rank);
        mp_fini(&m);
        return 77;
    }
    g_coop_min = nic->coop_min;
    bool takeback = nic->coop_takeback;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    uint64_t cmin = g_coop_min ? g_coop_min : 65536;
    bool on = g_coop_min != 0;
    /* contig: around the threshold, and large odd sizes */
    uint64_t sizes[] = {cmin - 1, cmin, cmin + 1, (1u << 20) + 4097, (4u << 20) - 3};
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        uint64_t s = sizes[i];
        one_way("contig", 100 + i * W, s, s + RO + 64, 0, 0, 1,
                on && s >= g_coop_min && s >= nic->cma_min, eq);
    }
    one_way("iov", 200, (1u << 20) + 13, (1u << 20) + 4096, 7, 5, 1, on, eq);
    one_way("iov64", 300, (1u << 20) + 13, (1u << 20) + 4096, 64, 0, 1, on, eq);
    /* trunc: the MD holds 3/4 of the put; the split is of what matches */
    one_way("trunc", 400, 1u << 20, (3u << 18) + RO, 0, 0, 1, on && (3u << 18) >= g_coop_min, eq);
    /* window: the initiator spinning on PtlEQGet (a client that never
     * sleeps); with a tiny op table at the initiator at least ten rounds,
     * and more until some PUSH found no op free (a short PDONE at the
     * target, rank 1, which says so on its board), at most 200: ten were
     * not enough once, on a loaded machine where the target sent its
     * PUSHes slower than the initiator served them (sixty-eighth session) */
    g_spin = true;
    bool more = tiny_ops && on;
    for (int r = 0; r < (more ? 200 : 1); r++) {
        one_way("window", 500, 256u << 10, (256u << 10) + 4096 + RO, 0, 0, W, on, eq);
        if (!more || r < 9)
            continue;
        if (m.rank == 1)
            ST_RELAXED(&peer_board(1)[3], counters().shrt != 0);
        mp_barrier(&m);
        bool seen = LD_RELAXED(&peer_board(1)[3]) != 0;
        mp_barrier(&m); /* both have read before it is written again */
        if (seen)
            break;
    }
    g_spin = false;

    /* busy: the initiator computes outside the library right after its put;
     * the target must not wait for it (it takes the part back) */
    {
        _Atomic uint32_t *flag = &peer_board(0)[3];
        ST_RELAXED(flag, 0);
        uint64_t s = 4u << 20;
        if (m.rank == 1) {
            uint8_t *buf = xalloc(s);
            memset(buf, FILLER, s);
            ptl_handle_me_t me;
            mp_post(&m, PT_C, 700, buf, s, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq, PTL_UNLINK, &me);
            mp_barrier(&m);
            ptl_event_kind_t tk[2] = {PTL_EVENT_PUT_START, PTL_EVENT_PUT_END};
            mp_expect_all(eq, tk, 2, NULL, "busy initiator, target");
            if (LD_RELAXED(flag) && takeback)
                mp_die("busy initiator: PUT_END came only after the initiator stopped computing");
            int64_t bad = mp_check_pattern(buf, s, 0, 700, 0);
            if (bad >= 0)
                mp_die("busy initiator: byte %lld wrong", (long long)bad);
            MP_CHECK(PtlMEUnlink(me));
            free(buf);
        } else {
            uint8_t *src = xalloc(s);
            mp_fill(src, s, 0, 700, 0);
            ptl_handle_md_t smd = mp_bind(&m, src, s, PTL_MD_THRESH_INF, 0, eq);
            mp_barrier(&m);
            MP_CHECK(PtlPutRegion(smd, 0, s, PTL_NOACK_REQ, m.ids[1], PT_C, 0, 700, 0, 0));
            uint64_t t0 = mp_now_ms();
            while (mp_now_ms() - t0 < 500) /* compute: no library call */
                ;
            ST_RELAXED(flag, 1);
            ptl_event_kind_t ik[2] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END};
            mp_expect_all(eq, ik, 2, NULL, "busy initiator, initiator");
            MP_CHECK(PtlMDUnlink(smd));
            free(src);
        }
        if (on)
            g_expect_split++;
        mp_barrier(&m);
        printf("rank %u: busy initiator: OK\n", m.rank);
    }

    /* both ways at once */
    {
        ptl_handle_eq_t teq;
        MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &teq));
        unsigned peer = m.rank == 0 ? 1 : 0;
        if (m.rank < 2) {
            /* each posts its target MD, then the barrier, then puts; the
             * target side is checked after the initiator's events */
            uint64_t s = (2u << 20) + 7, room = s + 4096 + RO;
            uint8_t *buf = xalloc(room + 2 * GUARD);
            memset(buf, FILLER, room + 2 * GUARD);
            ptl_handle_me_t me;
            mp_post(&m, PT_C, 600 + m.rank, buf + GUARD, room,
                    PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, teq, PTL_UNLINK, &me);
            mp_barrier(&m);
            uint8_t *src = xalloc(s + LO);
            mp_fill(src + LO, s, 0, 600 + peer, LO);
            ptl_handle_md_t smd = mp_bind(&m, src, s + LO, PTL_MD_THRESH_INF, 0, eq);
            MP_CHECK(PtlPutRegion(smd, LO, s, PTL_ACK_REQ, m.ids[peer], PT_C, 0, 600 + peer, RO, 0));
            ptl_event_kind_t ik[3] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END, PTL_EVENT_ACK};
            mp_expect_all(eq, ik, 3, NULL, "both ways, initiator");
            ptl_event_kind_t tk[2] = {PTL_EVENT_PUT_START, PTL_EVENT_PUT_END};
            mp_expect_all(teq, tk, 2, NULL, "both ways, target");
            int64_t bad = mp_check_pattern(buf + GUARD + RO, s, 0, 600 + m.rank, LO);
            if (bad >= 0)
                mp_die("both ways: byte %lld wrong", (long long)bad);
            for (uint64_t i = 0; i < GUARD + RO; i++)
                if (buf[i] != FILLER)
                    mp_die("both ways: a byte before the put written");
            for (uint64_t i = GUARD + RO + s; i < room + 2 * GUARD; i++)
                if (buf[i] != FILLER)
                    mp_die("both ways: a byte after the put written");
            MP_CHECK(PtlMEUnlink(me));
            MP_CHECK(PtlMDUnlink(smd));
            free(src);
            free(buf);
            if (on)
                g_expect_split++;
        } else {
            mp_barrier(&m);
        }
        mp_barrier(&m);
        printf("rank %u: both ways: OK\n", m.rank);
        MP_CHECK(PtlEQFree(teq));
    }

    /* Which path the puts took (quiet now: every transfer has ended). The
     * expected splits are the same on both ranks: rank 1 split the one-way
     * puts the rule allows plus the "both ways" one, rank 0 only the latter.
     * Every split part was written by exactly one side: pushed by the
     * initiator (its PDONE) or taken back by the target (claim words). */
    struct counters c = counters();
    printf("rank %u: cooperative counters: %u split, %u pushes served, %u short PDONEs, "
           "%u taken back\n", m.rank, c.split, c.push, c.shrt, c.stolen);
    _Atomic uint32_t *mine = peer_board(m.rank), *theirs = peer_board(1 - m.rank);
    ST_RELAXED(&mine[0], c.split);
    ST_RELAXED(&mine[1], c.push);
    ST_RELAXED(&mine[2], c.stolen);
    mp_barrier(&m);
    struct counters p = {LD_RELAXED(&theirs[0]), LD_RELAXED(&theirs[1]), 0,
                         LD_RELAXED(&theirs[2])};
    mp_barrier(&m); /* both have read before anyone leaves */
    unsigned want_split = m.rank == 1 ? g_expect_split : (on ? 1u : 0u);
    if (c.split != want_split)
        mp_die("%u puts split, expected %u", c.split, want_split);
    if (c.split != p.push + c.shrt + c.stolen)
        mp_die("%u puts split, but the peer pushed %u, answered %u short and we took back %u",
               c.split, p.push, c.shrt, c.stolen);
    if (!tiny_ops && c.shrt)
        mp_die("%u PDONEs came short with ops to spare (no push here can fault)", c.shrt);
    if (!takeback && c.stolen)
        mp_die("%u parts taken back with PTL_RNDV_COOP_TAKEBACK=0", c.stolen);
    if (!takeback && !tiny_ops && c.split != p.push)
        mp_die("the peer pushed %u parts of %u split puts", p.push, c.split);
    if (tiny_ops && !takeback && on && m.rank == 1 && !c.shrt)
        mp_die("rank 0 had %s ops, yet no PDONE came short", ops0);
    MP_CHECK(PtlEQFree(eq));
    mp_fini(&m);
    printf("rank %u: cooperative rendezvous OK\n", m.rank);
    return 0;
}
