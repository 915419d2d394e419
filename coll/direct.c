/*
 * direct.c - gather, scatter, allgather and alltoall (coll_int.h): direct
 * puts at offsets, on the per-call path (req.c).
 */
#include "coll_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- gather, scatter, allgather, alltoall: direct puts at offsets ------- */

static int sched_gather(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len,
                        ptl_size_t root)
{
    struct group *g = r->g;
    int rc = PTL_OK;
    if (g->me == root) {
        if (sendbuf != recvbuf && len)
            memmove((char *)recvbuf + root * len, sendbuf, len);
        if (g->n == 1)
            return PTL_OK;
        rc = pt_coll_r_ct(r, &r->done);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
        r->done_thr = g->n - 1;
        return rc;
    }
    ptl_handle_md_t md;
    ptl_handle_ct_t trig;
    ptl_size_t thr;
    rc = pt_coll_r_src(r, sendbuf, len, &md);
    if (rc == PTL_OK)
        rc = pt_coll_r_gate(r, root, PTL_CT_NONE, 0, &trig, &thr);
    if (rc == PTL_OK)
        rc = pt_coll_r_put(r, md, 0, len, root, 0, g->me * len, trig, thr);
    return rc;
}

static int sched_scatter(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len,
                         ptl_size_t root)
{
    struct group *g = r->g;
    int rc = PTL_OK;
    if (g->me != root) {
        rc = pt_coll_r_ct(r, &r->done);
        if (rc == PTL_OK)
            rc = pt_coll_r_recv(r, recvbuf, len, (long)root, 0, r->done);
        r->done_thr = 1;
        return rc;
    }
    if (sendbuf != recvbuf && len)
        memmove(recvbuf, (const char *)sendbuf + root * len, len);
    if (g->n == 1)
        return PTL_OK;
    ptl_handle_md_t md;
    rc = pt_coll_r_src(r, sendbuf, g->n * len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == root)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = pt_coll_r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, j * len, len, j, 0, 0, trig, thr);
    }
    return rc;
}

static int sched_allgather(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len)
{
    struct group *g = r->g;
    const void *src = sendbuf;
    if (sendbuf == recvbuf)
        src = (const char *)recvbuf + g->me * len;
    else if (len)
        memmove((char *)recvbuf + g->me * len, sendbuf, len);
    if (g->n == 1)
        return PTL_OK;
    int rc = pt_coll_r_ct(r, &r->done);
    if (rc == PTL_OK)
        rc = pt_coll_r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
    r->done_thr = g->n - 1;
    ptl_handle_md_t md;
    if (rc == PTL_OK)
        rc = pt_coll_r_src(r, src, len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == g->me)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = pt_coll_r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, 0, len, j, 0, g->me * len, trig, thr);
    }
    return rc;
}

static int sched_alltoall(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len)
{
    struct group *g = r->g;
    const char *src = sendbuf;
    if (sendbuf == recvbuf && len) { /* slices arrive where we still send from */
        char *c = pt_coll_r_tmp(r, g->n * len);
        if (!c)
            return PTL_NO_SPACE;
        memcpy(c, sendbuf, g->n * len);
        src = c;
    }
    if (len && (const void *)src != recvbuf)
        memmove((char *)recvbuf + g->me * len, src + g->me * len, len);
    if (g->n == 1)
        return PTL_OK;
    int rc = pt_coll_r_ct(r, &r->done);
    if (rc == PTL_OK)
        rc = pt_coll_r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
    r->done_thr = g->n - 1;
    ptl_handle_md_t md;
    if (rc == PTL_OK)
        rc = pt_coll_r_src(r, src, g->n * len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == g->me)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = pt_coll_r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = pt_coll_r_put(r, md, j * len, len, j, 0, g->me * len, trig, thr);
    }
    return rc;
}

int PtlCollIgather(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                   ptl_size_t root, ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    struct group *g = pt_coll_group_get(h);
    if (len && sendbuf && g->me == root && !recvbuf) {
        /* the root takes part through scratch memory (README; fast.c, Ibcast) */
        void *tmp = bytes_ok(len, g->n) ? malloc(len * g->n) : NULL;
        if (!tmp)
            return PTL_SEGV;
        return pt_coll_req_adopt(PtlCollIgather(h, sendbuf, tmp, len, root, out), out, tmp);
    }
    if (len && !sendbuf)
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return pt_coll_req_start(r, sched_gather(r, sendbuf, recvbuf, len, root), out);
}

int PtlCollIscatter(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                    ptl_size_t root, ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    struct group *g = pt_coll_group_get(h);
    if (len && !recvbuf && (g->me != root || sendbuf)) {
        /* a member that only receives takes part through scratch memory (the
         * root's own block too: README; fast.c, Ibcast) */
        void *tmp = bytes_ok(len, g->n) ? malloc(len) : NULL;
        if (!tmp)
            return PTL_SEGV;
        return pt_coll_req_adopt(PtlCollIscatter(h, sendbuf, tmp, len, root, out), out, tmp);
    }
    if (len && (!recvbuf || (g->me == root && !sendbuf)))
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return pt_coll_req_start(r, sched_scatter(r, sendbuf, recvbuf, len, root), out);
}

int PtlCollIallgather(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                      ptl_handle_coll_req_t *out)
{
    struct group *g = pt_coll_group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    if (len && (!sendbuf || !recvbuf))
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    int rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return pt_coll_req_start(r, sched_allgather(r, sendbuf, recvbuf, len), out);
}

int PtlCollIalltoall(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                     ptl_handle_coll_req_t *out)
{
    struct group *g = pt_coll_group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    if (len && (!sendbuf || !recvbuf))
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    int rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return pt_coll_req_start(r, sched_alltoall(r, sendbuf, recvbuf, len), out);
}

/* ---- blocking versions: start, then wait --------------------------------- */

int PtlCollGather(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t len, ptl_size_t root)
{
    BLOCKING(PtlCollIgather(h, s, d, len, root, &q));
}
int PtlCollScatter(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t len, ptl_size_t root)
{
    BLOCKING(PtlCollIscatter(h, s, d, len, root, &q));
}
int PtlCollAllgather(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t len)
{
    BLOCKING(PtlCollIallgather(h, s, d, len, &q));
}
int PtlCollAlltoall(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t len)
{
    BLOCKING(PtlCollIalltoall(h, s, d, len, &q));
}
