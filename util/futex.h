/*
 * futex.h - sleeping and waking on a 32-bit word, private or process-shared.
 * The primitive only; the protocol built on it (who announces, who rechecks,
 * who rings, and what `polled` means) is engine/wait.h.
 *
 *   sleeper                                   producer
 *   -------                                   --------
 *   seq = LD_ACQUIRE(&w->seq)                 publish work
 *   RMW_ADD(&w->sleepers, 1)   (full fence)   FENCE_FULL()
 *   recheck; if work: RMW_SUB, go work        if (LD_RELAXED(&w->sleepers)) pt_wake_all(w)
 *   pt_futex_wait(w, seq, timeout)
 *   RMW_SUB(&w->sleepers, 1)
 *
 * pt_wake_all bumps `seq` before FUTEX_WAKE, so a sleeper that read seq before
 * the bump never blocks.
 */
#ifndef PT_FUTEX_H
#define PT_FUTEX_H

#include "pt_atomic.h"
#include <stdbool.h>

struct pt_waitword {
    _Atomic uint32_t seq;      /* futex word: bumped by every wake            */
    _Atomic uint32_t sleepers; /* number of threads announced asleep          */
    _Atomic uint32_t polled;   /* offload API waiters running the engine: while
                                * non-zero, producers need not wake (wait.h D4) */
    uint32_t shared;           /* 1: lives in memory shared between processes */
};

void pt_waitword_init(struct pt_waitword *w, bool process_shared);

/* Wake every announced sleeper. Call after FENCE_FULL following a publish. */
void pt_wake_all(struct pt_waitword *w);

/* D1 (engine/wait.h), a peer's half: after publishing a message, wake the
 * receiver's engine sleepers unless somebody polls its engine. The caller
 * has executed FENCE_FULL (or a seq_cst RMW) after its publish: that fence
 * pairs with the sleeper's S2 RMW and the poller's D4 RMW (shm_commit:
 * F-SND, transport/shm_region.h). True when it rang. */
#define PT_POLLED_MAX 4096u /* more pollers than a process has threads: the word was forged */
static inline bool pt_wake_if_sleeping_fenced(struct pt_waitword *w)
{
    if (LD_RELAXED(&w->sleepers)) {
        uint32_t p = LD_RELAXED(&w->polled);
        if (p == 0 || p > PT_POLLED_MAX) {
            pt_wake_all(w);
            return true;
        }
    }
    return false;
}

/* Block until the word's seq differs from `seq` or timeout_ns passes
 * (timeout_ns < 0: forever). Returns false on timeout. Callers hold an
 * announcement (sleepers incremented) and have rechecked their sources. */
bool pt_futex_wait(struct pt_waitword *w, uint32_t seq, int64_t timeout_ns);

#endif
