/*
 * mp_departed - operations with a peer that left the job in order
 * (PtlNIFini, then exit 0) end: nobody waits for ever. Rank 1 finalizes at
 * once, lives one more second, exits 0. Rank 0 has a get outstanding to it
 * while it lives on (its NI gone: nothing will answer), then, after it
 * ended, initiates a get and a put with an ACK to it. Every one ends with
 * PTL_NI_PEER_DIED within seconds of rank 1's exit (the launcher counts the
 * departure and rings the sleepers, engines fail what they wait for from a
 * peer that is gone: `departed`, transport/shm_region.h); the job still
 * ends 0 (a departure is no failure). Before, the gets waited for ever.
 * A plain put to the departed rank goes nowhere and ends normally
 * (docs/ofi.md, `finilate`).
 * With "noinit", rank 1 never calls into Portals: it lives 300 ms and exits
 * 0; the same holds (the launcher wrote its OS pid at the fork), and
 * ptlrun says that it left without opening an NI (a peer that waits for a
 * message from it, rather than for an answer, would otherwise wait until
 * ptlrun's timeout with no hint why).
 *
 * With "putorder", rank 1 finalizes and exits at once, and rank 0, which
 * makes no call meanwhile (in host matching its engine has not seen the
 * departure when the put's command runs), puts 100,000 B with an ACK to
 * it: SEND_START, then SEND_END and the ACK, both PTL_NI_PEER_DIED, in
 * that order. Before, host matching posted the failed ACK first and then
 * SEND_END with PTL_NI_OK, once the copy-mode stream had gone into the
 * rings of a rank that was gone (an adversarial client, fifty-ninth
 * session).
 *
 *   usage (under ptlrun -n 2): mp_departed [noinit | putorder]
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_IN (MP_PT_USER + 0)

/* The next event of kind k; every other kind is skipped. */
static ptl_event_t wait_kind(ptl_handle_eq_t eq, ptl_event_kind_t k, unsigned ms, const char *what)
{
    uint64_t t0 = mp_now_ms();
    for (;;) {
        ptl_event_t ev;
        uint64_t spent = mp_now_ms() - t0;
        if (spent >= ms || !mp_poll(eq, &ev, (unsigned)(ms - spent)))
            mp_die("%s: no %s within %u ms", what, PtlEventKindStr(k), ms);
        if (ev.type == k)
            return ev;
    }
}

static void expect_died(ptl_event_t ev, const char *what)
{
    if (ev.ni_fail_type != PTL_NI_PEER_DIED)
        mp_die("%s: %s with ni_fail_type %u, PTL_NI_PEER_DIED (%u) expected", what,
               PtlEventKindStr(ev.type), ev.ni_fail_type, (unsigned)PTL_NI_PEER_DIED);
}

/* putorder: the events of a copy-mode put with an ACK to a rank that left
 * while we made no call, in the order they come. */
static int putorder(void)
{
    struct mp m;
    mp_init(&m, 2);
    mp_barrier(&m);
    if (m.rank == 1) {
        mp_fini_alone(&m);
        return 0;
    }
    enum { LEN = 100000 };
    static char big[LEN];
    memset(big, 3, sizeof big);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = mp_bind(&m, big, LEN, PTL_MD_THRESH_INF, 0, eq);
    usleep(500 * 1000); /* rank 1 has ended and the launcher counted it by now */
    MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[1], PT_IN, 0, 1, 0, 0));
    const ptl_event_kind_t want[3] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END, PTL_EVENT_ACK};
    for (int i = 0; i < 3; i++) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, 10000))
            mp_die("putorder: no %s within 10 s", PtlEventKindStr(want[i]));
        if (ev.type != want[i])
            mp_die("putorder: %s (%u) where %s was due", PtlEventKindStr(ev.type),
                   ev.ni_fail_type, PtlEventKindStr(want[i]));
        if (i)
            expect_died(ev, "putorder");
    }
    printf("mp_departed: OK putorder: SEND_START, SEND_END and ACK failed, in order\n");
    mp_fini_alone(&m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "putorder"))
        return putorder();
    const bool noinit = argc > 1 && !strcmp(argv[1], "noinit");
    const char *rid = getenv("PTL_MY_RID");
    if (noinit && rid && !strcmp(rid, "1")) {
        usleep(300 * 1000); /* rank 0's first get reaches us meanwhile, or not */
        return 0;
    }
    struct mp m;
    mp_init(&m, 2);
    char buf[64];
    memset(buf, 1, sizeof buf);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 1)
        mp_post(&m, PT_IN, 1, buf, sizeof buf, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET,
                eq, PTL_RETAIN, NULL);
    if (!noinit)
        mp_barrier(&m);
    if (m.rank == 1) {
        mp_fini_alone(&m);
        sleep(1); /* finalized, alive: it might still initialise again */
        return 0;
    }
    if (!noinit)
        usleep(200 * 1000); /* rank 1 has finalized by now (or soon) */
    ptl_handle_md_t md = mp_bind(&m, buf, sizeof buf, PTL_MD_THRESH_INF, 0, eq);
    uint64_t t0 = mp_now_ms();
    MP_CHECK(PtlGet(md, m.ids[1], PT_IN, 0, 1, 0));
    ptl_event_t ev = wait_kind(eq, PTL_EVENT_REPLY_END, 20000, "a get outstanding at the exit");
    expect_died(ev, "a get outstanding at the exit");
    uint64_t t1 = mp_now_ms();
    MP_CHECK(PtlGet(md, m.ids[1], PT_IN, 0, 1, 0));
    expect_died(wait_kind(eq, PTL_EVENT_REPLY_END, 5000, "a get after the exit"),
                "a get after the exit");
    MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[1], PT_IN, 0, 1, 0, 0));
    expect_died(wait_kind(eq, PTL_EVENT_ACK, 5000, "a put with ACK after the exit"),
                "a put with ACK after the exit");
    MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[1], PT_IN, 0, 1, 0, 0));
    wait_kind(eq, PTL_EVENT_SEND_END, 5000, "a put without ACK after the exit");
    printf("mp_departed: OK the get outstanding at rank 1's exit ended after %llu ms, the "
           "operations after it in %llu ms\n", (unsigned long long)(t1 - t0),
           (unsigned long long)(mp_now_ms() - t1));
    mp_fini_alone(&m);
    return 0;
}
