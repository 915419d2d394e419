/*
 * mp_noinit - a rank of a PMIx job on one host dies before its PtlNIInit
 * (issue 17 hardening, docs/ofi.md "One job across hosts", node-only): it
 * never attached to the node region, so no watch has its OS pid, and Open
 * MPI 4.1's PMIx gives none. The others' job must fail within twice
 * PTL_PMIX_TIMEOUT_S (the bound a rank that does not reach PtlNIInit gets in
 * a job across hosts, doubled for the connections it may make after it:
 * transport/shm_watch.c), not wait for it for ever, and the region's name
 * must not stay in /dev/shm.
 *
 *   usage (2 ranks or more, under mpirun --enable-recovery): mp_noinit <most ms>
 *
 * The last rank raises SIGKILL right after PtlInit. Rank 0 puts 8 bytes with
 * an ACK to it; every other rank waits on an EQ nothing is sent to. Each must
 * see a failure (PtlEQPoll PTL_FAIL, or an event whose ni_fail_type is not
 * PTL_NI_OK) within <most> ms of its PtlNIInit: it prints "rank R: saw the
 * lost rank: ..." on stdout and exits 0; nothing within <most> ms: it says so
 * and exits 4.
 */
#include "mp_util.h"

#include <p3api/misc.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_N (MP_PT_USER + 9)

int main(int argc, char **argv)
{
    if (argc < 2 || atoi(argv[1]) <= 0)
        mp_die("usage: mp_noinit <most ms>");
    uint64_t most_ms = (uint64_t)atoll(argv[1]);
    unsigned rank, size;
    mp_rank_init(2, &rank, &size);
    unsigned victim = size - 1;
    if (rank == victim) {
        fprintf(stderr, "rank %u: raising SIGKILL before PtlNIInit\n", rank);
        fflush(stderr);
        raise(SIGKILL);
    }
    ptl_handle_ni_t ni;
    MP_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    uint64_t t0 = mp_now_ms();
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    static char buf[8];
    if (rank == 0) {
        ptl_process_id_t to;
        MP_CHECK(PtlGetRankId(ni, victim, &to));
        ptl_md_t md;
        memset(&md, 0, sizeof md);
        md.start = buf;
        md.length = sizeof buf;
        md.threshold = PTL_MD_THRESH_INF;
        md.eq_handle = eq;
        ptl_handle_md_t mdh;
        MP_CHECK(PtlMDBind(ni, md, PTL_RETAIN, &mdh));
        MP_CHECK(PtlPut(mdh, PTL_ACK_REQ, to, PT_N, 0, 0, 0, 0));
    }
    while (mp_now_ms() - t0 < most_ms) {
        ptl_event_t ev;
        int which;
        int rc = PtlEQPoll(&eq, 1, 200, &ev, &which);
        uint64_t took = mp_now_ms() - t0;
        if (rc == PTL_EQ_EMPTY)
            continue;
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
            printf("rank %u: saw the lost rank: PtlEQPoll %s after %llu ms\n", rank,
                   PtlErrorStr((unsigned)rc), (unsigned long long)took);
            fflush(stdout);
            PtlNIFini(ni);
            PtlFini();
            return 0;
        }
        if (ev.ni_fail_type != PTL_NI_OK) {
            printf("rank %u: saw the lost rank: %s with ni_fail_type %s after %llu ms\n", rank,
                   PtlEventKindStr(ev.type), PtlNIFailStr(ni, ev.ni_fail_type),
                   (unsigned long long)took);
            fflush(stdout);
            PtlNIFini(ni);
            PtlFini();
            return 0;
        }
    }
    fprintf(stderr, "rank %u: no failure within %llu ms of PtlNIInit: rank %u, dead before its "
                    "PtlNIInit, is waited for\n",
            rank, (unsigned long long)most_ms, victim);
    return 4;
}
