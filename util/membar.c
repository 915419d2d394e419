/* membar.c - see membar.h. */
#include "membar.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

void pt_membar_heavy(void)
{
    if (!LD_RELAXED(&g_pt_membar)) {
        FENCE_FULL();
        return;
    }
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    int e = errno;
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    pt_log(PT_LOG_ERR, "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed (%s) after it "
                       "had been registered: the library's ordering cannot be kept; "
                       "PTL_ASYM_FENCE=0 avoids it", strerror(e));
    abort();
}
#else
void pt_membar_decide(bool want)
{
    (void)want;
    ST_RELAXED(&g_pt_membar, false);
}

void pt_membar_heavy(void) { FENCE_FULL(); }
#endif
