/*
 * test_eq_overflow_warn - the first overflow of an EQ is logged once, with
 * the EQ's size and the sizing rule (issue 12, item 17); a second overflow of
 * the same EQ, and PTL_LOG_LEVEL=0, log nothing more.
 *
 * A job of one puts to itself into an EQ of 4 entries, more events than fit,
 * before reading; stderr goes to a file that is counted afterwards.
 */
#include <portals3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ut_check.h"

static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;
static ptl_handle_md_t src;
static ptl_process_id_t me;

/* Put n messages to ourselves, then read the EQ dry; returns the number of
 * PTL_EQ_DROPPED reads. */
static int overflow_round(int n)
{
    for (int i = 0; i < n; i++)
        CHECK(PtlPut(src, PTL_NO_ACK_REQ, me, 4, 0, 7, 0, 0));
    /* Requests whose events do not fit wait for the reader for a while
     * (PTL_EQ_ROOM_WAIT_US, engine/event.c pt_ev_room), then the engine
     * delivers them and the EQ overflows: in offload mode the NIC thread,
     * in host mode the next call that runs the engine (PtlEQPeek runs it and
     * reads nothing). Peek until the overflow shows, so that the reads
     * below come after it: a fixed sleep was not enough for a NIC thread
     * kept off the cores by a loaded machine (it then posted while we read,
     * the reader kept up and nothing dropped). */
    ptl_event_t peek;
    int prc;
    for (int tries = 0; (prc = PtlEQPeek(eq, &peek)) != PTL_EQ_DROPPED; tries++) {
        if (prc != PTL_OK && prc != PTL_EQ_EMPTY) {
            printf("PtlEQPeek: %s\n", PtlErrorStr(prc));
            exit(1);
        }
        if (tries == 3000) { /* 30 s: the 20 ms wait is long over */
            printf("FAIL: no overflow 30 s after %d puts into an EQ of 4\n", n);
            exit(1);
        }
        usleep(10000);
    }
    int drops = 0;
    for (;;) {
        ptl_event_t ev;
        int rc = PtlEQGet(eq, &ev);
        if (rc == PTL_EQ_EMPTY)
            break;
        if (rc == PTL_EQ_DROPPED)
            drops++;
        else if (rc != PTL_OK) {
            printf("PtlEQGet: %s\n", PtlErrorStr(rc));
            exit(1);
        }
    }
    return drops;
}

int main(void)
{
    char path[] = "/tmp/ptl-eqwarn-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);

    int n;
    char buf[8] = "payload", dst[8];
    CHECK(PtlInit(&n));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlEQAlloc(ni, 4, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t mh;
    ptl_handle_md_t th;
    CHECK(PtlMEAttach(ni, 4, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &mh));
    ptl_md_t t = {dst, sizeof dst, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, NULL, eq};
    CHECK(PtlMDAttach(mh, t, PTL_RETAIN, &th));
    ptl_md_t s = {buf, sizeof buf, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, s, PTL_RETAIN, &src));

    int d1 = overflow_round(12); /* 24 events into 4 entries */
    int d2 = overflow_round(12);
    PtlNIFini(ni);
    PtlFini();

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    unlink(path);
    int warnings = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "event queue of 4 entries overflowed") && strstr(line, "START_DISABLE"))
            warnings++;
    if (f)
        fclose(f);
    close(fd);
    printf("drops %d and %d, warnings %d\n", d1, d2, warnings);
    if (d1 < 1 || d2 < 1 || warnings != 1) {
        printf("FAIL: expected a drop in each round and exactly one warning\n");
        return 1;
    }
    printf("eq_overflow_warn: OK\n");
    return 0;
}
