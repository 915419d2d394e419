/*
 * mp_forged_bell - a rank that keeps writing another rank's doorbell
 * `polled` word (so that peers skip waking it) cannot stall that rank's
 * other peers (issue 12 item 11).
 *
 * Rank 2 maps the job region and, until rank 0 says done, keeps setting rank
 * 0's bell.polled to 1 (a plausible count: peers take it for a polling
 * waiter and do not ring). Rank 0's engine is asleep: in offload mode its
 * application computes for 3 s (no Portals call) and its NIC thread sleeps;
 * in host mode its application sleeps in PtlEQWait. Rank 1 gets 8 bytes from
 * rank 0, 50 times. Before, nobody woke rank 0's engine: the gets waited for
 * rank 0's application (offload) or for ever (host). Expected: the engine's
 * backstop finds the work (PTL_WAKE_BACKSTOP_MS), logs the fault, repairs
 * the word and from then on sleeps at most 1 ms, or a sleeper's check before
 * it sleeps finds the forged count first, logs it and puts it right: all 50
 * gets are served within 2 s, while rank 0's application still computes. (A
 * watchdog bound, not a speed measurement.)
 *
 * `rung` (D1R, util/futex.h): rank 2 keeps setting rank 0's bell.rung to 1
 * instead, so that a peer that finds the NIC thread asleep takes the ring
 * for done by somebody else. The same bound holds (the backstop, then 1 ms
 * sleeps; the sleeper also clears rung at each announcement).
 *
 *   usage: ptlrun -n 3 mp_forged_bell [polled|rung]   (memfd region: rank 2 maps it)
 */
#include "mp_util.h"
#include "shm_region.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PT_G (MP_PT_USER + 0) /* rank 0: gets from rank 1      */
#define PT_D (MP_PT_USER + 1) /* rank 0: "done" from rank 1     */

static char *g_base;
static _Atomic uint32_t *g_done; /* test word in the header page's padding */

static void map_region(void)
{
    g_base = mp_map_job_region();
    g_done = (_Atomic uint32_t *)(g_base + offsetof(struct pt_shm_hdr, pad_) + 128);
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 3);
    bool rung = argc > 1 && !strcmp(argv[1], "rung");
    if (argc > 1 && !rung && strcmp(argv[1], "polled"))
        mp_die("usage: mp_forged_bell [polled|rung]");
    map_region();
    static uint64_t exposed = 0xbe11, into, done_buf, one = 1;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 0) {
        mp_post(&m, PT_G, 0, &exposed, sizeof exposed, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE, PTL_RETAIN, NULL);
        mp_post(&m, PT_D, 0, &done_buf, sizeof done_buf, 1,
                PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);

    if (m.rank == 2) {
        const struct pt_shm_hdr *h = (const struct pt_shm_hdr *)g_base;
        struct pt_shm_layout l = {.off_ranks = h->off_ranks};
        struct pt_waitword *bell = &pt_shm_rankrec(g_base, &l, 0)->bell;
        while (!LD_ACQUIRE(g_done)) {
            ST_RELAXED(rung ? &bell->rung : &bell->polled, 1);
            usleep(50);
        }
    } else if (m.rank == 1) {
        usleep(300000); /* rank 0's engine is asleep by now */
        ptl_handle_md_t gmd = mp_bind(&m, &into, sizeof into, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE, eq);
        uint64_t t0 = mp_now_ms();
        for (int i = 0; i < 50; i++) {
            into = 0;
            MP_CHECK(PtlGet(gmd, m.ids[0], PT_G, 0, 0, 0));
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, 10000))
                mp_die("get %d from rank 0 not served in 10 s (its doorbell is forged)", i);
            if (ev.type != PTL_EVENT_REPLY_END || ev.ni_fail_type != PTL_NI_OK ||
                into != exposed)
                mp_die("get %d: event %d, read %#llx", i, (int)ev.type,
                       (unsigned long long)into);
        }
        uint64_t took = mp_now_ms() - t0;
        if (took > 2000)
            mp_die("50 gets took %llu ms: served only when rank 0's application came back",
                   (unsigned long long)took);
        printf("rank 1: 50 gets served in %llu ms beside a forged doorbell (%s): forged bell OK\n",
               (unsigned long long)took, rung ? "rung" : "polled");
        fflush(stdout);
        ptl_handle_md_t dmd = mp_bind(&m, &one, sizeof one, 1, 0, PTL_EQ_NONE);
        MP_CHECK(PtlPut(dmd, PTL_NO_ACK_REQ, m.ids[0], PT_D, 0, 0, 0, 0));
    } else {
        const char *off = getenv("PTL_OFFLOAD");
        if (!off || strcmp(off, "0"))
            sleep(3); /* offload: compute; the NIC thread must serve */
        mp_expect(eq, PTL_EVENT_PUT_END, "rank 1's done");
        ST_RELEASE(g_done, 1);
    }
    mp_fini(&m);
    return 0;
}
