/*
 * req.c - the per-call path's requests (coll_int.h): a call of the per-call
 * path allocates its counters, MDs, MEs and buffers here, arms its sends on
 * its peers' readiness (RTRs, coll_int.h "Readiness"), starts (sends its
 * RTRs) and, once complete, releases it all.
 */
#include "coll_int.h"
#include "clock.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int grow(void **arr, int *cap, int n, size_t elt)
{
    if (n < *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)nc * elt);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

/* ---- request resources -------------------------------------------------- */

int pt_coll_r_ct(struct req *r, ptl_handle_ct_t *ct)
{
    if (grow((void **)&r->cts, &r->capcts, r->ncts, sizeof *r->cts))
        return PTL_NO_SPACE;
    int rc = PtlCTAlloc(r->g->ni, ct);
    if (rc == PTL_OK)
        r->cts[r->ncts++] = *ct;
    return rc;
}

void *pt_coll_r_tmp(struct req *r, size_t len)
{
    if (grow((void **)&r->tmp, &r->captmp, r->ntmp, sizeof *r->tmp))
        return NULL;
    void *p = malloc(len ? len : 1);
    if (p)
        r->tmp[r->ntmp++] = p;
    return p;
}

/* A free-floating MD over buf whose sends count into r->sent. */
int pt_coll_r_src(struct req *r, const void *buf, ptl_size_t len, ptl_handle_md_t *md)
{
    if (grow((void **)&r->mds, &r->capmds, r->nmds, sizeof *r->mds))
        return PTL_NO_SPACE;
    ptl_md_t d = {(void *)buf, len, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    int rc = PtlMDBind(r->g->ni, d, PTL_RETAIN, md);
    if (rc != PTL_OK)
        return rc;
    r->mds[r->nmds++] = *md;
    return PtlMDBindCT(*md, r->sent, PTL_CT_SEND);
}

/* Every triggered slot of the NI is armed (PTL_TRIG_SLOTS): the operations
 * of this member's earlier calls free theirs as they fire, once the peers
 * reach those calls. A member that gave up here would leave its peers
 * waiting for its part of this call for ever (an adversarial client: one
 * member started 1,000 Ialltoall at once, 584 of them filled the slots, the
 * rest failed there with PTL_NO_SPACE and succeeded everywhere else, whose
 * PtlCollWait never returned). So the call runs the engine and naps, up to
 * COLL_TRIG_WAIT_NS, and gives up earlier only when its NI is gone or its
 * job failed. *t0: 0 at the first call. true: try again. */
#define COLL_TRIG_WAIT_NS (30ull * 1000000000u)
#define COLL_TRIG_NAP_NS  100000

bool pt_coll_trig_wait(struct group *g, uint64_t *t0)
{
    uint64_t now = pt_now_ns();
    if (!*t0)
        *t0 = now;
    if (pt_api_node_progress(g->ni) != PTL_OK)
        return false;
    if (now - *t0 >= COLL_TRIG_WAIT_NS) {
        pt_log(PT_LOG_WARN, "collective: every triggered slot of the NI (PTL_TRIG_SLOTS) "
                            "stayed armed for %llu s: this call fails here with PTL_NO_SPACE, "
                            "and its peers' call cannot complete",
               (unsigned long long)(COLL_TRIG_WAIT_NS / 1000000000u));
        return false;
    }
    struct timespec nap = {0, COLL_TRIG_NAP_NS};
    nanosleep(&nap, NULL);
    return true;
}

/* A member that closed its NI in order (PtlNIFini) and never entered call c,
 * or n: none (util/flagline.h, calls). Its close is a release after every
 * calls it stored, so one read after the close was seen (A-LEFT, then
 * A-CALLS) is its last: a member that entered the call and then left is
 * never taken for one that did not. O(n) loads, at the end of a nap. */
static ptl_size_t left_before(const struct group *g, uint64_t c)
{
    if (!pt_api_node_alive(g->ni)) /* finalized here: the slots are unmapped */
        return g->n;
    for (ptl_size_t i = 0; i < g->n; i++)
        if (i != g->me && pt_api_node_left(g->ni, g->ids[i]) && /* A-LEFT */
            LD_ACQUIRE(&g->fl[i]->calls) < c)                   /* A-CALLS */
            return i;
    return g->n;
}

/* A member that left without entering a call leaves its counters short for
 * ever: its contributions, its RTRs, the puts it would have answered. A
 * wait looks, whenever it has waited COLL_LEFT_NAP_NS without the count,
 * whether such a member is why (the counters do not say whose part is
 * missing): with flag slots (every member on this node) the slots say who
 * closed its NI without coming; for every group, the byes say who freed the
 * group without coming (group.c; members on other hosts, or
 * PTL_COLL_FLAGS=0, waited for ever before). Then PTL_FAIL, as the flag
 * path's calls do (docs/coll.md). The wait wakes on every change of a
 * counter of the NI, so the nap adds nothing to a call that progresses. A
 * member that leaves without freeing the group, on another host, is still
 * waited for (README, known limits). */
#define COLL_LEFT_NAP_NS 100000000

/* A member left without completing call r (PtlNIFini with it in flight
 * says so too: group.c bye_at_fini; the warning says who): true. */
static bool member_left(struct req *r)
{
    struct group *g = r->g;
    ptl_size_t gone = g->fl_on ? left_before(g, r->call) : g->n;
    if (gone < g->n) {
        pt_log(PT_LOG_WARN, "collective: member %zu of the group (pid %u) called "
                            "PtlNIFini before completing this call: PTL_FAIL",
               (size_t)gone, (unsigned)g->ids[gone].pid);
        return true;
    }
    gone = pt_coll_bye_before(g, r->call);
    if (gone < g->n) {
        pt_log(PT_LOG_WARN, "collective: member %zu of the group (pid %u) left the "
                            "group before completing this call: PTL_FAIL",
               (size_t)gone, (unsigned)g->ids[gone].pid);
        return true;
    }
    return false;
}

int pt_coll_ct_wait(struct req *r, ptl_handle_ct_t ct, ptl_size_t test, ptl_ct_event_t *ev)
{
    struct group *g = r->g;
    if (!g->fl_on && g->bye_eq == PTL_EQ_NONE)
        return PtlCTWait(ct, test, ev);
    int rc;
    while ((rc = pt_api_ct_wait(ct, test, ev, COLL_LEFT_NAP_NS)) == PTL_EQ_EMPTY)
        if (member_left(r))
            return PTL_FAIL;
    return rc;
}

/* A program that completes its calls by polling PtlCollTest asks the same
 * as PtlCollWait's wait does, at most every COLL_LEFT_NAP_NS while the
 * call's counters stand still (one clock read per test, vDSO): before,
 * PtlCollTest said "not done" for ever where PtlCollWait said PTL_FAIL (a
 * member that freed the group or closed its NI without entering the call,
 * or a job whose rank died: an adversarial client). */
int pt_coll_test_stalled(struct req *r, uint64_t seen)
{
    uint64_t now = pt_now_ns();
    if (!r->t_since || seen != r->t_seen) {
        r->t_seen = seen;
        r->t_since = now;
        return PTL_OK;
    }
    if (now - r->t_since < COLL_LEFT_NAP_NS)
        return PTL_OK;
    r->t_since = now;
    if (pt_api_node_progress(r->g->ni) != PTL_OK) /* the job failed, or the NI is gone */
        return PTL_FAIL;
    if (member_left(r)) /* (no flag slots and no byes: nobody can say) */
        return PTL_FAIL;
    return PTL_OK;
}

/* Post an ME for this call (tag) over buf, counting arrivals into ct; from is
 * a member index or -1 (any member). */
int pt_coll_r_recv(struct req *r, void *buf, ptl_size_t len, long from, unsigned tag,
                   ptl_handle_ct_t ct)
{
    struct group *g = r->g;
    if (grow((void **)&r->mes, &r->capmes, r->nmes, sizeof *r->mes) ||
        grow((void **)&r->mds, &r->capmds, r->nmds, sizeof *r->mds))
        return PTL_NO_SPACE;
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    int rc = PtlMEAttach(g->ni, g->pt, from < 0 ? any : g->ids[from],
                         mbits(g->gid, K_DATA, r->seq, tag), 0, PTL_RETAIN, PTL_INS_BEFORE, &me);
    if (rc != PTL_OK)
        return rc;
    r->mes[r->nmes++] = me;
    ptl_md_t d = {buf,  len,        PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
                  NULL, PTL_EQ_NONE};
    rc = PtlMDAttach(me, d, PTL_RETAIN, &md);
    if (rc != PTL_OK)
        return rc;
    r->mds[r->nmds++] = md;
    if (from >= 0)
        r->rtr[from] = 1;
    else
        for (ptl_size_t i = 0; i < g->n; i++)
            r->rtr[i] = i != g->me;
    return PtlMDBindCT(md, ct, PTL_CT_COMM);
}

/* The count of dst's RTRs (from[dst]) that says it posted this call's MEs;
 * counted for this call at its first use. */
ptl_size_t pt_coll_r_ready_thr(struct req *r, ptl_size_t dst)
{
    if (!r->cum[dst])
        r->cum[dst] = ++r->g->expect[dst];
    return r->cum[dst];
}

/* The trigger of a send to member dst that also waits for cond >= cthr
 * (cond may be PTL_CT_NONE): *t, *thr. */
int pt_coll_r_gate(struct req *r, ptl_size_t dst, ptl_handle_ct_t cond, ptl_size_t cthr,
                   ptl_handle_ct_t *t, ptl_size_t *thr)
{
    struct group *g = r->g;
    int need_ready = dst != g->me;
    if (need_ready)
        pt_coll_r_ready_thr(r, dst);
    if (!need_ready && cond == PTL_CT_NONE) {
        /* fires at once: any counter at threshold 0 */
        *t = r->sent;
        *thr = 0;
        return PTL_OK;
    }
    if (!need_ready) {
        *t = cond;
        *thr = cthr;
        return PTL_OK;
    }
    if (cond == PTL_CT_NONE) {
        *t = g->from[dst];
        *thr = r->cum[dst];
        return PTL_OK;
    }
    ptl_handle_ct_t gate;
    int rc = pt_coll_r_ct(r, &gate);
    if (rc != PTL_OK)
        return rc;
    ptl_ct_event_t one = {1, 0};
    COLL_TRIG(g, rc, PtlTriggeredCTInc(gate, one, g->from[dst], r->cum[dst]));
    if (rc == PTL_OK)
        COLL_TRIG(g, rc, PtlTriggeredCTInc(gate, one, cond, cthr));
    *t = gate;
    *thr = 2;
    return rc;
}

int pt_coll_r_put(struct req *r, ptl_handle_md_t md, ptl_size_t off, ptl_size_t len, ptl_size_t dst,
                  unsigned tag, ptl_size_t roff, ptl_handle_ct_t t, ptl_size_t thr)
{
    struct group *g = r->g;
    int rc;
    COLL_TRIG(g, rc, PtlTriggeredPut(md, off, len, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                             mbits(g->gid, K_DATA, r->seq, tag), roff, 0, t, thr));
    if (rc == PTL_OK)
        r->nsent++;
    return rc;
}

void pt_coll_req_release(struct req *r)
{
    for (int i = 0; i < r->nmes; i++)
        PtlMEUnlink(r->mes[i]); /* unlinks its MD */
    for (int i = 0; i < r->nmds; i++)
        PtlMDUnlink(r->mds[i]); /* the attached ones are gone already */
    for (int i = 0; i < r->ncts; i++)
        PtlCTFree(r->cts[i]);
    for (int i = 0; i < r->ntmp; i++)
        free(r->tmp[i]);
    free(r->cts);
    free(r->mds);
    free(r->mes);
    free(r->tmp);
    free(r->cum);
    free(r->rtr);
    pthread_mutex_lock(&r->g->lock);
    r->g->inflight--;
    pthread_mutex_unlock(&r->g->lock);
    pt_coll_req_put(r);
}

/* Takes a request slot and starts call g->seq (the group lock is held). */
int pt_coll_req_new(struct group *g, struct req **out)
{
    struct req *r = pt_coll_req_take();
    if (!r)
        return PTL_NO_SPACE;
    r->g = g;
    r->done = PTL_CT_NONE;
    r->cum = calloc(g->n, sizeof *r->cum);
    r->rtr = calloc(g->n, 1);
    r->cts = malloc(8 * sizeof *r->cts);
    int rc = r->cum && r->rtr && r->cts ? PtlCTAlloc(g->ni, &r->sent) : PTL_NO_SPACE;
    if (rc != PTL_OK) {
        free(r->cum);
        free(r->rtr);
        free(r->cts);
        pt_coll_req_put(r);
        return rc;
    }
    g->inflight++;
    r->capcts = 8;
    r->cts[r->ncts++] = r->sent;
    r->seq = g->seq++;
    r->call = pt_coll_enter(g);
    *out = r;
    return PTL_OK;
}

/* After the schedule is armed: the RTRs of this call, then the handle. On
 * an error while arming, the call cannot be taken back from the peers: the
 * request is completed with that error once its own part is idle. */
int pt_coll_req_start(struct req *r, int rc, ptl_handle_coll_req_t *h)
{
    struct group *g = r->g;
    for (ptl_size_t i = 0; rc == PTL_OK && i < g->n; i++)
        if (r->rtr[i])
            rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0, mbits(g->gid, K_RTR, 0, 0), 0,
                        0);
    if (rc != PTL_OK) {
        pthread_mutex_unlock(&g->lock);
        pt_coll_req_release(r);
        return rc;
    }
    pthread_mutex_unlock(&g->lock);
    *h = enc_req(r->gen, (int)(r - g_pt_coll_reqs));
    return PTL_OK;
}
