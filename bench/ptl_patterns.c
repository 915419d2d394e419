/*
 * ptl_patterns.c - one client pattern per run, as a test (--check) or as a
 * benchmark (default). Public API only (portals3.h, p3rt/p3rt.h, through
 * bench_util.h).
 *
 * Real Portals clients do not all look like our benchmarks (START events off,
 * one way of waiting). This program runs the shapes they do use, chosen by the
 * dimensions in dims[] below:
 *
 *   --wait      eqwait | eqpoll | eqpoll-timeout | eqpoll-multi | eqget-spin | eqwait-split
 *               PtlEQWait; PtlEQPoll(1 EQ, PTL_TIME_FOREVER); PtlEQPoll(1 EQ,
 *               10 ms) looping on PTL_EQ_EMPTY; PtlEQPoll(FOREVER) over 3 EQs
 *               (target events / initiator events / stream answers); a
 *               PtlEQGet spin on PTL_EQ_EMPTY; PtlEQWait on one of the same 3
 *               EQs at a time (the client that waits for SEND_END on its send
 *               EQ, then for the answer on its receive EQ)
 *   --start     on | off    START events (off: PTL_MD_EVENT_START_DISABLE on every MD)
 *   --send-end  on | off    put sources (and the put MD of getput) have an EQ
 *                           (SEND_START/SEND_END consumed) or PTL_EQ_NONE
 *   --ack       on | off    puts with PTL_ACK_REQ; the ACK is consumed when the
 *                           source MD has an EQ
 *   --op        put | get | getput
 *   --recv      persistent | fresh   target MD: one PTL_MD_THRESH_INF |
 *                           PTL_MD_MANAGE_REMOTE MD on a PTL_RETAIN ME (match_id
 *                           ANY, slot in ignored match bits), or a fresh ME+MD
 *                           per message (match_id = the peer, threshold 1,
 *                           PTL_UNLINK on both: + an UNLINK event)
 *   --region    on | off    on: PtlPutRegion / PtlGetRegion / PtlGetPutRegion
 *                           on a bound 16 MiB MD; off: PtlPut / PtlGet /
 *                           PtlGetPut on an MD of exactly the message
 *   --shape     pingpong | stream
 *   --size N    message size (0, 8, 4032 = eager limit, 4033, 64K, 1M, ...;
 *               getput: at most 64 = max_getput_md)
 *   --threads N 1 or 2 application threads per rank (at most 4); each runs
 *               its own exchange: own EQs, portal indices and match bits.
 *               With 1 the main thread does everything (the ordinary client)
 *   --think US [--think-mode sleep|spin]   A pauses before each exchange
 *               (untimed), B after its own operation, so waiters and NIC
 *               threads go to sleep and must be woken (default 0: hot loop)
 * Defaults: the ordinary client (put ping-pong, PtlEQWait, START on, SEND_END
 * to the source MD's EQ, no ACK, persistent receive MD, 8 B, 1 thread).
 *
 * Ranks: an even number; pairs (0,1), (2,3), ... run concurrently and
 * independently (not a ring: a pair's timing then does not depend on the
 * others' progress). The even rank of a pair is "A" (it starts each exchange
 * and takes the time), the odd one "B". Rank 0 reports its own pair (all its
 * threads) on the result line and the other pairs on "# pair" lines.
 *
 *   pingpong, put:    A puts the ping, B waits for it, checks it and puts
 *                     the pong back. Sample: half the round trip.
 *   pingpong, get:    each side alternately gets: A gets B's exposed data,
 *                     then B (on its GET_END) gets A's. getput: the same with
 *                     swaps, data checked both ways (the reply carries the
 *                     other side's exposed data, the target holds the swapped-in
 *                     data). Sample: half A's iteration = one whole get/swap.
 *   stream:           A starts a window of W ops (slots 0..W-1), B waits for
 *                     all W, checks all, then answers with one 8-byte put (the
 *                     "ctl" channel). Sample: the window's time / W.
 *
 * Every message has per-iteration content (a pattern from rank, thread,
 * iteration and slot): --check writes/verifies every byte, and the guard bytes
 * around it; the benchmark mode stamps and checks the first and last 8 bytes.
 * Messages alternate between slots (pingpong 2, stream W) at distinct local
 * and remote offsets, so offset mix-ups and stale data show.
 *
 * Events: every operation registers the events it must produce (kind, MD,
 * EQ, rlength, mlength, offset, match bits, pt index, hdr_data, initiator,
 * md.user_ptr, md.threshold) and their order within the operation (START <
 * END < UNLINK, END.link == START.link, an ACK's link its SEND_START's); across
 * operations, causal order per peer (issue 12 item 16): the events of the
 * peer's operation that it started only after it saw mine arrive (the pong,
 * the stream's answer, the next window) come after my operation's own events (SEND_END, ACK, REPLY_END),
 * checked where both go to one EQ (with several EQs the order in which the
 * program reads them is its own); each event received must match one
 * of them, each EQ's sequence must grow by one, PTL_EQ_DROPPED or
 * ni_fail_type != PTL_NI_OK fails the run. Nothing is left over at the end
 * (the EQs are empty, no message was dropped). A wait only reads as many
 * events as are expected; they are checked in arrival order when the wait
 * ends, in a ping-pong after the time is taken (A) or the answer is sent (B).
 *
 * Watchdog: a thread ends the job with exit status 3 and a report (rank,
 * thread, iteration, the wait and the events it still expects) when one wait
 * lasts longer than --watchdog SEC (default 5), or when a thread makes no
 * progress at all outside a wait for that long.
 *
 * --check also reports the longest wait and the waits over 1 ms and 10 ms
 * (stalls that did not reach the watchdog). --cpu-max PCT fails a rank whose
 * process (every thread: the application's, the NIC thread) used more CPU
 * time than PCT% of the exchanges' wall time: with --think, a rank that
 * sleeps while it waits stays far below, one whose engine spins does not.
 * The benchmark line (rank 0, and --csv FILE): pattern, size, iterations, mean/p50/p99/max in us per turn (put
 * ping-pong: half round trip; get/getput: one whole operation; stream: per
 * message) and the iterations over 100 us; samples go to a preallocated array.
 *
 * Exit status: 0 ok ("ptl_patterns: OK <pattern>" on rank 0 with --check), 1
 * a check failed, 2 bad usage, 3 watchdog.
 *
 * Run: ptlrun -n 2 [--host-matching] [--cpus 0,1] ptl_patterns --check --wait eqwait ...
 */
#include "bench_util.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- the matrix dimensions ------------------------------------------------- */

enum { W_EQWAIT, W_EQPOLL, W_EQPOLL_TIMEOUT, W_EQPOLL_MULTI, W_EQGET_SPIN, W_EQWAIT_SPLIT };
enum { OP_PUT, OP_GET, OP_GETPUT };
enum { SH_PINGPONG, SH_STREAM };
enum { RV_PERSISTENT, RV_FRESH };

/* One run: the pattern (dims[] and the numeric dimensions) and how to run it. */
typedef struct {
    int wait, start, send_end, ack, op, recv, region, shape, think_mode; /* dims[] */
    size_t size;
    long think_us;     /* pause before each own operation (sleep/wake paths) */
    int threads, window;
    int check;         /* --check: short, every byte verified */
    long iters, warmup;
    double watchdog_s;
    double cpu_max;    /* --cpu-max PCT (0: not checked) */
    const char *csv;
    int trace;
} run_t;

#define NVALS 8

typedef struct {
    const char *opt;
    const char *vals[NVALS]; /* value names; index = the field's value */
    size_t off;          /* the int field in run_t */
    const char *help;
} dim_t;

/* (the order of dims[]) */
enum { D_SHAPE, D_OP, D_WAIT, D_START, D_SEND_END, D_ACK, D_RECV, D_REGION, D_THINK };

static const dim_t dims[] = {
    {"shape", {"pingpong", "stream"}, offsetof(run_t, shape), "ping-pong, or a window of W per answer"},
    {"op", {"put", "get", "getput"}, offsetof(run_t, op), "the data operation"},
    {"wait", {"eqwait", "eqpoll", "eqpoll-timeout", "eqpoll-multi", "eqget-spin", "eqwait-split"},
     offsetof(run_t, wait),
     "PtlEQWait | PtlEQPoll FOREVER | PtlEQPoll 10 ms loop | PtlEQPoll over 3 EQs | PtlEQGet spin |\n"
     "              PtlEQWait on one of 3 EQs at a time (initiator events first, then targets)"},
    {"start", {"off", "on"}, offsetof(run_t, start), "START events on every MD"},
    {"send-end", {"off", "on"}, offsetof(run_t, send_end),
     "put sources have an EQ (SEND_START/SEND_END), or PTL_EQ_NONE"},
    {"ack", {"off", "on"}, offsetof(run_t, ack), "PTL_ACK_REQ on puts"},
    {"recv", {"persistent", "fresh"}, offsetof(run_t, recv),
     "target MD: THRESH_INF|MANAGE_REMOTE, or a fresh ME+MD (threshold 1, PTL_UNLINK) per message"},
    {"region", {"off", "on"}, offsetof(run_t, region),
     "Put/Get/GetPutRegion on a bound 16 MiB MD, or the whole of an exact MD"},
    {"think-mode", {"sleep", "spin"}, offsetof(run_t, think_mode),
     "with --think US: nanosleep, or compute (busy loop) for US before each own operation"},
};
#define NDIMS ((int)(sizeof dims / sizeof dims[0]))

static int *dim_field(run_t *r, int d) { return (int *)((char *)r + dims[d].off); }
static int dim_get(const run_t *r, int d) { return *(const int *)((const char *)r + dims[d].off); }

/* ---- layout ------------------------------------------------------------------ */

#define MAX_THREADS 4
#define MAX_WINDOW 64
#define MAX_SLOTS MAX_WINDOW
#define SKEW 8             /* the message starts SKEW bytes into its slot */
#define GAP 32             /* guard bytes after it (at least) */
#define LBASE 256          /* local buffers start their slots here: local != remote offsets */
#define GUARD 0xA5
#define POISON 0x5A
#define REGION_MD_LEN ((size_t)16 << 20)
#define POLL_TIMEOUT_MS 10
#define SLOW_WAIT_MS 10.0
#define GETPUT_MAX 64
#define CTL_MSG 8
#define MB_BASE 0x5a7700000000ull
#define PT_DATA(t) (PB_PT_FIRST_FREE + 2 * (t))
#define PT_CTL(t) (PB_PT_FIRST_FREE + 2 * (t) + 1)

enum { CH_DATA, CH_CTL };
enum { TAG_SRC = 1, TAG_GET = 2, TAG_TGT = 3 };
enum { SEED_SRC = 1, SEED_EXPOSED = 2, SEED_PUTV = 3, SEED_CTL = 4 };

/* One direction-pair of traffic: the data channel (op, W or 2 slots) or the
 * stream's answer channel (8-byte put, B -> A, one slot). */
typedef struct {
    int ch, op, nslots, region;
    ptl_pt_index_t pt;
    ptl_match_bits_t mb; /* slot in the low 8 bits */
    size_t msg, stride;
    int eq_t, eq_i;      /* EQ index of target events, of initiator events */
    int sends, recvs;    /* this rank initiates on it / is its target */
    unsigned char *sbuf, *lbuf, *tbuf; /* put source, get destination, target/exposed */
    size_t sbuf_len, lbuf_len, tbuf_len;
    ptl_handle_md_t smd[MAX_SLOTS], lmd[MAX_SLOTS]; /* region on: [0] only */
    ptl_handle_me_t tme[MAX_SLOTS];
    ptl_handle_md_t tmd[MAX_SLOTS];                /* persistent: [0] only */
    int posted[MAX_SLOTS];                          /* fresh: ME+MD not yet unlinked */
} chan_t;

/* One expected event. */
typedef struct {
    ptl_event_kind_t type;
    int eqi;
    ptl_handle_md_t md;
    uintptr_t uptr;
    int thresh;
    ptl_size_t rlength, mlength, offset;
    int check_ptmb, check_hdr;
    ptl_pt_index_t pt;
    ptl_match_bits_t mb;
    ptl_hdr_data_t hdr;
    ptl_process_id_t initiator;
    int after;   /* entry that must have been seen first (-1: none) */
    int grp;     /* my operation's events: its group (0: none)              */
    int follow;  /* the peer's operation's events: the group of mine that
                  * the peer saw complete before it started (0: none)       */
    int link_of; /* END: its START entry, whose link it must carry (-1: none) */
    ptl_seq_t link;
    chan_t *fresh_ch; /* UNLINK of a fresh target MD: slot to mark unposted */
    int fresh_slot;
    int seen;    /* 0: not yet; else its event's place in arrival order (1, 2, ...) */
} expect_t;

#define MAX_EXPECT (8 * MAX_WINDOW + 32)

/* An event read in a wait, checked later (wait_read, check_events). */
typedef struct {
    ptl_event_t ev;
    int which; /* the EQ it came from */
} pending_t;

/* Watchdog view of one application thread. */
typedef struct {
    _Atomic unsigned long wait_seq; /* odd while in a wait */
    _Atomic unsigned long progress;
    _Atomic long iter;
    _Atomic(const char *) what;
    _Atomic int active;
    struct xs *x;
} wd_slot_t;

/* One application thread's exchange. */
typedef struct xs {
    const run_t *r;
    int t, a; /* thread index; a: this rank is A (the even rank of its pair) */
    ptl_process_id_t me, peer;
    ptl_handle_eq_t eq[3];
    int neq;
    ptl_seq_t eq_seq[3];
    int eq_seq_ok[3];
    chan_t data, ctl;
    expect_t exp[MAX_EXPECT];
    int nexp, unseen;
    int unseen_eq[3];         /* of unseen: expected on each EQ, less those read there */
    int arrived;              /* events matched in this set of expectations */
    pending_t pend[MAX_EXPECT]; /* events read, not checked yet */
    int npend;
    int grp_mark, grp_follow; /* set while expect_initiator / expect_target push */
    int grp_next;             /* the next group id (> 0)                          */
    long iter, events, empty_polls, slow_waits, ms_waits;
    double max_wait_ms;
    long max_wait_iter;
    double *lat; /* timed samples (A only), preallocated */
    long nlat;
    wd_slot_t *wd;
    pthread_t th;
} xs_t;

static run_t R;
static pb_ctx C;
static char g_desc[512], g_name[160];
static wd_slot_t g_wd[MAX_THREADS];
static xs_t *g_xs[MAX_THREADS];
static pthread_barrier_t g_ready, g_go;

/* ---- failing loudly ------------------------------------------------------------ */

static void dump_expect(FILE *f, const xs_t *x);

static void xfail(const xs_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void xfail(const xs_t *x, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "[rank %u thread %d iteration %ld] ptl_patterns FAILED: ", C.rank,
            x ? x->t : -1, x ? x->iter : -1L);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  pattern: %s\n", g_desc);
    if (x)
        dump_expect(stderr, x);
    fflush(stderr);
    _exit(1);
}

#define XCK(x, call)                                                                     \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != PTL_OK)                                                               \
            xfail((x), "%s:%d: %s: %s", __FILE__, __LINE__, #call, PtlErrorStr((unsigned)rc_)); \
    } while (0)

static const char *kind_str(ptl_event_kind_t k) { return PtlEventKindStr(k); }

static void ev_str(const ptl_event_t *ev, char *b, size_t n)
{
    snprintf(b, n,
             "%s md %#" PRIx32 " init {%" PRIu32 ",%" PRIu32 "} pt %" PRIu32 " mb %#" PRIx64
             " rlen %" PRIu64 " mlen %" PRIu64 " off %" PRIu64 " hdr %#" PRIx64
             " uptr %p thr %d link %" PRIu32 " seq %" PRIu32 " fail %" PRIu32,
             kind_str(ev->type), ev->md_handle, ev->initiator.nid, ev->initiator.pid, ev->pt_index,
             ev->match_bits, ev->rlength, ev->mlength, ev->offset, ev->hdr_data, ev->md.user_ptr,
             ev->md.threshold, ev->link, ev->sequence, ev->ni_fail_type);
}

static void dump_expect(FILE *f, const xs_t *x)
{
    int n = x->nexp, shown = 0;
    if (n > MAX_EXPECT || n < 0)
        return;
    fprintf(f, "  events still expected (%d of %d in this wait):\n", x->unseen, n);
    for (int i = 0; i < n && shown < 24; i++) {
        const expect_t *e = &x->exp[i];
        if (e->seen)
            continue;
        shown++;
        fprintf(f, "    %s on EQ %d: md %#" PRIx32 " mb %#" PRIx64 " mlen %" PRIu64 " off %" PRIu64
                   " from {%" PRIu32 ",%" PRIu32 "}%s\n",
                kind_str(e->type), e->eqi, e->md, e->mb, e->mlength, e->offset, e->initiator.nid,
                e->initiator.pid, e->after >= 0 && !x->exp[e->after].seen ? " (after an earlier one)" : "");
    }
    int np = x->npend;
    if (np > 0 && np <= MAX_EXPECT) {
        /* read in this wait, matched and checked when it ends (the list
         * above may still name them) */
        fprintf(f, "  events read in this wait, checked when it ends (%d):\n", np);
        for (int i = 0; i < np && i < 24; i++) {
            char b[400];
            ev_str(&x->pend[i].ev, b, sizeof b);
            fprintf(f, "    EQ %d: %s\n", x->pend[i].which, b);
        }
    }
    fprintf(f, "  events consumed by this thread: %ld; empty polls/gets: %ld\n", x->events,
            x->empty_polls);
}

/* This process's CPU time so far, every thread (--cpu-max). */
static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* ---- watchdog ------------------------------------------------------------------ */

static double now_s(void) { return pb_now_ns() / 1e9; }

/* A hang arrives with its explanation: ask ptlrun (our launcher) for a dump
 * of every rank (SIGUSR1, "My job hangs" in README.md) and stay alive while
 * it reads this rank's engine. Without ptlrun there is nobody to ask. */
static void watchdog_dump(void)
{
    const char *s = getenv("PTL_LAUNCHER_PID");
    long pid = s ? strtol(s, NULL, 10) : 0;
    if (pid <= 1 || pid != (long)getppid() || kill((pid_t)pid, SIGUSR1) != 0)
        return;
    fprintf(stderr, "[rank %u] watchdog: asked ptlrun (pid %ld) for a dump of the job\n", C.rank,
            pid);
    fflush(stderr);
    const struct timespec t = {1, 0};
    nanosleep(&t, NULL);
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    unsigned long last_seq[MAX_THREADS] = {0}, last_prog[MAX_THREADS] = {0};
    double since[MAX_THREADS];
    for (int t = 0; t < MAX_THREADS; t++)
        since[t] = now_s();
    const struct timespec tick = {0, 20 * 1000 * 1000};
    for (;;) {
        nanosleep(&tick, NULL);
        double now = now_s();
        for (int t = 0; t < R.threads; t++) {
            wd_slot_t *w = &g_wd[t];
            unsigned long s = atomic_load_explicit(&w->wait_seq, memory_order_relaxed);
            unsigned long p = atomic_load_explicit(&w->progress, memory_order_relaxed);
            if (!atomic_load_explicit(&w->active, memory_order_relaxed) || s != last_seq[t] ||
                p != last_prog[t]) {
                last_seq[t] = s;
                last_prog[t] = p;
                since[t] = now;
                continue;
            }
            if (now - since[t] < R.watchdog_s)
                continue;
            const char *what = atomic_load_explicit(&w->what, memory_order_relaxed);
            long it = atomic_load_explicit(&w->iter, memory_order_relaxed);
            fflush(stdout);
            if (s & 1)
                fprintf(stderr,
                        "[rank %u thread %d iteration %ld] watchdog: one wait (%s, --wait %s) has "
                        "lasted %.1f s > %.1f s: HANG\n",
                        C.rank, t, it, what ? what : "?", dims[D_WAIT].vals[R.wait], now - since[t],
                        R.watchdog_s);
            else
                fprintf(stderr,
                        "[rank %u thread %d iteration %ld] watchdog: no progress outside a wait "
                        "for %.1f s (last step: %s): STALL\n",
                        C.rank, t, it, now - since[t], what ? what : "?");
            fprintf(stderr, "  pattern: %s\n", g_desc);
            if (w->x)
                dump_expect(stderr, w->x);
            fprintf(stderr, "[rank %u] messages dropped here since start-up: %ld\n", C.rank,
                    pb_drops(&C));
            fflush(stderr);
            watchdog_dump();
            _exit(3);
        }
    }
    return NULL;
}

static void watchdog_start(void)
{
    if (R.watchdog_s <= 0)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog_main, NULL) != 0)
        pb_die("cannot start the watchdog thread");
    pthread_detach(t);
}

static inline void wd_step(xs_t *x, const char *what)
{
    atomic_store_explicit(&x->wd->what, what, memory_order_relaxed);
    atomic_store_explicit(&x->wd->progress,
                          atomic_load_explicit(&x->wd->progress, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline void wd_wait_edge(xs_t *x)
{
    atomic_store_explicit(&x->wd->wait_seq,
                          atomic_load_explicit(&x->wd->wait_seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* ---- data -------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Content written by rank `rank`, thread t, for iteration it, slot k. */
static uint64_t seed_of(int kind, unsigned rank, int t, long it, int k)
{
    return mix64((uint64_t)kind << 56 ^ (uint64_t)rank << 44 ^ (uint64_t)t << 40 ^
                 (uint64_t)k << 32 ^ (uint64_t)it);
}

static ptl_hdr_data_t hdr_of(int ch, unsigned rank, int t, long it, int k)
{
    return (ptl_hdr_data_t)it << 24 | (ptl_hdr_data_t)k << 16 | (ptl_hdr_data_t)ch << 12 |
           (ptl_hdr_data_t)t << 8 | (rank & 0xff);
}

static void fill_data(const xs_t *x, unsigned char *p, size_t n, uint64_t seed)
{
    if (x->r->check) {
        pb_fill(p, n, seed);
        return;
    }
    /* benchmark: stamp the first and last 8 bytes */
    uint64_t a = seed, b = ~seed;
    memcpy(p, &a, n < 8 ? n : 8);
    if (n >= 16)
        memcpy(p + n - 8, &b, 8);
}

static void check_data(const xs_t *x, const unsigned char *p, size_t n, uint64_t seed,
                       const char *what, int k)
{
    size_t bad = 0;
    if (x->r->check) {
        bad = pb_check(p, n, seed);
    } else {
        uint64_t a = seed, b = ~seed;
        if (memcmp(p, &a, n < 8 ? n : 8))
            bad++;
        if (n >= 16 && memcmp(p + n - 8, &b, 8))
            bad++;
    }
    if (bad) {
        size_t first = 0;
        unsigned char *ref = malloc(n ? n : 1);
        if (ref) {
            pb_fill(ref, n, seed);
            while (first < n && p[first] == ref[first])
                first++;
            free(ref);
        }
        xfail(x, "%s, slot %d: %zu wrong byte(s)/words of %zu (first near byte %zu: %#x); "
                 "stale or misplaced data",
              what, k, bad, n, first, first < n ? p[first] : 0);
    }
}

/* --check: the bytes just before and after a message area must be untouched. */
static void check_guards(const xs_t *x, const unsigned char *p, size_t n, const char *what, int k)
{
    if (!x->r->check)
        return;
    for (int i = 1; i <= SKEW; i++)
        if (p[-i] != GUARD)
            xfail(x, "%s, slot %d: guard byte %d before the message overwritten (%#x)", what, k, i,
                  p[-i]);
    for (size_t i = 0; i < GAP / 2; i++)
        if (p[n + i] != GUARD)
            xfail(x, "%s, slot %d: guard byte %zu after the %zu-byte message overwritten (%#x)", what,
                  k, i, n, p[n + i]);
}

static void *xalloc(size_t len)
{
    void *p = pb_alloc(len);
    memset(p, GUARD, len);
    return p;
}

static void xfree(void *p, size_t len)
{
    if (p) {
        size_t n = ((len ? len : 1) + 4095) / 4096 * 4096;
        munmap(p, n);
    }
}

/* Offsets and message addresses of slot k. */
static ptl_size_t roff(const chan_t *c, int k) { return (ptl_size_t)k * c->stride + SKEW; }
static ptl_size_t loff(const chan_t *c, int k) { return LBASE + (ptl_size_t)k * c->stride + SKEW; }
static unsigned char *src_ptr(const chan_t *c, int k) { return c->sbuf + loff(c, k); }
static unsigned char *lbuf_ptr(const chan_t *c, int k) { return c->lbuf + loff(c, k); }
static unsigned char *tbuf_ptr(const chan_t *c, int k) { return c->tbuf + roff(c, k); }

static uintptr_t tag_of(const xs_t *x, const chan_t *c, int kind, int k)
{
    return (uintptr_t)0x9a000000u | (uintptr_t)x->t << 16 | (uintptr_t)c->ch << 12 |
           (uintptr_t)kind << 8 | (uintptr_t)k;
}

/* ---- setup ------------------------------------------------------------------- */

static unsigned md_opts(const run_t *r) { return r->start ? 0 : PTL_MD_EVENT_START_DISABLE; }

static unsigned tgt_opts(const chan_t *c)
{
    switch (c->op) {
    case OP_PUT: return PTL_MD_OP_PUT;
    case OP_GET: return PTL_MD_OP_GET;
    default: return PTL_MD_OP_GET | PTL_MD_OP_PUT;
    }
}

static size_t rup(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* The initiator's local MDs over buf (source or get buffer): one per slot at
 * its offset, or one over the whole buffer (region on, PtlPutRegion/GetRegion). */
static void bind_local(xs_t *x, chan_t *c, unsigned char *buf, size_t len, int tag,
                       ptl_handle_eq_t eq, ptl_handle_md_t *mds)
{
    for (int k = 0; k < (c->region ? 1 : c->nslots); k++) {
        ptl_md_t d = {c->region ? (void *)buf : (void *)(buf + loff(c, k)),
                      c->region ? len : c->msg, PTL_MD_THRESH_INF, 0, md_opts(x->r),
                      (void *)tag_of(x, c, tag, k), eq};
        XCK(x, PtlMDBind(C.ni, d, PTL_RETAIN, &mds[k]));
    }
}

static void chan_setup(xs_t *x, chan_t *c, int ch)
{
    const run_t *r = x->r;
    int stream = r->shape == SH_STREAM;
    memset(c, 0, sizeof *c);
    c->ch = ch;
    if (ch == CH_DATA) {
        c->op = r->op;
        c->msg = r->size;
        c->nslots = stream ? r->window : 2;
        c->region = r->region;
        c->pt = PT_DATA(x->t);
        c->mb = MB_BASE | (ptl_match_bits_t)x->t << 16 | 0x100;
        c->sends = x->a || !stream;
        c->recvs = !x->a || !stream;
        c->eq_t = 0;
        c->eq_i = x->neq > 1 ? 1 : 0;
    } else {
        c->op = OP_PUT;
        c->msg = CTL_MSG;
        c->nslots = 1;
        c->region = 0;
        c->pt = PT_CTL(x->t);
        c->mb = MB_BASE | (ptl_match_bits_t)x->t << 16 | 0x200;
        c->sends = !x->a;
        c->recvs = x->a;
        c->eq_t = c->eq_i = x->neq > 2 ? 2 : 0;
    }
    c->stride = rup(c->msg + SKEW + GAP, 64);
    size_t local = LBASE + (size_t)c->nslots * c->stride;
    if (c->region && local < REGION_MD_LEN)
        local = REGION_MD_LEN;
    int need_src = c->sends && c->op != OP_GET;
    int need_get = c->sends && c->op != OP_PUT;
    ptl_handle_eq_t seq = r->send_end ? x->eq[c->eq_i] : PTL_EQ_NONE;
    if (need_src) {
        c->sbuf_len = local;
        c->sbuf = xalloc(local);
        bind_local(x, c, c->sbuf, c->sbuf_len, TAG_SRC, seq, c->smd);
    }
    if (need_get) {
        c->lbuf_len = local;
        c->lbuf = xalloc(local);
        bind_local(x, c, c->lbuf, c->lbuf_len, TAG_GET, x->eq[c->eq_i], c->lmd);
    }
    if (c->recvs) {
        c->tbuf_len = (size_t)c->nslots * c->stride;
        c->tbuf = xalloc(c->tbuf_len);
        if (r->recv == RV_PERSISTENT) {
            XCK(x, PtlMEAttach(C.ni, c->pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, c->mb,
                               0xff, PTL_RETAIN, PTL_INS_AFTER, &c->tme[0]));
            ptl_md_t d = {c->tbuf, c->tbuf_len, PTL_MD_THRESH_INF, 0,
                          tgt_opts(c) | PTL_MD_MANAGE_REMOTE | md_opts(r),
                          (void *)tag_of(x, c, TAG_TGT, 0), x->eq[c->eq_t]};
            XCK(x, PtlMDAttach(c->tme[0], d, PTL_RETAIN, &c->tmd[0]));
        }
    }
}

/* recv fresh: a new ME + MD for slot k, used once, unlinked by its use. */
static void post_fresh(xs_t *x, chan_t *c, int k)
{
    wd_step(x, "PtlMEAttach/PtlMDAttach (fresh receive)");
    if (c->posted[k])
        xfail(x, "fresh receive for slot %d posted twice (the previous one never unlinked)", k);
    XCK(x, PtlMEAttach(C.ni, c->pt, x->peer, c->mb | (ptl_match_bits_t)k, 0, PTL_UNLINK,
                       PTL_INS_AFTER, &c->tme[k]));
    ptl_md_t d = {tbuf_ptr(c, k), c->msg, 1, 0, tgt_opts(c) | md_opts(x->r),
                  (void *)tag_of(x, c, TAG_TGT, k), x->eq[c->eq_t]};
    XCK(x, PtlMDAttach(c->tme[k], d, PTL_UNLINK, &c->tmd[k]));
    c->posted[k] = 1;
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static void xs_setup(xs_t *x)
{
    const run_t *r = x->r;
    x->me = C.me;
    x->peer = C.ids[C.rank ^ 1u];
    x->a = (C.rank & 1u) == 0;
    x->neq = r->wait == W_EQPOLL_MULTI || r->wait == W_EQWAIT_SPLIT ? 3 : 1;
    size_t cnt = pow2_at_least((size_t)(8 * r->window + 64));
    for (int i = 0; i < x->neq; i++)
        XCK(x, PtlEQAlloc(C.ni, cnt, PTL_EQ_HANDLER_NONE, &x->eq[i]));
    chan_setup(x, &x->data, CH_DATA);
    if (r->shape == SH_STREAM)
        chan_setup(x, &x->ctl, CH_CTL);
    if (x->a) {
        x->lat = malloc(sizeof(double) * (size_t)(r->iters > 0 ? r->iters : 1));
        if (!x->lat)
            xfail(x, "out of memory");
    }
}

/* ---- expected events ---------------------------------------------------------- */

static int expect_push(xs_t *x, expect_t e)
{
    if (x->nexp >= MAX_EXPECT)
        xfail(x, "internal: too many expected events");
    e.seen = 0;
    e.grp = x->grp_mark;
    e.follow = x->grp_follow;
    x->exp[x->nexp] = e;
    x->unseen++;
    x->unseen_eq[e.eqi]++;
    return x->nexp++;
}

/* [START], END, [UNLINK] of one operation on one MD, in that order. */
static void expect_op(xs_t *x, expect_t t, ptl_event_kind_t ks, ptl_event_kind_t ke, int unlink)
{
    int s = -1;
    t.after = t.link_of = -1;
    if (x->r->start) {
        t.type = ks;
        s = expect_push(x, t);
    }
    t.type = ke;
    t.after = t.link_of = s;
    t.fresh_ch = NULL;
    int e = expect_push(x, t);
    if (unlink) {
        t.type = PTL_EVENT_UNLINK;
        t.after = e;
        t.link_of = -1;
        t.check_ptmb = 0;
        t.fresh_ch = NULL;
        expect_push(x, t);
    }
}

/* A new group id for the events of one or more of my operations. */
static int new_grp(xs_t *x) { return ++x->grp_next; }

/* Events of the peer's operation on my slot k; the peer starts it only after
 * it saw my operations of group `follow` arrive (0: none). */
static void expect_target(xs_t *x, chan_t *c, int k, ptl_hdr_data_t hdr, int follow)
{
    int fresh = x->r->recv == RV_FRESH;
    expect_t t = {0};
    t.eqi = c->eq_t;
    t.md = c->tmd[fresh ? k : 0];
    t.uptr = tag_of(x, c, TAG_TGT, fresh ? k : 0);
    t.thresh = fresh ? 0 : PTL_MD_THRESH_INF;
    t.rlength = t.mlength = c->msg;
    t.offset = fresh ? 0 : roff(c, k);
    t.check_ptmb = 1;
    t.pt = c->pt;
    t.mb = c->mb | (ptl_match_bits_t)k;
    t.check_hdr = 1;
    t.hdr = c->op == OP_GET ? 0 : hdr;
    t.initiator = x->peer;
    if (fresh && !c->posted[k])
        xfail(x, "internal: expecting a message on slot %d with no receive posted", k);
    ptl_event_kind_t ks = c->op == OP_PUT ? PTL_EVENT_PUT_START
                          : c->op == OP_GET ? PTL_EVENT_GET_START : PTL_EVENT_GETPUT_START;
    x->grp_follow = follow;
    expect_op(x, t, ks, ks + 1, fresh);
    x->grp_follow = 0;
    if (fresh) { /* the UNLINK entry frees the slot */
        x->exp[x->nexp - 1].fresh_ch = c;
        x->exp[x->nexp - 1].fresh_slot = k;
    }
}

/* Events of my own operation on slot k at my MDs, in group grp. */
static void expect_initiator(xs_t *x, chan_t *c, int k, ptl_hdr_data_t hdr, int grp)
{
    const run_t *r = x->r;
    x->grp_mark = grp;
    if (c->op != OP_GET && r->send_end) { /* put source / getput put MD */
        expect_t t = {0};
        t.eqi = c->eq_i;
        t.md = c->smd[c->region ? 0 : k];
        t.uptr = tag_of(x, c, TAG_SRC, c->region ? 0 : k);
        t.thresh = PTL_MD_THRESH_INF;
        t.rlength = t.mlength = c->msg;
        t.offset = roff(c, k);
        t.check_ptmb = 1;
        t.pt = c->pt;
        t.mb = c->mb | (ptl_match_bits_t)k;
        t.check_hdr = 1;
        t.hdr = hdr;
        t.initiator = x->me;
        expect_op(x, t, PTL_EVENT_SEND_START, PTL_EVENT_SEND_END, 0);
        if (c->op == OP_PUT && r->ack) {
            t.type = PTL_EVENT_ACK;
            t.after = -1;
            /* libportals' ACK carries its SEND_START's link (the spec leaves it open) */
            t.link_of = r->start ? x->nexp - 2 : -1;
            t.check_hdr = 0;
            t.initiator = x->peer;
            expect_push(x, t);
        }
    }
    if (c->op != OP_PUT) { /* the reply */
        expect_t t = {0};
        t.eqi = c->eq_i;
        t.md = c->lmd[c->region ? 0 : k];
        t.uptr = tag_of(x, c, TAG_GET, c->region ? 0 : k);
        t.thresh = PTL_MD_THRESH_INF;
        t.rlength = t.mlength = c->msg;
        t.offset = c->region ? loff(c, k) : 0;
        t.initiator = x->peer;
        expect_op(x, t, PTL_EVENT_REPLY_START, PTL_EVENT_REPLY_END, 0);
    }
    x->grp_mark = 0;
}

static int is_reply(ptl_event_kind_t k)
{
    return k == PTL_EVENT_REPLY_START || k == PTL_EVENT_REPLY_END;
}

/* p's event came before e's (both matched: arrival places, expect_t.seen). */
static int seen_before(const expect_t *p, const expect_t *e)
{
    return p->seen && p->seen < e->seen;
}

/* Causal order per peer: an event of the peer's operation e comes after my
 * operation's events that the peer had to see complete first (same EQ). */
static void check_causal(xs_t *x, const expect_t *e, const ptl_event_t *ev, int which)
{
    for (int i = 0; i < x->nexp; i++) {
        const expect_t *p = &x->exp[i];
        if (seen_before(p, e) || p->grp != e->follow || p->eqi != which)
            continue;
        char b[400];
        ev_str(ev, b, sizeof b);
        xfail(x, "causal order: the peer's %s (of an operation it started after mine completed "
                 "at its side) before my %s (md %#" PRIx32 " mb %#" PRIx64 "): %s",
              kind_str(e->type), kind_str(p->type), p->md, p->mb, b);
    }
}

/* The expected entry of an event read (first one not yet matched, of its
 * type, MD, match bits and, for a reply, offset); its arrival place. */
static expect_t *match_event(xs_t *x, const pending_t *p)
{
    const ptl_event_t *ev = &p->ev;
    char b[400];
    if (ev->ni_fail_type != PTL_NI_OK) {
        ev_str(ev, b, sizeof b);
        xfail(x, "failed event (%s): %s", PtlNIFailStr(C.ni, ev->ni_fail_type), b);
    }
    expect_t *e = NULL;
    for (int i = 0; i < x->nexp; i++) {
        expect_t *c = &x->exp[i];
        if (c->seen || c->type != ev->type || c->md != ev->md_handle)
            continue;
        if (c->check_ptmb && c->mb != ev->match_bits)
            continue;
        if (is_reply(c->type) && c->offset != ev->offset)
            continue;
        e = c;
        break;
    }
    if (!e) {
        ev_str(ev, b, sizeof b);
        xfail(x, "unexpected event on EQ %d: %s", p->which, b);
    }
    e->seen = ++x->arrived;
    return e;
}

/* Every field of a matched event, its EQ's sequence, and its order against
 * the events before it. */
static void verify_event(xs_t *x, const pending_t *p, expect_t *e)
{
    const ptl_event_t *ev = &p->ev;
    int which = p->which;
    char b[400];
    if (x->eq_seq_ok[which] && ev->sequence != x->eq_seq[which] + 1) {
        ev_str(ev, b, sizeof b);
        xfail(x, "EQ %d: sequence %" PRIu32 " after %" PRIu32 " (events lost or repeated): %s",
              which, ev->sequence, x->eq_seq[which], b);
    }
    x->eq_seq[which] = ev->sequence;
    x->eq_seq_ok[which] = 1;
    if (e->follow > 0)
        check_causal(x, e, ev, which);
    /* the event is formatted only when something differs */
    int late = e->after >= 0 && !seen_before(&x->exp[e->after], e);
    int differs = e->eqi != which || late ||
                  ev->rlength != e->rlength || ev->mlength != e->mlength ||
                  ev->offset != e->offset || (uintptr_t)ev->md.user_ptr != e->uptr ||
                  ev->md.threshold != e->thresh || ev->initiator.nid != e->initiator.nid ||
                  ev->initiator.pid != e->initiator.pid ||
                  (e->check_ptmb && ev->pt_index != e->pt) ||
                  (e->check_hdr && ev->hdr_data != e->hdr) ||
                  (e->link_of >= 0 && ev->link != x->exp[e->link_of].link);
    if (differs) {
        ev_str(ev, b, sizeof b);
        if (e->eqi != which)
            xfail(x, "event on EQ %d, expected on EQ %d: %s", which, e->eqi, b);
        if (late)
            xfail(x, "%s before %s of the same operation: %s", kind_str(e->type),
                  kind_str(x->exp[e->after].type), b);
        if (ev->rlength != e->rlength || ev->mlength != e->mlength || ev->offset != e->offset)
            xfail(x, "rlength/mlength/offset %" PRIu64 "/%" PRIu64 "/%" PRIu64
                     ", expected %" PRIu64 "/%" PRIu64 "/%" PRIu64 ": %s",
                  ev->rlength, ev->mlength, ev->offset, e->rlength, e->mlength, e->offset, b);
        if ((uintptr_t)ev->md.user_ptr != e->uptr)
            xfail(x, "md.user_ptr %p, expected %#" PRIxPTR ": %s", ev->md.user_ptr, e->uptr, b);
        if (ev->md.threshold != e->thresh)
            xfail(x, "md.threshold %d, expected %d: %s", ev->md.threshold, e->thresh, b);
        if (ev->initiator.nid != e->initiator.nid || ev->initiator.pid != e->initiator.pid)
            xfail(x, "initiator {%" PRIu32 ",%" PRIu32 "}, expected {%" PRIu32 ",%" PRIu32 "}: %s",
                  ev->initiator.nid, ev->initiator.pid, e->initiator.nid, e->initiator.pid, b);
        if (e->check_ptmb && ev->pt_index != e->pt)
            xfail(x, "pt_index %" PRIu32 ", expected %" PRIu32 ": %s", ev->pt_index, e->pt, b);
        if (e->check_hdr && ev->hdr_data != e->hdr)
            xfail(x, "hdr_data %#" PRIx64 ", expected %#" PRIx64 ": %s", ev->hdr_data, e->hdr, b);
        if (e->link_of >= 0 && ev->link != x->exp[e->link_of].link)
            xfail(x, "END link %" PRIu32 " differs from its START's %" PRIu32 ": %s", ev->link,
                  x->exp[e->link_of].link, b);
        xfail(x, "internal: event check");
    }
    e->link = ev->link;
    if (e->fresh_ch)
        e->fresh_ch->posted[e->fresh_slot] = 0;
}

/* ---- waiting ------------------------------------------------------------------ */

/* eqwait-split: an EQ with events still to come, initiator EQ (1) first, as
 * a client that knows what it waits for (a count per EQ, no search). An event
 * on a wrong EQ is found by the check; the wait it leaves short ends at the
 * watchdog. */
static int split_eq(const xs_t *x)
{
    static const int pref[3] = {1, 0, 2};
    for (int p = 0; p < 3; p++)
        if (x->unseen_eq[pref[p]] > 0)
            return pref[p];
    return 0;
}

static const char *const wait_call[] = {"PtlEQWait", "PtlEQPoll(FOREVER)", "PtlEQPoll(10 ms)",
                                        "PtlEQPoll(3 EQs, FOREVER)", "PtlEQGet", "PtlEQWait(one of 3 EQs)"};

/* One wait: until one event is returned, the way --wait says. */
static void next_event(xs_t *x, ptl_event_t *ev, int *which)
{
    int rc = PTL_FAIL;
    double t0 = x->r->check ? pb_now_ns() : 0;
    *which = 0;
    wd_wait_edge(x);
    switch (x->r->wait) {
    case W_EQWAIT:
        rc = PtlEQWait(x->eq[0], ev);
        break;
    case W_EQPOLL:
        rc = PtlEQPoll(x->eq, 1, PTL_TIME_FOREVER, ev, which);
        break;
    case W_EQPOLL_TIMEOUT:
        while ((rc = PtlEQPoll(x->eq, 1, POLL_TIMEOUT_MS, ev, which)) == PTL_EQ_EMPTY)
            x->empty_polls++;
        break;
    case W_EQPOLL_MULTI:
        rc = PtlEQPoll(x->eq, x->neq, PTL_TIME_FOREVER, ev, which);
        break;
    case W_EQWAIT_SPLIT:
        *which = split_eq(x);
        rc = PtlEQWait(x->eq[*which], ev);
        break;
    case W_EQGET_SPIN:
        while ((rc = PtlEQGet(x->eq[0], ev)) == PTL_EQ_EMPTY)
            x->empty_polls++;
        break;
    }
    wd_wait_edge(x);
    if (x->r->check) {
        double ms = (pb_now_ns() - t0) / 1e6;
        if (ms > x->max_wait_ms) {
            x->max_wait_ms = ms;
            x->max_wait_iter = x->iter;
        }
        if (ms > 1.0)
            x->ms_waits++;
        if (ms > SLOW_WAIT_MS)
            x->slow_waits++;
    }
    if (rc == PTL_EQ_DROPPED)
        xfail(x, "%s: PTL_EQ_DROPPED (an event was lost)", wait_call[x->r->wait]);
    if (rc != PTL_OK)
        xfail(x, "%s: %s", wait_call[x->r->wait], PtlErrorStr((unsigned)rc));
    if (*which < 0 || *which >= x->neq)
        xfail(x, "%s: which_eq %d of %d EQs", wait_call[x->r->wait], *which, x->neq);
}

/* Check the events of the last wait_read; then expectations start afresh. */
static void check_events(xs_t *x)
{
    for (int i = 0; i < x->npend; i++)
        verify_event(x, &x->pend[i], match_event(x, &x->pend[i]));
    x->npend = 0;
    x->nexp = 0;
    x->arrived = 0;
    memset(x->unseen_eq, 0, sizeof x->unseen_eq);
}

/*
 * Read events until as many have come as are expected; check them later
 * (check_events). A client reads what it waits for and keeps its books
 * afterwards; so does the ping-pong: A checks after taking the time, B after
 * its answer is on its way. Every event is still checked, in arrival order,
 * against the same expectations (arrival places make "seen before" exact).
 * An extra event ends the wait early and fails the check; a missing one
 * leaves the wait to the watchdog.
 */
static void wait_read(xs_t *x, const char *what)
{
    atomic_store_explicit(&x->wd->iter, x->iter, memory_order_relaxed);
    wd_step(x, what);
    while (x->unseen > 0) {
        if (x->npend >= MAX_EXPECT)
            xfail(x, "internal: too many events read before a check");
        pending_t *p = &x->pend[x->npend];
        next_event(x, &p->ev, &p->which);
        x->npend++;
        x->events++;
        x->unseen--;
        if (x->r->trace) {
            char b[400];
            ev_str(&p->ev, b, sizeof b);
            fprintf(stderr, "[rank %u thread %d it %ld] EQ %d: %s\n", C.rank, x->t, x->iter,
                    p->which, b);
        }
        /* More events on this EQ than are expected there: one of them was
         * expected on another, which the check reports now (eqwait-split
         * would otherwise wait on the wrong EQ until the watchdog). */
        if (--x->unseen_eq[p->which] < 0) {
            check_events(x);
            xfail(x, "internal: an extra event on EQ %d passed the check", p->which);
        }
    }
}

/* Consume events until every expected one has come, and check them. */
static void wait_all(xs_t *x, const char *what)
{
    wait_read(x, what);
    check_events(x);
}

/* ---- one exchange's steps ---------------------------------------------------- */

/* Make my slot k ready for the peer's operation of iteration it. */
static void prep_recv(xs_t *x, chan_t *c, int k, long it)
{
    wd_step(x, "preparing a receive");
    if (c->op == OP_PUT) {
        if (x->r->check)
            memset(tbuf_ptr(c, k), POISON, c->msg);
    } else { /* get / getput: what the peer will fetch */
        fill_data(x, tbuf_ptr(c, k), c->msg, seed_of(SEED_EXPOSED, C.rank, x->t, it, k));
    }
    if (x->r->recv == RV_FRESH)
        post_fresh(x, c, k);
}

/* My source data (put, getput) for slot k; poison the reply area (get, getput). */
static void prep_send(xs_t *x, chan_t *c, int k, long it)
{
    wd_step(x, "preparing source data");
    if (c->op == OP_PUT)
        fill_data(x, src_ptr(c, k), c->msg,
                  seed_of(c->ch == CH_CTL ? SEED_CTL : SEED_SRC, C.rank, x->t, it, k));
    if (c->op == OP_GETPUT)
        fill_data(x, src_ptr(c, k), c->msg, seed_of(SEED_PUTV, C.rank, x->t, it, k));
    if (c->op != OP_PUT && x->r->check)
        memset(lbuf_ptr(c, k), POISON, c->msg);
}

static void initiate(xs_t *x, chan_t *c, int k, ptl_hdr_data_t hdr)
{
    const run_t *r = x->r;
    ptl_match_bits_t mb = c->mb | (ptl_match_bits_t)k;
    ptl_ack_req_t ack = r->ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ;
    switch (c->op) {
    case OP_PUT:
        wd_step(x, c->region ? "PtlPutRegion" : "PtlPut");
        if (c->region)
            XCK(x, PtlPutRegion(c->smd[0], loff(c, k), c->msg, ack, x->peer, c->pt, 0, mb,
                                roff(c, k), hdr));
        else
            XCK(x, PtlPut(c->smd[k], ack, x->peer, c->pt, 0, mb, roff(c, k), hdr));
        break;
    case OP_GET:
        wd_step(x, c->region ? "PtlGetRegion" : "PtlGet");
        if (c->region)
            XCK(x, PtlGetRegion(c->lmd[0], loff(c, k), c->msg, x->peer, c->pt, 0, mb, roff(c, k)));
        else
            XCK(x, PtlGet(c->lmd[k], x->peer, c->pt, 0, mb, roff(c, k)));
        break;
    default:
        wd_step(x, c->region ? "PtlGetPutRegion" : "PtlGetPut");
        if (c->region)
            XCK(x, PtlGetPutRegion(c->lmd[0], loff(c, k), c->smd[0], loff(c, k), c->msg, x->peer,
                                   c->pt, 0, mb, roff(c, k), hdr));
        else
            XCK(x, PtlGetPut(c->lmd[k], c->smd[k], x->peer, c->pt, 0, mb, roff(c, k), hdr));
        break;
    }
}

/* After my operation on slot k (iteration it) completed: a get/getput reply
 * holds what the peer exposed. */
static void check_initiator(xs_t *x, chan_t *c, int k, long it)
{
    if (c->op == OP_PUT)
        return;
    wd_step(x, "checking reply data");
    unsigned peer = C.rank ^ 1u;
    check_data(x, lbuf_ptr(c, k), c->msg, seed_of(SEED_EXPOSED, peer, x->t, it, k),
               c->op == OP_GET ? "get reply" : "getput reply (the target's old data)", k);
    check_guards(x, lbuf_ptr(c, k), c->msg, "reply", k);
}

/* After the peer's operation on my slot k: a put or a swap left its data here. */
static void check_target(xs_t *x, chan_t *c, int k, long it)
{
    unsigned peer = C.rank ^ 1u;
    wd_step(x, "checking received data");
    if (c->op == OP_PUT)
        check_data(x, tbuf_ptr(c, k), c->msg,
                   seed_of(c->ch == CH_CTL ? SEED_CTL : SEED_SRC, peer, x->t, it, k),
                   c->ch == CH_CTL ? "stream answer" : "put data", k);
    else if (c->op == OP_GETPUT)
        check_data(x, tbuf_ptr(c, k), c->msg, seed_of(SEED_PUTV, peer, x->t, it, k),
                   "getput: data swapped in", k);
    check_guards(x, tbuf_ptr(c, k), c->msg, "target", k);
}

/* --think: A pauses before it starts an exchange (outside the timing), B right
 * after its own operation (while the peer works): waiters and NIC threads go
 * to sleep and must be woken. */
static void think(xs_t *x)
{
    long us = x->r->think_us;
    if (us <= 0)
        return;
    wd_step(x, "thinking (--think)");
    if (x->r->think_mode == 0) {
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    } else {
        double end = pb_now_ns() + (double)us * 1e3;
        while (pb_now_ns() < end)
            ;
    }
    wd_step(x, "thought");
}

static void sample(xs_t *x, long i, double t0, double t1, double div)
{
    if (x->a && i >= x->r->warmup && x->nlat < x->r->iters)
        x->lat[x->nlat++] = (t1 - t0) / 1000.0 / div;
}

/* ---- shapes ------------------------------------------------------------------ */

/*
 * B registers the peer's next operation before it waits for its own to
 * complete: the peer may start it as soon as it has seen B's operation, so
 * its events can come before B's SEND_END / ACK / REPLY_END are read when they
 * go to other EQs (one wait covers both; B checks its reply data after it).
 * On one EQ they come after them (causal order, expect_target's `follow`).
 */
static void run_pingpong(xs_t *x)
{
    chan_t *c = &x->data;
    unsigned me = C.rank, peer = C.rank ^ 1u;
    long total = x->r->warmup + x->r->iters;
    if (!x->a)
        expect_target(x, c, 0, hdr_of(CH_DATA, peer, x->t, 0, 0), 0);
    for (long i = 0; i < total; i++) {
        int k = (int)(i & 1), k1 = (int)((i + 1) & 1);
        x->iter = i;
        int g = new_grp(x); /* my operation of this turn; the peer's next follows it */
        if (x->a) {
            prep_recv(x, c, k, i);
            expect_target(x, c, k, hdr_of(CH_DATA, peer, x->t, i, k), g);
            prep_send(x, c, k, i);
            expect_initiator(x, c, k, hdr_of(CH_DATA, me, x->t, i, k), g);
            think(x);
            double t0 = pb_now_ns();
            initiate(x, c, k, hdr_of(CH_DATA, me, x->t, i, k));
            wait_read(x, "A: own operation + the peer's answer");
            double t1 = pb_now_ns();
            check_events(x);
            check_initiator(x, c, k, i);
            check_target(x, c, k, i);
            sample(x, i, t0, t1, 2.0);
        } else {
            /* Between the peer's operation and B's answer only what must
             * come first (a fresh receive for the peer's next operation, the
             * source data): the checks of the events just read and of the
             * data, and the expected events' records, wait until the answer
             * is on its way, as a client's bookkeeping would (B's own events
             * are read in its next wait, and slot k is written again only two
             * turns later). Before, the data checks and records were ~300
             * instructions on the path of every half round trip that the
             * MPI benchmark beside it does not have (fifty-seventh session),
             * the event checks ~120 per event (fifty-eighth). */
            wait_read(x, "B: the peer's operation (+ completion of B's previous one)");
            if (i + 1 < total)
                prep_recv(x, c, k1, i + 1);
            prep_send(x, c, k, i);
            initiate(x, c, k, hdr_of(CH_DATA, me, x->t, i, k));
            check_events(x);
            expect_initiator(x, c, k, hdr_of(CH_DATA, me, x->t, i, k), g);
            if (i > 0)
                check_initiator(x, c, k1, i - 1);
            check_target(x, c, k, i);
            if (i + 1 < total)
                expect_target(x, c, k1, hdr_of(CH_DATA, peer, x->t, i + 1, k1), g);
            think(x);
        }
    }
    if (!x->a) {
        x->iter = total;
        wait_all(x, "B: completion of its last operation");
        check_initiator(x, c, (int)((total - 1) & 1), total - 1);
    }
}

static void run_stream(xs_t *x)
{
    chan_t *d = &x->data, *c = &x->ctl;
    unsigned me = C.rank, peer = C.rank ^ 1u;
    int W = x->r->window;
    long total = x->r->warmup + x->r->iters;
    if (!x->a)
        for (int w = 0; w < W; w++)
            expect_target(x, d, w, hdr_of(CH_DATA, peer, x->t, 0, w), 0);
    for (long j = 0; j < total; j++) {
        x->iter = j;
        int g = new_grp(x); /* A: the window; B: the answer; the peer's next follows it */
        if (x->a) {
            prep_recv(x, c, 0, j);
            expect_target(x, c, 0, hdr_of(CH_CTL, peer, x->t, j, 0), g);
            for (int w = 0; w < W; w++) {
                prep_send(x, d, w, j);
                expect_initiator(x, d, w, hdr_of(CH_DATA, me, x->t, j, w), g);
            }
            think(x);
            double t0 = pb_now_ns();
            for (int w = 0; w < W; w++)
                initiate(x, d, w, hdr_of(CH_DATA, me, x->t, j, w));
            wait_all(x, "A: a window of operations + the answer");
            double t1 = pb_now_ns();
            for (int w = 0; w < W; w++)
                check_initiator(x, d, w, j);
            check_target(x, c, 0, j);
            sample(x, j, t0, t1, (double)W);
        } else {
            wait_all(x, "B: the peer's window (+ completion of B's previous answer)");
            for (int w = 0; w < W; w++)
                check_target(x, d, w, j);
            if (j + 1 < total)
                for (int w = 0; w < W; w++)
                    prep_recv(x, d, w, j + 1);
            prep_send(x, c, 0, j);
            expect_initiator(x, c, 0, hdr_of(CH_CTL, me, x->t, j, 0), g);
            initiate(x, c, 0, hdr_of(CH_CTL, me, x->t, j, 0));
            if (j + 1 < total)
                for (int w = 0; w < W; w++)
                    expect_target(x, d, w, hdr_of(CH_DATA, peer, x->t, j + 1, w), g);
            think(x);
        }
    }
    if (!x->a) {
        x->iter = total;
        wait_all(x, "B: completion of its last answer");
    }
}

/* B's receives for the first iteration, posted before the start barrier. */
static void prime(xs_t *x)
{
    if (x->a)
        return;
    int n = x->r->shape == SH_STREAM ? x->r->window : 1;
    for (int k = 0; k < n; k++)
        prep_recv(x, &x->data, k, 0);
}

/* ---- teardown ---------------------------------------------------------------- */

static void chan_free(xs_t *x, chan_t *c)
{
    if (!c->nslots)
        return;
    int n = c->region ? 1 : c->nslots;
    if (c->sbuf)
        for (int k = 0; k < n; k++)
            XCK(x, PtlMDUnlink(c->smd[k]));
    if (c->lbuf)
        for (int k = 0; k < n; k++)
            XCK(x, PtlMDUnlink(c->lmd[k]));
    if (c->tbuf) {
        if (x->r->recv == RV_PERSISTENT)
            XCK(x, PtlMEUnlink(c->tme[0]));
        for (int k = 0; k < c->nslots; k++)
            if (c->posted[k])
                xfail(x, "fresh receive of slot %d still posted at the end (never used)", k);
    }
    xfree(c->sbuf, c->sbuf_len);
    xfree(c->lbuf, c->lbuf_len);
    xfree(c->tbuf, c->tbuf_len);
}

static void xs_free(xs_t *x)
{
    x->iter = -1;
    for (int i = 0; i < x->neq; i++) {
        ptl_event_t ev;
        int rc = PtlEQGet(x->eq[i], &ev);
        if (rc != PTL_EQ_EMPTY) {
            char b[400];
            ev_str(&ev, b, sizeof b);
            xfail(x, "EQ %d not empty at the end (%s): %s", i, PtlErrorStr((unsigned)rc), b);
        }
    }
    chan_free(x, &x->data);
    chan_free(x, &x->ctl);
    for (int i = 0; i < x->neq; i++)
        XCK(x, PtlEQFree(x->eq[i]));
}

/* ---- threads ----------------------------------------------------------------- */

static void sync_start(void)
{
    if (R.threads > 1) {
        pthread_barrier_wait(&g_ready);
        pthread_barrier_wait(&g_go); /* the main thread ran pb_barrier in between */
    } else {
        pb_barrier(&C);
    }
}

static void *thread_main(void *arg)
{
    xs_t *x = arg;
    atomic_store(&x->wd->active, 1);
    wd_step(x, "setup");
    xs_setup(x);
    prime(x);
    wd_step(x, "start barrier");
    atomic_store(&x->wd->active, 0); /* the barrier is pb's (its own watchdog) */
    sync_start();
    atomic_store(&x->wd->active, 1);
    if (x->r->shape == SH_STREAM)
        run_stream(x);
    else
        run_pingpong(x);
    atomic_store(&x->wd->active, 0);
    return NULL;
}

/* ---- statistics and output ---------------------------------------------------- */

#define NSTAT 11 /* per thread: n mean p50 p99 max over100 maxwait_ms slow_waits empty
                   * maxwait_iter ms_waits */

static void thread_stats(xs_t *x, double *out)
{
    pb_stats s = {0};
    long over = 0;
    for (long i = 0; i < x->nlat; i++)
        over += x->lat[i] > 100.0;
    if (x->nlat)
        pb_stats_of(x->lat, x->nlat, &s);
    double v[NSTAT] = {(double)x->nlat, s.mean, s.p50, s.p99, s.max, (double)over,
                       x->max_wait_ms,  (double)x->slow_waits, (double)x->empty_polls,
                       (double)x->max_wait_iter, (double)x->ms_waits};
    memcpy(out, v, sizeof v);
}

static void build_desc(void)
{
    int n = 0;
    n += snprintf(g_desc + n, sizeof g_desc - (size_t)n, "%s", dims[D_SHAPE].vals[R.shape]);
    for (int d = 1; d < NDIMS; d++) {
        const char *v = dims[d].vals[dim_get(&R, d)];
        if (d == D_THINK)
            continue; /* below, with --think */
        if ((R.op == OP_GET && (d == D_ACK || d == D_SEND_END)) || (R.op == OP_GETPUT && d == D_ACK))
            v = "n/a";
        n += snprintf(g_desc + n, sizeof g_desc - (size_t)n, " %s=%s", dims[d].opt, v);
    }
    n += snprintf(g_desc + n, sizeof g_desc - (size_t)n, " size=%zu", R.size);
    if (R.shape == SH_STREAM)
        n += snprintf(g_desc + n, sizeof g_desc - (size_t)n, " window=%d", R.window);
    if (R.think_us > 0)
        n += snprintf(g_desc + n, sizeof g_desc - (size_t)n, " think=%ldus(%s)", R.think_us,
                      R.think_mode ? "spin" : "sleep");
    snprintf(g_desc + n, sizeof g_desc - (size_t)n, " threads=%d ranks=%u mode=%s", R.threads,
             C.nranks, C.mode);
    n = snprintf(g_name, sizeof g_name, "%s-%s-%s-s%s-e%s-a%s-%s-r%s-t%d", dims[D_SHAPE].vals[R.shape],
                 dims[D_OP].vals[R.op], dims[D_WAIT].vals[R.wait], R.start ? "1" : "0",
                 R.send_end ? "1" : "0", R.ack ? "1" : "0", dims[D_RECV].vals[R.recv],
                 R.region ? "1" : "0", R.threads);
    if (R.think_us > 0)
        snprintf(g_name + n, sizeof g_name - (size_t)n, "-k%ld%s", R.think_us,
                 R.think_mode ? "spin" : "sleep");
}

static const char CSV_HDR[] =
    "bench,impl,pattern,shape,op,wait,start,send_end,ack,recv,region,threads,ranks,size,window,"
    "iters,mean_us,p50_us,p99_us,max_us,over100us";

static void report(const double *all)
{
    /* rank 0's own threads, merged: the run's line */
    long n = 0;
    for (int t = 0; t < R.threads; t++)
        n += g_xs[t]->nlat;
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    long m = 0, over = 0;
    for (int t = 0; t < R.threads; t++)
        for (long i = 0; i < g_xs[t]->nlat; i++) {
            v[m] = g_xs[t]->lat[i];
            over += v[m++] > 100.0;
        }
    pb_stats s = {0};
    if (n)
        pb_stats_of(v, n, &s);
    free(v);
    char line[512];
    snprintf(line, sizeof line, "ptl_patterns,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%u,%zu,%d,%ld,%.3f,%.3f,%.3f,%.3f,%ld",
             C.impl, g_name, dims[D_SHAPE].vals[R.shape], dims[D_OP].vals[R.op], dims[D_WAIT].vals[R.wait],
             R.start ? "on" : "off", R.send_end ? "on" : "off", R.ack ? "on" : "off",
             dims[D_RECV].vals[R.recv], R.region ? "on" : "off", R.threads, C.nranks, R.size,
             R.shape == SH_STREAM ? R.window : 1, n, s.mean, s.p50, s.p99, s.max, over);
    printf("# %s\n# us per %s\n# %s\n%s\n", g_desc,
           R.shape == SH_STREAM ? "message (window time / W)"
                                : "turn (put: half round trip; get/getput: one whole operation)",
           CSV_HDR, line);
    for (unsigned r = 0; r < C.nranks; r += 2)
        for (int t = 0; t < R.threads; t++) {
            const double *q = all + ((size_t)r * MAX_THREADS + (size_t)t) * NSTAT;
            if (C.nranks > 2 || R.threads > 1)
                printf("# pair %u thread %d: n %.0f mean %.3f p50 %.3f p99 %.3f max %.3f over100 %.0f\n",
                       r / 2, t, q[0], q[1], q[2], q[3], q[4], q[5]);
        }
    FILE *f = pb_csv_open(R.csv, CSV_HDR);
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
}

/* ---- options ----------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: ptlrun -n 2|4|... [--host-matching] [--cpus 0,1] -- ptl_patterns [options]\n"
               "One client pattern per run: a test (--check) or a benchmark (default).\n");
    for (int d = 0; d < NDIMS; d++) {
        fprintf(f, "  --%-9s ", dims[d].opt);
        for (int v = 0; v < NVALS && dims[d].vals[v]; v++)
            fprintf(f, "%s%s", v ? "|" : "", dims[d].vals[v]);
        fprintf(f, "\n              %s (default %s)\n", dims[d].help,
                dims[d].vals[dim_get(&R, d)]);
    }
    fprintf(f,
            "  --size N    message size, e.g. 0, 8, 4032, 4033, 64K, 1M (default 8; getput <= 64)\n"
            "  --window W  stream: operations per answer (default 8, at most %d)\n"
            "  --threads N application threads per rank, each its own exchange (1|2, at most %d)\n"
            "  --check     short run (-n 200), every byte verified, OK line on rank 0\n"
            "  -n N        iterations (windows for stream); default 200 with --check, else 20000\n"
            "  --warmup N  untimed first iterations (default: none with --check, else n/10 <= 1000)\n"
            "  --watchdog S  fail (exit 3) when one wait lasts longer than S s (default 5; 0 off)\n"
            "  --csv FILE  append the benchmark line to FILE (header if new)\n"
            "  --think US  A pauses US before each exchange (untimed), B after its own\n"
            "              operation: waiters and NIC threads sleep and must be woken\n"
            "  --cpu-max PCT  fail (exit 1) when this rank's process used CPU for more than\n"
            "              PCT%% of the exchanges' wall time (a thread that should sleep spins)\n"
            "  --trace     print every event (stderr)\n"
            "Ranks: even; pairs (0,1), (2,3), ... run independently, rank 0 reports.\n"
            "Exit: 0 ok, 1 check failed, 2 usage, 3 watchdog (hang).\n",
            MAX_WINDOW, MAX_THREADS);
}

static void parse(int argc, char **argv)
{
    /* defaults: an ordinary client */
    R.wait = W_EQWAIT;
    R.start = 1;
    R.send_end = 1;
    R.ack = 0;
    R.op = OP_PUT;
    R.recv = RV_PERSISTENT;
    R.region = 0;
    R.shape = SH_PINGPONG;
    R.size = 8;
    R.threads = 1;
    R.window = 8;
    R.iters = -1;
    R.warmup = -1;
    R.watchdog_s = 5;
    enum { O_SIZE = 1000, O_WINDOW, O_THREADS, O_CHECK, O_WARM, O_WD, O_CSV, O_TRACE, O_THINK,
           O_CPU, O_DIM };
    struct option lo[NDIMS + 13];
    int nlo = 0;
    for (int d = 0; d < NDIMS; d++)
        lo[nlo++] = (struct option){dims[d].opt, 1, 0, O_DIM + d};
    lo[nlo++] = (struct option){"size", 1, 0, O_SIZE};
    lo[nlo++] = (struct option){"window", 1, 0, O_WINDOW};
    lo[nlo++] = (struct option){"threads", 1, 0, O_THREADS};
    lo[nlo++] = (struct option){"check", 0, 0, O_CHECK};
    lo[nlo++] = (struct option){"warmup", 1, 0, O_WARM};
    lo[nlo++] = (struct option){"watchdog", 1, 0, O_WD};
    lo[nlo++] = (struct option){"csv", 1, 0, O_CSV};
    lo[nlo++] = (struct option){"trace", 0, 0, O_TRACE};
    lo[nlo++] = (struct option){"think", 1, 0, O_THINK};
    lo[nlo++] = (struct option){"cpu-max", 1, 0, O_CPU};
    lo[nlo++] = (struct option){"help", 0, 0, 'h'};
    lo[nlo] = (struct option){0, 0, 0, 0};
    int c;
    while ((c = getopt_long(argc, argv, "n:h", lo, NULL)) != -1) {
        if (c >= O_DIM && c < O_DIM + NDIMS) {
            int d = c - O_DIM, v;
            for (v = 0; v < NVALS && dims[d].vals[v]; v++)
                if (!strcmp(optarg, dims[d].vals[v]))
                    break;
            if (v == NVALS || !dims[d].vals[v]) {
                fprintf(stderr, "ptl_patterns: bad --%s '%s'\n", dims[d].opt, optarg);
                exit(2);
            }
            *dim_field(&R, d) = v;
            continue;
        }
        switch (c) {
        case 'n': R.iters = pb_atol_or_die("-n", optarg); break;
        case O_SIZE:
            if (pb_parse_size(optarg, &R.size)) {
                fprintf(stderr, "ptl_patterns: bad --size '%s'\n", optarg);
                exit(2);
            }
            break;
        case O_WINDOW: R.window = (int)pb_atol_or_die("--window", optarg); break;
        case O_THREADS: R.threads = (int)pb_atol_or_die("--threads", optarg); break;
        case O_CHECK: R.check = 1; break;
        case O_WARM: R.warmup = pb_atol_or_die("--warmup", optarg); break;
        case O_WD: R.watchdog_s = pb_atof_or_die("--watchdog", optarg); break;
        case O_CSV: R.csv = optarg; break;
        case O_TRACE: R.trace = 1; break;
        case O_THINK: R.think_us = pb_atol_or_die("--think", optarg); break;
        case O_CPU: R.cpu_max = pb_atof_or_die("--cpu-max", optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    const char *bad = NULL;
    if (optind < argc)
        bad = "unexpected argument";
    else if (R.window < 1 || R.window > MAX_WINDOW)
        bad = "--window out of range";
    else if (R.threads < 1 || R.threads > MAX_THREADS)
        bad = "--threads out of range";
    else if (R.op == OP_GETPUT && R.size > GETPUT_MAX)
        bad = "getput: --size at most 64 (max_getput_md)";
    else if (R.size > ((size_t)1 << 30))
        bad = "--size at most 1G";
    if (bad) {
        fprintf(stderr, "ptl_patterns: %s\n", bad);
        exit(2);
    }
    if (R.iters < 0)
        R.iters = R.check ? 200 : 20000;
    if (R.iters < 1)
        R.iters = 1;
    if (R.warmup < 0)
        R.warmup = R.check ? 0 : (R.iters / 10 < 1000 ? R.iters / 10 : 1000);
    if (R.shape == SH_PINGPONG)
        R.window = 1;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    pb_init(&C);
    if (C.nranks < 2 || C.nranks % 2) {
        if (C.rank == 0)
            fprintf(stderr, "ptl_patterns: needs an even number of ranks (pairs), got %u\n",
                    C.nranks);
        pb_fini(&C);
        return 2;
    }
    build_desc();
    pb_watchdog_start(&C, NULL, 0); /* the control plane's waits (barriers, gather) */
    xs_t *xs = calloc((size_t)R.threads, sizeof *xs);
    if (!xs)
        pb_die("out of memory");
    for (int t = 0; t < R.threads; t++) {
        xs[t].r = &R;
        xs[t].t = t;
        xs[t].wd = &g_wd[t];
        g_wd[t].x = &xs[t];
        g_xs[t] = &xs[t];
    }
    watchdog_start();
    double cpu0 = cpu_seconds(), wall0 = now_s();

    if (R.threads == 1) {
        thread_main(&xs[0]); /* the ordinary client: everything on the main thread */
    } else {
        pthread_barrier_init(&g_ready, NULL, (unsigned)R.threads + 1);
        pthread_barrier_init(&g_go, NULL, (unsigned)R.threads + 1);
        for (int t = 0; t < R.threads; t++)
            if (pthread_create(&xs[t].th, NULL, thread_main, &xs[t]) != 0)
                pb_die("pthread_create failed");
        pthread_barrier_wait(&g_ready);
        pb_barrier(&C);
        pthread_barrier_wait(&g_go);
        for (int t = 0; t < R.threads; t++)
            pthread_join(xs[t].th, NULL);
        pthread_barrier_destroy(&g_ready);
        pthread_barrier_destroy(&g_go);
    }

    pb_barrier(&C); /* every pair is done: nothing is in flight any more */
    double cpu_pct = 100.0 * (cpu_seconds() - cpu0) / (now_s() - wall0);
    for (int t = 0; t < R.threads; t++)
        xs_free(&xs[t]);

    double mine[MAX_THREADS * NSTAT] = {0};
    for (int t = 0; t < R.threads; t++)
        thread_stats(&xs[t], mine + t * NSTAT);
    double *all = C.rank == 0 ? calloc((size_t)C.nranks * MAX_THREADS * NSTAT, sizeof(double)) : NULL;
    pb_gather(&C, mine, MAX_THREADS * NSTAT, all);
    if (C.rank == 0) {
        double maxw = -1, slow = 0, empty = 0, msw = 0, wit = 0;
        unsigned wr = 0;
        int wt = 0;
        for (unsigned r = 0; r < C.nranks; r++)
            for (int t = 0; t < R.threads; t++) {
                const double *q = all + ((size_t)r * MAX_THREADS + (size_t)t) * NSTAT;
                if (q[6] > maxw) {
                    maxw = q[6];
                    wr = r;
                    wt = t;
                    wit = q[9];
                }
                slow += q[7];
                empty += q[8];
                msw += q[10];
            }
        if (!R.check)
            report(all);
        else
            printf("ptl_patterns: waits: longest %.1f ms (rank %u thread %d iteration %.0f), "
                   "%.0f over 1 ms, %.0f over %.0f ms, %.0f empty polls/gets\n",
                   maxw, wr, wt, wit, msw, slow, SLOW_WAIT_MS, empty);
        free(all);
    }
    for (int t = 0; t < R.threads; t++)
        free(xs[t].lat);
    long drops = pb_fini(&C);
    free(xs);
    if (drops) {
        fprintf(stderr, "ptl_patterns FAILED: %ld message(s) dropped\n  pattern: %s\n", drops, g_desc);
        return 1;
    }
    if (R.cpu_max > 0) {
        printf("ptl_patterns: rank %u used CPU for %.0f%% of the exchanges' wall time (at most %.0f%%)\n",
               C.rank, cpu_pct, R.cpu_max);
        if (cpu_pct > R.cpu_max) {
            fprintf(stderr, "ptl_patterns FAILED: rank %u used CPU for %.0f%% of the wall time, "
                            "more than --cpu-max %.0f (a thread that should sleep spins)\n  pattern: %s\n",
                    C.rank, cpu_pct, R.cpu_max, g_desc);
            return 1;
        }
    }
    if (C.rank == 0 && R.check)
        printf("ptl_patterns: OK %s\n", g_desc);
    return 0;
}
