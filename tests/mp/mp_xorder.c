/*
 * mp_xorder - the transport delivers what one sender sent in commit order
 * across its two classes (issue 12 item 16, transport/xport.h "Order").
 * White-box: the two ranks of a ptlrun job open the job's transport directly
 * (no NI, no engine).
 *
 * Rank 1 commits N messages to rank 0, each in a class (request or response)
 * drawn from a seeded generator that both ranks run, with its index in the
 * payload, pausing a random short time after each (and sometimes yielding).
 * Rank 0 peeks them while they come, so its scan of the two classes races the
 * sender's commits as in a real job, and checks each one: it is the next of its class (FIFO), and
 * the earlier of the two classes' next messages, unless it is a response and
 * rank 0 deferred the request ahead of it (a deferred request lets later
 * responses pass, and only those). Rank 0 defers one request in DEFER_EVERY,
 * at random, and takes it at its next peek. Then rank 0 sends rank 1 a "done"
 * response and both close.
 *
 * Before the fix: a response committed before a request could be taken after
 * it (the scan missed it, then found the request), and of two visible heads
 * the response always went first, though the request was older.
 *
 * Fast boxes (shm_region.h): after 16 messages rank 1 claims a box at rank 0
 * and its small messages take the lanes, its larger ones (a length drawn per
 * message: one in four between 4 and 1,000 payload bytes, more than a lane
 * message holds for most) and those that find a lane full take the rings, so
 * the order is checked across the rings and the lanes of both classes, and
 * every header word and payload byte is checked (a lane carries the header
 * words that differ from its last message's; a message spans up to four
 * lines).
 * Registered once more with PTL_SHM_FBOX=0 (the rings alone).
 *
 *   usage (under ptlrun -n 2): mp_xorder [messages] [seed]
 *   prints "mp_xorder: OK ..." on rank 0
 */
#include "xport.h"

#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFER_EVERY 8
#define LIMIT_S 60.0
#define MARK_OFF PT_XPORT_HDR_BYTES /* the index sits where a payload would */

static const struct pt_xport_ops *xo;
static struct pt_xport *xp;
static struct pt_xport_info info;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mp_xorder rank %u: ", info.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Payload bytes of message i: 4 (the index) or, one in four, 4 .. 1,003. */
static uint32_t *g_len;

/* Header word j (1..30: 0 and 31 are the transport's) of message v: some
 * repeat from message to message, some change, as an engine's headers do
 * (a fast box sends the words that differ from the lane's last message). */
static uint32_t hword(uint32_t v, uint32_t j)
{
    return (v >> (j % 5)) & 1 ? v * 2654435761u + j : 0x5a5a0000u + j;
}

static void mark(void *slot, uint32_t v)
{
    for (uint32_t j = 1; j < 31; j++) {
        uint32_t h = hword(v, j);
        memcpy((char *)slot + 4 * j, &h, sizeof h);
    }
    memcpy((char *)slot + MARK_OFF, &v, sizeof v);
    unsigned char *p = (unsigned char *)slot + MARK_OFF + sizeof v;
    for (uint32_t k = 4; k < g_len[v]; k++)
        p[k - 4] = (unsigned char)(v * 31u + k);
}
static void check_body(const void *slot, uint32_t v)
{
    for (uint32_t j = 1; j < 31; j++) {
        uint32_t h;
        memcpy(&h, (const char *)slot + 4 * j, sizeof h);
        if (h != hword(v, j))
            die("message %u: header word %u is %#x, not %#x", v, j, h, hword(v, j));
    }
    const unsigned char *p = (const unsigned char *)slot + MARK_OFF + sizeof v;
    for (uint32_t k = 4; k < g_len[v]; k++)
        if (p[k - 4] != (unsigned char)(v * 31u + k))
            die("message %u: payload byte %u is %u, not %u", v, k, p[k - 4],
                (unsigned char)(v * 31u + k));
}
static uint32_t marked(const void *slot)
{
    uint32_t v;
    memcpy(&v, (const char *)slot + MARK_OFF, sizeof v);
    return v;
}

static void send_one(uint32_t peer, enum pt_cls c, uint32_t v, double t0)
{
    void *slot;
    while (!(slot = xo->reserve(xp, peer, c))) {
        if (now_s() - t0 > LIMIT_S || !xo->peer_alive(xp, peer))
            die("no credits towards rank %u (message %u)", peer, v);
        sched_yield();
    }
    mark(slot, v);
    xo->commit(xp, peer, c, PT_XPORT_HDR_BYTES + g_len[v]);
}

static void *recv_one(uint32_t *peer, enum pt_cls *c, double t0)
{
    void *slot;
    while (!(slot = xo->peek(xp, peer, c))) {
        if (now_s() - t0 > LIMIT_S)
            die("waited %.0f s for a message", LIMIT_S);
        sched_yield();
    }
    return slot;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9e3779b97f4a7c15ull;
    if (n <= 0 || n > 100000000 || !seed)
        die("usage: mp_xorder [messages, 1..100000000] [seed, not 0]");
    int rc = pt_xport_open(pt_slot_size_for(4032), pt_queue_slots_for(64), 0xffffffffu, &xo, &xp,
                           &info);
    if (rc)
        die("pt_xport_open: %d", rc);
    if (info.nranks != 2)
        die("needs a job of 2 ranks (ptlrun -n 2), got %u", info.nranks);
    /* The class of message i, as both ranks draw it. */
    uint8_t *cls = malloc((size_t)n);
    g_len = malloc(sizeof *g_len * ((size_t)n + 1));
    if (!cls || !g_len)
        die("out of memory (%ld messages)", n);
    uint64_t s = seed;
    for (long i = 0; i < n; i++) {
        uint64_t v = rng(&s);
        cls[i] = (uint8_t)(v >> 40 & 1); /* PT_CLS_REQ 0, PT_CLS_RSP 1 */
        g_len[i] = (v >> 41 & 3) ? 4 : 4 + (uint32_t)(v >> 44) % 1000;
    }
    g_len[n] = 4; /* rank 0's "done" */
    double t0 = now_s();
    uint32_t peer;
    enum pt_cls c;

    if (info.rank == 1) {
        uint64_t p = seed ^ 0x5bd1e995u;
        for (long i = 0; i < n; i++) {
            send_one(0, (enum pt_cls)cls[i], (uint32_t)i, t0);
            /* Pace the commits, so the receiver keeps catching up and its
             * scan falls between them, and sometimes let it run. */
            uint64_t v = rng(&p);
            for (volatile unsigned k = (unsigned)(v & 255); k; k--)
                ;
            if ((v >> 8 & 63) == 0)
                sched_yield();
        }
        void *slot = recv_one(&peer, &c, t0); /* rank 0's "done" */
        if (peer != 0 || c != PT_CLS_RSP || marked(slot) != (uint32_t)n)
            die("expected rank 0's done, got a message from rank %u (%u)", peer, marked(slot));
        xo->release(xp, peer, c);
        xo->close(xp);
        free(cls);
        free(g_len);
        return 0;
    }

    /* Rank 0: the indices of each class in commit order. */
    long *q[PT_CLS_NR], nq[PT_CLS_NR] = {0, 0}, at[PT_CLS_NR] = {0, 0};
    q[0] = malloc(sizeof(long) * (size_t)n);
    q[1] = malloc(sizeof(long) * (size_t)n);
    if (!q[0] || !q[1])
        die("out of memory (%ld messages)", n);
    for (long i = 0; i < n; i++)
        q[cls[i]][nq[cls[i]]++] = i;
    uint64_t r = seed ^ 0x27d4eb2fu;
    long deferred = -1, defers = 0, passes = 0;
    while (at[0] < nq[0] || at[1] < nq[1]) {
        void *slot = recv_one(&peer, &c, t0);
        long m = (long)marked(slot);
        if (peer != 1)
            die("message from rank %u (index %ld)", peer, m);
        if (at[c] >= nq[c] || m != q[c][at[c]])
            die("class FIFO broken: message %ld, expected %ld", m,
                at[c] < nq[c] ? q[c][at[c]] : -1L);
        check_body(slot, (uint32_t)m);
        long other = at[c ^ 1] < nq[c ^ 1] ? q[c ^ 1][at[c ^ 1]] : n;
        if (m > other) {
            if (c != PT_CLS_RSP || deferred != other)
                die("message %ld taken before message %ld of the other class (committed "
                    "earlier, not a deferred request)", m, other);
            passes++;
        }
        if (c == PT_CLS_REQ && deferred != m && (rng(&r) % DEFER_EVERY) == 0) {
            xo->defer(xp, peer, c); /* as the engine does when it cannot answer yet */
            xo->unhold_all(xp);     /* ... and at the end of its poll */
            deferred = m;
            defers++;
            continue;
        }
        xo->release(xp, peer, c);
        if (c == PT_CLS_REQ)
            deferred = -1;
        at[c]++;
    }
    send_one(1, PT_CLS_RSP, (uint32_t)n, t0);
    printf("mp_xorder: OK %ld messages (%ld requests, %ld responses), %ld requests deferred, "
           "%ld responses passed one, %.2f s\n",
           n, nq[0], nq[1], defers, passes, now_s() - t0);
    fflush(stdout);
    /* Rank 1 takes "done" before it closes; our close may come first. */
    xo->close(xp);
    free(q[0]);
    free(q[1]);
    free(cls);
    free(g_len);
    return 0;
}
