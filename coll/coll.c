/*
 * coll.c - the collective library of <p3coll.h> (issue 16 item 2), built only
 * on public Portals calls and <portals3_ext.h>: every collective is a schedule
 * of counting events (CTs) and triggered operations that the engine runs.
 *
 * Readiness. Portals 3.3 drops a put that finds no ME, so a member may send
 * data to a peer only after that peer posted its MEs for the call. Each
 * group keeps, per peer P, one persistent 0-byte ME (match_id = P) whose
 * counter from[P] counts the "ready" puts (RTR) P sent us. In every call a
 * member posts all its MEs, then sends one RTR to each peer that will send
 * to it in this call (in call order, under the group lock). A member that
 * will send to P in call s arms its puts on from[P] >= the number of calls
 * up to s in which P sends it an RTR. A count reaching c means P has sent
 * its c-th RTR (they are sent in order), so P posted the MEs of that call:
 * no ordering of delivery is needed.
 *
 * Data of a call matches bits (group id, DATA, call sequence, tag): calls in
 * flight never match each other's messages. A send that needs two
 * conditions (peer ready and a local counter) is armed on a gate CT that two
 * PtlTriggeredCTInc raise. A request completes when its done counter
 * reached its threshold and every send it made has left (SEND_END counted);
 * only then are its CTs, MDs and MEs freed (nothing armed is left behind).
 *
 * Algorithms: barrier = dissemination (ceil(log2 n) rounds of 0-byte puts);
 * bcast = binomial tree from the root (with PTL_COLL_BCAST_SEG, pipelined in
 * segments: sched_bcast_pipe); allreduce = recursive doubling with
 * triggered reduction puts over the largest power of two, the other members
 * folded in first and served last; reduce = allreduce (root keeps it);
 * gather, scatter, allgather, alltoall = direct puts at offsets. Reduction
 * payloads are split into segments of at most PTL_COLL_RED_SEG bytes (64
 * KiB: the target's engine pulls and combines those beyond the eager size); from
 * PTL_COLL_LARGE_MIN bytes allreduce is reduce-scatter + allgather (sched_rsag).
 *
 * Bit-identical allreduce: round k's accumulator starts at the operation's
 * identity (-0.0 for a float sum) and receives two reduction puts: the
 * member's own previous accumulator and its partner's. id op a op b gives
 * the same bits in either order (op is commutative and id op a == a), and
 * both partners combine the same two values, so all members agree.
 */
#include "config.h"
#include "pt_atomic.h"
#include "reduce.h"

#include <p3coll.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COLL_MAX_GROUPS  256
#define COLL_MAX_REQS    1024
#define HELLO_TIMEOUT_MS 30000

/* match bits: gid(24) | kind(2) | seq(30) | tag(8) */
#define K_RTR   1ull
#define K_HELLO 2ull
#define K_DATA  3ull
static ptl_match_bits_t mbits(uint64_t gid, uint64_t kind, uint64_t seq, unsigned tag)
{
    return (gid & 0xffffffull) << 40 | kind << 38 | (seq & 0x3fffffffull) << 8 | (tag & 0xffu);
}

#define COLL_SLOTS 20 /* > 16: with 16 calls in flight a slot is never waited for */
#define COLL_RCACHE 4 /* free request slots a group keeps (struct group)          */
#define COLL_RMAX  21 /* rounds: groups of at most 2^20 members */

/* One persistent slot of a group's fast path (see "persistent path"). */
struct fslot {
    char *mem;                          /* allreduce accumulators, smax bytes each   */
    ptl_handle_md_t md;                 /* over mem: the source of every send        */
    ptl_handle_ct_t sent;               /* SEND_END of md                            */
    ptl_size_t sent_exp;                /* sends armed on md so far                  */
    ptl_size_t buses, auses;            /* barriers / allreduces run in this slot    */
    ptl_handle_ct_t bg[COLL_RMAX + 1];  /* barrier gates [2..rb]                     */
    ptl_handle_ct_t cnt[COLL_RMAX + 1]; /* arrivals into accumulator k               */
    ptl_handle_me_t me[COLL_RMAX + 1];  /* the MEs over the accumulators             */
    ptl_handle_ct_t gate[COLL_RMAX + 1];/* two-condition gates of the sends          */
    int owner;                          /* request index + 1 using it, 0 none        */
};

struct group {
    int used;
    uint32_t gen;
    pthread_mutex_t lock;
    ptl_handle_ni_t ni;
    ptl_pt_index_t pt;
    ptl_size_t n, me;
    uint64_t gid, seq;
    ptl_process_id_t *ids;
    ptl_handle_ct_t *from; /* [n] RTRs counted from each peer          */
    ptl_handle_me_t *from_me;
    ptl_size_t *expect;  /* [n] RTRs from each peer up to this call  */
    ptl_handle_md_t nmd; /* 0-byte source of RTRs                    */
    int inflight;
    /* persistent path (set up at create, used by barrier and small allreduce) */
    struct fslot *fs;                  /* [COLL_SLOTS]                          */
    /* 2 members: small allreduce without RTR on its own slots (pair_*) */
    struct fslot *ps;                  /* [COLL_SLOTS], NULL unless n == 2      */
    ptl_size_t pseq;                   /* pair allreduces started               */
    ptl_handle_ct_t pprev;             /* done counter of the previous one ...  */
    ptl_size_t pprev_thr;              /* ... and its threshold (0: none)       */
    struct pbc *pb;                    /* small bcast on slots (slot_bcast), or NULL */
    ptl_size_t fseq, bar_calls, smax;  /* calls on it, barriers, bytes per acc  */
    int rb, ra;                        /* ceil / floor log2 n                   */
    ptl_size_t p2;                     /* 1 << ra                               */
    ptl_handle_ct_t barr[COLL_RMAX];   /* barrier round k arrivals (cumulative) */
    ptl_handle_me_t bme[COLL_RMAX];
    /* Free request slots kept by the group for its persistent-path calls
     * (req_take_g, req_put_g; under lock): such a call takes and gives back
     * one without tab_lock, two lock/unlock pairs less per call. Given back
     * to the table at teardown. */
    int rcache[COLL_RCACHE];
    int nrcache;
};

/* Small bcast on persistent slots (docs/coll.md, "Slot bcast"): PB_SLOTS
 * receive slots from whichever member is our parent in a call, and every
 * peer's start signals. */
#define PB_SLOTS 32   /* calls c and c + PB_AHEAD never share a slot          */
#define PB_AHEAD 16   /* a put of call c waits for the child's start of c - PB_AHEAD */
#define PB_SIG   4    /* a start signal every PB_SIG calls                    */
#define PB_MAX_N 64   /* more members: the per-call bcast                     */
struct pbc {
    char *mem;                         /* PB_SLOTS x stride (below)             */
    ptl_size_t stride;                 /* a slot: (1 + rb) x smax: bcast data or the
                                        * reduce's ACC, then rb reduce areas    */
    ptl_handle_md_t md[PB_SLOTS];      /* over slot s; its sends count into sent[s] */
    ptl_handle_ct_t sent[PB_SLOTS];
    ptl_size_t sent_exp[PB_SLOTS];     /* sends armed from slot s so far        */
    ptl_handle_ct_t *start;            /* [n] peer P's start signals            */
    ptl_handle_me_t *start_me;         /* [n]                                   */
    ptl_handle_ct_t cnt[PB_SLOTS];     /* puts into slot s: a bcast's parent's, a
                                        * reduce's children's and our own ones  */
    ptl_handle_me_t me[PB_SLOTS];      /* over the whole slot s, from any member */
    ptl_size_t recvs[PB_SLOTS];        /* puts into slot s expected so far: cnt[s]'s
                                        * thresholds (one use of a slot at a time,
                                        * all its puts in before the next's: B2) */
    int owner[PB_SLOTS];               /* request index + 1 using slot s, 0 none */
    ptl_size_t seq;                    /* slot bcasts started                   */
};

struct req {
    int used;
    uint32_t gen;
    struct group *g;
    uint64_t seq;
    ptl_handle_ct_t *cts;
    int ncts, capcts;
    ptl_handle_md_t *mds;
    int nmds, capmds;
    ptl_handle_me_t *mes;
    int nmes, capmes;
    void **tmp;
    int ntmp, captmp;
    ptl_handle_ct_t done, sent;
    ptl_size_t done_thr, nsent;
    ptl_size_t *cum; /* [n] readiness threshold of each peer     */
    uint8_t *rtr;    /* [n] send this peer an RTR                */
    int rc;
    /* persistent path: slot, result to copy out at completion */
    int fast, finished, fslot, pair; /* pair 1: fslot indexes g->ps; 2, 3: g->pb */
    int kids;                        /* slot reduce's root: children to combine */
    /* pair path: result = mine op partner's (member 0's value first) */
    const void *in;
    ptl_coll_type_t t;
    ptl_coll_op_t op;
    const void *res;
    void *out;
    ptl_size_t bytes;
};

/* tab_lock: taking and releasing table entries. A handle is checked without
 * it: gstate / rstate[i] = gen << 1 | used, written (ST_RELEASE, under
 * tab_lock) when the entry is taken or released, read (LD_ACQUIRE) by
 * group_get / req_get. Free requests are a stack (rfree), so taking one is
 * O(1) however many are in flight. */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct group groups[COLL_MAX_GROUPS];
static struct req reqs[COLL_MAX_REQS];
static _Atomic uint64_t gstate[COLL_MAX_GROUPS], rstate[COLL_MAX_REQS];
static int rfree[COLL_MAX_REQS], nrfree = -1; /* -1: not filled yet */

static void state_set(_Atomic uint64_t *st, uint32_t gen, int used)
{
    ST_RELEASE(st, (uint64_t)gen << 1 | (uint64_t)(used != 0)); /* pairs with state_ok */
}

static int state_ok(_Atomic uint64_t *st, uint64_t h)
{
    uint64_t v = LD_ACQUIRE(st); /* pairs with state_set */
    return (v & 1) && (uint32_t)(v >> 1) == (uint32_t)(h >> 20);
}
/* Member-list hashes created so far (with how many times): group ids. Every
 * member counts the creates of a list alike, so the k-th group over one
 * list has the same id everywhere, and kept for the life of the process
 * (a member that frees its group early must not count from 0 again while
 * another still holds it). Growable: a fixed table of 256 made the 257th
 * distinct list ever used fail with PTL_NO_SPACE for good, with no group
 * alive (an audit). 16 bytes per distinct list; under tab_lock. */
struct seen_list {
    uint64_t h, count;
};
static struct seen_list *seen;
static int nseen, seen_cap;

static uint64_t enc(uint32_t gen, int idx)
{
    return (uint64_t)gen << 20 | (uint64_t)(idx + 1);
}

static struct group *group_get(ptl_handle_coll_t h)
{
    uint64_t idx = (h & 0xfffff) - 1;
    if ((h & 0xfffff) == 0 || idx >= COLL_MAX_GROUPS)
        return NULL;
    return state_ok(&gstate[idx], h) ? &groups[idx] : NULL;
}

static struct req *req_get(ptl_handle_coll_req_t h)
{
    uint64_t idx = (h & 0xfffff) - 1;
    if ((h & 0xfffff) == 0 || idx >= COLL_MAX_REQS)
        return NULL;
    return state_ok(&rstate[idx], h) ? &reqs[idx] : NULL;
}

/* Request slot r is free from here: its handle invalid (a new generation). */
static int req_retire(struct req *r)
{
    int i = (int)(r - reqs);
    r->used = 0;
    r->gen++;
    state_set(&rstate[i], r->gen, 0);
    return i;
}

/* Gives request slot r back to the table. */
static void req_put(struct req *r)
{
    pthread_mutex_lock(&tab_lock);
    rfree[nrfree++] = req_retire(r);
    pthread_mutex_unlock(&tab_lock);
}

/* Gives request slot r back to group g's cache, or to the table when the
 * cache is full (g->lock held; tab_lock nests inside it, as in req_new). */
static void req_put_g(struct group *g, struct req *r)
{
    if (g->nrcache < COLL_RCACHE)
        g->rcache[g->nrcache++] = req_retire(r);
    else
        req_put(r);
}

/* Gives group g's cached request slots back to the table (teardown). */
static void req_cache_drop(struct group *g)
{
    pthread_mutex_lock(&tab_lock);
    while (g->nrcache > 0)
        rfree[nrfree++] = g->rcache[--g->nrcache];
    pthread_mutex_unlock(&tab_lock);
}

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

static int r_ct(struct req *r, ptl_handle_ct_t *ct)
{
    if (grow((void **)&r->cts, &r->capcts, r->ncts, sizeof *r->cts))
        return PTL_NO_SPACE;
    int rc = PtlCTAlloc(r->g->ni, ct);
    if (rc == PTL_OK)
        r->cts[r->ncts++] = *ct;
    return rc;
}

static void *r_tmp(struct req *r, size_t len)
{
    if (grow((void **)&r->tmp, &r->captmp, r->ntmp, sizeof *r->tmp))
        return NULL;
    void *p = malloc(len ? len : 1);
    if (p)
        r->tmp[r->ntmp++] = p;
    return p;
}

/* A free-floating MD over buf whose sends count into r->sent. */
static int r_src(struct req *r, const void *buf, ptl_size_t len, ptl_handle_md_t *md)
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

/* Post an ME for this call (tag) over buf, counting arrivals into ct; from is
 * a member index or -1 (any member). */
static int r_recv(struct req *r, void *buf, ptl_size_t len, long from, unsigned tag,
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
static ptl_size_t r_ready_thr(struct req *r, ptl_size_t dst)
{
    if (!r->cum[dst])
        r->cum[dst] = ++r->g->expect[dst];
    return r->cum[dst];
}

/* The trigger of a send to member dst that also waits for cond >= cthr
 * (cond may be PTL_CT_NONE): *t, *thr. */
static int r_gate(struct req *r, ptl_size_t dst, ptl_handle_ct_t cond, ptl_size_t cthr,
                  ptl_handle_ct_t *t, ptl_size_t *thr)
{
    struct group *g = r->g;
    int need_ready = dst != g->me;
    if (need_ready)
        r_ready_thr(r, dst);
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
    int rc = r_ct(r, &gate);
    if (rc != PTL_OK)
        return rc;
    ptl_ct_event_t one = {1, 0};
    rc = PtlTriggeredCTInc(gate, one, g->from[dst], r->cum[dst]);
    if (rc == PTL_OK)
        rc = PtlTriggeredCTInc(gate, one, cond, cthr);
    *t = gate;
    *thr = 2;
    return rc;
}

static int r_put(struct req *r, ptl_handle_md_t md, ptl_size_t off, ptl_size_t len, ptl_size_t dst,
                 unsigned tag, ptl_size_t roff, ptl_handle_ct_t t, ptl_size_t thr)
{
    struct group *g = r->g;
    int rc = PtlTriggeredPut(md, off, len, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                             mbits(g->gid, K_DATA, r->seq, tag), roff, 0, t, thr);
    if (rc == PTL_OK)
        r->nsent++;
    return rc;
}

static void req_release(struct req *r)
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
    req_put(r);
}

/* Free slot i in use from here: its generation kept, the rest zeroed. */
static struct req *req_reset(int i)
{
    struct req *r = &reqs[i];
    uint32_t gen = r->gen;
    memset(r, 0, sizeof *r);
    r->gen = gen;
    r->used = 1;
    state_set(&rstate[i], gen, 1);
    return r;
}

/* Takes a free request slot (its generation kept, the rest zeroed), or NULL. */
static struct req *req_take(void)
{
    pthread_mutex_lock(&tab_lock);
    if (nrfree < 0)
        for (nrfree = 0; nrfree < COLL_MAX_REQS; nrfree++)
            rfree[nrfree] = COLL_MAX_REQS - 1 - nrfree; /* index 0 on top */
    struct req *r = nrfree > 0 ? req_reset(rfree[--nrfree]) : NULL;
    pthread_mutex_unlock(&tab_lock);
    return r;
}

/* A free request slot for a call on group g (g->lock held): from the
 * group's cache when it has one, else from the table. */
static struct req *req_take_g(struct group *g)
{
    return g->nrcache > 0 ? req_reset(g->rcache[--g->nrcache]) : req_take();
}

/* Takes a request slot and starts call g->seq (the group lock is held). */
static int req_new(struct group *g, struct req **out)
{
    struct req *r = req_take();
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
        req_put(r);
        return rc;
    }
    g->inflight++;
    r->capcts = 8;
    r->cts[r->ncts++] = r->sent;
    r->seq = g->seq++;
    *out = r;
    return PTL_OK;
}

/* After the schedule is armed: the RTRs of this call, then the handle. On
 * an error while arming, the call cannot be taken back from the peers: the
 * request is completed with that error once its own part is idle. */
static int req_start(struct req *r, int rc, ptl_handle_coll_req_t *h)
{
    struct group *g = r->g;
    for (ptl_size_t i = 0; rc == PTL_OK && i < g->n; i++)
        if (r->rtr[i])
            rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0, mbits(g->gid, K_RTR, 0, 0), 0,
                        0);
    if (rc != PTL_OK) {
        pthread_mutex_unlock(&g->lock);
        req_release(r);
        return rc;
    }
    pthread_mutex_unlock(&g->lock);
    *h = enc(r->gen, (int)(r - reqs));
    return PTL_OK;
}

static int req_finish(struct req *r)
{
    int rc = r->rc;
    req_release(r);
    return rc;
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
    g->inflight--;
    req_put_g(g, r); /* a persistent-path request holds no resources of its own */
    pthread_mutex_unlock(&g->lock);
    return rc;
}

int PtlCollTest(ptl_handle_coll_req_t h, int *done)
{
    struct req *r = req_get(h);
    if (!r)
        return PTL_HANDLE_INVALID;
    if (!done)
        return PTL_SEGV;
    if (r->fast) {
        ptl_ct_event_t a = {0, 0}, b = {0, 0};
        int rc = PTL_OK;
        if (r->done != PTL_CT_NONE)
            rc = PtlCTGet(r->done, &a);
        if (rc == PTL_OK && r->nsent)
            rc = PtlCTGet(r->sent, &b);
        *done = rc != PTL_OK || ((r->done == PTL_CT_NONE || a.success + a.failure >= r->done_thr) &&
                                 b.success + b.failure >= r->nsent);
        if (!*done)
            return PTL_OK;
        if (rc == PTL_OK && (a.failure || b.failure))
            rc = PTL_FAIL;
        return fast_done(r, rc);
    }
    ptl_ct_event_t a = {0, 0}, b;
    int rc = PtlCTGet(r->sent, &b);
    if (rc == PTL_OK && r->done != PTL_CT_NONE)
        rc = PtlCTGet(r->done, &a);
    if (rc != PTL_OK)
        return rc;
    if (a.failure || b.failure)
        r->rc = PTL_FAIL;
    *done = b.success + b.failure >= r->nsent &&
            (r->done == PTL_CT_NONE || a.success + a.failure >= r->done_thr);
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
        rc = PtlCTWait(r->done, r->done_thr, &ev);
        if (rc == PTL_OK && ev.failure)
            r->rc = PTL_FAIL;
    }
    if (rc == PTL_OK) {
        rc = PtlCTWait(r->sent, r->nsent, &ev);
        if (rc == PTL_OK && ev.failure)
            r->rc = PTL_FAIL;
    }
    if (rc != PTL_OK)
        r->rc = rc;
    return req_finish(r);
}

/* ---- groups ------------------------------------------------------------- */

/* A call whose buffers would span more than an address space can (a count
 * or length past it, or a product that wraps) is refused before anything
 * moves (an audit: an allreduce of 2^61 + 1 int64s returned PTL_OK having
 * reduced one element, an allgather of 2^63 bytes each crashed both ranks,
 * a bcast of 2^62 bytes corrupted a non-root's stack). */
#define COLL_MAX_BYTES (1ull << 47)
static bool bytes_ok(ptl_size_t a, ptl_size_t b)
{
    return !a || !b || a <= COLL_MAX_BYTES / b;
}

static int same_id(ptl_process_id_t a, ptl_process_id_t b)
{
    return a.nid == b.nid && a.pid == b.pid;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- persistent path: set up once per group ------------------------------ */

/*
 * Barrier and small allreduce (at most g->smax bytes) need no per-call MEs,
 * MDs, counters or buffers: PtlCollGroupCreate posts, before its hello,
 *  - per barrier round k an ME (from the round's source) whose counter
 *    barr[k] counts that source's round-k puts: "barr[k] >= c" says the
 *    source reached round k of its c-th barrier (it sends them in order);
 *  - COLL_SLOTS slots, each with an MD over its accumulator memory (its
 *    sends count into sent), the MEs over the accumulators (counters cnt[k])
 *    and the gate counters of sends that wait for two conditions.
 * A call takes slot fseq % COLL_SLOTS and arms a few triggered operations
 * whose thresholds are the slot's cumulative counts (use u of a slot waits
 * for 2u where two increments come per use). A slot is used again only after
 * its previous call completed here (the taking call waits for it: it never
 * has to with at most COLL_SLOTS - 1 calls in flight), so that no counter of
 * a slot can be advanced by the next use before the current one is done.
 * A gate fed by two triggered CTIncs is exact under that rule: at most one
 * use of each feeding condition is armed beyond the counted ones.
 */
#define K_FAST    0ull
#define FSEQ_BAR  0x3fffffffull
#define FT_FOLD   200u
#define FT_RES    201u

static int attach_ct(struct group *g, ptl_process_id_t from, ptl_match_bits_t bits, void *buf,
                     ptl_size_t len, ptl_handle_ct_t *ct, ptl_handle_me_t *me)
{
    ptl_handle_md_t md;
    int rc = PtlCTAlloc(g->ni, ct);
    if (rc == PTL_OK)
        rc = PtlMEAttach(g->ni, g->pt, from, bits, 0, PTL_RETAIN, PTL_INS_AFTER, me);
    /* remotely managed offsets: every use of a slot lands at offset 0 */
    ptl_md_t d = {buf,  len,        PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
                  NULL, PTL_EQ_NONE};
    if (rc == PTL_OK)
        rc = PtlMDAttach(*me, d, PTL_RETAIN, &md);
    if (rc == PTL_OK)
        rc = PtlMDBindCT(md, *ct, PTL_CT_COMM);
    return rc;
}

/* Unlink or free what a handle names, if anything (setup leaves the rest invalid). */
static void drop_me(ptl_handle_me_t h)
{
    if (h != PTL_INVALID_HANDLE)
        PtlMEUnlink(h);
}
static void drop_md(ptl_handle_md_t h)
{
    if (h != PTL_INVALID_HANDLE)
        PtlMDUnlink(h);
}
static void drop_ct(ptl_handle_ct_t h)
{
    if (h != PTL_CT_NONE)
        PtlCTFree(h);
}

static void slots_free(struct fslot *fs)
{
    for (int s = 0; fs && s < COLL_SLOTS; s++) {
        struct fslot *f = &fs[s];
        for (int k = 0; k <= COLL_RMAX; k++) {
            drop_me(f->me[k]);
            drop_ct(f->cnt[k]);
            drop_ct(f->gate[k]);
            drop_ct(f->bg[k]);
        }
        drop_md(f->md);
        drop_ct(f->sent);
        free(f->mem);
    }
    free(fs);
}

static void pb_free(struct pbc *b, ptl_size_t n);

static void fast_teardown(struct group *g)
{
    if (!g->fs)
        return; /* fast_setup did not get far enough to post anything */
    for (int k = 0; k < COLL_RMAX; k++) {
        drop_me(g->bme[k]);
        drop_ct(g->barr[k]);
    }
    slots_free(g->fs);
    g->fs = NULL;
    slots_free(g->ps);
    g->ps = NULL;
    pb_free(g->pb, g->n);
    g->pb = NULL;
}

/* COLL_SLOTS slots with nothing posted yet (all handles invalid), or NULL. */
static struct fslot *slots_new(void)
{
    struct fslot *fs = calloc(COLL_SLOTS, sizeof *fs);
    for (int s = 0; fs && s < COLL_SLOTS; s++) {
        struct fslot *f = &fs[s];
        f->md = PTL_INVALID_HANDLE;
        f->sent = PTL_CT_NONE;
        for (int k = 0; k <= COLL_RMAX; k++) {
            f->bg[k] = f->cnt[k] = f->gate[k] = PTL_CT_NONE;
            f->me[k] = PTL_INVALID_HANDLE;
        }
    }
    return fs;
}

/* The pair slots of a 2-member group (see pair_allreduce): per slot, memory
 * SRC | IN of smax bytes each, one MD over it (sends count into sent) and
 * one ME over IN from the partner, counting its puts into cnt[0]. */
#define PSEQ_BASE 0x100ull
#define FT_PAIR   202u
static int pair_setup(struct group *g)
{
    ptl_size_t sm = g->smax;
    g->ps = slots_new();
    if (!g->ps)
        return PTL_NO_SPACE;
    int rc = PTL_OK;
    for (int s = 0; rc == PTL_OK && s < COLL_SLOTS; s++) {
        struct fslot *f = &g->ps[s];
        f->mem = calloc(2 * sm, 1);
        if (!f->mem)
            return PTL_NO_SPACE;
        ptl_md_t d = {f->mem, 2 * sm, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
        rc = PtlCTAlloc(g->ni, &f->sent);
        if (rc == PTL_OK)
            rc = PtlMDBind(g->ni, d, PTL_RETAIN, &f->md);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(f->md, f->sent, PTL_CT_SEND);
        if (rc == PTL_OK)
            rc = attach_ct(g, g->ids[g->me ^ 1],
                           mbits(g->gid, K_FAST, PSEQ_BASE + (uint64_t)s, FT_PAIR), f->mem + sm,
                           sm, &f->cnt[0], &f->me[0]);
    }
    return rc;
}

/* The slot bcast's slots (see slot_bcast): per slot an MD (its sends count
 * into sent[s]) and an ME from any member (data puts counted into cnt[s]);
 * per peer a 0-byte ME counting its start signals into start[P]. */
#define PBSEQ_BASE 0x200ull
#define PBSEQ_START 0x300ull
#define FT_PBC    203u
static void pb_free(struct pbc *b, ptl_size_t n)
{
    if (!b)
        return;
    for (int s = 0; s < PB_SLOTS; s++) {
        drop_me(b->me[s]);
        drop_ct(b->cnt[s]);
        drop_md(b->md[s]);
        drop_ct(b->sent[s]);
    }
    for (ptl_size_t i = 0; b->start && i < n; i++) {
        drop_me(b->start_me[i]);
        drop_ct(b->start[i]);
    }
    free(b->start);
    free(b->start_me);
    free(b->mem);
    free(b);
}

static int pb_setup(struct group *g)
{
    ptl_size_t sm = g->smax, n = g->n;
    struct pbc *b = calloc(1, sizeof *b);
    if (!b)
        return PTL_NO_SPACE;
    g->pb = b;
    for (int s = 0; s < PB_SLOTS; s++) {
        b->cnt[s] = b->sent[s] = PTL_CT_NONE;
        b->me[s] = b->md[s] = PTL_INVALID_HANDLE;
    }
    b->stride = (ptl_size_t)(1 + g->rb) * sm;
    b->start = malloc(n * sizeof *b->start);
    b->start_me = malloc(n * sizeof *b->start_me);
    b->mem = calloc(PB_SLOTS, b->stride);
    if (!b->start || !b->start_me || !b->mem) {
        free(b->start); /* pb_free walks start only when both are there */
        b->start = NULL;
        return PTL_NO_SPACE;
    }
    for (ptl_size_t i = 0; i < n; i++) {
        b->start[i] = PTL_CT_NONE;
        b->start_me[i] = PTL_INVALID_HANDLE;
    }
    int rc = PTL_OK;
    for (ptl_size_t i = 0; rc == PTL_OK && i < n; i++)
        if (i != g->me)
            rc = attach_ct(g, g->ids[i], mbits(g->gid, K_FAST, PBSEQ_START, FT_PBC), NULL, 0,
                           &b->start[i], &b->start_me[i]);
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    for (int s = 0; rc == PTL_OK && s < PB_SLOTS; s++) {
        char *slot = b->mem + (ptl_size_t)s * b->stride;
        ptl_md_t d = {slot, b->stride, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
        rc = PtlCTAlloc(g->ni, &b->sent[s]);
        if (rc == PTL_OK)
            rc = PtlMDBind(g->ni, d, PTL_RETAIN, &b->md[s]);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(b->md[s], b->sent[s], PTL_CT_SEND);
        if (rc == PTL_OK)
            rc = attach_ct(g, any, mbits(g->gid, K_FAST, PBSEQ_BASE + (uint64_t)s, FT_PBC), slot,
                           b->stride, &b->cnt[s], &b->me[s]);
    }
    return rc;
}

static int fast_setup(struct group *g)
{
    ptl_size_t n = g->n, me = g->me;
    for (int k = 0; k < COLL_RMAX; k++) {
        g->barr[k] = PTL_CT_NONE;
        g->bme[k] = PTL_INVALID_HANDLE;
    }
    g->fs = slots_new();
    if (!g->fs)
        return PTL_NO_SPACE;
    g->rb = 0;
    while (((ptl_size_t)1 << g->rb) < n)
        g->rb++;
    g->ra = 0;
    while (((ptl_size_t)2 << g->ra) <= n)
        g->ra++;
    g->p2 = (ptl_size_t)1 << g->ra;
    ptl_size_t smax = (ptl_size_t)pt_config()->coll_small_max;
    if (smax > (ptl_size_t)pt_config()->eager_max)
        smax = (ptl_size_t)pt_config()->eager_max;
    g->smax = smax / 8 * 8;
    if (n == 1)
        return PTL_OK;
    int rc = PTL_OK;
    for (int k = 0; rc == PTL_OK && k < g->rb; k++) {
        ptl_size_t src = (me + n - ((ptl_size_t)1 << k) % n) % n;
        rc = attach_ct(g, g->ids[src], mbits(g->gid, K_FAST, FSEQ_BAR, (unsigned)k), NULL, 0,
                       &g->barr[k], &g->bme[k]);
    }
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    ptl_size_t sm = g->smax;
    for (int s = 0; rc == PTL_OK && s < COLL_SLOTS; s++) {
        struct fslot *f = &g->fs[s];
        ptl_size_t memlen = (ptl_size_t)(g->ra + 1) * sm;
        f->mem = calloc(memlen ? memlen : 1, 1);
        if (!f->mem)
            return PTL_NO_SPACE;
        ptl_md_t d = {f->mem, memlen, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
        rc = PtlCTAlloc(g->ni, &f->sent);
        if (rc == PTL_OK)
            rc = PtlMDBind(g->ni, d, PTL_RETAIN, &f->md);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(f->md, f->sent, PTL_CT_SEND);
        for (int k = 2; rc == PTL_OK && k <= g->rb; k++)
            rc = PtlCTAlloc(g->ni, &f->bg[k]);
        if (rc != PTL_OK || sm == 0 || n == 2)
            continue; /* 2 members: allreduce on the pair slots */
        if (me >= g->p2) { /* folded: the result comes from me - p2 */
            rc = attach_ct(g, g->ids[me - g->p2], mbits(g->gid, K_FAST, (uint64_t)s, FT_RES),
                           f->mem + sm, sm, &f->cnt[0], &f->me[0]);
            continue;
        }
        int extra = me + g->p2 < n;
        if (extra)
            rc = attach_ct(g, g->ids[me + g->p2], mbits(g->gid, K_FAST, (uint64_t)s, FT_FOLD),
                           f->mem, sm, &f->cnt[0], &f->me[0]);
        for (int k = 1; rc == PTL_OK && k <= g->ra; k++)
            rc = attach_ct(g, any, mbits(g->gid, K_FAST, (uint64_t)s, (unsigned)k),
                           f->mem + (ptl_size_t)k * sm, sm, &f->cnt[k], &f->me[k]);
        for (int k = 0; rc == PTL_OK && k <= g->ra; k++)
            if ((k > 0 && k < g->ra) || extra)
                rc = PtlCTAlloc(g->ni, &f->gate[k]);
    }
    if (rc == PTL_OK && n == 2 && sm)
        rc = pair_setup(g);
    if (rc == PTL_OK && sm && n <= PB_MAX_N)
        rc = pb_setup(g);
    return rc;
}

static void group_teardown(struct group *g)
{
    fast_teardown(g);
    for (ptl_size_t i = 0; g->from_me && i < g->n; i++) {
        if (i == g->me)
            continue;
        drop_me(g->from_me[i]);
        drop_ct(g->from[i]);
    }
    drop_md(g->nmd);
    free(g->ids);
    free(g->from);
    free(g->from_me);
    free(g->expect);
    req_cache_drop(g);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_lock(&tab_lock);
    g->used = 0;
    g->gen++;
    state_set(&gstate[g - groups], g->gen, 0);
    pthread_mutex_unlock(&tab_lock);
}

/* Every member tells every other that its MEs are posted. Per peer P two
 * MEs (match_id P) count into two CTs: P's "hello" and P's "heard you". A
 * hello may reach P before P posted (then it is dropped): it is sent again,
 * with a growing interval, until P's hello or "heard you" arrives; then one
 * "heard you" goes to P (P has posted). We are done with P when P's "heard
 * you" came.
 * P sends no hello after its "heard you", so nothing of it is left in
 * flight when we unlink. Counters cannot overflow as an EQ would.
 *
 * A member that cannot hold the group (refuse: its table or its NI ran out
 * of room) runs the same hello, and sends every peer a "refused" just before
 * its "heard you": every member ends its hello as usual (nobody leaves early,
 * so nobody waits for a member that left), having counted the refusal (same
 * pair, so it arrives before the "heard you" that completes that peer), and
 * every member's create fails with PTL_NO_SPACE at once. Before, the member
 * that ran out said PTL_NO_SPACE and the others PTL_FAIL after 30 s. */
static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

#define HELLO_REFUSED 2u /* the tag of a refusal */

static int hello(struct group *g, bool refuse)
{
    ptl_size_t n = g->n;
    ptl_handle_ct_t *ct = malloc(2 * n * sizeof *ct);
    ptl_handle_me_t *me = malloc(2 * n * sizeof *me);
    uint8_t *st = calloc(n, 1); /* 1 heard, 2 heard and answered, 3 done */
    ptl_handle_ct_t rct = PTL_CT_NONE; /* refusals from any member */
    ptl_handle_me_t rme = PTL_INVALID_HANDLE;
    int rc = ct && me && st ? PTL_OK : PTL_NO_SPACE;
    for (ptl_size_t i = 0; ct && me && i < 2 * n; i++) {
        ct[i] = PTL_CT_NONE;
        me[i] = PTL_INVALID_HANDLE;
    }
    if (rc == PTL_OK && !refuse) {
        const ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
        ptl_md_t d = {NULL, 0, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT, NULL, PTL_EQ_NONE};
        ptl_handle_md_t md;
        rc = PtlCTAlloc(g->ni, &rct);
        if (rc == PTL_OK)
            rc = PtlMEAttach(g->ni, g->pt, any, mbits(g->gid, K_HELLO, 0, HELLO_REFUSED), 0,
                             PTL_RETAIN, PTL_INS_AFTER, &rme);
        if (rc == PTL_OK)
            rc = PtlMDAttach(rme, d, PTL_RETAIN, &md);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(md, rct, PTL_CT_COMM);
    }
    for (ptl_size_t i = 0; rc == PTL_OK && i < 2 * n; i++) {
        if (i % n == g->me)
            continue;
        ptl_md_t d = {NULL, 0, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT, NULL, PTL_EQ_NONE};
        ptl_handle_md_t md;
        rc = PtlCTAlloc(g->ni, &ct[i]);
        if (rc == PTL_OK)
            rc = PtlMEAttach(g->ni, g->pt, g->ids[i % n],
                             mbits(g->gid, K_HELLO, 0, (unsigned)(i / n)), 0, PTL_RETAIN,
                             PTL_INS_AFTER, &me[i]);
        if (rc == PTL_OK)
            rc = PtlMDAttach(me[i], d, PTL_RETAIN, &md);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(md, ct[i], PTL_CT_COMM);
    }
    ptl_size_t left = n - 1;
    uint64_t start = now_ms(), last = 0, gap = 1;
    while (rc == PTL_OK && left) {
        uint64_t t = now_ms();
        if (t - start > HELLO_TIMEOUT_MS) {
            rc = PTL_FAIL;
            break;
        }
        int resend = t - last >= gap;
        if (resend) {
            last = t;
            /* Up to 512 ms apart: each resend to a peer still setting up (its
             * persistent slots: 100+ commands) is dropped there, and a peer
             * that posts late reaches us with its own first hello at once, so
             * a long gap delays nobody (8 ranks on 2 cores, offload: with a
             * 32 ms cap, up to 1,557 drops per rank in mp_coll). */
            gap = gap < 512 ? gap * 2 : 512;
        }
        for (ptl_size_t i = 0; rc == PTL_OK && i < n; i++) {
            if (i == g->me || st[i] == 3)
                continue;
            ptl_ct_event_t h, a;
            rc = PtlCTGet(ct[i], &h);
            if (rc == PTL_OK)
                rc = PtlCTGet(ct[n + i], &a);
            if (rc != PTL_OK)
                break;
            if (!st[i] && (h.success || a.success)) /* either says P posted */
                st[i] = 1;
            if (st[i] == 1) { /* P posted: this one arrives */
                if (refuse) /* first: P has counted it when our "heard you" ends its wait */
                    rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0,
                                mbits(g->gid, K_HELLO, 0, HELLO_REFUSED), 0, 0);
                if (rc == PTL_OK)
                    rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0,
                                mbits(g->gid, K_HELLO, 0, 1), 0, 0);
                st[i] = 2;
            } else if (!st[i] && resend) {
                rc = PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0,
                            mbits(g->gid, K_HELLO, 0, 0), 0, 0);
            }
            if (st[i] == 2 && a.success) {
                st[i] = 3;
                left--;
            }
        }
        if (left)
            sleep_us(100);
    }
    if (rc == PTL_OK && rct != PTL_CT_NONE) {
        ptl_ct_event_t r;
        rc = PtlCTGet(rct, &r);
        if (rc == PTL_OK && r.success)
            rc = PTL_NO_SPACE; /* a member refused: nobody keeps the group */
    }
    drop_me(rme);
    drop_ct(rct);
    for (ptl_size_t i = 0; me && ct && i < 2 * n; i++) {
        if (me[i] != PTL_INVALID_HANDLE)
            PtlMEUnlink(me[i]);
        if (ct[i] != PTL_CT_NONE)
            PtlCTFree(ct[i]);
    }
    free(ct);
    free(me);
    free(st);
    return rc;
}

/* A member that cannot hold the group still takes its id (every member
 * counts the creates of a list alike: a member that skipped one would name
 * every later group over that list differently from its peers, and those
 * creates would fail after 30 s) and answers the hello as refused. */
static int refuse(ptl_handle_ni_t ni, const ptl_process_id_t *members, ptl_size_t n,
                  ptl_size_t me, uint64_t gid)
{
    if (n < 2)
        return PTL_NO_SPACE;
    struct group t;
    memset(&t, 0, sizeof t);
    t.ni = ni;
    t.pt = (ptl_pt_index_t)pt_config()->coll_pt;
    t.n = n;
    t.me = me;
    t.gid = gid;
    t.ids = (ptl_process_id_t *)members; /* hello reads them only */
    ptl_md_t z = {NULL, 0, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    if (PtlMDBind(ni, z, PTL_RETAIN, &t.nmd) != PTL_OK)
        return PTL_NO_SPACE; /* nothing to answer with: the peers time out (PTL_FAIL) */
    (void)hello(&t, true);
    /* its last puts may still be queued (PTL_MD_IN_USE): bounded, then left to PtlNIFini */
    for (int k = 0; k < 2000 && PtlMDUnlink(t.nmd) == PTL_MD_IN_USE; k++)
        sleep_us(100);
    return PTL_NO_SPACE;
}

static int id_cmp(const void *a, const void *b)
{
    const ptl_process_id_t *x = a, *y = b;
    if (x->nid != y->nid)
        return x->nid < y->nid ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* A process listed twice would be two members with one set of entries: its
 * peers' schedules and its own disagree (an audit: the listed rank got
 * PTL_OK, the other PTL_FAIL after 30 s, then the first one's next
 * allreduce never returned; {self, self} "reduced" to twice the value).
 * Every member sees the same array, so every member refuses it at once. */
static bool has_duplicate(const ptl_process_id_t *members, ptl_size_t n)
{
    if (n < 2)
        return false;
    ptl_process_id_t *c = malloc(n * sizeof *c);
    if (!c) { /* O(n^2) without memory: creates are rare and n small then */
        for (ptl_size_t i = 0; i < n; i++)
            for (ptl_size_t j = i + 1; j < n; j++)
                if (same_id(members[i], members[j]))
                    return true;
        return false;
    }
    memcpy(c, members, n * sizeof *c);
    qsort(c, n, sizeof *c, id_cmp);
    bool dup = false;
    for (ptl_size_t i = 1; i < n && !dup; i++)
        dup = same_id(c[i - 1], c[i]);
    free(c);
    return dup;
}

int PtlCollGroupCreate(ptl_handle_ni_t ni, const ptl_process_id_t *members, ptl_size_t n,
                       ptl_handle_coll_t *out)
{
    if (!members || !out)
        return PTL_SEGV;
    if (n == 0 || n > (1u << 20))
        return PTL_ARG_INVALID;
    ptl_process_id_t self;
    int rc = PtlGetId(ni, &self);
    if (rc != PTL_OK)
        return rc;
    ptl_size_t me = n;
    uint64_t h = 1469598103934665603ull;
    for (ptl_size_t i = 0; i < n; i++) {
        if (same_id(members[i], self))
            me = i;
        h = (h ^ members[i].nid) * 1099511628211ull;
        h = (h ^ members[i].pid) * 1099511628211ull;
    }
    if (me == n)
        return PTL_PROCESS_INVALID;
    if (has_duplicate(members, n))
        return PTL_ARG_INVALID;

    pthread_mutex_lock(&tab_lock);
    int idx = -1, si = -1;
    for (int i = 0; i < COLL_MAX_GROUPS; i++)
        if (!groups[i].used) {
            idx = i;
            break;
        }
    for (int i = 0; i < nseen; i++)
        if (seen[i].h == h)
            si = i;
    if (si < 0) {
        if (nseen == seen_cap) {
            int cap = seen_cap ? 2 * seen_cap : 64;
            struct seen_list *ns = cap > seen_cap ? realloc(seen, (size_t)cap * sizeof *ns) : NULL;
            if (ns) {
                seen = ns;
                seen_cap = cap;
            }
        }
        if (nseen < seen_cap) {
            si = nseen++;
            seen[si].h = h;
            seen[si].count = 0;
        }
    }
    if (si < 0) { /* no id (the list table cannot grow): the peers time out */
        pthread_mutex_unlock(&tab_lock);
        return PTL_NO_SPACE;
    }
    uint64_t gid = (h ^ h >> 24 ^ h >> 48) + seen[si].count++ * 0x9e37ull;
    if (idx < 0) {
        pthread_mutex_unlock(&tab_lock);
        return refuse(ni, members, n, me, gid);
    }
    struct group *g = &groups[idx];
    uint32_t gen = g->gen;
    memset(g, 0, sizeof *g);
    g->gen = gen;
    g->used = 1;
    state_set(&gstate[idx], gen, 1);
    g->gid = gid;
    pthread_mutex_unlock(&tab_lock);

    pthread_mutex_init(&g->lock, NULL);
    g->ni = ni;
    g->pt = (ptl_pt_index_t)pt_config()->coll_pt;
    g->n = n;
    g->me = me;
    g->nmd = PTL_INVALID_HANDLE;
    g->ids = malloc(n * sizeof *g->ids);
    g->from = malloc(n * sizeof *g->from);
    g->from_me = malloc(n * sizeof *g->from_me);
    g->expect = calloc(n, sizeof *g->expect);
    if (!g->ids || !g->from || !g->from_me || !g->expect) {
        group_teardown(g);
        return refuse(ni, members, n, me, gid);
    }
    memcpy(g->ids, members, n * sizeof *g->ids);
    for (ptl_size_t i = 0; i < n; i++) {
        g->from[i] = PTL_CT_NONE;
        g->from_me[i] = PTL_INVALID_HANDLE;
    }
    ptl_md_t z = {NULL, 0, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    rc = PtlMDBind(ni, z, PTL_RETAIN, &g->nmd);
    for (ptl_size_t i = 0; rc == PTL_OK && i < n; i++) {
        if (i == me)
            continue;
        ptl_handle_md_t md;
        rc = PtlCTAlloc(ni, &g->from[i]);
        if (rc == PTL_OK)
            rc = PtlMEAttach(ni, g->pt, members[i], mbits(g->gid, K_RTR, 0, 0), 0, PTL_RETAIN,
                             PTL_INS_AFTER, &g->from_me[i]);
        ptl_md_t d = {NULL, 0, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT, NULL, PTL_EQ_NONE};
        if (rc == PTL_OK)
            rc = PtlMDAttach(g->from_me[i], d, PTL_RETAIN, &md);
        if (rc == PTL_OK)
            rc = PtlMDBindCT(md, g->from[i], PTL_CT_COMM);
    }
    /* after the RTR MEs: an RTR matches near the head of the list */
    if (rc == PTL_OK)
        rc = fast_setup(g);
    if (rc != PTL_OK) { /* out of room before the hello: free it all, then refuse */
        group_teardown(g);
        (void)refuse(ni, members, n, me, gid);
        return rc;
    }
    if (n > 1)
        rc = hello(g, false);
    if (rc != PTL_OK) {
        group_teardown(g);
        return rc;
    }
    *out = enc(g->gen, idx);
    return PTL_OK;
}

static void pb_drain(struct group *g);

int PtlCollGroupFree(ptl_handle_coll_t h)
{
    struct group *g = group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    pthread_mutex_lock(&g->lock);
    int busy = g->inflight;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return PTL_ME_IN_USE; /* requests of the group are not completed */
    pb_drain(g);
    group_teardown(g);
    return PTL_OK;
}

/* Locks group h and takes a request with take (req_new, req_new_fast):
 * PTL_OK with the group locked, or why not (nothing held). */
static int begin_with(ptl_handle_coll_t h, ptl_handle_coll_req_t *out, struct req **r,
                      int (*take)(struct group *, struct req **))
{
    if (!out)
        return PTL_SEGV;
    struct group *g = group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    pthread_mutex_lock(&g->lock);
    int rc = take(g, r);
    if (rc != PTL_OK)
        pthread_mutex_unlock(&g->lock);
    return rc;
}

/* Locks the group and starts a request (per-call path). */
static int begin(ptl_handle_coll_t h, ptl_handle_coll_req_t *out, struct req **r)
{
    return begin_with(h, out, r, req_new);
}

/* ---- barrier: dissemination on the persistent path (fast_barrier) ------- */

static int fast_call(ptl_handle_coll_t h, int kind, const void *sendbuf, void *recvbuf,
                     ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op,
                     ptl_handle_coll_req_t *out);

int PtlCollIbarrier(ptl_handle_coll_t h, ptl_handle_coll_req_t *out)
{
    return fast_call(h, 0, NULL, NULL, 0, PTL_COLL_INT32, PTL_COLL_SUM, out);
}

/* ---- bcast: binomial tree ------------------------------------------------ */

static int sched_bcast(struct req *r, void *buf, ptl_size_t len, ptl_size_t root)
{
    struct group *g = r->g;
    ptl_size_t n = g->n, v = (g->me + n - root) % n;
    if (n == 1)
        return PTL_OK;
    ptl_handle_ct_t got = PTL_CT_NONE;
    int rc = PTL_OK;
    if (v) {
        ptl_size_t parent = ((v & (v - 1)) + root) % n;
        rc = r_ct(r, &got);
        if (rc == PTL_OK)
            rc = r_recv(r, buf, len, (long)parent, 0, got);
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
            rc = r_src(r, buf, len, &md);
        if (rc == PTL_OK)
            rc = r_gate(r, child, got, 1, &t, &tt);
        if (rc == PTL_OK)
            rc = r_put(r, md, 0, len, child, 0, 0, t, tt);
    }
    return rc;
}

/* Large bcast, pipelined (docs/coll.md, "Pipelined bcast"): the binomial
 * tree of sched_bcast, the data in nseg segments. Every member below the
 * root posts an ME per segment (tag j) counting into got[j]; a member with
 * children forwards segment j to each of them by a triggered put as soon as
 * got[j] says it arrived and every child said it is ready, so segment j
 * goes down the tree while j + 1 comes in (the host copies nothing). One
 * counter `ready` gathers the children's RTRs; it raises every got[j] once,
 * so got[j] == 2 means both (1 for a leaf). `all` counts the segments
 * complete: the request's done counter. Per call: nseg + 2 counters, nseg
 * MEs, nseg x (children + 2) triggered operations. */
#define COLL_PIPE_MAXSEG 64 /* segment tags 0..63 (8-bit tag field) */

static ptl_size_t bcast_seg(ptl_size_t n, ptl_size_t len)
{
    ptl_size_t seg = (ptl_size_t)pt_config()->coll_bcast_seg;
    if (n < 3 || !seg || len <= seg)
        return 0; /* the whole-buffer tree */
    if ((len + seg - 1) / seg > COLL_PIPE_MAXSEG)
        seg = (len + COLL_PIPE_MAXSEG - 1) / COLL_PIPE_MAXSEG;
    return seg;
}

static int sched_bcast_pipe(struct req *r, void *buf, ptl_size_t len, ptl_size_t root,
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
    int rc = nk ? r_src(r, buf, len, &md) : PTL_OK;
    if (!v) { /* the root: each segment to each child once it is ready */
        for (ptl_size_t j = 0; rc == PTL_OK && j < nseg; j++) {
            ptl_size_t off = j * seg, l = len - off < seg ? len - off : seg;
            for (int i = 0; rc == PTL_OK && i < nk; i++) {
                ptl_handle_ct_t t;
                ptl_size_t tt;
                rc = r_gate(r, kids[i], PTL_CT_NONE, 0, &t, &tt);
                if (rc == PTL_OK)
                    rc = r_put(r, md, off, l, kids[i], (unsigned)j, 0, t, tt);
            }
        }
        return rc;
    }
    ptl_size_t parent = ((v & (v - 1)) + root) % n;
    ptl_handle_ct_t ready = PTL_CT_NONE, all = PTL_CT_NONE;
    if (rc == PTL_OK && nk)
        rc = r_ct(r, &ready);
    for (int i = 0; rc == PTL_OK && i < nk; i++) {
        rc = PtlTriggeredCTInc(ready, one, g->from[kids[i]], r_ready_thr(r, kids[i]));
    }
    if (rc == PTL_OK)
        rc = r_ct(r, &all);
    ptl_size_t thr = nk ? 2 : 1;
    for (ptl_size_t j = 0; rc == PTL_OK && j < nseg; j++) {
        ptl_size_t off = j * seg, l = len - off < seg ? len - off : seg;
        ptl_handle_ct_t got;
        rc = r_ct(r, &got);
        if (rc == PTL_OK)
            rc = r_recv(r, (char *)buf + off, l, (long)parent, (unsigned)j, got);
        if (rc == PTL_OK && nk)
            rc = PtlTriggeredCTInc(got, one, ready, (ptl_size_t)nk);
        if (rc == PTL_OK)
            rc = PtlTriggeredCTInc(all, one, got, thr);
        for (int i = 0; rc == PTL_OK && i < nk; i++)
            rc = r_put(r, md, off, l, kids[i], (unsigned)j, 0, got, thr);
    }
    r->done = all;
    r->done_thr = nseg;
    return rc;
}

static int check_root(ptl_handle_coll_t h, ptl_size_t root)
{
    struct group *g = group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    return root < g->n ? PTL_OK : PTL_ARG_INVALID;
}

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
    if (!buf && len)
        return PTL_SEGV;
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
    ptl_size_t seg = bcast_seg(r->g->n, len);
    return req_start(r, seg ? sched_bcast_pipe(r, buf, len, root, seg)
                            : sched_bcast(r, buf, len, root), out);
}

/* ---- allreduce: recursive doubling with triggered reduction puts --------- */

static size_t type_size(ptl_coll_type_t t)
{
    return t == PTL_COLL_INT32 || t == PTL_COLL_FLOAT ? 4 : 8;
}

static int check_type_op(ptl_coll_type_t t, ptl_coll_op_t op)
{
    if ((unsigned)t > PTL_COLL_DOUBLE || (unsigned)op > PTL_COLL_BXOR)
        return PTL_ARG_INVALID;
    if ((t == PTL_COLL_FLOAT || t == PTL_COLL_DOUBLE) && op >= PTL_COLL_BAND)
        return PTL_ARG_INVALID;
    return PTL_OK;
}

static void fill_identity(void *buf, ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op)
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
        rc = PtlCTWait(r->done, r->done_thr, &ev);
        if (rc == PTL_OK && ev.failure)
            rc = PTL_FAIL;
    }
    if (rc == PTL_OK && r->nsent) {
        rc = PtlCTWait(r->sent, r->nsent, &ev);
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
        struct req *o = &reqs[f->owner - 1];
        fast_finish(o, fast_wait(o));
    }
    f->owner = (int)(r - reqs) + 1;
    r->fslot = s;
    r->sent = f->sent;
    return f;
}

static int fast_end(struct group *g, struct req *r, int rc, ptl_handle_coll_req_t *h)
{
    if (rc != PTL_OK) {
        fast_finish(r, rc);
        pthread_mutex_unlock(&g->lock);
        req_release(r);
        return rc;
    }
    pthread_mutex_unlock(&g->lock);
    *h = enc(r->gen, (int)(r - reqs));
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
        rc = PtlTriggeredCTInc(f->bg[k], one, BCOND_CT(k - 1), BCOND_THR(k - 1));
        if (rc == PTL_OK)
            rc = PtlTriggeredCTInc(f->bg[k], one, g->barr[k - 1], c);
    }
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t dst = (me + ((ptl_size_t)1 << k)) % n;
        ptl_match_bits_t bits = mbits(g->gid, K_FAST, FSEQ_BAR, (unsigned)k);
        rc = PtlTriggeredPut(f->md, 0, 0, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0, bits, 0, 0,
                             k ? BCOND_CT(k) : f->sent, k ? BCOND_THR(k) : 0);
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
    int rc = PtlTriggeredAtomicPut(f->md, off, bytes, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                                   mbits(g->gid, K_FAST, s, tag), 0, 0, (ptl_op_t)op,
                                   (ptl_datatype_t)t, trig, thr);
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
        fill_identity(f->mem + (ptl_size_t)k * sm, count, t, op);
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
        rc = PtlTriggeredCTInc(f->gate[k], one, ct, thr);
        if (rc == PTL_OK)
            rc = PtlTriggeredCTInc(f->gate[k], one, g->from[q], cum[k]);
        if (rc == PTL_OK)
            rc = fast_atomic(g, f, (ptl_size_t)k * sm, bytes, q, s, (unsigned)(k + 1), t, op,
                             f->gate[k], 2 * u);
    }
    ptl_handle_ct_t last = f->cnt[R];
    ptl_size_t last_thr = (R == 1 ? inc1 : 2) * u;
    if (rc == PTL_OK && extra) {
        rc = PtlTriggeredCTInc(f->gate[R], one, last, last_thr);
        if (rc == PTL_OK)
            rc = PtlTriggeredCTInc(f->gate[R], one, g->from[me + g->p2], cum_e);
        if (rc == PTL_OK)
            rc = PtlTriggeredPut(f->md, (ptl_size_t)R * sm, bytes, PTL_NO_ACK_REQ,
                                 g->ids[me + g->p2], g->pt, 0, mbits(g->gid, K_FAST, s, FT_RES),
                                 0, 0, f->gate[R], 2 * u);
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
            struct req *q = &reqs[o->owner - 1];
            fast_finish(q, fast_wait(q));
        }
    }
    f->owner = (int)(r - reqs) + 1;
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
    int rc = PtlTriggeredPut(f->md, 0, bytes, PTL_NO_ACK_REQ, g->ids[peer], g->pt, 0,
                             mbits(g->gid, K_FAST, PSEQ_BASE + (uint64_t)r->fslot, FT_PAIR), 0,
                             0, gct, g->pprev_thr);
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
            struct req *o = &reqs[b->owner[os] - 1];
            fast_finish(o, fast_wait(o));
        }
    }
    b->owner[s] = (int)(r - reqs) + 1; /* its previous use finished at B1 of c - PB_AHEAD */
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
static int pb_need(struct pbc *b, ptl_size_t q, ptl_size_t need)
{
    ptl_ct_event_t ev;
    int rc = PtlCTGet(b->start[q], &ev);
    if (rc == PTL_OK && ev.success < need)
        rc = PtlCTWait(b->start[q], need, &ev);
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
            rc = pb_need(b, child, need);
            ct = b->cnt[s];
            thr = r->done_thr;
        }
        if (rc == PTL_OK)
            rc = PtlTriggeredPut(b->md[s], 0, len, PTL_NO_ACK_REQ, g->ids[child], g->pt, 0,
                                 mbits(g->gid, K_FAST, PBSEQ_BASE + (uint64_t)s, FT_PBC), 0, 0,
                                 ct, thr);
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
        rc = PtlTriggeredAtomicPut(b->md[s], (ptl_size_t)(1 + j) * sm, bytes, PTL_NO_ACK_REQ,
                                   g->ids[me], g->pt, 0, bits, 0, 0, (ptl_op_t)op,
                                   (ptl_datatype_t)t, b->cnt[s],
                                   base + (ptl_size_t)kids + (ptl_size_t)j);
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
            rc = pb_need(b, parent, need);
        ct = b->cnt[s];
        thr = b->recvs[s];
    } else if (need) {
        ct = b->start[parent];
        thr = need;
    }
    if (rc == PTL_OK)
        rc = PtlTriggeredPut(b->md[s], 0, bytes, PTL_NO_ACK_REQ, g->ids[parent], g->pt, 0, bits,
                             (1 + area) * sm, 0, ct, thr);
    if (rc == PTL_OK)
        b->sent_exp[s]++;
    r->nsent = b->sent_exp[s];
    return rc;
}

static int pb_ok(ptl_handle_coll_t h, ptl_size_t len)
{
    struct group *g = group_get(h);
    return g && g->pb && len > 0 && len <= g->smax;
}

/* Every start signal the peers will send (one per PB_SIG slot bcasts) has
 * come, so that none arrives after its ME is gone; bounded for a peer that
 * left without making the calls. */
static void pb_drain(struct group *g)
{
    struct pbc *b = g->pb;
    uint64_t t0 = now_ms();
    for (ptl_size_t i = 0; b && i < g->n; i++) {
        ptl_ct_event_t ev;
        while (i != g->me && PtlCTGet(b->start[i], &ev) == PTL_OK &&
               ev.success < b->seq / PB_SIG && !ev.failure && now_ms() - t0 <= HELLO_TIMEOUT_MS)
            sleep_us(20);
    }
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
    struct group *g = group_get(h);
    return g && g->n > 1 && bytes > 0 && bytes <= g->smax;
}

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
    int rc = r_ct(r, &gate);
    if (rc == PTL_OK)
        rc = PtlTriggeredCTInc(gate, one, a, athr);
    if (rc == PTL_OK)
        rc = PtlTriggeredCTInc(gate, one, b, bthr);
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
        rc = PtlTriggeredAtomicPut(md, o, l, PTL_NO_ACK_REQ, g->ids[dst], g->pt, 0,
                                   mbits(g->gid, K_DATA, r->seq, tag), o, 0, (ptl_op_t)op,
                                   (ptl_datatype_t)t, trig, thr);
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
        rc = r_ct(r, &fold);
        if (rc == PTL_OK)
            rc = r_recv(r, w, bytes, (long)extra, TAG_FOLD, fold);
        have_thr = (bytes + seg - 1) / seg;
    }
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t q = me ^ (p >> (k + 1));
        rc = r_ct(r, &rs[k]);
        if (rc == PTL_OK)
            rc = r_recv(r, w, bytes, (long)q, TAG_RS + (unsigned)k, rs[k]);
        if (rc == PTL_OK)
            rc = r_ct(r, &ag[k]);
        if (rc == PTL_OK)
            rc = r_recv(r, w, bytes, (long)q, TAG_AG + (unsigned)k, ag[k]);
    }
    if (rc == PTL_OK)
        rc = r_src(r, w, bytes, &md);
    md0 = md;
    if (rc == PTL_OK && half)
        rc = r_src(r, sendbuf, bytes, &md0);
    have = fold;
    ptl_size_t lo = 0, hi = p;
    for (int k = 0; rc == PTL_OK && k < R; k++) {
        ptl_size_t d = p >> (k + 1), q = me ^ d, mid = lo + d;
        ptl_size_t slo = me & d ? lo : mid, klo = me & d ? mid : lo;
        ptl_size_t soff = blk_off(count, p, slo, ts), slen = blk_off(count, p, slo + d, ts) - soff;
        ptl_size_t koff = blk_off(count, p, klo, ts), klen = blk_off(count, p, klo + d, ts) - koff;
        rc = r_gate(r, q, have, have_thr, &trig, &thr);
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
        rc = r_gate(r, q, have, have_thr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, off, len, q, TAG_AG + (unsigned)k, off, trig, thr);
        if (rc == PTL_OK)
            rc = r_and(r, have, have_thr, ag[k], 1, &have, &have_thr);
        if (me & d)
            lo -= d;
        else
            hi += d;
    }
    if (rc == PTL_OK && extra < n) {
        rc = r_gate(r, extra, have, have_thr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, 0, bytes, extra, TAG_RESULT, 0, trig, thr);
    }
    r->done = have;
    r->done_thr = have_thr;
    return rc;
}

static int sched_allreduce(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t count,
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
            void *c = r_tmp(r, bytes);
            if (!c)
                return PTL_NO_SPACE;
            memcpy(c, sendbuf, bytes);
            src = c;
        }
        rc = r_ct(r, &got);
        if (rc == PTL_OK)
            rc = r_recv(r, recvbuf, bytes, (long)host, TAG_RESULT, got);
        if (rc == PTL_OK)
            rc = r_src(r, src, bytes, &md);
        if (rc == PTL_OK)
            rc = r_gate(r, host, PTL_CT_NONE, 0, &trig, &thr);
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
    acc[0] = r_tmp(r, bytes);
    if (!acc[0])
        return PTL_NO_SPACE;
    memcpy(acc[0], sendbuf, bytes);
    for (int k = 1; k <= R; k++) {
        acc[k] = k < R ? r_tmp(r, bytes) : recvbuf;
        if (!acc[k])
            return PTL_NO_SPACE;
        fill_identity(acc[k], count, t, op);
    }
    cnt[0] = PTL_CT_NONE;
    if (extra < n) {
        rc = r_ct(r, &cnt[0]);
        if (rc == PTL_OK)
            rc = r_recv(r, acc[0], bytes, (long)extra, TAG_FOLD, cnt[0]);
    }
    for (int k = 1; rc == PTL_OK && k <= R; k++) {
        rc = r_ct(r, &cnt[k]);
        if (rc == PTL_OK)
            rc = r_recv(r, acc[k], bytes, -1, (unsigned)k, cnt[k]);
    }
    /* r_recv with any source marks every member for an RTR: only the
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
        rc = r_src(r, acc[k], bytes, &md);
        if (rc == PTL_OK)
            rc = r_gate(r, me, cond, cthr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, md, 0, bytes, seg, me, (unsigned)(k + 1), t, op, trig, thr);
        if (rc == PTL_OK)
            rc = r_gate(r, q, cond, cthr, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_reduce_range(r, md, 0, bytes, seg, q, (unsigned)(k + 1), t, op, trig, thr);
    }
    if (rc == PTL_OK && extra < n) {
        ptl_handle_md_t md;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = r_src(r, recvbuf, bytes, &md);
        if (rc == PTL_OK)
            rc = r_gate(r, extra, cnt[R], 2 * nseg, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, 0, bytes, extra, TAG_RESULT, 0, trig, thr);
    }
    r->done = cnt[R];
    r->done_thr = 2 * nseg;
    return rc;
}

int PtlCollIallreduce(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t count,
                      ptl_coll_type_t t, ptl_coll_op_t op, ptl_handle_coll_req_t *out)
{
    if (!group_get(h))
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
    return req_start(r, sched_allreduce(r, sendbuf, recvbuf, count, t, op), out);
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
    struct group *g = group_get(h);
    if (count && (!sendbuf || (g->me == root && !recvbuf)))
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
        dst = r_tmp(r, count * type_size(t));
        if (!dst)
            return req_start(r, PTL_NO_SPACE, out);
    }
    return req_start(r, sched_allreduce(r, sendbuf, dst, count, t, op), out);
}

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
        rc = r_ct(r, &r->done);
        if (rc == PTL_OK)
            rc = r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
        r->done_thr = g->n - 1;
        return rc;
    }
    ptl_handle_md_t md;
    ptl_handle_ct_t trig;
    ptl_size_t thr;
    rc = r_src(r, sendbuf, len, &md);
    if (rc == PTL_OK)
        rc = r_gate(r, root, PTL_CT_NONE, 0, &trig, &thr);
    if (rc == PTL_OK)
        rc = r_put(r, md, 0, len, root, 0, g->me * len, trig, thr);
    return rc;
}

static int sched_scatter(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len,
                         ptl_size_t root)
{
    struct group *g = r->g;
    int rc = PTL_OK;
    if (g->me != root) {
        rc = r_ct(r, &r->done);
        if (rc == PTL_OK)
            rc = r_recv(r, recvbuf, len, (long)root, 0, r->done);
        r->done_thr = 1;
        return rc;
    }
    if (sendbuf != recvbuf && len)
        memmove(recvbuf, (const char *)sendbuf + root * len, len);
    if (g->n == 1)
        return PTL_OK;
    ptl_handle_md_t md;
    rc = r_src(r, sendbuf, g->n * len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == root)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, j * len, len, j, 0, 0, trig, thr);
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
    int rc = r_ct(r, &r->done);
    if (rc == PTL_OK)
        rc = r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
    r->done_thr = g->n - 1;
    ptl_handle_md_t md;
    if (rc == PTL_OK)
        rc = r_src(r, src, len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == g->me)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, 0, len, j, 0, g->me * len, trig, thr);
    }
    return rc;
}

static int sched_alltoall(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t len)
{
    struct group *g = r->g;
    const char *src = sendbuf;
    if (sendbuf == recvbuf && len) { /* slices arrive where we still send from */
        char *c = r_tmp(r, g->n * len);
        if (!c)
            return PTL_NO_SPACE;
        memcpy(c, sendbuf, g->n * len);
        src = c;
    }
    if (len && (const void *)src != recvbuf)
        memmove((char *)recvbuf + g->me * len, src + g->me * len, len);
    if (g->n == 1)
        return PTL_OK;
    int rc = r_ct(r, &r->done);
    if (rc == PTL_OK)
        rc = r_recv(r, recvbuf, g->n * len, -1, 0, r->done);
    r->done_thr = g->n - 1;
    ptl_handle_md_t md;
    if (rc == PTL_OK)
        rc = r_src(r, src, g->n * len, &md);
    for (ptl_size_t j = 0; rc == PTL_OK && j < g->n; j++) {
        if (j == g->me)
            continue;
        ptl_handle_ct_t trig;
        ptl_size_t thr;
        rc = r_gate(r, j, PTL_CT_NONE, 0, &trig, &thr);
        if (rc == PTL_OK)
            rc = r_put(r, md, j * len, len, j, 0, g->me * len, trig, thr);
    }
    return rc;
}

int PtlCollIgather(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                   ptl_size_t root, ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    struct group *g = group_get(h);
    if (len && (!sendbuf || (g->me == root && !recvbuf)))
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return req_start(r, sched_gather(r, sendbuf, recvbuf, len, root), out);
}

int PtlCollIscatter(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                    ptl_size_t root, ptl_handle_coll_req_t *out)
{
    int rc = check_root(h, root);
    if (rc != PTL_OK)
        return rc;
    struct group *g = group_get(h);
    if (len && (!recvbuf || (g->me == root && !sendbuf)))
        return PTL_SEGV;
    if (!bytes_ok(len, g->n))
        return PTL_ARG_INVALID;
    struct req *r;
    rc = begin(h, out, &r);
    if (rc != PTL_OK)
        return rc;
    return req_start(r, sched_scatter(r, sendbuf, recvbuf, len, root), out);
}

int PtlCollIallgather(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                      ptl_handle_coll_req_t *out)
{
    struct group *g = group_get(h);
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
    return req_start(r, sched_allgather(r, sendbuf, recvbuf, len), out);
}

int PtlCollIalltoall(ptl_handle_coll_t h, const void *sendbuf, void *recvbuf, ptl_size_t len,
                     ptl_handle_coll_req_t *out)
{
    struct group *g = group_get(h);
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
    return req_start(r, sched_alltoall(r, sendbuf, recvbuf, len), out);
}

/* ---- blocking versions: start, then wait --------------------------------- */

#define BLOCKING(call)                                                                             \
    do {                                                                                           \
        ptl_handle_coll_req_t q;                                                                   \
        int rc_ = (call);                                                                          \
        return rc_ == PTL_OK ? PtlCollWait(q) : rc_;                                               \
    } while (0)

int PtlCollBarrier(ptl_handle_coll_t h)
{
    BLOCKING(PtlCollIbarrier(h, &q));
}
int PtlCollBcast(ptl_handle_coll_t h, void *buf, ptl_size_t len, ptl_size_t root)
{
    BLOCKING(PtlCollIbcast(h, buf, len, root, &q));
}
int PtlCollReduce(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t count, ptl_coll_type_t t,
                  ptl_coll_op_t op, ptl_size_t root)
{
    BLOCKING(PtlCollIreduce(h, s, d, count, t, op, root, &q));
}
int PtlCollAllreduce(ptl_handle_coll_t h, const void *s, void *d, ptl_size_t count,
                     ptl_coll_type_t t, ptl_coll_op_t op)
{
    BLOCKING(PtlCollIallreduce(h, s, d, count, t, op, &q));
}
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
