/*
 * mp_xorder - the transport delivers what one sender sent in commit order
 * across its two classes (issue 12 item 16, transport/xport.h "Order"); with
 * several senders (the burst mode, below), a held sender stays held and no
 * sender starves the others. White-box: the ranks of a ptlrun job open the
 * job's transport directly (no NI, no engine).
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
 * words that differ from its last message's; a message spans up to ten
 * lines).
 * Registered once more with PTL_SHM_FBOX=0 (the rings alone).
 *
 * Burst mode (a job of 3 to 1 + MAX_SENDERS ranks, ptlrun's memfd region):
 * ranks 1 .. n-1 each send N messages to rank 0. A sender draws its own
 * sequence from the seed and its rank: lengths as above, classes in
 * stretches of one class (1 to 4 messages, or in one stretch of two 1 to 64)
 * so that its rings hold more messages of one class in a row than the
 * receiver's streaming shortcut serves (stream_next in transport/shm.c);
 * the payload's index carries the sender's rank in its top byte. It sends in
 * phases: it commits as many as the transport takes, up to the first
 * reserve that returns NULL (in one phase of four, fewer: up to
 * SHORT_BATCH), so its rings fill up; then it raises its word in the job
 * region's header page (test-private words, struct board) and waits for
 * rank 0's. Rank 0 waits until every sender still sending has raised its
 * word, drains what they committed, then raises its own, which begins the
 * next phase. So every message of a phase is committed before rank 0 peeks
 * the first, several senders stream to it at once, and it knows at every
 * peek which senders have messages waiting. It checks each message as above,
 * per sender, and:
 *   held means held: in two phases of three it defers one message in
 *   DEFER_EVERY (requests and responses: a response sets no waiting request,
 *   so that only the held test keeps stream_next off its ring), and calls
 *   unhold_all at once or after 1 to 3 more messages (at once when peek
 *   finds nothing); until then peek must not return that sender's messages;
 *   no starvation: while another sender that is not held has a response
 *   waiting, or has any message waiting while this one has no response
 *   waiting (responses go first: a sender with responses lawfully passes one
 *   with requests only), rank 0 takes at most RUN_BOUND messages in a row
 *   from one sender (PT_SHM_STREAM_PEEKS + 1; why: at RUN_BOUND). Such runs
 *   are counted from the first change of sender after an unhold_all, so
 *   that no sender is held during one.
 * A peek that finds nothing while a sender that is not held has messages
 * waiting fails the test too. Rank 0 then sends every sender a "done"
 * response; the OK line gives the longest such run.
 * Registered with -n 4, with the fast boxes (and no streak limit: the lanes
 * take the small messages they have room for) and without.
 *
 *   usage (under ptlrun -n 2): mp_xorder [messages] [seed]
 *         (under ptlrun -n 3 or more): mp_xorder [messages per sender] [seed]
 *   prints "mp_xorder: OK ..." on rank 0
 */
#include "mp_util.h"     /* mp_map_job_region */
#include "shm_int.h"    /* the peek's limits (the burst mode's bound) */
#include "shm_region.h" /* struct pt_shm_hdr: the burst mode's words lie in its padding */
#include "xport.h"

#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFER_EVERY 8
#define LIMIT_S 60.0
#define MARK_OFF PT_XPORT_HDR_BYTES /* the index sits where a payload would */

/* Burst mode. The shm transport's limits the bound rests on (shm_int.h):
 * PT_SHM_STREAM_PEEKS, and PT_SHM_RSP_ALWAYS (up to that many senders
 * listed, every full look looks at the responses first). */
#define STREAM_PEEKS PT_SHM_STREAM_PEEKS
#define MAX_SENDERS PT_SHM_RSP_ALWAYS
/*
 * RUN_BOUND. A run: messages peek returns in a row from one sender s while
 * another sender t, not held, has a response waiting, or has any message
 * waiting while s has no response waiting (contended()); counted from the
 * first change of sender after the last unhold_all, so no sender is held
 * during it. In a phase every message was published before the first peek
 * and none is published during it, and at most MAX_SENDERS senders are
 * listed, so every full look of shm_peek looks at the responses first. Then:
 *   - A message comes from a full look or from stream_next, and stream_next
 *     serves the sender the last full look served only (fast_s), from the
 *     ring or lane that look's message came from. Let F1 be the last full
 *     look that served s before or in the run (a lane's stream may go on
 *     across peeks that found nothing, so F1 may come before the run).
 *   - After F1, stream_next serves at most PT_SHM_STREAM_PEEKS messages
 *     (fast_left counts the messages it serves), then a full look F2 comes.
 *   - F2 does not take s. F1 set rr (where a full look starts, in either
 *     class) to s's place in the active list, and F2 looks from the place
 *     after it round the list, s last (no full look served anybody between
 *     F1 and F2; a look that found nothing may have unlisted senders, which
 *     reorders the list, but then it ended the stream: fast_left 0, so F2
 *     came at once).
 *     F2 looks at the responses first (at most MAX_SENDERS listed). If t
 *     has a response waiting, that look reaches t before s and takes one of
 *     t's messages. If not, the run is contended only while s has no
 *     response waiting either: the look takes another sender's response,
 *     or finds none and looks at the requests, where it reaches t, which has
 *     a message waiting, before s. (t's deferred request, xport.h "Order",
 *     does not stop either: a look that finds t's head takes t's head or
 *     t's other class's.)
 * So a run is at most 1 + PT_SHM_STREAM_PEEKS messages. Responses first is
 * why a sender may pass one that has only requests waiting for as long as
 * its own responses last: such messages do not count.
 */
#define RUN_BOUND (1 + STREAM_PEEKS)
#define SHORT_BATCH 24 /* one phase in four, a sender commits 0 .. SHORT_BATCH - 1 */
#define WAIT_S 20.0    /* burst mode: a phase's wait for the other side */

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

/* Message v (its index; in the burst mode with its sender's rank in the top
 * byte) with len payload bytes. */
static void mark(void *slot, uint32_t v, uint32_t len)
{
    for (uint32_t j = 1; j < 31; j++) {
        uint32_t h = hword(v, j);
        memcpy((char *)slot + 4 * j, &h, sizeof h);
    }
    memcpy((char *)slot + MARK_OFF, &v, sizeof v);
    unsigned char *p = (unsigned char *)slot + MARK_OFF + sizeof v;
    for (uint32_t k = 4; k < len; k++)
        p[k - 4] = (unsigned char)(v * 31u + k);
}
static void check_body(const void *slot, uint32_t v, uint32_t len)
{
    for (uint32_t j = 1; j < 31; j++) {
        uint32_t h;
        memcpy(&h, (const char *)slot + 4 * j, sizeof h);
        if (h != hword(v, j))
            die("message %u: header word %u is %#x, not %#x", v, j, h, hword(v, j));
    }
    const unsigned char *p = (const unsigned char *)slot + MARK_OFF + sizeof v;
    for (uint32_t k = 4; k < len; k++)
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

static void send_one(uint32_t peer, enum pt_cls c, uint32_t v, uint32_t len, double t0)
{
    void *slot;
    while (!(slot = xo->reserve(xp, peer, c))) {
        if (now_s() - t0 > LIMIT_S || !xo->peer_alive(xp, peer))
            die("no credits towards rank %u (message %u)", peer, v);
        sched_yield();
    }
    mark(slot, v, len);
    xo->commit(xp, peer, c, PT_XPORT_HDR_BYTES + len);
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

/* ---- the burst mode (more than 2 ranks) ------------------------------------ */

/* The words the ranks share beside the transport: a line per rank in the
 * job region's header page, past its live words (in its padding, which
 * nothing else of the job uses; ptlrun's memfd starts zeroed, so every word
 * starts at 0 and the phases count from 1). */
struct board {
    /* Line 0, rank 0 writes, the senders read: the last phase whose messages
     * rank 0 has all released (ST_RELEASE after them; LD_ACQUIRE).
     * Line s > 0, sender s writes, rank 0 reads: the last phase whose batch
     * s has committed (ST_RELEASE after the commits and `committed`;
     * LD_ACQUIRE, then `committed`). */
    PT_ALIGNED _Atomic uint32_t phase;
    /* Line s > 0, sender s writes (ST_RELAXED, before `phase`), rank 0 reads
     * (LD_RELAXED, after `phase`): how many messages of its sequence s had
     * committed by then. Line 0: unused. */
    _Atomic uint32_t committed;
};
#define BOARD_OFF                                                                                  \
    ((offsetof(struct pt_shm_hdr, pad_) + PT_CACHELINE - 1) / PT_CACHELINE * PT_CACHELINE)
_Static_assert(sizeof(struct board) == PT_CACHELINE, "a board line is a cache line");
_Static_assert(BOARD_OFF + (1 + MAX_SENDERS) * sizeof(struct board) <= PT_SHM_PAGE,
               "the board fits the header page's padding");

/* Rank `who`'s board line has reached phase ph (LD_ACQUIRE; pairs with its
 * ST_RELEASE): bounded by WAIT_S, and by `who` being alive. */
static void wait_phase(struct board *bd, uint32_t who, uint32_t ph, const char *what)
{
    double w0 = now_s();
    while (LD_ACQUIRE(&bd[who].phase) < ph) {
        if (!xo->peer_alive(xp, who))
            die("phase %u: rank %u is gone", ph, who);
        if (now_s() - w0 > WAIT_S)
            die("phase %u: rank %u has not %s after %.0f s (its word says phase %u)", ph, who,
                what, WAIT_S, LD_RELAXED(&bd[who].phase));
        sched_yield();
    }
}

/* A message's payload length from a draw of the generator: 4 bytes in three
 * of four, else 4 to 1,003 (more than a lane message holds, for most). */
static uint32_t draw_len(uint64_t v)
{
    return (v >> 41 & 3) ? 4 : 4 + (uint32_t)(v >> 44) % 1000;
}

/* Message i of sender s: its index, its sender in the top byte. */
static uint32_t tag_of(uint32_t s, long i) { return s << 24 | (uint32_t)i; }

/* Sender s's sequence: lengths as in the two-rank mode, classes in
 * stretches of one class (1 to 4 messages, or in one stretch of two 1 to
 * 64): with a class per message, more than RUN_BOUND of one class in a row
 * would be too rare for a broken bound to show. Half the long stretches
 * are of 4-byte messages alone: with a box, a lane then holds more than
 * RUN_BOUND messages in a row that stream_next may serve (a ring's or a
 * lane's run is broken by a message of the other kind: long ones go to
 * the ring). */
static void draw_burst(uint64_t seed, uint32_t s, long n, uint8_t *cls, uint32_t *len)
{
    uint64_t g = seed ^ (0xd6e8feb86659fd93ull * s);
    if (!g)
        g = seed;
    long left = 0;
    uint8_t c = 0;
    bool small = false;
    for (long i = 0; i < n; i++) {
        if (!left) {
            uint64_t w = rng(&g);
            c = (uint8_t)(w >> 40 & 1);
            bool lng = w >> 41 & 1;
            left = 1 + (long)(lng ? (w >> 44) % 64 : (w >> 44) % 4);
            small = lng && (w >> 42 & 1);
        }
        uint64_t v = rng(&g);
        cls[i] = c;
        left--;
        len[i] = small ? 4 : draw_len(v);
    }
}

static void burst_sender(struct board *bd, long n, uint64_t seed, double t0)
{
    const uint32_t me = info.rank;
    uint8_t *cls = malloc((size_t)n);
    uint32_t *len = malloc(sizeof *len * (size_t)n);
    if (!cls || !len)
        die("out of memory (%ld messages)", n);
    draw_burst(seed, me, n, cls, len);
    uint64_t p = (seed ^ 0x5bd1e995u) + me;
    if (!p)
        p = 1;
    long i = 0;
    for (uint32_t ph = 1;; ph++) {
        /* The batch: up to the first reserve that fails (the ring of the
         * next message's class is full, or its pool is dry); one phase in
         * four fewer. */
        long cap = rng(&p) % 4 ? n : (long)(rng(&p) % SHORT_BATCH);
        for (long k = 0; i < n && k < cap; k++, i++) {
            enum pt_cls c = (enum pt_cls)cls[i];
            void *slot = xo->reserve(xp, 0, c);
            if (!slot)
                break;
            mark(slot, tag_of(me, i), len[i]);
            xo->commit(xp, 0, c, PT_XPORT_HDR_BYTES + len[i]);
        }
        ST_RELAXED(&bd[me].committed, (uint32_t)i);
        ST_RELEASE(&bd[me].phase, ph);
        wait_phase(bd, 0, ph, "drained it");
        if (i == n)
            break;
    }
    uint32_t peer;
    enum pt_cls c;
    void *slot = recv_one(&peer, &c, t0); /* rank 0's "done" */
    if (peer != 0 || c != PT_CLS_RSP || marked(slot) != (uint32_t)n)
        die("expected rank 0's done, got a message from rank %u (%#x)", peer, marked(slot));
    check_body(slot, (uint32_t)n, 4);
    xo->release(xp, peer, c);
    xo->close(xp);
    free(cls);
    free(len);
}

/* Rank 0's view of sender s. */
struct snd {
    uint8_t *cls;
    uint32_t *len;
    long *q[PT_CLS_NR], nq[PT_CLS_NR]; /* the indices of each class in commit order */
    long at[PT_CLS_NR];                /* of each class: released so far          */
    long end[PT_CLS_NR];               /* ... committed before this phase began    */
    long committed;                    /* messages committed before this phase began */
    long deferred;                     /* the deferred request not released yet, or -1 */
    long last_def;                     /* the message deferred last (not twice in a row) */
    bool held;                         /* deferred since the last unhold_all       */
};

static long waiting(const struct snd *d, int c) { return d->end[c] - d->at[c]; }

/* unhold_all, as the engine calls it at the end of a poll: nobody is held. */
static void unhold(struct snd *sd, uint32_t ns)
{
    xo->unhold_all(xp);
    for (uint32_t s = 1; s <= ns; s++)
        sd[s].held = false;
}

/* Whether sender s's message, peeked now, counts towards a run (RUN_BOUND):
 * returns a sender t that is not held and has a response waiting, or has
 * any message waiting while s has no response waiting; 0 if none. */
static uint32_t contended(const struct snd *sd, uint32_t ns, uint32_t s)
{
    uint32_t any = 0;
    for (uint32_t t = 1; t <= ns; t++) {
        if (t == s || sd[t].held)
            continue;
        if (waiting(&sd[t], PT_CLS_RSP))
            return t;
        if (!any && waiting(&sd[t], PT_CLS_REQ))
            any = t;
    }
    return waiting(&sd[s], PT_CLS_RSP) ? 0 : any;
}

static void burst_receiver(struct board *bd, uint32_t depth, long n, uint64_t seed, double t0)
{
    const uint32_t ns = info.nranks - 1; /* senders 1 .. ns */
    struct snd *sd = calloc(ns + 1, sizeof *sd);
    if (!sd)
        die("out of memory");
    long total[PT_CLS_NR] = {0, 0};
    for (uint32_t s = 1; s <= ns; s++) {
        struct snd *d = &sd[s];
        d->cls = malloc((size_t)n);
        d->len = malloc(sizeof *d->len * (size_t)n);
        d->q[0] = malloc(sizeof(long) * (size_t)n);
        d->q[1] = malloc(sizeof(long) * (size_t)n);
        if (!d->cls || !d->len || !d->q[0] || !d->q[1])
            die("out of memory (%ld messages)", n);
        draw_burst(seed, s, n, d->cls, d->len);
        for (long i = 0; i < n; i++)
            d->q[d->cls[i]][d->nq[d->cls[i]]++] = i;
        total[0] += d->nq[0];
        total[1] += d->nq[1];
        d->deferred = d->last_def = -1;
    }
    uint64_t r = seed ^ 0x27d4eb2fu;
    uint32_t nheld = 0, hold_left = 0, ph, sending = ns;
    long defers[PT_CLS_NR] = {0, 0}, passes = 0, held_peeks = 0, empty_held = 0;
    uint32_t max_run = 0, max_any = 0, at_bound = 0;
    uint32_t peer;
    enum pt_cls c;
    for (ph = 1; sending; ph++) {
        /* Every sender still sending has committed its batch of this phase. */
        long left = 0;
        for (uint32_t s = 1; s <= ns; s++) {
            struct snd *d = &sd[s];
            if (d->committed < n) {
                wait_phase(bd, s, ph, "committed its batch");
                long k = (long)LD_RELAXED(&bd[s].committed);
                if (k < d->committed || k > n)
                    die("phase %u: rank %u says it has committed %ld messages (%ld before)", ph,
                        s, k, d->committed);
                d->committed = k;
                if (k == n)
                    sending--;
                for (int cc = 0; cc < PT_CLS_NR; cc++)
                    while (d->end[cc] < d->nq[cc] && d->q[cc][d->end[cc]] < k)
                        d->end[cc]++;
            }
            left += waiting(d, PT_CLS_REQ) + waiting(d, PT_CLS_RSP);
        }
        const bool defer_here = rng(&r) % 3 != 0; /* two phases in three */
        uint32_t prev = 0, run = 0, xrun = 0; /* prev 0: none (senders are 1 ..) */
        bool clean = true, prev_x = false;
        while (left) {
            const bool holding = nheld != 0;
            void *slot = xo->peek(xp, &peer, &c);
            if (!slot) {
                if (holding) { /* only held senders have messages: the engine's end of a poll */
                    unhold(sd, ns);
                    nheld = hold_left = 0;
                    empty_held++;
                    continue;
                }
                for (uint32_t s = 1; s <= ns; s++)
                    if (waiting(&sd[s], PT_CLS_REQ) + waiting(&sd[s], PT_CLS_RSP))
                        die("phase %u: peek found nothing, though rank %u (not held) has %ld "
                            "requests and %ld responses waiting, committed before the phase "
                            "began", ph, s, waiting(&sd[s], PT_CLS_REQ),
                            waiting(&sd[s], PT_CLS_RSP));
                die("phase %u: %ld messages left and none waiting (test bug)", ph, left);
            }
            if (peer == 0 || peer > ns)
                die("a message from rank %u (%#x)", peer, marked(slot));
            struct snd *d = &sd[peer];
            if (d->held)
                die("held means held: peek returned a %s (%#x) of rank %u, held since its "
                    "message %ld was deferred (no unhold_all since)",
                    c == PT_CLS_REQ ? "request" : "response", marked(slot), peer, d->last_def);
            if (d->at[c] >= d->end[c])
                die("phase %u: a %s (%#x) of rank %u beyond the %ld messages it had committed",
                    ph, c == PT_CLS_REQ ? "request" : "response", marked(slot), peer,
                    d->committed);
            long m = d->q[c][d->at[c]];
            if (marked(slot) != tag_of(peer, m))
                die("class FIFO broken: rank %u's message %#x, expected %#x", peer, marked(slot),
                    tag_of(peer, m));
            check_body(slot, tag_of(peer, m), d->len[m]);
            long other = d->at[c ^ 1] < d->nq[c ^ 1] ? d->q[c ^ 1][d->at[c ^ 1]] : n;
            if (m > other) {
                if (c != PT_CLS_RSP || d->deferred != other)
                    die("rank %u's message %ld taken before its message %ld of the other class "
                        "(committed earlier, not a deferred request)", peer, m, other);
                passes++;
            }
            /* No starvation (RUN_BOUND). */
            if (!clean && !holding && peer != prev)
                clean = true; /* the first change of sender after unhold_all */
            run = peer == prev ? run + 1 : 1;
            if (run > max_any)
                max_any = run;
            if (clean) {
                uint32_t t = contended(sd, ns, peer);
                xrun = t ? (peer == prev && prev_x ? xrun + 1 : 1) : 0;
                prev_x = t != 0;
                if (xrun > max_run)
                    max_run = xrun;
                if (xrun == RUN_BOUND)
                    at_bound++;
                if (xrun > RUN_BOUND)
                    die("starvation: phase %u: %u messages in a row from rank %u (the last: its "
                        "message %ld) while rank %u had %ld requests and %ld responses waiting "
                        "(rank %u: %ld responses waiting); the bound is %d (PT_SHM_STREAM_PEEKS "
                        "%d + 1)", ph, xrun, peer, m, t, waiting(&sd[t], PT_CLS_REQ),
                        waiting(&sd[t], PT_CLS_RSP), peer, waiting(d, PT_CLS_RSP), RUN_BOUND,
                        STREAM_PEEKS);
            }
            prev = peer;
            if (holding)
                held_peeks++;
            if (defer_here && d->last_def != m && (rng(&r) % DEFER_EVERY) == 0) {
                xo->defer(xp, peer, c); /* as the engine does when it cannot handle it yet */
                d->held = true;
                nheld++;
                d->last_def = m;
                if (c == PT_CLS_REQ)
                    d->deferred = m;
                defers[c]++;
                clean = prev_x = false;
                if (!holding)
                    hold_left = (uint32_t)(rng(&r) % 4); /* more messages before unhold_all */
            } else {
                xo->release(xp, peer, c);
                if (c == PT_CLS_REQ)
                    d->deferred = -1;
                d->at[c]++;
                left--;
            }
            if (nheld) {
                if (holding && hold_left)
                    hold_left--;
                if (!hold_left) { /* ... and at the end of its poll */
                    unhold(sd, ns);
                    nheld = 0;
                }
            }
        }
        ST_RELEASE(&bd[0].phase, ph);
    }
    for (uint32_t s = 1; s <= ns; s++)
        send_one(s, PT_CLS_RSP, (uint32_t)n, 4, t0);
    printf("mp_xorder: OK burst, %u senders x %ld messages (%ld requests, %ld responses) in %u "
           "phases, ring depth %u; deferred %ld requests and %ld responses, %ld peeks while "
           "holding (%ld found only held senders), %ld responses passed one; longest run while "
           "another sender waited %u (bound %d, reached %u times), longest run %u, %.2f s\n",
           ns, n, total[0], total[1], ph - 1, depth, defers[0], defers[1], held_peeks,
           empty_held, passes, max_run, RUN_BOUND, at_bound, max_any, now_s() - t0);
    fflush(stdout);
    xo->close(xp);
    for (uint32_t s = 1; s <= ns; s++) {
        free(sd[s].cls);
        free(sd[s].len);
        free(sd[s].q[0]);
        free(sd[s].q[1]);
    }
    free(sd);
}

static int burst(long n, uint64_t seed)
{
    if (info.nranks - 1 > MAX_SENDERS)
        die("the burst mode's bound holds for up to %d senders (PT_SHM_RSP_ALWAYS), got %u",
            MAX_SENDERS, info.nranks - 1);
    if (n >= 1l << 24)
        die("the burst mode sends fewer than 16777216 messages per sender, not %ld", n);
    const struct pt_shm_hdr *h = (const struct pt_shm_hdr *)mp_map_job_region();
    struct board *bd = (struct board *)((char *)h + BOARD_OFF);
    double t0 = now_s();
    if (info.rank == 0)
        burst_receiver(bd, h->qslots, n, seed, t0);
    else
        burst_sender(bd, n, seed, t0);
    return 0;
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
    if (info.nranks < 2 || info.nranks > 1 + MAX_SENDERS)
        die("needs a job of 2 to %d ranks (ptlrun -n 2: one sender), got %u", 1 + MAX_SENDERS,
            info.nranks);
    if (info.nranks > 2)
        return burst(n, seed);
    /* The class of message i, as both ranks draw it. */
    uint8_t *cls = malloc((size_t)n);
    g_len = malloc(sizeof *g_len * ((size_t)n + 1));
    if (!cls || !g_len)
        die("out of memory (%ld messages)", n);
    uint64_t s = seed;
    for (long i = 0; i < n; i++) {
        uint64_t v = rng(&s);
        cls[i] = (uint8_t)(v >> 40 & 1); /* PT_CLS_REQ 0, PT_CLS_RSP 1 */
        g_len[i] = draw_len(v);
    }
    g_len[n] = 4; /* rank 0's "done" */
    double t0 = now_s();
    uint32_t peer;
    enum pt_cls c;

    if (info.rank == 1) {
        uint64_t p = seed ^ 0x5bd1e995u;
        for (long i = 0; i < n; i++) {
            send_one(0, (enum pt_cls)cls[i], (uint32_t)i, g_len[i], t0);
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
        check_body(slot, (uint32_t)m, g_len[m]);
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
    send_one(1, PT_CLS_RSP, (uint32_t)n, g_len[n], t0);
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
