/*
 * mp_rndvmany - several rendezvous operations outstanding at once on one
 * persistent MD on each side (rank 0 initiates, rank 1 is the target; other
 * ranks only join the barriers).
 *
 *   usage (under ptlrun): mp_rndvmany size [size ...]
 *   (the CMA pull: >= PTL_RNDV_CMA_MIN, 7 KiB, in the default auto mode, any size above
 *   PTL_EAGER_MAX with PTL_RNDV_MODE=1; PTL_RNDV_MODE=2 checks copy mode)
 *
 * For each size S, W = 8 operations are issued back to back from one bound
 * initiator MD, operation i at local offset LO + i*S, to one target MD, at
 * remote offset RO + i*S (the target sleeps first, so in host-matching mode
 * it takes all W requests in one poll and has them all in flight at once):
 *   get    every GET_START/GET_END at the target and REPLY_START/REPLY_END at
 *          the initiator arrives exactly once, with that operation's offset,
 *          lengths, match bits and initiator; END carries its START's link;
 *          the data is right and the source untouched.
 *   put    (with ACK) PUT_START/PUT_END, SEND_START/SEND_END/ACK likewise.
 *   mixed  W/2 gets and W/2 puts interleaved on the same two MDs.
 * Each with START events on and off (PTL_MD_EVENT_START_DISABLE on both
 * sides), and with a persistent target MD (PTL_MD_THRESH_INF) or one of
 * threshold W and PTL_UNLINK (then UNLINK follows the last END, once).
 * Regression: a target used to keep one GET_END template per MD, so a second
 * rendezvous get outstanding on it made the first one's GET_END lost and the
 * second's reported twice.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_R (MP_PT_USER + 5)
#define W 8
#define LO 5
#define RO 3
#define GUARD 64
#define FILLER 0xEE
#define QUIET_MS 50
#define MAXEV (3 * W + 1)

enum kind { OP_GET, OP_PUT, OP_MIXED };
static const char *const kind_name[] = {"get", "put", "mixed"};

static bool is_get(enum kind k, int i) { return k == OP_GET || (k == OP_MIXED && !(i & 1)); }

struct round {
    uint64_t size;
    enum kind kind;
    bool start;      /* START events enabled                       */
    bool thresh;     /* target MD: threshold W + PTL_UNLINK        */
    unsigned tag;
};

static uint8_t *xalloc(uint64_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        mp_die("out of memory (%llu bytes)", (unsigned long long)n);
    return p;
}

static const char *rname(const struct round *r)
{
    static char b[128];
    snprintf(b, sizeof b, "size %llu %s start=%s target=%s", (unsigned long long)r->size,
             kind_name[r->kind], r->start ? "on" : "off", r->thresh ? "threshold+unlink" : "persistent");
    return b;
}

/* Collect exactly n events (all PTL_NI_OK), then insist on silence. */
static void collect(ptl_handle_eq_t eq, ptl_event_t *ev, int n, const struct round *r,
                    const char *side)
{
    for (int i = 0; i < n; i++) {
        if (!mp_poll(eq, &ev[i], MP_WAIT_MS))
            mp_die("%s, %s: only %d of %d events within %d ms", rname(r), side, i, n,
                   MP_WAIT_MS);
        if (ev[i].ni_fail_type != PTL_NI_OK)
            mp_die("%s, %s: %s failed: ni_fail_type %u", rname(r), side,
                   PtlEventKindStr(ev[i].type), ev[i].ni_fail_type);
    }
    ptl_event_t x;
    if (mp_poll(eq, &x, QUIET_MS))
        mp_die("%s, %s: an extra %s (offset %llu) after the %d expected events", rname(r),
               side, PtlEventKindStr(x.type), (unsigned long long)x.offset, n);
}

/* Of ev[0..n), the events of kind k must be exactly one per operation i that
 * `want(i)` selects, at offset base + i*size with mlength = rlength = size;
 * pos[i] receives its index in ev. Returns how many there were. */
static int find_each(const ptl_event_t *ev, int n, ptl_event_kind_t k, const struct round *r,
                     bool get_ops, uint64_t base, int *pos, const char *side)
{
    int cnt = 0;
    for (int i = 0; i < W; i++)
        pos[i] = -1;
    for (int e = 0; e < n; e++) {
        if (ev[e].type != k)
            continue;
        cnt++;
        if (ev[e].offset < base || (ev[e].offset - base) % r->size)
            mp_die("%s, %s: %s at offset %llu, which no operation used", rname(r), side,
                   PtlEventKindStr(k), (unsigned long long)ev[e].offset);
        uint64_t i = (ev[e].offset - base) / r->size;
        if (i >= W || is_get(r->kind, (int)i) != get_ops)
            mp_die("%s, %s: %s at offset %llu, which no such operation used", rname(r), side,
                   PtlEventKindStr(k), (unsigned long long)ev[e].offset);
        if (pos[i] >= 0)
            mp_die("%s, %s: %s of operation %llu (offset %llu) reported twice", rname(r),
                   side, PtlEventKindStr(k), (unsigned long long)i,
                   (unsigned long long)ev[e].offset);
        pos[i] = e;
        if (ev[e].mlength != r->size || ev[e].rlength != r->size)
            mp_die("%s, %s: %s of operation %llu: mlength %llu rlength %llu, expected %llu",
                   rname(r), side, PtlEventKindStr(k), (unsigned long long)i,
                   (unsigned long long)ev[e].mlength, (unsigned long long)ev[e].rlength,
                   (unsigned long long)r->size);
        if (ev[e].match_bits != r->tag || ev[e].pt_index != PT_R)
            mp_die("%s, %s: %s of operation %llu: match bits %#llx pt %u", rname(r), side,
                   PtlEventKindStr(k), (unsigned long long)i,
                   (unsigned long long)ev[e].match_bits, ev[e].pt_index);
    }
    for (int i = 0; i < W; i++)
        if (is_get(r->kind, i) == get_ops && pos[i] < 0)
            mp_die("%s, %s: no %s for operation %d (offset %llu)", rname(r), side,
                   PtlEventKindStr(k), i, (unsigned long long)(base + (uint64_t)i * r->size));
    return cnt;
}

/* START (if enabled) before END, and END with its START's link. */
static void pair(const ptl_event_t *ev, const int *s, const int *e, const struct round *r,
                 bool get_ops, const char *what, const char *side)
{
    if (!r->start)
        return;
    for (int i = 0; i < W; i++) {
        if (is_get(r->kind, i) != get_ops)
            continue;
        if (s[i] > e[i])
            mp_die("%s, %s: %s of operation %d: END before START", rname(r), side, what, i);
        if (ev[s[i]].link != ev[e[i]].link)
            mp_die("%s, %s: %s of operation %d: END link %u, its START's %u", rname(r), side,
                   what, i, ev[e[i]].link, ev[s[i]].link);
    }
}

static void one(struct mp *m, ptl_handle_eq_t eq, const struct round *r)
{
    const bool ini = m->rank == 0, tgt = m->rank == 1;
    const uint64_t S = r->size, span = (uint64_t)W * S;
    int ngets = 0;
    for (int i = 0; i < W; i++)
        ngets += is_get(r->kind, i);
    const int nputs = W - ngets;
    const unsigned evopt = r->start ? 0 : PTL_MD_EVENT_START_DISABLE;
    uint8_t *buf = NULL;
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;

    /* Get regions hold the target's pattern (target) / filler (initiator);
     * put regions the other way round. */
    if (tgt) {
        buf = xalloc(RO + span + GUARD);
        memset(buf, FILLER, RO + span + GUARD);
        for (int i = 0; i < W; i++)
            if (is_get(r->kind, i))
                mp_fill(buf + RO + i * S, S, m->rank, r->tag, (uint64_t)i * S);
        unsigned opts = PTL_MD_MANAGE_REMOTE | PTL_MD_OP_GET | PTL_MD_OP_PUT | evopt;
        mp_post(m, PT_R, r->tag, buf, RO + span, r->thresh ? W : PTL_MD_THRESH_INF, opts, eq,
                r->thresh ? PTL_UNLINK : PTL_RETAIN, &me);
    } else if (ini) {
        buf = xalloc(LO + span + GUARD);
        memset(buf, FILLER, LO + span + GUARD);
        for (int i = 0; i < W; i++)
            if (!is_get(r->kind, i))
                mp_fill(buf + LO + i * S, S, m->rank, r->tag, (uint64_t)i * S);
        md = mp_bind(m, buf, LO + span + GUARD, PTL_MD_THRESH_INF, evopt, eq);
    }
    mp_barrier(m);

    ptl_event_t ev[MAXEV];
    int s1[W], e1[W], s2[W], e2[W], a[W];
    if (ini) {
        mp_doing("issuing the operations");
        for (int i = 0; i < W; i++) {
            uint64_t off = (uint64_t)i * S;
            if (is_get(r->kind, i))
                MP_CHECK(PtlGetRegion(md, LO + off, S, m->ids[1], PT_R, 0, r->tag, RO + off));
            else
                MP_CHECK(PtlPutRegion(md, LO + off, S, PTL_ACK_REQ, m->ids[1], PT_R, 0, r->tag,
                                      RO + off, 0));
        }
        mp_doing("collecting the initiator's events");
        int per_get = r->start ? 2 : 1, per_put = r->start ? 3 : 2;
        int n = ngets * per_get + nputs * per_put;
        collect(eq, ev, n, r, "initiator");
        int seen = 0;
        if (ngets) {
            seen += find_each(ev, n, PTL_EVENT_REPLY_END, r, true, LO, e1, "initiator");
            if (r->start) {
                seen += find_each(ev, n, PTL_EVENT_REPLY_START, r, true, LO, s1, "initiator");
                pair(ev, s1, e1, r, true, "reply", "initiator");
            }
        }
        if (nputs) {
            /* SEND_* and ACK carry the remote offset */
            seen += find_each(ev, n, PTL_EVENT_SEND_END, r, false, RO, e2, "initiator");
            seen += find_each(ev, n, PTL_EVENT_ACK, r, false, RO, a, "initiator");
            if (r->start) {
                seen += find_each(ev, n, PTL_EVENT_SEND_START, r, false, RO, s2, "initiator");
                pair(ev, s2, e2, r, false, "send", "initiator");
            }
            for (int i = 0; i < W; i++)
                if (!is_get(r->kind, i) && a[i] < e2[i])
                    mp_die("%s, initiator: ACK of operation %d before its SEND_END", rname(r),
                           i);
        }
        if (seen != n)
            mp_die("%s, initiator: %d events of unexpected kinds", rname(r), n - seen);
        for (int i = 0; i < W; i++) {
            const uint8_t *p = buf + LO + (uint64_t)i * S;
            int64_t bad = is_get(r->kind, i)
                              ? mp_check_pattern(p, S, 1, r->tag, (uint64_t)i * S)
                              : mp_check_pattern(p, S, 0, r->tag, (uint64_t)i * S);
            if (bad >= 0)
                mp_die("%s, initiator: operation %d: byte %lld is wrong", rname(r), i,
                       (long long)bad);
        }
        for (uint64_t j = 0; j < LO; j++)
            if (buf[j] != FILLER)
                mp_die("%s, initiator: byte %llu before the first operation was written",
                       rname(r), (unsigned long long)j);
        for (uint64_t j = LO + span; j < LO + span + GUARD; j++)
            if (buf[j] != FILLER)
                mp_die("%s, initiator: byte %llu past the last operation was written",
                       rname(r), (unsigned long long)j);
    } else if (tgt) {
        mp_doing("sleeping, so that the requests queue up");
        usleep(20000);
        mp_doing("collecting the target's events");
        int per = r->start ? 2 : 1;
        int n = W * per + (r->thresh ? 1 : 0);
        collect(eq, ev, n, r, "target");
        int seen = 0;
        if (ngets) {
            seen += find_each(ev, n, PTL_EVENT_GET_END, r, true, RO, e1, "target");
            if (r->start) {
                seen += find_each(ev, n, PTL_EVENT_GET_START, r, true, RO, s1, "target");
                pair(ev, s1, e1, r, true, "get", "target");
            }
        }
        if (nputs) {
            seen += find_each(ev, n, PTL_EVENT_PUT_END, r, false, RO, e2, "target");
            if (r->start) {
                seen += find_each(ev, n, PTL_EVENT_PUT_START, r, false, RO, s2, "target");
                pair(ev, s2, e2, r, false, "put", "target");
            }
        }
        for (int e = 0; e < n; e++) {
            if (ev[e].type == PTL_EVENT_UNLINK)
                continue;
            if (ev[e].initiator.nid != m->ids[0].nid || ev[e].initiator.pid != m->ids[0].pid)
                mp_die("%s, target: %s from %u/%u, expected rank 0 (%u/%u)", rname(r),
                       PtlEventKindStr(ev[e].type), ev[e].initiator.nid, ev[e].initiator.pid,
                       m->ids[0].nid, m->ids[0].pid);
            if (ev[e].hdr_data != 0)
                mp_die("%s, target: %s hdr_data %llu", rname(r), PtlEventKindStr(ev[e].type),
                       (unsigned long long)ev[e].hdr_data);
        }
        if (r->thresh) {
            if (ev[n - 1].type != PTL_EVENT_UNLINK)
                mp_die("%s, target: last event %s, expected UNLINK after the last END",
                       rname(r), PtlEventKindStr(ev[n - 1].type));
            seen++;
        }
        if (seen != n)
            mp_die("%s, target: %d events of unexpected kinds", rname(r), n - seen);
        for (int i = 0; i < W; i++) {
            const uint8_t *p = buf + RO + (uint64_t)i * S;
            int64_t bad = is_get(r->kind, i)
                              ? mp_check_pattern(p, S, 1, r->tag, (uint64_t)i * S)
                              : mp_check_pattern(p, S, 0, r->tag, (uint64_t)i * S);
            if (bad >= 0)
                mp_die("%s, target: operation %d: byte %lld is wrong%s", rname(r), i,
                       (long long)bad, is_get(r->kind, i) ? " (a get changed its source)" : "");
        }
        for (uint64_t j = 0; j < RO; j++)
            if (buf[j] != FILLER)
                mp_die("%s, target: byte %llu before the first operation was written",
                       rname(r), (unsigned long long)j);
        for (uint64_t j = RO + span; j < RO + span + GUARD; j++)
            if (buf[j] != FILLER)
                mp_die("%s, target: byte %llu past the MD was written", rname(r),
                       (unsigned long long)j);
    }
    mp_barrier(m); /* both sides are done with the buffers */
    if (tgt && !r->thresh)
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
        mp_die("usage: mp_rndvmany size [size ...]");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    unsigned tag = 100;
    for (int a = 1; a < argc; a++) {
        char *end;
        uint64_t size = strtoull(argv[a], &end, 0);
        if (*end || size == 0 || size > (64ull << 20))
            mp_die("bad size '%s'", argv[a]);
        for (int k = OP_GET; k <= OP_MIXED; k++)
            for (int st = 1; st >= 0; st--)
                for (int th = 0; th <= 1; th++) {
                    struct round r = {size, (enum kind)k, st, th, tag++};
                    one(&m, eq, &r);
                }
        if (m.rank == 0)
            printf("mp_rndvmany: %llu bytes: %d gets, puts, mixed outstanding on one MD OK\n",
                   (unsigned long long)size, W);
    }
    mp_fini(&m);
    return 0;
}
