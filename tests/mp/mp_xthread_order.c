/*
 * mp_xthread_order - two threads of one process initiate operations on
 * another one after the other; they start at the target in that order
 * (§6.15: operations A initiates on B start at B in initiation order).
 * Rank 0's threads take turns through a shared word: thread T puts (or
 * gets) and only then hands the turn to the other thread, which then
 * initiates its own. Rank 1 sees every START in turn order (PUT_START or
 * GET_START; match bits say which thread). With each thread's commands in
 * its own ring and the rings served in turn, the second thread's operation
 * started first in up to half of 20,000 pairs (an adversarial client, both
 * modes); now the engine takes the rings' heads in posting order.
 * A third thread keeps a third ring busy with puts to rank 1's other portal
 * (their order with the first two is not checked: only that they arrive).
 *
 *   usage (under ptlrun -n 2): mp_xthread_order [pairs] [bytes] [get 0|1]
 */
#include "mp_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_ORD   (MP_PT_USER + 0)
#define PT_OTHER (MP_PT_USER + 1)

static struct mp m;
static _Atomic int turn;
static _Atomic int stop_noise;
static int pairs, get;
static ptl_handle_md_t md_of[2], md_noise;

static void take_turn(int want)
{
    uint64_t t0 = mp_now_ms();
    while (atomic_load(&turn) != want)
        if (mp_now_ms() - t0 > 20000)
            mp_die("waited 20 s for turn %d", want);
        else
            sched_yield(); /* 2 cores: let the other threads run */
}

static void initiate(int t)
{
    MP_CHECK(get ? PtlGet(md_of[t], m.ids[1], PT_ORD, 0, (ptl_match_bits_t)(t + 1), 0)
                 : PtlPut(md_of[t], PTL_NO_ACK_REQ, m.ids[1], PT_ORD, 0,
                          (ptl_match_bits_t)(t + 1), 0, 0));
}

static void *second(void *arg)
{
    (void)arg;
    for (int i = 0; i < pairs; i++) {
        take_turn(2 * i + 1);
        initiate(1);
        atomic_store(&turn, 2 * i + 2);
    }
    return NULL;
}

static void *noise(void *arg)
{
    (void)arg;
    long n = 0;
    while (!atomic_load(&stop_noise)) {
        MP_CHECK(PtlPut(md_noise, PTL_NO_ACK_REQ, m.ids[1], PT_OTHER, 0, 9, 0, 0));
        n++;
    }
    return (void *)n;
}

int main(int argc, char **argv)
{
    mp_init(&m, 2);
    pairs = argc > 1 ? atoi(argv[1]) : 5000;
    size_t len = argc > 2 ? strtoul(argv[2], NULL, 0) : 8;
    get = argc > 3 ? atoi(argv[3]) : 0;
    if (pairs < 1)
        mp_die("usage: mp_xthread_order [pairs >= 1] [bytes] [get 0|1]");
    char *a = calloc(1, len + 1), *b = calloc(1, len + 1), *r = calloc(2, len + 1);
    char *nb = calloc(1, 64), *nr = calloc(1, 64);
    if (!a || !b || !r || !nb || !nr)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 4 * (ptl_size_t)pairs + 64, PTL_EQ_HANDLER_NONE, &eq));
    unsigned ops = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_END_DISABLE;
    if (m.rank == 1) {
        mp_post(&m, PT_ORD, 1, r, len, PTL_MD_THRESH_INF, ops, eq, PTL_RETAIN, NULL);
        mp_post(&m, PT_ORD, 2, r + len + 1, len, PTL_MD_THRESH_INF, ops, eq, PTL_RETAIN, NULL);
        mp_post(&m, PT_OTHER, 9, nr, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
                PTL_EQ_NONE, PTL_RETAIN, NULL);
    }
    md_of[0] = mp_bind(&m, a, len, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    md_of[1] = mp_bind(&m, b, len, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    md_noise = mp_bind(&m, nb, 64, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    mp_barrier(&m);
    if (m.rank == 0) {
        pthread_t t2, tn;
        if (pthread_create(&t2, NULL, second, NULL) || pthread_create(&tn, NULL, noise, NULL))
            mp_die("pthread_create");
        for (int i = 0; i < pairs; i++) {
            take_turn(2 * i);
            initiate(0);
            atomic_store(&turn, 2 * i + 1);
        }
        pthread_join(t2, NULL);
        atomic_store(&stop_noise, 1);
        void *n;
        pthread_join(tn, &n);
        printf("mp_xthread_order: rank 0 posted %d pairs and %ld other puts\n", pairs, (long)n);
    } else {
        ptl_event_kind_t start = get ? PTL_EVENT_GET_START : PTL_EVENT_PUT_START;
        for (int i = 0; i < 2 * pairs; i++) {
            ptl_event_t ev = mp_expect(eq, start, "an operation of the pairs");
            ptl_match_bits_t want = (ptl_match_bits_t)(i % 2 + 1);
            if (ev.match_bits != want)
                mp_die("operation %d of the pairs started from thread %llu, thread %llu's "
                       "came first in initiation order (pair %d)", i,
                       (unsigned long long)ev.match_bits, (unsigned long long)want, i / 2);
        }
        printf("mp_xthread_order: OK %d pairs of %s of %zu B in initiation order\n", pairs,
               get ? "gets" : "puts", len);
    }
    mp_barrier(&m);
    mp_fini(&m);
    free(a);
    free(b);
    free(r);
    free(nb);
    free(nr);
    return 0;
}
