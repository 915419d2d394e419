/*
 * copy_floor.c - the floor under an eager ping-pong: two threads pinned to
 * two cpus, each copying its message into a buffer of its own in shared
 * memory, publishing it with one store-release, and copying the peer's
 * message out of the peer's buffer once its flag shows. No matching, no
 * events, no queue: what two copies and two cache-line hand-overs cost per
 * half round trip, beside which `ptl_pingpong` and `mpibench lat` at the
 * same sizes (1 KiB to the eager limit) are read. Speed only; run it in the
 * same minutes as the figures it is compared with (this VM's core-to-core
 * latency moves from minute to minute: bench/c2c.c).
 *
 *   usage: ptl_copyfloor [--sizes LIST] [-n ITERS] [--pf MODE] [cpuA cpuB]
 *     --sizes LIST  bytes, e.g. 8,1K,2K,4000 (default 8,512,1K,2K,3K,4000)
 *     -n ITERS      round trips per size (default 200000; the first tenth warms)
 *     --pf MODE     0: plain copies; 1: the sender takes every line of its
 *                   buffer for writing first (prefetchw); 2: the receiver asks
 *                   for every line of the message first (prefetch); 3: both
 *                   (default: all four, one line each)
 * Output: one line per size and mode, "size mode half-rtt-us".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define MAXSZ 65536

struct box {
    _Alignas(64) _Atomic uint64_t seq;
    _Alignas(64) unsigned char data[MAXSZ];
};

static struct box boxes[2];
static size_t g_size;
static long g_iters;
static int g_mode, cpus[2] = {0, 1};

static inline void prefetch_w(const void *p)
{
#if defined(__x86_64__)
    __asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1);
#endif
}

static void send_msg(struct box *out, const unsigned char *u, size_t n, uint64_t i)
{
    if (g_mode & 1)
        for (size_t o = 0; o < n; o += 64)
            prefetch_w(out->data + o);
    memcpy(out->data, u, n);
    atomic_store_explicit(&out->seq, i, memory_order_release);
}

static void recv_msg(struct box *in, unsigned char *v, size_t n, uint64_t i)
{
    while (atomic_load_explicit(&in->seq, memory_order_acquire) != i)
        ;
    if (g_mode & 2)
        for (size_t o = 0; o < n; o += 64)
            __builtin_prefetch(in->data + o);
    memcpy(v, in->data, n);
}

static double g_half_us;

static void *side(void *arg)
{
    int me = (int)(intptr_t)arg;
    probe_pin(cpus[me]);
    unsigned char *u = aligned_alloc(4096, MAXSZ), *v = aligned_alloc(4096, MAXSZ);
    memset(u, me + 1, MAXSZ);
    memset(v, 0, MAXSZ);
    struct box *out = &boxes[me], *in = &boxes[!me];
    probe_pair_ready();
    double t0 = 0;
    long warm = g_iters / 10;
    for (long k = 1; k <= g_iters; k++) {
        uint64_t i = (uint64_t)k;
        if (me == 0) {
            if (k == warm + 1)
                t0 = probe_now_ns();
            send_msg(out, u, g_size, i);
            recv_msg(in, v, g_size, i);
        } else {
            recv_msg(in, v, g_size, i);
            send_msg(out, u, g_size, i);
        }
    }
    if (me == 0)
        g_half_us = (probe_now_ns() - t0) / (double)(g_iters - warm) / 2000.0;
    free(u);
    free(v);
    return NULL;
}

static size_t parse_size(const char *s)
{
    char *e;
    unsigned long long x = strtoull(s, &e, 10);
    if (*e == 'K' || *e == 'k')
        x *= 1024;
    return (size_t)x;
}

int main(int argc, char **argv)
{
    const char *sizes = "8,512,1K,2K,3K,4000";
    int mode = -1, ncpu = 0;
    g_iters = 200000;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--sizes") && a + 1 < argc)
            sizes = argv[++a];
        else if (!strcmp(argv[a], "-n") && a + 1 < argc)
            g_iters = atol(argv[++a]);
        else if (!strcmp(argv[a], "--pf") && a + 1 < argc)
            mode = atoi(argv[++a]);
        else if (argv[a][0] >= '0' && argv[a][0] <= '9' && ncpu < 2)
            cpus[ncpu++] = atoi(argv[a]);
        else {
            fprintf(stderr, "usage: ptl_copyfloor [--sizes LIST] [-n ITERS] [--pf 0-3] "
                            "[cpuA cpuB]\n");
            return 2;
        }
    }
    if (g_iters < 10 || mode > 3) {
        fprintf(stderr, "ptl_copyfloor: -n at least 10, --pf 0 to 3\n");
        return 2;
    }
    printf("# ptl_copyfloor: cpus %d and %d; half round trip of copy in, flag, copy out (us)\n",
           cpus[0], cpus[1]);
    printf("%8s %4s %10s\n", "size", "pf", "half_us");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        g_size = parse_size(tok);
        if (g_size > MAXSZ) {
            fprintf(stderr, "ptl_copyfloor: %s: at most %d bytes\n", tok, MAXSZ);
            return 2;
        }
        for (int m = mode < 0 ? 0 : mode; m <= (mode < 0 ? 3 : mode); m++) {
            g_mode = m;
            atomic_store(&boxes[0].seq, 0);
            atomic_store(&boxes[1].seq, 0);
            probe_pair_run(side);
            printf("%8zu %4d %10.3f\n", g_size, m, g_half_us);
            fflush(stdout);
        }
    }
    free(list);
    return 0;
}
