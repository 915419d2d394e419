/*
 * mp_manythreads - more threads on one NI than it has private command rings
 * (a thread per core of a large node, one rank): every thread's calls work,
 * and the order rules hold across the rings.
 *
 * Rank 0 starts T threads (default 160; the NI has PT_MAX_CMDQ - 1 = 127
 * private rings, the threads past them share the last one) and holds them at
 * a barrier before their first Portals call, so that all of them claim a ring
 * at once and live until the end. Each thread:
 *   - allocates an EQ and binds an MD (synchronous calls);
 *   - puts P messages of 16 bytes to rank 1 (PtlPutRegion from one MD, all
 *     posted before it waits: the rings fill, the shared one under its
 *     producers' turns), then waits with PtlEQWait for their SEND_ENDs (the
 *     data names the thread and the put); 
 *   - then all threads take turns, R rounds: thread k % T puts the k-th
 *     message and hands the turn on (a shared word), so the target must see
 *     them start in k order (§6.15, across threads: the stamps of the
 *     private rings and of the shared one's producers);
 *   - unlinks its MD and frees its EQ.
 * Rank 1's MDs take the puts at local offsets, in the order they start:
 * it checks every message's data, each thread's P puts in order, and the
 * turns in k order. Before the shared ring, the 128th worker's PtlEQAlloc
 * (the rank's 129th thread's) returned PTL_NO_SPACE.
 *
 *   usage (under ptlrun -n 2): mp_manythreads [threads] [puts] [rounds]
 */
#include "mp_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_MANY (MP_PT_USER + 0)
#define MSG     16
#define BULK    1 /* match bits of the first phase */
#define TURNS   2 /* and of the turns              */

static struct mp m;
static int nthreads, nputs, nrounds;
static pthread_barrier_t start_line, finish_line;
static _Atomic long turn;

struct msg {
    uint32_t thread, seq;   /* seq: the put's number in its thread, or the turn */
    uint64_t check;         /* thread * 1000003 + seq                          */
};

static void fill(struct msg *g, uint32_t t, uint32_t seq)
{
    g->thread = t;
    g->seq = seq;
    g->check = (uint64_t)t * 1000003u + seq;
}

/* Wait for the next SEND_END (the engine has read that put's bytes). */
static void send_end(ptl_handle_eq_t eq, uint32_t t)
{
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQWait(eq, &ev);
        if (rc != PTL_OK)
            mp_die("thread %u: PtlEQWait: %d", t, rc);
        if (ev.type == PTL_EVENT_SEND_END)
            break;
        if (ev.type != PTL_EVENT_SEND_START)
            mp_die("thread %u: unexpected event %d", t, (int)ev.type);
    }
}

static void put_at(ptl_handle_md_t md, int i, ptl_match_bits_t bits)
{
    MP_CHECK(PtlPutRegion(md, (ptl_size_t)i * sizeof(struct msg), sizeof(struct msg),
                          PTL_NO_ACK_REQ, m.ids[1], PT_MANY, 0, bits, 0, 0));
}

static void *worker(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    pthread_barrier_wait(&start_line);
    struct msg *buf = calloc((size_t)nputs + 1, sizeof *buf);
    if (!buf)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 2 * (ptl_size_t)nputs + 8, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = mp_bind(&m, buf, (ptl_size_t)(nputs + 1) * sizeof *buf,
                                 PTL_MD_THRESH_INF, 0, eq);
    for (int i = 0; i < nputs; i++) {
        fill(&buf[i], t, (uint32_t)i);
        put_at(md, i, BULK);
    }
    for (int i = 0; i < nputs; i++)
        send_end(eq, t);
    for (long k = t; k < (long)nthreads * nrounds; k += nthreads) {
        uint64_t t0 = mp_now_ms();
        while (atomic_load(&turn) != k) {
            if (mp_now_ms() - t0 > 60000)
                mp_die("thread %u waited 60 s for turn %ld (now %ld)", t, k, atomic_load(&turn));
            sched_yield(); /* many threads, 2 cores: let the others run */
        }
        fill(&buf[nputs], t, (uint32_t)k);
        put_at(md, nputs, TURNS);
        atomic_store(&turn, k + 1); /* after PtlPutRegion returned: initiated */
        send_end(eq, t);
    }
    pthread_barrier_wait(&finish_line); /* every ring stays claimed to the end */
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlEQFree(eq));
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    mp_init(&m, 2);
    nthreads = argc > 1 ? atoi(argv[1]) : 160;
    nputs = argc > 2 ? atoi(argv[2]) : 10;
    nrounds = argc > 3 ? atoi(argv[3]) : 3;
    if (nthreads < 1 || nputs < 0 || nrounds < 0)
        mp_die("usage: mp_manythreads [threads >= 1] [puts >= 0] [rounds >= 0]");
    const long bulk = (long)nthreads * nputs, turns = (long)nthreads * nrounds;

    ptl_handle_eq_t eq = PTL_EQ_NONE;
    struct msg *rx = NULL;
    if (m.rank == 1) {
        rx = calloc((size_t)(bulk + turns), sizeof *rx);
        if (!rx)
            mp_die("out of memory");
        MP_CHECK(PtlEQAlloc(m.ni, 2 * (ptl_size_t)(bulk + turns) + 16, PTL_EQ_HANDLER_NONE,
                            &eq));
        /* Bulk and turns land one after the other in one buffer each
         * (local offsets), PUT_START events only. */
        unsigned opt = PTL_MD_OP_PUT | PTL_MD_EVENT_END_DISABLE;
        mp_post(&m, PT_MANY, BULK, rx, (ptl_size_t)bulk * MSG + MSG, PTL_MD_THRESH_INF, opt, eq,
                PTL_RETAIN, NULL);
        mp_post(&m, PT_MANY, TURNS, rx + bulk, (ptl_size_t)turns * MSG + MSG, PTL_MD_THRESH_INF,
                opt, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    if (m.rank == 0) {
        pthread_t *th = calloc((size_t)nthreads, sizeof *th);
        pthread_attr_t attr;
        if (!th || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 256 * 1024) ||
            pthread_barrier_init(&start_line, NULL, (unsigned)nthreads) ||
            pthread_barrier_init(&finish_line, NULL, (unsigned)nthreads))
            mp_die("thread set-up");
        for (int t = 0; t < nthreads; t++)
            if (pthread_create(&th[t], &attr, worker, (void *)(uintptr_t)t))
                mp_die("pthread_create %d", t);
        for (int t = 0; t < nthreads; t++)
            pthread_join(th[t], NULL);
        pthread_attr_destroy(&attr);
        pthread_barrier_destroy(&start_line);
        pthread_barrier_destroy(&finish_line);
        free(th);
        printf("mp_manythreads: rank 0's %d threads put %ld + %ld messages\n", nthreads, bulk,
               turns);
    } else {
        uint32_t *next = calloc((size_t)nthreads, sizeof *next);
        if (!next)
            mp_die("out of memory");
        long seen_bulk = 0, seen_turn = 0;
        for (long i = 0; i < bulk + turns; i++) {
            ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_START, "a thread's put");
            if (ev.mlength != MSG)
                mp_die("put %ld: mlength %llu", i, (unsigned long long)ev.mlength);
            if (ev.match_bits == BULK) {
                seen_bulk++;
            } else if (ev.match_bits == TURNS) {
                seen_turn++;
            } else {
                mp_die("put %ld: match bits %llu", i, (unsigned long long)ev.match_bits);
            }
        }
        if (seen_bulk != bulk || seen_turn != turns)
            mp_die("%ld bulk and %ld turn puts, expected %ld and %ld", seen_bulk, seen_turn,
                   bulk, turns);
        /* Every put has started; wait for the data (its END is disabled):
         * the last one's bytes are in place once rank 0's barrier message,
         * posted after every thread's SEND_END, arrived behind them. */
        mp_barrier(&m);
        for (long i = 0; i < bulk; i++) {
            const struct msg *g = &rx[i];
            if (g->thread >= (uint32_t)nthreads || g->check != (uint64_t)g->thread * 1000003u + g->seq)
                mp_die("bulk put %ld: thread %u seq %u check %llu: corrupt", i, g->thread, g->seq,
                       (unsigned long long)g->check);
            if (g->seq != next[g->thread])
                mp_die("thread %u's put %u arrived where its put %u was due (§6.15)", g->thread,
                       g->seq, next[g->thread]);
            next[g->thread]++;
        }
        for (long k = 0; k < turns; k++) {
            const struct msg *g = &rx[bulk + k];
            if (g->seq != (uint32_t)k || g->thread != (uint32_t)(k % nthreads) ||
                g->check != (uint64_t)g->thread * 1000003u + g->seq)
                mp_die("turn %ld: got thread %u's turn %u: the turns started out of order "
                       "(§6.15)", k, g->thread, g->seq);
        }
        free(next);
        printf("mp_manythreads: OK %d threads, %ld puts in each thread's order, %ld turns in "
               "order\n", nthreads, bulk, turns);
    }
    if (m.rank == 0)
        mp_barrier(&m); /* rank 1's data check */
    mp_barrier(&m);
    mp_fini(&m);
    free(rx);
    return 0;
}
