/*
 * mp_progress - progress does not depend on the target application calling in
 * (offload mode): the target's NIC thread serves a get, an acknowledged put
 * and a rendezvous put while the target application computes without making
 * any Portals call.
 *
 * The target first answers a burst of ping-pongs, so that it leaves its last
 * PtlEQWait the way a busy application does: it ran the engine itself while
 * its NIC thread slept, and on leaving it left its doorbell poll claim up as
 * the poll lease (engine/wait.h L1): peers do not ring until the NIC thread
 * ends the lease (T1, L2: within two PTL_WAIT_LEASE_US periods), or, with
 * leases off, from its D4 on. Rank 0
 * then issues the three operations and requires their completions
 * (REPLY_END, ACK, SEND_END of the rendezvous) long before the target's
 * computation ends: COMPUTE_MS, against a bound of COMPUTE_MS / 2 (the bound
 * only separates "progressed by the NIC thread" from "progressed when the
 * application came back"). A lease that nobody ends, or a NIC thread that
 * was not rung, fails it.
 *
 * Host-matching mode has no NIC thread, so there progress is the caller's by
 * design: the program then checks only that everything completes after the
 * target comes back.
 *
 * Run with PTL_NIC_CPU=0 and =1 under ptlrun --cpus 0,1: rank 1's NIC thread
 * then has a core of its own or shares rank 1's.
 *
 * MP_PROGRESS_SPIN=1: the target takes its pings by spinning on PtlEQGet
 * instead of PtlEQWait, so it leaves the lease of a spinner's last look
 * (engine/wait.c pt_wait_look) when it starts computing, after a burst in
 * which the NIC thread's timed sleep grew to PTL_WAIT_LEASE_MAX_US.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_PING (MP_PT_USER + 0)
#define PT_DATA (MP_PT_USER + 1)
#define PINGS 200
#define COMPUTE_MS 4000
#define BIG (1u << 20) /* rendezvous */

static volatile uint64_t g_sink;

/* Busy computation: no Portals call, the core stays busy (a sleeping
 * application would leave its core to the NIC thread for free). */
static void compute(unsigned ms)
{
    uint64_t end = mp_now_ms() + ms, x = 1;
    while (mp_now_ms() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    g_sink = x;
}

/* The ping by spinning on PtlEQGet (a client that polls). */
static void spin_expect(ptl_handle_eq_t eq, ptl_event_kind_t k, const char *what)
{
    ptl_event_t ev;
    uint64_t end = mp_now_ms() + MP_WAIT_MS;
    int rc;
    while ((rc = PtlEQGet(eq, &ev)) == PTL_EQ_EMPTY)
        if (mp_now_ms() > end)
            mp_die("%s: no %s within %d ms of PtlEQGet", what, PtlEventKindStr(k), MP_WAIT_MS);
    if (rc != PTL_OK)
        mp_die("%s: PtlEQGet: %s", what, PtlErrorStr(rc));
    if (ev.type != k)
        mp_die("%s: expected %s, got %s", what, PtlEventKindStr(k), PtlEventKindStr(ev.type));
}

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    const char *off = getenv("PTL_OFFLOAD");
    const bool offload = !off || atoi(off) != 0;
    const char *sp = getenv("MP_PROGRESS_SPIN");
    const bool spin = sp && atoi(sp) != 0;
    const ptl_process_id_t target = m.ids[1], ini = m.ids[0];
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    static uint8_t small[64], got[64], big[BIG], bigsrc[BIG];
    uint64_t ping = 0;
    ptl_handle_md_t pmd = mp_bind(&m, &ping, sizeof ping, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, eq);
    uint64_t pbuf = 0;
    if (m.rank <= 1)
        mp_post(&m, PT_PING, 0, &pbuf, sizeof pbuf, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    if (m.rank == 1) {
        mp_fill(small, sizeof small, 1, 1, 0);
        mp_post(&m, PT_DATA, 1, small, sizeof small, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
        mp_post(&m, PT_DATA, 2, got, sizeof got, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
        mp_post(&m, PT_DATA, 3, big, BIG, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    }
    mp_barrier(&m);

    if (m.rank == 0) {
        static const ptl_event_kind_t kp[] = {PTL_EVENT_SEND_END, PTL_EVENT_PUT_END};
        for (int i = 0; i < PINGS; i++) {
            MP_CHECK(PtlPut(pmd, PTL_NOACK_REQ, target, PT_PING, 0, 0, 0, (ptl_hdr_data_t)i));
            mp_expect_all(eq, kp, 2, NULL, "ping and pong");
        }
        /* The target now computes, its claim parked. */
        uint8_t rep[64], src[64];
        memset(rep, 0, sizeof rep);
        mp_fill(src, sizeof src, 0, 2, 0);
        mp_fill(bigsrc, BIG, 0, 3, 0);
        ptl_handle_md_t gmd = mp_bind(&m, rep, sizeof rep, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE, eq);
        ptl_handle_md_t smd = mp_bind(&m, src, sizeof src, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE, eq);
        ptl_handle_md_t bmd = mp_bind(&m, bigsrc, BIG, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE, eq);
        uint64_t t0 = mp_now_ms();
        MP_CHECK(PtlGet(gmd, target, PT_DATA, 0, 1, 0));
        MP_CHECK(PtlPut(smd, PTL_ACK_REQ, target, PT_DATA, 0, 2, 0, 0));
        MP_CHECK(PtlPut(bmd, PTL_NOACK_REQ, target, PT_DATA, 0, 3, 0, 0));
        static const ptl_event_kind_t k[] = {PTL_EVENT_REPLY_END, PTL_EVENT_SEND_END,
                                             PTL_EVENT_ACK, PTL_EVENT_SEND_END};
        mp_expect_all(eq, k, 4, NULL, "get, acked put and rendezvous put to a computing target");
        uint64_t dt = mp_now_ms() - t0;
        if (mp_check_pattern(rep, sizeof rep, 1, 1, 0) >= 0)
            mp_die("the reply's data is wrong");
        if (offload && dt > COMPUTE_MS / 2)
            mp_die("the target's NIC thread took %llu ms to serve a get, an acked put and a "
                   "rendezvous put while its application computed (%d ms): progress waited "
                   "for the application",
                   (unsigned long long)dt, COMPUTE_MS);
        printf("rank 0: served in %llu ms while the target computed (%s mode)\n",
               (unsigned long long)dt, offload ? "offload" : "host-matching");
    } else if (m.rank == 1) {
        for (int i = 0; i < PINGS; i++) {
            if (spin) {
                spin_expect(eq, PTL_EVENT_PUT_END, "ping");
                MP_CHECK(PtlPut(pmd, PTL_NOACK_REQ, ini, PT_PING, 0, 0, 0, (ptl_hdr_data_t)i));
                spin_expect(eq, PTL_EVENT_SEND_END, "pong");
                continue;
            }
            mp_expect(eq, PTL_EVENT_PUT_END, "ping");
            MP_CHECK(PtlPut(pmd, PTL_NOACK_REQ, ini, PT_PING, 0, 0, 0, (ptl_hdr_data_t)i));
            mp_expect(eq, PTL_EVENT_SEND_END, "pong");
        }
        compute(COMPUTE_MS); /* no Portals call in here */
        static const ptl_event_kind_t k[] = {PTL_EVENT_GET_END, PTL_EVENT_PUT_END,
                                             PTL_EVENT_PUT_END};
        ptl_event_t ev[3];
        mp_expect_all(eq, k, 3, ev, "get and puts served while computing");
        if (mp_check_pattern(got, sizeof got, 0, 2, 0) >= 0)
            mp_die("the acked put's data is wrong");
        if (mp_check_pattern(big, BIG, 0, 3, 0) >= 0)
            mp_die("the rendezvous put's data is wrong");
    }
    mp_barrier(&m);
    if (m.rank == 0)
        printf("progress OK\n");
    mp_fini(&m);
    return 0;
}
