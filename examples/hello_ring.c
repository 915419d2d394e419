/*
 * hello_ring.c - the demo job: a token travels once around all ranks of a
 * ptlrun job (or to itself in a job of one), each rank adding its rank.
 *
 *   ptlrun -n 4 ./hello_ring        # or just ./hello_ring
 */
#include <portals3.h>
#include <p3nal_utcp.h>
#include <p3rt/p3rt.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                              \
    do {                                                                      \
        int rc_ = (x);                                                        \
        if (rc_ != PTL_OK) {                                                  \
            fprintf(stderr, "%s failed: %s\n", #x, PtlErrorStr(rc_));         \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define PT_TOKEN 4
#define PT_READY 5

int main(void)
{
    int nif;
    unsigned rank, size;
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_me_t me;
    ptl_handle_md_t md, smd;
    ptl_event_t ev;
    unsigned long token = 0, out;

    CHECK(PtlInit(&nif));
    CHECK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1)); /* PTL_MY_RID, PTL_NIDMAP, PTL_PIDMAP */
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetRank(ni, &rank, &size));
    CHECK(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));

    /* Post the receive for the token before anyone may send it. */
    CHECK(PtlMEAttach(ni, PT_TOKEN, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 0, 0,
                      PTL_UNLINK, PTL_INS_AFTER, &me));
    ptl_md_t r = {&token, sizeof token, 1, 0, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    CHECK(PtlMDAttach(me, r, PTL_UNLINK, &md));

    ptl_process_id_t next, prev;
    CHECK(PtlGetRankId(ni, (rank + 1) % size, &next));
    CHECK(PtlGetRankId(ni, (rank + size - 1) % size, &prev));

    /* Start-up barrier: tell the previous rank our receives are posted, and
     * wait until the next rank told us the same. A put that arrives before the
     * peer posted its ME is dropped silently (Portals semantics), so "ready"
     * goes with an ACK request and is repeated until acknowledged. */
    ptl_handle_me_t rme;
    ptl_handle_md_t rmd, bmd;
    char dummy;
    CHECK(PtlMEAttach(ni, PT_READY, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 0, 0,
                      PTL_UNLINK, PTL_INS_AFTER, &rme));
    ptl_md_t rr = {&dummy, 0, 1, 0, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    CHECK(PtlMDAttach(rme, rr, PTL_UNLINK, &rmd));
    ptl_md_t b = {&dummy, 0, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, /* not END too: that would silence the ACK */
                  NULL, eq};
    CHECK(PtlMDBind(ni, b, PTL_RETAIN, &bmd));
    int acked = 0, ready = 0, got = 0, sent = 0;
    while (!acked || !ready) {
        if (!acked)
            CHECK(PtlPut(bmd, PTL_ACK_REQ, prev, PT_READY, 0, 0, 0, 0));
        int which, rc;
        while ((rc = PtlEQPoll(&eq, 1, 20, &ev, &which)) == PTL_OK) {
            if (ev.type == PTL_EVENT_ACK && ev.mlength == 0 && ev.md_handle == bmd)
                acked = 1;
            if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_READY)
                ready = 1;
            if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_TOKEN)
                got = 1; /* a fast neighbour may pass the token before we leave */
            if (acked && ready)
                break;
        }
        if (rc != PTL_OK && rc != PTL_EQ_EMPTY)
            CHECK(rc);
    }
    CHECK(PtlMDUnlink(bmd));

    ptl_md_t s = {&out, sizeof out, 1, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
    if (rank == 0) {
        out = 0;
        CHECK(PtlMDBind(ni, s, PTL_UNLINK, &smd));
        CHECK(PtlPut(smd, PTL_NO_ACK_REQ, next, PT_TOKEN, 0, 0, 0, 0));
    }
    while (!got) {
        CHECK(PtlEQWait(eq, &ev));
        if (ev.type == PTL_EVENT_PUT_END && ev.pt_index == PT_TOKEN)
            got = 1;
        else if (ev.type == PTL_EVENT_SEND_END)
            sent = 1; /* rank 0's own token send */
    }
    if (rank != 0) {
        out = token + rank;
        CHECK(PtlMDBind(ni, s, PTL_UNLINK, &smd));
        CHECK(PtlPut(smd, PTL_NO_ACK_REQ, next, PT_TOKEN, 0, 0, 0, 0));
        printf("rank %u of %u: token %lu, passed on %lu\n", rank, size, token, out);
    } else {
        unsigned long want = (unsigned long)size * (size - 1) / 2;
        printf("rank 0 of %u: token came back as %lu (expected %lu) %s\n", size, token, want,
               token == want ? "OK" : "WRONG");
        if (token != want)
            return 1;
    }
    /* Wait for our own send to finish before tearing down. */
    if (rank != 0)
        sent = 0;
    while (!sent) {
        CHECK(PtlEQWait(eq, &ev));
        sent = ev.type == PTL_EVENT_SEND_END;
    }
    CHECK(PtlNIFini(ni));
    PtlFini();
    return 0;
}
