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
 *
 * `rung` (D1R): a producer that finds sleepers announced rings only if no
 * other producer has rung since the last announcement. The sleeper clears
 * it between its seq read and its announcement (pt_announce); a producer
 * that reads it set leaves the ring to the one that set it (RMW_XCHG 0 -> 1,
 * then the seq bump: after that sleeper's seq read, so its wait returns and
 * its next announcement, which clears rung again, rechecks after our
 * publish). Before it, a 256-rank offload incast made 1.16 M futex calls for
 * 1.28 M messages: a woken NIC thread stays counted in `sleepers` until it
 * runs, and every sender that committed meanwhile rang it again.
 * model/region.pml, model/fbox.pml and model/wait.pml have it (MUT_RUNG,
 * MUT_RUNGLATE, MUT_RUNGW2).
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
    _Atomic uint32_t rung;     /* D1R: 1 = a producer rang since the last
                                * announcement; cleared by sleepers (pt_announce),
                                * set by pt_wake_if_sleeping_fenced            */
    uint32_t shared;           /* 1: lives in memory shared between processes */
};

void pt_waitword_init(struct pt_waitword *w, bool process_shared);

/* Wake every announced sleeper. Call after FENCE_FULL following a publish. */
void pt_wake_all(struct pt_waitword *w);

/* A sleeper's announcement, after its seq = LD_ACQUIRE(&w->seq) and before
 * its recheck: D1R's clear of `rung`, then sleepers++ (an RMW: the full
 * fence the recheck needs, and the release that makes the clear visible to
 * a producer whose LD_ACQUIRE of sleepers sees the count). */
static inline void pt_announce(struct pt_waitword *w)
{
    ST_RELAXED(&w->rung, 0);
    RMW_ADD(&w->sleepers, 1);
}

/* D1 (engine/wait.h), a peer's half: after publishing a message, wake the
 * receiver's engine sleepers unless somebody polls its engine. The caller
 * has executed FENCE_FULL (or a seq_cst RMW) after its publish: that fence
 * pairs with the sleeper's S2 RMW and the poller's D4 RMW (shm_commit:
 * F-SND, transport/shm_region.h). D1R: rings only if nobody rang since the
 * sleepers' last announcement (`rung` above); the load of rung comes first,
 * so that the producers of a burst do not all RMW its line. The load of
 * sleepers is an acquire: a count it sees brings the announcer's clear of
 * rung (pt_announce's RMW). True when it rang. */
#define PT_POLLED_MAX 4096u /* more pollers than a process has threads: the word was forged */
static inline bool pt_wake_if_sleeping_fenced(struct pt_waitword *w)
{
    if (LD_ACQUIRE(&w->sleepers)) {
        uint32_t p = LD_RELAXED(&w->polled);
        if ((p == 0 || p > PT_POLLED_MAX) && !LD_RELAXED(&w->rung) &&
            !RMW_XCHG(&w->rung, 1)) {
            pt_wake_all(w);
            return true;
        }
    }
    return false;
}

/* A flag cleared once, with its wait word (a thread past its start-up:
 * transport/launcher.c, transport/shm_watch.c). The writer's pt_flag_clear
 * stores 0 (release), fences and wakes; pt_flag_wait_clear waits until it
 * reads 0 (acquire), announced on the word before its recheck, until
 * deadline_ns (pt_now_ns's clock). False: still set at the deadline. */
void pt_flag_clear(_Atomic uint32_t *flag, struct pt_waitword *ww);
bool pt_flag_wait_clear(_Atomic uint32_t *flag, struct pt_waitword *ww, uint64_t deadline_ns);

/* Block until the word's seq differs from `seq` or timeout_ns passes
 * (timeout_ns < 0: forever). Returns false on timeout. Callers hold an
 * announcement (sleepers incremented) and have rechecked their sources. */
bool pt_futex_wait(struct pt_waitword *w, uint32_t seq, int64_t timeout_ns);

#endif
