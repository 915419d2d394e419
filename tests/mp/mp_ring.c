/*
 * mp_ring - a token passed around all ranks: rank r receives the token from
 * rank r-1, checks its value, adds one and puts it to rank r+1 (rank 0 starts
 * each round and checks what comes back).
 *
 *   usage (under ptlrun): mp_ring [rounds]     default 200
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>

#define PT_TOKEN MP_PT_USER
#define TOKEN_BITS 0x70

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 1);
    long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : 200;
    if (rounds < 1 || rounds > 10000000)
        mp_die("bad round count '%s'", argv[1]);
    const unsigned n = m.size, me = m.rank, next = (me + 1) % n;

    uint64_t token = 0, out = 0;
    ptl_handle_eq_t req, seq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &req));
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &seq));
    mp_post(&m, PT_TOKEN, TOKEN_BITS, &token, sizeof token, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, req, PTL_RETAIN,
            NULL);
    ptl_handle_md_t smd = mp_bind(&m, &out, sizeof out, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, seq);
    mp_barrier(&m);

    for (long r = 0; r < rounds; r++) {
        uint64_t base = (uint64_t)r * n;
        if (me == 0) {
            out = base + 1;
            MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[next], PT_TOKEN, 0, TOKEN_BITS, 0, 0));
            mp_expect(seq, PTL_EVENT_SEND_END, "sending the token");
        }
        ptl_event_t ev = mp_expect(req, PTL_EVENT_PUT_END, "waiting for the token");
        /* rank 0 sends base + 1; rank r receives base + r; rank 0 gets base + n */
        uint64_t want = me == 0 ? base + n : base + me;
        unsigned from = (me + n - 1) % n;
        if (ev.initiator.pid != m.ids[from].pid || ev.initiator.nid != m.ids[from].nid)
            mp_die("round %ld: token from %u/%u, expected rank %u", r, ev.initiator.nid,
                   ev.initiator.pid, from);
        if (token != want)
            mp_die("round %ld: token %llu, expected %llu", r, (unsigned long long)token,
                   (unsigned long long)want);
        if (me != 0) {
            out = token + 1;
            MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[next], PT_TOKEN, 0, TOKEN_BITS, 0, 0));
            mp_expect(seq, PTL_EVENT_SEND_END, "forwarding the token");
        }
    }
    if (me == 0)
        printf("mp_ring: %ld rounds over %u ranks OK\n", rounds, n);
    mp_fini(&m);
    return 0;
}
