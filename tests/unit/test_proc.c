/*
 * test_proc.c - util/proc.h, the backstop's question "may a producer still
 * be on its way?": a process whose other threads are all blocked answers 0,
 * one with a thread spinning answers 1, a stopped child 0, a child spinning
 * 1, a pid that does not exist -1; a thread whose name holds ") R (" is
 * parsed by the last parenthesis.
 */
#include "proc.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static int g_pipe[2];
static atomic_int g_spin;

/* Named like a state field, then blocked in read(). */
static void *blocker(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "x) R (y", 0, 0, 0);
    char c;
    (void)!read(g_pipe[0], &c, 1);
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    while (atomic_load(&g_spin))
        ;
    return NULL;
}

/* The kernel's view follows the thread's steps after a moment: ask until
 * the answer is `want`, for at most 5 s (a watchdog, not a timing). */
static int settle(pid_t pid, pid_t except, int want)
{
    int got = -2;
    for (int i = 0; i < 500 && (got = pt_proc_thread_runnable(pid, except)) != want; i++) {
        struct timespec d = {0, 10000000};
        nanosleep(&d, NULL);
    }
    return got;
}

static void test_threads(void **st)
{
    (void)st;
    pid_t me = pt_proc_tid();
    assert_int_equal(settle(getpid(), me, 0), 0); /* only us: nobody else */
    assert_int_equal(pipe(g_pipe), 0);
    pthread_t b, s;
    assert_int_equal(pthread_create(&b, NULL, blocker, NULL), 0);
    assert_int_equal(settle(getpid(), me, 0), 0); /* the blocker sleeps in read() */
    atomic_store(&g_spin, 1);
    assert_int_equal(pthread_create(&s, NULL, spinner, NULL), 0);
    assert_int_equal(settle(getpid(), me, 1), 1); /* the spinner runs or waits for a core */
    atomic_store(&g_spin, 0);
    pthread_join(s, NULL);
    assert_int_equal(settle(getpid(), me, 0), 0);
    assert_int_equal(pt_proc_thread_runnable(getpid(), 0), 1); /* we run */
    (void)!write(g_pipe[1], "x", 1);
    pthread_join(b, NULL);
    close(g_pipe[0]);
    close(g_pipe[1]);
}

static void test_child(void **st)
{
    (void)st;
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        alarm(30); /* a watchdog if the parent dies */
        for (;;)
            ;
    }
    assert_int_equal(settle(c, 0, 1), 1);
    kill(c, SIGSTOP);
    assert_int_equal(settle(c, 0, 0), 0); /* stopped: T */
    kill(c, SIGKILL);
    assert_int_equal(waitpid(c, NULL, 0), c);
    assert_int_equal(pt_proc_thread_runnable(c, 0), -1); /* reaped: gone */
    assert_int_equal(pt_proc_thread_runnable(0, 0), -1);
    assert_int_equal(pt_proc_thread_runnable(-5, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
