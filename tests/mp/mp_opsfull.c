/*
 * mp_opsfull - more rendezvous transfers in flight than the NI has ops
 * (PTL_MAX_OPS): the later ones wait their turn, none fails.
 *
 * Both ranks at once post K puts (ACK requested) of SIZE bytes into K
 * distinct regions of the other's buffer and K gets of SIZE bytes from K
 * distinct regions of the other's buffer, before waiting for anything; the
 * target of each is outside the library for a while first (the requests pile
 * up). Every event must say PTL_NI_OK and every byte must be the one put or
 * got. Run with a small PTL_MAX_OPS (CTest: 4), K well above it.
 *
 * Before: a rendezvous put that found every op busy at its target failed
 * (PUT_END, SEND_END and ACK with PTL_NI_FAIL), and so did a get whose
 * rendezvous reply found every op of its initiator busy (an adversarial
 * client: 3,000 puts of 64 KiB at the default 1,024 ops, up to 3,542 failed
 * events). Now the target defers such a put until an op is free, and a get
 * that may be answered by rendezvous sets an op aside when it leaves.
 *
 *   usage (under ptlrun -n 2): mp_opsfull [K] [SIZE] [pause_ms]
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_OPS (MP_PT_USER + 0)

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    const long k = argc > 1 ? atol(argv[1]) : 200;
    const size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 65536;
    const long pause_ms = argc > 3 ? atol(argv[3]) : 300;
    if (k < 1 || size < 1 || m.size != 2)
        mp_die("usage (ptlrun -n 2): mp_opsfull [K >= 1] [SIZE >= 1] [pause_ms]");
    const unsigned peer = 1 - m.rank;
    const size_t total = (size_t)k * size;
    /* target side: K regions that peers put into (tag 1) and K regions they
     * get from (tag 2, filled here); initiator side: the puts' source (tag 1,
     * filled here) and the gets' destination */
    uint8_t *rx = malloc(total), *exposed = malloc(total), *src = malloc(total),
            *dst = malloc(total);
    if (!rx || !exposed || !src || !dst)
        mp_die("out of memory (%zu bytes x 4)", total);
    memset(rx, 0, total);
    memset(dst, 0, total);
    mp_fill(exposed, total, m.rank, 2, 0);
    mp_fill(src, total, m.rank, 1, 0);

    ptl_handle_eq_t teq, ieq;
    MP_CHECK(PtlEQAlloc(m.ni, 4 * (ptl_size_t)k + 16, PTL_EQ_HANDLER_NONE, &teq));
    MP_CHECK(PtlEQAlloc(m.ni, 4 * (ptl_size_t)k + 16, PTL_EQ_HANDLER_NONE, &ieq));
    const unsigned topt = PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    mp_post(&m, PT_OPS, 1, rx, total, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | topt, teq, PTL_RETAIN,
            NULL);
    mp_post(&m, PT_OPS, 2, exposed, total, PTL_MD_THRESH_INF, PTL_MD_OP_GET | topt, teq,
            PTL_RETAIN, NULL);
    ptl_handle_md_t smd = mp_bind(&m, src, total, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                  ieq);
    ptl_handle_md_t dmd = mp_bind(&m, dst, total, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                  ieq);
    mp_barrier(&m);

    for (long i = 0; i < k; i++) {
        ptl_size_t off = (ptl_size_t)i * size;
        MP_CHECK(PtlPutRegion(smd, off, size, PTL_ACK_REQ, m.ids[peer], PT_OPS, 0, 1, off,
                              (ptl_hdr_data_t)i));
        MP_CHECK(PtlGetRegion(dmd, off, size, m.ids[peer], PT_OPS, 0, 2, off));
    }
    /* out of the library: the peer's requests queue up here */
    struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);

    /* initiator: SEND_END + ACK per put, REPLY_END per get; target: PUT_END
     * per put, GET_END per get; all on time, none failed */
    long sends = 0, acks = 0, replies = 0, puts = 0, gets = 0;
    uint64_t t0 = mp_now_ms();
    while (sends < k || acks < k || replies < k || puts < k || gets < k) {
        ptl_event_t ev;
        int which = -1;
        ptl_handle_eq_t both[2] = {ieq, teq};
        int rc = PtlEQPoll(both, 2, 1000, &ev, &which);
        if (rc == PTL_EQ_EMPTY) {
            if (mp_now_ms() - t0 > MP_WAIT_MS)
                mp_die("waited %d ms: %ld SEND_END, %ld ACK, %ld REPLY_END, %ld PUT_END, "
                       "%ld GET_END of %ld each", MP_WAIT_MS, sends, acks, replies, puts,
                       gets, k);
            continue;
        }
        if (rc != PTL_OK)
            mp_die("PtlEQPoll: %d", rc);
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("%s failed (ni_fail_type %u): with more transfers than ops in flight "
                   "the rest must wait their turn (PTL_MAX_OPS)", PtlEventKindStr(ev.type),
                   (unsigned)ev.ni_fail_type);
        if (ev.mlength != size)
            mp_die("%s: mlength %llu of %zu", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.mlength, size);
        switch (ev.type) {
        case PTL_EVENT_SEND_END: sends++; break;
        case PTL_EVENT_ACK: acks++; break;
        case PTL_EVENT_REPLY_END: replies++; break;
        case PTL_EVENT_PUT_END: puts++; break;
        case PTL_EVENT_GET_END: gets++; break;
        default: mp_die("unexpected %s", PtlEventKindStr(ev.type));
        }
    }
    int64_t bad = mp_check_pattern(rx, total, peer, 1, 0);
    if (bad >= 0)
        mp_die("byte %lld put by rank %u is wrong (region %lld)", (long long)bad, peer,
               (long long)(bad / (int64_t)size));
    bad = mp_check_pattern(dst, total, peer, 2, 0);
    if (bad >= 0)
        mp_die("byte %lld got from rank %u is wrong (region %lld)", (long long)bad, peer,
               (long long)(bad / (int64_t)size));
    printf("mp_opsfull: OK rank %u: %ld puts and %ld gets of %zu B each way, none failed\n",
           m.rank, k, k, size);
    mp_barrier(&m);
    MP_CHECK(PtlMDUnlink(smd));
    MP_CHECK(PtlMDUnlink(dmd));
    mp_fini(&m);
    free(rx);
    free(exposed);
    free(src);
    free(dst);
    return 0;
}
