/*
 * mp_sigkeep - the signal handlers a rank installed before PtlNIInit are its
 * own after it, over every transport (transport/ofi_fabric.c: the ofi
 * transport opens libfabric in PtlNIInit, and the psm libraries it loads
 * install handlers for SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT and SIGTERM
 * in their constructors).
 *
 *   usage (any number of ranks): mp_sigkeep
 *
 * Each rank (after PtlInit) installs a handler of its own for those six
 * signals and SIGFPE, and leaves SIGUSR2 at its default action; after
 * PtlNIInit each must still be what it set (not mp_init: mp_util installs a
 * SIGTERM handler of its own). Then a SIGTERM to itself must reach its
 * handler. Prints "rank R: handlers kept" and exits 0; a replaced handler:
 * names the signal, exits 1.
 *
 * And the library's threads take none of the application's signals: the
 * rank blocks SIGUSR2 after PtlNIInit (in its only thread, as a client
 * that reads signals with sigwait or a signalfd does), sends it to its
 * process, and must take it with sigtimedwait. The kernel hands a
 * process-directed signal to any thread that does not block it: the NIC
 * thread did not (an adversarial client's finding), and SIGUSR2's default
 * action ended the rank there.
 */
#include "mp_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_got;

static void mine(int sig) { g_got = sig; }

static const int g_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM};

int main(void)
{
    unsigned rank, size;
    mp_rank_init(1, &rank, &size);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mine;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++)
        if (sigaction(g_sigs[i], &sa, NULL))
            mp_die("sigaction(%d)", g_sigs[i]);
    ptl_handle_ni_t ni;
    MP_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    int bad = 0;
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++) {
        struct sigaction now;
        if (sigaction(g_sigs[i], NULL, &now) || now.sa_handler != mine) {
            printf("rank %u: the handler of signal %d (%s) was replaced in PtlNIInit\n", rank,
                   g_sigs[i], strsignal(g_sigs[i]));
            bad = 1;
        }
    }
    struct sigaction usr2;
    if (sigaction(SIGUSR2, NULL, &usr2) || usr2.sa_handler != SIG_DFL) {
        printf("rank %u: SIGUSR2 has a handler after PtlNIInit\n", rank);
        bad = 1;
    }
    raise(SIGTERM);
    if (g_got != SIGTERM) {
        printf("rank %u: SIGTERM did not reach the rank's handler\n", rank);
        bad = 1;
    }
    sigset_t u2;
    sigemptyset(&u2);
    sigaddset(&u2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &u2, NULL);
    kill(getpid(), SIGUSR2);
    struct timespec five = {5, 0};
    int got;
    while ((got = sigtimedwait(&u2, NULL, &five)) < 0 && errno == EINTR)
        ;
    if (got != SIGUSR2) {
        printf("rank %u: SIGUSR2, blocked after PtlNIInit, did not come to sigtimedwait\n", rank);
        bad = 1;
    }
    MP_CHECK(PtlNIFini(ni));
    PtlFini();
    if (!bad)
        printf("rank %u: handlers kept\n", rank);
    return bad;
}
