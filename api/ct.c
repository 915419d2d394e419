/*
 * ct.c - the extension calls of <portals3_ext.h>: counting events, binding an
 * MD to one, triggered operations and reduction puts. Each validates what it
 * can locally and posts a command, as the 3.3 calls do; the engine counts,
 * fires and combines (engine/ct.c).
 */
#include "api_int.h"

#include <portals3_ext.h>

/* The NI of a live CT handle, or NULL. Inside a call only. */
static struct pt_nic *ct_nic(ptl_handle_ct_t h)
{
    if (pt_h_type(h) != PT_H_CT)
        return NULL;
    struct pt_nic *nic = pt_api_nic_of(h);
    return nic && pt_ct_lookup(nic, h) ? nic : NULL;
}

PTL_API int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!ct_handle)
        return PTL_SEGV;
    struct pt_cmd c = {.op = PT_CMD_CT_ALLOC};
    struct pt_done d;
    int rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK)
        *ct_handle = d.h1;
    return pt_ptl_err(rc);
}

PTL_API int PtlCTFree(ptl_handle_ct_t ct_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = ct_nic(ct_handle);
    if (!nic)
        return PTL_CT_INVALID;
    struct pt_cmd c = {.op = PT_CMD_CT_FREE, .h = ct_handle};
    return pt_ptl_err(pt_nic_call(nic, &c));
}

/* The engine writes failure, then success (both store-release); reading
 * success first (load-acquire) gives a failure at least as recent. */
static void ct_read(struct pt_ct *ct, ptl_ct_event_t *ev)
{
    ev->success = LD_ACQUIRE(&ct->success);
    ev->failure = LD_ACQUIRE(&ct->failure);
}

PTL_API int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = ct_nic(ct_handle);
    if (!nic)
        return PTL_CT_INVALID;
    if (!event)
        return PTL_SEGV;
    pt_nic_progress(nic); /* one pass if the engine is free (host mode: the only one) */
    struct pt_ct *ct = pt_ct_lookup(nic, ct_handle);
    if (!ct)
        return PTL_CT_INVALID;
    ct_read(ct, event);
    return PTL_OK;
}

struct ctwait {
    struct pt_nic *nic;
    uint32_t h;
    uint64_t test;
    ptl_ct_event_t ev;
    int rc;
};

/* Resolved on every look, as eq_ready does: a CT freed, or the NI being
 * finalized, ends the wait with PTL_CT_INVALID. */
static bool ct_ready(void *arg)
{
    struct ctwait *w = arg;
    struct pt_ct *ct = pt_ct_lookup(w->nic, w->h);
    if (PT_UNLIKELY(!ct || LD_RELAXED(&w->nic->dead))) {
        w->rc = PTL_CT_INVALID;
        return true;
    }
    ct_read(ct, &w->ev);
    if (w->ev.success + w->ev.failure >= w->test) {
        w->rc = PTL_OK;
        return true;
    }
    return false;
}

/* PtlCTWait, bounded by timeout_ns (-1: none): PTL_EQ_EMPTY when it passed
 * without the count. Internal: also the collective library's wait
 * (coll/coll_int.h), which looks for members that left between naps. */
int pt_api_ct_wait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event,
                   int64_t timeout_ns)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = ct_nic(ct_handle);
    if (!nic)
        return PTL_CT_INVALID;
    if (!event)
        return PTL_SEGV;
    struct ctwait w = {nic, ct_handle, test, {0, 0}, PTL_OK};
    /* The waiting protocol of PtlEQWait: run the engine when free, then sleep
     * on the event word; the engine's D6 wake follows every counter change. */
    if (!pt_wait_until(nic, ct_ready, &w, timeout_ns))
        /* the job failed (a peer died) before the count was reached, or the time passed */
        return timeout_ns < 0 || pt_nic_down(nic) ? PTL_FAIL : PTL_EQ_EMPTY;
    if (w.rc == PTL_OK)
        *event = w.ev;
    return w.rc;
}

PTL_API int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event)
{
    return pt_api_ct_wait(ct_handle, test, event, -1);
}

/* The command of PtlCTSet (set) and PtlCTInc, direct or triggered. */
static struct pt_cmd ct_op_cmd(ptl_handle_ct_t ct_handle, ptl_ct_event_t v, uint32_t set)
{
    struct pt_cmd c = {.op = PT_CMD_CT_OP};
    c.u.ct.ct = ct_handle;
    c.u.ct.set = set;
    c.u.ct.success = v.success;
    c.u.ct.failure = v.failure;
    return c;
}

static int ct_op(ptl_handle_ct_t ct_handle, ptl_ct_event_t v, uint32_t set)
{
    struct pt_nic *nic = ct_nic(ct_handle);
    if (!nic)
        return PTL_CT_INVALID;
    struct pt_cmd c = ct_op_cmd(ct_handle, v, set);
    return pt_ptl_err(pt_nic_call(nic, &c));
}

PTL_API int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    return ct_op(ct_handle, new_ct, 1);
}

PTL_API int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    return ct_op(ct_handle, increment, 0);
}

PTL_API int PtlMDBindCT(ptl_handle_md_t md_handle, ptl_handle_ct_t ct_handle, unsigned int options)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(md_handle);
    if (!nic || !pt_md_lookup(nic, md_handle))
        return PTL_MD_INVALID;
    if (options & ~PTL_CT_ALL)
        return PTL_ARG_INVALID;
    if (ct_handle != PTL_CT_NONE && ct_nic(ct_handle) != nic)
        return PTL_CT_INVALID;
    struct pt_cmd c = {.op = PT_CMD_MD_CT, .h = md_handle};
    c.u.mdct.ct = ct_handle;
    c.u.mdct.opts = options;
    return pt_ptl_err(pt_nic_call(nic, &c));
}

/* ---- data movement and triggered operations ------------------------------- */

/* A triggered operation's slot, reserved before its command is posted (the
 * engine gives it back when it frees the slot: engine/ct.c). */
static int trig_reserve(struct pt_nic *nic)
{
    if (RMW_ADD(&nic->trig_used, 1) >= nic->trig_n) {
        RMW_SUB(&nic->trig_used, 1);
        return PTL_NO_SPACE;
    }
    return PTL_OK;
}

/* Post c, armed on trig_ct at threshold when trig (else run at once). */
static int post(struct pt_nic *nic, struct pt_cmd *c, bool trig, ptl_handle_ct_t trig_ct,
                ptl_size_t threshold)
{
    if (trig) {
        if (ct_nic(trig_ct) != nic)
            return PTL_CT_INVALID;
        int rc = trig_reserve(nic);
        if (rc)
            return rc;
        c->flags |= PT_CF_TRIG;
        c->trig_ct = trig_ct;
        c->trig_thr = threshold;
    }
    int rc = pt_nic_submit(nic, c);
    if (rc && trig)
        RMW_SUB(&nic->trig_used, 1); /* not posted: the engine will not free it */
    return pt_ptl_err(rc);
}

struct move {
    uint16_t op;
    ptl_handle_md_t md;
    ptl_size_t local_offset, length;
    ptl_ack_req_t ack_req;
    ptl_process_id_t target;
    ptl_pt_index_t pt_index;
    ptl_ac_index_t ac_index;
    ptl_match_bits_t match_bits;
    ptl_size_t remote_offset;
    ptl_hdr_data_t hdr_data;
    unsigned aop, atype;
};

/* Checked in the order of the 3.3 calls (PtlPutRegion, PtlGetRegion), then
 * the reduction's operation, type and length, then the trigger. */
static int move(const struct move *m, bool trig, ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(m->md);
    struct pt_md *md = nic ? pt_md_lookup(nic, m->md) : NULL;
    if (!md)
        return PTL_MD_INVALID;
    uint64_t total = LD_RELAXED(&md->api_len);
    if (m->local_offset > total || m->length > total - m->local_offset)
        return PTL_MD_ILLEGAL;
    if (m->op != PT_CMD_GET && m->ack_req != PTL_ACK_REQ && m->ack_req != PTL_NO_ACK_REQ)
        return PTL_FAIL;
    if (m->op == PT_CMD_ATOMIC) {
        if (!pt_atomic_valid(m->aop, m->atype))
            return PTL_ARG_INVALID;
        if (m->length % pt_atomic_size(m->atype))
            return PTL_MD_ILLEGAL;
    }
    if (nic->xo->rank_of(nic->x, m->target.nid, m->target.pid) < 0)
        return PTL_PROCESS_INVALID;
    PT_TM_BEGIN(t);
    struct pt_cmd c = {.op = m->op, .h = m->md};
    c.t_post = t;
    c.u.mv.ack = m->op == PT_CMD_GET ? PTL_NO_ACK_REQ : m->ack_req;
    c.u.mv.target = m->target;
    c.u.mv.pt_index = m->pt_index;
    c.u.mv.ac_index = m->ac_index;
    c.u.mv.match_bits = m->match_bits;
    c.u.mv.remote_offset = m->remote_offset;
    c.u.mv.local_offset = m->local_offset;
    c.u.mv.length = m->length;
    c.u.mv.hdr_data = m->op == PT_CMD_GET ? 0 : m->hdr_data;
    c.u.mv.aop = (uint8_t)m->aop;
    c.u.mv.atype = (uint8_t)m->atype;
    return post(nic, &c, trig, trig_ct, threshold);
}

PTL_API int PtlAtomicPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                         ptl_ack_req_t ack_req, ptl_process_id_t target_id,
                         ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                         ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                         ptl_hdr_data_t hdr_data, ptl_op_t op, ptl_datatype_t datatype)
{
    PT_CHECK_INIT();
    struct move m = {PT_CMD_ATOMIC, md_handle, local_offset, length, ack_req, target_id,
                     pt_index, ac_index, match_bits, remote_offset, hdr_data,
                     (unsigned)op, (unsigned)datatype};
    return move(&m, false, PTL_CT_NONE, 0);
}

PTL_API int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                            ptl_ack_req_t ack_req, ptl_process_id_t target_id,
                            ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                            ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                            ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle,
                            ptl_size_t threshold)
{
    PT_CHECK_INIT();
    struct move m = {PT_CMD_PUT, md_handle, local_offset, length, ack_req, target_id,
                     pt_index, ac_index, match_bits, remote_offset, hdr_data, 0, 0};
    return move(&m, true, trig_ct_handle, threshold);
}

PTL_API int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                            ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                            ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                            ptl_size_t remote_offset, ptl_handle_ct_t trig_ct_handle,
                            ptl_size_t threshold)
{
    PT_CHECK_INIT();
    struct move m = {PT_CMD_GET, md_handle, local_offset, length, PTL_NO_ACK_REQ, target_id,
                     pt_index, ac_index, match_bits, remote_offset, 0, 0, 0};
    return move(&m, true, trig_ct_handle, threshold);
}

PTL_API int PtlTriggeredAtomicPut(ptl_handle_md_t md_handle, ptl_size_t local_offset,
                                  ptl_size_t length, ptl_ack_req_t ack_req,
                                  ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                                  ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                                  ptl_size_t remote_offset, ptl_hdr_data_t hdr_data, ptl_op_t op,
                                  ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle,
                                  ptl_size_t threshold)
{
    PT_CHECK_INIT();
    struct move m = {PT_CMD_ATOMIC, md_handle, local_offset, length, ack_req, target_id,
                     pt_index, ac_index, match_bits, remote_offset, hdr_data,
                     (unsigned)op, (unsigned)datatype};
    return move(&m, true, trig_ct_handle, threshold);
}

static int trig_ct_op(ptl_handle_ct_t ct_handle, ptl_ct_event_t v, uint32_t set,
                      ptl_handle_ct_t trig_ct, ptl_size_t threshold)
{
    PT_API_INSIDE();
    struct pt_nic *nic = ct_nic(ct_handle);
    if (!nic)
        return PTL_CT_INVALID;
    struct pt_cmd c = ct_op_cmd(ct_handle, v, set);
    return post(nic, &c, true, trig_ct, threshold);
}

PTL_API int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment,
                              ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    PT_CHECK_INIT();
    return trig_ct_op(ct_handle, increment, 0, trig_ct_handle, threshold);
}

PTL_API int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct,
                              ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    PT_CHECK_INIT();
    return trig_ct_op(ct_handle, new_ct, 1, trig_ct_handle, threshold);
}
