/*
 * allreduce.c - the per-call allreduce schedules (coll_int.h): recursive
 * doubling with triggered reduction puts, and from PTL_COLL_LARGE_MIN bytes
 * reduce-scatter + allgather. The entry points (allreduce, reduce), which
 * choose between them and the persistent path, are fast.c's.
 */
#include "coll_int.h"
#include "config.h"

#include <string.h>

/* ---- allreduce: recursive doubling with triggered reduction puts --------- */

#define TAG_FOLD   100
#define TAG_RESULT 101

/* *ct >= *thr will say: a >= athr (skipped when a is PTL_CT_NONE) and b >= bthr. */
static int r_and(struct req *r, ptl_handle_ct_t a, ptl_size_t athr, ptl_handle_ct_t b,
                 ptl_size_t bthr, ptl_handle_ct_t *ct, ptl_size_t *thr)
{
    if (a == PTL_CT_NONE) {
        *ct = b;
        *thr = bthr;
        return PTL_OK;
    }
    ptl_handle_ct_t gate;
    ptl_ct_event_t one = {1, 0};
    int rc = pt_coll_r_ct(r, &gate);
    if (rc == PTL_OK)
        COLL_TRIG(r->g, rc, PtlTriggeredCTInc(gate, one, a, athr));
    if (rc == PTL_OK)
        COLL_TRIG(r->g, rc, PtlTriggeredCTInc(gate, one, b, bthr));
    *ct = gate;
    *thr = 2;
    return rc;
}

/* Byte offset of block b when count elements are split into p blocks (the
 * first count % p blocks one element longer). */
static ptl_size_t blk_off(ptl_size_t count, ptl_size_t p, ptl_size_t b, ptl_size_t ts)
{
    return ((count / p) * b + (b < count % p ? b : count % p)) * ts;
}

/* Triggered reduction puts of [off, off + len) of md to the same offsets at
 * dst's tag, in segments of at most seg bytes (counted from off). */
static int r_reduce_range(struct req *r, ptl_handle_md_t md, ptl_size_t off, ptl_size_t len,
                          ptl_size_t seg, ptl_size_t dst, unsigned tag, ptl_coll_type_t t,
                          ptl_coll_op_t op, ptl_handle_ct_t trig, ptl_size_t thr)
{
    struct group *g = r->g;
    int rc = PTL_OK;
    for (ptl_size_t o = off; rc == PTL_OK && o < off + len; o += seg) {
        ptl_size_t l = off + len - o < seg ? off + len - o : seg;
        COLL_TRIG(g, rc,
                  PtlTriggeredAtomicPut(md, o, l, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                                        mbits(g->gid, K_DATA, r->seq, tag), o, 0, (ptl_op_t)op,
                                        (ptl_datatype_t)t, trig, thr));
        if (rc == PTL_OK)
            r->nsent++;
    }
    return rc;
}

#define TAG_RS 1  /* + round: reduce-scatter */
#define TAG_AG 40 /* + round: allgather      */

/*
 * Large allreduce, member me < p = 2^R: reduce-scatter by recursive halving,
 * then allgather by recursive doubling, all in w (recvbuf, holding our
 * contribution). Blocks: p, block b owned by member b. Before round k we
 * hold the range A_k (A_0: every block); partner q = me ^ (p >> (k+1)); we
 * keep the half of A_k on our side of that bit (A_{k+1}) and reduce the
 * other half into q's w by triggered reduction puts, once A_k is complete
 * (every earlier round's arrivals in, chained by r_and). q's puts reduce
 * into our A_{k+1} in place (later rounds' partners write only inside
 * A_{k+2}, never into what we send). After R rounds block me is final; it
 * is reduced only here, and the allgather copies it (plain puts of the whole
 * range held, rounds R-1 .. 0), so every member gets the same bits. A write
 * into a range we sent from always depends on that send having arrived
 * first. The folded member me + p (if any) reduces its vector into w before
 * round 0 and gets the result back at the end. Without one, round 0 sends
 * from sendbuf and w starts with the kept half only (the rest of w is
 * written by the allgather).
 */
static int sched_rsag(struct req *r, const void *sendbuf, void *w, ptl_size_t count,
                      ptl_coll_type_t t, ptl_coll_op_t op, int R, ptl_size_t extra,
                      ptl_size_t seg)
{
    struct group *g = r->g;
    ptl_size_t n = g->n, me = g->me, p = (ptl_size_t)1 << R, ts = type_size(t);
    ptl_size_t bytes = count * ts;
    ptl_handle_ct_t rs[COLL_RMAX], ag[COLL_RMAX], fold = PTL_CT_NONE, have, trig;
    ptl_size_t have_thr = 0, thr;
    ptl_handle_md_t md = (ptl_handle_md_t)PTL_INVALID_HANDLE, md0;
    /* Round 0 sends the half of the vector on its partner's side and keeps
     * the other: without a folded member, that half goes straight from
     * sendbuf and only the kept half is copied into w (w's other half is
     * written by the allgather alone). 1 MiB, 2 members: the post of
     * PtlCollIallreduce, which the application pays, copies 512 KiB, not 1 MiB. */
    bool half = w != sendbuf && extra >= n;
    ptl_size_t d0 = p >> 1, k0 = me & d0 ? d0 : 0;
    ptl_size_t k0off = blk_off(count, p, k0, ts), k0len = blk_off(count, p, k0 + d0, ts) - k0off;
    if (half)
        memcpy((char *)w + k0off, (const char *)sendbuf + k0off, k0len);
    else if (w != sendbuf)
        memcpy(w, sendbuf, bytes);
    int rc = PTL_OK;
    if (extra < n) {
        rc = pt_coll_r_ct(r, &fold);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, w, bytes, (long)extra, TAG_FOLD, fold);
        have_thr = (bytes + seg - 1) / seg;
    }
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t q = me ^ (p >> (k + 1));
        rc = pt_coll_r_ct(r, &rs[k]);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, w, bytes, (long)q, TAG_RS + (unsigned)k, rs[k]);
        if (rc == PTL_OK)
            rc = pt_coll_r_ct(r, &ag[k]);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, w, bytes, (long)q, TAG_AG + (unsigned)k, ag[k]);
    }
    if (rc == PTL_OK)
        rc = pt_coll_r_src(r, w, bytes, &md);
    md0 = md;
    if (rc == PTL_OK && half)
        rc = pt_coll_r_src(r, sendbuf, bytes, &md0);
    have = fold;
    ptl_size_t lo = 0, hi = p;
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t d = p >> (k + 1), q = me ^ d, mid = lo + d;
        ptl_size_t slo = me & d ? lo : mid, klo = me & d ? mid : lo;
        ptl_size_t soff = blk_off(count, p, slo, ts), slen = blk_off(count, p, slo + d, ts) - soff;
        ptl_size_t koff = blk_off(count, p, klo, ts), klen = blk_off(count, p, klo + d, ts) - koff;
        rc = pt_coll_r_gate(r, q, have, have_thr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, k ? md : md0, soff, slen, seg, q, TAG_RS + (unsigned)k, t, op,
                                trig, thr);
        if (rc == PTL_OK)
            rc = r_and(r, have, have_thr, rs[k], (klen + seg - 1) / seg, &have, &have_thr);
        lo = klo;
        hi = klo + d;
    }
    for (int k = R - 1; rc == PTL_OK && k >= 0; k--) {
        ptl_size_t d = p >> (k + 1), q = me ^ d;
        ptl_size_t off = blk_off(count, p, lo, ts), len = blk_off(count, p, hi, ts) - off;
        rc = pt_coll_r_gate(r, q, have, have_thr, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, off, len, q, TAG_AG + (unsigned)k, off, trig, thr);
        if (rc == PTL_OK)
            rc = r_and(r, have, have_thr, ag[k], 1, &have, &have_thr);
        if (me & d)
            lo -= d;
        else
            hi += d;
    }
    if (rc == PTL_OK && extra < n) {
        rc = pt_coll_r_gate(r, extra, have, have_thr, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, 0, bytes, extra, TAG_RESULT, 0, trig, thr);
    }
    r->done = have;
    r->done_thr = have_thr;
    return rc;
}

int pt_coll_sched_allreduce(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t count,
                            ptl_coll_type_t t, ptl_coll_op_t op)
{
    struct group *g = r->g;
    ptl_size_t n = g->n, me = g->me, bytes = count * type_size(t);
    ptl_size_t seg = (ptl_size_t)pt_config()->coll_red_seg;
    if (!seg)
        seg = (ptl_size_t)pt_config()->eager_max;
    seg = seg / type_size(t) * type_size(t);
    if (seg == 0)
        return PTL_MD_ILLEGAL;
    ptl_size_t nseg = (bytes + seg - 1) / seg;
    int R = 0;
    while (((ptl_size_t)2 << R) <= n)
        R++;
    ptl_size_t p = (ptl_size_t)1 << R;
    int rc = PTL_OK;
    if (bytes == 0)
        return PTL_OK;
    if (R == 0) {
        if (recvbuf != sendbuf)
            memmove(recvbuf, sendbuf, bytes);
        return PTL_OK;
    }
    if (me >= p) { /* folded in: contribute to me - p, get the result back */
        ptl_size_t host = me - p;
        ptl_handle_md_t md;
        ptl_handle_ct_t got, trig;
        ptl_size_t thr;
        const void *src = sendbuf;
        if (sendbuf == recvbuf) { /* the result may land before the send leaves */
            void *c = pt_coll_r_tmp(r, bytes);
            if (!c)
                return PTL_NO_SPACE;
            memcpy(c, sendbuf, bytes);
            src = c;
        }
        rc = pt_coll_r_ct(r, &got);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, recvbuf, bytes, (long)host, TAG_RESULT, got);
        if (rc == PTL_OK)
            rc = pt_coll_r_src(r, src, bytes, &md);
        if (rc == PTL_OK)
            rc = pt_coll_r_gate(r, host, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, md, 0, bytes, seg, host, TAG_FOLD, t, op, trig, thr);
        r->done = got;
        r->done_thr = 1;
        return rc;
    }
    ptl_size_t extra = me + p < n ? me + p : n;
    ptl_size_t lmin = (ptl_size_t)pt_config()->coll_large_min;
    if (lmin && bytes >= lmin && count >= p) /* the same choice in every member */
        return sched_rsag(r, sendbuf, recvbuf, count, t, op, R, extra, seg);
    void *acc[65];
    ptl_handle_ct_t cnt[65];
    acc[0] = pt_coll_r_tmp(r, bytes);
    if (!acc[0])
        return PTL_NO_SPACE;
    memcpy(acc[0], sendbuf, bytes);
    for (int k = 1; k <= R; k++) {
        acc[k] = k < R ? pt_coll_r_tmp(r, bytes) : recvbuf;
        if (!acc[k])
            return PTL_NO_SPACE;
        pt_coll_fill_identity(acc[k], count, t, op);
    }
    cnt[0] = PTL_CT_NONE;
    if (extra < n) {
        rc = pt_coll_r_ct(r, &cnt[0]);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, acc[0], bytes, (long)extra, TAG_FOLD, cnt[0]);
    }
    for (int k = 1; rc == PTL_OK && k <= R; k++) {
        rc = pt_coll_r_ct(r, &cnt[k]);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, acc[k], bytes, -1, (unsigned)k, cnt[k]);
    }
    /* pt_coll_r_recv with any source marks every member for an RTR: only the
     * partners (and the folded member) send to us in this call */
    memset(r->rtr, 0, n);
    for (int k = 0; k < R; k++)
        r->rtr[me ^ ((ptl_size_t)1 << k)] = 1;
    if (extra < n)
        r->rtr[extra] = 1;
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t q = me ^ ((ptl_size_t)1 << k);
        ptl_handle_ct_t cond = k ? cnt[k] : cnt[0];
        ptl_size_t cthr = k ? 2 * nseg : nseg;
        ptl_handle_md_t md;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = pt_coll_r_src(r, acc[k], bytes, &md);
        if (rc == PTL_OK)
            rc = pt_coll_r_gate(r, me, cond, cthr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, md, 0, bytes, seg, me, (unsigned)(k + 1), t, op, trig, thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_gate(r, q, cond, cthr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, md, 0, bytes, seg, q, (unsigned)(k + 1), t, op, trig, thr);
    }
    if (rc == PTL_OK && extra < n) {
        ptl_handle_md_t md;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = pt_coll_r_src(r, recvbuf, bytes, &md);
        if (rc == PTL_OK)
            rc = pt_coll_r_gate(r, extra, cnt[R], 2 * nseg, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, 0, bytes, extra, TAG_RESULT, 0, trig, thr);
    }
    r->done = cnt[R];
    r->done_thr = 2 * nseg;
    return rc;
}
