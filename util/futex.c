/* futex.c - thin wrappers over futex(2); see futex.h for the protocol. */
#include "futex.h"
#include "clock.h"
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
_Atomic uint32_t g_pt_tsan_fence; /* see pt_atomic.h */
#endif

void pt_waitword_init(struct pt_waitword *w, bool process_shared)
{
    ST_RELAXED(&w->seq, pt_wrap32()); /* PTL_TEST_WRAP */
    ST_RELAXED(&w->sleepers, 0);
    ST_RELAXED(&w->polled, 0);
    ST_RELAXED(&w->rung, 0);
    w->shared = process_shared;
}

void pt_wake_all(struct pt_waitword *w)
{
    RMW_ADD(&w->seq, 1);
    syscall(SYS_futex, &w->seq, w->shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX,
            NULL, NULL, 0);
}

bool pt_futex_wait(struct pt_waitword *w, uint32_t seq, int64_t timeout_ns)
{
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tsp = &ts;
    }
    long rc = syscall(SYS_futex, &w->seq, w->shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, seq,
                      tsp, NULL, 0);
    if (rc == -1 && errno == ETIMEDOUT)
        return false;
    return true;
}

void pt_flag_clear(_Atomic uint32_t *flag, struct pt_waitword *ww)
{
    ST_RELEASE(flag, 0); /* pairs with pt_flag_wait_clear's LD_ACQUIRE */
    FENCE_FULL();        /* the store before the wake's seq bump */
    pt_wake_all(ww);
}

bool pt_flag_wait_clear(_Atomic uint32_t *flag, struct pt_waitword *ww, uint64_t deadline_ns)
{
    while (LD_ACQUIRE(flag)) {
        if (pt_now_ns() >= deadline_ns)
            return false;
        uint32_t seq = LD_ACQUIRE(&ww->seq);
        RMW_ADD(&ww->sleepers, 1); /* full fence: seq read before the recheck */
        if (LD_ACQUIRE(flag))
            pt_futex_wait(ww, seq, 1000000);
        RMW_SUB(&ww->sleepers, 1);
    }
    return true;
}
