/*
 * mp_forkuse - a child of fork() that uses its parent's handles (a client
 * mistake the library must survive): rank 0 forks after PtlNIInit, and the
 * child, for about a second, polls the parent's EQ (mode "poll": PtlEQPoll;
 * "get": PtlEQGet spins) and puts from the parent's MD, while rank 1 sends
 * rank 0 twenty puts with ACKs. docs/architecture.md ("Fork"): nothing of the
 * parent's NI may run or be written in the child. So every such call fails
 * (PTL_EQ_INVALID, PTL_MD_INVALID; PtlNIFini of the parent's NI only forgets
 * it: PTL_OK), the parent then finds all 20 PUT_ENDs and rank 1 all 20 ACKs.
 * Before the fix the child ran a copy of the parent's engine against the job
 * region: in host-matching mode it took 4 of the 20 puts and their events
 * (the sender had their ACKs, the parent never saw them), in offload mode
 * it wrote the parent's doorbell words.
 */
#include <portals3.h>
#include <p3api/misc.h>
#include <p3rt/p3rt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int r_ = (x);                                                                              \
        if (r_ != PTL_OK) {                                                                        \
            fprintf(stderr, "mp_forkuse: %s: %s\n", #x, PtlErrorStr((unsigned)r_));               \
            exit(3);                                                                               \
        }                                                                                          \
    } while (0)

static char rbuf[4096], sbuf[64];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The child: every call on the parent's handles must fail as on freed ones. */
static int child(int spin, ptl_handle_ni_t ni, ptl_handle_eq_t eq, ptl_handle_md_t smd,
                 ptl_process_id_t peer)
{
    ptl_event_t ev;
    int w, bad = 0;
    double t0 = now_s();
    while (now_s() - t0 < 1.0 && !bad) {
        int rc = spin ? PtlEQGet(eq, &ev) : PtlEQPoll(&eq, 1, 50, &ev, &w);
        if (rc != PTL_EQ_INVALID) {
            fprintf(stderr, "mp_forkuse: child: %s on the parent's EQ returned %s\n",
                    spin ? "PtlEQGet" : "PtlEQPoll", PtlErrorStr((unsigned)rc));
            bad = 1;
        }
    }
    int rc = PtlPut(smd, PTL_NO_ACK_REQ, peer, 4, 0, 9, 0, 0);
    if (rc != PTL_MD_INVALID) {
        fprintf(stderr, "mp_forkuse: child: PtlPut from the parent's MD returned %s\n",
                PtlErrorStr((unsigned)rc));
        bad = 1;
    }
    rc = PtlNIFini(ni);
    if (rc != PTL_OK) {
        fprintf(stderr, "mp_forkuse: child: PtlNIFini of the parent's NI returned %s\n",
                PtlErrorStr((unsigned)rc));
        bad = 1;
    }
    rc = PtlEQGet(eq, &ev);
    if (rc != PTL_EQ_INVALID) {
        fprintf(stderr, "mp_forkuse: child: PtlEQGet after PtlNIFini returned %s\n",
                PtlErrorStr((unsigned)rc));
        bad = 1;
    }
    return bad;
}

int main(int argc, char **argv)
{
    int spin = argc > 1 && !strcmp(argv[1], "get");
    int maxif;
    unsigned rank, size;
    alarm(60); /* the watchdog: a hang fails */
    CK(PtlInit(&maxif));
    CK(PtlSetRank(PTL_INVALID_HANDLE, -1, -1));
    CK(PtlGetRank(PTL_INVALID_HANDLE, &rank, &size));
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_me_t me;
    ptl_handle_md_t rmd, smd;
    CK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CK(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY}, peer;
    CK(PtlGetRankId(ni, 1 - rank, &peer));
    CK(PtlMEAttach(ni, 4, any, 0, ~0ull, PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_t md = {rbuf, sizeof rbuf, PTL_MD_THRESH_INF, 0,
                   PTL_MD_OP_PUT | PTL_MD_TRUNCATE | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    CK(PtlMDAttach(me, md, PTL_RETAIN, &rmd));
    ptl_md_t sm = {sbuf, sizeof sbuf, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
    CK(PtlMDBind(ni, sm, PTL_RETAIN, &smd));
    ptl_event_t ev;
    int w, rc;
    /* hello both ways. Nothing orders a rank's attach before its peer's put:
     * the put may come first and wait for the entry (engine/target.c, the
     * no-match wait; on a loaded machine it outlasted the 20 ms of the clock
     * until the wait counted the application's CPU time, fifty-eighth
     * session). */
    CK(PtlPut(smd, PTL_NO_ACK_REQ, peer, 4, 0, 1, 0, 0));
    for (int got = 0; !got;) {
        CK(PtlEQPoll(&eq, 1, 20000, &ev, &w));
        got = ev.type == PTL_EVENT_PUT_END;
    }
    if (rank == 1) {
        usleep(200000); /* the child is polling by now */
        for (int i = 0; i < 20; i++)
            CK(PtlPut(smd, PTL_ACK_REQ, peer, 4, 0, 2, 0, (ptl_hdr_data_t)i));
        int acks = 0;
        rc = PTL_OK;
        while (acks < 20 && (rc = PtlEQPoll(&eq, 1, 20000, &ev, &w)) == PTL_OK)
            acks += ev.type == PTL_EVENT_ACK;
        CK(PtlNIFini(ni));
        PtlFini();
        if (acks != 20) {
            fprintf(stderr, "mp_forkuse: rank 1: %d of 20 ACKs (%s)\n", acks,
                    PtlErrorStr((unsigned)rc));
            return 1;
        }
        return 0;
    }
    pid_t p = fork();
    if (p < 0) {
        perror("mp_forkuse: fork");
        return 3;
    }
    if (p == 0)
        _exit(child(spin, ni, eq, smd, peer));
    int ws;
    if (waitpid(p, &ws, 0) != p || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        fprintf(stderr, "mp_forkuse: the child failed (status %#x)\n", ws);
        return 1;
    }
    int puts = 0;
    unsigned seen = 0;
    rc = PTL_OK;
    while (puts < 20 && (rc = PtlEQPoll(&eq, 1, 20000, &ev, &w)) == PTL_OK)
        if (ev.type == PTL_EVENT_PUT_END && ev.match_bits == 2) {
            puts++;
            seen |= 1u << ev.hdr_data;
        }
    CK(PtlNIFini(ni));
    PtlFini();
    if (puts != 20 || seen != 0xfffffu) {
        fprintf(stderr, "mp_forkuse: rank 0: %d of 20 puts (%s)\n", puts, PtlErrorStr((unsigned)rc));
        return 1;
    }
    printf("mp_forkuse: OK (%s)\n", spin ? "get" : "poll");
    return 0;
}
