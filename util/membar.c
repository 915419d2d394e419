/* membar.c - see membar.h. */
#include "membar.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

_Atomic bool g_pt_membar;

#if defined(__linux__) && defined(__NR_membarrier) && !defined(__SANITIZE_THREAD__)
static int membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }

void pt_membar_decide(bool want)
{
    bool on = false;
    if (want) {
        int q = membarrier(MEMBARRIER_CMD_QUERY);
        on = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
             (q & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) &&
             membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    }
    ST_RELAXED(&g_pt_membar, on);
}

/* cmd, with transient failures (the kernel's cpumask allocation: ENOMEM)
 * retried, 1 us doubling to 10 ms, for about 10 s; with reg, a lost
 * registration (EPERM: a child of fork() on a kernel that does not carry it
 * over) made again. 0, or the errno that ended it. */
static int membar_retry(int cmd, int reg)
{
    int e = 0;
    long nap_ns = 1000;
    for (int tries = 0; tries < 1200; tries++) {
        if (membarrier(cmd) == 0)
            return 0;
        e = errno;
        if (e == EPERM && reg && membarrier(reg) == 0)
            continue;
        if (e != ENOMEM && e != EAGAIN && e != EINTR)
            return e;
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 10000000)
            nap_ns *= 2;
    }
    return e;
}

void pt_membar_heavy(void)
{
    if (!LD_RELAXED(&g_pt_membar)) {
        FENCE_FULL();
        return;
    }
    /* The reclaimer cannot go on without the barrier: a thread whose entry
     * store is still in its store buffer may hold what it frees. */
    int e = membar_retry(MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    if (!e)
        return;
    pt_log(PT_LOG_ERR, "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) fails (%s) in a process "
                       "that registered for it: freeing an event queue or an NI here could "
                       "free memory another thread still reads; stopping (PTL_ASYM_FENCE=0 "
                       "uses fences instead)", strerror(e));
    abort();
}

bool pt_membar_global_register(void)
{
    int q = membarrier(MEMBARRIER_CMD_QUERY);
    return q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
           (q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

bool pt_membar_global(void)
{
    int e = membar_retry(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0);
    if (!e)
        return true;
    pt_log_once(PT_LOG_WARN, "membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) fails (%s): "
                             "sleeping with a timeout instead (PTL_ASYM_FSND=0 uses fences)",
                strerror(e));
    return false;
}
#else
void pt_membar_decide(bool want)
{
    (void)want;
    ST_RELAXED(&g_pt_membar, false);
}

void pt_membar_heavy(void) { FENCE_FULL(); }
bool pt_membar_global_register(void) { return false; }
bool pt_membar_global(void) { return false; }
#endif
