/* clock.c - TSC calibration against CLOCK_MONOTONIC (once, ~2 ms). */
#include "clock.h"
#include <pthread.h>

static double g_ns_per_tick = 1.0;
static pthread_once_t g_clock_once = PTHREAD_ONCE_INIT;

static void calibrate(void)
{
    uint64_t n0 = pt_now_ns(), t0 = pt_tsc();
    while (pt_now_ns() - n0 < 2000000)
        ;
    uint64_t n1 = pt_now_ns(), t1 = pt_tsc();
    if (t1 > t0)
        g_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
}

void pt_clock_init(void) { pthread_once(&g_clock_once, calibrate); }
double pt_tsc_ns_per_tick(void) { pt_clock_init(); return g_ns_per_tick; }
