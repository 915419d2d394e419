/* cma.c - the CMA probe: whether a peer can read us with process_vm_readv
 * (Yama ptrace_scope, dumpability), and the word it reads. */
#include "shm_int.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif

/* ---- CMA probe ------------------------------------------------------------ */

/* Probe target for peers: its address goes into the region (rank records,
 * owner_probe_addr); peers read it with process_vm_readv. */
static const uint64_t g_probe_word = PT_SHM_MAGIC;

uint64_t pt_cma_probe_addr(void) { return (uint64_t)(uintptr_t)&g_probe_word; }

void pt_cma_allow_readers(bool any)
{
    (void)prctl(PR_SET_PTRACER, any ? PR_SET_PTRACER_ANY : 0, 0, 0, 0);
}

int pt_cma_probe(pid_t pid, uint64_t addr, const char **why)
{
    uint64_t v = 0;
    struct iovec lv = {&v, sizeof v};
    struct iovec rv = {(void *)(uintptr_t)addr, sizeof v};
    ssize_t n = process_vm_readv(pid, &lv, 1, &rv, 1, 0);
    if (n == (ssize_t)sizeof v) {
        *why = v == PT_SHM_MAGIC ? "process_vm_readv works"
                                 : "process_vm_readv works (probe word differs)";
        return 0;
    }
    int e = n < 0 ? errno : EIO;
    switch (e) {
    case EPERM:
        *why = "process_vm_readv refused (EPERM): Yama ptrace_scope or a non-dumpable peer";
        break;
    case ENOSYS:
        *why = "process_vm_readv unavailable (ENOSYS): kernel without CMA or a seccomp filter";
        break;
    case ESRCH:
        *why = "probe target gone (ESRCH)";
        break;
    case EFAULT:
        *why = "probe address not mapped in the target (EFAULT); the call itself works";
        break;
    default:
        *why = "process_vm_readv failed";
        break;
    }
    return -e;
}
