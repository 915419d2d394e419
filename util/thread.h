/*
 * thread.h - the library's own threads (the NIC thread, the job region's
 * watch, the launcher watch).
 */
#ifndef PT_THREAD_H
#define PT_THREAD_H
#include <pthread.h>

/* pthread_create with every signal blocked in the new thread (it inherits
 * the creator's mask, set to all for the call and restored after). The
 * kernel hands a process-directed signal to any thread that does not block
 * it: a library thread with signals open takes the application's, and the
 * default action then runs there (a client that blocked SIGUSR1 after
 * PtlNIInit, to read it with sigwait or a signalfd, was killed by it in the
 * NIC thread). The synchronous signals of a fault (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGTRAP, SIGSYS) stay open: they go to the faulting thread
 * whatever its mask, and a blocked one kills the process without running
 * the application's handler (an adversarial client: an eager put into its
 * PROT_READ receive MD faulted in the NIC thread, and its SIGSEGV handler,
 * which ran when the application thread faulted, never did). Returns
 * pthread_create's code. */
int pt_thread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

/* The last call of every thread the library starts, just before it returns:
 * PTL_TEST_THREAD_END_US (tests only; 0: nothing) makes it wait that long,
 * so that a test reaches what runs while one of ours is ending (its
 * sanitizer runtime's teardown after the return: mp_join forkrace). */
void pt_thread_end(void);

#endif
