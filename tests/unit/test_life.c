/*
 * test_life - objects freed while other threads are inside calls that use
 * them (issue 12, items 1 and 2).
 *
 *   eqfree   PtlEQFree while threads wait on the EQ in PtlEQWait, PtlEQPoll
 *            with a timeout and with PTL_TIME_FOREVER, alone and several at
 *            once, over one EQ and over two: every waiter returns
 *            PTL_EQ_INVALID (before: SIGSEGV, a hang, a heap use after free).
 *            An optional second argument 0-3 runs one way of waiting only.
 *   eqreuse  after the free, new EQs are made until one reuses the freed
 *            EQ's table slot, and a put delivers an event into it: threads
 *            still waiting on the old handle never return that event (only
 *            PTL_EQ_INVALID); the new EQ's owner gets it.
 *   nifini   PtlNIFini while threads are in PtlEQWait, PtlEQPoll, PtlPut
 *            loops, PtlMEAttach/PtlMDBind and PtlEQAlloc/PtlEQFree loops:
 *            each call returns PTL_OK (or PTL_EQ_DROPPED) before, and an
 *            *_INVALID code after; nothing crashes or hangs. 12 rounds.
 *   fini     the same with PtlFini (after it, PTL_NO_INIT is also right).
 *   stuck    white-box: a thread stays inside a call (engine/life.h) across
 *            PtlNIFini: PtlNIFini returns after PTL_PEER_TIMEOUT_MS (set
 *            short by the test's environment) and leaves the NI allocated; a
 *            waiter on the NI still returns; a new NI works afterwards.
 *   reinit   PtlNIInit and PtlNIFini (and PtlFini) 8 rounds, each NI used
 *            for a put to itself: the resident set after the last round's
 *            PtlNIInit is at most 16 MB above the first's. The per-NI tables
 *            (~47 MB at the default PTL_MAX_OBJECTS, util/pages.h) are zero
 *            pages until used; from calloc, the second NI's came from the
 *            heap (glibc's mmap threshold rises when a mapped chunk is
 *            freed) and were written in full: 30+ MB more, and ~0.3 s of
 *            memset per PtlNIInit.
 *
 *   membar   the entry's fence (engine/life.h, util/membar.h): after the
 *            first call the process uses membarrier exactly when
 *            PTL_ASYM_FENCE is not 0 and the kernel offers the command (not
 *            under ThreadSanitizer); the reclaimer's side works in the
 *            parent and in a child of fork() (an EQ freed and an NI
 *            finalised in each, with a put and its event before).
 *            The other steps run with PTL_ASYM_FENCE 1 and 0 (CMakeLists).
 *
 *   solo     one API thread (engine/life.h, SO): with one thread the process
 *            takes the solo path exactly when PTL_SOLO is not 0 and the
 *            entry uses membarrier; puts to itself and their events work on
 *            it. White-box: the main thread opens a solo section, a second
 *            thread's first call must not return before the section ends
 *            (the revocation waits for it, at least the 150 ms it stays
 *            open), nor a third thread's that comes once the second has
 *            ended the path (SO-D), and the process is off the solo path for
 *            good; then both threads put and wait at once. solo_fini: the
 *            second thread's only call is PtlNIFini (no handle resolved): it
 *            ends SO too.
 *   solo_race 24 child processes, each putting to itself and waiting in a
 *            loop while a second thread starts at a random moment (0-3 ms in)
 *            and does the same: the revocation lands wherever the first
 *            thread is (a token held in a wait, an event's read); every event
 *            is right, nothing hangs, and the path is off afterwards.
 *
 * A watchdog ends the process (exit 3, naming the step) if a step hangs.
 * The mode comes from the environment (PTL_OFFLOAD).
 */
#include "api_int.h"
#include "handle.h"
#include "life.h"
#include "membar.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "ut_check.h"

static void fail(const char *fmt, const char *a, int b)
{
    printf("FAIL: ");
    printf(fmt, a, b);
    printf("\n");
    fflush(stdout);
    exit(1);
}

/* ---- watchdog --------------------------------------------------------------- */

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static char wd_step[192];
static unsigned wd_gen;
static int wd_secs = 20;
static bool wd_ready; /* the watchdog waits in its loop: under wd_mu */
static _Atomic pid_t wd_child; /* in_child's child while it runs, else 0 */

static void step(const char *s)
{
    pthread_mutex_lock(&wd_mu);
    snprintf(wd_step, sizeof wd_step, "%s", s);
    wd_gen++;
    pthread_cond_broadcast(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
}

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd_mu);
    wd_ready = true;
    pthread_cond_broadcast(&wd_cv);
    for (;;) {
        unsigned g = wd_gen;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wd_secs;
        while (g == wd_gen)
            if (pthread_cond_timedwait(&wd_cv, &wd_mu, &ts) != 0)
                break;
        if (g == wd_gen) {
            printf("FAIL: watchdog: step \"%s\" hung for %d s\n", wd_step, wd_secs);
            fflush(stdout);
            pid_t c = LD_ACQUIRE(&wd_child);
            if (c > 0) /* a hung child must not outlive us (and spin on) */
                kill(c, SIGKILL);
            _exit(3);
        }
    }
    return NULL;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- the NI --------------------------------------------------------------- */

static ptl_handle_ni_t ni;
static ptl_process_id_t self;

static void ni_up(void)
{
    int n;
    CHECK(PtlInit(&n));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &self));
}

/* A portal whose ME+MD deliver PUT_END events into eq; returns the source MD
 * of 8-byte puts to ourselves. */
static char dst[8], src[8] = "payload";
static ptl_handle_md_t put_path(ptl_pt_index_t pt, ptl_handle_eq_t eq)
{
    ptl_handle_me_t me;
    ptl_handle_md_t t, s;
    CHECK(PtlMEAttach(ni, pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &me));
    ptl_md_t tmd = {.start = dst, .length = sizeof dst, .threshold = PTL_MD_THRESH_INF,
                    .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                    .eq_handle = eq};
    CHECK(PtlMDAttach(me, tmd, PTL_RETAIN, &t));
    ptl_md_t smd = {.start = src, .length = sizeof src, .threshold = PTL_MD_THRESH_INF,
                    .eq_handle = PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, smd, PTL_RETAIN, &s));
    return s;
}

/* ---- eqfree / eqreuse: waiters on an EQ that is freed ------------------------ */

enum how { W_WAIT, W_POLL_TIMEOUT, W_POLL_FOREVER, W_POLL_TWO, W_HOW_NR };
static const char *how_name[] = {"PtlEQWait", "PtlEQPoll(5 s)", "PtlEQPoll(forever)",
                                 "PtlEQPoll(2 EQs)"};

struct waiter {
    pthread_t t;
    enum how how;
    ptl_handle_eq_t eq, other;
    bool loop;               /* eqreuse: wait again on the stale handle until told to stop */
    int rc;                  /* the first return that is not PTL_EQ_INVALID, or it */
    ptl_event_t ev;
    long calls;
};

static atomic_int waiters_in, stop_waiters;

static int wait_once(struct waiter *w)
{
    int which;
    ptl_handle_eq_t two[2] = {w->other, w->eq};
    switch (w->how) {
    case W_WAIT: return PtlEQWait(w->eq, &w->ev);
    case W_POLL_TIMEOUT: return PtlEQPoll(&w->eq, 1, 5000, &w->ev, &which);
    case W_POLL_FOREVER: return PtlEQPoll(&w->eq, 1, PTL_TIME_FOREVER, &w->ev, &which);
    default: return PtlEQPoll(two, 2, PTL_TIME_FOREVER, &w->ev, &which);
    }
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    atomic_fetch_add(&waiters_in, 1);
    do {
        w->rc = wait_once(w);
        w->calls++;
        if (w->rc != PTL_EQ_INVALID)
            break;
    } while (w->loop && !atomic_load(&stop_waiters));
    return NULL;
}

static void start_waiters(struct waiter *ws, int n)
{
    atomic_store(&waiters_in, 0);
    for (int i = 0; i < n; i++)
        pthread_create(&ws[i].t, NULL, waiter_main, &ws[i]);
    while (atomic_load(&waiters_in) < n)
        nap_us(50);
}

static void check_waiters(struct waiter *ws, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        pthread_join(ws[i].t, NULL);
        if (ws[i].rc != PTL_EQ_INVALID) {
            printf("FAIL: %s: waiter %d (%s) returned %s after PtlEQFree (event type %d)\n",
                   what, i, how_name[ws[i].how], PtlErrorStr(ws[i].rc), (int)ws[i].ev.type);
            exit(1);
        }
    }
}

static void test_eqfree(int only)
{
    ni_up();
    ptl_handle_eq_t quiet;
    CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &quiet));
    /* 0: the waiters spin; 300 us: around the spin limit; 30 ms: asleep. */
    static const long delays[] = {0, 300, 30000};
    char what[160];
    for (int how = 0; how < W_HOW_NR; how++) {
        if (only >= 0 && how != only)
            continue;
        for (int d = 0; d < 3; d++) {
            for (int nw = 1; nw <= 4; nw += 3) {
                snprintf(what, sizeof what, "%s x%d, freed after %ld us", how_name[how], nw,
                         delays[d]);
                step(what);
                ptl_handle_eq_t eq;
                CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
                struct waiter ws[4];
                memset(ws, 0, sizeof ws);
                for (int i = 0; i < nw; i++) {
                    /* several waiters mix the ways of waiting */
                    ws[i].how = nw == 1 ? (enum how)how : (enum how)((how + i) % W_HOW_NR);
                    ws[i].eq = eq;
                    ws[i].other = quiet;
                }
                start_waiters(ws, nw);
                nap_us(delays[d]);
                CHECK(PtlEQFree(eq));
                check_waiters(ws, nw, what);
            }
        }
    }
    step("PtlNIFini");
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("life eqfree: OK\n");
}

static void test_eqreuse(void)
{
    ni_up();
    ptl_handle_eq_t quiet;
    CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &quiet));
    step("eqreuse: waiters on the old EQ");
    ptl_handle_eq_t old;
    CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &old));
    struct waiter ws[W_HOW_NR];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < W_HOW_NR; i++) {
        ws[i].how = (enum how)i;
        ws[i].eq = old;
        ws[i].other = quiet;
        ws[i].loop = true;
    }
    start_waiters(ws, W_HOW_NR);
    nap_us(20000);
    CHECK(PtlEQFree(old));

    /* Free slots are reused oldest first once more than PT_H_FREE_DEPTH are
     * queued (engine/handle.h): cycle until an EQ lands in the old slot. */
    step("eqreuse: cycling EQs until the old slot is reused");
    ptl_handle_eq_t neq = PTL_EQ_NONE;
    long cycles = 0;
    for (; cycles < 4L * PT_H_FREE_DEPTH; cycles++) {
        CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &neq));
        if (pt_h_idx(neq) == pt_h_idx(old))
            break;
        CHECK(PtlEQFree(neq));
        neq = PTL_EQ_NONE;
    }
    if (neq == PTL_EQ_NONE)
        fail("%s: the old slot was not reused in %d cycles", "eqreuse", (int)cycles);
    if (neq == old)
        fail("%s: the new EQ got the freed handle back after %d cycles", "eqreuse", (int)cycles);
    printf("eqreuse: slot %u reused after %ld cycles (old %#x, new %#x)\n", pt_h_idx(old),
           cycles, old, neq);

    step("eqreuse: put into the new EQ");
    ptl_handle_md_t s = put_path(3, neq);
    CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 3, 0, 7, 0, 0xbeef));
    ptl_event_t ev;
    CHECK(PtlEQWait(neq, &ev));
    if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 0xbeef)
        fail("%s: the new EQ's owner got event type %d, not its PUT_END", "eqreuse",
             (int)ev.type);
    nap_us(20000); /* the stale waiters keep trying meanwhile */
    atomic_store(&stop_waiters, 1);
    step("eqreuse: joining the stale waiters");
    check_waiters(ws, W_HOW_NR, "eqreuse");
    for (int i = 0; i < W_HOW_NR; i++)
        if (ws[i].calls < 1)
            fail("%s: waiter %d never returned", "eqreuse", i);
    step("PtlNIFini");
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("life eqreuse: OK\n");
}

/* ---- nifini / fini: the NI goes away under calls ------------------------------ */

enum role { R_EQWAIT, R_EQPOLL, R_PUT, R_ME, R_MD, R_EQ, R_NR };
static const char *role_name[] = {"PtlEQWait", "PtlEQPoll", "PtlPut", "PtlMEAttach/Unlink",
                                  "PtlMDBind/Unlink", "PtlEQAlloc/Free"};

struct worker {
    pthread_t t;
    enum role role;
    ptl_handle_eq_t eq;
    ptl_handle_md_t md;
    bool whole_fini;  /* PtlFini: PTL_NO_INIT is also a right answer after it */
    int bad;          /* a return that is wrong before or after */
    const char *bad_call;
    long ok, after;
};

static atomic_int workers_in;

/* Before the fini: the call's success codes. After it: an *_INVALID code. */
static bool after_code(int rc, bool whole_fini)
{
    return rc == PTL_NI_INVALID || rc == PTL_EQ_INVALID || rc == PTL_MD_INVALID ||
           rc == PTL_ME_INVALID || (whole_fini && rc == PTL_NO_INIT);
}

/* One call's outcome: false once the NI has gone (stop). */
static bool note(struct worker *w, const char *call, int rc)
{
    if (rc == PTL_OK || (rc == PTL_EQ_DROPPED && w->role <= R_EQPOLL)) {
        if (w->after) { /* a call that succeeds after one saw the NI gone */
            w->bad = rc;
            w->bad_call = call;
            return false;
        }
        w->ok++;
        return true;
    }
    if (!after_code(rc, w->whole_fini)) {
        w->bad = rc;
        w->bad_call = call;
    }
    w->after++;
    return false;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    static char buf[64];
    ptl_event_t ev;
    int which;
    atomic_fetch_add(&workers_in, 1);
    for (bool go = true; go;) {
        switch (w->role) {
        case R_EQWAIT:
            go = note(w, "PtlEQWait", PtlEQWait(w->eq, &ev));
            break;
        case R_EQPOLL:
            go = note(w, "PtlEQPoll", PtlEQPoll(&w->eq, 1, PTL_TIME_FOREVER, &ev, &which));
            break;
        case R_PUT:
            go = note(w, "PtlPut", PtlPut(w->md, PTL_NO_ACK_REQ, self, 5, 0, 7, 0, 0));
            break;
        case R_ME: {
            ptl_handle_me_t me;
            go = note(w, "PtlMEAttach",
                      PtlMEAttach(ni, 6, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 1, 0,
                                  PTL_RETAIN, PTL_INS_AFTER, &me));
            if (go)
                go = note(w, "PtlMEUnlink", PtlMEUnlink(me));
            break;
        }
        case R_MD: {
            ptl_md_t md = {.start = buf, .length = sizeof buf, .threshold = PTL_MD_THRESH_INF,
                           .eq_handle = PTL_EQ_NONE};
            ptl_handle_md_t h;
            go = note(w, "PtlMDBind", PtlMDBind(ni, md, PTL_RETAIN, &h));
            if (go)
                go = note(w, "PtlMDUnlink", PtlMDUnlink(h));
            break;
        }
        default: {
            ptl_handle_eq_t e;
            go = note(w, "PtlEQAlloc", PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &e));
            if (go)
                go = note(w, "PtlEQFree", PtlEQFree(e));
            break;
        }
        }
    }
    return NULL;
}

static void test_fini(bool whole)
{
    const char *name = whole ? "fini" : "nifini";
    char what[128];
    for (int round = 0; round < 12; round++) {
        snprintf(what, sizeof what, "%s round %d: set-up", name, round);
        step(what);
        ni_up();
        ptl_handle_eq_t eq, quiet;
        CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
        CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &quiet));
        ptl_handle_md_t s = put_path(5, eq);
        struct worker ws[R_NR];
        memset(ws, 0, sizeof ws);
        atomic_store(&workers_in, 0);
        for (int i = 0; i < R_NR; i++) {
            ws[i].role = (enum role)i;
            ws[i].eq = i == R_EQPOLL ? quiet : eq;
            ws[i].md = s;
            ws[i].whole_fini = whole;
            pthread_create(&ws[i].t, NULL, worker_main, &ws[i]);
        }
        while (atomic_load(&workers_in) < R_NR)
            nap_us(50);
        /* Vary where the calls are when the NI goes: spinning or asleep. */
        nap_us(round % 3 == 0 ? 200 : round % 3 == 1 ? 5000 : 40000);
        snprintf(what, sizeof what, "%s round %d: %s", name, round,
                 whole ? "PtlFini" : "PtlNIFini");
        step(what);
        if (whole)
            PtlFini();
        else
            CHECK(PtlNIFini(ni));
        snprintf(what, sizeof what, "%s round %d: joining the callers", name, round);
        step(what);
        for (int i = 0; i < R_NR; i++) {
            pthread_join(ws[i].t, NULL);
            if (ws[i].bad) {
                printf("FAIL: %s round %d: %s returned %s (%ld calls before, %ld after)\n", name,
                       round, ws[i].bad_call, PtlErrorStr(ws[i].bad), ws[i].ok, ws[i].after);
                exit(1);
            }
            if (!ws[i].after)
                fail("%s never saw the NI go (round %d)", role_name[i], round);
        }
        if (!whole)
            PtlFini();
    }
    printf("life %s: OK\n", name);
}

/* ---- stuck: a thread that does not leave ------------------------------------- */

static atomic_int stuck_in, stuck_go;
struct pt_nic *life_left_ni; /* keeps the left NI reachable (LeakSanitizer) */

static void *stuck_main(void *arg)
{
    (void)arg;
    struct pt_life *rec = pt_life_enter(); /* what every call does first */
    atomic_store(&stuck_in, 1);
    while (!atomic_load(&stuck_go))
        nap_us(1000);
    if (rec)
        pt_life_leave(rec);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_stuck(void)
{
    ni_up();
    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
    life_left_ni = pt_api_ni(ni);
    struct waiter w = {.how = W_WAIT, .eq = eq};
    start_waiters(&w, 1);
    pthread_t st;
    pthread_create(&st, NULL, stuck_main, NULL);
    while (!atomic_load(&stuck_in))
        nap_us(100);
    nap_us(20000);
    step("stuck: PtlNIFini with a thread inside");
    double t0 = now_s();
    CHECK(PtlNIFini(ni));
    double took = now_s() - t0;
    printf("stuck: PtlNIFini returned after %.3f s\n", took);
    if (took < 0.15 || took > 5)
        fail("%s: PtlNIFini took %d ms (PTL_PEER_TIMEOUT_MS=200)", "stuck", (int)(took * 1000));
    check_waiters(&w, 1, "stuck: the waiter on the left NI");
    atomic_store(&stuck_go, 1);
    pthread_join(st, NULL);

    step("stuck: a new NI");
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &self));
    CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t s = put_path(2, eq);
    CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 2, 0, 7, 0, 0x5eed));
    ptl_event_t ev;
    CHECK(PtlEQWait(eq, &ev));
    if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 0x5eed)
        fail("%s: the new NI delivered event type %d", "stuck", (int)ev.type);
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("life stuck: OK\n");
}

/* ---- reinit: the NI's tables at a second PtlNIInit ---------------------------- */

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &rss) != 2)
        fail("%s: cannot read /proc/self/statm%d", "reinit", 0);
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_reinit(void)
{
    long first = 0, last = 0;
    for (int r = 0; r < 8; r++) {
        step("reinit: a round");
        ni_up();
        long kb = rss_kb();
        if (r == 0)
            first = kb;
        last = kb;
        ptl_handle_eq_t eq;
        CHECK(PtlEQAlloc(ni, 8, PTL_EQ_HANDLER_NONE, &eq));
        ptl_handle_md_t s = put_path(2, eq);
        CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 2, 0, 7, 0, 0x5eed + (unsigned)r));
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 0x5eed + (unsigned)r)
            fail("%s: round %d: wrong event", "reinit", r);
        CHECK(PtlNIFini(ni));
        PtlFini();
    }
    printf("reinit: resident set after the first PtlNIInit %ld KiB, after the 8th %ld KiB\n",
           first, last);
    if (last - first > 16 * 1024)
        fail("%s: the resident set grew by %d KiB over 7 more NIs", "reinit", (int)(last - first));
    printf("life reinit: OK\n");
}

/* Run fn(arg) in a child of fork() and wait for it: 0 if the child ran fn
 * and exited 0 (fn fails by exiting non-zero, as fail() does), else its wait
 * status, or -1 when it could not be made or waited for. */
static int in_child(void (*fn)(void *), void *arg)
{
    fflush(stdout);
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* killed with the test, however it ends */
        if (getppid() != parent)
            _exit(1);
        fn(arg);
        _exit(0);
    }
    ST_RELEASE(&wd_child, c);
    int st = 0;
    pid_t w = c < 0 ? -1 : waitpid(c, &st, 0);
    ST_RELEASE(&wd_child, 0);
    if (w != c)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : (st ? st : -1);
}

/* ---- membar: which entry fence, and the reclaimer's side after fork() ------ */

/* A put to ourselves and its event, an EQ freed (the engine's L-F), then
 * PtlNIFini (PtlNIFini's L-F). */
static void membar_round(const char *who)
{
    ni_up();
    ptl_handle_eq_t eq, eq2;
    CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq2));
    ptl_handle_md_t s = put_path(5, eq);
    CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 5, 0, 7, 0, 0));
    ptl_event_t ev;
    CHECK(PtlEQWait(eq, &ev));
    if (ev.type != PTL_EVENT_PUT_END || memcmp(dst, src, sizeof dst) != 0)
        fail("membar: %s: the put's event or data is wrong (type %d)", who, (int)ev.type);
    CHECK(PtlEQFree(eq2));
    pt_membar_heavy(); /* as the reclaimers call it */
    CHECK(PtlNIFini(ni));
}

#if !defined(__SANITIZE_THREAD__) /* its child is not run under ThreadSanitizer: below */
static void membar_child(void *arg)
{
    (void)arg;
    membar_round("child");
}
#endif

static void test_membar(void)
{
    step("membar: parent");
    membar_round("parent");
    const char *e = getenv("PTL_ASYM_FENCE");
    bool want = !(e && atoi(e) == 0), kernel = false;
#if defined(__linux__) && defined(__NR_membarrier) && !defined(__SANITIZE_THREAD__)
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    kernel = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
#endif
    bool on = LD_RELAXED(&g_pt_membar);
    printf("life membar: PTL_ASYM_FENCE %s, kernel %s, entry fence: %s\n", want ? "1" : "0",
           kernel ? "has membarrier" : "without it", on ? "membarrier" : "locked instruction");
    if (on != (want && kernel))
        fail("membar: the entry fence is %s where %d was expected", on ? "membarrier" : "locked",
             want && kernel);
    /* AF's global membarrier (util/membar.h): registered and callable where
     * the kernel has it (not under ThreadSanitizer) */
    bool gkernel = false;
#if defined(__linux__) && defined(__NR_membarrier) && !defined(__SANITIZE_THREAD__)
    gkernel = q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
              (q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
#endif
    bool greg = pt_membar_global_register();
    printf("life membar: global expedited membarrier: kernel %s, registered %s\n",
           gkernel ? "has it" : "without it", greg ? "yes" : "no");
    if (greg != gkernel)
        fail("membar: the global membarrier's registration %s where %d was expected",
             greg ? "succeeded" : "failed", gkernel);
    if (greg && !pt_membar_global())
        fail("membar: %s failed after registration (%d)", "MEMBARRIER_CMD_GLOBAL_EXPEDITED", 0);
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer starts no thread in a child of a multi-threaded fork()
     * (the child's NIC thread, offload mode), and its build uses the fenced
     * entry anyway: the child's round is for the other builds. */
    printf("life membar: the child of fork() is not run under ThreadSanitizer\n");
#else
    step("membar: child");
    int st = in_child(membar_child, NULL);
    if (st != 0)
        fail("membar: %s: the child of fork() failed (status %d)", "child", st);
#endif
    step("membar: parent again");
    membar_round("parent again");
    PtlFini();
    printf("life membar: OK\n");
}

/* The second thread of test_solo: its first call (PtlGetId, or PtlNIFini
 * for solo_fini) returns only after the main thread's section ended. */
static _Atomic int solo_done;
static bool solo_via_fini;
static void *solo_second(void *arg)
{
    (void)arg;
    ptl_process_id_t id;
    int rc = solo_via_fini ? PtlNIFini(ni) : PtlGetId(ni, &id);
    if (rc != PTL_OK)
        fail("solo: %s: the second thread's call failed (%d)", "second", rc);
    RMW_ADD(&solo_done, 1);
    return NULL;
}

/* n puts to ourselves on portal pt, each waited for; more until *until is
 * set, if given. */
static void solo_puts_until(const char *who, ptl_pt_index_t pt, int n, _Atomic int *until)
{
    ptl_handle_eq_t eq;
    CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t s = put_path(pt, eq);
    for (int i = 0; i < n || (until && !LD_ACQUIRE(until)); i++) {
        CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, pt, 0, 7, 0, (ptl_hdr_data_t)i));
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != (ptl_hdr_data_t)i)
            fail("solo: %s: a wrong event (type %d)", who, (int)ev.type);
    }
}

static void solo_puts(const char *who, ptl_pt_index_t pt, int n)
{
    solo_puts_until(who, pt, n, NULL);
}

static void *solo_putter(void *arg)
{
    solo_puts("second thread", (ptl_pt_index_t)(uintptr_t)arg, 2000);
    return NULL;
}

static _Atomic int solo_late_done;
static void *solo_late(void *arg)
{
    struct timespec d = {0, (long)(uintptr_t)arg};
    nanosleep(&d, NULL);
    solo_puts("late thread", 6, 300);
    ST_RELEASE(&solo_late_done, 1);
    return NULL;
}

/* One child of solo_race: k chooses when the second thread starts. */
static void solo_race_child(void *arg)
{
    unsigned k = (unsigned)(uintptr_t)arg;
    ni_up();
    pthread_t t;
    pthread_create(&t, NULL, solo_late, (void *)(uintptr_t)((k * 131u % 24u) * 125000u));
    solo_puts_until("first thread", 5, 1500, &solo_late_done); /* until the other ends */
    pthread_join(t, NULL);
    if (LD_RELAXED(&g_pt_solo))
        fail("solo_race: %s: the solo path is still on after a second thread", "child", (int)k);
    CHECK(PtlNIFini(ni));
    PtlFini();
}

static void test_solo_race(void)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer starts no thread in a child of a multi-threaded fork()
     * (the watchdog runs here), and its build has no solo path (no
     * membarrier): nothing to race. */
    printf("life solo_race: not run under ThreadSanitizer\n");
    printf("life solo_race: OK\n");
    return;
#endif
    for (int k = 0; k < 24; k++) {
        step("solo_race: a child");
        if (in_child(solo_race_child, (void *)(uintptr_t)k) != 0)
            fail("solo_race: %s %d failed", "child", k);
    }
    printf("life solo_race: OK\n");
}

static void test_solo(bool via_fini)
{
    step("solo: one thread");
    ni_up();
    const char *e = getenv("PTL_SOLO");
    bool want = !(e && atoi(e) == 0) && LD_RELAXED(&g_pt_membar);
    printf("life solo: PTL_SOLO %s, membarrier %s, solo path %s\n", e ? e : "(default)",
           LD_RELAXED(&g_pt_membar) ? "on" : "off", LD_RELAXED(&g_pt_solo) ? "on" : "off");
    if ((LD_RELAXED(&g_pt_solo) != 0) != want)
        fail("solo: the solo path is %s where %d was expected",
             LD_RELAXED(&g_pt_solo) ? "on" : "off", want);
    solo_puts("main thread alone", 5, 2000);

    step("solo: a second thread against an open section");
    bool opened;
    {
        struct pt_life *l = pt_life_enter(); /* as an API call: inside */
        opened = pt_life_solo_open();
        if (opened != want)
            fail("solo: a section %s where %d was expected", opened ? "opened" : "did not open", want);
        solo_via_fini = via_fini;
        pthread_t t, t3;
        pthread_create(&t, NULL, solo_second, NULL);
        /* A third thread once the second has ended the path: it finds
         * g_pt_solo 0 and must wait for the section all the same (SO-D). */
        struct timespec gap = {0, 30 * 1000 * 1000}, hold = {0, 150 * 1000 * 1000};
        nanosleep(&gap, NULL);
        if (!via_fini)
            pthread_create(&t3, NULL, solo_second, NULL);
        nanosleep(&hold, NULL);
        if (opened && LD_ACQUIRE(&solo_done))
            fail("solo: %s thread's call returned while a section was open",
                 LD_RELAXED(&g_pt_solo) ? "the second" : "the second or third", 0);
        if (opened)
            pt_life_solo_close();
        pt_life_leave(l);
        pthread_join(t, NULL);
        if (!via_fini)
            pthread_join(t3, NULL);
    }
    if (LD_ACQUIRE(&solo_done) != (via_fini ? 1 : 2) || LD_RELAXED(&g_pt_solo))
        fail("solo: after the second thread the solo path is %s (done %d)",
             LD_RELAXED(&g_pt_solo) ? "still on" : "off", LD_ACQUIRE(&solo_done));
    if (via_fini) {
        PtlFini();
        printf("life solo_fini: OK\n");
        return;
    }

    step("solo: two threads put and wait at once");
    pthread_t t;
    pthread_create(&t, NULL, solo_putter, (void *)(uintptr_t)6);
    solo_puts("main thread beside it", 7, 2000);
    pthread_join(t, NULL);
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("life solo: OK\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *t = argc > 1 ? argv[1] : "";
    if (getenv("PTLT_WATCHDOG_S"))
        wd_secs = atoi(getenv("PTLT_WATCHDOG_S"));
    pthread_t wd;
    step("start");
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);
    /* Wait until the watchdog is in its loop, where it allocates nothing: the
     * fork()s below (membar, solo_race) must not copy a lock that its start
     * holds. ASan's allocator in gcc 12 has no fork handler, so a child forked
     * while the new thread was being set up inherited the allocator's lock
     * held, and each thread it started hung in calloc (CI, 67th session). */
    pthread_mutex_lock(&wd_mu);
    while (!wd_ready)
        pthread_cond_wait(&wd_cv, &wd_mu);
    pthread_mutex_unlock(&wd_mu);
    if (!strcmp(t, "eqfree"))
        test_eqfree(argc > 2 ? atoi(argv[2]) : -1); /* one way of waiting: 0-3 */
    else if (!strcmp(t, "eqreuse"))
        test_eqreuse();
    else if (!strcmp(t, "nifini"))
        test_fini(false);
    else if (!strcmp(t, "fini"))
        test_fini(true);
    else if (!strcmp(t, "stuck"))
        test_stuck();
    else if (!strcmp(t, "reinit"))
        test_reinit();
    else if (!strcmp(t, "membar"))
        test_membar();
    else if (!strcmp(t, "solo"))
        test_solo(false);
    else if (!strcmp(t, "solo_fini"))
        test_solo(true);
    else if (!strcmp(t, "solo_race"))
        test_solo_race();
    else {
        printf("usage: unit_life eqfree|eqreuse|nifini|fini|stuck|reinit|membar|solo|solo_fini|solo_race\n");
        return 2;
    }
    return 0;
}
