/*
 * clock.h - time for the data path and for waits.
 * pt_now_ns(): CLOCK_MONOTONIC in ns (vDSO, no syscall).
 * pt_tsc(): raw cycle counter for per-stage instrumentation; pt_tsc_to_ns()
 * converts using a calibration done once at library init (pt_clock_init).
 */
#ifndef PT_CLOCK_H
#define PT_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline uint64_t pt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t pt_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return pt_now_ns();
#endif
}

void pt_clock_init(void);
double pt_tsc_ns_per_tick(void);
static inline double pt_tsc_to_ns(uint64_t ticks) { return (double)ticks * pt_tsc_ns_per_tick(); }

#endif
