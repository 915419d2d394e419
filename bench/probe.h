/*
 * probe.h - what the stand-alone probes share (ptl_c2c, ptl_copyfloor,
 * ptl_ratefloor): two threads, each pinned to a cpu of its own, timed with
 * the monotonic clock (the floors start their pair with probe_pair_run). No libportals and no bench library: each probe
 * measures the machine alone.
 */
#ifndef PTL_BENCH_PROBE_H
#define PTL_BENCH_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

/* The calling thread on cpu c only (a cpu the machine lacks leaves it where
 * it is: the probe then measures whatever placement the kernel chose). */
static inline void probe_pin(int c)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static inline double probe_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One measurement by a pair of threads: side(1) on a new thread, side(0) on
 * the caller's, both returned before this does. Each side pins itself and
 * calls probe_pair_ready() once it is set up: neither starts before both are. */
static inline pthread_barrier_t *probe_bar(void)
{
    static pthread_barrier_t b;
    return &b;
}

static inline void probe_pair_ready(void) { pthread_barrier_wait(probe_bar()); }

static inline void probe_pair_run(void *(*side)(void *))
{
    pthread_barrier_init(probe_bar(), NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, side, (void *)(intptr_t)1);
    side((void *)(intptr_t)0);
    pthread_join(t, NULL);
    pthread_barrier_destroy(probe_bar());
}

#endif
