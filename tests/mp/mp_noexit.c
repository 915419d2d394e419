/*
 * mp_noexit - a rank exits 0 without PtlNIFini while a peer's get to it is
 * outstanding (issue 12, item 5).
 *
 * Rank 1 puts "bye" to rank 0 and, on its SEND_END, calls exit(0), still attached to
 * the job. Rank 0, on that put, gets 8 bytes from rank 1 (rank 1 posted no
 * ME for it: nobody will ever answer) and waits. Expected: the exit makes
 * rank 1 a dead peer, so rank 0's get ends with a failure (an event with
 * ni_fail_type != PTL_NI_OK, or PtlEQPoll reporting the failed NI) within
 * seconds, and ptlrun reports the exit and ends with status 1. Before, the
 * exit counted as success and rank 0 waited forever.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>

#define PT_N (MP_PT_USER + 6)

/* Rank 0 detaches properly: ptlrun's complaint must be about rank 1 only. */
static int leave(struct mp *m)
{
    fflush(stdout);
    PtlNIFini(m->ni);
    PtlFini();
    free(m->ids);
    free(m->seen);
    return 0;
}

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    static uint64_t bye = 0xb7e, got;
    if (m.rank == 0)
        mp_post(&m, PT_N, 1, &got, sizeof got, 1, PTL_MD_OP_PUT, eq, PTL_UNLINK, NULL);
    mp_barrier(&m);

    if (m.rank == 1) {
        ptl_handle_md_t md = mp_bind(&m, &bye, sizeof bye, 1, 0, eq);
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[0], PT_N, 0, 1, 0, 0));
        const ptl_event_kind_t k[2] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END};
        mp_expect_all(eq, k, 2, NULL, "the bye put"); /* it has left */
        exit(0); /* no PtlNIFini, no PtlFini */
    }
    if (m.rank != 0)
        return 0;
    const ptl_event_kind_t k[2] = {PTL_EVENT_PUT_START, PTL_EVENT_PUT_END};
    mp_expect_all(eq, k, 2, NULL, "rank 1's bye");
    static uint64_t into;
    ptl_handle_md_t gmd = mp_bind(&m, &into, sizeof into, 1, 0, eq);
    int grc = PtlGet(gmd, m.ids[1], PT_N, 0, 2, 0);
    if (grc != PTL_OK) { /* the NI already knows the peer is gone: reported */
        printf("rank 0: OK: PtlGet reports %s\n", PtlErrorStr((unsigned)grc));
        return leave(&m);
    }
    uint64_t t0 = mp_now_ms();
    while (mp_now_ms() - t0 < 20000) {
        ptl_event_t ev;
        int which, rc = PtlEQPoll(&eq, 1, 1000, &ev, &which);
        if (rc == PTL_EQ_EMPTY)
            continue;
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
            printf("rank 0: OK: PtlEQPoll reports %s\n", PtlErrorStr((unsigned)rc));
            return leave(&m);
        }
        fprintf(stderr, "rank 0: %s ni_fail_type %s\n", PtlEventKindStr(ev.type),
                PtlNIFailStr(m.ni, ev.ni_fail_type));
        if (ev.ni_fail_type != PTL_NI_OK) {
            printf("rank 0: OK: the get to the rank that left failed (%s)\n",
                   PtlNIFailStr(m.ni, ev.ni_fail_type));
            return leave(&m);
        }
    }
    printf("rank 0: FAIL: the get to the rank that left neither completed nor failed in 20 s\n");
    return 1;
}
