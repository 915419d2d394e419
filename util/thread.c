/* thread.c - see thread.h. */
#include "thread.h"

#include <signal.h>

int pt_thread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, a, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
