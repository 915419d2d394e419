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

#ifdef PTL_PERTURB
void pt_perturb(void);
#define PT_PERTURB() pt_perturb()
#else
#define PT_PERTURB() ((void)0)
#endif

#endif
