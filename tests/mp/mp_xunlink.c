/*
 * mp_xunlink - a put that PtlPut accepted is not lost to an unlink from
 * another thread (§6.12). Rank 0's thread A binds an MD and puts from it;
 * only after PtlPut returned does thread B call PtlMDUnlink on that MD. Each
 * thread has its own command ring and the engine serves the rings in turn,
 * so B's unlink could run first: the put then found no MD and was dropped
 * without an event (an adversarial client found 2% of 1,000 puts lost, both
 * modes). Now the unlink says PTL_MD_IN_USE while the put is queued, or the
 * put went first. Either way every put arrives at rank 1 (PUT_END, data
 * checked), rank 0 gets the put's SEND_START and SEND_END (and its ACK when
 * asked), and PTL_SR_DROP_COUNT stays 0.
 *
 *   usage (under ptlrun -n 2): mp_xunlink [iterations] [bytes] [ack 0|1]
 */
#include "mp_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_IN (MP_PT_USER + 0)

static _Atomic int stage; /* 0 idle; 1: A's put returned, B unlinks; 2: B done */
static _Atomic uint32_t cur; /* the MD of this iteration (a ptl_handle_md_t) */
static _Atomic int unlink_rc;
static int iters;

static void wait_stage(int want)
{
    uint64_t t0 = mp_now_ms();
    /* Spin first: the unlink must follow the put at once to meet it in the
     * ring; then yield (2 cores, a NIC thread beside: waits that only spin
     * cost a scheduler tick per hand-over). */
    for (unsigned spins = 0; atomic_load(&stage) != want; spins++)
        if (mp_now_ms() - t0 > 20000)
            mp_die("waited 20 s for the other thread (stage %d)", want);
        else if (spins > 20000)
            sched_yield();
}

static void *unlinker(void *arg)
{
    (void)arg;
    for (int i = 0; i < iters; i++) {
        wait_stage(1);
        atomic_store(&unlink_rc, PtlMDUnlink((ptl_handle_md_t)atomic_load(&cur)));
        atomic_store(&stage, 2);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    iters = argc > 1 ? atoi(argv[1]) : 1000;
    size_t len = argc > 2 ? strtoul(argv[2], NULL, 0) : 64;
    int ack = argc > 3 ? atoi(argv[3]) : 0;
    if (iters < 1 || len < 1)
        mp_die("usage: mp_xunlink [iterations >= 1] [bytes >= 1] [ack 0|1]");
    char *sbuf = malloc(len), *rbuf = malloc(len * (size_t)iters);
    if (!sbuf || !rbuf)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 1) /* every put lands in its own place: offset i * len */
        mp_post(&m, PT_IN, 1, rbuf, len * (size_t)iters, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (m.rank == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, unlinker, NULL))
            mp_die("pthread_create");
        int ok = 0, inuse = 0, want = ack ? 3 : 2;
        for (int i = 0; i < iters; i++) {
            mp_fill(sbuf, len, 0, 1, (uint64_t)i * len);
            ptl_handle_md_t md = mp_bind(&m, sbuf, len, PTL_MD_THRESH_INF, 0, eq);
            atomic_store(&cur, (uint32_t)md);
            MP_CHECK(PtlPut(md, ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ, m.ids[1], PT_IN, 0, 1,
                            (ptl_size_t)i * len, 0));
            atomic_store(&stage, 1); /* B's unlink comes after our PtlPut returned */
            wait_stage(2);
            atomic_store(&stage, 0);
            int rc = atomic_load(&unlink_rc);
            if (rc == PTL_OK)
                ok++;
            else if (rc == PTL_MD_IN_USE)
                inuse++;
            else
                mp_die("iteration %d: PtlMDUnlink: %s", i, PtlErrorStr(rc));
            /* The put's events, whichever went first. */
            int got = 0;
            ptl_event_t ev;
            while (got < want && mp_poll(eq, &ev, 5000)) {
                if (ev.ni_fail_type != PTL_NI_OK)
                    mp_die("iteration %d: event %d failed (%u)", i, ev.type, ev.ni_fail_type);
                got++;
            }
            if (got < want)
                mp_die("iteration %d: PtlPut returned PTL_OK, the unlink said %s, and %d of "
                       "its %d events came (the put was dropped)", i, PtlErrorStr(rc), got, want);
            if (rc == PTL_MD_IN_USE)
                MP_CHECK(PtlMDUnlink(md)); /* done now */
        }
        pthread_join(t, NULL);
        if (mp_drops(&m))
            mp_die("%lld operations dropped", (long long)mp_drops(&m));
        printf("mp_xunlink: OK %d puts of %zu B: unlink after the put %d, in use %d\n", iters,
               len, ok, inuse);
    } else {
        for (int i = 0; i < iters; i++) {
            ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "a put");
            if (ev.mlength != len)
                mp_die("put of %llu bytes, %zu expected", (unsigned long long)ev.mlength, len);
        }
        int64_t bad = mp_check_pattern(rbuf, len * (size_t)iters, 0, 1, 0);
        if (bad >= 0)
            mp_die("byte %lld of the puts differs", (long long)bad);
    }
    mp_barrier(&m);
    mp_fini(&m);
    free(sbuf);
    free(rbuf);
    return 0;
}
