/*
 * mp_kill - a rank dies by SIGKILL in the middle of a 64 MiB transfer.
 *
 *   usage (under ptlrun): mp_kill target|initiator|late|getlate|pdone [size [serve_ms]]
 *
 * target:    rank 0 puts `size` bytes to rank 1; rank 1 raises SIGKILL as
 *            soon as it sees PUT_START (its engine is pulling the data).
 * initiator: rank 1 puts `size` bytes to rank 0 and raises SIGKILL as soon as
 *            it sees SEND_START (rank 0's engine is pulling from it).
 * late:      as initiator, but rank 1 keeps its engine running (PtlEQPoll)
 *            for serve_ms (500) after SEND_START before it raises SIGKILL, so that
 *            rank 0's pull has begun; for PTL_OFI_FAULT (transport/ofi_pull.c,
 *            tests only), with which that pull never ends by itself: rank 0
 *            must give it up when it finds rank 1 lost (ofi_pull,
 *            pull_peer_lost). Rank 0 then waits for the failed PUT_END, which
 *            must come before PtlEQPoll reports the NI's failure (PTL_FAIL:
 *            exit 6 if it came first).
 * getlate:   as late, for a get: rank 0 gets `size` bytes from rank 1, which
 *            serves for serve_ms after GET_START and then raises SIGKILL;
 *            rank 0's pull of the reply is under way (over ofi with
 *            PTL_OFI_FAULT it never ends by itself), and its failed
 *            REPLY_END must come before PTL_FAIL.
 * pdone:     as initiator, but rank 1 stops itself (SIGSTOP, NIC thread and
 *            all) at SEND_START and a child of it kills it 300 ms later: its
 *            part of the cooperative put (protocols/wire.h, PUSH) is never
 *            written whole (use a size whose half takes the NIC thread
 *            milliseconds: 256 MiB). With PTL_RNDV_COOP_TAKEBACK=0, rank 0 pulls its own
 *            part and then waits for a PDONE that never comes, until its
 *            engine sees the job failed and the initiator dead
 *            (engine/target.c, coop_lost): PUT_END with PEER_DIED.
 * MP_KILL_WAIT (environment): how rank 0 waits in target, initiator, late and
 * getlate: poll (default: PtlEQPoll, 1 s timeout), wait (PtlEQWait) or get
 * (spinning on PtlEQGet). The failed END must come before PTL_FAIL in each.
 * The survivor waits (bounded) for its events and reports what it got: it
 * exits 0 as soon as an event reports the failure (a line on stdout names
 * the event), else it is terminated by
 * ptlrun after the grace period. Either way ptlrun must exit 137 (rank 1's
 * SIGKILL) within a few seconds. Run it through mp_driver, which checks ptlrun's exit status, time,
 * and that nothing is left behind.
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <errno.h>

#define PT_K (MP_PT_USER + 5)

enum wait_style { W_POLL, W_WAIT, W_GET };

/* The next event of eq by the chosen style: PTL_OK, PTL_EQ_DROPPED,
 * PTL_EQ_EMPTY (nothing yet) or the NI's failure. */
static int next_event(enum wait_style ws, ptl_handle_eq_t eq, ptl_event_t *ev)
{
    int which;
    switch (ws) {
    case W_WAIT:
        return PtlEQWait(eq, ev);
    case W_GET:
        return PtlEQGet(eq, ev);
    default:
        return PtlEQPoll(&eq, 1, 1000, ev, &which);
    }
}

int main(int argc, char **argv)
{
    /* static: the survivor returns without mp_fini (its NI failed), and LeakSanitizer
     * must still reach the rank map (a stack copy may be overwritten by then) */
    static struct mp m;
    mp_init(&m, 2);
    if (argc < 2 || (strcmp(argv[1], "target") && strcmp(argv[1], "initiator") &&
                     strcmp(argv[1], "late") && strcmp(argv[1], "getlate") &&
                     strcmp(argv[1], "pdone")))
        mp_die("usage: mp_kill target|initiator|late|getlate|pdone [size [serve_ms]]");
    bool victim_is_target = !strcmp(argv[1], "target");
    bool stop_first = !strcmp(argv[1], "pdone");
    bool get = !strcmp(argv[1], "getlate");
    bool late = get || !strcmp(argv[1], "late");
    uint64_t size = argc > 2 ? strtoull(argv[2], NULL, 0) : 64ull << 20;
    uint64_t serve_ms = argc > 3 ? strtoull(argv[3], NULL, 0) : 500;
    const char *wenv = getenv("MP_KILL_WAIT");
    enum wait_style ws = W_POLL;
    if (wenv && !strcmp(wenv, "wait"))
        ws = W_WAIT;
    else if (wenv && !strcmp(wenv, "get"))
        ws = W_GET;
    else if (wenv && *wenv && strcmp(wenv, "poll"))
        mp_die("MP_KILL_WAIT: poll, wait or get, not %s", wenv);
    uint8_t *buf = malloc(size);
    if (!buf)
        mp_die("out of memory");
    mp_fill(buf, size, m.rank, 1, 0);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    unsigned receiver = victim_is_target ? 1 : 0, sender = 1 - receiver;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (get) { /* rank 1 serves its buffer, rank 0 gets it */
        if (m.rank == 1)
            mp_post(&m, PT_K, 9, buf, size, PTL_MD_THRESH_INF, PTL_MD_OP_GET, eq, PTL_RETAIN,
                    NULL);
        else if (m.rank == 0)
            md = mp_bind(&m, buf, size, PTL_MD_THRESH_INF, 0, eq);
    } else if (m.rank == receiver)
        mp_post(&m, PT_K, 9, buf, size, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
                eq, PTL_RETAIN, NULL);
    else if (m.rank == sender)
        md = mp_bind(&m, buf, size, PTL_MD_THRESH_INF, 0, eq);
    /* pdone: rank 1's killer, forked now (a fork at SEND_START would give its
     * NIC thread milliseconds to write its part); it waits for a byte on a
     * pipe, then 300 ms, then SIGKILLs rank 1. */
    int go[2] = {-1, -1};
    if (stop_first && m.rank == 1) {
        if (pipe(go) != 0)
            mp_die("pipe: %s", strerror(errno));
        pid_t me = getpid(), k = fork();
        if (k < 0)
            mp_die("fork: %s", strerror(errno));
        if (k == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) == 1) { /* EOF: rank 1 ended first */
                struct timespec d = {0, 300 * 1000 * 1000};
                nanosleep(&d, NULL);
                kill(me, SIGKILL);
            }
            _exit(0);
        }
        close(go[0]);
        fprintf(stderr, "rank 1: will stop at SEND_START; killed 300 ms later\n");
        fflush(stderr);
    }
    mp_barrier(&m);
    uint64_t tb = mp_now_ms(); /* both ranks' times below count from here */

    if (get && m.rank == 0)
        MP_CHECK(PtlGet(md, m.ids[1], PT_K, 0, 9, 0));
    else if (!get && m.rank == sender)
        MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[receiver], PT_K, 0, 9, 0, 0));
    if (m.rank == 1) {
        mp_expect(eq, get ? PTL_EVENT_GET_START
                      : victim_is_target ? PTL_EVENT_PUT_START : PTL_EVENT_SEND_START,
                  "the transfer to start");
        if (stop_first) {
            if (write(go[1], "g", 1) != 1)
                mp_die("write: %s", strerror(errno));
            raise(SIGSTOP);
        }
        if (late) {
            /* rank 0's pull is under way; keep serving its reads meanwhile
             * (host mode: only inside a Ptl call) */
            ptl_event_t ev;
            for (uint64_t t0 = mp_now_ms(), t; (t = mp_now_ms() - t0) < serve_ms;)
                (void)mp_poll(eq, &ev, (unsigned)(serve_ms - t));
        }
        fprintf(stderr, "rank 1: raising SIGKILL mid-transfer (%llu ms after the barrier)\n",
                (unsigned long long)(mp_now_ms() - tb));
        fflush(stderr);
        raise(SIGKILL);
    }
    if (m.rank == 0) {
        /* Wait for the end of the transfer; report what the library says. */
        uint64_t t0 = mp_now_ms();
        ptl_event_t ev;
        bool ni_failed = false;
        while (mp_now_ms() - t0 < 60000) {
            int rc = next_event(ws, eq, &ev);
            if (rc == PTL_EQ_EMPTY)
                continue;
            if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
                /* e.g. PTL_FAIL: the NI knows the job failed. Reported: good
                 * (late: the pull must still end, with its PUT_END). */
                if (!ni_failed)
                    fprintf(stderr, "rank 0: %s: %s (%llu ms into its wait)\n",
                            ws == W_WAIT ? "PtlEQWait" : ws == W_GET ? "PtlEQGet" : "PtlEQPoll",
                            PtlErrorStr((unsigned)rc), (unsigned long long)(mp_now_ms() - t0));
                ni_failed = true;
                if (!late)
                    return 0;
                struct timespec d = {0, 1000 * 1000};
                nanosleep(&d, NULL);
                continue;
            }
            fprintf(stderr, "rank 0: %s ni_fail_type %s mlength %llu\n",
                    PtlEventKindStr(ev.type), PtlNIFailStr(m.ni, ev.ni_fail_type),
                    (unsigned long long)ev.mlength);
            if (ev.ni_fail_type != PTL_NI_OK) {
                printf("rank 0: the failure reported by %s (%llu ms into its wait)\n",
                       PtlEventKindStr(ev.type), (unsigned long long)(mp_now_ms() - t0));
                fflush(stdout);
                if (ni_failed) {
                    /* README: PtlEQWait and PtlEQPoll return the failed
                     * events of operations with a dead peer before they
                     * report PTL_FAIL (over ofi a pull's reads still posted
                     * at the death once came after it: engine/nic.h,
                     * settle_until) */
                    printf("rank 0: PTL_FAIL came before that event\n");
                    return 6;
                }
                if (!late)
                    return 0; /* (ptlrun ends a failed job's survivors 2 s on) */
                /* late (the ofi pull tests, run with ptlrun --grace 10): from
                 * now on the memory is the application's again, nothing may
                 * land in it (a read posted before the death whose bytes
                 * waited in a socket and landed after the event, when the
                 * owner may have freed the buffer: transport/ofi_pull.c,
                 * pull_drain). The engine keeps running for 300 ms. */
                uint8_t *snap = malloc(size);
                if (!snap)
                    mp_die("out of memory");
                memcpy(snap, buf, size);
                for (uint64_t t1 = mp_now_ms(); mp_now_ms() - t1 < 300;) {
                    int which;
                    if (PtlEQPoll(&eq, 1, 10, &ev, &which) != PTL_EQ_EMPTY) {
                        struct timespec d = {0, 1000 * 1000};
                        nanosleep(&d, NULL);
                    }
                }
                uint64_t changed = 0;
                for (uint64_t i = 0; i < size; i++)
                    changed += snap[i] != buf[i];
                free(snap);
                if (changed) {
                    printf("rank 0: %llu bytes of the buffer changed after the failure was "
                           "reported\n", (unsigned long long)changed);
                    return 5;
                }
                printf("rank 0: the buffer stayed as it was after the failure\n");
                return 0; /* the failure was reported: what we wanted. Exit 0 so
                           * that ptlrun's status is rank 1's death (137)
                           * whichever exit it reaps first. */
            }
        }
        return 4;
    }
    /* other ranks: wait to be stopped */
    ptl_event_t ev;
    mp_poll(eq, &ev, 60000);
    return 0;
}
