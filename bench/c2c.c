/*
 * c2c.c - core-to-core probe from shared/docs/peers-mpi.md (Appendix B): two
 * threads pinned to two cpus bounce a cache line; prints the half round trip
 * in ns. bench/run-all runs it before and after every round, since on the
 * project VM this figure moves between about 70 and 300 ns.
 *
 *   usage: ptl_c2c [round-trips] [cpuA] [cpuB]     (default 200000 0 1)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "probe.h"

static _Alignas(64) volatile long ping;
static _Alignas(64) volatile long pong;
static long N = 200000;
static int cpu_a = 0, cpu_b = 1;

static void *peer(void *a)
{
    (void)a;
    probe_pin(cpu_b);
    for (long i = 1; i <= N; i++) {
        while (ping != i)
            ;
        pong = i;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && argv[1][0] == '-') {
        printf("usage: ptl_c2c [round-trips] [cpuA] [cpuB]\n"
               "Half round trip of a cache line between two pinned threads, in ns.\n");
        return 0;
    }
    if (argc > 1)
        N = atol(argv[1]);
    if (argc > 2)
        cpu_a = atoi(argv[2]);
    if (argc > 3)
        cpu_b = atoi(argv[3]);
    if (N < 1)
        N = 1;
    pthread_t t;
    pthread_create(&t, 0, peer, 0);
    probe_pin(cpu_a);
    double t0 = probe_now_ns();
    for (long i = 1; i <= N; i++) {
        ping = i;
        while (pong != i)
            ;
    }
    double t1 = probe_now_ns();
    pthread_join(t, 0);
    printf("c2c half-RTT %.1f ns\n", (t1 - t0) / (double)N / 2);
    return 0;
}
