/*
 * move.c - data movement (§5.8). Validates what can be checked locally,
 * posts an asynchronous command and returns; everything after is reported
 * through events. Initiating from an inactive MD is accepted and does nothing
 * (the spec's open question §10.4: REF's intent, per its dead code).
 */
#include "api_int.h"

#include "clock.h"
#include "config.h"

#include <time.h>

static int resolve_md(ptl_handle_md_t h, struct pt_nic **nic_p, struct pt_md **md_p)
{
    struct pt_nic *nic = pt_api_nic_of(h);
    struct pt_md *md = nic ? pt_md_lookup(nic, h) : NULL;
    if (!md)
        return PTL_MD_INVALID;
    *nic_p = nic;
    *md_p = md;
    return PTL_OK;
}

static bool in_range(struct pt_md *md, ptl_size_t off, ptl_size_t len)
{
    uint64_t total = LD_RELAXED(&md->api_len);
    return off <= total && len <= total - off;
}

/* A target no process of the job has (yet), in a job that processes can
 * join: the process may be about to join (peers learn a joiner's pid from
 * their own maps, REF's forktest children address each other so). Wait for
 * it, bounded by PTL_PEER_TIMEOUT_MS; true once it is there. Control path. */
static bool wait_for_joiner(struct pt_nic *nic, ptl_process_id_t target)
{
    if (nic->xi.nprocs == nic->xi.nranks || target.nid != nic->id.nid)
        return false;
    uint64_t t0 = pt_now_ns(), limit = (uint64_t)pt_config()->ni_fail_grace_ms * 1000000u;
    long nap_ns = 50000;
    while (pt_now_ns() - t0 < limit && !nic->xo->job_failed(nic->x)) {
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nic->xo->rank_of(nic->x, target.nid, target.pid) >= 0)
            return true;
        if (nap_ns < 2000000)
            nap_ns *= 2;
    }
    return false;
}

/* This thread's last target that was a rank, and on which NI (its address
 * and life, the tag): a rank's id is fixed while the NI lives (xport.h,
 * rank_of), so a stream to one rank is checked with compares instead of the
 * ops table's call (about 25 instructions of every put, callgrind). */
static __thread struct {
    const struct pt_nic *nic;
    uint32_t tag;
    ptl_process_id_t id;
} tls_target;

/* Some process of the job has the target's id (or joined it in time). */
PT_HOT_INLINE bool target_exists(struct pt_nic *nic, ptl_process_id_t target)
{
    uint32_t tag = LD_RELAXED(&nic->tag);
    if (tls_target.nic == nic && tls_target.id.nid == target.nid &&
        tls_target.id.pid == target.pid && tls_target.tag == tag)
        return true;
    int r = nic->xo->rank_of(nic->x, target.nid, target.pid);
    if (r < 0)
        return wait_for_joiner(nic, target);
    if ((uint32_t)r < nic->xi.nranks) {
        tls_target.nic = nic;
        tls_target.tag = tag;
        tls_target.id = target;
    }
    return true;
}

/* Inlined into each caller (PT_HOT_INLINE): a put's call with its 14
 * arguments, most on the stack, cost about 40 instructions (callgrind). */
PT_HOT_INLINE int post_move(struct pt_nic *nic, uint16_t op, ptl_handle_md_t md,
                            ptl_handle_md_t md2, ptl_ack_req_t ack, ptl_process_id_t target,
                            ptl_pt_index_t pt, ptl_ac_index_t ac, ptl_match_bits_t mbits,
                            ptl_size_t roff, ptl_size_t loff, ptl_size_t len,
                            ptl_hdr_data_t hdr, ptl_size_t put_off)
{
    if (!target_exists(nic, target))
        return PTL_PROCESS_INVALID;
    PT_TM_BEGIN(t);
    /* Field by field: a zeroed 120-byte command first cost 32 instructions
     * of every put (callgrind); the rest of the union is not read. The
     * assertions fail when struct pt_cmd or its move arguments gain a field
     * that this list would leave unset. */
    _Static_assert(offsetof(struct pt_cmd, u) == 40, "post_move sets every header field");
    _Static_assert(sizeof(((struct pt_cmd *)0)->u.mv) == 80, "post_move sets every mv field");
    struct pt_cmd c;
    c.op = op;
    c.flags = 0;
    c.h = md;
    c.done = NULL;
    c.t_post = t;
    c.trig_ct = 0;
    c.seq = 0;
    c.trig_thr = 0;
    c.u.mv.aop = 0;
    c.u.mv.atype = 0;
    c.u.mv.md2 = md2;
    c.u.mv.ack = ack;
    c.u.mv.target = target;
    c.u.mv.pt_index = pt;
    c.u.mv.ac_index = ac;
    c.u.mv.match_bits = mbits;
    c.u.mv.remote_offset = roff;
    c.u.mv.local_offset = loff;
    c.u.mv.length = len;
    c.u.mv.hdr_data = hdr;
    c.u.mv.put_offset = put_off;
    int rc = pt_nic_submit(nic, &c);
    if (g_pt_timing_on && op == PT_CMD_PUT) {
        tls_pt_itm.ticks[PT_IS_SEND] += pt_tsc() - t;
        tls_pt_itm.count[PT_IS_SEND]++;
    }
    return pt_ptl_err(rc);
}

/* Put [local_offset, local_offset + length) of a resolved MD (inlined into
 * PtlPut and PtlPutRegion, as post_move into it). */
PT_HOT_INLINE int put_region(struct pt_nic *nic, struct pt_md *md, ptl_handle_md_t md_handle,
                             ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                             ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                             ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                             ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
    if (!in_range(md, local_offset, length))
        return PTL_MD_ILLEGAL;
    if (ack_req != PTL_ACK_REQ && ack_req != PTL_NO_ACK_REQ)
        return PTL_FAIL;
    return post_move(nic, PT_CMD_PUT, md_handle, 0, ack_req, target_id, pt_index, ac_index,
                     match_bits, remote_offset, local_offset, length, hdr_data, 0);
}

PTL_API int PtlPutRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                         ptl_ack_req_t ack_req, ptl_process_id_t target_id,
                         ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                         ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                         ptl_hdr_data_t hdr_data)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic;
    struct pt_md *md;
    int rc = resolve_md(md_handle, &nic, &md);
    if (rc)
        return rc;
    return put_region(nic, md, md_handle, local_offset, length, ack_req, target_id, pt_index,
                      ac_index, match_bits, remote_offset, hdr_data);
}

PTL_API int PtlPut(ptl_handle_md_t md_handle, ptl_ack_req_t ack_req, ptl_process_id_t target_id,
                   ptl_pt_index_t pt_index, ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                   ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic;
    struct pt_md *md;
    int rc = resolve_md(md_handle, &nic, &md);
    if (rc)
        return rc;
    return put_region(nic, md, md_handle, 0, LD_RELAXED(&md->api_len), ack_req, target_id,
                      pt_index, ac_index, match_bits, remote_offset, hdr_data);
}

/* Get length bytes into [local_offset, ...) of a resolved MD. */
static int get_region(struct pt_nic *nic, struct pt_md *md, ptl_handle_md_t md_handle,
                      ptl_size_t local_offset, ptl_size_t length, ptl_process_id_t target_id,
                      ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset)
{
    if (!in_range(md, local_offset, length))
        return PTL_MD_ILLEGAL;
    return post_move(nic, PT_CMD_GET, md_handle, 0, PTL_NO_ACK_REQ, target_id, pt_index,
                     ac_index, match_bits, remote_offset, local_offset, length, 0, 0);
}

PTL_API int PtlGetRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                         ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                         ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                         ptl_size_t remote_offset)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic;
    struct pt_md *md;
    int rc = resolve_md(md_handle, &nic, &md);
    if (rc)
        return rc;
    return get_region(nic, md, md_handle, local_offset, length, target_id, pt_index, ac_index,
                      match_bits, remote_offset);
}

PTL_API int PtlGet(ptl_handle_md_t md_handle, ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                   ptl_ac_index_t ac_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic;
    struct pt_md *md;
    int rc = resolve_md(md_handle, &nic, &md);
    if (rc)
        return rc;
    return get_region(nic, md, md_handle, 0, LD_RELAXED(&md->api_len), target_id, pt_index,
                      ac_index, match_bits, remote_offset);
}

PTL_API int PtlGetPutRegion(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                            ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                            ptl_size_t length, ptl_process_id_t target_id,
                            ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
                            ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                            ptl_hdr_data_t hdr_data)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic, *nic2;
    struct pt_md *gmd, *pmd;
    int rc = resolve_md(get_md_handle, &nic, &gmd);
    if (rc)
        return rc;
    rc = resolve_md(put_md_handle, &nic2, &pmd);
    if (rc)
        return rc;
    if (nic2 != nic)
        return PTL_MD_ILLEGAL;
    if (length > (ptl_size_t)nic->limits.max_getput_md)
        return PTL_MD_ILLEGAL;
    if (!in_range(gmd, local_get_offset, length) || !in_range(pmd, local_put_offset, length))
        return PTL_MD_ILLEGAL;
    return post_move(nic, PT_CMD_GETPUT, get_md_handle, put_md_handle, PTL_NO_ACK_REQ,
                     target_id, pt_index, ac_index, match_bits, remote_offset, local_get_offset,
                     length, hdr_data, local_put_offset);
}

PTL_API int PtlGetPut(ptl_handle_md_t get_md_handle, ptl_handle_md_t put_md_handle,
                      ptl_process_id_t target_id, ptl_pt_index_t pt_index,
                      ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
                      ptl_size_t remote_offset, ptl_hdr_data_t hdr_data)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic;
    struct pt_md *pmd;
    int rc = resolve_md(put_md_handle, &nic, &pmd);
    if (rc)
        return rc;
    struct pt_nic *n2;
    struct pt_md *gmd;
    rc = resolve_md(get_md_handle, &n2, &gmd);
    if (rc)
        return rc;
    if (n2 != nic)
        return PTL_MD_ILLEGAL;
    uint64_t len = LD_RELAXED(&pmd->api_len);
    if (len > (uint64_t)nic->limits.max_getput_md)
        return PTL_MD_ILLEGAL;
    /* The whole put MD travels; the reply lands at offset 0 of the get MD,
     * clamped to it by the initiator's engine. */
    return post_move(nic, PT_CMD_GETPUT, get_md_handle, put_md_handle, PTL_NO_ACK_REQ, target_id,
                     pt_index, ac_index, match_bits, remote_offset, 0, len, hdr_data, 0);
}
