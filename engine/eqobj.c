/*
 * eqobj.c - EQ objects of an NI: create and free (the ring itself is eq/).
 *
 * API threads read an EQ's ring without the token (PtlEQGet/Wait/Poll/Peek),
 * so PtlEQFree cannot free it at once. It retires the EQ: the tag dies (no
 * thread resolves the handle from then on) and the slot joins `eq_retired`.
 * The ring is freed, and the slot queued for reuse, after a grace period
 * (life.h): the engine fences (L-F), notes every thread that is IN a call,
 * and waits until each has left that call. A thread not noted entered after
 * the fence and sees the tag dead (L-E / L-F); a thread asleep in a wait is
 * PARKED, holds no ring, and resolves its handles again when it wakes. The
 * slot is not reused before then, so a reader that saw the tag live reads
 * the same `q` until it leaves.
 */
#include "nic.h"

/* API thread, outside the engine: the ring of a new EQ. Its memory can be
 * large (PtlEQAlloc(1 << 24): 2 GiB of address space); making it here keeps
 * the engine from stalling every rank's traffic while it is allocated. */
struct pt_eq *pt_eq_prepare(uint64_t count, ptl_eq_handler_t handler)
{
    if (count > (1u << 24))
        return NULL;
    return pt_eq_create(count, handler);
}

void pt_eq_discard(struct pt_eq *q) { pt_eq_destroy(q); }

/* Engine: give a prepared ring a slot and a handle. On failure the caller
 * still owns q. */
int pt_eq_cmd_alloc(struct pt_nic *nic, struct pt_eq *q, uint32_t *h_p)
{
    struct pt_eqo *e = pt_eqo_alloc(nic);
    if (!e && (nic->eq_retired || nic->eq_waiting)) {
        pt_eq_reclaim(nic, false); /* every slot used, some retired: try to free them */
        e = pt_eqo_alloc(nic);
    }
    if (!e)
        return PT_E_NOSPACE;
    e->q = q;
    e->rd_cached = LD_RELAXED(&q->read_count); /* 0, or PTL_TEST_WRAP's start */
    e->room_since = 0;
    e->rd_gave_up = UINT64_MAX;
    e->owed = 0;
    nic->sr[PTL_SR_EQS_ALLOC]++;
    pt_obj_publish(&e->tag); /* q is visible before the handle validates */
    *h_p = pt_eqo_handle(nic, e);
    return PT_OK;
}

int pt_eq_cmd_free(struct pt_nic *nic, uint32_t h)
{
    struct pt_eqo *e = pt_eqo_lookup(nic, h);
    if (!e)
        return PT_E_BADEQ;
    /* REF frees regardless of MDs still naming it; events for it are then
     * dropped at post time (event.c looks the handle up). */
    pt_eqo_retire(nic, e);
    e->next_free = nic->eq_retired;
    nic->eq_retired = e->idx + 1;
    /* Waiters on it must return PTL_EQ_INVALID: the tag is their event (D6
     * at the end of this poll wakes the sleepers; they recheck). */
    nic->events_posted = true;
    pt_eq_reclaim(nic, false);
    return PT_OK;
}

/* Token holder: set a ring aside for an API thread to free. */
static void trash_push(struct pt_nic *nic, struct pt_eq *q)
{
    struct pt_eq *old = LD_RELAXED(&nic->eq_trash);
    do
        q->next = old;
    while (!RMW_CAS(&nic->eq_trash, &old, q)); /* pairs with the drain's XCHG */
}

void pt_eq_trash_drain(struct pt_nic *nic)
{
    if (!LD_RELAXED(&nic->eq_trash))
        return;
    struct pt_eq *q = RMW_XCHG(&nic->eq_trash, NULL); /* the whole list is ours */
    while (q) {
        struct pt_eq *next = q->next;
        pt_eq_destroy(q);
        q = next;
    }
}

/* Free a list of retired EQs: the rings (set aside for an API thread, or at
 * teardown freed here), and the slots to the free queue. */
static void free_list(struct pt_nic *nic, uint32_t head, bool requeue)
{
    while (head) {
        struct pt_eqo *e = &nic->eqs[head - 1];
        head = e->next_free;
        if (requeue)
            trash_push(nic, e->q);
        else
            pt_eq_destroy(e->q);
        e->q = NULL;
        if (requeue)
            pt_eqo_enqueue(nic, e);
    }
}

void pt_eq_reclaim(struct pt_nic *nic, bool all)
{
    if (all) { /* teardown: no thread is inside any more */
        free_list(nic, nic->eq_waiting, false);
        free_list(nic, nic->eq_retired, false);
        nic->eq_waiting = nic->eq_retired = 0;
        pt_life_snap_free(&nic->eq_grace);
        return;
    }
    for (;;) {
        if (nic->eq_waiting) {
            if (!pt_life_snap_passed(&nic->eq_grace))
                return;
            free_list(nic, nic->eq_waiting, true);
            nic->eq_waiting = 0;
        }
        if (!nic->eq_retired)
            return;
        /* L-F: the retired tags (obj_free's ST_RELEASE) before reading the
         * words; pairs with each thread's L-E (life.h). */
        pt_membar_heavy();
        if (!pt_life_snap_take(&nic->eq_grace))
            return; /* no memory for the note: next time */
        nic->eq_waiting = nic->eq_retired;
        nic->eq_retired = 0;
    }
}
