/*
 * mp_envmap - PTL_PIDMAP / PTL_NIDMAP that contradict the job region's map
 * make PtlNIInit fail with PTL_FAIL (issue 12 item 15); the region's map is
 * the job's.
 *
 * Two ranks under ptlrun. Rank 1 first tries PtlNIInit with each bad map in
 * its environment (pids swapped, so that "rank 0" would be itself; a wrong
 * nid; one rank too many; not numbers): each must return PTL_FAIL. Then,
 * with ptlrun's maps back, both ranks put to each other and check that the
 * put arrived from the other rank.
 *
 *   usage (under ptlrun -n 2): mp_envmap
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_E (MP_PT_USER + 0)

static const struct {
    const char *var, *val;
} g_bad[] = {
    {"PTL_PIDMAP", "1:0"},   {"PTL_NIDMAP", "0:7"}, {"PTL_PIDMAP", "0:1:2"},
    {"PTL_PIDMAP", "0"},     {"PTL_NIDMAP", "0:x"},
};

static void try_bad_maps(void)
{
    char *pm = strdup(getenv("PTL_PIDMAP")), *nm = strdup(getenv("PTL_NIDMAP"));
    int maxif;
    MP_CHECK(PtlInit(&maxif));
    for (size_t i = 0; i < sizeof g_bad / sizeof g_bad[0]; i++) {
        setenv(g_bad[i].var, g_bad[i].val, 1);
        (void)PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1);
        ptl_handle_ni_t ni;
        int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
        if (rc == PTL_OK) {
            ptl_process_id_t id0 = {0, 0};
            unsigned long dist = 99;
            (void)PtlGetRankId(ni, 0, &id0);
            (void)PtlNIDist(ni, id0, &dist);
            mp_die("PtlNIInit accepted %s=%s (ptlrun's is %s); rank 0's id is now %u/%u, "
                   "which is %s", g_bad[i].var, g_bad[i].val,
                   !strcmp(g_bad[i].var, "PTL_PIDMAP") ? pm : nm, id0.nid, id0.pid,
                   dist == 0 ? "this process" : "another");
        }
        if (rc != PTL_FAIL)
            mp_die("PtlNIInit with %s=%s returned %s, expected PTL_FAIL", g_bad[i].var,
                   g_bad[i].val, PtlErrorStr(rc));
        setenv("PTL_PIDMAP", pm, 1);
        setenv("PTL_NIDMAP", nm, 1);
    }
    PtlFini();
    free(pm);
    free(nm);
}

int main(void)
{
    const char *rid = getenv("PTL_MY_RID");
    if (rid && !strcmp(rid, "1"))
        try_bad_maps();
    struct mp m;
    mp_init(&m, 2);
    if (m.rank > 1) {
        mp_fini(&m);
        return 0;
    }
    uint64_t in = 0, out = 1000 + m.rank;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    mp_post(&m, PT_E, 3, &in, sizeof in, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN, NULL);
    ptl_handle_md_t smd = mp_bind(&m, &out, sizeof out, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(&m);
    unsigned peer = 1 - m.rank;
    MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[peer], PT_E, 0, 3, 0, m.rank));
    static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_PUT_END};
    ptl_event_t ev[2];
    mp_expect_all(eq, k, 2, ev, "put to the other rank");
    if (ev[1].hdr_data != peer || in != 1000 + peer || ev[1].initiator.pid != m.ids[peer].pid ||
        ev[1].initiator.nid != m.ids[peer].nid)
        mp_die("the put that arrived came from rank %llu (value %llu), expected rank %u",
               (unsigned long long)ev[1].hdr_data, (unsigned long long)in, peer);
    mp_barrier(&m);
    if (m.rank == 0)
        printf("mp_envmap: contradicting maps refused; puts between the ranks OK\n");
    mp_fini(&m);
    return 0;
}
