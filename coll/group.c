/*
 * group.c - collective groups (coll_int.h): PtlCollGroupCreate (the group's
 * id from its member list, its RTR MEs, the persistent path's set-up, the
 * hello that tells every member the others are ready, or the refusal of a
 * member that cannot hold it) and PtlCollGroupFree (teardown).
 */
#include "coll_int.h"
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HELLO_TIMEOUT_MS 30000

/* Member-list hashes created so far (with how many times): group ids. Every
 * member counts the creates of a list alike, so the k-th group over one
 * list has the same id everywhere, and kept for the life of the process
 * (a member that frees its group early must not count from 0 again while
 * another still holds it). Growable: a fixed table of 256 made the 257th
 * distinct list ever used fail with PTL_NO_SPACE for good, with no group
 * alive (an audit). 16 bytes per distinct list; under g_pt_coll_tab_lock. */
struct seen_list {
    uint64_t h, count;
};
static struct seen_list *seen;
static int nseen, seen_cap;

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

/* (The design: coll_int.h, "persistent path".) */

int pt_coll_attach_ct(struct group *g, ptl_process_id_t from, ptl_match_bits_t bits, void *buf,
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
/* drop_md for an MD whose last puts may still be queued (PTL_MD_IN_USE):
 * bounded (0.2 s), then left to PtlNIFini. */
static void drop_md_sent(ptl_handle_md_t h)
{
    struct timespec ts = {0, 100000};
    for (int k = 0; h != PTL_INVALID_HANDLE && k < 2000 && PtlMDUnlink(h) == PTL_MD_IN_USE; k++)
        nanosleep(&ts, NULL);
}

/* ---- byes (struct group, "Byes") ------------------------------------------- */

/* One PUT_END per member that frees the group: at most n - 1, capped (a bye
 * that finds the EQ full is dropped: PtlEQGet says PTL_EQ_DROPPED; that
 * member's absence is then left to the flag slots, or the wait waits). */
#define BYE_EQ_MAX 1024

/* A bye that no group's bye ME takes (the group freed here already, or
 * never made here) must be taken at once: the engine holds an unmatched
 * request up to PTL_NOMATCH_WAIT_US (20 ms) for an entry that may be coming,
 * and its sender's later messages behind it, so every free of a member
 * that freed last cost the others 20 ms on its next group's hello (mp_coll
 * lists: 4 s -> 46 s). One sink per NI, made with its first group: an ME
 * that takes every bye, whatever the group id (ignore bits: the id's 24
 * bits and the 30 more of it a bye carries, bye_bits), into a 0-byte
 * MD with no EQ. Each group's bye ME is inserted just before it, so it sees
 * its own byes first. Under g_pt_coll_tab_lock; an NI's handle is new after
 * PtlNIFini (generational), so a stale entry never matches. */
#define BYE_SINKS 4
static struct {
    ptl_handle_ni_t ni;
    ptl_handle_me_t me;
} bye_sinks[BYE_SINKS];
static unsigned bye_sink_next;

static int bye_sink(struct group *g, ptl_handle_me_t *out)
{
    int rc = PTL_OK;
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    int k = 0;
    while (k < BYE_SINKS && !(bye_sinks[k].me != 0 && bye_sinks[k].ni == g->ni))
        k++;
    if (k == BYE_SINKS) {
        const ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
        ptl_md_t d = {NULL, 0, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT, NULL, PTL_EQ_NONE};
        ptl_handle_me_t me;
        ptl_handle_md_t md;
        rc = PtlMEAttach(g->ni, g->pt, any, mbits(0, K_HELLO, 0, HELLO_BYE),
                         mbits(~0ull, 0, ~0ull, 0), PTL_RETAIN, PTL_INS_AFTER, &me);
        if (rc == PTL_OK && (rc = PtlMDAttach(me, d, PTL_RETAIN, &md)) != PTL_OK)
            PtlMEUnlink(me);
        if (rc == PTL_OK) {
            k = (int)(bye_sink_next++ % BYE_SINKS);
            bye_sinks[k].ni = g->ni;
            bye_sinks[k].me = me;
        }
    }
    if (rc == PTL_OK)
        *out = bye_sinks[k].me;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    return rc;
}

static void bye_sink_drop(ptl_handle_me_t me)
{
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    for (int k = 0; k < BYE_SINKS; k++)
        if (bye_sinks[k].me == me)
            bye_sinks[k].me = 0;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
}

static int bye_setup(struct group *g)
{
    if (g->n < 2)
        return PTL_OK;
    g->bye = malloc(g->n * sizeof *g->bye);
    if (!g->bye)
        return PTL_NO_SPACE;
    for (ptl_size_t i = 0; i < g->n; i++)
        g->bye[i] = UINT64_MAX;
    ptl_size_t cap = g->n - 1 < BYE_EQ_MAX ? g->n - 1 : BYE_EQ_MAX;
    int rc = PtlEQAlloc(g->ni, cap, PTL_EQ_HANDLER_NONE, &g->bye_eq);
    if (rc != PTL_OK) {
        g->bye_eq = PTL_EQ_NONE;
        return rc;
    }
    const ptl_process_id_t any = {.nid = PTL_NID_ANY, .pid = PTL_PID_ANY};
    ptl_handle_me_t sink = PTL_INVALID_HANDLE;
    for (int tries = 0; tries < 2; tries++) {
        rc = bye_sink(g, &sink);
        if (rc == PTL_OK)
            rc = PtlMEInsert(sink, any, bye_bits(g->gid), 0, PTL_RETAIN, PTL_INS_BEFORE,
                             &g->bye_me);
        if (rc != PTL_ME_INVALID)
            break;
        bye_sink_drop(sink); /* unlinked under us (not by us): a new one */
    }
    ptl_md_t d = {NULL, 0, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE,
                  NULL, g->bye_eq};
    ptl_handle_md_t md;
    if (rc == PTL_OK)
        rc = PtlMDAttach(g->bye_me, d, PTL_RETAIN, &md);
    return rc;
}

/* Tell every other member we leave, and after how many calls: a 0-byte put
 * each, hdr_data = c, the calls we completed (PtlCollGroupFree: every call
 * entered, pt_coll_enter's count, since none is in flight, it checked;
 * PtlNIFini: those before the first still in flight, bye_at_fini). A
 * member that freed the group already takes it into its sink (bye_sink).
 * at_fini: from the PtlNIFini hook, which does not wait for them to leave. */
static void say_bye(struct group *g, bool at_fini, uint64_t c)
{
    g->bye_said = true;
    /* An MD of their own, unlinked once they left (bounded): nmd may stay
     * busy with triggered RTRs that never fire (left to PtlNIFini, as
     * before), and waiting for it cost every free 0.2 s. */
    ptl_md_t z = {NULL, 0, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    ptl_handle_md_t md;
    if (g->n < 2 || PtlMDBind(g->ni, z, PTL_RETAIN, &md) != PTL_OK)
        return; /* the NI is gone or out of room: nobody hears more from us */
    for (ptl_size_t i = 0; i < g->n; i++)
        if (i != g->me &&
            PtlPut(md, PTL_NO_ACK_REQ, g->ids[i], g->pt, 0, bye_bits(g->gid), 0, c) != PTL_OK)
            break; /* the NI failed */
    if (at_fini)
        PtlMDUnlink(md); /* or left to the NI's teardown, which flushes the puts */
    else
        drop_md_sent(md);
}

/* Take the byes that came into bye[] (under bye_lock). */
static void bye_drain(struct group *g)
{
    ptl_event_t ev;
    int rc;
    while ((rc = PtlEQGet(g->bye_eq, &ev)) == PTL_OK || rc == PTL_EQ_DROPPED) {
        if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK)
            continue;
        for (ptl_size_t i = 0; i < g->n; i++) /* O(n), once per bye */
            if (i != g->me && same_id(g->ids[i], ev.initiator)) {
                if (ev.hdr_data < g->bye[i])
                    g->bye[i] = ev.hdr_data;
                break;
            }
    }
}

/* PtlNIFini of ni (api/node.c, before the NI goes): every live group of
 * it that has not said bye says it now, so that a member that closes its NI
 * without freeing its groups is seen by those with no flag slots (other
 * hosts) as PtlCollGroupFree's bye shows it. Its count is the calls it
 * completed: those before the first still in flight, if one is (a
 * nonblocking call entered and never completed: its part of the later
 * rounds never goes, and its peers waited for ever, flag slots and byes
 * alike, mp_coll_departed_pending). With flag slots the same count goes to
 * our slot's calls word, which the members read once they see us gone
 * (req.c left_before: A-CALLS after A-LEFT; the NI's close, after this, is
 * the release). Such a peer's call then fails, also where our part of it
 * had all left (the counters cannot say whose part a stalled call lacks):
 * the program was erroneous, and a failure is what its peers can be told. */
static void bye_at_fini(ptl_handle_ni_t ni)
{
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    for (int i = 0; i < COLL_MAX_GROUPS; i++) {
        struct group *g = &g_pt_coll_groups[i];
        if (!g->used || !g->live || g->ni != ni || g->n < 2)
            continue;
        uint64_t c = LD_RELAXED(&g->calls), first = pt_coll_first_pending(g);
        if (first <= c) {
            c = first - 1;
            if (g->fl_on && pt_api_node_alive(g->ni))
                ST_RELAXED(&g->fl[g->me]->calls, c);
        }
        if (!g->bye_said)
            say_bye(g, true, c); /* no 0.2 s per group at PtlNIFini: its flush sends them */
    }
    for (int k = 0; k < BYE_SINKS; k++) /* the NI's sink goes with it */
        if (bye_sinks[k].ni == ni)
            bye_sinks[k].me = 0;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
}

ptl_size_t pt_coll_bye_before(struct group *g, uint64_t c)
{
    if (g->bye_eq == PTL_EQ_NONE)
        return g->n;
    ptl_size_t who = g->n;
    pthread_mutex_lock(&g->bye_lock);
    bye_drain(g);
    for (ptl_size_t i = 0; i < g->n && who == g->n; i++)
        if (i != g->me && g->bye[i] < c)
            who = i;
    pthread_mutex_unlock(&g->bye_lock);
    return who;
}

/* Member i freed the group: nothing more comes from it (what it sent before
 * its bye has landed: one pair's messages arrive in order). */
static bool said_bye(struct group *g, ptl_size_t i)
{
    if (g->bye_eq == PTL_EQ_NONE)
        return false;
    pthread_mutex_lock(&g->bye_lock);
    bye_drain(g);
    bool said = g->bye[i] != UINT64_MAX;
    pthread_mutex_unlock(&g->bye_lock);
    return said;
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
            rc = pt_coll_attach_ct(g, g->ids[g->me ^ 1],
                                   mbits(g->gid, K_FAST, PSEQ_BASE + (uint64_t)s, FT_PAIR),
                                   f->mem + sm, sm, &f->cnt[0], &f->me[0]);
    }
    return rc;
}

/* The slot bcast's slots (see slot_bcast): per slot an MD (its sends count
 * into sent[s]) and an ME from any member (data puts counted into cnt[s]);
 * per peer a 0-byte ME counting its start signals into start[P]. */
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
            rc = pt_coll_attach_ct(g, g->ids[i], mbits(g->gid, K_FAST, PBSEQ_START, FT_PBC),
                                   NULL, 0, &b->start[i], &b->start_me[i]);
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
            rc = pt_coll_attach_ct(g, any,
                                   mbits(g->gid, K_FAST, PBSEQ_BASE + (uint64_t)s, FT_PBC), slot,
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
        rc = pt_coll_attach_ct(g, g->ids[src], mbits(g->gid, K_FAST, FSEQ_BAR, (unsigned)k),
                               NULL, 0, &g->barr[k], &g->bme[k]);
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
            rc = pt_coll_attach_ct(g, g->ids[me - g->p2],
                                   mbits(g->gid, K_FAST, (uint64_t)s, FT_RES), f->mem + sm, sm,
                                   &f->cnt[0], &f->me[0]);
            continue;
        }
        int extra = me + g->p2 < n;
        if (extra)
            rc = pt_coll_attach_ct(g, g->ids[me + g->p2],
                                   mbits(g->gid, K_FAST, (uint64_t)s, FT_FOLD), f->mem, sm,
                                   &f->cnt[0], &f->me[0]);
        for (int k = 1; rc == PTL_OK && k <= g->ra; k++)
            rc = pt_coll_attach_ct(g, any, mbits(g->gid, K_FAST, (uint64_t)s, (unsigned)k),
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
    pt_coll_flag_teardown(g);
    fast_teardown(g);
    drop_me(g->bye_me); /* and its MD */
    if (g->bye_eq != PTL_EQ_NONE)
        PtlEQFree(g->bye_eq);
    free(g->bye);
    pthread_mutex_destroy(&g->bye_lock);
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
    pt_coll_req_cache_drop(g);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    g->used = 0;
    g->gen++;
    state_set(&g_pt_coll_gstate[g - g_pt_coll_groups], g->gen, 0);
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
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

    pthread_mutex_lock(&g_pt_coll_tab_lock);
    int idx = -1, si = -1;
    for (int i = 0; i < COLL_MAX_GROUPS; i++)
        if (!g_pt_coll_groups[i].used) {
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
        pthread_mutex_unlock(&g_pt_coll_tab_lock);
        return PTL_NO_SPACE;
    }
    uint64_t gid = (h ^ h >> 24 ^ h >> 48) + seen[si].count++ * 0x9e37ull;
    /* The match bits hold 24 bits of the id: two lists can give a live group
     * here and this one the same bits (8 ranks: a 5-member list's 7th create
     * and a 4-member list's first), and their messages then land in each
     * other's MEs (an adversarial client: both groups' calls hung). The
     * members cannot pick another id alone, so this one refuses: every
     * member's create returns PTL_NO_SPACE, and the next create over the
     * list (its count moved on everywhere) has another id. */
    for (int i = 0; i < COLL_MAX_GROUPS && idx >= 0; i++)
        if (g_pt_coll_groups[i].used && g_pt_coll_groups[i].ni == ni &&
            ((g_pt_coll_groups[i].gid ^ gid) & 0xffffffull) == 0)
            idx = -1;
    if (idx < 0) {
        pthread_mutex_unlock(&g_pt_coll_tab_lock);
        return refuse(ni, members, n, me, gid);
    }
    struct group *g = &g_pt_coll_groups[idx];
    uint32_t gen = g->gen;
    memset(g, 0, sizeof *g);
    g->gen = gen;
    g->used = 1;
    if (pt_wrap_n()) /* PTL_TEST_WRAP: the call sequence's 30 bits in the match bits */
        g->seq = (1ull << 30) - (pt_wrap_n() < 8 ? pt_wrap_n() : 8);
    state_set(&g_pt_coll_gstate[idx], gen, 1);
    g->gid = gid;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    pt_coll_flag_init(g);

    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->bye_lock, NULL);
    g->bye_eq = PTL_EQ_NONE;
    g->bye_me = PTL_INVALID_HANDLE;
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
    if (rc == PTL_OK)
        rc = pt_coll_flag_setup(g);
    if (rc == PTL_OK)
        rc = bye_setup(g); /* before the hello: a member may leave right after it */
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
    pt_coll_flag_join(g);
    pt_api_node_on_fini(bye_at_fini);
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    g->live = true;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    *out = enc(g->gen, idx);
    return PTL_OK;
}

/* Every start signal the peers will send (one per PB_SIG slot bcasts) has
 * come, so that none arrives after its ME is gone; not waited for from a
 * peer that said bye (it sends no more), and bounded for a peer that left
 * without making the calls and without a bye (30 s: before byes, that wait
 * followed every call failed for a member that freed the group). */
static void pb_drain(struct group *g)
{
    struct pbc *b = g->pb;
    uint64_t t0 = now_ms();
    for (ptl_size_t i = 0; b && i < g->n; i++) {
        ptl_ct_event_t ev;
        for (unsigned k = 0; i != g->me && PtlCTGet(b->start[i], &ev) == PTL_OK &&
                             ev.success < b->seq / PB_SIG && !ev.failure &&
                             now_ms() - t0 <= HELLO_TIMEOUT_MS;
             k++) {
            if (k % 64 == 0 && said_bye(g, i)) /* at once, then every ~2-5 ms */
                break;
            sleep_us(20);
        }
    }
}

int PtlCollGroupFree(ptl_handle_coll_t h)
{
    struct group *g = pt_coll_group_get(h);
    if (!g)
        return PTL_HANDLE_INVALID;
    pthread_mutex_lock(&g->lock);
    int busy = g->inflight;
    pthread_mutex_unlock(&g->lock);
    if (!busy && pthread_mutex_trylock(&g->fl_lock) == 0) /* a blocking flag-path call */
        pthread_mutex_unlock(&g->fl_lock);
    else
        busy = 1;
    if (busy)
        return PTL_ME_IN_USE; /* requests of the group are not completed */
    pthread_mutex_lock(&g_pt_coll_tab_lock);
    g->live = false; /* the PtlNIFini hook leaves it alone from here */
    bool said = g->bye_said;
    pthread_mutex_unlock(&g_pt_coll_tab_lock);
    if (!said)
        say_bye(g, false, LD_RELAXED(&g->calls));
    pb_drain(g);
    group_teardown(g);
    return PTL_OK;
}
