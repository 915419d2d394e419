/*
 * kill_random.c - one rank of three dies by SIGKILL at a random point of
 * mixed traffic (issue 6, faults). Run under ptlrun by kill_random.sh, which
 * repeats it with 50 seeds. The seed chooses:
 *   victim  seed % 3
 *   phase   (seed / 3) % 3:
 *           0  during eager traffic, after a random number of iterations
 *           1  inside a rendezvous: the victim is the target of an 8 MiB put
 *              and dies as soon as it sees PUT_START (its engine is pulling)
 *           2  while the others are blocked in PtlEQWait: the victim goes
 *              quiet for a moment (they wait for its messages), then dies
 * Every rank sends to rank+1 (64 B eager puts, and every 16th iteration an
 * 8 MiB put) and gets 4 KiB from rank-1 every 8th iteration. The victim dies
 * only once it has seen a put from rank-1 and a get from rank+1: both
 * survivors have then left the start-up barrier (a rank still waiting there
 * for rank 0's "go" when the job fails cannot tell a barrier from traffic). A survivor must
 * notice the failure by itself - PtlEQWait returning an error, an event with
 * ni_fail_type != PTL_NI_OK, or a call refused - print "survivor" and exit 0.
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PT_SMALL (MP_PT_USER + 0)
#define PT_BIG (MP_PT_USER + 1)
#define PT_GET (MP_PT_USER + 2)
#define BIG (8u << 20)
#define ITERS 100000

static void survived(unsigned rank, const char *how)
{
    printf("rank %u: survivor: %s\n", rank, how);
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        mp_die("usage: kill_random SEED");
    unsigned seed = (unsigned)strtoul(argv[1], NULL, 0);
    struct mp m;
    mp_init(&m, 3);
    unsigned victim = seed % m.size, phase = (seed / 3) % 3;
    srand(seed * 7919u + m.rank);
    unsigned when = 5 + (unsigned)(rand() % 300); /* iteration of death (phases 0, 2) */
    unsigned next = (m.rank + 1) % m.size, prev = (m.rank + m.size - 1) % m.size;

    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
    static uint8_t small[1 << 16], getsrc[4096], getdst[4096], sbuf[64];
    uint8_t *big = malloc(BIG), *bigsrc = malloc(BIG);
    if (!big || !bigsrc)
        mp_die("out of memory");
    memset(bigsrc, m.rank, BIG);
    unsigned o = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE;
    mp_post(&m, PT_SMALL, 0, small, sizeof small, PTL_MD_THRESH_INF, o, eq, PTL_RETAIN, NULL);
    mp_post(&m, PT_BIG, 0, big, BIG, PTL_MD_THRESH_INF, o, eq, PTL_RETAIN, NULL);
    mp_post(&m, PT_GET, 0, getsrc, sizeof getsrc, PTL_MD_THRESH_INF,
            PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    ptl_handle_md_t smd = mp_bind(&m, sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, eq);
    ptl_handle_md_t bmd = mp_bind(&m, bigsrc, BIG, PTL_MD_THRESH_INF, 0, eq);
    ptl_handle_md_t gmd = mp_bind(&m, getdst, sizeof getdst, PTL_MD_THRESH_INF, 0, eq);
    mp_barrier(&m);

    bool me_victim = m.rank == victim;
    bool heard_prev = false, heard_next = false; /* both survivors are in the traffic */
    unsigned outstanding = 0; /* operations whose END we have not seen */
    for (unsigned i = 0; i < ITERS; i++) {
        const bool armed = heard_prev && heard_next;
        if (me_victim && phase == 0 && i >= when && armed)
            raise(SIGKILL);
        if (me_victim && phase == 2 && i >= when && armed) {
            struct timespec ts = {0, 50 * 1000 * 1000}; /* the others block on us */
            nanosleep(&ts, NULL);
            raise(SIGKILL);
        }
        int rc = PtlPut(smd, PTL_NO_ACK_REQ, m.ids[next], PT_SMALL, 0, 0, (i % 1024) * 64, i);
        if (rc != PTL_OK)
            survived(m.rank, PtlErrorStr(rc));
        outstanding++;
        if (i % 16 == 0 && (!me_victim || phase != 1)) {
            rc = PtlPut(bmd, PTL_ACK_REQ, m.ids[next], PT_BIG, 0, 0, 0, i);
            if (rc != PTL_OK)
                survived(m.rank, PtlErrorStr(rc));
            outstanding++;
        }
        if (i % 8 == 0) {
            rc = PtlGet(gmd, m.ids[prev], PT_GET, 0, 0, 0);
            if (rc != PTL_OK)
                survived(m.rank, PtlErrorStr(rc));
            outstanding++;
        }
        /* Drain; block (PtlEQWait) while too much is in flight. */
        for (;;) {
            ptl_event_t ev;
            rc = outstanding > 32 ? PtlEQWait(eq, &ev) : PtlEQGet(eq, &ev);
            if (rc == PTL_EQ_EMPTY)
                break;
            if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
                survived(m.rank, PtlErrorStr(rc));
            if (ev.ni_fail_type != PTL_NI_OK)
                survived(m.rank, PtlNIFailStr(m.ni, ev.ni_fail_type));
            if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_SMALL)
                heard_prev = true;
            if (ev.type == PTL_EVENT_GET_END && ev.pt_index == PT_GET)
                heard_next = true;
            if (me_victim && phase == 1 && ev.type == PTL_EVENT_PUT_START &&
                ev.pt_index == PT_BIG && heard_prev && heard_next)
                raise(SIGKILL); /* our engine is pulling 8 MiB from prev */
            if (ev.type == PTL_EVENT_SEND_END || ev.type == PTL_EVENT_REPLY_END)
                outstanding--;
            if (outstanding <= 32)
                break;
        }
    }
    /* Traffic never ends before the victim dies; reaching here means nobody
     * died (a victim whose phase never came): wait for the failure anyway. */
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQWait(eq, &ev);
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
            survived(m.rank, PtlErrorStr(rc));
        if (ev.ni_fail_type != PTL_NI_OK)
            survived(m.rank, PtlNIFailStr(m.ni, ev.ni_fail_type));
    }
}
