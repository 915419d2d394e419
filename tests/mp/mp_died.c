/*
 * mp_died - a rank leaves while operations a peer initiated to it are
 * outstanding (issue 12, item 5): mp_died exit (exit(0) without PtlNIFini),
 * mp_died crash (SIGKILL), mp_died segv (SIGSEGV: ptlrun must see the signal,
 * not the exit(1) of a handler a library installed), and mp_died second (3 ranks: rank 2 exits first,
 * so the NI has failed before rank 0 initiates anything; rank 1 dies later).
 *
 * Rank 1 runs host matching in both modes (setenv before PtlInit): its engine
 * runs only inside its Portals calls, so once it has made its last call and
 * told rank 0 so (SIGUSR1), nothing on rank 1 answers any request. Rank 0, in
 * the mode under test (its engine is the one that must complete them), then
 * initiates to rank 1:
 *   A  an 8-byte PtlGet (MD of its own EQ, retained),
 *   B  a 1 MiB PtlGet (threshold 1, PTL_UNLINK),
 *   C  a 64-byte PtlPut asking for an ACK (threshold 2, PTL_UNLINK),
 *   D  a 1 MiB PtlPut asking for an ACK (rendezvous; retained),
 *   E  a PtlGetPut of 8 bytes (put MD E1, get MD E2, retained),
 * checks that they are outstanding (only the sends' START/END events; the busy
 * MDs answer PtlMDUnlink with PTL_MD_IN_USE), then lets rank 1 go: it exits or
 * kills itself. Rank 0 must then get, through PtlEQWait (A: PtlEQPoll with a
 * timeout on its own EQ), each with ni_fail_type PTL_NI_PEER_DIED:
 *   A, B, E2  REPLY_END (no REPLY_START: no reply began), mlength 0, rlength
 *             the length asked for, offset 0, initiator rank 1;
 *   C         ACK, mlength = rlength = 0; then UNLINK (threshold 2: send + ACK);
 *   D         SEND_END (mlength the length sent, link = SEND_START's), then ACK;
 *   B         UNLINK after its REPLY_END (threshold 1 consumed as by a reply);
 * then the retained MDs unlink (PTL_OK), a get and a put with ACK initiated
 * after the death return PTL_OK and complete at once the same way, the EQ is
 * empty, PtlEQWait then reports PTL_FAIL, and PtlNIFini works. ptlrun reports
 * rank 1 (status 1 "without PtlNIFini", or 137).
 *
 * In "second" mode the waits find the NI failed already, so they return
 * PTL_FAIL whenever nothing is there yet: the test waits on through those
 * (bounded); the events must come all the same, found by the engine's later
 * looks at the peers with requests outstanding.
 *
 * Before the fix PtlEQWait returned PTL_FAIL with none of these events, and
 * the MDs stayed PTL_MD_IN_USE for ever.
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PT_N (MP_PT_USER + 7)
#define B_PID 0x91d
#define BIG (1u << 20)

static ptl_handle_eq_t g_eq, g_eqa;
static bool g_failed; /* the NI failed before the ops began: PTL_FAIL means "not yet" */

static ptl_handle_md_t bind(struct mp *m, void *buf, ptl_size_t len, int thr, ptl_unlink_t ul,
                            ptl_handle_eq_t eq)
{
    ptl_handle_md_t md;
    ptl_md_t d = {buf, len, thr, 0, 0, NULL, eq};
    MP_CHECK(PtlMDBind(m->ni, d, ul, &md));
    return md;
}

/* The events rank 0 waits for after the death, any order, each once. */
struct want {
    ptl_event_kind_t kind;
    ptl_handle_md_t md;
    int got;
    ptl_event_t ev;
};

#define W(k, md) {k, md, 0, {0}}

static int find(struct want *w, int n, const ptl_event_t *ev)
{
    for (int i = 0; i < n; i++)
        if (!w[i].got && w[i].kind == ev->type && w[i].md == ev->md_handle)
            return i;
    return -1;
}

static void check_fail(const ptl_event_t *ev, const char *what)
{
    if (ev->ni_fail_type != PTL_NI_PEER_DIED)
        mp_die("%s: %s with ni_fail_type %u, not PTL_NI_PEER_DIED", what,
               PtlEventKindStr(ev->type), (unsigned)ev->ni_fail_type);
}

static void check_reply(struct mp *m, const ptl_event_t *ev, uint64_t bits, uint64_t len,
                        const char *what)
{
    check_fail(ev, what);
    if (ev->initiator.nid != m->ids[1].nid || ev->initiator.pid != m->ids[1].pid ||
        ev->pt_index != PT_N || ev->match_bits != bits || ev->rlength != len ||
        ev->mlength != 0 || ev->offset != 0)
        mp_die("%s: REPLY_END fields: initiator %u/%u pt %u bits %#llx rlength %llu "
               "mlength %llu offset %llu", what, ev->initiator.nid, ev->initiator.pid,
               ev->pt_index, (unsigned long long)ev->match_bits,
               (unsigned long long)ev->rlength, (unsigned long long)ev->mlength,
               (unsigned long long)ev->offset);
}

static void check_ack(struct mp *m, const ptl_event_t *ev, uint64_t bits, uint64_t roff,
                      const char *what)
{
    check_fail(ev, what);
    if (ev->initiator.nid != m->ids[1].nid || ev->initiator.pid != m->ids[1].pid ||
        ev->match_bits != bits || ev->mlength != 0 || ev->rlength != 0 || ev->offset != roff)
        mp_die("%s: ACK fields: initiator %u/%u bits %#llx mlength %llu rlength %llu "
               "offset %llu", what, ev->initiator.nid, ev->initiator.pid,
               (unsigned long long)ev->match_bits, (unsigned long long)ev->mlength,
               (unsigned long long)ev->rlength, (unsigned long long)ev->offset);
}

/* Collect n events from g_eq by PtlEQWait. A PTL_FAIL before all came is the
 * bug this test is about. */
static void collect(struct want *w, int n, const char *what)
{
    uint64_t t0 = mp_now_ms();
    for (int left = n; left > 0; left--) {
        ptl_event_t ev;
        mp_doing(what);
        int rc = PtlEQWait(g_eq, &ev);
        while (g_failed && rc == PTL_FAIL && mp_now_ms() - t0 < 10000) {
            usleep(1000);
            rc = PtlEQWait(g_eq, &ev);
        }
        if (rc != PTL_OK)
            mp_die("%s: PtlEQWait returned %s with %d of %d events still due", what,
                   PtlErrorStr((unsigned)rc), left, n);
        int i = find(w, n, &ev);
        if (i < 0)
            mp_die("%s: unexpected %s (md %#x, ni_fail_type %u)", what,
                   PtlEventKindStr(ev.type), (unsigned)ev.md_handle, (unsigned)ev.ni_fail_type);
        if (ev.type == PTL_EVENT_UNLINK) /* after the event that made it due */
            for (int k = 0; k < n; k++)
                if (k != i && w[k].md == ev.md_handle && !w[k].got)
                    mp_die("%s: UNLINK before %s", what, PtlEventKindStr(w[k].kind));
        w[i].got = 1;
        w[i].ev = ev;
    }
}

int main(int argc, char **argv)
{
    bool crash = argc > 1 && !strcmp(argv[1], "crash");
    bool segv = argc > 1 && !strcmp(argv[1], "segv");
    crash = crash || segv;
    bool second = argc > 1 && !strcmp(argv[1], "second");
    mp_usr1_block_host_peers(); /* see the top: rank 1 never serves */

    struct mp m;
    mp_init(&m, 2);
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &g_eq));
    MP_CHECK(PtlEQAlloc(m.ni, 8, PTL_EQ_HANDLER_NONE, &g_eqa));
    static uint64_t peer_pid, my_pid, pid2;
    my_pid = (uint64_t)getpid();
    mp_post(&m, PT_N, B_PID, &peer_pid, sizeof peer_pid, 1, PTL_MD_OP_PUT, g_eq, PTL_RETAIN,
            NULL);
    if (second && m.rank == 0) /* rank 2's pid, on an EQ of its own */
        mp_post(&m, PT_N, B_PID + 2, &pid2, sizeof pid2, 1, PTL_MD_OP_PUT, g_eqa, PTL_RETAIN,
                NULL);
    mp_barrier(&m);
    if (m.rank > 1) {
        if (!second || m.rank != 2)
            return 0;
        ptl_handle_md_t pmd = mp_bind(&m, &my_pid, sizeof my_pid, 1, 0, g_eq);
        MP_CHECK(PtlPut(pmd, PTL_NO_ACK_REQ, m.ids[0], PT_N, 0, B_PID + 2, 0, 0));
        const ptl_event_kind_t k2[2] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END};
        mp_expect_all(g_eq, k2, 2, NULL, "rank 2's pid");
        mp_usr1_wait("waiting for rank 0's word to leave");
        exit(0); /* the first death: no PtlNIFini */
    }

    /* Exchange OS pids: the signals below go around Portals. */
    pid_t peer = mp_pid_swap(&m, PT_N, B_PID, g_eq, &peer_pid);

    if (m.rank == 1) {
        /* The last Portals call is behind us: nothing here answers again. */
        if (kill(peer, SIGUSR1))
            mp_die("kill(rank 0)");
        mp_usr1_wait("waiting for rank 0's ops");
        fflush(stdout);
        if (segv)
            raise(SIGSEGV); /* as a bad pointer would: the default action (transport/ofi_fabric.c) */
        if (crash)
            raise(SIGKILL);
        exit(0); /* no PtlNIFini, no PtlFini */
    }

    mp_usr1_wait("waiting for rank 1 to leave Portals");
    if (second) { /* rank 2 leaves; wait until the NI has failed */
        mp_second_death(g_eqa, g_eq, &pid2, 10000);
        g_failed = true;
    }
    static uint64_t a[1], c[8], e1[1] = {0x5eed}, e2[1], f[1], g[1];
    static char b[BIG], d[BIG];
    ptl_handle_md_t A = bind(&m, a, sizeof a, PTL_MD_THRESH_INF, PTL_RETAIN, g_eqa);
    ptl_handle_md_t B = bind(&m, b, sizeof b, 1, PTL_UNLINK, g_eq);
    ptl_handle_md_t C = bind(&m, c, sizeof c, 2, PTL_UNLINK, g_eq);
    ptl_handle_md_t D = bind(&m, d, sizeof d, PTL_MD_THRESH_INF, PTL_RETAIN, g_eq);
    ptl_handle_md_t E1 = bind(&m, e1, sizeof e1, PTL_MD_THRESH_INF, PTL_RETAIN, g_eq);
    ptl_handle_md_t E2 = bind(&m, e2, sizeof e2, PTL_MD_THRESH_INF, PTL_RETAIN, g_eq);
    ptl_process_id_t t = m.ids[1];
    MP_CHECK(PtlGet(A, t, PT_N, 0, 0xa, 0));
    MP_CHECK(PtlGet(B, t, PT_N, 0, 0xb, 0));
    MP_CHECK(PtlPut(C, PTL_ACK_REQ, t, PT_N, 0, 0xc, 16, 0));
    MP_CHECK(PtlPut(D, PTL_ACK_REQ, t, PT_N, 0, 0xd, 32, 0));
    MP_CHECK(PtlGetPut(E2, E1, t, PT_N, 0, 0xe, 0, 0));

    /* Outstanding: only the sends' events; the busy MDs refuse to unlink. */
    struct want pre[5] = {W(PTL_EVENT_SEND_START, C), W(PTL_EVENT_SEND_END, C),
                          W(PTL_EVENT_SEND_START, D), W(PTL_EVENT_SEND_START, E1),
                          W(PTL_EVENT_SEND_END, E1)};
    collect(pre, 5, "the sends before the death");
    for (int i = 0; i < 5; i++)
        if (pre[i].ev.ni_fail_type != PTL_NI_OK)
            mp_die("%s of a send before the death failed", PtlEventKindStr(pre[i].kind));
    ptl_event_t ev;
    int which, rc;
    for (uint64_t t1 = mp_now_ms(); mp_now_ms() - t1 < 200;) {
        ptl_handle_eq_t both[2] = {g_eq, g_eqa};
        rc = PtlEQPoll(both, 2, 10, &ev, &which);
        if (rc == PTL_FAIL && g_failed)
            usleep(1000);
        else if (rc != PTL_EQ_EMPTY)
            mp_die("the ops to rank 1 while it lives: %s (%s)", PtlErrorStr((unsigned)rc),
                   rc == PTL_OK ? PtlEventKindStr(ev.type) : "no event");
    }
    const ptl_handle_md_t busy[4] = {A, B, D, E2};
    for (int i = 0; i < 4; i++) {
        int rc = PtlMDUnlink(busy[i]);
        if (rc != PTL_MD_IN_USE)
            mp_die("PtlMDUnlink of busy MD %d: %s, not PTL_MD_IN_USE", i,
                   PtlErrorStr((unsigned)rc));
    }

    uint64_t t0 = mp_now_ms();
    if (kill(peer, SIGUSR1))
        mp_die("kill(rank 1)");
    struct want post[7] = {W(PTL_EVENT_REPLY_END, B), W(PTL_EVENT_UNLINK, B),
                           W(PTL_EVENT_ACK, C),       W(PTL_EVENT_UNLINK, C),
                           W(PTL_EVENT_SEND_END, D),  W(PTL_EVENT_ACK, D),
                           W(PTL_EVENT_REPLY_END, E2)};
    collect(post, 7, "the ops to rank 1 after its death");
    rc = PtlEQPoll(&g_eqa, 1, 10000, &ev, &which);
    for (uint64_t t1 = mp_now_ms(); g_failed && rc == PTL_FAIL && mp_now_ms() - t1 < 10000;) {
        usleep(1000);
        rc = PtlEQPoll(&g_eqa, 1, 10000, &ev, &which);
    }
    if (rc != PTL_OK)
        mp_die("PtlEQPoll for the eager get: %s", PtlErrorStr((unsigned)rc));
    if (ev.type != PTL_EVENT_REPLY_END || ev.md_handle != A)
        mp_die("the eager get: %s, not REPLY_END", PtlEventKindStr(ev.type));
    check_reply(&m, &ev, 0xa, sizeof a, "the eager get (A)");
    if (ev.md.threshold != PTL_MD_THRESH_INF)
        mp_die("A's threshold %d", ev.md.threshold);
    check_reply(&m, &post[0].ev, 0xb, BIG, "the 1 MiB get (B)");
    if (post[0].ev.md.threshold != 0)
        mp_die("B's threshold %d after the failed reply, not 0", post[0].ev.md.threshold);
    check_ack(&m, &post[2].ev, 0xc, 16, "the put with ACK (C)");
    if (post[2].ev.md.threshold != 0)
        mp_die("C's threshold %d after the failed ACK, not 0", post[2].ev.md.threshold);
    ptl_event_t *se = &post[4].ev;
    check_fail(se, "the 1 MiB put (D)");
    if (se->initiator.nid != m.self.nid || se->initiator.pid != m.self.pid ||
        se->mlength != BIG || se->rlength != BIG || se->offset != 32 || se->match_bits != 0xd ||
        se->link != pre[2].ev.link)
        mp_die("the 1 MiB put's SEND_END fields: mlength %llu rlength %llu offset %llu link %u "
               "(START's %u)", (unsigned long long)se->mlength, (unsigned long long)se->rlength,
               (unsigned long long)se->offset, (unsigned)se->link, (unsigned)pre[2].ev.link);
    check_ack(&m, &post[5].ev, 0xd, 32, "the 1 MiB put (D)");
    if (post[5].ev.sequence < se->sequence)
        mp_die("the 1 MiB put's ACK before its SEND_END");
    check_reply(&m, &post[6].ev, 0xe, sizeof e2, "the getput (E)");
    printf("rank 0: the %s rank's 7 failure events came through PtlEQWait in %llu ms\n",
           crash ? "killed" : second ? "second dead" : "exited", (unsigned long long)(mp_now_ms() - t0));

    const ptl_handle_md_t kept[4] = {A, D, E1, E2};
    for (int i = 0; i < 4; i++)
        MP_CHECK(PtlMDUnlink(kept[i]));
    if ((rc = PtlMDUnlink(B)) != PTL_MD_INVALID || PtlMDUnlink(C) != PTL_MD_INVALID)
        mp_die("B and C should have been unlinked by use (%s)", PtlErrorStr((unsigned)rc));

    /* Initiated after the death: accepted, failed at once the same way. */
    ptl_handle_md_t F = bind(&m, f, sizeof f, PTL_MD_THRESH_INF, PTL_RETAIN, g_eq);
    ptl_handle_md_t G = bind(&m, g, sizeof g, PTL_MD_THRESH_INF, PTL_RETAIN, g_eq);
    MP_CHECK(PtlGet(F, t, PT_N, 0, 0xf, 0));
    MP_CHECK(PtlPut(G, PTL_ACK_REQ, t, PT_N, 0, 0x6, 8, 0));
    struct want late[4] = {W(PTL_EVENT_REPLY_END, F), W(PTL_EVENT_SEND_START, G),
                           W(PTL_EVENT_SEND_END, G), W(PTL_EVENT_ACK, G)};
    collect(late, 4, "the ops initiated after the death");
    check_reply(&m, &late[0].ev, 0xf, sizeof f, "the late get (F)");
    if (late[1].ev.ni_fail_type != PTL_NI_OK)
        mp_die("the late put's SEND_START failed");
    check_fail(&late[2].ev, "the late put (G)");
    check_ack(&m, &late[3].ev, 0x6, 8, "the late put (G)");
    MP_CHECK(PtlMDUnlink(F));
    MP_CHECK(PtlMDUnlink(G));

    /* Nothing more: PtlEQGet on the failed NI's empty EQ says PTL_FAIL, as a
     * wait does (before the thirty-fifth session PTL_EQ_EMPTY, and a client
     * spinning on PtlEQGet never learned of the failure) */
    if ((rc = PtlEQGet(g_eq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED)
        mp_die("an extra event (%s): %s", PtlErrorStr((unsigned)rc), PtlEventKindStr(ev.type));
    if (rc != PTL_FAIL)
        mp_die("PtlEQGet on the empty EQ of the failed NI: %s, not PTL_FAIL",
               PtlErrorStr((unsigned)rc));
    if ((rc = PtlEQWait(g_eq, &ev)) != PTL_FAIL)
        mp_die("PtlEQWait on the empty EQ of the failed NI: %s, not PTL_FAIL",
               PtlErrorStr((unsigned)rc));
    printf("rank 0: OK: every operation to the dead rank completed with PTL_NI_PEER_DIED\n");
    fflush(stdout);
    MP_CHECK(PtlNIFini(m.ni));
    PtlFini();
    free(m.ids);
    free(m.seen);
    return 0;
}
