/*
 * mp_wrap - data-checked traffic meant to run across the wrap of the
 * library's free-running counters (PTL_TEST_WRAP=N starts them N steps
 * before it). Every message carries its number in hdr_data and a payload
 * that is a function of (sender, number, byte); receivers check the number,
 * the order per sender, the length, the payload, and that their EQ's event
 * sequence numbers rise by one (mod 2^32) and SEND_END's link is its
 * SEND_START's sequence.
 *
 *   mp_wrap pp ITERS SIZES ACK     ranks 0 and 1: ping-pong, sizes cycled
 *                                  (comma list), ACK 1: every put asks one
 *   mp_wrap stream COUNT SIZE WIN  rank r streams COUNT puts to r+1 (mod n);
 *                                  WIN > 0: at most WIN un-ACKed puts, else
 *                                  no ACKs (credits alone hold the sender)
 *   mp_wrap get ITERS SIZES        rank 0 gets from rank 1 (sizes cycled)
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_W (MP_PT_USER + 9)

/* Buffers bound in MDs live until PtlNIFini (main frees them after mp_fini). */
static void *g_keep[4];
static void *keep(void *p)
{
    for (unsigned i = 0; i < sizeof g_keep / sizeof g_keep[0]; i++)
        if (!g_keep[i])
            return g_keep[i] = p;
    mp_die("keep: no room");
}

/* With PTL_TEST_WRAP on, a run whose EQ sequence never wrapped checked
 * nothing across the wrap (the hook off, or too few events): a failure. */
static void must_wrap(uint32_t wraps, const char *what)
{
    const char *w = getenv("PTL_TEST_WRAP");
    if (w && atol(w) > 0 && wraps == 0)
        mp_die("%s: PTL_TEST_WRAP=%s, but the EQ's sequence never wrapped", what, w);
}

static inline unsigned char pat(unsigned s, uint64_t i, uint64_t b)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (b * 0xbf58476d1ce4e5b9ull) ^ s;
    return (unsigned char)(x >> 29);
}

static void fill(unsigned char *p, uint64_t len, unsigned s, uint64_t i)
{
    for (uint64_t b = 0; b < len; b++)
        p[b] = pat(s, i, b);
}

static void check(const unsigned char *p, uint64_t len, unsigned s, uint64_t i, const char *what)
{
    for (uint64_t b = 0; b < len; b++)
        if (p[b] != pat(s, i, b))
            mp_die("%s: message %llu from %u: byte %llu is %u, want %u", what,
                   (unsigned long long)i, s, (unsigned long long)b, p[b], pat(s, i, b));
}

/* event sequence check per EQ: consecutive events differ by 1 (mod 2^32) */
struct seqchk {
    int have;
    uint32_t last;
    uint32_t wraps;
};
static void seq_note(struct seqchk *c, const ptl_event_t *ev, const char *what)
{
    uint32_t s = (uint32_t)ev->sequence;
    if (c->have && s != (uint32_t)(c->last + 1))
        mp_die("%s: event sequence %u after %u", what, s, c->last);
    if (c->have && s < c->last)
        c->wraps++;
    c->have = 1;
    c->last = s;
}

static ptl_event_t next_ev(ptl_handle_eq_t eq, struct seqchk *c, const char *what)
{
    ptl_event_t ev;
    if (!mp_poll(eq, &ev, MP_WAIT_MS))
        mp_die("%s: no event within %d ms", what, MP_WAIT_MS);
    if (ev.ni_fail_type != PTL_NI_OK)
        mp_die("%s: event kind %d failed (%d)", what, (int)ev.type, (int)ev.ni_fail_type);
    seq_note(c, &ev, what);
    return ev;
}

static int parse_sizes(const char *s, long *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *e;
        out[n++] = strtol(s, &e, 0);
        s = *e == ',' ? e + 1 : e;
        if (e == s && *e)
            break;
    }
    return n;
}

static void pingpong(struct mp *m, long iters, const long *sizes, int ns, int ack)
{
    long maxs = 0;
    for (int k = 0; k < ns; k++)
        maxs = sizes[k] > maxs ? sizes[k] : maxs;
    unsigned char *sb = keep(malloc((size_t)maxs + 1)), *rb = keep(malloc((size_t)maxs + 1));
    ptl_handle_eq_t req, seq;
    MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &req));
    MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &seq));
    struct seqchk rc = {0}, sc = {0};
    if (m->rank <= 1)
        mp_post(m, PT_W, 7, rb, (ptl_size_t)maxs, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, req, PTL_RETAIN,
                NULL);
    ptl_handle_md_t smd = mp_bind(m, sb, (ptl_size_t)maxs, PTL_MD_THRESH_INF, 0, seq);
    mp_barrier(m);
    if (m->rank <= 1) {
        ptl_process_id_t peer = m->ids[1 - m->rank];
        for (long i = 0; i < 2 * iters; i++) {
            long sz = sizes[(i / 2) % ns];
            if ((i & 1) == m->rank) { /* our turn to send message i */
                fill(sb, (uint64_t)sz, m->rank, (uint64_t)i);
                MP_CHECK(PtlPutRegion(smd, 0, (ptl_size_t)sz, ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ,
                                      peer, PT_W, 0, 7, 0, (ptl_hdr_data_t)i));
                ptl_event_t a = next_ev(seq, &sc, "pp send"), b;
                if (a.type != PTL_EVENT_SEND_START)
                    mp_die("pp: %d, want SEND_START", (int)a.type);
                b = next_ev(seq, &sc, "pp send");
                if (b.type != PTL_EVENT_SEND_END || b.link != a.sequence)
                    mp_die("pp: kind %d link %u after SEND_START %u", (int)b.type,
                           (unsigned)b.link, (unsigned)a.sequence);
                if (ack) {
                    ptl_event_t c = next_ev(seq, &sc, "pp ack");
                    if (c.type != PTL_EVENT_ACK || c.mlength != (ptl_size_t)sz)
                        mp_die("pp: kind %d mlength %llu, want ACK %ld", (int)c.type,
                               (unsigned long long)c.mlength, sz);
                }
            } else {
                ptl_event_t e = next_ev(req, &rc, "pp recv");
                if (e.type != PTL_EVENT_PUT_END || e.hdr_data != (ptl_hdr_data_t)i ||
                    e.mlength != (ptl_size_t)sz)
                    mp_die("pp: kind %d hdr %llu len %llu, want PUT_END %ld len %ld", (int)e.type,
                           (unsigned long long)e.hdr_data, (unsigned long long)e.mlength, i, sz);
                check(rb, (uint64_t)sz, 1 - m->rank, (uint64_t)i, "pp");
            }
        }
        mp_log("pp: %ld round trips checked; EQ sequence wraps: recv %u send %u (last %u %u)",
               iters, rc.wraps, sc.wraps, rc.last, sc.last);
        must_wrap(rc.wraps, "pp");
    }
    mp_barrier(m);
}

static void stream(struct mp *m, long count, long size, long win)
{
    unsigned n = m->size, to = (m->rank + 1) % n, from = (m->rank + n - 1) % n;
    unsigned char *sb = keep(malloc((size_t)(count * size) + 1)),
                  *rb = keep(malloc((size_t)(count * size) + 1));
    if (!sb || !rb)
        mp_die("out of memory");
    ptl_handle_eq_t req, seq;
    MP_CHECK(PtlEQAlloc(m->ni, 4096, PTL_EQ_HANDLER_NONE, &req));
    MP_CHECK(PtlEQAlloc(m->ni, 4096, PTL_EQ_HANDLER_NONE, &seq));
    struct seqchk rc = {0}, sc = {0};
    ptl_handle_me_t me;
    ptl_handle_md_t rmd;
    MP_CHECK(PtlMEAttach(m->ni, PT_W, m->ids[from], 9, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_t d = {.start = rb, .length = (ptl_size_t)(count * size), .threshold = PTL_MD_THRESH_INF,
                  .max_size = 0,
                  .options = PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, .user_ptr = NULL,
                  .eq_handle = req};
    MP_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &rmd));
    ptl_handle_md_t smd = mp_bind(m, sb, (ptl_size_t)(count * size), PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, seq);
    for (long i = 0; i < count; i++)
        fill(sb + i * size, (uint64_t)size, m->rank, (uint64_t)i);
    mp_barrier(m);
    long sent = 0, ends = 0, acks = 0, got = 0;
    while (sent < count || ends < count || (win > 0 && acks < count) || got < count) {
        bool progress = false;
        while (sent < count && (win <= 0 || sent - acks < win)) {
            int rc2 = PtlPutRegion(smd, (ptl_size_t)(sent * size), (ptl_size_t)size,
                                   win > 0 ? PTL_ACK_REQ : PTL_NO_ACK_REQ, m->ids[to], PT_W, 0, 9,
                                   0, (ptl_hdr_data_t)sent);
            if (rc2 == PTL_NO_SPACE)
                break;
            MP_CHECK(rc2);
            sent++;
            progress = true;
            if (win <= 0 && sent % 64 == 0)
                break; /* look at the EQs too */
        }
        ptl_event_t ev;
        int r;
        while ((r = PtlEQGet(seq, &ev)) == PTL_OK) {
            seq_note(&sc, &ev, "stream send");
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("stream: send event %d failed (%d)", (int)ev.type, (int)ev.ni_fail_type);
            if (ev.type == PTL_EVENT_SEND_END)
                ends++;
            else if (ev.type == PTL_EVENT_ACK)
                acks++;
            else
                mp_die("stream: send-side event %d", (int)ev.type);
            progress = true;
        }
        if (r != PTL_EQ_EMPTY)
            mp_die("stream: PtlEQGet(send) %d", r);
        while ((r = PtlEQGet(req, &ev)) == PTL_OK) {
            seq_note(&rc, &ev, "stream recv");
            if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK ||
                ev.hdr_data != (ptl_hdr_data_t)got || ev.mlength != (ptl_size_t)size ||
                ev.offset != (ptl_size_t)(got * size))
                mp_die("stream: kind %d fail %d hdr %llu len %llu off %llu, want PUT_END %ld",
                       (int)ev.type, (int)ev.ni_fail_type, (unsigned long long)ev.hdr_data,
                       (unsigned long long)ev.mlength, (unsigned long long)ev.offset, got);
            check(rb + got * size, (uint64_t)size, from, (uint64_t)got, "stream");
            got++;
            progress = true;
        }
        if (r != PTL_EQ_EMPTY)
            mp_die("stream: PtlEQGet(recv) %d", r);
        if (!progress) {
            ptl_handle_eq_t both[2] = {seq, req};
            int which;
            r = PtlEQPoll(both, 2, MP_WAIT_MS, &ev, &which);
            if (r == PTL_EQ_EMPTY)
                mp_die("stream: stuck: sent %ld ends %ld acks %ld got %ld", sent, ends, acks, got);
            if (r != PTL_OK)
                mp_die("stream: PtlEQPoll %d", r);
            /* handle it as the loops above would */
            if (which == 0) {
                seq_note(&sc, &ev, "stream send");
                if (ev.type == PTL_EVENT_SEND_END)
                    ends++;
                else if (ev.type == PTL_EVENT_ACK)
                    acks++;
            } else {
                seq_note(&rc, &ev, "stream recv");
                if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != (ptl_hdr_data_t)got ||
                    ev.offset != (ptl_size_t)(got * size))
                    mp_die("stream: kind %d hdr %llu, want PUT_END %ld", (int)ev.type,
                           (unsigned long long)ev.hdr_data, got);
                check(rb + got * size, (uint64_t)size, from, (uint64_t)got, "stream");
                got++;
            }
        }
    }
    mp_log("stream: %ld x %ld B to %u and from %u checked (window %ld); EQ wraps recv %u send %u",
           count, size, to, from, win, rc.wraps, sc.wraps);
    must_wrap(rc.wraps, "stream");
    mp_barrier(m);
}

static void get(struct mp *m, long iters, const long *sizes, int ns)
{
    long maxs = 0;
    for (int k = 0; k < ns; k++)
        maxs = sizes[k] > maxs ? sizes[k] : maxs;
    const long span = maxs * 4;
    unsigned char *src = keep(malloc((size_t)span)), *dst = keep(malloc((size_t)maxs + 1));
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    struct seqchk c = {0};
    if (m->rank == 1) {
        fill(src, (uint64_t)span, 1, 77);
        mp_post(m, PT_W, 11, src, (ptl_size_t)span, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE, PTL_RETAIN, NULL);
    }
    ptl_handle_md_t md = mp_bind(m, dst, (ptl_size_t)maxs, PTL_MD_THRESH_INF, 0, eq);
    mp_barrier(m);
    if (m->rank == 0) {
        for (long i = 0; i < iters; i++) {
            long sz = sizes[i % ns];
            long off = (long)(((uint64_t)i * 7919u) % (uint64_t)(span - sz + 1));
            memset(dst, 0xa5, (size_t)sz);
            MP_CHECK(PtlGetRegion(md, 0, (ptl_size_t)sz, m->ids[1], PT_W, 0, 11,
                                  (ptl_size_t)off));
            ptl_event_t a = next_ev(eq, &c, "get"), b = next_ev(eq, &c, "get");
            if (a.type != PTL_EVENT_REPLY_START || b.type != PTL_EVENT_REPLY_END ||
                b.mlength != (ptl_size_t)sz)
                mp_die("get: kinds %d %d len %llu", (int)a.type, (int)b.type,
                       (unsigned long long)b.mlength);
            for (long k = 0; k < sz; k++)
                if (dst[k] != pat(1, 77, (uint64_t)(off + k)))
                    mp_die("get %ld: byte %ld (offset %ld, %ld B) wrong", i, k, off, sz);
        }
        mp_log("get: %ld gets checked; EQ wraps %u (last %u)", iters, c.wraps, c.last);
        must_wrap(c.wraps, "get");
    }
    mp_barrier(m);
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (argc < 3)
        mp_die("usage: mp_wrap pp|stream|get ...");
    long sizes[16];
    if (!strcmp(argv[1], "pp") && argc >= 5) {
        int ns = parse_sizes(argv[3], sizes, 16);
        pingpong(&m, strtol(argv[2], NULL, 0), sizes, ns, atoi(argv[4]));
    } else if (!strcmp(argv[1], "stream") && argc >= 5) {
        stream(&m, strtol(argv[2], NULL, 0), strtol(argv[3], NULL, 0), strtol(argv[4], NULL, 0));
    } else if (!strcmp(argv[1], "get") && argc >= 4) {
        int ns = parse_sizes(argv[3], sizes, 16);
        get(&m, strtol(argv[2], NULL, 0), sizes, ns);
    } else {
        mp_die("usage: mp_wrap pp|stream|get ...");
    }
    mp_fini(&m);
    for (unsigned i = 0; i < sizeof g_keep / sizeof g_keep[0]; i++)
        free(g_keep[i]);
    return 0;
}
