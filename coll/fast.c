/*
 * fast.c - everything a small collective call runs (coll_int.h): the handle
 * tables and request slots, PtlCollTest and PtlCollWait, the persistent
 * path's calls (coll_int.h, "persistent path": the dissemination barrier,
 * the small allreduce by recursive doubling, the pair path of 2 members, the
 * slot bcast and reduce) and the entry points of barrier, bcast, reduce and
 * allreduce, which choose between it and the per-call schedules (bcast.c,
 * allreduce.c). One unit, so that the compiler inlines across a call.
 */
#include "coll_int.h"
#include "reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The tables (coll_int.h). */
pthread_mutex_t g_pt_coll_tab_lock = PTHREAD_MUTEX_INITIALIZER;
struct group g_pt_coll_groups[COLL_MAX_GROUPS];
struct req g_pt_coll_reqs[COLL_MAX_REQS];
_Atomic uint64_t g_pt_coll_gstate[COLL_MAX_GROUPS];
static _Atomic uint64_t rstate[COLL_MAX_REQS];
static int rfree[COLL_MAX_REQS], nrfree = -1; /* -1: not filled yet */

static int state_ok(_Atomic uint64_t *st, uint64_t h)
{
    uint64_t v = LD_ACQUIRE(st); /* pairs with state_set */
    return (v & 1) && (uint32_t)(v >> 1) == (uint32_t)(h >> 20);
}

struct group *pt_coll_group_get(ptl_handle_coll_t h)
{
    uint64_t idx = (h & 0xfffff) - 1;
    if ((h & 0xfffff) == 0 || idx >= COLL_MAX_GROUPS)
        return NULL;
    return state_ok(&g_pt_coll_gstate[idx], h) ? &g_pt_coll_groups[idx] : NULL;
}

static struct req *req_get(ptl_handle_coll_req_t h)
{
    if (!(h & COLL_REQ_BIT))
        return NULL; /* no request's (a group's, or made up) */
    h &= ~COLL_REQ_BIT;
    uint64_t idx = (h & 0xfffff) - 1;
    if ((h & 0xfffff) == 0 || idx >= COLL_MAX_REQS)
        return NULL;
    return state_ok(&rstate[idx], h) ? &g_pt_coll_reqs[idx] : NULL;
}

/* Request slot r is free from here: its handle invalid (a new generation). */
static int req_retire(struct req *r)
{
    int i = (int)(r - g_pt_coll_reqs);
    r->used = 0;
    r->gen++;
    state_set(&rstate[i], r->gen, 0);
    return i;
}

/* Gives request slot r back to the table. */
void pt_coll_req_put(struct req *r)
{
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    rfree[nrfree++] = req_retire(r);
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
}

/* Gives request slot r back to group g's cache, or to the table when the
 * cache is full (g->lock held; g_pt_coll_tab_lock nests inside it, as in pt_coll_req_new). */
static void req_put_g(struct group *g, struct req *r)
{
    if (g->nrcache < COLL_RCACHE)
        g->rcache[g->nrcache++] = req_retire(r);
    else
        pt_coll_req_put(r);
}

/* Gives group g's cached request slots back to the table (teardown). */
void pt_coll_req_cache_drop(struct group *g)
{
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    while (g->nrcache > 0)
        rfree[nrfree++] = g->rcache[--g->nrcache];
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
}

/* Read at PtlNIFini (the bye hook, under g_pt_coll_tab_lock) without g->lock:
 * no call of the NI may run beside its PtlNIFini (a program that does is
 * erroneous), so the requests of g keep their fields. A request whose
 * counters are complete (pt_coll_req_cts, PtlCollTest's predicate) counts as
 * done, one short of them as in flight, whichever path made it; so does one
 * whose counter cannot be read (the bye then says fewer calls completed:
 * a peer's stalled call fails rather than waits for a part that may not
 * have left). */
uint64_t pt_coll_first_pending(const struct group *g)
{
    uint64_t first = UINT64_MAX;
    for (int i = 0; i < COLL_MAX_REQS; i++) {
        const struct req *r = &g_pt_coll_reqs[i];
        if (!r->used || r->g != g || r->call >= first)
            continue;
        uint64_t seen;
        bool failed;
        int rc;
        if (pt_coll_req_cts(r, &seen, &failed, &rc) != PT_COLL_CTS_COMPLETE)
            first = r->call; /* short, or unreadable: in flight */
    }
    return first;
}

/* Free slot i in use from here: its generation kept, the rest zeroed. */
static struct req *req_reset(int i)
{
    struct req *r = &g_pt_coll_reqs[i];
    uint32_t gen = r->gen;
    memset(r, 0, sizeof *r);
    r->gen = gen;
    r->used = 1;
    state_set(&rstate[i], gen, 1);
    return r;
}

/* Takes a free request slot (its generation kept, the rest zeroed), or NULL. */
struct req *pt_coll_req_take(void)
{
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    if (nrfree < 0)
        for (nrfree = 0; nrfree < COLL_MAX_REQS; nrfree++)
            rfree[nrfree] = COLL_MAX_REQS - 1 - nrfree; /* index 0 on top */
    struct req *r = nrfree > 0 ? req_reset(rfree[--nrfree]) : NULL;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    return r;
}

/* A free request slot for a call on group g (g->lock held): from the
 * group's cache when it has one, else from the table. */
static struct req *req_take_g(struct group *g)
{
    return g->nrcache > 0 ? req_reset(g->rcache[--g->nrcache]) : pt_coll_req_take();
}

/* The end of an adopted call (pt_coll_req_adopt): its scratch freed, once
 * nothing writes it; PTL_SEGV for the buffer the caller did not pass, unless
 * the call failed (rc: PTL_FAIL when a member left or died), which says
 * more: the group's calls are failing (it said PTL_SEGV, as for a call that
 * completed: mp_coll_departed_scratch). */
static int scratch_end(void *scratch, int rc)
{
    if (!scratch)
        return rc;
    free(scratch);
    return rc == PTL_OK ? PTL_SEGV : rc;
}

static int req_finish(struct req *r)
{
    int rc = r->rc;
    void *scratch = r->scratch;
    pt_coll_req_release(r); /* its MEs unlinked: nothing lands in scratch */
    return scratch_end(scratch, rc);
}

int pt_coll_req_adopt(int rc, ptl_handle_coll_req_t *h, void *tmp)
{
    struct req *r = rc == PTL_OK ? req_get(*h) : NULL;
    if (!r) {
        free(tmp);
        return rc;
    }
    r->scratch = tmp; /* only the caller holds the handle: nobody completes it yet */
    return PTL_OK;
}

static int fast_wait(struct req *r);
static void fast_finish(struct req *r, int rc);

/* A persistent-path request whose counters are reached (rc: how): finish it
 * unless a later call on its slot did already, then release it. */
static int fast_done(struct req *r, int rc)
{
    struct group *g = r->g;
    pthread_mutex_lock(&g->lock); /* one critical section: finish, out of flight, free */
    fast_finish(r, rc);
    rc = r->rc;
    void *scratch = r->scratch; /* its result copied out (fast_finish) */
    g->inflight--;
    req_put_g(g, r); /* a persistent-path request holds no resources of its own */
    pthread_mutex_unlock(&g->lock);
    return scratch_end(scratch, rc);
}

int PtlCollTest(ptl_handle_coll_req_t h, int *done)
{
    struct req *r = req_get(h);
    if (!r)
        return PTL_HANDLE_INVALID;
    if (!done)
        return PTL_SEGV;
    uint64_t seen;
    bool failed;
    int rc;
    enum pt_coll_cts st = pt_coll_req_cts(r, &seen, &failed, &rc);
    if (r->fast) { /* unreadable: done, with the read's error */
        *done = st != PT_COLL_CTS_SHORT;
        if (!*done && pt_coll_test_stalled(r, seen) == PTL_OK)
            return PTL_OK;
        if (rc == PTL_OK && (!*done || failed))
            rc = PTL_FAIL; /* failed, or can never complete (PtlCollWait's PTL_FAIL) */
        *done = 1;
        return fast_done(r, rc);
    }
    if (st == PT_COLL_CTS_UNREADABLE) /* the error, the request still in flight */
        return rc;
    if (failed)
        r->rc = PTL_FAIL;
    *done = st == PT_COLL_CTS_COMPLETE;
    if (!*done && pt_coll_test_stalled(r, seen) != PTL_OK) {
        r->rc = PTL_FAIL; /* can never complete: as PtlCollWait ends it */
        *done = 1;
    }
    if (*done)
        return req_finish(r);
    return PTL_OK;
}

int PtlCollWait(ptl_handle_coll_req_t h)
{
    struct req *r = req_get(h);
    if (!r)
        return PTL_HANDLE_INVALID;
    if (r->fast)
        return fast_done(r, fast_wait(r));
    ptl_ct_event_t ev;
    int rc = PTL_OK;
    if (r->done != PTL_CT_NONE) {
        rc = pt_coll_ct_wait(r, r->done, r->done_thr, &ev);
        if (rc == PTL_OK && ev.failure)
            r->rc = PTL_FAIL;
    }
    if (rc == PTL_OK) {
        rc = pt_coll_ct_wait(r, r->sent, r->nsent, &ev);
        if (rc == PTL_OK && ev.failure)
            r->rc = PTL_FAIL;
    }
    if (rc != PTL_OK)
        r->rc = rc;
    return req_finish(r);
}

/* ---- barrier: dissemination on the persistent path (fast_barrier) ------- */

static int fast_call(ptl_handle_coll_t h, int kind, const void *sendbuf, void *recvbuf,
                     ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op,
                     ptl_handle_coll_req_t *out);

int PtlCollIbarrier(ptl_handle_coll_t h, ptl_handle_coll_req_t *out)
{
    return fast_call(h, 0, NULL, NULL, 0, PTL_COLL_INT32, PTL_COLL_SUM, out);
}

/* ---- bcast: the entry point (the per-call schedules: bcast.c) ------------- */

static int fast_begin(ptl_handle_coll_t h, ptl_handle_coll_req_t *out, struct group **gp,
                      struct req **rp);
static int fast_end(struct group *g, struct req *r, int rc, ptl_handle_coll_req_t *h);
static int slot_bcast(struct group *g, struct req *r, void *buf, ptl_size_t len, ptl_size_t root);
static int pb_ok(ptl_handle_coll_t h, ptl_size_t len);

int PtlCollIbcast(ptl_handle_coll_t h, void *buf, ptl_size_t len, ptl_size_t root,
                  ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    if (!buf && len) {
        /* a non-root takes part through scratch memory (README): the root
         * has moved on, and a member that left this call out would take the
         * next call's data for this one's (an adversarial client) */
        void *tmp = pt_coll_group_get(h)->me != root && bytes_ok(len, 1) ? malloc(len) : NULL;
        if (!tmp)
            return PTL_SEGV;
        return pt_coll_req_adopt(PtlCollIbcast(h, tmp, len, root, out), out, tmp);
    }
    if (!bytes_ok(len, 1))
        return PTL_ARG_INVALID;
    struct req *r;
    if (pb_ok(h, len)) {
        struct group *g;
        rc = fast_begin(h, out, &g, &r);
        if (rc != PTL_OK)
            return rc;
        return fast_end(g, r, slot_bcast(g, r, buf, len, root), out);
    }
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    ptl_size_t seg = pt_coll_bcast_seg(r->g->n, len);
    return pt_coll_req_start(r, seg ? pt_coll_sched_bcast_pipe(r, buf, len, root, seg)
                            : pt_coll_sched_bcast(r, buf, len, root), out);
}

/* ---- reduction types and identities ------------------------------------- */

static int check_type_op(ptl_coll_type_t t, ptl_coll_op_t op)
{
    if ((unsigned)t > PTL_COLL_DOUBLE || (unsigned)op > PTL_COLL_BXOR)
        return PTL_ARG_INVALID;
    if ((t == PTL_COLL_FLOAT || t == PTL_COLL_DOUBLE) && op >= PTL_COLL_BAND)
        return PTL_ARG_INVALID;
    return PTL_OK;
}

void pt_coll_fill_identity(void *buf, ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op)
{
    for (ptl_size_t i = 0; i < count; i++) {
        switch (t) {
        case PTL_COLL_INT32: {
            int32_t v = op == PTL_COLL_MIN    ? INT32_MAX
                        : op == PTL_COLL_MAX  ? INT32_MIN
                        : op == PTL_COLL_BAND ? -1
                                              : 0;
            ((int32_t *)buf)[i] = v;
            break;
        }
        case PTL_COLL_INT64: {
            int64_t v = op == PTL_COLL_MIN    ? INT64_MAX
                        : op == PTL_COLL_MAX  ? INT64_MIN
                        : op == PTL_COLL_BAND ? -1
                                              : 0;
            ((int64_t *)buf)[i] = v;
            break;
        }
        case PTL_COLL_UINT64: {
            uint64_t v = op == PTL_COLL_MIN || op == PTL_COLL_BAND ? UINT64_MAX : 0;
            ((uint64_t *)buf)[i] = v;
            break;
        }
        case PTL_COLL_FLOAT:
            ((float *)buf)[i] = op == PTL_COLL_MIN   ? INFINITY
                                : op == PTL_COLL_MAX ? -INFINITY
                                                     : -0.0f;
            break;
        case PTL_COLL_DOUBLE:
            ((double *)buf)[i] = op == PTL_COLL_MIN   ? INFINITY
                                 : op == PTL_COLL_MAX ? -INFINITY
                                                      : -0.0;
            break;
        }
    }
}

/* ---- persistent path: the calls ------------------------------------------ */

/* The coll types and operations are the Portals reduction ones (the
 * triggered reduction puts pass them on as they are). */
_Static_assert(PTL_COLL_INT32 == (int)PTL_INT32_T && PTL_COLL_INT64 == (int)PTL_INT64_T &&
                   PTL_COLL_UINT64 == (int)PTL_UINT64_T && PTL_COLL_FLOAT == (int)PTL_FLOAT &&
                   PTL_COLL_DOUBLE == (int)PTL_DOUBLE,
               "ptl_coll_type_t must equal ptl_datatype_t");
_Static_assert(PTL_COLL_SUM == (int)PTL_SUM && PTL_COLL_MIN == (int)PTL_MIN &&
                   PTL_COLL_MAX == (int)PTL_MAX && PTL_COLL_BAND == (int)PTL_BAND &&
                   PTL_COLL_BOR == (int)PTL_BOR && PTL_COLL_BXOR == (int)PTL_BXOR,
               "ptl_coll_op_t must equal ptl_op_t");

/* The result of a pair allreduce whose partner's value has landed in IN:
 * member 0's value op member 1's, the same operands in the same order on
 * both members (bit-identical whatever the operation and values). */
static void pair_combine(struct req *r)
{
    const void *v0 = r->g->me == 0 ? r->res : r->in, *v1 = r->g->me == 0 ? r->in : r->res;
    /* out may be sendbuf (in place): SRC and IN, the operands, are the slot's */
    memcpy(r->out, v0, r->bytes);
    pt_atomic_combine((unsigned)r->op, (unsigned)r->t, r->out, v1, r->bytes); /* as the engine */
}

/* Waits for r's counters (no lock held): PTL_OK or why not. */
static int fast_wait(struct req *r)
{
    ptl_ct_event_t ev;
    int rc = PTL_OK;
    if (r->done != PTL_CT_NONE) {
        rc = pt_coll_ct_wait(r, r->done, r->done_thr, &ev);
        if (rc == PTL_OK && ev.failure)
            rc = PTL_FAIL;
    }
    if (rc == PTL_OK && r->nsent) {
        rc = pt_coll_ct_wait(r, r->sent, r->nsent, &ev);
        if (rc == PTL_OK && ev.failure)
            rc = PTL_FAIL;
    }
    return rc;
}

/* r's counters reached (rc says how): copy the result out, free its slot
 * (group lock held; once). */
static void fast_finish(struct req *r, int rc)
{
    if (r->finished)
        return;
    r->finished = 1;
    r->rc = rc;
    if (rc == PTL_OK && r->out && r->bytes && r->pair == 1)
        pair_combine(r);
    else if (rc == PTL_OK && r->out && r->bytes)
        memcpy(r->out, r->res, r->bytes);
    if (rc == PTL_OK && r->out && r->bytes && r->pair == 3) /* slot reduce's root */
        for (int j = 0; j < r->kids; j++)
            pt_atomic_combine((unsigned)r->op, (unsigned)r->t, r->out,
                              (const char *)r->res + (ptl_size_t)(1 + j) * r->g->smax, r->bytes);
    if (r->fslot >= 0 && r->pair >= 2)
        r->g->pb->owner[r->fslot] = 0;
    else if (r->fslot >= 0)
        (r->pair ? r->g->ps : r->g->fs)[r->fslot].owner = 0;
}

/* A request slot for a persistent-path call (group lock held). */
static int req_new_fast(struct group *g, struct req **out)
{
    struct req *r = req_take_g(g);
    if (!r)
        return PTL_NO_SPACE;
    r->g = g;
    r->fast = 1;
    r->fslot = -1;
    r->done = r->sent = PTL_CT_NONE;
    r->call = pt_coll_enter(g);
    g->inflight++;
    *out = r;
    return PTL_OK;
}

/* Starts a persistent-path call on group h: PTL_OK with the group locked
 * and a request taken (fast_end unlocks), or why not (nothing held). */
static int fast_begin(ptl_handle_coll_t h, ptl_handle_coll_req_t *out, struct group **gp,
                      struct req **rp)
{
    int rc = begin_with(h, out, rp, req_new_fast);
    if (rc == PTL_OK)
        *gp = (*rp)->g;
    return rc;
}

/* The next slot, free: its previous call must have completed here. */
static struct fslot *slot_take(struct group *g, struct req *r)
{
    int s = (int)(g->fseq++ % COLL_SLOTS);
    struct fslot *f = &g->fs[s];
    if (f->owner) {
        struct req *o = &g_pt_coll_reqs[f->owner - 1];
        fast_finish(o, fast_wait(o));
    }
    f->owner = (int)(r - g_pt_coll_reqs) + 1;
    r->fslot = s;
    r->sent = f->sent;
    return f;
}

static int fast_end(struct group *g, struct req *r, int rc, ptl_handle_coll_req_t *h)
{
    if (rc != PTL_OK) {
        fast_finish(r, rc);
        pthread_mutex_unlock(&g->lock);
        pt_coll_req_release(r);
        return rc;
    }
    pthread_mutex_unlock(&g->lock);
    *h = enc_req(r->gen, (int)(r - g_pt_coll_reqs));
    return PTL_OK;
}

static int rtr(struct group *g, ptl_size_t peer)
{
    return PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[peer], g->pt, 0, mbits(g->gid, K_RTR, 0, 0), 0, 0);
}

/* Dissemination barrier on the persistent MEs: round k's send waits for
 * rounds 0..k-1 of this barrier to have arrived. */
static int fast_barrier(struct group *g, struct req *r)
{
    ptl_size_t n = g->n, me = g->me;
    int R = g->rb;
    if (R == 0)
        return PTL_OK;
    struct fslot *f = slot_take(g, r);
    ptl_size_t c = ++g->bar_calls, u = ++f->buses;
    ptl_ct_event_t one = {1, 0};
    int rc = PTL_OK;
    /* cond(k) = rounds 0..k-1 arrived: barr[0] >= c, or bg[k] >= 2u */
#define BCOND_CT(k)  ((k) == 1 ? g->barr[0] : f->bg[k])
#define BCOND_THR(k) ((k) == 1 ? c : 2 * u)
    for (int k = 2; rc == PTL_OK && k <= R; k++) {
        COLL_TRIG(g, rc, PtlTriggeredCTInc(f->bg[k], one, BCOND_CT(k - 1), BCOND_THR(k - 1)));
        if (rc == PTL_OK)
            COLL_TRIG(g, rc, PtlTriggeredCTInc(f->bg[k], one, g->barr[k - 1], c));
    }
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t dst = (me + ((ptl_size_t)1 << k)) % n;
        ptl_match_bits_t bits = mbits(g->gid, K_FAST, FSEQ_BAR, (unsigned)k);
        COLL_TRIG(g, rc,
                  PtlTriggeredPut(f->md, 0, 0, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0, bits, 0, 0,
                                  k ? BCOND_CT(k) : f->sent, k ? BCOND_THR(k) : 0));
        if (rc == PTL_OK)
            f->sent_exp++;
    }
    r->done = BCOND_CT(R);
    r->done_thr = BCOND_THR(R);
#undef BCOND_CT
#undef BCOND_THR
    r->nsent = f->sent_exp;
    return rc;
}

static int fast_atomic(struct group *g, struct fslot *f, ptl_size_t off, ptl_size_t bytes,
                       ptl_size_t dst, uint64_t s, unsigned tag, ptl_coll_type_t t,
                       ptl_coll_op_t op, ptl_handle_ct_t trig, ptl_size_t thr)
{
    int rc;
    COLL_TRIG(g, rc,
              PtlTriggeredAtomicPut(f->md, off, bytes, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                                    mbits(g->gid, K_FAST, s, tag), 0, 0, (ptl_op_t)op,
                                    (ptl_datatype_t)t, trig, thr));
    if (rc == PTL_OK)
        f->sent_exp++;
    return rc;
}

/* Recursive doubling into the slot's accumulators (acc[k] = mem + k*smax):
 * acc[k+1] starts at the identity and gets acc[k] from this member and from
 * partner me ^ 2^k (acc[1] starts at our own value instead when nobody is
 * folded into us: one reduction put fewer). A folded member (me >= p2) puts
 * its value into acc[0] of me - p2 and gets the result back. Peers' puts
 * into a slot wait for our RTR, sent after the slot is reset. */
static int fast_allreduce(struct group *g, struct req *r, const void *sendbuf, void *recvbuf,
                          ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op)
{
    ptl_size_t n = g->n, me = g->me, sm = g->smax, bytes = count * type_size(t);
    struct fslot *f = slot_take(g, r);
    uint64_t s = (uint64_t)r->fslot;
    ptl_size_t u = ++f->auses;
    ptl_ct_event_t one = {1, 0};
    int rc;
    r->out = recvbuf;
    r->bytes = bytes;
    if (me >= g->p2) {
        ptl_size_t h = me - g->p2;
        memcpy(f->mem, sendbuf, bytes);
        ptl_size_t cum = ++g->expect[h];
        rc = rtr(g, h);
        if (rc == PTL_OK)
            rc = fast_atomic(g, f, 0, bytes, h, s, FT_FOLD, t, op, g->from[h], cum);
        r->res = f->mem + sm;
        r->done = f->cnt[0];
        r->done_thr = u;
        r->nsent = f->sent_exp;
        return rc;
    }
    int R = g->ra, extra = me + g->p2 < n;
    ptl_size_t inc1 = extra ? 2 : 1; /* arrivals per use into acc[1] */
    memcpy(f->mem, sendbuf, bytes);
    if (!extra)
        memcpy(f->mem + sm, sendbuf, bytes);
    for (int k = extra ? 1 : 2; k <= R; k++)
        pt_coll_fill_identity(f->mem + (ptl_size_t)k * sm, count, t, op);
    ptl_size_t cum[COLL_RMAX + 1], cum_e = 0;
    rc = PTL_OK;
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t q = me ^ ((ptl_size_t)1 << k);
        cum[k] = ++g->expect[q];
        rc = rtr(g, q);
    }
    if (rc == PTL_OK && extra) {
        cum_e = ++g->expect[me + g->p2];
        rc = rtr(g, me + g->p2);
    }
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t q = me ^ ((ptl_size_t)1 << k);
        /* acc[k] complete: none (k = 0, no fold), the fold, or two arrivals */
        int now = k == 0 && !extra;
        ptl_handle_ct_t ct = k == 0 ? f->cnt[0] : f->cnt[k];
        ptl_size_t thr = k == 0 ? u : (k == 1 ? inc1 : 2) * u;
        if (!now)
            rc = fast_atomic(g, f, (ptl_size_t)k * sm, bytes, me, s, (unsigned)(k + 1), t, op, ct,
                             thr);
        if (rc != PTL_OK)
            break;
        if (now) {
            rc = fast_atomic(g, f, 0, bytes, q, s, 1, t, op, g->from[q], cum[k]);
            continue;
        }
        COLL_TRIG(g, rc, PtlTriggeredCTInc(f->gate[k], one, ct, thr));
        if (rc == PTL_OK)
            COLL_TRIG(g, rc, PtlTriggeredCTInc(f->gate[k], one, g->from[q], cum[k]));
        if (rc == PTL_OK)
            rc = fast_atomic(g, f, (ptl_size_t)k * sm, bytes, q, s, (unsigned)(k + 1), t, op,
                             f->gate[k], 2 * u);
    }
    ptl_handle_ct_t last = f->cnt[R];
    ptl_size_t last_thr = (R == 1 ? inc1 : 2) * u;
    if (rc == PTL_OK && extra) {
        COLL_TRIG(g, rc, PtlTriggeredCTInc(f->gate[R], one, last, last_thr));
        if (rc == PTL_OK)
            COLL_TRIG(g, rc, PtlTriggeredCTInc(f->gate[R], one, g->from[me + g->p2], cum_e));
        if (rc == PTL_OK)
            COLL_TRIG(g, rc,
                      PtlTriggeredPut(f->md, (ptl_size_t)R * sm, bytes, PTL_NO_ACK_REQ,
                                      g->ids[me + g->p2], g->pt, 0,
                                      mbits(g->gid, K_FAST, s, FT_RES), 0, 0, f->gate[R], 2 * u));
        if (rc == PTL_OK)
            f->sent_exp++;
    }
    r->res = f->mem + (ptl_size_t)R * sm;
    r->done = last;
    r->done_thr = last_thr;
    r->nsent = f->sent_exp;
    return rc;
}

/* Small allreduce of a 2-member group, without RTR (docs/coll.md, "Pair
 * path"). Call b takes pair slot b % COLL_SLOTS:
 *  - (R1) call b - (COLL_SLOTS - 1) is finished first (pair_take): its
 *    partner's value arrived and was combined out of its slot's IN;
 *  - SRC gets our value; one plain put SRC -> the partner's IN of the slot,
 *    (R2) armed on our call b - 1's counter (the partner's value of b - 1
 *    arrived here);
 *  - done when the partner's put landed (cnt[0] counts one per use); the
 *    host that completes the request combines member 0's value op member
 *    1's into recvbuf.
 * Why IN is never overwritten before it was combined: the partner's put of
 * call c is armed on the partner's counter of c - 1, i.e. on our put of
 * c - 1, which we armed only after finishing c - 1 - (COLL_SLOTS - 1) =
 * c - COLL_SLOTS, the slot's previous use. */
static struct fslot *pair_take(struct group *g, struct req *r)
{
    int s = (int)(g->pseq++ % COLL_SLOTS);
    struct fslot *f = &g->ps[s];
    for (int k = 0; k < 2; k++) { /* R1: the slot after ours (b - 19), and ours (b - 20) */
        struct fslot *o = &g->ps[(s + 1 - k) % COLL_SLOTS];
        if (o->owner) {
            struct req *q = &g_pt_coll_reqs[o->owner - 1];
            fast_finish(q, fast_wait(q));
        }
    }
    f->owner = (int)(r - g_pt_coll_reqs) + 1;
    r->fslot = s;
    r->pair = 1;
    r->sent = f->sent;
    return f;
}

static int pair_allreduce(struct group *g, struct req *r, const void *sendbuf, void *recvbuf,
                          ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op)
{
    ptl_size_t sm = g->smax, bytes = count * type_size(t), peer = g->me ^ 1;
    struct fslot *f = pair_take(g, r);
    ptl_size_t u = ++f->auses;
    r->out = recvbuf;
    r->bytes = bytes;
    r->t = t;
    r->op = op;
    r->res = f->mem; /* our value (SRC) */
    r->in = f->mem + sm;
    memcpy(f->mem, sendbuf, bytes);
    /* R2: the partner's value of our previous pair allreduce arrived (none: at once) */
    ptl_handle_ct_t gct = g->pprev_thr ? g->pprev : f->sent;
    int rc;
    COLL_TRIG(g, rc,
              PtlTriggeredPut(f->md, 0, bytes, PTL_NO_ACK_REQ, g->ids[peer], g->pt, 0,
                              mbits(g->gid, K_FAST, PSEQ_BASE + (uint64_t)r->fslot, FT_PAIR), 0, 0,
                              gct, g->pprev_thr));
    if (rc == PTL_OK)
        f->sent_exp++;
    r->done = f->cnt[0];
    r->done_thr = u;
    r->nsent = f->sent_exp;
    g->pprev = f->cnt[0];
    g->pprev_thr = u;
    return rc;
}

/* Small bcast on persistent slots without RTR (docs/coll.md, "Slot
 * bcast"): a binomial tree from the root, as the per-call bcast. Slot bcast
 * number c (1-based, counted per group) takes slot (c - 1) % PB_SLOTS:
 *  - (B1) call c - PB_AHEAD is finished first; the earlier calls were by
 *    the earlier calls' B1, so every call up to c - PB_AHEAD has its data
 *    copied out and its puts gone;
 *  - every PB_SIG-th call, each member sends every peer a 0-byte start
 *    signal: start[Q] >= m says Q started call m PB_SIG;
 *  - (B2) a put of call c to child Q waits until Q started a call >=
 *    c - PB_AHEAD (start[Q] >= ceil((c - PB_AHEAD) / PB_SIG)), i.e. finished
 *    c - 2 PB_AHEAD = c - PB_SLOTS, the slot's previous use, so Q's slot is
 *    free: the root arms it on that counter (the engine waits), a forwarder
 *    waits for it here and arms its put on the data's arrival;
 *  - the root copies buf into its slot first; a non-root is done when the
 *    data landed (cnt[s] counts one put per call of slot s in which we
 *    receive: only our parent of that call puts into it), and the host that
 *    completes the request copies it out; every member is done when its
 *    puts from the slot left (sent[s], per slot: the puts of different calls
 *    may leave out of order).
 * B2's wait depends only on earlier calls (Q's start of a call <= c - 13
 * needs Q's B1 of call <= c - 29), so no call waits for itself. The root
 * runs up to PB_AHEAD calls ahead of a slow member. */
/* The part of a slot call common to bcast (kind 2) and reduce (kind 3),
 * which share the numbering, the slots and the start signals: B1, the slot
 * taken, every PB_SIG-th call's start signals. *c_p: the call's number;
 * *need_p: B2's threshold on a receiver's start counter (0: none). */
static int pb_begin(struct group *g, struct req *r, int kind, ptl_size_t *c_p, int *s_p,
                    ptl_size_t *need_p)
{
    struct pbc *b = g->pb;
    ptl_size_t c = ++b->seq, n = g->n, me = g->me;
    int s = (int)((c - 1) % PB_SLOTS);
    if (c > PB_AHEAD) { /* B1 */
        int os = (int)((c - 1 - PB_AHEAD) % PB_SLOTS);
        if (b->owner[os]) {
            struct req *o = &g_pt_coll_reqs[b->owner[os] - 1];
            fast_finish(o, fast_wait(o));
        }
    }
    /* its previous use finished at B1 of c - PB_AHEAD */
    b->owner[s] = (int)(r - g_pt_coll_reqs) + 1;
    r->fslot = s;
    r->pair = kind;
    r->sent = b->sent[s];
    int rc = PTL_OK;
    for (ptl_size_t i = 0; c % PB_SIG == 0 && rc == PTL_OK && i < n; i++)
        if (i != me)
            rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0,
                        mbits(g->gid, K_FAST, PBSEQ_START, FT_PBC), 0, 0);
    *c_p = c;
    *s_p = s;
    *need_p = c > PB_AHEAD ? (c - PB_AHEAD + PB_SIG - 1) / PB_SIG : 0; /* B2 */
    return rc;
}

/* B2 for a put of this call to receiver q that the engine arms on our own
 * progress: q's start counter is checked here, waiting if needed. */
static int pb_need(struct req *r, struct pbc *b, ptl_size_t q, ptl_size_t need)
{
    ptl_ct_event_t ev;
    int rc = PtlCTGet(b->start[q], &ev);
    if (rc == PTL_OK && ev.success < need)
        rc = pt_coll_ct_wait(r, b->start[q], need, &ev);
    if (rc == PTL_OK && ev.failure)
        rc = PTL_FAIL;
    return rc;
}

static int slot_bcast(struct group *g, struct req *r, void *buf, ptl_size_t len, ptl_size_t root)
{
    struct pbc *b = g->pb;
    ptl_size_t c, need, n = g->n, me = g->me;
    int s;
    int rc = pb_begin(g, r, 2, &c, &s, &need);
    char *slot = b->mem + (ptl_size_t)s * b->stride;
    ptl_size_t v = (me + n - root) % n;
    if (v == 0) {
        memcpy(slot, buf, len);
    } else {
        r->done = b->cnt[s];
        r->done_thr = ++b->recvs[s];
        r->res = slot;
        r->out = buf;
        r->bytes = len;
    }
    ptl_size_t low = v ? (v & -v) : ((ptl_size_t)1 << 62);
    for (ptl_size_t m = 1; rc == PTL_OK && m < low && v + m < n; m <<= 1) {
        ptl_size_t child = (v + m + root) % n;
        ptl_handle_ct_t ct = b->sent[s];
        ptl_size_t thr = 0;
        if (v == 0 && need) {
            ct = b->start[child];
            thr = need;
        } else if (v) {
            rc = pb_need(r, b, child, need);
            ct = b->cnt[s];
            thr = r->done_thr;
        }
        if (rc == PTL_OK)
            COLL_TRIG(g, rc,
                      PtlTriggeredPut(b->md[s], 0, len, PTL_NO_ACK_REQ, g->ids[child], g->pt, 0,
                                      mbits(g->gid, K_FAST, PBSEQ_BASE + (uint64_t)s, FT_PBC), 0, 0,
                                      ct, thr));
        if (rc == PTL_OK)
            b->sent_exp[s]++;
    }
    r->nsent = b->sent_exp[s];
    return rc;
}

/* Small reduce on the same slots (docs/coll.md, "Slot reduce"): the
 * binomial tree of the bcast, run towards the root. In call c (slot s), a
 * member's children are relative ranks v + 2^j (j = 0 .. kids-1); child j
 * puts its partial result (a plain put) into area j of our slot,
 * slot + (1 + j) * smax, and cnt[s] counts every put into the slot. ACC
 * (the slot's first smax bytes) gets our own value when the call starts:
 * nothing else writes it but our own puts armed after that copy.
 *  - the root is done when its kids children arrived; the host that
 *    completes the request combines ACC op area 0 op area 1 ... into recvbuf;
 *  - any other member combines in the engine, in the same order: its
 *    atomic put j (area j -> its own ACC) is armed on cnt[s] >= base +
 *    kids + j (every child arrived, and its puts 0 .. j-1 landed), and its
 *    put of ACC to area log2(low) of its parent on base + 2 kids; a leaf's
 *    put goes at once. Every member is done when its puts left.
 * The same operands in the same order whatever the arrival order: the
 * result does not depend on timing (floats included). Flow control is the
 * bcast's (B1, B2: a put to the parent of call c waits until the parent
 * started c - PB_AHEAD, so it finished the slot's previous use, c - PB_SLOTS):
 * a leaf's call returns at once and leaves run up to PB_AHEAD calls ahead
 * of a slow root, as Open MPI's eager reduce does. */
static int slot_reduce(struct group *g, struct req *r, const void *sendbuf, void *recvbuf,
                       ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op, ptl_size_t root)
{
    struct pbc *b = g->pb;
    ptl_size_t c, need, n = g->n, me = g->me, sm = g->smax, bytes = count * type_size(t);
    int s;
    int rc = pb_begin(g, r, 3, &c, &s, &need);
    char *slot = b->mem + (ptl_size_t)s * b->stride;
    memcpy(slot, sendbuf, bytes);
    ptl_size_t v = (me + n - root) % n;
    ptl_size_t low = v ? (v & -v) : ((ptl_size_t)1 << 62);
    int kids = 0;
    for (ptl_size_t m = 1; m < low && v + m < n; m <<= 1)
        kids++;
    ptl_size_t base = b->recvs[s];
    r->t = t;
    r->op = op;
    r->bytes = bytes;
    if (v == 0) {
        b->recvs[s] += (ptl_size_t)kids;
        r->kids = kids;
        r->res = slot;
        r->out = recvbuf;
        r->done = b->cnt[s];
        r->done_thr = b->recvs[s];
        r->nsent = b->sent_exp[s];
        return rc;
    }
    ptl_match_bits_t bits = mbits(g->gid, K_FAST, PBSEQ_BASE + (uint64_t)s, FT_PBC);
    for (int j = 0; rc == PTL_OK && j < kids; j++) {
        COLL_TRIG(g, rc,
                  PtlTriggeredAtomicPut(b->md[s], (ptl_size_t)(1 + j) * sm, bytes, PTL_NO_ACK_REQ,
                                        g->ids[me], g->pt, 0, bits, 0, 0, (ptl_op_t)op,
                                        (ptl_datatype_t)t, b->cnt[s],
                                        base + (ptl_size_t)kids + (ptl_size_t)j));
        if (rc == PTL_OK)
            b->sent_exp[s]++;
    }
    b->recvs[s] += 2 * (ptl_size_t)kids;
    ptl_size_t parent = (v - low + root) % n;
    ptl_size_t area = (ptl_size_t)__builtin_ctzll(low); /* we are the parent's child log2(low) */
    ptl_handle_ct_t ct = b->sent[s];
    ptl_size_t thr = 0;
    if (kids) {
        if (rc == PTL_OK && need)
            rc = pb_need(r, b, parent, need);
        ct = b->cnt[s];
        thr = b->recvs[s];
    } else if (need) {
        ct = b->start[parent];
        thr = need;
    }
    if (rc == PTL_OK)
        COLL_TRIG(g, rc,
                  PtlTriggeredPut(b->md[s], 0, bytes, PTL_NO_ACK_REQ, g->ids[parent], g->pt, 0,
                                  bits, (1 + area) * sm, 0, ct, thr));
    if (rc == PTL_OK)
        b->sent_exp[s]++;
    r->nsent = b->sent_exp[s];
    return rc;
}

static int pb_ok(ptl_handle_coll_t h, ptl_size_t len)
{
    struct group *g = pt_coll_group_get(h);
    return g && g->pb && len > 0 && len <= g->smax;
}

/* Starts a persistent-path call: kind 0 barrier, 1 allreduce. */
static int fast_call(ptl_handle_coll_t h, int kind, const void *sendbuf, void *recvbuf,
                     ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op,
                     ptl_handle_coll_req_t *out)
{
    struct group *g;
    struct req *r;
    int rc = fast_begin(h, out, &g, &r);
    if (rc != PTL_OK)
        return rc;
    if (kind == 0)
        rc = fast_barrier(g, r);
    else if (g->ps)
        rc = pair_allreduce(g, r, sendbuf, recvbuf, count, t, op);
    else
        rc = fast_allreduce(g, r, sendbuf, recvbuf, count, t, op);
    return fast_end(g, r, rc, out);
}

static int fast_ok(ptl_handle_coll_t h, ptl_size_t bytes)
{
    struct group *g = pt_coll_group_get(h);
    return g && g->n > 1 && bytes > 0 && bytes <= g->smax;
}

/* ---- allreduce, reduce: the entry points ---------------------------------- */

int PtlCollIallreduce(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t count,
                      ptl_coll_type_t t, ptl_coll_op_t op, ptl_handle_coll_req_t *out)
{
    if (!pt_coll_group_get(h))
        return PTL_HANDLE_INVALID;
    int rc = check_type_op(t, op);
    if (rc != PTL_OK)
        return rc;
    if (count && (!sendbuf || !recvbuf))
        return PTL_SEGV;
    if (!bytes_ok(count, type_size(t)))
        return PTL_ARG_INVALID;
    if (fast_ok(h, count * type_size(t)))
        return fast_call(h, 1, sendbuf, recvbuf, count, t, op, out);
    struct req *r;
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return pt_coll_req_start(r, pt_coll_sched_allreduce(r, sendbuf, recvbuf, count, t, op), out);
}

int PtlCollIreduce(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t count,
                   ptl_coll_type_t t, ptl_coll_op_t op, ptl_size_t root, ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    rc = check_type_op(t, op);
    if (rc != PTL_OK)
        return rc;
    struct group *g = pt_coll_group_get(h);
    if (count && sendbuf && g->me == root && !recvbuf) {
        /* the root takes part through scratch memory (README; Ibcast) */
        void *tmp = bytes_ok(count, type_size(t)) ? malloc(count * type_size(t)) : NULL;
        if (!tmp)
            return PTL_SEGV;
        return pt_coll_req_adopt(PtlCollIreduce(h, sendbuf, tmp, count, t, op, root, out), out,
                                 tmp);
    }
    if (count && !sendbuf)
        return PTL_SEGV;
    if (!bytes_ok(count, type_size(t)))
        return PTL_ARG_INVALID;
    struct req *r;
    if (pb_ok(h, count * type_size(t))) {
        rc = fast_begin(h, out, &g, &r);
        if (rc != PTL_OK)
            return rc;
        return fast_end(g, r, slot_reduce(g, r, sendbuf, recvbuf, count, t, op, root), out);
    }
    if (fast_ok(h, count * type_size(t))) /* every member computes it; the root keeps it */
        return fast_call(h, 1, sendbuf, g->me == root ? recvbuf : NULL, count, t, op, out);
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    void *dst = recvbuf;
    if (g->me != root && count) { /* every member computes it; the root keeps it */
        dst = pt_coll_r_tmp(r, count * type_size(t));
        if (!dst)
            return pt_coll_req_start(r, PTL_NO_SPACE, out);
    }
    return pt_coll_req_start(r, pt_coll_sched_allreduce(r, sendbuf, dst, count, t, op), out);
}

/* ---- blocking versions: start, then wait --------------------------------- */

/* A member that only receives (a bcast's non-root, a reduce's root) but
 * passed no buffer gets PTL_SEGV, and still takes part through a scratch
 * buffer where memory allows: the members that wait for nobody (a bcast's
 * root, a reduce's others) have moved on, and a member that left this call
 * out would take their next call's data for this one's (mp_coll flags).
 * A call that failed says why instead (scratch_end). */
static int scratch_bcast(ptl_handle_coll_t h, ptl_size_t len, ptl_size_t root)
{
    void *tmp = malloc(len);
    int rc = PTL_OK;
    if (tmp) {
        rc = PtlCollBcast(h, tmp, len, root);
        free(tmp);
    }
    return rc == PTL_OK ? PTL_SEGV : rc;
}
static int scratch_reduce(ptl_handle_coll_t h, const void *s, ptl_size_t count,
                          ptl_coll_type_t t, ptl_coll_op_t op, ptl_size_t root)
{
    void *tmp = malloc(count * type_size(t));
    int rc = PTL_OK;
    if (tmp) {
        rc = PtlCollReduce(h, s, tmp, count, t, op, root);
        free(tmp);
    }
    return rc == PTL_OK ? PTL_SEGV : rc;
}

/* A blocking barrier, and a blocking allreduce, reduce or bcast of 1 to 16
 * bytes, in a group on one node takes the flag path (flag.c) after the same
 * checks as its nonblocking twin; everything else starts that twin and
 * waits. */
int PtlCollBarrier(ptl_handle_coll_t h)
{
    struct group *g = pt_coll_group_get(h);
    if (g && pt_coll_flag_ok(g, 0))
        return pt_coll_flag_call(g, PT_FL_BARRIER, 0, NULL, NULL, 0, PTL_COLL_INT32, PTL_COLL_SUM);
    BLOCKING(PtlCollIbarrier(h, &q));
}
int PtlCollBcast(ptl_handle_coll_t h, void *buf, ptl_size_t len, ptl_size_t root)
{
    struct group *g = pt_coll_group_get(h);
    if (g && root < g->n && !buf && len && g->me != root && bytes_ok(len, 1))
        return scratch_bcast(h, len, root);
    if (g && root < g->n && len && buf && pt_coll_flag_bcast_ok(g, len))
        return pt_coll_flag_call(g, PT_FL_BCAST, root, buf, buf, len, PTL_COLL_INT32, PTL_COLL_SUM);
    BLOCKING(PtlCollIbcast(h, buf, len, root, &q));
}
int PtlCollReduce(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t count, ptl_coll_type_t t,
                  ptl_coll_op_t op, ptl_size_t root)
{
    struct group *g = pt_coll_group_get(h);
    bool valid = g && root < g->n && count && s && check_type_op(t, op) == PTL_OK &&
                 bytes_ok(count, type_size(t));
    if (valid && !d && g->me == root)
        return scratch_reduce(h, s, count, t, op, root);
    if (valid && pt_coll_flag_ok(g, count * type_size(t)))
        return pt_coll_flag_call(g, PT_FL_REDUCE, root, s, g->me == root ? d : NULL,
                                 count * type_size(t), t, op);
    BLOCKING(PtlCollIreduce(h, s, d, count, t, op, root, &q));
}
int PtlCollAllreduce(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t count,
                     ptl_coll_type_t t, ptl_coll_op_t op)
{
    struct group *g = pt_coll_group_get(h);
    if (g && count && s && d && check_type_op(t, op) == PTL_OK && bytes_ok(count, type_size(t)) &&
        pt_coll_flag_ok(g, count * type_size(t)))
        return pt_coll_flag_call(g, PT_FL_ALLREDUCE, 0, s, d, count * type_size(t), t, op);
    BLOCKING(PtlCollIallreduce(h, s, d, count, t, op, &q));
}
