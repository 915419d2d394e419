/* thread.c - see thread.h. */
#include "thread.h"

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

int pt_thread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    static const int fault[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (unsigned i = 0; i < sizeof fault / sizeof fault[0]; i++)
        sigdelset(&all, fault[i]); /* thread.h: a fault's signal stays open */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, a, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void pt_thread_end(void)
{
    int64_t us = pt_config()->test_thread_end_us;
    if (us > 0) {
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}
