/*
 * node.c - what the collective library's flag path (coll/flag.c) needs from
 * the NI beyond the Portals calls: the flag slots of a process that shares
 * this node's memory (util/flagline.h), one engine pass, and a wait with the
 * waiting protocol of PtlCTWait. Internal (not exported); declared in
 * coll/coll_int.h, the only caller.
 */
#include "api_int.h"

#include "flagline.h"

/* Process id's flag slots (PT_FLAG_SLOTS), or NULL: no NI, no such process,
 * or none in memory this process shares (another host, no job region). */
static int node_lines(ptl_handle_ni_t ni, ptl_process_id_t id, struct pt_flagslot **out)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic || !nic->xo->flag_lines)
        return PTL_NI_INVALID;
    int r = nic->xo->rank_of(nic->x, id.nid, id.pid);
    *out = r < 0 ? NULL : nic->xo->flag_lines(nic->x, (uint32_t)r);
    return PTL_OK;
}

struct pt_flagslot *pt_api_node_lines(ptl_handle_ni_t ni, ptl_process_id_t id)
{
    struct pt_flagslot *l = NULL;
    if (LD_ACQUIRE(&g_pt_inited))
        (void)node_lines(ni, id, &l);
    return l;
}

/* Has process id closed its NI in order (PtlNIFini) in memory this process
 * shares (xport.h peer_left)? Its flag slots' last seqs are visible once
 * this says so. False when not known (no NI, another host, no such op). */
static int node_left(ptl_handle_ni_t ni, ptl_process_id_t id, bool *out)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic || !nic->xo->peer_left)
        return PTL_NI_INVALID;
    int r = nic->xo->rank_of(nic->x, id.nid, id.pid);
    *out = r >= 0 && nic->xo->peer_left(nic->x, (uint32_t)r);
    return PTL_OK;
}

bool pt_api_node_left(ptl_handle_ni_t ni, ptl_process_id_t id)
{
    bool left = false;
    if (LD_ACQUIRE(&g_pt_inited))
        (void)node_left(ni, id, &left);
    return left;
}

/* How long a waiter may look at flags before it announces a sleep: the
 * waiting protocol's own choice (PTL_WAIT_SPIN_US; none when more threads
 * wait than cores run them, where a waiter yields at once). */
static int node_spin(ptl_handle_ni_t ni, uint64_t *out)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    if (nic->w.yield_ns)
        *out = nic->w.wait_spin_ns < nic->w.yield_ns ? nic->w.wait_spin_ns : nic->w.yield_ns;
    return PTL_OK;
}

uint64_t pt_api_node_spin_ns(ptl_handle_ni_t ni)
{
    uint64_t ns = 0;
    if (LD_ACQUIRE(&g_pt_inited))
        (void)node_spin(ni, &ns);
    return ns;
}

/* One engine pass if the engine is free (host mode: it serves the peers
 * while a flag waiter spins): PTL_OK, PTL_NI_INVALID (no NI: finalized) or
 * PTL_FAIL (its job failed: what waits for peers will not come). */
static int node_poll(ptl_handle_ni_t ni)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    pt_nic_progress(nic);
    return pt_nic_down(nic) ? PTL_FAIL : PTL_OK;
}

void pt_api_node_poll(ptl_handle_ni_t ni)
{
    if (LD_ACQUIRE(&g_pt_inited))
        (void)node_poll(ni);
}

int pt_api_node_progress(ptl_handle_ni_t ni)
{
    return LD_ACQUIRE(&g_pt_inited) ? node_poll(ni) : PTL_NO_INIT;
}

struct nodewait {
    struct pt_nic *nic;
    bool (*ready)(void *);
    void *arg;
    bool gone;
};

static bool node_ready(void *arg)
{
    struct nodewait *w = arg;
    if (PT_UNLIKELY(LD_RELAXED(&w->nic->dead))) {
        w->gone = true;
        return true;
    }
    return w->ready(w->arg);
}

/* Wait until ready(arg), as PtlCTWait waits: the engine run when free, then
 * a sleep on the event word that every counter change rings (D6, `all`), so
 * a wake message counted by any counter of this NI ends it; at most
 * timeout_ns. PTL_OK; PTL_EQ_EMPTY at the timeout; PTL_FAIL when the job
 * failed (a peer died) first; PTL_NI_INVALID when the NI is gone or being
 * finalized. */
int pt_api_node_wait(ptl_handle_ni_t ni, bool (*ready)(void *), void *arg, int64_t timeout_ns)
{
    if (!LD_ACQUIRE(&g_pt_inited))
        return PTL_NO_INIT;
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    struct nodewait w = {nic, ready, arg, false};
    if (!pt_wait_until(nic, node_ready, &w, timeout_ns))
        return pt_nic_down(nic) ? PTL_FAIL : PTL_EQ_EMPTY;
    return w.gone ? PTL_NI_INVALID : PTL_OK;
}

static int node_alive(ptl_handle_ni_t ni)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    return nic && !LD_RELAXED(&nic->dead) ? PTL_OK : PTL_NI_INVALID;
}

/* Is the NI still there (not finalized)? The flag slots a group found are
 * in its region: mapped while it is (a group used after PtlNIFini must not
 * touch them). */
bool pt_api_node_alive(ptl_handle_ni_t ni)
{
    return LD_ACQUIRE(&g_pt_inited) && node_alive(ni) == PTL_OK;
}

/* The collective library's hook at PtlNIFini (coll/group.c: the byes of the
 * NI's groups), registered at its first group; api/ni.c calls it while the
 * NI still takes operations, under g_pt_ni_lock. */
static void (*_Atomic g_node_fini_hook)(ptl_handle_ni_t);

void pt_api_node_on_fini(void (*fn)(ptl_handle_ni_t))
{
    ST_RELEASE(&g_node_fini_hook, fn); /* pairs with pt_api_node_fini's acquire */
}

void pt_api_node_fini(ptl_handle_ni_t ni)
{
    void (*fn)(ptl_handle_ni_t) = LD_ACQUIRE(&g_node_fini_hook);
    if (fn)
        fn(ni);
}
