/*
 * launcher.c - a rank never outlives its launcher.
 *
 * ptlrun's direct children get PR_SET_PDEATHSIG, but a rank started behind a
 * wrapper (`ptlrun -n 4 sh -c "prog; ..."`) is a grandchild: the signal is
 * not inherited across fork, and after a SIGKILL of ptlrun nobody would mark
 * a later death or stop the job. So a process that attaches to a job
 * launched by ptlrun (PTL_LAUNCHER_PID in its environment) starts, once, a
 * thread that sleeps in poll() on a pidfd of the launcher and ends the
 * process with SIGKILL (what PR_SET_PDEATHSIG does for direct children) when
 * the launcher is gone. Kernels without pidfd_open (before 5.3): the thread
 * asks kill(pid, 0) every 100 ms instead.
 *
 * The watch lasts while the process has an NI: the last NI's close ends it
 * (pt_launcher_unwatch), so that a process whose threads have all ended
 * (main called pthread_exit, a worker finalized and returned) exits as it
 * does outside ptlrun; a later PtlNIInit starts it again.
 *
 * Not on any hot path; the thread holds no lock and touches no shared state.
 * Past its start-up it never allocates; a fork() waits until it is past it
 * (pt_launcher_fork_settle: ASan's runtime allocates in a thread's start,
 * and a child of a fork at that instant could inherit the allocator's lock).
 * Its end is the same hazard (ASan's runtime drains the thread's caches
 * into the allocator's and the quarantine's after it returned, under their
 * locks), so the thread is joined, not detached: unwatch returns once it
 * has ended. Detached, it was still ending when PtlNIFini returned, and a
 * fork soon after (the next PtlNIInit's, mp_join forkrace round 22 in CI)
 * left the child the quarantine's lock held: its first thread hung in its
 * own exit. A thread that does not end within unwatch's bound is joined by
 * the next fork's settle or the next start.
 */
#include "xport.h"

#include "clock.h"
#include "log.h"
#include "proc.h"
#include "thread.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_started_in;  /* the process that started the watch: a child of
                             * fork() has no watch thread, and starts its own */
static pid_t g_launcher;
static int g_pidfd = -1;
/* 1 from the watch thread's creation until it runs its own code (its
 * start-up is over); the futex word fork() waits on (settle). */
static _Atomic uint32_t g_starting;
static struct pt_waitword g_up_ww;
/* unwatch -> the thread: end (g_stop, then a count on g_stopfd, which its
 * poll() watches beside the launcher's pidfd); the thread's end: its join. */
static int g_stopfd = -1;
static _Atomic uint32_t g_stop;
/* g_thread: the watch of g_started_in, joinable while g_has_thread. g_late:
 * one told to end that had not within unwatch's bound, a thread of process
 * g_late_in (0: none; a copy of our parent's is not ours to join). All
 * under g_lock; the thread itself takes none. */
static pthread_t g_thread, g_late;
static bool g_has_thread;
static pid_t g_late_in;

#define PT_WATCH_END_NS 1000000000u /* unwatch's bound on the thread's end */

/* Join t within ns from now (pthread_timedjoin_np's deadline is on the
 * realtime clock); false: it has not ended. */
static bool join_within(pthread_t t, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t d = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(d / 1000000000u);
    ts.tv_nsec = (long)(d % 1000000000u);
    return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

/* Join the late thread (if ours) within ns from now; false: it has not
 * ended. Under g_lock. */
static bool join_late(uint64_t ns)
{
    if (g_late_in != getpid())
        return true;
    if (!join_within(g_late, ns))
        return false;
    g_late_in = 0;
    return true;
}

static void launcher_gone(void)
{
    pt_log(PT_LOG_ERR, "the launcher (pid %d) is gone: ending this rank", (int)g_launcher);
    kill(getpid(), SIGKILL);
    _exit(137); /* not reached */
}

static void *watch(void *arg)
{
    (void)arg;
    pt_flag_clear(&g_starting, &g_up_ww); /* settle waits for it */
    if (g_pidfd >= 0) {
        struct pollfd p[2] = {{.fd = g_pidfd, .events = POLLIN},
                              {.fd = g_stopfd, .events = POLLIN}};
        while (!LD_ACQUIRE(&g_stop)) {
            int n = poll(p, g_stopfd >= 0 ? 2 : 1, g_stopfd >= 0 ? -1 : 100);
            if (n > 0 && (p[0].revents & POLLIN))
                launcher_gone(); /* readable: the process has exited */
            if (n > 0 && (p[1].revents & POLLIN)) {
                eventfd_t v; /* drained: a count without g_stop (a stray write
                              * into the descriptor) must not spin the poll */
                (void)!eventfd_read(g_stopfd, &v);
            }
            if (n < 0 && errno != EINTR)
                break; /* fall back to asking */
        }
    }
    while (!LD_ACQUIRE(&g_stop)) { /* pairs with unwatch's ST_RELEASE */
        if (kill(g_launcher, 0) != 0 && errno == ESRCH)
            launcher_gone();
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pt_thread_end();
    return NULL;
}

static void start(void)
{
    const char *s = getenv("PTL_LAUNCHER_PID");
    if (!s || !*s)
        return;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v != (pid_t)v) { /* 1: ptlrun as a container's init */
        pt_log(PT_LOG_WARN, "PTL_LAUNCHER_PID=%s is not a process id: not watching the launcher",
               s);
        return;
    }
    g_launcher = (pid_t)v;
    /* A watch that did not end within the last unwatch's bound: a little
     * longer, then let it go (it never started again: g_stop stays set for
     * it until the store below, and it sees a stop or its closed poll). */
    if (!join_late(PT_WATCH_END_NS)) {
        pthread_detach(g_late);
        g_late_in = 0;
    }
    if (g_pidfd >= 0)
        close(g_pidfd); /* our parent's (fork): its thread is not ours */
    if (g_stopfd >= 0)
        close(g_stopfd);
    g_pidfd = pt_fd_above_std((int)syscall(SYS_pidfd_open, g_launcher, 0));
    g_stopfd = pt_fd_above_std(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)); /* -1: the poll looks every 100 ms */
    ST_RELAXED(&g_stop, 0);
    /* Gone already (or the pid is unknown): the job is over for us. */
    if (kill(g_launcher, 0) != 0 && errno == ESRCH)
        launcher_gone();
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    ST_RELAXED(&g_starting, 1);
    int rc = pt_thread_create(&g_thread, &a, watch, NULL); /* signals blocked: not ours to take */
    g_has_thread = rc == 0;
    if (rc)
        ST_RELAXED(&g_starting, 0);
    pthread_attr_destroy(&a);
    if (rc)
        pt_log(PT_LOG_WARN, "cannot start the launcher watch (%s): this rank may outlive ptlrun",
               strerror(rc));
}

void pt_launcher_watch(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_started_in != getpid()) {
        g_started_in = getpid();
        start();
    }
    pthread_mutex_unlock(&g_lock);
}

void pt_launcher_unwatch(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_started_in == getpid()) {
        ST_RELEASE(&g_stop, 1); /* pairs with the thread's LD_ACQUIRE */
        if (g_stopfd >= 0)
            (void)!eventfd_write(g_stopfd, 1);
        /* Until the thread has ended (at once; at most a poll period
         * without an eventfd), bounded: a thread that does not end keeps
         * the descriptors, and the next watch starts with new ones. */
        bool ended = true;
        if (g_has_thread) {
            ended = join_within(g_thread, PT_WATCH_END_NS);
            if (!ended) {
                if (g_late_in == getpid())
                    pthread_detach(g_late); /* two late ones: the older goes */
                g_late = g_thread;
                g_late_in = getpid();
            }
            g_has_thread = false;
        }
        if (ended) {
            if (g_pidfd >= 0)
                close(g_pidfd);
            if (g_stopfd >= 0)
                close(g_stopfd);
        }
        g_pidfd = g_stopfd = -1;
        g_started_in = 0; /* the next NI's watch starts a thread again */
    }
    pthread_mutex_unlock(&g_lock);
}

pid_t pt_launcher_pid(void)
{
    pthread_mutex_lock(&g_lock);
    pid_t p = g_started_in == getpid() ? g_launcher : 0; /* a parent's copy is not ours */
    pthread_mutex_unlock(&g_lock);
    return p;
}

bool pt_launcher_fork_settle(uint64_t deadline_ns)
{
    pthread_mutex_lock(&g_lock);
    bool ours = g_started_in == getpid(); /* a copy of our parent's flag is not */
    /* A watch still ending (unwatch's bound passed): until the deadline. */
    uint64_t now = pt_now_ns();
    bool late = join_late(deadline_ns > now ? deadline_ns - now : 0);
    pthread_mutex_unlock(&g_lock);
    return late && (!ours || pt_flag_wait_clear(&g_starting, &g_up_ww, deadline_ns));
}
