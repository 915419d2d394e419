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
 */
#include "mp_util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_T (MP_PT_USER + 5)
#define LEN 40

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20000;
    struct mp m;
    mp_init(&m, 2);
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
