/* perturb.c - see perturb.h. Compiled only with -DPTL_PERTURB. */
#include "perturb.h"

#ifdef PTL_PERTURB
#include <sched.h>
#include <stdint.h>
#include <time.h>

static __thread uint64_t tls_rng;

void pt_perturb(void)
{
    if (!tls_rng) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        tls_rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)(uintptr_t)&tls_rng ^ 0x9e3779b97f4a7c15u;
    }
    uint64_t x = tls_rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    tls_rng = x;
    unsigned r = (unsigned)(x >> 40) & 1023u;
    if (r < 96) {          /* ~9%: give the core away */
        sched_yield();
    } else if (r < 104) {  /* ~0.8%: off the core for 1-64 us (a preemption) */
        pt_yield_for_ns(1000 + ((x >> 8) & 63) * 1000); /* not nanosleep: perturb.h */
    } else if (r < 360) {  /* ~25%: a short spin */
        for (volatile unsigned i = 0; i < (unsigned)(x & 255); i++)
            ;
    }
}
#else
typedef int pt_perturb_unused; /* ISO C: a translation unit must declare something */
#endif
