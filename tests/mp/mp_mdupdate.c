/*
 * mp_mdupdate - PtlMDUpdate's (and PtlMEMDPost's) test EQ counts the events
 * on their way to it, not only the unread ones (§6.11; REF: eq->pending).
 *
 * The receive idiom of Open MPI's MTL and of SPEC32's MPI example: an
 * "unexpected" MD at the tail of the list, with START events disabled,
 * takes what no posted receive wants; a receive is posted inactive
 * (threshold 0) and made active with PtlMDUpdate(..., unexpected_eq), which
 * must refuse (PTL_MD_NO_UPDATE) while any message the unexpected MD took is
 * not yet visible in unexpected_eq, so the caller searches again. A large
 * message's END is posted when its data has arrived (a rendezvous pull, copy
 * mode's last fragment, a rendezvous reply's RFIN), and until then the EQ
 * was empty: an adversarial client saw PtlMDUpdate return PTL_OK with a
 * 1 MiB put already taken by the unexpected MD, and its PUT_END arrived
 * afterwards (both modes): the receive was posted after the message had
 * bypassed it.
 *
 *   usage (under ptlrun -n 2): mp_mdupdate put|get [bytes]
 *
 * Rank 1 runs host matching in both modes (mp_usr1_block_host_peers) and
 * sends its request while rank 0 is stopped (SIGSTOP, SIGCONT: as
 * mp_rfin_died), so its call cannot see an answer; once it stops calling
 * Portals, nothing on rank 1 streams the rest of the put (copy mode,
 * PTL_RNDV_MODE=2) or pulls the get's reply. Rank 0 (the mode under test)
 * waits until its engine accepted the request (the unexpected MD's
 * threshold, read with PtlMDUpdate(md, &old, NULL, PTL_EQ_NONE)), checks
 * that the unexpected EQ is still empty (START disabled), and then
 * PtlMDUpdate of the posted receive and PtlMEMDPost with that EQ as test EQ
 * must both say PTL_MD_NO_UPDATE. It wakes rank 1 (SIGUSR1), gets the END
 * (data checked on the receiving side), and the same update must now
 * succeed. Prints "rank 0: OK".
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_U (MP_PT_USER + 4)
#define B_PID 0x7f1
#define B_MSG 0x7f2
#define UNEX_THRESH 1000 /* counts down per message taken: rank 0 sees acceptance */

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "put") && strcmp(argv[1], "get"))) {
        fprintf(stderr, "usage: mp_mdupdate put|get [bytes]\n");
        return 2;
    }
    bool get = !strcmp(argv[1], "get");
    uint64_t len = argc > 2 ? strtoull(argv[2], NULL, 0) : (1u << 20);
    mp_usr1_block_host_peers(); /* see the top: rank 1 stops making progress */

    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq, ueq, req;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &ueq));
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &req));
    static uint64_t peer_pid;
    mp_post(&m, PT_U, B_PID, &peer_pid, sizeof peer_pid, 1, PTL_MD_OP_PUT, eq, PTL_RETAIN, NULL);
    uint8_t *ubuf = malloc(len + 1), *rbuf = malloc(len + 1);
    if (!ubuf || !rbuf)
        mp_die("malloc");
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    ptl_handle_me_t ume = PTL_INVALID_HANDLE, rme = PTL_INVALID_HANDLE;
    ptl_handle_md_t rmd = PTL_INVALID_HANDLE, umd = PTL_INVALID_HANDLE;
    ptl_md_t active = {rbuf, len, 1, 0, PTL_MD_OP_PUT | PTL_MD_OP_GET, NULL, req};
    if (m.rank == 0) {
        /* the unexpected MD (START disabled, as Open MPI's), then a receive
         * posted before it, inactive */
        mp_fill(ubuf, len, 0, 2, 0);
        umd = mp_post(&m, PT_U, B_MSG, ubuf, len, UNEX_THRESH,
                PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                ueq, PTL_RETAIN, &ume);
        MP_CHECK(PtlMEInsert(ume, any, B_MSG, 0, PTL_RETAIN, PTL_INS_BEFORE, &rme));
        ptl_md_t inactive = active;
        inactive.threshold = 0;
        MP_CHECK(PtlMDAttach(rme, inactive, PTL_RETAIN, &rmd));
    }
    mp_barrier(&m);
    pid_t peer = mp_pid_swap(&m, PT_U, B_PID, eq, &peer_pid);
    mp_barrier(&m);

    if (m.rank == 1) {
        memset(ubuf, 0, len);
        if (!get)
            mp_fill(ubuf, len, 1, 1, 0);
        ptl_handle_md_t md = mp_bind(&m, ubuf, len, 1, 0, eq);
        /* Rank 0 stopped: our call sends the request and cannot see an
         * answer (a reply it would pull, credits for the rest of a put). */
        mp_stop_peer(peer, "rank 0");
        if (get)
            MP_CHECK(PtlGet(md, m.ids[0], PT_U, 0, B_MSG, 0));
        else
            MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[0], PT_U, 0, B_MSG, 0, 0));
        if (kill(peer, SIGCONT))
            mp_die("kill(rank 0, SIGCONT)");
        mp_usr1_wait("rank 0's updates"); /* no Portals calls meanwhile */
        if (get) {
            mp_expect(eq, PTL_EVENT_REPLY_START, "the get");
            ptl_event_t ev = mp_expect(eq, PTL_EVENT_REPLY_END, "the get");
            if (ev.mlength != len || mp_check_pattern(ubuf, len, 0, 2, 0) >= 0)
                mp_die("the get's reply: mlength %llu, data wrong", (unsigned long long)ev.mlength);
        } else {
            mp_expect(eq, PTL_EVENT_SEND_START, "the put");
            mp_expect(eq, PTL_EVENT_SEND_END, "the put");
        }
        mp_fini(&m);
        free(ubuf);
        free(rbuf);
        return 0;
    }

    /* accepted: the unexpected MD's threshold went down by one */
    mp_doing("waiting for the request to be accepted");
    uint64_t t0 = mp_now_ms();
    for (ptl_md_t cur = {.threshold = UNEX_THRESH}; cur.threshold == UNEX_THRESH;) {
        if (mp_now_ms() - t0 > MP_WAIT_MS)
            mp_die("rank 1's %s was not accepted in %d ms", argv[1], MP_WAIT_MS);
        usleep(200);
        MP_CHECK(PtlMDUpdate(umd, &cur, NULL, PTL_EQ_NONE));
    }
    ptl_event_t ev;
    int rc = PtlEQGet(ueq, &ev);
    if (rc != PTL_EQ_EMPTY)
        mp_die("the unexpected EQ holds %s already (rc %s): rank 1 went on", PtlEventKindStr(ev.type),
               PtlErrorStr((unsigned)rc));
    rc = PtlMDUpdate(rmd, NULL, &active, ueq);
    if (rc != PTL_MD_NO_UPDATE)
        mp_die("PtlMDUpdate with the %s's END on its way to the test EQ: %s, not PTL_MD_NO_UPDATE",
               argv[1], PtlErrorStr((unsigned)rc));
    ptl_handle_me_t me2;
    ptl_handle_md_t md2;
    rc = PtlMEMDPost(m.ni, rme, any, B_MSG, 0, PTL_RETAIN, PTL_INS_BEFORE, active, PTL_RETAIN, &me2,
                     &md2, ueq);
    if (rc != PTL_MD_NO_UPDATE)
        mp_die("PtlMEMDPost with the %s's END on its way to the test EQ: %s, not PTL_MD_NO_UPDATE",
               argv[1], PtlErrorStr((unsigned)rc));
    MP_CHECK(PtlMEUnlink(me2));
    if (kill(peer, SIGUSR1))
        mp_die("kill(rank 1, SIGUSR1)");
    ev = mp_expect(ueq, get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END, "the unexpected MD");
    if (ev.mlength != len)
        mp_die("END mlength %llu, want %llu", (unsigned long long)ev.mlength,
               (unsigned long long)len);
    if (!get && mp_check_pattern(ubuf, len, 1, 1, 0) >= 0)
        mp_die("the put's data in the unexpected MD is wrong");
    /* searched again (the END read): now the receive can be posted */
    MP_CHECK(PtlMDUpdate(rmd, NULL, &active, ueq));
    mp_fini(&m);
    free(ubuf);
    free(rbuf);
    printf("rank 0: OK\n");
    return 0;
}
