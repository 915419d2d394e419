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
 * Not on any hot path; the thread holds no lock and touches no shared state.
 */
#include "xport.h"

#include "log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
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

static void launcher_gone(void)
{
    pt_log(PT_LOG_ERR, "the launcher (pid %d) is gone: ending this rank", (int)g_launcher);
    kill(getpid(), SIGKILL);
    _exit(137); /* not reached */
}

static void *watch(void *arg)
{
    (void)arg;
    if (g_pidfd >= 0) {
        struct pollfd p = {.fd = g_pidfd, .events = POLLIN};
        for (;;) {
            int n = poll(&p, 1, -1);
            if (n > 0)
                launcher_gone(); /* readable: the process has exited */
            if (n < 0 && errno != EINTR)
                break; /* fall back to asking */
        }
    }
    for (;;) {
        if (kill(g_launcher, 0) != 0 && errno == ESRCH)
            launcher_gone();
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
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
    if (errno || *end || v <= 1 || v != (pid_t)v) {
        pt_log(PT_LOG_WARN, "PTL_LAUNCHER_PID=%s is not a process id: not watching the launcher",
               s);
        return;
    }
    g_launcher = (pid_t)v;
    if (g_pidfd >= 0)
        close(g_pidfd); /* our parent's (fork): its thread is not ours */
    g_pidfd = (int)syscall(SYS_pidfd_open, g_launcher, 0);
    /* Gone already (or the pid is unknown): the job is over for us. */
    if (kill(g_launcher, 0) != 0 && errno == ESRCH)
        launcher_gone();
    /* The watcher must not take signals meant for the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &a, watch, NULL);
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
