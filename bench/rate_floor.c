/*
 * rate_floor.c - the floor under a small-message rate: two threads pinned to
 * two cpus, a sender that writes 8 B messages into a lane of 64-byte lines
 * (one line each, published by its sequence word, as libportals' fast-box
 * lanes and Open MPI's fast boxes do) and a receiver that spins on the line
 * at its head, reads the message and hands its head back every 16
 * messages. No matching, no events, no queue: what the hand-over of one
 * line per message costs, with and without the sender's full fence after
 * each message.
 *
 * The fence is the one libportals' waiting protocol puts between a
 * message's publication and the look at the receiver's doorbell (F-SND,
 * docs/waiting.md): a receiver may be asleep, and a wake-up must never be
 * lost. A full fence waits for every earlier store to leave the store
 * buffer, and the store of a line the receiver is polling leaves only once
 * the receiver's copy is invalidated: one core-to-core transfer per message
 * on the sender, where a sender without the fence (Open MPI's: its receiver
 * never sleeps) overlaps the transfers of many messages.
 *
 *   usage: ptl_ratefloor [-n MSGS] [--fence MODE] [cpuA cpuB]
 *     -n MSGS       messages per mode (default 2000000; the first tenth warms)
 *     --fence MODE  0: no fence; 1: a full fence and a load of the doorbell
 *                   after every message; 64: the same once per 64 messages
 *                   (default: all three)
 * Output: one line per mode, "fence M-msgs-per-s ns-per-msg". Speed only;
 * compare with `ptl_msgrate` and `mpibench rate` taken in the same minutes
 * (this VM's core-to-core latency moves from minute to minute: bench/c2c.c).
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

#define LINES 64u      /* the lane, a power of two */
#define HEAD_EVERY 16u /* the receiver hands its head back this often */

struct line {
    _Alignas(64) _Atomic uint64_t seq; /* message number + 1 once whole */
    uint64_t payload;
};

static struct line lane[LINES];
static _Alignas(64) _Atomic uint64_t rx_head; /* messages the receiver consumed */
static _Alignas(64) _Atomic uint32_t sleepers; /* the doorbell: never set here */
static _Alignas(64) uint64_t g_sum;           /* the receiver's checksum */
static long g_msgs;
static int g_fence, cpus[2] = {0, 1};
static double g_ns;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void sender(void)
{
    uint64_t head = 0, rings = 0;
    long warm = g_msgs / 10;
    double t0 = 0;
    for (uint64_t i = 0; i < (uint64_t)g_msgs; i++) {
        if ((long)i == warm)
            t0 = probe_now_ns();
        while (i - head >= LINES) { /* full: where is the receiver? */
            head = atomic_load_explicit(&rx_head, memory_order_acquire);
            if (i - head >= LINES)
                relax();
        }
        struct line *ln = &lane[i & (LINES - 1)];
        ln->payload = i;
        atomic_store_explicit(&ln->seq, i + 1, memory_order_release);
        if (g_fence && (i + 1) % (uint64_t)g_fence == 0) {
            atomic_thread_fence(memory_order_seq_cst); /* F-SND */
            rings += atomic_load_explicit(&sleepers, memory_order_relaxed);
        }
    }
    /* the last message consumed */
    while (atomic_load_explicit(&rx_head, memory_order_acquire) < (uint64_t)g_msgs)
        relax();
    g_ns = (probe_now_ns() - t0) / (double)(g_msgs - warm);
    if (rings)
        fprintf(stderr, "ptl_ratefloor: the doorbell rang\n");
}

static void receiver(void)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < (uint64_t)g_msgs; i++) {
        struct line *ln = &lane[i & (LINES - 1)];
        while (atomic_load_explicit(&ln->seq, memory_order_acquire) != i + 1)
            relax();
        sum += ln->payload;
        if ((i + 1) % HEAD_EVERY == 0 || i + 1 == (uint64_t)g_msgs)
            atomic_store_explicit(&rx_head, i + 1, memory_order_release);
    }
    g_sum = sum;
}

static void *side(void *arg)
{
    int me = (int)(intptr_t)arg;
    probe_pin(cpus[me]);
    probe_pair_ready();
    if (me == 0)
        sender();
    else
        receiver();
    return NULL;
}

int main(int argc, char **argv)
{
    int mode = -1, ncpu = 0;
    g_msgs = 2000000;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-n") && a + 1 < argc)
            g_msgs = atol(argv[++a]);
        else if (!strcmp(argv[a], "--fence") && a + 1 < argc)
            mode = atoi(argv[++a]);
        else if (argv[a][0] >= '0' && argv[a][0] <= '9' && ncpu < 2)
            cpus[ncpu++] = atoi(argv[a]);
        else {
            fprintf(stderr, "usage: ptl_ratefloor [-n MSGS] [--fence 0|1|64] [cpuA cpuB]\n");
            return 2;
        }
    }
    if (g_msgs < 100 || (mode != -1 && mode != 0 && mode != 1 && mode != 64)) {
        fprintf(stderr, "ptl_ratefloor: -n at least 100, --fence 0, 1 or 64\n");
        return 2;
    }
    printf("# ptl_ratefloor: cpus %d and %d; 8 B messages, one 64 B line each, lane of %u\n",
           cpus[0], cpus[1], LINES);
    printf("%6s %10s %10s\n", "fence", "M_msgs_s", "ns_msg");
    static const int modes[] = {0, 1, 64};
    for (int k = 0; k < 3; k++) {
        if (mode >= 0 && modes[k] != mode)
            continue;
        g_fence = modes[k];
        for (uint32_t j = 0; j < LINES; j++)
            atomic_store(&lane[j].seq, 0);
        atomic_store(&rx_head, 0);
        probe_pair_run(side);
        uint64_t want = (uint64_t)g_msgs * (uint64_t)(g_msgs - 1) / 2;
        if (g_sum != want) {
            fprintf(stderr, "ptl_ratefloor: receiver's checksum %llu, expected %llu\n",
                    (unsigned long long)g_sum, (unsigned long long)want);
            return 1;
        }
        printf("%6d %10.2f %10.1f\n", g_fence, 1e3 / g_ns, g_ns);
        fflush(stdout);
    }
    return 0;
}
