/*
 * coll_int.h - what the files of coll/, the collective library of <p3coll.h>
 * (issue 16 item 2), share. The library is built only on public Portals calls
 * and <portals3_ext.h>: every collective is a schedule of counting events
 * (CTs) and triggered operations that the engine runs.
 *
 * Files (one concern each):
 *  - group.c      groups: PtlCollGroupCreate (member-list ids, the hello,
 *                 refusal), PtlCollGroupFree, and the persistent path's
 *                 set-up and teardown (its slots, MEs, MDs and counters);
 *  - fast.c       the handle tables and request slots, PtlCollTest and
 *                 PtlCollWait, the persistent path's calls (barrier, small
 *                 allreduce, pair path, slot bcast and reduce) and the entry
 *                 points that choose a path (barrier, bcast, reduce,
 *                 allreduce): everything a small call runs, in one unit, so
 *                 that the compiler inlines across it;
 *  - req.c        the per-call path's requests: their counters, MDs, MEs
 *                 and buffers, the readiness gates of their sends, start
 *                 (RTRs) and release;
 *  - bcast.c      the per-call bcast schedules (binomial tree, pipelined);
 *  - allreduce.c  the per-call allreduce schedules (recursive doubling,
 *                 reduce-scatter + allgather);
 *  - direct.c     gather, scatter, allgather, alltoall (direct puts at
 *                 offsets).
 * Private to coll/. What one file calls in another is named pt_coll_* and
 * hidden like every internal of the library (-fvisibility=hidden,
 * cmake/portals.map): only the Ptl* calls of <p3coll.h> are exported.
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
 * segments: pt_coll_sched_bcast_pipe); allreduce = recursive doubling with
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
#ifndef PT_COLL_INT_H
#define PT_COLL_INT_H

#include "flagline.h"
#include "pt_atomic.h"

#include <p3coll.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define COLL_MAX_GROUPS  256
#define COLL_MAX_REQS    1024

/* match bits: gid(24) | kind(2) | seq(30) | tag(8) */
#define K_RTR   1ull
#define K_HELLO 2ull
#define K_DATA  3ull
static inline ptl_match_bits_t mbits(uint64_t gid, uint64_t kind, uint64_t seq, unsigned tag)
{
    return (gid & 0xffffffull) << 40 | kind << 38 | (seq & 0x3fffffffull) << 8 | (tag & 0xffu);
}

#define COLL_SLOTS 20 /* > 16: with 16 calls in flight a slot is never waited for */
#define COLL_RCACHE 4 /* free request slots a group keeps (struct group)          */
#define COLL_RMAX  21 /* rounds: groups of at most 2^20 members */

/* ---- persistent path ------------------------------------------------------ */

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
/* The pair slots' match bits (group.c pair_setup, fast.c pair_allreduce) */
#define PSEQ_BASE 0x100ull
#define FT_PAIR   202u
/* A member's bye (group.c say_bye): K_HELLO bits with this tag, and in the
 * call sequence's 30 bits the group id's bits 24-53. A bye may still be in
 * flight when its group is freed, and a newer group over another member
 * list may have the same 24 bits (a create refuses only a clash with a live
 * group): its bye ME must not take the old group's bye for a member leaving
 * it (mp_coll_idbye: its second call failed with PTL_FAIL). With 54 bits of
 * the id the old bye finds no group and goes to the sink. */
#define HELLO_BYE 3u
static inline ptl_match_bits_t bye_bits(uint64_t gid)
{
    return mbits(gid, K_HELLO, gid >> 24, HELLO_BYE);
}
/* The flag path's wake messages (flag.c) */
#define FLSEQ_WAKE 0x400ull
#define FT_WAKE   204u
/* The slot bcast's and reduce's (group.c pb_setup, fast.c slot_bcast, slot_reduce) */
#define PBSEQ_BASE 0x200ull
#define PBSEQ_START 0x300ull
#define FT_PBC    203u

/* Who writes and who reads the structures below:
 *  - struct group: group.c fills it in PtlCollGroupCreate (before the handle
 *    exists: no lock) and empties it in PtlCollGroupFree (no request in
 *    flight); what it set up (ni .. ids, from, nmd, the slots' handles, smax,
 *    rb, ra, p2, barr) is only read after that, by every file, without the
 *    lock. The per-call state (seq, expect, inflight, fseq, bar_calls, pseq,
 *    pprev, rcache) is written under g->lock: by req.c and the schedules
 *    (bcast.c, allreduce.c, direct.c) for a per-call request, by fast.c for
 *    a persistent one.
 *  - struct fslot, struct pbc: handles and memory set up and freed by
 *    group.c; use counts, owners and the accumulators' contents written by
 *    fast.c under g->lock (the engine writes mem through the slot's MEs);
 *    group.c's pb_drain reads pbc's start counters at free.
 *  - struct req: a slot of the request table (fast.c). A per-call request is
 *    filled by req.c and a schedule while PtlCollI* holds the group lock, a
 *    persistent one by fast.c under it; then read without a lock by the one
 *    thread that completes it (PtlCollTest, PtlCollWait in fast.c), which
 *    releases it (req.c for a per-call one, fast.c under g->lock for a
 *    persistent one, which holds nothing of its own).
 */
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
    /* Calls of the group entered here, on every path, numbered alike by
     * every member (each makes the group's calls in one order):
     * pt_coll_enter. Atomic: the flag path counts under fl_lock, the
     * others under lock. */
    _Atomic uint64_t calls;
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
     * one without g_pt_coll_tab_lock, two lock/unlock pairs less per call. Given back
     * to the table at teardown. */
    int rcache[COLL_RCACHE];
    int nrcache;
    /* flag path (flag.c): set up by flag.c's setup and join inside
     * PtlCollGroupCreate, emptied by its teardown; the per-call state
     * (fl_calls, the slots' contents) written under fl_lock by the one
     * blocking call in progress. fl_on false: the group does not use it. */
    struct pt_flagslot **fl;           /* [n] member i's slot                    */
    uint64_t *fl_base;                 /* [n] member i's seq when it took it     */
    uint32_t *fl_k;                    /* [n] its index among i's PT_FLAG_SLOTS  */
    uint64_t fl_calls, fl_spin_ns;     /* flag calls made; spin before a sleep   */
    uint64_t fl_wr[2];                 /* the call that last wrote our value
                                        * buffer b (0: none yet)               */
    int fl_idx;                        /* our slot taken (-1: none)              */
    bool fl_on;                        /* the group uses the path                */
    bool fl_bcast;                     /* bcasts too (every member spins)        */
    ptl_handle_ct_t fl_wct;            /* counts the wake messages to us ...     */
    ptl_handle_me_t fl_wme;            /* ... which land on this ME              */
    pthread_mutex_t fl_lock;
    /* Byes (group.c say_bye, bye_before): a member that frees the group puts
     * one 0-byte message to every other member, hdr_data = the calls it
     * entered; they land on bye_me (from any member) as PUT_END events in
     * bye_eq. A wait that stalls reads them (req.c, pt_coll_ct_wait): the
     * flag slots' "left without entering" for members that share no memory
     * (other hosts, PTL_COLL_FLAGS=0). bye[i]: the calls member i said it
     * entered (UINT64_MAX: no bye yet), written under bye_lock by whoever
     * drains bye_eq. bye_eq PTL_EQ_NONE: no byes (1 member, or no room). */
    ptl_handle_eq_t bye_eq;
    ptl_handle_me_t bye_me;
    uint64_t *bye;
    pthread_mutex_t bye_lock;
    /* Under g_pt_coll_tab_lock: live from the end of a successful create to
     * the start of PtlCollGroupFree (the PtlNIFini hook touches live groups
     * only, holding the lock throughout); bye_said once our bye went (by
     * the hook or the free: one bye per group). */
    bool live, bye_said;
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
    uint64_t call; /* its number among the group's calls (pt_coll_enter) */
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
    /* a receive-only member that passed no buffer (pt_coll_req_adopt): the
     * scratch memory it takes part through, freed at completion, where the
     * call reports PTL_SEGV (or its failure: fast.c scratch_end) */
    void *scratch;
    /* PtlCollTest of a call not done (req.c, pt_coll_test_stalled; the
     * testing thread's, as the request is): its counters' sum when last
     * seen, and since when (ns) it has not moved */
    uint64_t t_seen, t_since;
};

/* Are request r's counters complete: done >= done_thr (none: nothing to
 * count) and every send it made counted (a per-call request's sent counter
 * is always read; a persistent one's only where it made sends, nsent > 0)?
 * Successes and failures both count, as the engine counts a failed
 * operation into .failure. The one predicate of PtlCollTest (both paths,
 * fast.c) and PtlNIFini's pt_coll_first_pending; a counter that cannot be
 * read (PtlCTGet failed: *rc says why) is a result of its own, which each
 * caller maps: PtlCollTest's persistent path completes the request with
 * *rc, its per-call path returns *rc and leaves it in flight, and
 * pt_coll_first_pending counts it in flight. *seen: the sum of what was
 * read (PtlCollTest's stall check), *failed: a failure was counted. */
enum pt_coll_cts { PT_COLL_CTS_SHORT, PT_COLL_CTS_COMPLETE, PT_COLL_CTS_UNREADABLE };
static inline enum pt_coll_cts pt_coll_req_cts(const struct req *r, uint64_t *seen, bool *failed,
                                               int *rc)
{
    ptl_ct_event_t a = {0, 0}, b = {0, 0};
    bool read_sent = !r->fast || r->nsent;
    *rc = PTL_OK;
    if (r->done != PTL_CT_NONE)
        *rc = PtlCTGet(r->done, &a);
    if (*rc == PTL_OK && read_sent && r->sent != PTL_CT_NONE)
        *rc = PtlCTGet(r->sent, &b);
    *seen = a.success + a.failure + b.success + b.failure;
    *failed = a.failure || b.failure;
    if (*rc != PTL_OK)
        return PT_COLL_CTS_UNREADABLE;
    bool done_ok = r->done == PTL_CT_NONE || a.success + a.failure >= r->done_thr;
    bool sent_ok = !read_sent || r->sent == PTL_CT_NONE || b.success + b.failure >= r->nsent;
    return done_ok && sent_ok ? PT_COLL_CTS_COMPLETE : PT_COLL_CTS_SHORT;
}

/* The tables, fast.c's. g_pt_coll_tab_lock: taking and releasing table
 * entries (group.c takes and releases group entries in PtlCollGroupCreate and
 * group_teardown, fast.c request entries and the groups' caches of them). A
 * handle is checked without it: g_pt_coll_gstate / rstate[i] = gen << 1 |
 * used, written (ST_RELEASE, under g_pt_coll_tab_lock) when the entry is
 * taken or released, read (LD_ACQUIRE) by pt_coll_group_get / req_get. Free
 * requests are a stack (rfree), so taking one is O(1) however many are in
 * flight. */
extern pthread_mutex_t g_pt_coll_tab_lock;
extern struct group g_pt_coll_groups[COLL_MAX_GROUPS];
extern struct req g_pt_coll_reqs[COLL_MAX_REQS];
extern _Atomic uint64_t g_pt_coll_gstate[COLL_MAX_GROUPS];

static inline void state_set(_Atomic uint64_t *st, uint32_t gen, int used)
{
    ST_RELEASE(st, (uint64_t)gen << 1 | (uint64_t)(used != 0)); /* pairs with state_ok */
}

static inline uint64_t enc(uint32_t gen, int idx)
{
    return (uint64_t)gen << 20 | (uint64_t)(idx + 1);
}

/* A request's handle: enc with COLL_REQ_BIT, which no group's index reaches
 * (COLL_MAX_GROUPS, COLL_MAX_REQS < 2^19), so a group handle given where a
 * request goes, or a request's where a group goes, is PTL_HANDLE_INVALID.
 * Both tables start at generation 0: without it the first group and the
 * first request both had handle 1 (an adversarial client's PtlCollWait(group)
 * completed a request, and PtlCollBarrier(request) ran on a group). */
#define COLL_REQ_BIT 0x80000ull
static inline uint64_t enc_req(uint32_t gen, int idx)
{
    return enc(gen, idx) | COLL_REQ_BIT;
}

/* A call whose buffers would span more than an address space can (a count
 * or length past it, or a product that wraps) is refused before anything
 * moves (an audit: an allreduce of 2^61 + 1 int64s returned PTL_OK having
 * reduced one element, an allgather of 2^63 bytes each crashed both ranks,
 * a bcast of 2^62 bytes corrupted a non-root's stack). */
#define COLL_MAX_BYTES (1ull << 47)
static inline bool bytes_ok(ptl_size_t a, ptl_size_t b)
{
    return !a || !b || a <= COLL_MAX_BYTES / b;
}

static inline size_t type_size(ptl_coll_type_t t)
{
    return t == PTL_COLL_INT32 || t == PTL_COLL_FLOAT ? 4 : 8;
}

/* ---- fast.c: handles, request slots, reduction identities ---------------- */

struct group *pt_coll_group_get(ptl_handle_coll_t h);
struct req *pt_coll_req_take(void);
void pt_coll_req_put(struct req *r);
void pt_coll_req_cache_drop(struct group *g);
/* The first of g's calls whose request is still in flight here (its
 * counters short: not complete, whether or not PtlCollTest/Wait ran), or
 * UINT64_MAX: for PtlNIFini's bye (group.c). */
uint64_t pt_coll_first_pending(const struct group *g);
void pt_coll_fill_identity(void *buf, ptl_size_t count, ptl_coll_type_t t, ptl_coll_op_t op);

/* ---- req.c: the per-call path's requests --------------------------------- */

int pt_coll_r_ct(struct req *r, ptl_handle_ct_t *ct);
void *pt_coll_r_tmp(struct req *r, size_t len);
int pt_coll_r_src(struct req *r, const void *buf, ptl_size_t len, ptl_handle_md_t *md);
int pt_coll_r_recv(struct req *r, void *buf, ptl_size_t len, long from, unsigned tag,
                   ptl_handle_ct_t ct);
ptl_size_t pt_coll_r_ready_thr(struct req *r, ptl_size_t dst);
int pt_coll_r_gate(struct req *r, ptl_size_t dst, ptl_handle_ct_t cond, ptl_size_t cthr,
                   ptl_handle_ct_t *t, ptl_size_t *thr);
int pt_coll_r_put(struct req *r, ptl_handle_md_t md, ptl_size_t off, ptl_size_t len, ptl_size_t dst,
                  unsigned tag, ptl_size_t roff, ptl_handle_ct_t t, ptl_size_t thr);
void pt_coll_req_release(struct req *r);
int pt_coll_req_new(struct group *g, struct req **out);
int pt_coll_req_start(struct req *r, int rc, ptl_handle_coll_req_t *h);

/* ---- bcast.c, allreduce.c: the per-call schedules ------------------------ */

int pt_coll_sched_bcast(struct req *r, void *buf, ptl_size_t len, ptl_size_t root);
ptl_size_t pt_coll_bcast_seg(ptl_size_t n, ptl_size_t len);
int pt_coll_sched_bcast_pipe(struct req *r, void *buf, ptl_size_t len, ptl_size_t root,
                             ptl_size_t seg);
int pt_coll_sched_allreduce(struct req *r, const void *sendbuf, void *recvbuf, ptl_size_t count,
                            ptl_coll_type_t t, ptl_coll_op_t op);

/* ---- the start of a call (fast.c, direct.c) ------------------------------ */

/* Not declared inline: the compiler weighs them as it did when coll/ was one
 * file (an inline hint on begin_with changed which calls of the persistent
 * path it inlines); unused: not every file calls them. */
#define PT_COLL_UNUSED __attribute__((unused))

static PT_COLL_UNUSED int check_root(ptl_handle_coll_t h, ptl_size_t root)
{
    struct group *g = pt_coll_group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    return root < g->n ? PTL_OK : PTL_ARG_INVALID;
}

/* Locks group h and takes a request with take (pt_coll_req_new, req_new_fast):
 * PTL_OK with the group locked, or why not (nothing held). */
static PT_COLL_UNUSED int begin_with(ptl_handle_coll_t h, ptl_handle_coll_req_t *out,
                                     struct req **r, int (*take)(struct group *, struct req **))
{
    if (!out)
        return PTL_SEGV;
    struct group *g = pt_coll_group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    pthread_mutex_lock(&g->lock);
    int rc = take(g, r);
    if (rc != PTL_OK)
        pthread_mutex_unlock(&g->lock);
    return rc;
}

/* Locks the group and starts a request (per-call path). */
static PT_COLL_UNUSED int begin(ptl_handle_coll_t h, ptl_handle_coll_req_t *out, struct req **r)
{
    return begin_with(h, out, r, pt_coll_req_new);
}

/* The blocking versions: start, then wait. */
/* ---- flag path (flag.c; docs/coll.md "Flag path") ------------------------ */
/* PtlCollGroupCreate, before the hello: take a flag slot and post the wake
 * ME if every member shares this node's memory (else nothing); after a
 * successful hello: find every member's slot (else give ours back). */
void pt_coll_flag_init(struct group *g); /* right after the group is zeroed */
int pt_coll_flag_setup(struct group *g);
void pt_coll_flag_join(struct group *g);
/* group teardown: mark ours done, keep it until its readers are done. */
void pt_coll_flag_teardown(struct group *g);
/* Does a blocking call of this many bytes (0: barrier) take the flag path? */
static inline bool pt_coll_flag_ok(const struct group *g, ptl_size_t bytes)
{
    return g->fl_on && bytes <= PT_FLAG_VAL;
}
static inline bool pt_coll_flag_bcast_ok(const struct group *g, ptl_size_t bytes)
{
    return pt_coll_flag_ok(g, bytes) && g->fl_bcast;
}
/* A blocking barrier, allreduce, reduce (out NULL at a non-root) or bcast
 * (in the root's buffer, out everyone else's) on the flag path. */
enum { PT_FL_BARRIER, PT_FL_ALLREDUCE, PT_FL_REDUCE, PT_FL_BCAST };
int pt_coll_flag_call(struct group *g, int kind, ptl_size_t root, const void *in, void *out,
                      ptl_size_t bytes, ptl_coll_type_t t, ptl_coll_op_t op);
/* group.c: an ME from `from` with these bits over buf, counted by a new CT. */
int pt_coll_attach_ct(struct group *g, ptl_process_id_t from, ptl_match_bits_t bits, void *buf,
                      ptl_size_t len, ptl_handle_ct_t *ct, ptl_handle_me_t *me);
/* api/node.c: what the flag path needs of the NI (internal, not exported). */
struct pt_flagslot *pt_api_node_lines(ptl_handle_ni_t ni, ptl_process_id_t id);
uint64_t pt_api_node_spin_ns(ptl_handle_ni_t ni);
void pt_api_node_poll(ptl_handle_ni_t ni);
int pt_api_node_progress(ptl_handle_ni_t ni);
int pt_api_node_wait(ptl_handle_ni_t ni, bool (*ready)(void *), void *arg, int64_t timeout_ns);
bool pt_api_node_alive(ptl_handle_ni_t ni);
bool pt_api_node_left(ptl_handle_ni_t ni, ptl_process_id_t id);
/* fn(ni) at every PtlNIFini, while that NI still sends (the byes, group.c). */
void pt_api_node_on_fini(void (*fn)(ptl_handle_ni_t));

/* api/ct.c: PtlCTWait bounded by timeout_ns (-1: none); PTL_EQ_EMPTY when
 * it passed first (internal, not exported). */
int pt_api_ct_wait(ptl_handle_ct_t ct, ptl_size_t test, ptl_ct_event_t *ev, int64_t timeout_ns);

/* A call of g begins here: its number (every path counts it, req.c). With
 * flag slots it goes to ours (util/flagline.h, calls), where the members
 * that wait for this call look when they see us leave. */
static inline uint64_t pt_coll_enter(struct group *g)
{
    uint64_t c = RMW_ADD(&g->calls, 1) + 1;
    /* ordered before our close's release (A-LEFT's partner); after
     * PtlNIFini the slots are unmapped (the call then fails) */
    if (g->fl_on && pt_api_node_alive(g->ni))
        ST_RELAXED(&g->fl[g->me]->calls, c);
    return c;
}
/* PtlCTWait on a counter of call r (req.c): PTL_FAIL, not a wait for ever,
 * once a member closed its NI in order (flag slots) or freed the group (its
 * bye) without entering the call. */
int pt_coll_ct_wait(struct req *r, ptl_handle_ct_t ct, ptl_size_t test, ptl_ct_event_t *ev);
/* PtlCollTest of call r, not done, its counters summing to `seen`: what
 * pt_coll_ct_wait would end with, without waiting: PTL_FAIL once the
 * counters stood still for COLL_LEFT_NAP_NS and the job failed, the NI is
 * gone, or a member left without entering the call; else PTL_OK. */
int pt_coll_test_stalled(struct req *r, uint64_t seen);

/* rc = call (a PtlTriggered* operation of a schedule), again while every
 * triggered slot of the NI is armed (PTL_NO_SPACE) and pt_coll_trig_wait
 * sees room coming (req.c). */
#define COLL_TRIG(g, rc, call)                                                                     \
    do {                                                                                           \
        uint64_t t0_ = 0;                                                                          \
        while (((rc) = (call)) == PTL_NO_SPACE && pt_coll_trig_wait((g), &t0_))                    \
            ;                                                                                      \
    } while (0)
bool pt_coll_trig_wait(struct group *g, uint64_t *t0);
/* group.c: a member that freed the group (its bye) having entered fewer than
 * c calls, or g->n: none known. */
ptl_size_t pt_coll_bye_before(struct group *g, uint64_t c);

/* A nonblocking call made with scratch memory tmp for a member that only
 * receives and passed no buffer (rc: the call's result): the request owns
 * tmp and reports PTL_SEGV when it completes, or its failure (PTL_FAIL...)
 * when it fails. PTL_OK, or rc (tmp freed). */
int pt_coll_req_adopt(int rc, ptl_handle_coll_req_t *h, void *tmp);

#define BLOCKING(call)                                                                             \
    do {                                                                                           \
        ptl_handle_coll_req_t q;                                                                   \
        int rc_ = (call);                                                                          \
        return rc_ == PTL_OK ? PtlCollWait(q) : rc_;                                               \
    } while (0)

#endif
