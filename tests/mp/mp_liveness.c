/*
 * mp_liveness - the last rank leaves while the others have NOTHING in flight
 * to it (issue 17, docs/ofi.md "Peer death in a PMIx job").
 *
 *   usage (3 ranks or more): mp_liveness kill|killspin|fini|finilate|busy|stop|stopspin
 *
 * After a barrier the last rank (the victim) waits 300 ms, then
 *   kill: raises SIGKILL. Every other rank sits in PtlEQPoll on an EQ nothing
 *         is sent to, and never initiates anything to the victim: its NI must
 *         fail (PtlEQPoll returns PTL_FAIL) within 10 s of the barrier. It
 *         prints "rank R: saw the death: ..., N ms after the barrier" and
 *         exits 0; it exits 4 when nothing came.
 *   killspin: as kill, but the others spin on PtlEQGet (a client that polls
 *         and computes) instead of blocking in PtlEQPoll: PtlEQGet on the
 *         failed NI's empty EQ must return PTL_FAIL, not PTL_EQ_EMPTY for ever.
 *   fini: calls PtlNIFini and PtlFini and exits 0 (an orderly exit). The
 *         others must see NO failure: rank 0 and the ranks from 2 on for 4 s
 *         (longer than a PMIx job's probe needs to judge a peer dead), then
 *         rank 0 puts 8 bytes with an ACK to rank 1; rank 1 until that put
 *         has arrived (all events PTL_NI_OK). They print "rank R: no false
 *         death" and exit 0.
 *   finilate: as fini, but the rank before the victim also puts 8 bytes (no
 *         ACK, no events) to the victim 800 ms after the barrier, once it has
 *         left: a late message to a rank that left in order goes nowhere, and
 *         must not hold up that sender's traffic to the others (its probes:
 *         over ofi one send stuck towards the departed rank blocked every
 *         later send of the rank, which then took its live peers for dead).
 *         The quiet time is 6 s.
 *   busy: the last rank makes no Portals call for 6 s (alive, computing);
 *         the others see no failure for 6.5 s, then all meet in a barrier
 *         and print "rank R: no false death".
 *   stop: the last rank stops (SIGSTOP) right after PtlNIInit, before the
 *         barrier, and a child of its own continues it (SIGCONT) 5 s later:
 *         a stopped process is alive, not dead (docs/ofi.md: a peer that
 *         hangs is no death). Its connections to the others were not set up
 *         yet, so their probes stay uncompleted meanwhile (rxm's connection
 *         setup needs the peer to run): an observer that judged by time
 *         alone took it for dead after 2.5 s. All meet in the barrier and
 *         print "rank R: no false death".
 *   stopspin: a peer stopped in the middle of an exchange with a spinner.
 *         Rank 0 and the last rank play 400 round trips of 8 bytes (START and
 *         SEND_END events on; payload and header data the round's number),
 *         rank 0 waiting by spinning on PtlEQGet, the last rank in
 *         PtlEQWait. Having taken ping 200, the last rank stops (SIGSTOP) for
 *         2 s, continued by a child of its own, then answers. Rank 0's spin
 *         must read PTL_EQ_EMPTY all that time, never a failure (a stopped
 *         process is alive), must see a gap of at least 1.5 s between two
 *         events (the stop happened), and every event must come, PTL_NI_OK, in
 *         order and whole. The ranks between go straight to the closing
 *         barrier. All print "rank R: no false death".
 */
#include "mp_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT_L (MP_PT_USER + 8)
#define STOPSPIN_ROUNDS 400u
#define STOPSPIN_AT 200u

/* stopspin's event bookkeeping: the SEND_ENDs and PUT_ENDs seen so far; a
 * PUT_END must carry the next round's number in its header data and in the
 * word it wrote. */
struct stopspin {
    unsigned rank;
    uint64_t sends, puts, word;
    uint64_t last_ms, gap_ms;
};

static void stopspin_event(struct stopspin *st, const ptl_event_t *ev)
{
    if (ev->ni_fail_type != PTL_NI_OK)
        mp_die("rank %u: stopspin: %s failed (%s)", st->rank, PtlEventKindStr(ev->type),
               PtlNIFailStr(PTL_INVALID_HANDLE, ev->ni_fail_type));
    if (ev->type == PTL_EVENT_SEND_END) {
        st->sends++;
    } else if (ev->type == PTL_EVENT_PUT_END) {
        st->puts++;
        if (ev->hdr_data != st->puts || st->word != st->puts)
            mp_die("rank %u: stopspin: round %llu's message says %llu, its word %llu", st->rank,
                   (unsigned long long)st->puts, (unsigned long long)ev->hdr_data,
                   (unsigned long long)st->word);
    } else if (ev->type != PTL_EVENT_SEND_START && ev->type != PTL_EVENT_PUT_START) {
        mp_die("rank %u: stopspin: unexpected event %s", st->rank, PtlEventKindStr(ev->type));
    }
    uint64_t now = mp_now_ms();
    if (now - st->last_ms > st->gap_ms)
        st->gap_ms = now - st->last_ms;
    st->last_ms = now;
}

/* Events until st has `sends` SEND_ENDs and `puts` PUT_ENDs: spinning on
 * PtlEQGet (spin) or in PtlEQWait. */
static void stopspin_until(struct stopspin *st, ptl_handle_eq_t eq, bool spin, uint64_t sends,
                           uint64_t puts)
{
    uint64_t t0 = mp_now_ms();
    while (st->sends < sends || st->puts < puts) {
        ptl_event_t ev;
        int rc = spin ? PtlEQGet(eq, &ev) : PtlEQWait(eq, &ev);
        if (rc == PTL_EQ_EMPTY && spin) {
            if (mp_now_ms() - t0 > 30000)
                mp_die("rank %u: stopspin: nothing for 30 s", st->rank);
            continue;
        }
        if (rc != PTL_OK)
            mp_die("rank %u: stopspin: %s %s after round %llu", st->rank,
                   spin ? "PtlEQGet" : "PtlEQWait", PtlErrorStr((unsigned)rc),
                   (unsigned long long)st->puts);
        stopspin_event(st, &ev);
    }
}

static int stopspin(struct mp *m)
{
    unsigned victim = m->size - 1;
    bool mine = m->rank == 0 || m->rank == victim;
    static struct stopspin st;
    static uint64_t out;
    st.rank = m->rank;
    ptl_handle_eq_t eq;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (mine) {
        MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &eq));
        mp_post(m, PT_L, 7, &st.word, sizeof st.word, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
        md = mp_bind(m, &out, sizeof out, PTL_MD_THRESH_INF, 0, eq);
    }
    mp_barrier(m);
    st.last_ms = mp_now_ms();
    if (m->rank == 0) {
        for (uint64_t i = 1; i <= STOPSPIN_ROUNDS; i++) {
            stopspin_until(&st, eq, true, i - 1, i - 1); /* the source is ours again */
            out = i;
            MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m->ids[victim], PT_L, 0, 7, 0, i));
        }
        stopspin_until(&st, eq, true, STOPSPIN_ROUNDS, STOPSPIN_ROUNDS);
        printf("rank 0: %u round trips, the longest wait between two events %llu ms\n",
               STOPSPIN_ROUNDS, (unsigned long long)st.gap_ms);
        if (st.gap_ms < 1500)
            mp_die("rank 0: stopspin: no wait of 1.5 s: rank %u did not stop", victim);
    } else if (m->rank == victim) {
        for (uint64_t i = 1; i <= STOPSPIN_ROUNDS; i++) {
            stopspin_until(&st, eq, false, i - 1, i);
            if (i == STOPSPIN_AT) {
                pid_t me = getpid(), c = fork();
                if (c < 0)
                    mp_die("fork: %s", strerror(errno));
                if (c == 0) {
                    usleep(2000000);
                    kill(me, SIGCONT);
                    _exit(0);
                }
                fprintf(stderr, "rank %u: ping %llu taken, stopping for 2 s\n", m->rank,
                        (unsigned long long)i);
                fflush(stderr);
                raise(SIGSTOP);
                (void)waitpid(c, NULL, 0);
            }
            out = i;
            MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m->ids[0], PT_L, 0, 7, 0, i));
        }
        stopspin_until(&st, eq, false, STOPSPIN_ROUNDS, STOPSPIN_ROUNDS);
    }
    mp_barrier(m); /* a rank whose NI failed dies here */
    printf("rank %u: no false death\n", m->rank);
    fflush(stdout);
    mp_fini(m);
    return 0;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 3);
    if (argc < 2 || (strcmp(argv[1], "kill") && strcmp(argv[1], "killspin") &&
                     strcmp(argv[1], "fini") &&
                     strcmp(argv[1], "finilate") && strcmp(argv[1], "busy") &&
                     strcmp(argv[1], "stop") && strcmp(argv[1], "stopspin")))
        mp_die("usage: mp_liveness kill|killspin|fini|finilate|busy|stop|stopspin");
    if (!strcmp(argv[1], "stopspin"))
        return stopspin(&m);
    bool spin = !strcmp(argv[1], "killspin");
    bool kill_it = spin || !strcmp(argv[1], "kill");
    bool late = !strcmp(argv[1], "finilate");
    unsigned victim = m.size - 1;
    if (!strcmp(argv[1], "stop")) {
        if (m.rank == victim) {
            pid_t me = getpid(), c = fork();
            if (c < 0)
                mp_die("fork: %s", strerror(errno));
            if (c == 0) {
                usleep(5000000);
                kill(me, SIGCONT);
                _exit(0);
            }
            fprintf(stderr, "rank %u: stopping for 5 s\n", m.rank);
            fflush(stderr);
            uint64_t ts = mp_now_ms();
            raise(SIGSTOP);
            (void)waitpid(c, NULL, 0);
            fprintf(stderr, "rank %u: continued after %llu ms\n", m.rank,
                    (unsigned long long)(mp_now_ms() - ts));
        }
        mp_barrier(&m); /* a survivor whose NI failed dies here (PtlEQPoll) */
        printf("rank %u: no false death\n", m.rank);
        fflush(stdout);
        mp_fini(&m);
        return 0;
    }
    uint64_t quiet_ms = late ? 6000 : 4000;
    uint64_t word = 0, src = 0x1234, late_src = 0x5678;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    if (m.rank == 1)
        mp_post(&m, PT_L, 5, &word, sizeof word, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    if (m.rank == 0)
        md = mp_bind(&m, &src, sizeof src, PTL_MD_THRESH_INF, 0, eq);
    ptl_handle_md_t late_md = PTL_INVALID_HANDLE;
    if (late && m.rank == victim - 1)
        late_md = mp_bind(&m, &late_src, sizeof late_src, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    mp_barrier(&m);
    uint64_t t0 = mp_now_ms();

    if (!strcmp(argv[1], "busy")) {
        /* the last rank makes no Portals call for 6 s (in host mode nothing of
         * it runs: its engine runs only inside its calls) */
        if (m.rank == victim) {
            usleep(6000000);
        } else {
            while (mp_now_ms() - t0 < 6500) {
                ptl_event_t e;
                int w, rc = PtlEQPoll(&eq, 1, 500, &e, &w);
                if (rc == PTL_EQ_EMPTY)
                    continue;
                fprintf(stderr, "rank %u: while rank %u is busy: PtlEQPoll %s\n", m.rank, victim,
                        PtlErrorStr((unsigned)rc));
                return 3;
            }
        }
        mp_barrier(&m);
        printf("rank %u: no false death\n", m.rank);
        fflush(stdout);
        mp_fini(&m);
        return 0;
    }

    if (m.rank == victim) {
        usleep(300000);
        if (kill_it) {
            fprintf(stderr, "rank %u: raising SIGKILL\n", m.rank);
            fflush(stderr);
            raise(SIGKILL);
        }
        MP_CHECK(PtlNIFini(m.ni));
        PtlFini();
        fprintf(stderr, "rank %u: left in order\n", m.rank);
        return 0;
    }

    ptl_event_t ev;
    int which;
    if (kill_it) {
        while (mp_now_ms() - t0 < 10000) {
            int rc = spin ? PtlEQGet(eq, &ev) : PtlEQPoll(&eq, 1, 500, &ev, &which);
            if (rc == PTL_EQ_EMPTY)
                continue;
            if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
                printf("rank %u: saw the death: %s %s, %llu ms after the barrier\n", m.rank,
                       spin ? "PtlEQGet" : "PtlEQPoll", PtlErrorStr((unsigned)rc),
                       (unsigned long long)(mp_now_ms() - t0));
                fflush(stdout);
                return 0;
            }
            fprintf(stderr, "rank %u: unexpected event %s\n", m.rank, PtlEventKindStr(ev.type));
            return 3;
        }
        fprintf(stderr, "rank %u: no failure within 10 s of the barrier\n", m.rank);
        return 4;
    }

    if (late && m.rank == victim - 1) {
        /* the victim left 300 ms after the barrier (its bye has come by now,
         * unless this machine is very busy: then it comes later) */
        while (mp_now_ms() - t0 < 800)
            usleep(10000);
        MP_CHECK(PtlPut(late_md, PTL_NO_ACK_REQ, m.ids[victim], PT_L, 0, 5, 0, 0));
        fprintf(stderr, "rank %u: put 8 bytes to rank %u, which left\n", m.rank, victim);
    }

    if (m.rank == 1) {
        /* no failure, then rank 0's put (it comes 4 s after the barrier) */
        bool got_start = false, got_end = false;
        while (!got_end && mp_now_ms() - t0 < 30000) {
            int rc = PtlEQPoll(&eq, 1, 500, &ev, &which);
            if (rc == PTL_EQ_EMPTY)
                continue;
            if (rc != PTL_OK || ev.ni_fail_type != PTL_NI_OK ||
                (ev.type != PTL_EVENT_PUT_START && ev.type != PTL_EVENT_PUT_END)) {
                fprintf(stderr, "rank 1: after an orderly exit: PtlEQPoll %s (event %s %s)\n",
                        PtlErrorStr((unsigned)rc), rc == PTL_OK ? PtlEventKindStr(ev.type) : "-",
                        rc == PTL_OK ? PtlNIFailStr(m.ni, ev.ni_fail_type) : "-");
                return 3;
            }
            got_start |= ev.type == PTL_EVENT_PUT_START;
            got_end |= ev.type == PTL_EVENT_PUT_END;
        }
        if (!got_start || !got_end || word != 0x1234)
            mp_die("rank 0's put: start %d end %d word %#llx", got_start, got_end,
                   (unsigned long long)word);
        if (mp_now_ms() - t0 < 3000)
            mp_die("rank 0's put came %llu ms after the barrier, before its quiet 4 s",
                   (unsigned long long)(mp_now_ms() - t0));
    } else {
        while (mp_now_ms() - t0 < quiet_ms) {
            int rc = PtlEQPoll(&eq, 1, 500, &ev, &which);
            if (rc == PTL_EQ_EMPTY)
                continue;
            fprintf(stderr, "rank %u: after an orderly exit: PtlEQPoll %s (event %s)\n", m.rank,
                    PtlErrorStr((unsigned)rc), rc == PTL_OK ? PtlEventKindStr(ev.type) : "-");
            return 3;
        }
    }
    if (m.rank == 0) {
        MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[1], PT_L, 0, 5, 0, 0));
        const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END, PTL_EVENT_ACK};
        ptl_event_t got[3];
        mp_expect_all(eq, k, 3, got, "rank 0's put and its ACK"); /* (each PTL_NI_OK) */
    }
    printf("rank %u: no false death\n", m.rank);
    fflush(stdout);
    /* rank 0 must not leave before rank 1 has its put; rank 1's PtlNIFini
     * comes after it. (No mp_barrier: the victim is gone.) */
    usleep(200000);
    MP_CHECK(PtlNIFini(m.ni));
    PtlFini();
    return 0;
}
