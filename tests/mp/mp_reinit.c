/*
 * mp_reinit - the NI's process id and re-attaching to the job.
 *
 *   usage (under ptlrun): mp_reinit [incarnations]     default 3
 *
 * PtlNIInit with a pid other than the rank's pid in the job map must fail
 * with PTL_PID_INVALID; PtlNIInit with the rank's own pid must work. Then,
 * several times over: PtlNIInit, a token ring through every rank, PtlNIFini
 * and PtlFini; every incarnation re-attaches to the same job region.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>

#define PT_R (MP_PT_USER + 7)

static void ring(struct mp *m, unsigned epoch)
{
    const unsigned n = m->size, me = m->rank;
    uint64_t token = 0, out = 0;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    mp_post(m, PT_R, epoch, &token, sizeof token, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            NULL);
    /* The engine may read `out` until SEND_END (a stack variable of this
     * frame): wait for it before the frame goes. */
    ptl_handle_eq_t seq;
    MP_CHECK(PtlEQAlloc(m->ni, 16, PTL_EQ_HANDLER_NONE, &seq));
    ptl_handle_md_t smd = mp_bind(m, &out, sizeof out, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, seq);
    mp_barrier(m);
    if (me == 0) {
        out = 1000u * epoch;
        MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m->ids[(me + 1) % n], PT_R, 0, epoch, 0, 0));
    }
    mp_expect(eq, PTL_EVENT_PUT_END, "waiting for the token");
    uint64_t want = 1000u * epoch + (me == 0 ? n - 1 : me - 1);
    if (token != want)
        mp_die("incarnation %u: token %llu, expected %llu", epoch, (unsigned long long)token,
               (unsigned long long)want);
    if (me != 0) {
        out = token + 1;
        MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m->ids[(me + 1) % n], PT_R, 0, epoch, 0, 0));
    }
    mp_expect(seq, PTL_EVENT_SEND_END, "waiting for the SEND_END of our put");
}

int main(int argc, char **argv)
{
    int times = argc > 1 ? atoi(argv[1]) : 3;
    unsigned rank, size;
    int maxif;
    MP_CHECK(PtlInit(&maxif));
    MP_CHECK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
    MP_CHECK(PtlGetRank(PTL_INVALID_HANDLE, &rank, &size));
    ptl_handle_ni_t ni;
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, rank + 1000, NULL, NULL, &ni);
    if (rc != PTL_PID_INVALID)
        mp_die("PtlNIInit with pid %u (not this rank's) returned %s, expected PTL_PID_INVALID",
               rank + 1000, PtlErrorStr((unsigned)rc));
    ptl_process_id_t id;
    MP_CHECK(PtlGetRankId(PTL_INVALID_HANDLE, rank, &id));
    MP_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, id.pid, NULL, NULL, &ni));
    MP_CHECK(PtlNIFini(ni));
    PtlFini();

    for (int e = 1; e <= times; e++) {
        struct mp m;
        mp_init_epoch(&m, 1, (unsigned)e);
        ring(&m, (unsigned)e);
        mp_fini(&m);
    }
    if (rank == 0)
        printf("mp_reinit: PTL_PID_INVALID and %d re-attaches over %u ranks OK\n", times, size);
    return 0;
}
