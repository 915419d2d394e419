/*
 * eq.h - Portals event queue: a single-writer, multi-reader, lossy ring.
 *
 * Writer: the engine (whichever thread holds the engine token). Readers: any
 * API thread, in PtlEQGet/Wait/Poll/Peek. No locks on either side.
 *
 *   writer (event number w, slot w & mask)     reader
 *   ------                                     ------
 *   ST_RELAXED(stamp, 2w+1)   "busy"            r  = LD_ACQUIRE(read_count)
 *   FENCE_RELEASE             W1                s1 = LD_ACQUIRE(slot r's stamp) A1
 *   copy event words (relaxed)                  s1 <= 2r+1: empty (r not whole yet)
 *   ST_RELEASE(stamp, 2w+2)   R1                s1 >  2r+2: lapped: wc = LD_ACQUIRE
 *   ST_RELEASE(write_count, w+1)  R2              (write_count) A2; if wc - r > size:
 *                                                 r = wc - size (dropped); s1 = its stamp
 *                                               copy words (relaxed)
 *                                               FENCE_ACQUIRE                   A3
 *                                               s2 = LD_RELAXED(stamp)
 *                                               s1 == s2 == 2r+2 ? CAS read_count r -> r+1
 *                                               (the only reader: ST_RELEASE r+1)
 *                                               : the slot was overwritten: retry as dropped
 *
 * R1 pairs with A1 (the words are complete when the stamp says so); W1 pairs
 * with A3 (if the reader's copy raced a rewrite, it sees the new stamp); R2
 * pairs with A2. A reader that knows it is the only one (its process has one
 * API thread: engine/life.h, SO) stores read_count with release instead of
 * the CAS: nobody else claims, and the writer's acquire of read_count (room
 * for events, engine/event.c) pairs with either. A reader reads write_count only after a lap: the slot's
 * stamp alone says whether event r is there (the waiting protocol's D6/W2
 * recheck reads it too: R1 comes before the engine's D6 fence). A reader that finds more than `size` unread events skips to
 * the oldest surviving one and reports PTL_EQ_DROPPED (spec §6.10, libportals
 * returns the oldest survivor). Waking sleepers is the engine's job (one
 * check per poll, see engine), not eq_post's.
 */
#ifndef PT_EQ_H
#define PT_EQ_H

#include "pt_atomic.h"
#include <portals3.h>
#include <stdbool.h>
#include <string.h>

#define PT_EV_WORDS ((sizeof(ptl_event_t) + 7) / 8)

struct pt_eq_slot {
    _Atomic uint64_t stamp;
    uint64_t words[PT_EV_WORDS];
};

struct pt_eq {
    PT_ALIGNED _Atomic uint64_t write_count;  /* writer only; readers acquire */
    PT_ALIGNED _Atomic uint64_t read_count;   /* readers, claimed by CAS (or the
                                               * only reader's release store) */
    uint64_t size;                            /* power of two, fixed          */
    uint64_t mask;
    ptl_eq_handler_t handler;                 /* run by the reader after dequeue */
    struct pt_eq_slot *slots;
    _Atomic uint32_t overflow_warned;         /* readers: CAS 0->1 by the one that warns */
    struct pt_eq *next;                       /* the owner's list link (the engine's
                                               * rings to be freed: engine/eqobj.c) */
};

enum pt_eq_rc { PT_EQ_OK = 0, PT_EQ_DROPPED = 1, PT_EQ_EMPTY = 2 };

/* Create with room for at least `count` events (rounded up to 2^k). NULL on ENOMEM. */
struct pt_eq *pt_eq_create(uint64_t count, ptl_eq_handler_t handler);
void pt_eq_destroy(struct pt_eq *eq);

/* Writer only. Stamps ev->sequence with the event number and publishes it.
 * Overwrites the oldest unread event when full. Never blocks. */
void pt_eq_post(struct pt_eq *eq, ptl_event_t *ev);

/* The reader's copy goes straight into the caller's event; it is only
 * returned once the stamp check below says it is whole (on a failed check
 * the next try overwrites it). */
static inline void pt_eq_load_words(ptl_event_t *ev, const uint64_t *src)
{
#pragma GCC unroll 32
    for (size_t i = 0; i < PT_EV_WORDS; i++) {
        uint64_t x = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
        memcpy((char *)ev + 8 * i, &x, 8);
    }
}

_Static_assert(sizeof(ptl_event_t) % 8 == 0, "events are copied in whole words");

/* Any thread: the oldest available event, removed (consume) or not. Inline:
 * a reader's PtlEQGet/Wait reads one event per call, and the calls down to
 * it were about 20 instructions of each (callgrind). */
static inline enum pt_eq_rc pt_eq_read(struct pt_eq *eq, ptl_event_t *ev, bool consume,
                                       bool sole)
{
    for (;;) {
        uint64_t r = LD_ACQUIRE(&eq->read_count);
        /* The slot of event r says by its stamp whether r is there (2r+2),
         * not yet whole (2r+1, or an older event's: empty) or overwritten by
         * a later lap (above 2r+2: some events were lost). Only the last
         * needs write_count (A2): a reader that looks at the slot alone
         * leaves the writer's write_count line alone, which in offload mode
         * the NIC thread would otherwise fetch back from the reader's core
         * at every post (and wait for at its next fence). */
        struct pt_eq_slot *s = &eq->slots[r & eq->mask];
        uint64_t s1 = LD_ACQUIRE(&s->stamp); /* A1 pairs with R1 */
        uint64_t want = r;
        bool dropped = false;
        if (PT_UNLIKELY(s1 != 2 * r + 2)) {
            if (s1 <= 2 * r + 1)
                return PT_EQ_EMPTY; /* event r not posted whole yet */
            /* Lapped: events were lost iff the oldest survivor lies past our
             * read position. Decided afresh on every try: a reader that loses
             * the claim below must not carry a drop another reader will
             * report. */
            uint64_t wc = LD_ACQUIRE(&eq->write_count); /* A2 pairs with R2 */
            if (wc - r > eq->size)
                want = wc - eq->size; /* oldest survivor */
            dropped = want != r;
            s = &eq->slots[want & eq->mask];
            s1 = LD_ACQUIRE(&s->stamp); /* A1 pairs with R1 */
            if (s1 != 2 * want + 2) {
                CPU_RELAX(); /* being written, or overwritten since we looked: look again */
                continue;
            }
        }
        pt_eq_load_words(ev, s->words);
        FENCE_ACQUIRE(); /* A3 pairs with W1 */
        if (LD_RELAXED(&s->stamp) != s1)
            continue; /* overwritten while we copied: the next try skips ahead */
        if (consume && sole)
            ST_RELEASE(&eq->read_count, want + 1); /* the only reader: no claim to win */
        else if (consume && !RMW_CAS(&eq->read_count, &r, want + 1))
            continue; /* another reader took it (and reports any drop it skipped) */
        return dropped ? PT_EQ_DROPPED : PT_EQ_OK;
    }
}

/* Any thread. Removes the oldest available event. */
static inline enum pt_eq_rc pt_eq_get(struct pt_eq *eq, ptl_event_t *ev)
{
    return pt_eq_read(eq, ev, true, false);
}
/* The same for a caller that no other thread can race (the only reader,
 * until the caller says otherwise: engine/life.h, SO): no locked claim. */
static inline enum pt_eq_rc pt_eq_get_sole(struct pt_eq *eq, ptl_event_t *ev)
{
    return pt_eq_read(eq, ev, true, true);
}
/* Any thread. Like get, without removing. */
enum pt_eq_rc pt_eq_peek(struct pt_eq *eq, ptl_event_t *ev);
/* Any thread: no unread events (PtlMDUpdate's test). */
static inline bool pt_eq_empty(struct pt_eq *eq)
{
    return LD_ACQUIRE(&eq->write_count) == LD_ACQUIRE(&eq->read_count); /* A2 pairs with R2 */
}

#endif
