/*
 * ct.c - counting events and triggered operations (include/portals3_ext.h).
 * Engine-owned: every function here runs on the token holder (the NIC thread
 * in offload mode, a thread inside a Ptl call in host mode).
 *
 * Per NI: a table of CTs (obj.c: typed, generational handles like the other
 * objects) and a table of PTL_TRIG_SLOTS triggered operations (struct
 * pt_trig) on a free list. An armed operation sits on its CT's list, ordered
 * by threshold (equal thresholds in arming order; appending at the tail is
 * O(1), the usual case). Whenever a CT's success count changes (an MD bound to
 * it completed an operation, PtlCTInc/PtlCTSet, a triggered CTInc/CTSet),
 * ct_check compares the list's head with it and moves every operation now due,
 * in order, to the NI's ready FIFO: O(1) when nothing is due, and no
 * recursion (nothing runs from inside an event post). The poll loop runs the
 * FIFO (pt_trig_run) through the same handlers as commands from the rings;
 * an operation that cannot proceed (no credits: AGAIN) stays at the head and
 * is retried on the next poll. What a fired operation makes due is appended
 * and runs in the same pass (chains), up to PT_TRIG_BATCH per poll.
 *
 * Slots: an API thread reserves one (trig_used, RMW) before it posts the arm
 * command, so the engine always finds a free slot, and a full table is
 * PTL_NO_SPACE at the call; the engine gives the reservation back when it
 * frees the slot (run, dropped, or its CT freed).
 *
 * No allocation, lock, system call or logging after pt_ct_init.
 */
#include "nic.h"
#include "pages.h"

#include <portals3_ext.h>
#include <stdlib.h>
#include <string.h>

#define PT_TRIG_BATCH 64 /* fired operations run per poll */

static void trig_grow(struct pt_nic *nic)
{
    uint32_t end = nic->trig_hwm + PT_LAZY_CHUNK < nic->trig_n ? nic->trig_hwm + PT_LAZY_CHUNK
                                                                : nic->trig_n;
    for (uint32_t i = end; i-- > nic->trig_hwm;) {
        nic->trigs[i].next = nic->trig_free;
        nic->trig_free = i + 1;
    }
    nic->trig_hwm = end;
}

int pt_ct_init(struct pt_nic *nic, uint32_t max_cts, uint32_t trig_slots)
{
    (void)max_cts; /* the CT table is made with the other object tables (obj.c) */
    nic->trigs = pt_pages_zalloc(trig_slots * sizeof *nic->trigs); /* pages.h */
    nic->ascratch = malloc(PT_ATOMIC_SCRATCH); /* pages touched at first use */
    if (!nic->trigs || !nic->ascratch) {
        pt_pages_free(nic->trigs, trig_slots * sizeof *nic->trigs);
        free(nic->ascratch);
        nic->trigs = NULL;
        nic->ascratch = NULL;
        return PT_E_NOSPACE;
    }
    nic->trig_n = trig_slots;
    nic->trig_free = 0;
    nic->trig_hwm = 0;
    trig_grow(nic); /* the rest as they are needed (nic.h, PT_LAZY_CHUNK) */
    return PT_OK;
}

/* Operations still armed (or fired and not run) go with the table. */
void pt_ct_fini(struct pt_nic *nic)
{
    pt_pages_free(nic->trigs, nic->trig_n * sizeof *nic->trigs);
    nic->trigs = NULL;
    free(nic->ascratch);
    nic->ascratch = NULL;
}

static inline struct pt_trig *trig_at(struct pt_nic *nic, uint32_t s) { return &nic->trigs[s - 1]; }

static void trig_free(struct pt_nic *nic, uint32_t s)
{
    trig_at(nic, s)->next = nic->trig_free;
    nic->trig_free = s;
    RMW_SUB(&nic->trig_used, 1); /* the API thread's reservation, given back */
}

static void ready_push(struct pt_nic *nic, uint32_t s)
{
    trig_at(nic, s)->next = 0;
    if (nic->trig_rtail)
        trig_at(nic, nic->trig_rtail)->next = s;
    else
        nic->trig_rhead = s;
    nic->trig_rtail = s;
    ST_RELAXED(&nic->trig_nready, LD_RELAXED(&nic->trig_nready) + 1);
}

/* Every operation armed on ct that is now due goes to the ready FIFO. */
static void ct_check(struct pt_nic *nic, struct pt_ct *ct)
{
    uint64_t s = LD_RELAXED(&ct->success);
    while (ct->armed && trig_at(nic, ct->armed)->thr <= s) {
        uint32_t t = ct->armed;
        ct->armed = trig_at(nic, t)->next;
        if (!ct->armed)
            ct->armed_tail = 0;
        ct->narmed--;
        ready_push(nic, t);
    }
}

static void ct_store(struct pt_nic *nic, struct pt_ct *ct, uint64_t s, uint64_t f)
{
    ST_RELEASE(&ct->failure, f);
    ST_RELEASE(&ct->success, s);
    nic->events_posted = true; /* D6 at the end of the poll: PtlCTWait sleepers recheck */
    ct_check(nic, ct);
}

void pt_ct_count(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind, bool failed)
{
    static const uint8_t kind_opt[PTL_EVENT_UNLINK + 1] = {
        [PTL_EVENT_GET_END] = PTL_CT_COMM,    [PTL_EVENT_PUT_END] = PTL_CT_COMM,
        [PTL_EVENT_GETPUT_END] = PTL_CT_COMM, [PTL_EVENT_REPLY_END] = PTL_CT_REPLY,
        [PTL_EVENT_SEND_END] = PTL_CT_SEND,   [PTL_EVENT_ACK] = PTL_CT_ACK,
    };
    if ((unsigned)kind > PTL_EVENT_UNLINK || !(kind_opt[kind] & md->ct_opts))
        return;
    struct pt_ct *ct = pt_ct_lookup(nic, md->ct_h);
    if (!ct)
        return; /* the CT was freed under the MD: nothing to count into */
    uint64_t s = LD_RELAXED(&ct->success), f = LD_RELAXED(&ct->failure);
    if (failed)
        ct_store(nic, ct, s, f + 1);
    else
        ct_store(nic, ct, s + 1, f);
}

/* ---- commands -------------------------------------------------------------- */

int pt_ct_cmd_alloc(struct pt_nic *nic, uint32_t *h_p)
{
    struct pt_ct *ct = pt_ct_alloc(nic);
    if (!ct)
        return PT_E_NOSPACE;
    ST_RELAXED(&ct->success, 0);
    ST_RELAXED(&ct->failure, 0);
    ct->armed = ct->armed_tail = 0;
    ct->narmed = 0;
    pt_obj_publish(&ct->tag); /* R1: the body before the tag */
    *h_p = pt_ct_handle(nic, ct);
    return PT_OK;
}

/* Operations still armed on it are dropped: they can never fire. */
int pt_ct_cmd_free(struct pt_nic *nic, uint32_t h)
{
    struct pt_ct *ct = pt_ct_lookup(nic, h);
    if (!ct)
        return PT_E_BADCT;
    while (ct->armed) {
        uint32_t s = ct->armed;
        ct->armed = trig_at(nic, s)->next;
        trig_free(nic, s);
    }
    ct->armed_tail = 0;
    ct->narmed = 0;
    pt_ct_release(nic, ct);
    nic->events_posted = true; /* PtlCTWait sleepers wake and find it gone */
    return PT_OK;
}

int pt_ct_cmd_op(struct pt_nic *nic, const struct pt_cmd *c)
{
    struct pt_ct *ct = pt_ct_lookup(nic, c->u.ct.ct);
    if (!ct)
        return PT_E_BADCT; /* a triggered one whose CT was freed: dropped */
    if (c->u.ct.set)
        ct_store(nic, ct, c->u.ct.success, c->u.ct.failure);
    else
        ct_store(nic, ct, LD_RELAXED(&ct->success) + c->u.ct.success,
                 LD_RELAXED(&ct->failure) + c->u.ct.failure);
    return PT_OK;
}

int pt_md_cmd_ct(struct pt_nic *nic, uint32_t md_h, uint32_t ct_h, uint32_t opts)
{
    struct pt_md *md = pt_md_lookup(nic, md_h);
    if (!md)
        return PT_E_BADMD;
    if (ct_h == PTL_CT_NONE) {
        md->ct_h = 0;
        md->ct_opts = 0;
        return PT_OK;
    }
    if (!pt_ct_lookup(nic, ct_h))
        return PT_E_BADCT;
    md->ct_h = ct_h;
    md->ct_opts = (uint8_t)opts;
    return PT_OK;
}

/* Arm command c (PT_CF_TRIG) on its CT; due already: ready at once. Due
 * already with nothing fired before it still waiting (the ready FIFO empty):
 * run now, in its place among the commands, without a slot (a collective's
 * first send, whose threshold is 0: a 2-member barrier's PtlCollIbarrier,
 * host mode, 1,935 -> 1,865 instructions per call, callgrind); out of credits, it waits in the
 * ready FIFO like any other. */
int pt_trig_arm(struct pt_nic *nic, const struct pt_cmd *c)
{
    if (!nic->trig_rhead) {
        struct pt_ct *ct = pt_ct_lookup(nic, c->trig_ct);
        if (ct && LD_RELAXED(&ct->success) >= c->trig_thr) {
            struct pt_cmd now;
            memcpy(&now, c, sizeof now);
            now.flags &= (uint16_t)~PT_CF_TRIG;
            now.done = NULL;
            if (pt_cmd_dispatch(nic, &now) != PT_E_AGAIN) {
                RMW_SUB(&nic->trig_used, 1); /* the API thread's reservation, unused */
                return PT_OK;
            }
        }
    }
    uint32_t s = nic->trig_free;
    if (!s) { /* every API arm reserved a slot: only a forged command gets here */
        nic->sr[PTL_SR_DROP_COUNT]++;
        return PT_OK;
    }
    struct pt_trig *t = trig_at(nic, s);
    nic->trig_free = t->next;
    if (!nic->trig_free && nic->trig_hwm < nic->trig_n)
        trig_grow(nic);
    struct pt_ct *ct = pt_ct_lookup(nic, c->trig_ct);
    if (!ct) { /* freed after the call checked it: it can never fire */
        trig_free(nic, s);
        return PT_OK;
    }
    memcpy(&t->cmd, c, sizeof *c);
    t->cmd.flags &= (uint16_t)~PT_CF_TRIG;
    t->cmd.done = NULL;
    t->thr = c->trig_thr;
    if (LD_RELAXED(&ct->success) >= t->thr) {
        ready_push(nic, s);
        return PT_OK;
    }
    if (!ct->armed_tail || trig_at(nic, ct->armed_tail)->thr <= t->thr) { /* append */
        t->next = 0;
        if (ct->armed_tail)
            trig_at(nic, ct->armed_tail)->next = s;
        else
            ct->armed = s;
        ct->armed_tail = s;
    } else { /* before the first with a higher threshold */
        uint32_t *pp = &ct->armed;
        while (trig_at(nic, *pp)->thr <= t->thr)
            pp = &trig_at(nic, *pp)->next;
        t->next = *pp;
        *pp = s;
    }
    ct->narmed++;
    return PT_OK;
}

int pt_trig_run(struct pt_nic *nic)
{
    int work = 0;
    while (nic->trig_rhead && work < PT_TRIG_BATCH) {
        uint32_t s = nic->trig_rhead;
        struct pt_trig *t = trig_at(nic, s);
        if (pt_cmd_dispatch(nic, &t->cmd) == PT_E_AGAIN)
            break; /* no credits now: first in line at the next poll */
        /* read next only now: the operation may have appended to the FIFO */
        nic->trig_rhead = t->next;
        if (!nic->trig_rhead)
            nic->trig_rtail = 0;
        ST_RELAXED(&nic->trig_nready, LD_RELAXED(&nic->trig_nready) - 1);
        trig_free(nic, s);
        work++;
    }
    return work;
}

/* ---- reductions ------------------------------------------------------------ */

size_t pt_atomic_size(unsigned type)
{
    switch (type) {
    case PTL_INT32_T: return 4;
    case PTL_INT64_T: return 8;
    case PTL_UINT64_T: return 8;
    case PTL_FLOAT: return 4;
    case PTL_DOUBLE: return 8;
    default: return 0;
    }
}

bool pt_atomic_valid(unsigned op, unsigned type)
{
    if (!pt_atomic_size(type) || op > PTL_BXOR)
        return false;
    return op <= PTL_MAX || type == PTL_INT32_T || type == PTL_INT64_T || type == PTL_UINT64_T;
}

