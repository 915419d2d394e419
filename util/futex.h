/*
 * futex.h - sleeping and waking on a 32-bit word, private or process-shared.
 *
 * The wait protocol used everywhere (doorbells, EQ waiters, completion words):
 *
 *   sleeper                                   producer
 *   -------                                   --------
 *   seq = LD_ACQUIRE(&w->seq)                 publish work (ST_RELEASE ...)
 *   RMW_ADD(&w->sleepers, 1)   (full fence)   FENCE_FULL()
 *   recheck every work source; if work:       if (LD_RELAXED(&w->sleepers))
 *       RMW_SUB(sleepers), go work                 pt_wake_all(w)
 *   futex_wait(&w->seq, seq, timeout)
 *   RMW_SUB(&w->sleepers, 1)
 *
 * A thread that actively polls the same sources raises `polled` (RMW_ADD)
 * while it does; producers then skip the wake. On leaving it lowers `polled`
 * (RMW_SUB, a full fence) and rechecks the sources itself, waking the sleeper
 * if work is left: the same Dekker pairing as above.
 *
 * The sleeper's RMW on `sleepers` and the producer's FENCE_FULL order the
 * "announce" against the "publish": either the producer sees the sleeper, or
 * the sleeper's recheck sees the work. pt_wake_all bumps `seq` before the
 * FUTEX_WAKE, so a sleeper that read seq before the bump never blocks.
 */
#ifndef PT_FUTEX_H
#define PT_FUTEX_H

#include "pt_atomic.h"
#include <stdbool.h>

struct pt_waitword {
    _Atomic uint32_t seq;      /* futex word: bumped by every wake            */
    _Atomic uint32_t sleepers; /* number of threads announced asleep          */
    _Atomic uint32_t polled;   /* threads actively polling the sources: while
                                * non-zero, producers need not wake sleepers  */
    uint32_t shared;           /* 1: lives in memory shared between processes */
};

void pt_waitword_init(struct pt_waitword *w, bool process_shared);

/* Wake every announced sleeper. Call after FENCE_FULL following a publish. */
void pt_wake_all(struct pt_waitword *w);

/* Cheap producer side: wake only if someone announced sleep. Includes the fence. */
static inline void pt_wake_if_sleeping(struct pt_waitword *w)
{
    FENCE_FULL(); /* orders the caller's publish before reading sleepers */
    if (LD_RELAXED(&w->sleepers) && !LD_RELAXED(&w->polled))
        pt_wake_all(w);
}

/* Wake announced sleepers regardless of pollers (events, completions). */
static inline void pt_wake_sleepers(struct pt_waitword *w)
{
    FENCE_FULL(); /* orders the caller's publish before reading sleepers */
    if (LD_RELAXED(&w->sleepers))
        pt_wake_all(w);
}

/* Block until the word's seq differs from `seq` or timeout_ns passes
 * (timeout_ns < 0: forever). Returns false on timeout. Callers hold an
 * announcement (sleepers incremented) and have rechecked their sources. */
bool pt_futex_wait(struct pt_waitword *w, uint32_t seq, int64_t timeout_ns);

#endif
