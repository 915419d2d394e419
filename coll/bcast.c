/*
 * bcast.c - the per-call bcast schedules (coll_int.h): the binomial tree
 * from the root, and the same tree pipelined in segments. The entry point,
 * which chooses between them and the slot bcast, is fast.c's PtlCollIbcast.
 */
#include "coll_int.h"
#include "config.h"

/* ---- bcast: binomial tree ------------------------------------------------ */

int pt_coll_sched_bcast(struct req *r, void *buf, ptl_size_t len, ptl_size_t root)
{
    struct group *g = r->g;
    ptl_size_t n = g->n, v = (g->me + n - root) % n;
    if (n == 1)
        return PTL_OK;
    ptl_handle_ct_t got = PTL_CT_NONE;
    int rc = PTL_OK;
    if (v) {
        ptl_size_t parent = ((v & (v - 1)) + root) % n;
        rc = pt_coll_r_ct(r, &got);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, buf, len, (long)parent, 0, got);
        r->done = got;
        r->done_thr = 1;
    }
    ptl_size_t low = v ? (v & -v) : ((ptl_size_t)1 << 62);
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    for (ptl_size_t m = 1; rc == PTL_OK && m < low && v + m < n; m <<= 1) {
        ptl_size_t child = (v + m + root) % n;
        ptl_handle_ct_t t;
        ptl_size_t tt;
        if (md == PTL_INVALID_HANDLE)
            rc = pt_coll_r_src(r, buf, len, &md);
        if (rc == PTL_OK)
            rc = pt_coll_r_gate(r, child, got, 1, &t, &tt);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, 0, len, child, 0, 0, t, tt);
    }
    return rc;
}

/* Large bcast, pipelined (docs/coll.md, "Pipelined bcast"): the binomial
 * tree of pt_coll_sched_bcast, the data in nseg segments. Every member below the
 * root posts an ME per segment (tag j) counting into got[j]; a member with
 * children forwards segment j to each of them by a triggered put as soon as
 * got[j] says it arrived and every child said it is ready, so segment j
 * goes down the tree while j + 1 comes in (the host copies nothing). One
 * counter `ready` gathers the children's RTRs; it raises every got[j] once,
 * so got[j] == 2 means both (1 for a leaf). `all` counts the segments
 * complete: the request's done counter. Per call: nseg + 2 counters, nseg
 * MEs, nseg x (children + 2) triggered operations. */
#define COLL_PIPE_MAXSEG 64 /* segment tags 0..63 (8-bit tag field) */

ptl_size_t pt_coll_bcast_seg(ptl_size_t n, ptl_size_t len)
{
    ptl_size_t seg = (ptl_size_t)pt_config()->coll_bcast_seg;
    if (n < 3 || !seg || len <= seg)
        return 0; /* the whole-buffer tree */
    if ((len + seg - 1) / seg > COLL_PIPE_MAXSEG)
        seg = (len + COLL_PIPE_MAXSEG - 1) / COLL_PIPE_MAXSEG;
    return seg;
}

int pt_coll_sched_bcast_pipe(struct req *r, void *buf, ptl_size_t len, ptl_size_t root,
                             ptl_size_t seg)
{
    struct group *g = r->g;
    ptl_size_t n = g->n, v = (g->me + n - root) % n;
    ptl_size_t nseg = (len + seg - 1) / seg;
    ptl_size_t kids[COLL_RMAX];
    int nk = 0;
    ptl_size_t low = v ? (v & -v) : ((ptl_size_t)1 << 62);
    /* the largest subtree (the farthest child) first */
    for (ptl_size_t m = 1; m < low && v + m < n; m <<= 1)
        nk++;
    for (int i = 0; i < nk; i++)
        kids[nk - 1 - i] = (v + ((ptl_size_t)1 << i) + root) % n;
    ptl_ct_event_t one = {1, 0};
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    int rc = nk ? pt_coll_r_src(r, buf, len, &md) : PTL_OK;
    if (!v) { /* the root: each segment to each child once it is ready */
        for (ptl_size_t j = 0; rc == PTL_OK && j < nseg; j++) {
            ptl_size_t off = j * seg, l = len - off < seg ? len - off : seg;
            for (int i = 0; rc == PTL_OK && i < nk; i++) {
                ptl_handle_ct_t t;
                ptl_size_t tt;
                rc = pt_coll_r_gate(r, kids[i], PTL_CT_NONE, 0, &t, &tt);
                if (rc == PTL_OK)
                    rc = pt_coll_r_put(r, md, off, l, kids[i], (unsigned)j, 0, t, tt);
            }
        }
        return rc;
    }
    ptl_size_t parent = ((v & (v - 1)) + root) % n;
    ptl_handle_ct_t ready = PTL_CT_NONE, all = PTL_CT_NONE;
    if (rc == PTL_OK && nk)
        rc = pt_coll_r_ct(r, &ready);
    for (int i = 0; rc == PTL_OK && i < nk; i++) {
        COLL_TRIG(g, rc,
                  PtlTriggeredCTInc(ready, one, g->from[kids[i]], pt_coll_r_ready_thr(r, kids[i])));
    }
    if (rc == PTL_OK)
        rc = pt_coll_r_ct(r, &all);
    ptl_size_t thr = nk ? 2 : 1;
    for (ptl_size_t j = 0; rc == PTL_OK && j < nseg; j++) {
        ptl_size_t off = j * seg, l = len - off < seg ? len - off : seg;
        ptl_handle_ct_t got;
        rc = pt_coll_r_ct(r, &got);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, (char *)buf + off, l, (long)parent, (unsigned)j, got);
        if (rc == PTL_OK && nk)
            COLL_TRIG(g, rc, PtlTriggeredCTInc(got, one, ready, (ptl_size_t)nk));
        if (rc == PTL_OK)
            COLL_TRIG(g, rc, PtlTriggeredCTInc(all, one, got, thr));
        for (int i = 0; rc == PTL_OK && i < nk; i++)
            rc = pt_coll_r_put(r, md, off, l, kids[i], (unsigned)j, 0, got, thr);
    }
    r->done = all;
    r->done_thr = nseg;
    return rc;
}
