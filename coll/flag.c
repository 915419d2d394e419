/*
 * flag.c - the flag path (docs/coll.md "Flag path"): a blocking barrier, and
 * a blocking allreduce, reduce or bcast of 1 to PT_FLAG_VAL bytes, in a
 * group whose members all share this node's memory, through one flag slot
 * per member in the job region (util/flagline.h says who writes and reads
 * each word).
 *
 * A call c of the group, at member m (s_i = base_i + c: member i's seq of it):
 *   if m contributes a value (allreduce, reduce: everyone; bcast: the root):
 *     F-REUSE  wait until every member entered call wr + 1, wr being the call
 *              that last wrote this value buffer (its readers are done then)
 *     val[s_m & 1] = our value
 *   ST_RELEASE(seq, s_m)                                         F-SEQ
 *   FENCE_FULL                                                   F-WAKE
 *   for every other member i: sleep_i != 0 and sleep_i <= s_i (it waits
 *   for a call we have entered) ? a wake message to i
 *   wait (barrier, allreduce, a reduce's root: every member; a bcast's other
 *   members: the root; a bcast's root, a reduce's others: nobody) until the
 *   awaited seqs reach call c (LD_ACQUIRE, A-SEQ): spin first
 *   (pt_api_node_spin_ns: none when threads outnumber cores), then
 *     ST_RELAXED(sleep, s); FENCE_FULL                           F-ANN
 *     and the waiting protocol's wait (pt_api_node_wait), which looks at the
 *     seqs again before it sleeps and wakes on every counter change: a wake
 *     message is counted by our wake ME's counter; then sleep = 0
 *   result: member 0's value, combined with member 1's, ... in member order
 *   (bit-identical everywhere, floats too), or the root's value.
 * No wake-up is lost: F-WAKE and F-ANN make a store-buffer pair (Dekker);
 * either our look after F-ANN sees member i's seq, or member i's look after
 * F-WAKE sees our announcement and sends the message. F-REUSE with two
 * value buffers: no value is overwritten before every member read it, also
 * where a bcast's root or a reduce's members run ahead (model/flag.pml, run
 * by tests/model/run-spin, with a mutant per fence and rule).
 *
 * A call costs no message when the members arrive within the spin: one line
 * written and each peer's line read, where a message's path through both
 * engines is about 2,000 instructions (bench/RESULTS.md, forty-ninth session).
 * Only blocking calls take it: a nonblocking one is a schedule of triggered
 * operations that the engine runs while the application computes.
 *
 * Slots are taken per process (a record per slot of ours); a slot freed with
 * its group is taken again only when every member of that group shows done
 * past that group's last call (nobody still reads our values). A member that
 * never frees the group, or died, keeps the slot: PT_FLAG_SLOTS groups at
 * most use the path at once, the others use triggered operations.
 */
#include "coll_int.h"
#include "clock.h"
#include "config.h"
#include "flagline.h"
#include "log.h"
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

/* One of our slots: free, in use by a group, or draining after its group was
 * freed (every ids[i]'s slot k[i] must show done >= need[i]). Under
 * g_pt_coll_tab_lock. The slot index is ours whichever NI: a record whose
 * NI is gone (PtlNIFini) is free again, its region unmapped; the group that
 * held it then leaves it alone (owner, gen). */
enum { REC_FREE, REC_USED, REC_DRAIN };
struct flag_rec {
    int state;
    ptl_handle_ni_t ni;
    const struct group *owner; /* REC_USED: the group, as of ... */
    uint32_t gen;              /* ... its generation                  */
    ptl_size_t n;
    ptl_process_id_t *ids;
    uint32_t *k;
    uint64_t *need;
};
static struct flag_rec recs[PT_FLAG_SLOTS];

static void rec_clear(struct flag_rec *r)
{
    free(r->ids);
    free(r->k);
    free(r->need);
    memset(r, 0, sizeof *r);
}

/* A draining record's readers are done (or gone). */
static bool rec_drained(struct flag_rec *r)
{
    for (ptl_size_t i = 0; i < r->n; i++) {
        struct pt_flagslot *l = pt_api_node_lines(r->ni, r->ids[i]);
        if (l && LD_ACQUIRE(&l[r->k[i]].done) < r->need[i]) /* pairs with teardown's ST_RELEASE */
            return false;
    }
    return true;
}

/* Does group g (still) hold record k? */
static bool rec_mine(const struct group *g, int k)
{
    return k >= 0 && recs[k].state == REC_USED && recs[k].owner == g && recs[k].gen == g->gen;
}

/* A free slot index, or a drained one, or one whose NI is gone; -1: all in
 * use or draining. Table lock held. */
static int slot_take(struct group *g)
{
    int k = -1;
    for (unsigned i = 0; k < 0 && i < PT_FLAG_SLOTS; i++)
        if (recs[i].state == REC_FREE)
            k = (int)i;
    for (unsigned i = 0; k < 0 && i < PT_FLAG_SLOTS; i++)
        if (!pt_api_node_alive(recs[i].ni) ||
            (recs[i].state == REC_DRAIN && rec_drained(&recs[i]))) {
            rec_clear(&recs[i]);
            k = (int)i;
        }
    if (k >= 0) {
        recs[k].state = REC_USED;
        recs[k].ni = g->ni;
        recs[k].owner = g;
        recs[k].gen = g->gen;
    }
    return k;
}

static uint64_t tag_of(const struct group *g) { return g->gid << 1 | 1; }

void pt_coll_flag_init(struct group *g)
{
    g->fl_idx = -1;
    g->fl_wct = PTL_CT_NONE;
    g->fl_wme = PTL_INVALID_HANDLE;
    pthread_mutex_init(&g->fl_lock, NULL);
}

static void arrays_free(struct group *g)
{
    free(g->fl);
    free(g->fl_base);
    free(g->fl_k);
    g->fl = NULL;
    g->fl_base = NULL;
    g->fl_k = NULL;
}

/* Before the hello: every allocation that could fail is made here, so that
 * after it the decision depends only on the tags, which every member reads
 * alike. */
int pt_coll_flag_setup(struct group *g)
{
    if (g->n < 2 || !pt_config()->coll_flags)
        return PTL_OK;
    g->fl = calloc(g->n, sizeof *g->fl);
    g->fl_base = calloc(g->n, sizeof *g->fl_base);
    g->fl_k = calloc(g->n, sizeof *g->fl_k);
    if (!g->fl || !g->fl_base || !g->fl_k) {
        arrays_free(g);
        return PTL_OK; /* no tag: every member sees the path off */
    }
    /* fl[i]: member i's PT_FLAG_SLOTS slots until join picks the group's one */
    for (ptl_size_t i = 0; i < g->n; i++)
        if (!(g->fl[i] = pt_api_node_lines(g->ni, g->ids[i]))) {
            arrays_free(g);
            return PTL_OK; /* someone on another host: nobody takes a slot */
        }
    struct pt_flagslot *mine = g->fl[g->me];
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    int k = slot_take(g);
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    if (k < 0) {
        arrays_free(g);
        return PTL_OK; /* no slot: no tag, so every member sees the path off */
    }
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    int rc = pt_coll_attach_ct(g, any, mbits(g->gid, K_FAST, FLSEQ_WAKE, FT_WAKE), NULL, 0,
                               &g->fl_wct, &g->fl_wme);
    if (rc != PTL_OK) { /* out of room: create fails (and frees what was made) */
        pthread_mutex_lock(&g_pt_coll_tab_lock);
        rec_clear(&recs[k]);
        pthread_mutex_unlock(&g_pt_coll_tab_lock);
        arrays_free(g);
        return rc;
    }
    struct pt_flagslot *f = &mine[k];
    ST_RELAXED(&f->base, LD_RELAXED(&f->seq)); /* we are its only writer */
    ST_RELAXED(&f->calls, 0); /* this group's calls (pt_coll_enter), published with base */
    ST_RELAXED(&f->caps, pt_api_node_spin_ns(g->ni) ? PT_FLAG_SPIN : 0);
    ST_RELEASE(&f->tag, tag_of(g)); /* published to the members by our hello's messages */
    g->fl_idx = k;
    return PTL_OK;
}

/* Our slot back, unused by this group (no member uses the path): the tag
 * cleared (only a tag no member can have found: join's rule). */
static void give_back(struct group *g)
{
    if (pt_api_node_alive(g->ni)) /* else its region is unmapped */
        ST_RELEASE(&g->fl[g->me][g->fl_idx].tag, 0); /* fl[me]: still our slots' base */
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    if (rec_mine(g, g->fl_idx))
        rec_clear(&recs[g->fl_idx]);
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    g->fl_idx = -1;
    arrays_free(g);
}

void pt_coll_flag_join(struct group *g)
{
    if (g->fl_idx < 0)
        return;
    ptl_size_t n = g->n;
    uint64_t tag = tag_of(g);
    bool ok = true, spin_all = true;
    /* Every member that takes a slot tags it before its hello, and our hello
     * ended after every member's began; a tag stays until its slot is taken
     * again, which needs every member's teardown (done), so after every
     * member's join. A tag is cleared early only by give_back, after a member
     * found a tag missing that was never set, which every member finds
     * missing. So what we find here, every member finds, and all decide
     * alike (a member without a tag: off). */
    for (ptl_size_t i = 0; ok && i < n; i++) {
        struct pt_flagslot *l = g->fl[i]; /* setup's: member i's slots */
        int found = -1;
        for (unsigned k = 0; k < PT_FLAG_SLOTS; k++)
            if (LD_ACQUIRE(&l[k].tag) == tag) { /* pairs with setup's ST_RELEASE */
                ok = found < 0; /* two slots with one tag (an id collision): off */
                found = (int)k;
            }
        ok = ok && found >= 0;
        if (ok) {
            g->fl_k[i] = (uint32_t)found;
            g->fl_base[i] = LD_RELAXED(&l[found].base); /* written before the tag */
            spin_all = spin_all && (LD_RELAXED(&l[found].caps) & PT_FLAG_SPIN);
        }
    }
    if (!ok) {
        give_back(g); /* fl[] still the members' slot arrays */
        return;
    }
    for (ptl_size_t i = 0; i < n; i++)
        g->fl[i] += g->fl_k[i]; /* from here: member i's slot of this group */
    g->fl_spin_ns = pt_api_node_spin_ns(g->ni);
    /* A bcast whose root may run only two calls ahead pays a sleep and a wake
     * per call or two where ranks outnumber cores (4 ranks on 2 cores: 7-13
     * us against the slot bcast's 5-7, which runs 16 ahead): there it takes
     * the slot bcast, on every member alike (caps, published with the tag). */
    g->fl_bcast = spin_all;
    g->fl_on = true;
}

void pt_coll_flag_teardown(struct group *g)
{
    if (g->fl_wme != PTL_INVALID_HANDLE)
        PtlMEUnlink(g->fl_wme);
    if (g->fl_wct != PTL_CT_NONE)
        PtlCTFree(g->fl_wct);
    g->fl_wme = PTL_INVALID_HANDLE;
    g->fl_wct = PTL_CT_NONE;
    if (g->fl_idx >= 0 && !g->fl_on) {
        give_back(g); /* made before its join (a create that failed) */
    } else if (g->fl_on) {
        /* The tag stays (join's rule): the slot drains until every member's
         * done shows it read our values, and only then is tagged again. */
        bool alive = pt_api_node_alive(g->ni);
        if (alive)
            ST_RELEASE(&g->fl[g->me]->done, LD_RELAXED(&g->fl[g->me]->seq)); /* R-DONE */
        pthread_mutex_lock(&g_pt_coll_tab_lock);
        if (rec_mine(g, g->fl_idx)) {
            struct flag_rec *r = &recs[g->fl_idx];
            r->ids = alive ? malloc(g->n * sizeof *r->ids) : NULL;
            r->need = alive ? malloc(g->n * sizeof *r->need) : NULL;
            if (r->ids && r->need) {
                r->state = REC_DRAIN;
                r->n = g->n;
                memcpy(r->ids, g->ids, g->n * sizeof *r->ids);
                for (ptl_size_t i = 0; i < g->n; i++)
                    r->need[i] = g->fl_base[i] + g->fl_calls;
                r->k = g->fl_k; /* the record keeps it */
                g->fl_k = NULL;
            } else if (alive) { /* no memory to remember the readers: the slot stays taken */
                free(r->ids);
                free(r->need);
                r->ids = NULL;
                r->need = NULL;
                r->owner = NULL;
            } else { /* the NI is gone, and its region with it */
                rec_clear(r);
            }
        }
        pthread_mutex_unlock(&g_pt_coll_tab_lock);
        arrays_free(g);
        g->fl_idx = -1;
        g->fl_on = false;
    }
    pthread_mutex_destroy(&g->fl_lock);
}

#define FLAG_NAP_NS 100000000 /* a sleeper looks again after 100 ms at most */

struct flwait {
    const struct group *g;
    uint64_t c;      /* every awaited member's seq of this call            */
    ptl_size_t next; /* members before it have arrived (seq only grows)    */
    ptl_size_t only; /* < n: only this member is awaited                   */
};

static bool arrived(void *arg)
{
    struct flwait *w = arg;
    const struct group *g = w->g;
    if (w->only < g->n)
        return LD_ACQUIRE(&g->fl[w->only]->seq) >= g->fl_base[w->only] + w->c; /* A-SEQ */
    for (; w->next < g->n; w->next++)
        if (w->next != g->me &&
            LD_ACQUIRE(&g->fl[w->next]->seq) < g->fl_base[w->next] + w->c) /* A-SEQ */
            return false;
    return true;
}

/* An awaited member that has not entered call c and closed its NI in order
 * (PtlNIFini: it can make no call of this group again), or n: none. Its
 * close is a release after every seq it stored, so a seq read after the
 * close was seen (A-LEFT, then A-SEQ) is its last: a member that entered the
 * call before it left is never taken for one that did not. Asked at each
 * nap's end (a sleeper looks again every FLAG_NAP_NS): O(n) loads. */
static ptl_size_t member_left(const struct flwait *w)
{
    const struct group *g = w->g;
    ptl_size_t lo = w->only < g->n ? w->only : w->next, hi = w->only < g->n ? w->only + 1 : g->n;
    for (ptl_size_t i = lo; i < hi; i++)
        if (i != g->me && pt_api_node_left(g->ni, g->ids[i]) && /* A-LEFT */
            LD_ACQUIRE(&g->fl[i]->seq) < g->fl_base[i] + w->c)  /* A-SEQ */
            return i;
    return g->n;
}

/* Wait until member `only` (n: every other member) entered call c: spin
 * while it may come soon, then announce and wait. PTL_FAIL when an awaited
 * member left the job in order without entering it (it never will; a member
 * that died fails the wait through the job's failure). */
static int flag_wait(struct group *g, uint64_t c, ptl_size_t only)
{
    struct flwait w = {g, c, 0, only};
    if (arrived(&w))
        return PTL_OK;
    if (g->fl_spin_ns) {
        uint64_t t0 = pt_now_ns();
        for (unsigned i = 1;; i++) {
            CPU_RELAX();
            if (arrived(&w))
                return PTL_OK;
            if (!(i & 15)) {
                pt_api_node_poll(g->ni); /* host mode: serve the peers meanwhile */
                if (arrived(&w))
                    return PTL_OK;
                if (pt_now_ns() - t0 > g->fl_spin_ns)
                    break;
            }
        }
    }
    struct pt_flagslot *mine = g->fl[g->me];
    ST_RELAXED(&mine->sleep, g->fl_base[g->me] + c);
    FENCE_FULL(); /* F-ANN: the announcement before the looks; pairs with F-WAKE */
    /* The seqs decide; the message only wakes. A wake put that failed (no
     * room, the peer timeout) costs at most FLAG_NAP_NS, never a hang. */
    int rc;
    while ((rc = pt_api_node_wait(g->ni, arrived, &w, FLAG_NAP_NS)) == PTL_EQ_EMPTY) {
        ptl_size_t gone = member_left(&w);
        if (gone < g->n) {
            pt_log(PT_LOG_WARN, "collective: member %zu of the group (pid %u) called "
                                "PtlNIFini without entering this call: PTL_FAIL",
                   (size_t)gone, (unsigned)g->ids[gone].pid);
            rc = PTL_FAIL;
            break;
        }
    }
    ST_RELAXED(&mine->sleep, 0); /* (a writer that still sees it sends one message more) */
    return rc;
}

int pt_coll_flag_call(struct group *g, int kind, ptl_size_t root, const void *in, void *out,
                      ptl_size_t bytes, ptl_coll_type_t t, ptl_coll_op_t op)
{
    ptl_size_t n = g->n, me = g->me;
    int rc = PTL_OK;
    if (!pt_api_node_alive(g->ni))
        return PTL_FAIL; /* PtlNIFini came first: the slots are unmapped */
    pthread_mutex_lock(&g->fl_lock);
    (void)pt_coll_enter(g);
    uint64_t c = ++g->fl_calls;
    struct pt_flagslot *mine = g->fl[me];
    uint64_t s = g->fl_base[me] + c;
    bool contributes = bytes && (kind == PT_FL_ALLREDUCE || kind == PT_FL_REDUCE ||
                                 (kind == PT_FL_BCAST && me == root));
    if (contributes) {
        /* F-REUSE: whoever read this buffer's last value (call wr) is done with
         * it once it entered call wr + 1 */
        uint64_t wr = g->fl_wr[s & 1];
        if (wr)
            rc = flag_wait(g, wr + 1, n);
        memcpy(mine->val[s & 1], in, bytes);
        g->fl_wr[s & 1] = c;
    }
    ST_RELEASE(&mine->seq, s); /* F-SEQ: the value first; pairs with A-SEQ */
    FENCE_FULL(); /* F-WAKE: our seq before the announcements; pairs with F-ANN */
    for (ptl_size_t i = 0; i < n; i++) {
        uint64_t a = i == me ? 0 : LD_RELAXED(&g->fl[i]->sleep);
        if (a && a - g->fl_base[i] <= c) /* i waits for a call we have entered */
            (void)PtlPut(g->nmd, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0,
                         mbits(g->gid, K_FAST, FLSEQ_WAKE, FT_WAKE), 0, 0);
    }
    /* whom this call waits for: everyone (barrier, allreduce, a reduce's
     * root), the root (a bcast's other members), nobody */
    bool all = kind == PT_FL_BARRIER || kind == PT_FL_ALLREDUCE ||
               (kind == PT_FL_REDUCE && me == root);
    if (rc == PTL_OK && (all || (kind == PT_FL_BCAST && me != root)))
        rc = flag_wait(g, c, all ? n : root);
    if (rc == PTL_OK && bytes && out && kind == PT_FL_BCAST && me != root) {
        memcpy(out, g->fl[root]->val[(g->fl_base[root] + c) & 1], bytes);
    } else if (rc == PTL_OK && bytes && out && all) {
        unsigned char acc[PT_FLAG_VAL];
        memcpy(acc, g->fl[0]->val[(g->fl_base[0] + c) & 1], bytes);
        for (ptl_size_t i = 1; i < n; i++)
            pt_atomic_combine((unsigned)op, (unsigned)t, acc,
                              g->fl[i]->val[(g->fl_base[i] + c) & 1], bytes);
        memcpy(out, acc, bytes);
    }
    pthread_mutex_unlock(&g->fl_lock);
    return rc == PTL_NI_INVALID ? PTL_FAIL : rc;
}
