/*
 * mp_rfin_died - the initiator of rendezvous gets dies after the target sent
 * its replies and before it pulled them (thirty-eighth session). The target's
 * MD stays busy until each reply's RFIN says the initiator pulled; an
 * initiator that died first never sends one. Before the fix nothing per
 * reply was kept, so the target's GET_ENDs never came and its MD answered
 * PtlMDUnlink with PTL_MD_IN_USE for ever.
 *
 * Rank 1 runs host matching in both modes (setenv before PtlInit): its
 * engine runs only inside its Portals calls, so once its gets are sent and
 * it stops calling Portals, nothing on rank 1 pulls. Rank 0 (the mode under
 * test) exposes a 2 MiB MD (EQ, retained); rank 1 stops rank 0 (SIGSTOP),
 * gets 1 MiB from offset 0 and 1 MiB from offset 1 MiB (two replies
 * outstanding on one MD), continues rank 0 and tells it (SIGUSR1); rank 0 sees both GET_STARTs, checks that the MD is busy
 * (PTL_MD_IN_USE), and tells rank 1, which raises SIGKILL. Rank 0 must then
 * get both GET_ENDs with ni_fail_type PTL_NI_PEER_DIED (initiator rank 1,
 * rlength and mlength 1 MiB, offsets 0 and 1 MiB, each once) and unlink the
 * MD with PTL_OK; it prints "rank 0: OK". ptlrun ends with 137 (rank 1's
 * signal). On the shared-memory transport the replies are rendezvous only
 * where CMA works (otherwise the target streams them: another path), so the
 * test is skipped (77) there without it; over ofi it always runs.
 */
#include "mp_util.h"

#include <p3api/misc.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_N (MP_PT_USER + 3)
#define B_PID 0x7f1
#define B_DATA 0x7f2
#define HALF (1u << 20)

int main(void)
{
    const char *tr = getenv("PTL_TRANSPORT");
    if (!(tr && !strcmp(tr, "ofi")) && !mp_cma_works()) {
        printf("mp_rfin_died: skipped: no CMA pull here (the replies would be streamed)\n");
        return 77;
    }
    mp_usr1_block_host_peers(); /* see the top: rank 1 never pulls */

    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    static uint64_t peer_pid;
    mp_post(&m, PT_N, B_PID, &peer_pid, sizeof peer_pid, 1, PTL_MD_OP_PUT, eq, PTL_RETAIN, NULL);
    char *buf = malloc(2 * (size_t)HALF);
    if (!buf)
        mp_die("malloc");
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (m.rank == 0) {
        mp_fill(buf, 2 * (uint64_t)HALF, 0, 1, 0);
        md = mp_post(&m, PT_N, B_DATA, buf, 2 * (ptl_size_t)HALF, PTL_MD_THRESH_INF,
                     PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    if (m.rank > 1)
        return 0;

    /* Exchange OS pids: the signals below go around Portals. */
    pid_t peer = mp_pid_swap(&m, PT_N, B_PID, eq, &peer_pid);

    if (m.rank == 1) {
        ptl_handle_md_t g0 = mp_bind(&m, buf, HALF, 1, 0, eq);
        ptl_handle_md_t g1 = mp_bind(&m, buf + HALF, HALF, 1, 0, eq);
        /* Rank 0 stopped while we post: its replies come only after our
         * last Portals call. Else the first reply could land while the
         * second PtlGet runs our engine, which would pull it (a GET_END
         * without failure: the perturbation stage saw it once in CI). */
        if (kill(peer, SIGSTOP))
            mp_die("kill(rank 0, SIGSTOP)");
        MP_CHECK(PtlGet(g0, m.ids[0], PT_N, 0, B_DATA, 0));
        MP_CHECK(PtlGet(g1, m.ids[0], PT_N, 0, B_DATA, HALF));
        /* The last Portals call is behind us: nothing here pulls. */
        if (kill(peer, SIGCONT) || kill(peer, SIGUSR1))
            mp_die("kill(rank 0)");
        mp_usr1_wait("waiting for rank 0 to see the gets");
        fflush(stdout);
        raise(SIGKILL);
        return 1;
    }

    mp_usr1_wait("waiting for rank 1's gets");
    const ptl_event_kind_t k2[2] = {PTL_EVENT_GET_START, PTL_EVENT_GET_START};
    mp_expect_all(eq, k2, 2, NULL, "the two gets' starts");
    int rc = PtlMDUnlink(md);
    if (rc != PTL_MD_IN_USE)
        mp_die("PtlMDUnlink with two replies outstanding: %s, not PTL_MD_IN_USE",
               PtlErrorStr((unsigned)rc));
    if (kill(peer, SIGUSR1))
        mp_die("kill(rank 1)");

    /* Both GET_ENDs, failed; PtlEQPoll says PTL_FAIL while the NI has failed
     * and nothing is there yet: wait on through that, bounded. */
    int got[2] = {0, 0};
    uint64_t t0 = mp_now_ms();
    mp_doing("the two GET_ENDs");
    while (!got[0] || !got[1]) {
        if (mp_now_ms() - t0 > MP_WAIT_MS)
            mp_die("GET_END %s not posted in %d s after rank 1 died: the MD stays busy",
                   got[0] ? "of offset 1 MiB" : "of offset 0", MP_WAIT_MS / 1000);
        ptl_event_t ev;
        int which;
        rc = PtlEQPoll(&eq, 1, 100, &ev, &which);
        if (rc == PTL_EQ_EMPTY || rc == PTL_FAIL)
            continue;
        if (rc != PTL_OK)
            mp_die("PtlEQPoll: %s", PtlErrorStr((unsigned)rc));
        if (ev.type != PTL_EVENT_GET_END)
            mp_die("unexpected %s", PtlEventKindStr(ev.type));
        if (ev.ni_fail_type != PTL_NI_PEER_DIED)
            mp_die("GET_END with ni_fail_type %u, not PTL_NI_PEER_DIED",
                   (unsigned)ev.ni_fail_type);
        int k = ev.offset == HALF;
        if ((ev.offset != 0 && ev.offset != HALF) || got[k] || ev.md_handle != md ||
            ev.rlength != HALF || ev.mlength != HALF || ev.initiator.nid != m.ids[1].nid ||
            ev.initiator.pid != m.ids[1].pid || ev.match_bits != B_DATA)
            mp_die("GET_END fields: offset %llu rlength %llu mlength %llu initiator %u/%u "
                   "bits %#llx (seen before: %d)",
                   (unsigned long long)ev.offset, (unsigned long long)ev.rlength,
                   (unsigned long long)ev.mlength, ev.initiator.nid, ev.initiator.pid,
                   (unsigned long long)ev.match_bits, got[k]);
        got[k] = 1;
    }
    rc = PtlMDUnlink(md);
    if (rc != PTL_OK)
        mp_die("PtlMDUnlink after both GET_ENDs: %s", PtlErrorStr((unsigned)rc));
    printf("rank 0: OK (both GET_ENDs PTL_NI_PEER_DIED after %llu ms, the MD unlinked)\n",
           (unsigned long long)(mp_now_ms() - t0));
    fflush(stdout);
    PtlNIFini(m.ni);
    PtlFini();
    free(buf);
    return 0;
}
