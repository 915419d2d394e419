/*
 * perturb.h - timing perturbation at the points where threads hand work over
 * (build option PTL_PERTURB). Each PT_PERTURB() site, in a perturbation
 * build, yields the core or sleeps a few microseconds now and then, so that
 * the rare interleavings of the waiting protocol (engine/wait.h) happen in
 * minutes of testing instead of months of production. In a normal build it
 * is nothing at all.
 *
 * The sites: between a publish and the fence that orders it (producers), and
 * between an announcement and its recheck (sleepers), around token hand-over.
 */
#ifndef PT_PERTURB_H
#define PT_PERTURB_H

#include "clock.h"

#include <sched.h>
#include <stdint.h>

/* Off the core for ns as a preempted thread is: runnable all along (state
 * R), not asleep. The engine's backstop judges a producer that has not rung
 * by that state (engine/wait.c producer_may_be_late): asleep in nanosleep
 * between its publish and its ring, a producer looks finished, and a late
 * ring reads as a lost one. Used by pt_perturb and PTL_DEPART_RING_MS. */
static inline void pt_yield_for_ns(uint64_t ns)
{
    uint64_t end = pt_now_ns() + ns;
    do
        sched_yield();
    while (pt_now_ns() < end);
}

#ifdef PTL_PERTURB
void pt_perturb(void);
#define PT_PERTURB() pt_perturb()
#else
#define PT_PERTURB() ((void)0)
#endif

#endif
