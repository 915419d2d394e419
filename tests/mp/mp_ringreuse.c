/*
 * mp_ringreuse - a thread that exits with commands still queued does not
 * hold up the threads that come after it. Rank 2 is stopped (SIGSTOP, by
 * rank 0, which learns its OS pid through a put). Thread A of rank 0 posts
 * 200 puts to it (all accepted; most wait in A's command ring for credits)
 * and exits. Then threads B1 and B2 each allocate an EQ and make 2,000
 * ACKed puts to rank 1, which is alive: each finishes within seconds. The
 * command ring of an exited thread went to the next thread that asked even
 * with commands in it, and, each ring being first in first out, the new
 * thread's commands (its synchronous PtlEQAlloc too) waited behind the puts
 * to the stopped rank without bound (an adversarial client: 6 of 6 runs,
 * both modes). Now a ring is reused only once the engine has taken all it
 * held. Then rank 2 is continued and A's puts arrive.
 *
 *   usage (under ptlrun -n 3, PTL_QUEUE_SLOTS=4): mp_ringreuse
 */
#include "mp_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PT_IN  (MP_PT_USER + 0)
#define PT_PID (MP_PT_USER + 1)
#define NA 200
#define NB 2000

static struct mp m;
static char sbuf[64];
static _Atomic long a_sent;

static void *thread_a(void *arg)
{
    (void)arg;
    ptl_handle_md_t md = mp_bind(&m, sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    for (int i = 0; i < NA; i++) {
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[2], PT_IN, 0, 1, 0, (ptl_hdr_data_t)i));
        atomic_fetch_add(&a_sent, 1);
    }
    return NULL; /* exits with its puts still queued */
}

static void *thread_b(void *arg)
{
    int t = (int)(intptr_t)arg;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = mp_bind(&m, sbuf, sizeof sbuf, PTL_MD_THRESH_INF,
                                 PTL_MD_EVENT_START_DISABLE, eq);
    uint64_t t0 = mp_now_ms();
    for (int i = 0; i < NB; i++) {
        MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[1], PT_IN, 0, 1, 0, (ptl_hdr_data_t)i));
        for (int k = 0; k < 2; k++) { /* SEND_END and ACK */
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, 10000))
                mp_die("thread B%d: put %d to the live rank stuck 10 s behind an exited "
                       "thread's puts to the stopped one", t, i);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("thread B%d: put %d failed (%u)", t, i, ev.ni_fail_type);
        }
    }
    mp_log("thread B%d: %d ACKed puts to rank 1 in %llu ms", t, NB,
           (unsigned long long)(mp_now_ms() - t0));
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlEQFree(eq));
    return NULL;
}

int main(void)
{
    mp_init(&m, 3);
    static char rbuf[64];
    static uint64_t pidbuf;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 4 * NA + 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 0)
        mp_post(&m, PT_PID, 1, &pidbuf, sizeof pidbuf, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq,
                PTL_RETAIN, NULL);
    else
        mp_post(&m, PT_IN, 1, rbuf, sizeof rbuf, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE,
                m.rank == 2 ? eq : PTL_EQ_NONE, PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (m.rank == 2) {
        uint64_t me = (uint64_t)getpid();
        ptl_handle_md_t md = mp_bind(&m, &me, sizeof me, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[0], PT_PID, 0, 1, 0, 0));
    }
    if (m.rank == 0) {
        mp_expect(eq, PTL_EVENT_PUT_START, "rank 2's pid");
        mp_expect(eq, PTL_EVENT_PUT_END, "rank 2's pid");
        if (kill((pid_t)pidbuf, SIGSTOP))
            mp_die("cannot stop rank 2 (pid %llu)", (unsigned long long)pidbuf);
        pthread_t a, b1, b2;
        if (pthread_create(&a, NULL, thread_a, NULL))
            mp_die("pthread_create");
        pthread_join(a, NULL); /* gone, its ring free for the next thread */
        if (pthread_create(&b1, NULL, thread_b, (void *)1) ||
            pthread_create(&b2, NULL, thread_b, (void *)2))
            mp_die("pthread_create");
        pthread_join(b1, NULL);
        pthread_join(b2, NULL);
        kill((pid_t)pidbuf, SIGCONT);
        printf("mp_ringreuse: OK threads B1 and B2 were not held up by thread A's %ld "
               "queued puts\n", atomic_load(&a_sent));
    }
    if (m.rank == 2) { /* continued: A's puts arrive */
        for (int i = 0; i < NA; i++)
            mp_expect(eq, PTL_EVENT_PUT_END, "one of thread A's puts");
    }
    mp_barrier(&m);
    mp_fini(&m);
    return 0;
}
