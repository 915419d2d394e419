/* ofi_fabric.c - libfabric opened on first use (why: ofi_fabric.h). */
#include "ofi_fabric.h"
#include "log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#ifndef PTL_FI_SONAME
#define PTL_FI_SONAME "libfabric.so.1"
#endif
/* "": the library's default version at run time (dlsym) */
#ifndef PTL_FI_VER_GETINFO
#define PTL_FI_VER_GETINFO ""
#endif
#ifndef PTL_FI_VER_FREEINFO
#define PTL_FI_VER_FREEINFO ""
#endif
#ifndef PTL_FI_VER_DUPINFO
#define PTL_FI_VER_DUPINFO ""
#endif
#ifndef PTL_FI_VER_FABRIC
#define PTL_FI_VER_FABRIC ""
#endif
#ifndef PTL_FI_VER_STRERROR
#define PTL_FI_VER_STRERROR ""
#endif

/* Written once by load() under g_once; read only after pt_fi_load() returned
 * 0 (pthread_once orders the writes before every caller's return). */
static struct {
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                   struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
} g_fi;
static int g_rc = -ENOENT;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *bind(void *h, const char *name, const char *ver)
{
    void *f = *ver ? dlvsym(h, name, ver) : dlsym(h, name);
    if (!f)
        pt_log(PT_LOG_ERR, "ofi: %s has no %s%s%s (the ofi transport is off): %s", PTL_FI_SONAME,
               name, *ver ? "@" : "", ver, dlerror());
    return f;
}

/*
 * Signal handlers. libfabric.so.1 loads libinfinipath and libpsm2, whose
 * load-time constructors install handlers for SIGSEGV, SIGBUS, SIGILL,
 * SIGABRT (SIGFPE in some versions), SIGINT and SIGTERM. The crash ones print
 * a backtrace, leave a "<program>.80s-<pid>,vm.btr" file in the working
 * directory and exit(1): a rank that crashed then looked to ptlrun, to a
 * shell and to a debugger like one that exited 1 ("rank 1 exited with status
 * 1" for a NULL dereference), no core was written, and a sanitizer's own
 * handler was gone. Opened at PtlNIInit, they would also replace the
 * handlers the application installed before it (its SIGTERM, its SIGINT).
 * Their own switch, IPATH_NO_BACKTRACE, is read by that constructor. So
 * load() notes every signal's handler before dlopen and, for each signal
 * whose handler afterwards lives in libinfinipath or a psm library, puts back
 * the one it noted (the default action, or the application's own):
 * mp_died_segv_ofi_*.
 */
static bool owned_by_psm(const struct sigaction *sa)
{
    void *fn = (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
    Dl_info di;
    if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN || !dladdr(fn, &di) || !di.dli_fname)
        return false;
    return strstr(di.dli_fname, "libinfinipath") || strstr(di.dli_fname, "libpsm");
}

/* signals 1 .. 31: the standard ones (SIGKILL and SIGSTOP cannot be caught;
 * sigaction refuses them and they are skipped) */
#define N_SIGS 32

static void load(void)
{
    struct sigaction before[N_SIGS];
    bool noted[N_SIGS] = {false};
    for (int sig = 1; sig < N_SIGS; sig++)
        noted[sig] = sigaction(sig, NULL, &before[sig]) == 0;
    /* RTLD_NODELETE: providers may leave threads and handlers behind; the
     * library stays for the life of the process */
    void *h = dlopen(PTL_FI_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    for (int sig = 1; sig < N_SIGS; sig++) {
        struct sigaction now;
        if (noted[sig] && sigaction(sig, NULL, &now) == 0 && owned_by_psm(&now))
            sigaction(sig, &before[sig], NULL);
    }
    if (!h) {
        pt_log(PT_LOG_ERR, "ofi: cannot load %s (the ofi transport is off): %s", PTL_FI_SONAME,
               dlerror());
        return;
    }
    void *gi = bind(h, "fi_getinfo", PTL_FI_VER_GETINFO);
    void *fr = bind(h, "fi_freeinfo", PTL_FI_VER_FREEINFO);
    void *du = bind(h, "fi_dupinfo", PTL_FI_VER_DUPINFO);
    void *fa = bind(h, "fi_fabric", PTL_FI_VER_FABRIC);
    void *se = bind(h, "fi_strerror", PTL_FI_VER_STRERROR);
    if (!gi || !fr || !du || !fa || !se)
        return;
    /* object pointer to function pointer: POSIX dlsym's own convention */
    memcpy(&g_fi.getinfo, &gi, sizeof gi);
    memcpy(&g_fi.freeinfo, &fr, sizeof fr);
    memcpy(&g_fi.dupinfo, &du, sizeof du);
    memcpy(&g_fi.fabric, &fa, sizeof fa);
    memcpy(&g_fi.strerror, &se, sizeof se);
    g_rc = 0;
}

int pt_fi_load(void)
{
    pthread_once(&g_once, load);
    return g_rc;
}

int pt_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                  const struct fi_info *hints, struct fi_info **info)
{
    return g_fi.getinfo(version, node, service, flags, hints, info);
}

void pt_fi_freeinfo(struct fi_info *info) { g_fi.freeinfo(info); }

struct fi_info *pt_fi_dupinfo(const struct fi_info *info) { return g_fi.dupinfo(info); }

int pt_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    return g_fi.fabric(attr, fabric, context);
}

const char *pt_fi_strerror(int errnum)
{
    if (pt_fi_load() == 0)
        return g_fi.strerror(errnum);
    return strerror(errnum);
}
