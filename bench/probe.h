/*
 * probe.h - what the stand-alone probes share (ptl_c2c, ptl_copyfloor,
 * ptl_ratefloor): two threads, each pinned to a cpu of its own, timed with
 * the monotonic clock. No libportals and no bench library: each probe
 * measures the machine alone.
 */
#ifndef PTL_BENCH_PROBE_H
#define PTL_BENCH_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
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

#endif
