/*
 * ofi_sig.c - give a crashing process its signal back.
 *
 * Debian's libfabric links the psm providers, and so every program linked
 * with libportals loads libinfinipath, whose load-time constructor installs
 * handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT that print a
 * backtrace, leave a "<program>.80s-<pid>,vm.btr" file in the working
 * directory and exit(1). A rank that crashed then looked to ptlrun, to a
 * shell and to a debugger like one that exited 1 (an adversarial client:
 * "rank 1 exited with status 1" for a NULL dereference, also in a program
 * that never called PtlInit), and no core was written. Its own switch,
 * IPATH_NO_BACKTRACE, is read by that constructor, before any code of ours.
 *
 * So this constructor, which runs after those of the libraries we depend on
 * (ELF initialisation order) and before main, puts back the default action
 * for each of those signals whose handler lives in libinfinipath or a psm
 * library, and only those: handlers the application installs come later and
 * are not touched. Built with the ofi transport only.
 */
#if PTL_WITH_OFI
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static bool owned_by_psm(void *fn)
{
    Dl_info di;
    if (!fn || !dladdr(fn, &di) || !di.dli_fname)
        return false;
    return strstr(di.dli_fname, "libinfinipath") || strstr(di.dli_fname, "libpsm");
}

__attribute__((constructor)) static void pt_ofi_sig_restore(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        if (sigaction(sigs[i], NULL, &sa))
            continue;
        void *fn = (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
        if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN || !owned_by_psm(fn))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}
#else
typedef int pt_ofi_sig_unused; /* (an empty translation unit is not ISO C) */
#endif
