/*
 * mp_eqroom - a reader that lags behind a small EQ loses no event to its own
 * engine (engine/event.c, pt_ev_room).
 *
 * Rank 0 puts N small messages to rank 1, one at a time: each waits for its
 * SEND_END and ACK (so at most one is in flight, as in REF's put_bw). Rank 1's
 * target MD has an EQ of 4 entries with START events disabled (one PUT_END
 * per message) and reads it with PtlEQWait; every few messages it is slow
 * (it sleeps or yields, as an application that shares its core). Nothing
 * else posts to that EQ, so a PTL_EQ_DROPPED could only come from the engine
 * delivering messages (and ACKing them, which releases the next one) faster
 * than the reader reads: before the fix, the reader that ran the engine
 * inside PtlEQWait took a batch of 32 messages in one poll, and the NIC
 * thread did not wait for a reader that was waiting for the core.
 * Every PUT_END is checked (count, order by hdr_data, length).
 *
 *   mp_eqroom [N]            the above, N messages (default 20000)
 *   mp_eqroom owed put|get   END events posted after the request: rank 0
 *       sends 16 puts (or gets) of 64 KiB at once, rendezvous (or copy mode
 *       under PTL_CMA=0), to (from) rank 1's MD, whose EQ holds 4 entries
 *       (START disabled: one PUT_END or GET_END per request); rank 1 reads
 *       nothing for 300 ms, then every event. The room check must count the
 *       ENDs it still owes (engine/event.c, pt_ev_owe): before, all 16 were
 *       accepted against an empty EQ and 12 of their ENDs overwrote unread
 *       ones. Every END and every byte is checked.
 */
#include "mp_util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_T (MP_PT_USER + 5)
#define LEN 40

#define OWED_N 16
#define OWED_LEN 65536

static int owed(struct mp *m, bool get)
{
    const bool ini = m->rank == 0, tgt = m->rank == 1;
    uint8_t *buf = calloc(OWED_N, OWED_LEN);
    if (!buf)
        mp_die("out of memory");
    if (tgt || get)
        for (unsigned i = 0; i < OWED_N; i++)
            mp_fill(buf + (size_t)i * OWED_LEN, OWED_LEN, tgt ? 1 : 0, 7, i);
    if (ini && get)
        memset(buf, 0, (size_t)OWED_N * OWED_LEN);
    else if (ini)
        for (unsigned i = 0; i < OWED_N; i++)
            mp_fill(buf + (size_t)i * OWED_LEN, OWED_LEN, 0, 7, i);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, tgt ? 4 : 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    if (ini)
        imd = mp_bind(m, buf, (ptl_size_t)OWED_N * OWED_LEN, PTL_MD_THRESH_INF,
                      PTL_MD_EVENT_START_DISABLE, eq);
    if (tgt)
        mp_post(m, PT_T, 9, buf, (ptl_size_t)OWED_N * OWED_LEN, PTL_MD_THRESH_INF,
                (get ? PTL_MD_OP_GET : PTL_MD_OP_PUT) | PTL_MD_MANAGE_REMOTE |
                    PTL_MD_EVENT_START_DISABLE,
                eq, PTL_RETAIN, NULL);
    mp_barrier(m);
    if (ini) {
        for (unsigned i = 0; i < OWED_N; i++) {
            ptl_size_t off = (ptl_size_t)i * OWED_LEN;
            if (get)
                MP_CHECK(PtlGetRegion(imd, off, OWED_LEN, m->ids[1], PT_T, 0, 9, off));
            else
                MP_CHECK(PtlPutRegion(imd, off, OWED_LEN, PTL_NO_ACK_REQ, m->ids[1], PT_T, 0, 9,
                                      off, i));
        }
        for (unsigned i = 0; i < OWED_N; i++) {
            ptl_event_t ev = mp_expect(eq, get ? PTL_EVENT_REPLY_END : PTL_EVENT_SEND_END,
                                       get ? "a get's reply" : "a put leaving");
            if (ev.mlength != OWED_LEN)
                mp_die("rank 0: %s of %llu bytes", PtlEventKindStr(ev.type),
                       (unsigned long long)ev.mlength);
        }
        if (get)
            for (unsigned i = 0; i < OWED_N; i++) {
                int64_t bad = mp_check_pattern(buf + (size_t)i * OWED_LEN, OWED_LEN, 1, 7, i);
                if (bad >= 0)
                    mp_die("rank 0: get %u wrong at byte %lld", i, (long long)bad);
            }
    }
    if (tgt) {
        usleep(300000); /* every request has come and, before, been accepted */
        bool seen[OWED_N] = {false};
        for (unsigned k = 0; k < OWED_N; k++) {
            ptl_event_t ev;
            int rc = PtlEQWait(eq, &ev);
            if (rc == PTL_EQ_DROPPED)
                mp_die("rank 1: END %u of %u: PTL_EQ_DROPPED (owed ENDs overran the EQ)", k,
                       OWED_N);
            MP_CHECK(rc);
            unsigned i = (unsigned)(ev.offset / OWED_LEN);
            if (ev.type != (get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END) ||
                ev.ni_fail_type != PTL_NI_OK || ev.mlength != OWED_LEN ||
                ev.offset % OWED_LEN || i >= OWED_N || seen[i])
                mp_die("rank 1: END %u: %s offset %llu mlength %llu", k,
                       PtlEventKindStr(ev.type), (unsigned long long)ev.offset,
                       (unsigned long long)ev.mlength);
            seen[i] = true;
        }
        mp_expect_none(eq, 50, "after the last END");
        if (!get)
            for (unsigned i = 0; i < OWED_N; i++) {
                int64_t bad = mp_check_pattern(buf + (size_t)i * OWED_LEN, OWED_LEN, 0, 7, i);
                if (bad >= 0)
                    mp_die("rank 1: put %u wrong at byte %lld", i, (long long)bad);
            }
        printf("mp_eqroom: %u %ss of %u bytes through an EQ of 4, none dropped\n", OWED_N,
               get ? "get" : "put", OWED_LEN);
    }
    mp_barrier(m);
    mp_fini(m);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (argc > 2 && !strcmp(argv[1], "owed") &&
        (!strcmp(argv[2], "put") || !strcmp(argv[2], "get")))
        return owed(&m, !strcmp(argv[2], "get"));
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20000;
    const bool ini = m.rank == 0, tgt = m.rank == 1;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, tgt ? 4 : 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t buf[LEN];
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    if (ini)
        imd = mp_bind(&m, buf, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    if (tgt)
        mp_post(&m, PT_T, 9, buf, LEN, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (ini) {
        for (unsigned i = 0; i < n; i++) {
            mp_fill(buf, LEN, 0, 5, i);
            MP_CHECK(PtlPut(imd, PTL_ACK_REQ, m.ids[1], PT_T, 0, 9, 0, i));
            static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_ACK};
            mp_expect_all(eq, k, 2, NULL, "put with ack");
        }
    }
    if (tgt) {
        unsigned slow = 0;
        for (unsigned i = 0; i < n; i++) {
            ptl_event_t ev;
            int rc = PtlEQWait(eq, &ev);
            if (rc == PTL_EQ_DROPPED)
                mp_die("message %u: PTL_EQ_DROPPED (the engine overwrote unread events)", i);
            MP_CHECK(rc);
            if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != i || ev.mlength != LEN)
                mp_die("message %u: %s hdr_data %llu mlength %llu", i, PtlEventKindStr(ev.type),
                       (unsigned long long)ev.hdr_data, (unsigned long long)ev.mlength);
            if (i % 64 == 0) { /* a slow reader: off the core for a while */
                slow++;
                if (slow % 2)
                    usleep(200);
                else
                    for (int y = 0; y < 20; y++)
                        sched_yield();
            }
        }
        mp_expect_none(eq, 50, "after the last message");
        printf("mp_eqroom: %u messages through an EQ of 4, none dropped\n", n);
    }
    mp_barrier(&m);
    mp_fini(&m);
    if (m.rank == 0)
        printf("OK\n");
    return 0;
}
