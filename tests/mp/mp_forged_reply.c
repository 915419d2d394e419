/*
 * mp_forged_reply - one rank that never drains its answers and sends a forged
 * rendezvous REPLY cannot stop its victim serving everybody else (issue 12
 * item 10).
 *
 * Rank 0 is the victim, rank 1 a well-behaved peer, rank 2 the hostile one.
 * Rank 2 takes its own engine (so nothing ever drains its receive queues)
 * and, through its transport directly:
 *   - sends rank 0 puts that ask for ACKs until its request queue is full:
 *     rank 0's ACKs fill the response queue 0 -> 2, and then rank 0 cannot
 *     answer the next put (AGAIN);
 *   - sends rank 0 a rendezvous REPLY naming no MD (nobody asked for it),
 *     whose RFIN cannot be reserved either;
 *   - tells rank 1 (a crafted put) that the trap is set.
 * Rank 1 then gets 8 bytes from rank 0, 200 times, each within 10 s. Before,
 * rank 0's engine stopped at the first message it could not handle, and the
 * forged REPLY sat first in the class it always scans first: rank 1's gets
 * were never served. Expected: rank 0 drops the unexpected REPLY, holds rank
 * 2's requests (order per peer) and serves rank 1.
 *
 *   usage: ptlrun -n 3 mp_forged_reply   (memfd region: rank 2 maps it)
 * White-box: links the library's internals (the crafted messages).
 */
#include "api_int.h"
#include "mp_util.h"
#include "shm_region.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PT_G (MP_PT_USER + 0) /* rank 0: gets from rank 1, puts from rank 2 */
#define PT_R (MP_PT_USER + 1) /* rank 1: "the trap is set"                  */
#define PT_D (MP_PT_USER + 2) /* rank 0: "done" from rank 1                 */

/* Test-private word in the region header's padding (nothing else uses it). */
static _Atomic uint32_t *g_done;

static void map_flag(void)
{
    char *p = mp_map_job_region();
    g_done = (_Atomic uint32_t *)(p + offsetof(struct pt_shm_hdr, pad_) + 64);
}

/* A raw message from rank 2's transport; false when the queue is full. */
static bool craft(struct pt_nic *nic, uint32_t peer, enum pt_cls cls, uint8_t op, uint8_t flags,
                  uint32_t pt, uint32_t init_md)
{
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, peer, cls);
    if (!h)
        return false;
    pt_wire_clear(h);
    h->op = op;
    h->flags = flags;
    h->src_nid = nic->id.nid;
    h->src_pid = nic->id.pid;
    h->uid = nic->uid;
    h->jid = nic->jid;
    h->pt_index = pt;
    h->init_md = init_md;
    h->match_bits = 0;
    h->mlength = 8;
    nic->xo->commit(nic->x, peer, cls, PT_WIRE_HDR_SIZE);
    return true;
}

int main(void)
{
    struct mp m;
    mp_init(&m, 3);
    map_flag();
    static uint64_t exposed = 0x5eed, into, done_buf, ready_buf, one = 1;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 0) {
        mp_post(&m, PT_G, 0, &exposed, sizeof exposed, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE,
                PTL_EQ_NONE, PTL_RETAIN, NULL);
        mp_post(&m, PT_D, 0, &done_buf, sizeof done_buf, 1, PTL_MD_OP_PUT, eq, PTL_UNLINK,
                NULL);
    } else if (m.rank == 1) {
        mp_post(&m, PT_R, 0, &ready_buf, sizeof ready_buf, 1, PTL_MD_OP_PUT, eq, PTL_UNLINK,
                NULL);
    }
    mp_barrier(&m);

    if (m.rank == 2) {
        struct pt_nic *nic = pt_api_ni(m.ni);
        while (!pt_wait_try_take(&nic->w)) /* nobody drains our queues now */
            ;
        int puts = 0;
        /* until the queue has stayed full for 300 ms: rank 0 takes puts
         * while it has room for their ACKs */
        for (uint64_t last = mp_now_ms(); mp_now_ms() - last < 300;) {
            if (craft(nic, 0, PT_CLS_REQ, PT_W_PUT, PT_WF_ACK_REQ, PT_G, 0)) {
                puts++;
                last = mp_now_ms();
            } else {
                usleep(1000);
            }
        }
        if (!craft(nic, 0, PT_CLS_RSP, PT_W_REPLY, PT_WF_RNDV, 0, 0x7654321u))
            mp_die("rank 2: no room for the forged reply");
        usleep(100000);
        if (!craft(nic, 1, PT_CLS_REQ, PT_W_PUT, 0, PT_R, 0))
            mp_die("rank 2: cannot tell rank 1");
        fprintf(stderr, "rank 2: %d puts asking for ACKs, a forged REPLY; holding\n", puts);
        while (!LD_ACQUIRE(g_done))
            usleep(10000);
        pt_wait_release(nic);
        mp_fini(&m);
        return 0;
    }
    if (m.rank == 1) {
        mp_expect(eq, PTL_EVENT_PUT_START, "rank 2's trap is set");
        mp_expect(eq, PTL_EVENT_PUT_END, "rank 2's trap is set");
        mp_expect(eq, PTL_EVENT_UNLINK, "rank 2's trap is set");
        ptl_handle_md_t gmd = mp_bind(&m, &into, sizeof into, PTL_MD_THRESH_INF, 0, eq);
        uint64_t t0 = mp_now_ms();
        for (int i = 0; i < 200; i++) {
            into = 0;
            MP_CHECK(PtlGet(gmd, m.ids[0], PT_G, 0, 0, 0));
            const ptl_event_kind_t k[2] = {PTL_EVENT_REPLY_START, PTL_EVENT_REPLY_END};
            for (int j = 0; j < 2; j++) {
                ptl_event_t ev;
                if (!mp_poll(eq, &ev, 10000))
                    mp_die("get %d from rank 0 not served in 10 s (rank 2's traffic stops it)",
                           i);
                if (ev.type != k[j] || ev.ni_fail_type != PTL_NI_OK)
                    mp_die("get %d: unexpected event %d", i, (int)ev.type);
            }
            if (into != exposed)
                mp_die("get %d: read %#llx", i, (unsigned long long)into);
        }
        printf("rank 1: 200 gets served beside the hostile rank in %llu ms: forged reply OK\n",
               (unsigned long long)(mp_now_ms() - t0));
        fflush(stdout);
        ptl_handle_md_t dmd = mp_bind(&m, &one, sizeof one, 1, 0, PTL_EQ_NONE);
        MP_CHECK(PtlPut(dmd, PTL_NO_ACK_REQ, m.ids[0], PT_D, 0, 0, 0, 0));
        mp_fini(&m);
        return 0;
    }
    /* rank 0: serve until rank 1 is done */
    mp_expect(eq, PTL_EVENT_PUT_START, "rank 1's done");
    mp_expect(eq, PTL_EVENT_PUT_END, "rank 1's done");
    ST_RELEASE(g_done, 1);
    mp_fini(&m);
    return 0;
}
