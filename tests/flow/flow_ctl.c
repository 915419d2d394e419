/*
 * flow_ctl.c - a receiver that stops draining slows only its own senders
 * (issue 6, exhaustion). Four ranks:
 *   rank 3  the slow receiver: sends its OS pid to rank 0, then stops itself
 *           (SIGSTOP: the NIC thread stops too, so nothing drains its queues);
 *   rank 2  streams K puts to rank 3; its credits (ring entries, and the
 *           fast box's request lane) run out, so at most PTL_QUEUE_SLOTS +
 *           PT_SHM_FBLINES of them can leave until rank 3 drains;
 *   rank 0  ping-pongs with rank 1 while rank 3 is stopped: the unaffected
 *           pair must keep moving (a count of round trips, not a time);
 *           then it resumes rank 3 (SIGCONT).
 * After the resume every one of rank 2's K puts arrives, in order, intact.
 * Assertions are on counts only.
 */
#include "mp_util.h"
#include "shm_region.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define K 2000          /* puts from rank 2 to rank 3          */
#define PT_DATA (MP_PT_USER + 0)
#define PT_PID  (MP_PT_USER + 1)
#define PT_PING (MP_PT_USER + 2)
#define PT_GO   (MP_PT_USER + 3)
#define MIN_ROUND_TRIPS 200
#define STALL_MS 600

int main(void)
{
    struct mp m;
    mp_init(&m, 4);
    if (m.size != 4)
        mp_die("needs exactly 4 ranks");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 4 * K, PTL_EQ_HANDLER_NONE, &eq));
    static uint64_t slots[K];
    uint64_t pidbuf = 0, ping = 0, one = 1, go = 0;
    unsigned opts = PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE;

    if (m.rank == 3)
        mp_post(&m, PT_DATA, 0, slots, sizeof slots, PTL_MD_THRESH_INF,
                opts | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    if (m.rank == 0)
        mp_post(&m, PT_PID, 0, &pidbuf, sizeof pidbuf, 1, opts, eq, PTL_RETAIN, NULL);
    if (m.rank == 0 || m.rank == 1)
        mp_post(&m, PT_PING, 0, &ping, sizeof ping, PTL_MD_THRESH_INF, opts | PTL_MD_MANAGE_REMOTE,
                eq, PTL_RETAIN, NULL);
    if (m.rank == 2)
        mp_post(&m, PT_GO, 0, &go, sizeof go, 1, opts, eq, PTL_RETAIN, NULL);
    mp_barrier(&m);

    if (m.rank == 3) {
        uint64_t me = (uint64_t)getpid();
        ptl_handle_md_t md = mp_bind(&m, &me, sizeof me, 1, PTL_MD_EVENT_START_DISABLE, eq);
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[0], PT_PID, 0, 0, 0, 0));
        mp_expect(eq, PTL_EVENT_SEND_END, "pid to rank 0");
        mp_doing("stopped (SIGSTOP) until rank 0 resumes it");
        raise(SIGSTOP);
        mp_doing("draining rank 2's puts");
        for (int i = 0; i < K; i++) {
            ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "a put from rank 2");
            if (ev.offset != (uint64_t)i * 8)
                mp_die("put %d arrived at offset %llu: out of order", i,
                       (unsigned long long)ev.offset);
        }
        for (int i = 0; i < K; i++)
            if (slots[i] != (uint64_t)i + 1)
                mp_die("slot %d holds %llu", i, (unsigned long long)slots[i]);
        printf("rank 3: all %d puts arrived in order after the resume\n", K);
    } else if (m.rank == 0) {
        mp_expect(eq, PTL_EVENT_PUT_END, "rank 3's pid");
        pid_t pid3 = (pid_t)pidbuf;
        uint64_t t0 = mp_now_ms();
        while (!mp_os_stopped(pid3))
            if (mp_now_ms() - t0 > 10000)
                mp_die("rank 3 (pid %d) did not stop", (int)pid3);
        /* rank 3 is stopped: start rank 2's stream, then ping-pong with 1 */
        ptl_handle_md_t gmd = mp_bind(&m, &one, sizeof one, 1, PTL_MD_EVENT_START_DISABLE, eq);
        MP_CHECK(PtlPut(gmd, PTL_NO_ACK_REQ, m.ids[2], PT_GO, 0, 0, 0, 0));
        mp_expect(eq, PTL_EVENT_SEND_END, "go to rank 2");
        ptl_handle_md_t pmd = mp_bind(&m, &one, sizeof one, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE);
        static uint64_t zero = 0;
        ptl_handle_md_t smd = mp_bind(&m, &zero, sizeof zero, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE);
        int trips = 0;
        uint64_t tp = mp_now_ms();
        /* Keep rank 3 stopped for at least STALL_MS (so rank 2 surely runs
         * out of credits); the assertion is on the count of round trips. */
        for (; trips < MIN_ROUND_TRIPS || mp_now_ms() - tp < STALL_MS; trips++) {
            MP_CHECK(PtlPut(pmd, PTL_NO_ACK_REQ, m.ids[1], PT_PING, 0, 0, 0, 0));
            mp_expect(eq, PTL_EVENT_PUT_END, "pong from rank 1");
        }
        if (!mp_os_stopped(pid3))
            mp_die("rank 3 resumed early: the measurement is void");
        printf("rank 0: %d round trips with rank 1 while rank 3 was stopped (%llu ms)\n", trips, (unsigned long long)(mp_now_ms() - tp));
        MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[1], PT_PING, 0, 0, 0, 0)); /* "stop" */
        kill(pid3, SIGCONT);
    } else if (m.rank == 1) {
        ptl_handle_md_t pmd = mp_bind(&m, &one, sizeof one, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, PTL_EQ_NONE);
        for (;;) { /* ping carries 1; "stop" carries 0 */
            mp_expect(eq, PTL_EVENT_PUT_END, "ping from rank 0");
            if (ping == 0)
                break;
            MP_CHECK(PtlPut(pmd, PTL_NO_ACK_REQ, m.ids[0], PT_PING, 0, 0, 0, 0));
        }
    } else { /* rank 2 */
        mp_expect(eq, PTL_EVENT_PUT_END, "go from rank 0");
        static uint64_t vals[K];
        ptl_handle_md_t md = mp_bind(&m, vals, sizeof vals, PTL_MD_THRESH_INF,
                                     PTL_MD_EVENT_START_DISABLE, eq);
        int sent_before_block = -1, ends = 0;
        for (int i = 0; i < K; i++) {
            vals[i] = (uint64_t)i + 1;
            uint64_t t = mp_now_ms();
            int ends_before = ends;
            MP_CHECK(PtlPutRegion(md, (ptl_size_t)i * 8, 8, PTL_NO_ACK_REQ, m.ids[3], PT_DATA, 0,
                                  0, (ptl_size_t)i * 8, 0));
            ptl_event_t ev;
            while (PtlEQGet(eq, &ev) == PTL_OK)
                ends += ev.type == PTL_EVENT_SEND_END;
            if (sent_before_block < 0 && mp_now_ms() - t > 100)
                sent_before_block = ends_before; /* PtlPut waited: flow-controlled */
        }
        while (ends < K) {
            mp_expect(eq, PTL_EVENT_SEND_END, "send completion to rank 3");
            ends++;
        }
        /* Credits: the ring's entries (PTL_QUEUE_SLOTS, 32; 64 leaves room for
         * what rank 3 took before it stopped) and, once rank 2 has claimed a
         * fast box at rank 3, the request lane's PT_SHM_FBLINES lines
         * (transport/shm_region.h, "Fast boxes": a lane is credit beside
         * the ring).
         * Boxes are on unless PTL_SHM_FBOX=0 (util/config.c). */
        const char *qs = getenv("PTL_QUEUE_SLOTS"), *fb = getenv("PTL_SHM_FBOX");
        int credits = (qs ? atoi(qs) : 64) + (fb && atoi(fb) == 0 ? 0 : (int)PT_SHM_FBLINES);
        if (sent_before_block < 0)
            mp_die("never flow-controlled: %d puts left while rank 3 was stopped", K);
        if (sent_before_block > credits)
            mp_die("%d puts left while rank 3 was stopped, more than its %d credits",
                   sent_before_block, credits);
        printf("rank 2: flow-controlled after %d puts (credits %d); all %d completed\n",
               sent_before_block, credits, K);
    }
    mp_fini(&m);
    return 0;
}
