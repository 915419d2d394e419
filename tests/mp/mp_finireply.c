/*
 * mp_finireply - a server answers one request and leaves in order at once
 * (PtlNIFini, exit 0), as the reference implementation's get_test server
 * does; the client must still get the answer sent before the server left
 * (an adversarial audit, 2026-11-30).
 *
 *   usage (under ptlrun, 2 ranks): mp_finireply get|ack [client_sleep_ms]
 *
 * get: rank 1 gets 256 B from rank 0, which waits for its GET_END, then
 *      PtlNIFini. Rank 1 must see REPLY_START, REPLY_END (PTL_NI_OK) and the
 *      data. ack: rank 1 puts 256 B with an ACK; rank 0 waits for PUT_END,
 *      then PtlNIFini; rank 1 must see SEND_END and an ACK (PTL_NI_OK).
 * client_sleep_ms: the client computes this long after it issued before it
 * waits (in host mode its engine does not run meanwhile): by then the
 * server's process may have ended and the launcher counted the departure.
 *
 * Before, the engine that saw the departure failed what it still waited
 * for from that rank before it took what had already arrived: the reply
 * was dropped (drop count 1) and the get ended PTL_NI_PEER_DIED with no
 * data (host mode 10 of 10 runs at 20 and 300 ms; get_test hung).
 */
#include "mp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT 5

int main(int argc, char **argv)
{
    struct mp m;
    if (argc < 2 || (strcmp(argv[1], "get") && strcmp(argv[1], "ack")))
        mp_die("usage: mp_finireply get|ack [client_sleep_ms]");
    int ack = argc > 1 && !strcmp(argv[1], "ack");
    int sl = argc > 2 ? atoi(argv[2]) : 0;
    mp_init(&m, 2);
    static char buf[256], rbuf[256];
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 0) {
        memset(buf, 'S', sizeof buf);
        mp_post(&m, PT, 9, buf, sizeof buf, PTL_MD_THRESH_INF,
                (ack ? PTL_MD_OP_PUT : PTL_MD_OP_GET) | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    if (m.rank == 0) {
        ptl_event_t ev;
        do
            MP_CHECK(PtlEQWait(eq, &ev));
        while (ev.type != (ack ? PTL_EVENT_PUT_END : PTL_EVENT_GET_END));
        printf("rank 0: %s, leaving\n", PtlEventKindStr(ev.type));
        fflush(stdout);
        mp_fini_alone(&m);
        return 0;
    }
    if (m.rank != 1) {
        mp_fini_alone(&m);
        return 0;
    }
    memset(rbuf, ack ? 'C' : 0, sizeof rbuf);
    ptl_md_t d = {.start = rbuf, .length = sizeof rbuf, .threshold = PTL_MD_THRESH_INF,
                  .max_size = 0, .options = 0, .user_ptr = NULL, .eq_handle = eq};
    ptl_handle_md_t md;
    MP_CHECK(PtlMDBind(m.ni, d, PTL_RETAIN, &md));
    if (ack)
        MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[0], PT, 0, 9, 0, 0));
    else
        MP_CHECK(PtlGet(md, m.ids[0], PT, 0, 9, 0));
    if (sl)
        usleep((useconds_t)sl * 1000);
    int bad = 0, done = 0;
    while (!done) {
        ptl_event_t ev;
        int rc = PtlEQPoll(&eq, 1, 5000, &ev, &(int){0});
        if (rc == PTL_EQ_EMPTY) {
            printf("rank 1: FAIL: no further event within 5 s\n");
            bad = 1;
            break;
        }
        if (rc != PTL_OK) {
            printf("rank 1: FAIL: PtlEQPoll %s\n", PtlErrorStr(rc));
            bad = 1;
            break;
        }
        printf("rank 1: %s ni_fail_type %d mlength %llu\n", PtlEventKindStr(ev.type),
               (int)ev.ni_fail_type, (unsigned long long)ev.mlength);
        if (ev.ni_fail_type != PTL_NI_OK)
            bad = 1;
        if (ev.type == (ack ? PTL_EVENT_ACK : PTL_EVENT_REPLY_END))
            done = 1;
    }
    if (!ack && rbuf[0] != 'S') {
        printf("rank 1: FAIL: reply data not there (byte 0 = %d)\n", rbuf[0]);
        bad = 1;
    }
    usleep(100000);
    printf("rank 1: drop count %llu\n", (unsigned long long)mp_drops(&m));
    printf("rank 1: %s\n", bad ? "FAIL" : "OK");
    mp_fini_alone(&m);
    return bad;
}
