/*
 * mp_scale - issue 13's scale tests: every pair of a large job, and incast.
 *
 *   usage (under ptlrun -n N):
 *     mp_scale alltoall SIZE...   every rank puts SIZE bytes to every other
 *                                 rank, for each SIZE; every byte checked
 *     mp_scale incast COUNT [EQ]  every rank but 0 puts COUNT 8-byte messages
 *                                 and one 4 KiB message to rank 0, which
 *                                 checks each one. EQ: rank 0's EQ entries
 *                                 (default: room for every event of the run,
 *                                 so that no event can be dropped whatever
 *                                 the scheduling; smaller, as a client sizes
 *                                 it, the engine holds requests back while
 *                                 it is full: docs/waiting.md "room wait")
 *     mp_scale ring ROUNDS SIZE   every rank puts SIZE bytes to its right
 *                                 neighbour and waits for its left one's, ROUNDS
 *                                 times (a shift, all ranks at once; no barrier
 *                                 between rounds); every byte checked
 *     mp_scale stop|kill ROUNDS   rank 1 puts to every rank and stops itself
 *                                 (SIGSTOP) or dies (SIGKILL) right after, with
 *                                 its puts in flight; the others put ROUNDS
 *                                 8-byte words to each other and one to rank 1.
 *                                 stop: the others' traffic among themselves
 *                                 completes while rank 1 is stopped, then rank
 *                                 0 continues it (SIGCONT) and everything is
 *                                 checked. kill: every survivor sees the
 *                                 failure (PTL_FAIL or PTL_NI_PEER_DIED)
 *                                 within seconds and exits 0, so that ptlrun's
 *                                 status is rank 1's (137)
 *
 * alltoall runs in steps of W destinations (pairwise shifts: in step j rank
 * r sends to r + j*W + 1 .. r + j*W + W and receives from the same shifts
 * backwards), with one ME per source posted before the step's barrier, so a
 * rank holds 2 x W buffers of SIZE whatever N is. Every put and every event
 * is checked (PTL_NO_SPACE or any other error fails the test, as does a wait
 * over MP_WAIT_MS). incast puts with PTL_NO_ACK_REQ as fast as the credits
 * allow: 255 senders against one receiver's bitmap and rings.
 */
#include "mp_util.h"

#include "shm_region.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA (MP_PT_USER + 0)
#define PT_LEFT (MP_PT_USER + 1) /* fault modes: "I left the barrier" */
#define W       16u

static void wait_events(struct mp *m, ptl_handle_eq_t eq, unsigned want_put, unsigned want_send,
                        uint64_t size, uint8_t *got_from)
{
    unsigned puts = 0, sends = 0;
    while (puts < want_put || sends < want_send) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, MP_WAIT_MS))
            mp_die("size %llu: %u/%u PUT_END and %u/%u SEND_END after %d ms",
                   (unsigned long long)size, puts, want_put, sends, want_send, MP_WAIT_MS);
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("size %llu: %s failed (%s)", (unsigned long long)size,
                   PtlEventKindStr(ev.type), PtlNIFailStr(m->ni, ev.ni_fail_type));
        if (ev.type == PTL_EVENT_PUT_END) {
            unsigned s = (unsigned)ev.hdr_data;
            if (s >= m->size || got_from[s]++ || ev.mlength != size)
                mp_die("size %llu: PUT_END from %u (mlength %llu) unexpected or repeated",
                       (unsigned long long)size, s, (unsigned long long)ev.mlength);
            puts++;
        } else if (ev.type == PTL_EVENT_SEND_END) {
            sends++;
        }
    }
}

/* The first and last 8 bytes of a message (all of it below 16 bytes). */
static uint64_t stamp_word(unsigned who, unsigned tag, unsigned k)
{
    return ((uint64_t)who << 32) ^ ((uint64_t)tag << 8) ^ (k * 0x9E3779B97F4A7C15ull);
}

static void *stamp(void *buf, uint64_t size, unsigned who, unsigned tag)
{
    uint8_t *b = buf;
    for (uint64_t i = 0; i < size && i < 8; i++)
        b[i] = (uint8_t)(stamp_word(who, tag, 0) >> (8 * i));
    for (uint64_t i = 0; size >= 16 && i < 8; i++)
        b[size - 8 + i] = (uint8_t)(stamp_word(who, tag, 1) >> (8 * i));
    return buf;
}

static bool stamped(const uint8_t *b, uint64_t size, unsigned who, unsigned tag)
{
    for (uint64_t i = 0; i < size && i < 8; i++)
        if (b[i] != (uint8_t)(stamp_word(who, tag, 0) >> (8 * i)))
            return false;
    for (uint64_t i = 0; size >= 16 && i < 8; i++)
        if (b[size - 8 + i] != (uint8_t)(stamp_word(who, tag, 1) >> (8 * i)))
            return false;
    return true;
}

static void alltoall(struct mp *m, uint64_t size, unsigned tag)
{
    const unsigned n = m->size, me = m->rank;
    uint8_t *recv = malloc(W * (size ? size : 1)), *src = malloc(size ? size : 1);
    uint8_t *got = calloc(n, 1);
    if (!recv || !src || !got)
        mp_die("out of memory");
    /* The payload: one pattern per size (mp_fill of rank 0's) with the
     * sender's rank and the tag stamped into its first and last 8 bytes, so
     * that a receiver checks every byte against one reference with memcmp
     * (the byte-wise pattern check costs more than the transfer at 1 MiB x
     * 65,280 pairs). */
    uint8_t *ref = malloc(size ? size : 1);
    if (!ref)
        mp_die("out of memory");
    mp_fill(ref, size, 0, tag, 0);
    stamp(memcpy(src, ref, size), size, me, tag);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 8 * W + 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t smd = mp_bind(m, src, size, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                  eq);
    for (unsigned first = 1; first < n; first += W) {
        unsigned k = n - first < W ? n - first : W;
        ptl_handle_me_t meh[W];
        for (unsigned i = 0; i < k; i++) {
            unsigned from = (me + n - (first + i)) % n;
            mp_post(m, PT_DATA, ((uint64_t)tag << 32) | from, recv + i * size, size, 1,
                    PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq, PTL_UNLINK, &meh[i]);
        }
        mp_barrier(m); /* this step's MEs are posted everywhere */
        for (unsigned i = 0; i < k; i++) {
            unsigned to = (me + first + i) % n;
            MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m->ids[to], PT_DATA, 0,
                            ((uint64_t)tag << 32) | me, 0, me));
        }
        wait_events(m, eq, k, k, size, got);
        for (unsigned i = 0; i < k; i++) {
            unsigned from = (me + n - (first + i)) % n;
            uint8_t *got_data = recv + i * size;
            uint64_t end = size >= 16 ? size - 8 : size; /* the pattern: bytes 8 .. end */
            if (!stamped(got_data, size, from, tag) ||
                (end > 8 && memcmp(got_data + 8, ref + 8, end - 8) != 0))
                mp_die("size %llu: data from rank %u wrong", (unsigned long long)size, from);
        }
    }
    for (unsigned p = 0; p < n; p++)
        if (p != me && got[p] != 1)
            mp_die("size %llu: %u puts from rank %u", (unsigned long long)size, got[p], p);
    MP_CHECK(PtlMDUnlink(smd));
    MP_CHECK(PtlEQFree(eq));
    free(recv);
    free(src);
    free(ref);
    free(got);
}

static void incast(struct mp *m, unsigned count, uint64_t eq_entries)
{
    const unsigned n = m->size, me = m->rank;
    if (!eq_entries)
        eq_entries = (uint64_t)n * (count + 1) + 64;
    const uint64_t big = 4096;
    uint64_t *small = calloc((size_t)n * count, sizeof *small);
    uint8_t *bigbuf = calloc(n, big);
    if (!small || !bigbuf)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, me == 0 ? eq_entries : 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t mes, meb;
    if (me == 0) {
        mp_post(m, PT_DATA, 1, small, (uint64_t)n * count * 8, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, &mes);
        mp_post(m, PT_DATA, 2, bigbuf, n * big, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, &meb);
    }
    mp_barrier(m);
    uint64_t t0 = mp_now_ms();
    if (me != 0) {
        uint64_t *words = malloc(count * sizeof *words);
        uint8_t *b = malloc(big);
        if (!words || !b)
            mp_die("out of memory");
        for (unsigned i = 0; i < count; i++)
            words[i] = ((uint64_t)me << 32) | (i + 1);
        mp_fill(b, big, me, 77, 0);
        ptl_handle_md_t md = mp_bind(m, words, count * sizeof *words, PTL_MD_THRESH_INF,
                                     PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE, eq);
        ptl_handle_md_t bmd = mp_bind(m, b, big, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                      eq);
        for (unsigned i = 0; i < count; i++)
            MP_CHECK(PtlPutRegion(md, (uint64_t)i * 8, 8, PTL_NO_ACK_REQ, m->ids[0], PT_DATA, 0,
                                  1, ((uint64_t)me * count + i) * 8, me));
        MP_CHECK(PtlPut(bmd, PTL_NO_ACK_REQ, m->ids[0], PT_DATA, 0, 2, me * big, me));
        mp_expect(eq, PTL_EVENT_SEND_END, "the 4 KiB put leaving");
        mp_barrier(m);
        MP_CHECK(PtlMDUnlink(md));
        MP_CHECK(PtlMDUnlink(bmd));
        free(words);
        free(b);
    } else {
        const uint64_t want = (uint64_t)(n - 1) * (count + 1);
        uint64_t got = 0;
        while (got < want) {
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, MP_WAIT_MS))
                mp_die("incast: %llu of %llu messages after %d ms", (unsigned long long)got,
                       (unsigned long long)want, MP_WAIT_MS);
            if (ev.ni_fail_type != PTL_NI_OK || ev.type != PTL_EVENT_PUT_END)
                mp_die("incast: unexpected %s (%u)", PtlEventKindStr(ev.type),
                       ev.ni_fail_type);
            got++;
        }
        double s = (mp_now_ms() - t0) / 1e3;
        for (unsigned p = 1; p < n; p++) {
            for (unsigned i = 0; i < count; i++)
                if (small[(size_t)p * count + i] != (((uint64_t)p << 32) | (i + 1)))
                    mp_die("incast: message %u from rank %u wrong", i, p);
            int64_t bad = mp_check_pattern(bigbuf + p * big, big, p, 77, 0);
            if (bad >= 0)
                mp_die("incast: 4 KiB from rank %u wrong at byte %lld", p, (long long)bad);
        }
        mp_barrier(m);
        printf("mp_scale: incast %u senders x %u messages: all delivered and checked, "
               "%.0f messages/s (EQ of %llu entries)\n", n - 1, count + 1,
               want / (s > 0 ? s : 1e-3), (unsigned long long)eq_entries);
        MP_CHECK(PtlMEUnlink(mes));
        MP_CHECK(PtlMEUnlink(meb));
    }
    free(small);
    free(bigbuf);
}

/* ring (see the top): round r lands at offset r * size of the right
 * neighbour's buffer, data pattern (sender, r). */
struct ring_st {
    struct mp *m;
    ptl_handle_eq_t eq;
    unsigned left, got, sent;
    uint64_t size;
};

/* One event of the ring: a SEND_END, or the next round's PUT_END from the left. */
static void ring_event(struct ring_st *st, const char *when)
{
    ptl_event_t ev;
    if (!mp_poll(st->eq, &ev, MP_WAIT_MS))
        mp_die("ring %s: %u puts in, %u sends done after %d ms", when, st->got, st->sent,
               MP_WAIT_MS);
    if (ev.ni_fail_type != PTL_NI_OK)
        mp_die("ring %s: %s failed", when, PtlEventKindStr(ev.type));
    if (ev.type == PTL_EVENT_SEND_END) {
        st->sent++;
    } else if (ev.type == PTL_EVENT_PUT_END) {
        const ptl_process_id_t l = st->m->ids[st->left];
        if (ev.hdr_data != st->got || ev.mlength != st->size || ev.initiator.pid != l.pid ||
            ev.initiator.nid != l.nid)
            mp_die("ring %s: put %llu of %llu B from %u.%u, wanted %u of %llu B from rank %u",
                   when, (unsigned long long)ev.hdr_data, (unsigned long long)ev.mlength,
                   ev.initiator.nid, ev.initiator.pid, st->got, (unsigned long long)st->size,
                   st->left);
        st->got++;
    }
}

static void ring(struct mp *m, unsigned rounds, uint64_t size)
{
    const unsigned n = m->size, me = m->rank;
    const unsigned right = (me + 1) % n;
    uint8_t *in = calloc(rounds, size ? size : 1), *out = malloc(size ? size : 1);
    if (!in || !out)
        mp_die("out of memory");
    struct ring_st st = {m, PTL_EQ_NONE, (me + n - 1) % n, 0, 0, size};
    MP_CHECK(PtlEQAlloc(m->ni, 2 * rounds + 64, PTL_EQ_HANDLER_NONE, &st.eq));
    ptl_handle_me_t meh;
    mp_post(m, PT_DATA, 5, in, (uint64_t)rounds * size, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, st.eq, PTL_RETAIN,
            &meh);
    ptl_handle_md_t md = mp_bind(m, out, size, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                 st.eq);
    mp_barrier(m);
    uint64_t t0 = mp_now_ms();
    for (unsigned r = 0; r < rounds; r++) {
        /* our buffer is free again (last SEND_END), and the left's round r - 1 is in */
        while (st.sent < r || st.got < r)
            ring_event(&st, "round");
        mp_fill(out, size, me, r, 0);
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m->ids[right], PT_DATA, 0, 5, (uint64_t)r * size, r));
    }
    while (st.sent < rounds || st.got < rounds)
        ring_event(&st, "end");
    for (unsigned r = 0; r < rounds; r++) {
        int64_t bad = mp_check_pattern(in + (size_t)r * size, size, st.left, r, 0);
        if (bad >= 0)
            mp_die("ring round %u: byte %lld from rank %u wrong", r, (long long)bad, st.left);
    }
    mp_barrier(m);
    if (me == 0)
        printf("mp_scale: ring of %u ranks, %u rounds of %llu B, every byte checked (%.1f s)\n",
               n, rounds, (unsigned long long)size, (mp_now_ms() - t0) / 1e3);
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlMEUnlink(meh));
    free(in);
    free(out);
}

/* The fault modes (see the top). Words land at (sender * rounds + r) * 8. */
static int fault(struct mp *m, bool kill_it, unsigned rounds)
{
    const unsigned n = m->size, me = m->rank;
    uint64_t *in = calloc((size_t)n * rounds, 8), *out = malloc((size_t)rounds * 8);
    if (!in || !out || n < 3)
        mp_die("out of memory, or fewer than 3 ranks");
    for (unsigned r = 0; r < rounds; r++)
        out[r] = ((uint64_t)me << 32) | (r + 1);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 4 * n * rounds + 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t meh;
    mp_post(m, PT_DATA, 3, in, (uint64_t)n * rounds * 8, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            &meh);
    ptl_handle_md_t md = mp_bind(m, out, (uint64_t)rounds * 8, PTL_MD_THRESH_INF,
                                 PTL_MD_EVENT_START_DISABLE, eq);
    /* The barrier ends for rank 1 before it ends for the others (rank 0's
     * go messages leave one by one): rank 1 must not die while a survivor is
     * still inside it, so every survivor reports that it left, on a portal
     * of its own, and rank 1 waits for all of them before it goes. */
    ptl_handle_eq_t left_eq = PTL_EQ_NONE;
    uint64_t left_word = 0;
    if (me == 1) {
        MP_CHECK(PtlEQAlloc(m->ni, 2 * n + 8, PTL_EQ_HANDLER_NONE, &left_eq));
        mp_post(m, PT_LEFT, 4, &left_word, 0, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, left_eq,
                PTL_RETAIN, NULL);
    }
    ptl_handle_md_t left_md = mp_bind(m, &left_word, 0, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    mp_barrier(m);
    if (me != 1) {
        MP_CHECK(PtlPut(left_md, PTL_NO_ACK_REQ, m->ids[1], PT_LEFT, 0, 4, 0, me));
    } else {
        for (unsigned left = 0; left < n - 1;) {
            ptl_event_t ev;
            if (!mp_poll(left_eq, &ev, 2 * MP_WAIT_MS))
                mp_die("rank 1: only %u of %u ranks left the barrier", left, n - 1);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("rank 1: %s failed", PtlEventKindStr(ev.type));
            left += ev.type == PTL_EVENT_PUT_END;
        }
    }
    /* Rank 1 sends its first round to everybody (itself excluded) and stops
     * or dies with those puts in flight. */
    /* The others send ROUNDS words to each survivor but one to rank 1: a
     * stopped peer's credits are few, and a command towards it holds the
     * commands behind it in this thread's ring (PtlPut then ends with
     * PTL_NO_SPACE after PTL_PEER_TIMEOUT_MS, as documented). */
    const unsigned my_rounds = me == 1 ? 1 : rounds;
    for (unsigned r = 0; r < my_rounds; r++)
        for (unsigned k = 1; k < n; k++) {
            unsigned to = (me + k) % n;
            if (to == 1 && r > 0)
                continue;
            int rc = PtlPutRegion(md, (uint64_t)r * 8, 8, PTL_NO_ACK_REQ, m->ids[to], PT_DATA,
                                  0, 3, ((uint64_t)me * rounds + r) * 8, me);
            if (rc != PTL_OK && kill_it && me != 1) {
                /* The NI failed with rank 1's death while our command ring
                 * was full: PtlPut reports it (PTL_NO_SPACE on a failed NI). */
                printf("mp_scale: rank %u saw rank 1's death in PtlPut (%s)\n", me,
                       PtlErrorStr((unsigned)rc));
                fflush(stdout);
                _exit(0);
            }
            MP_CHECK(rc);
        }
    if (me == 1) {
        fprintf(stderr, "rank 1: raising %s with %u puts in flight\n",
                kill_it ? "SIGKILL" : "SIGSTOP", n - 1);
        fflush(stderr);
        raise(kill_it ? SIGKILL : SIGSTOP);
        /* continued (stop): our sends leave, then the final barrier */
        for (unsigned sent = 0; sent < n - 1;) {
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, MP_WAIT_MS))
                mp_die("rank 1: %u of %u puts left after it was continued", sent, n - 1);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("rank 1: %s failed", PtlEventKindStr(ev.type));
            sent += ev.type == PTL_EVENT_SEND_END;
        }
    } else {
        /* The others: every word from every other survivor, and our sends. */
        const unsigned want_put = (n - 2) * rounds, want_send = (n - 2) * rounds + 1;
        unsigned puts = 0, sends = 0, from1 = 0;
        uint64_t t0 = mp_now_ms();
        while (puts < want_put || sends < want_send) {
            ptl_event_t ev;
            int which, rc = PtlEQPoll(&eq, 1, 1000, &ev, &which);
            bool failed = rc != PTL_OK && rc != PTL_EQ_EMPTY;
            if (rc == PTL_OK && ev.ni_fail_type != PTL_NI_OK)
                failed = true;
            if (failed) {
                if (!kill_it)
                    mp_die("rank %u: a failure (%s) while rank 1 is only stopped", me,
                           rc != PTL_OK ? PtlErrorStr((unsigned)rc)
                                        : PtlNIFailStr(m->ni, ev.ni_fail_type));
                if (me == 0)
                    printf("mp_scale: rank 0 saw rank 1's death after %llu ms\n",
                           (unsigned long long)(mp_now_ms() - t0));
                fflush(stdout);
                _exit(0); /* ptlrun's status is rank 1's SIGKILL (137) */
            }
            if (rc == PTL_EQ_EMPTY) {
                if (mp_now_ms() - t0 > (kill_it ? 20000u : (unsigned)MP_WAIT_MS))
                    mp_die("rank %u: %u/%u puts, %u/%u sends after %llu ms", me, puts,
                           want_put, sends, want_send, (unsigned long long)(mp_now_ms() - t0));
                continue;
            }
            if (ev.type == PTL_EVENT_SEND_END) {
                sends++;
            } else if (ev.type == PTL_EVENT_PUT_END) {
                if (ev.hdr_data == 1)
                    from1++;
                else
                    puts++;
            }
        }
        if (kill_it) {
            /* Our sends to the dead rank may all have left: wait for the
             * job's failure itself. */
            ptl_event_t ev;
            for (;;) {
                int which, rc = PtlEQPoll(&eq, 1, 20000, &ev, &which);
                if (rc == PTL_EQ_EMPTY)
                    mp_die("rank %u: no failure within 20 s of rank 1's death", me);
                if (rc != PTL_OK || ev.ni_fail_type != PTL_NI_OK) {
                    if (me == 0)
                        printf("mp_scale: rank 0 saw rank 1's death after %llu ms\n",
                               (unsigned long long)(mp_now_ms() - t0));
                    fflush(stdout);
                    _exit(0);
                }
            }
        }
        if (me == 0) {
            printf("mp_scale: %u ranks kept running while rank 1 was stopped (%u rounds, "
                   "%llu ms)\n", n - 2, rounds, (unsigned long long)(mp_now_ms() - t0));
            fflush(stdout);
            char *base = mp_map_job_region();
            struct pt_shm_rank *rec =
                (struct pt_shm_rank *)(base + ((struct pt_shm_hdr *)base)->off_ranks) + 1;
            if (kill(LD_RELAXED(&rec->ospid), SIGCONT) != 0)
                mp_die("cannot continue rank 1");
        }
        /* Rank 1's word arrives once it runs again. */
        while (!from1) {
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, MP_WAIT_MS))
                mp_die("rank %u: nothing from rank 1 after it was continued", me);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("rank %u: %s failed", me, PtlEventKindStr(ev.type));
            from1 += ev.type == PTL_EVENT_PUT_END && ev.hdr_data == 1;
        }
    }
    mp_barrier(m);
    for (unsigned s = 0; s < n; s++)
        for (unsigned r = 0; s != me && r < (s == 1 ? 1 : me == 1 ? 0 : rounds); r++)
            if (in[(size_t)s * rounds + r] != (((uint64_t)s << 32) | (r + 1)))
                mp_die("rank %u: word %u from rank %u wrong", me, r, s);
    if (me == 0)
        printf("mp_scale: stop and continue of rank 1 in a job of %u: all words checked\n", n);
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlMEUnlink(meh));
    free(in);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        mp_die("usage: mp_scale alltoall SIZE... | incast COUNT [EQ] | ring ROUNDS SIZE | stop|kill ROUNDS");
    struct mp m;
    mp_init(&m, 2);
    uint64_t t0 = mp_now_ms();
    if (!strcmp(argv[1], "alltoall")) {
        for (int i = 2; i < argc; i++)
            alltoall(&m, strtoull(argv[i], NULL, 0), (unsigned)i);
        mp_barrier(&m);
        if (m.rank == 0)
            printf("mp_scale: all-to-all of %u ranks OK (%.1f s)\n", m.size,
                   (mp_now_ms() - t0) / 1e3);
    } else if (!strcmp(argv[1], "ring")) {
        if (argc < 4)
            mp_die("usage: mp_scale ring ROUNDS SIZE");
        ring(&m, (unsigned)strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
    } else if (!strcmp(argv[1], "stop") || !strcmp(argv[1], "kill")) {
        fault(&m, !strcmp(argv[1], "kill"), (unsigned)strtoul(argv[2], NULL, 0));
    } else if (!strcmp(argv[1], "incast")) {
        incast(&m, (unsigned)strtoul(argv[2], NULL, 0),
               argc > 3 ? strtoull(argv[3], NULL, 0) : 0);
    } else {
        mp_die("unknown mode %s", argv[1]);
    }
    mp_fini(&m);
    return 0;
}
