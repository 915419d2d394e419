/*
 * trace_stop - a job that hangs because a rank stopped (the "My job hangs"
 * example of README.md, and the test of the dump, tests/trace/trace_dump.sh).
 *
 *   usage (under ptlrun -n 2 or more): trace_stop
 *
 * Every rank posts a receive, then the barrier. Rank 1 stops itself with
 * SIGSTOP. Every other rank puts 8-byte messages to rank 1, for ever: its
 * engine runs out of credits towards rank 1 after PTL_QUEUE_SLOTS puts, its
 * command ring fills, and PtlPut waits (PTL_NO_SPACE after
 * PTL_PEER_TIMEOUT_MS; the program tries again). Only ptlrun's --timeout
 * ends the job, with a dump.
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>

#define PT_STOP (MP_PT_USER + 3)

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    static uint64_t rbuf[1024], sbuf;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
    mp_post(&m, PT_STOP, 0, rbuf, sizeof rbuf, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    ptl_handle_md_t md = mp_bind(&m, &sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    mp_barrier(&m);
    if (m.rank == 1) {
        fprintf(stderr, "rank 1: stopping myself (SIGSTOP)\n");
        fflush(stderr);
        raise(SIGSTOP);
        mp_die("continued: nobody should continue me");
    }
    mp_doing("putting to the stopped rank 1");
    for (uint64_t i = 0;; i++) {
        sbuf = i;
        int rc = PtlPut(md, PTL_NOACK_REQ, m.ids[1], PT_STOP, 0, 0, 0, 0);
        if (rc != PTL_OK && rc != PTL_NO_SPACE)
            mp_die("PtlPut: %d", rc);
    }
}
