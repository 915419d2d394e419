/*
 * spsc.h - single-producer single-consumer ring of fixed-size slots.
 *
 * Usable in private memory (API thread -> engine command rings) and, in
 * slot-sequence mode (below), in the shared job region (per-sender receive
 * queues): the header holds no pointers, the slot array is passed in by the
 * caller.
 *
 *   producer                                 consumer
 *   --------                                 --------
 *   slot = spsc_reserve()  (checks cached     slot = spsc_peek()   A1: LD_ACQUIRE(head)
 *          tail, refreshes A2 on "full")      ... read slot ...
 *   ... fill slot ...                         spsc_release()       R2: ST_RELEASE(tail)
 *   spsc_commit()         R1: ST_RELEASE(head)
 *
 * R1 pairs with A1: the slot body is visible before the consumer sees head move.
 * R2 pairs with A2: the consumer is done reading a slot before the producer
 * reuses it. Indexes are free-running 32-bit counters; size is a power of two;
 * a slot is index & mask. Producer and consumer fields sit on separate cache
 * lines, and each side caches the other's index, touching the remote line only
 * when the ring looks full (producer) or empty (consumer).
 *
 * Who writes what: head and prod_cached_tail by the producer only; tail and
 * cons_cached_head by the consumer only. (In a shared region anyone can; see
 * slot-sequence mode for what each side then trusts.)
 */
#ifndef PT_SPSC_H
#define PT_SPSC_H

#include "pt_atomic.h"
#include <stdbool.h>

struct spsc_hdr {
    PT_ALIGNED _Atomic uint32_t head;    /* producer: next slot to fill   */
    uint32_t prod_cached_tail;           /* producer-private              */
    uint32_t mask;                       /* written once at init          */
    uint32_t slot_size;                  /* bytes, written once at init   */
    PT_ALIGNED _Atomic uint32_t tail;    /* consumer: next slot to read   */
    uint32_t cons_cached_head;           /* consumer-private              */
};
_Static_assert(sizeof(struct spsc_hdr) == 2 * PT_CACHELINE,
               "spsc_hdr: producer and consumer fields must own one cache line each");

static inline void spsc_init(struct spsc_hdr *r, uint32_t nslots, uint32_t slot_size)
{
    ST_RELAXED(&r->head, 0);
    ST_RELAXED(&r->tail, 0);
    r->prod_cached_tail = 0;
    r->cons_cached_head = 0;
    r->mask = nslots - 1;
    r->slot_size = slot_size;
}

static inline void *spsc_slot(const struct spsc_hdr *r, void *slots, uint32_t idx)
{
    return (char *)slots + (size_t)(idx & r->mask) * r->slot_size;
}

/* Producer: a free slot to fill in place, or NULL when full. */
static inline void *spsc_reserve(struct spsc_hdr *r, void *slots)
{
    uint32_t h = LD_RELAXED(&r->head);
    if (h - r->prod_cached_tail > r->mask) {
        r->prod_cached_tail = LD_ACQUIRE(&r->tail); /* A2 pairs with R2 */
        if (h - r->prod_cached_tail > r->mask)
            return NULL;
    }
    return spsc_slot(r, slots, h);
}

/* Producer: publish the slot returned by spsc_reserve(). */
static inline void spsc_commit(struct spsc_hdr *r)
{
    ST_RELEASE(&r->head, LD_RELAXED(&r->head) + 1); /* R1 pairs with A1 */
}

/* Producer: number of free slots (refreshes the cached tail). */
static inline uint32_t spsc_free(struct spsc_hdr *r)
{
    r->prod_cached_tail = LD_ACQUIRE(&r->tail); /* A2 pairs with R2 */
    return r->mask + 1 - (LD_RELAXED(&r->head) - r->prod_cached_tail);
}

/* Consumer: the oldest filled slot, or NULL when empty. */
static inline void *spsc_peek(struct spsc_hdr *r, void *slots)
{
    uint32_t t = LD_RELAXED(&r->tail);
    if (t == r->cons_cached_head) {
        r->cons_cached_head = LD_ACQUIRE(&r->head); /* A1 pairs with R1 */
        if (t == r->cons_cached_head)
            return NULL;
    }
    return spsc_slot(r, slots, t);
}

/* Consumer: hand the slot from spsc_peek() back to the producer. */
static inline void spsc_release(struct spsc_hdr *r)
{
    ST_RELEASE(&r->tail, LD_RELAXED(&r->tail) + 1); /* R2 pairs with A2 */
}

/* Anyone: is there something to consume? (A1-style acquire on head.) */
static inline bool spsc_nonempty(struct spsc_hdr *r)
{
    return LD_ACQUIRE(&r->head) != LD_RELAXED(&r->tail); /* A1 pairs with R1 */
}

/*
 * Slot-sequence mode, for the receive queues between NIC engines. The
 * consumer does not read the producer's head line at all: each slot carries a
 * 32-bit sequence word at `seq_off`, which the producer writes last
 *
 *   producer: fill slot (never the seq word); ST_RELEASE(seq, head + 1)  R1s
 *   consumer: LD_ACQUIRE(seq of slot at tail) == tail + 1 ?              A1s
 *
 * (R1s pairs with A1s), so polling touches only the slot's first line, which
 * the consumer reads anyway. Sequence values are free-running: slot i holds
 * i + 1 of its current round, never equal to a stale round's value. The slot
 * memory must start zeroed. Credits come from `tail` (R2/A2).
 *
 * Both sides keep the geometry privately (spsc_view, spsc_prod), and the
 * producer its head and cached tail too: in a shared job region any rank can
 * rewrite the header, and no value read from it may place a slot. The shared
 * `head` is written by the producer after each commit and read only when it
 * (re)attaches, to resume; `mask`, `slot_size` and `prod_cached_tail` there
 * are not used. The consumer's `tail` is read by the producer as its credits,
 * never as an index: a tail that is not within nslots behind head reads as
 * "full" (spsc_reserve_seq).
 */

/* The consumer's private copy of the geometry. The consumer never reads the
 * producer's line: the producer writes `head` there on every commit, so a
 * consumer that fetched `mask` from it would take one extra cache miss, in
 * series with the slot's, per message. */
struct spsc_view {
    void *slots;
    uint32_t mask, slot_size;
};

/* nslots (a power of two) and slot_size come from the ring's creator, never
 * from a header that another process can write. */
static inline struct spsc_view spsc_view_make(void *slots, uint32_t nslots, uint32_t slot_size)
{
    struct spsc_view v = {slots, nslots - 1, slot_size};
    return v;
}

static inline _Atomic uint32_t *spsc_view_seq(const struct spsc_view *v, uint32_t idx,
                                              uint32_t seq_off)
{
    return (_Atomic uint32_t *)((char *)v->slots + (size_t)(idx & v->mask) * v->slot_size +
                                seq_off);
}

/* Consumer: the oldest filled slot, or NULL. Reads only `tail` (its own line)
 * and the slot's sequence word. */
static inline void *spsc_peek_seq(struct spsc_hdr *r, const struct spsc_view *v, uint32_t seq_off)
{
    uint32_t t = LD_RELAXED(&r->tail);
    _Atomic uint32_t *seq = spsc_view_seq(v, t, seq_off);
    if (LD_ACQUIRE(seq) != t + 1) /* A1s pairs with R1s */
        return NULL;
    return (char *)seq - seq_off;
}

/* Any thread: is the consumer's next slot filled? */
static inline bool spsc_nonempty_seq(struct spsc_hdr *r, const struct spsc_view *v,
                                     uint32_t seq_off)
{
    uint32_t t = LD_RELAXED(&r->tail);
    return LD_ACQUIRE(spsc_view_seq(v, t, seq_off)) == t + 1; /* A1s pairs with R1s */
}

/* The producer's private state: geometry, head, and the last tail it read. */
struct spsc_prod {
    void *slots;
    uint32_t mask, slot_size;
    uint32_t head;        /* next slot to fill                           */
    uint32_t cached_tail; /* credits: head - cached_tail <= mask + 1      */
};

/* Producer: attach to ring r, resuming at the head it last published. The
 * cached tail starts a full ring behind: the first reserve reads `tail`. */
static inline struct spsc_prod spsc_prod_make(const struct spsc_hdr *r, void *slots,
                                              uint32_t nslots, uint32_t slot_size)
{
    uint32_t h = LD_RELAXED(&r->head); /* written by this side only (resume point) */
    struct spsc_prod p = {slots, nslots - 1, slot_size, h, h - nslots};
    return p;
}

static inline void *spsc_prod_slot(const struct spsc_prod *p, uint32_t idx)
{
    return (char *)p->slots + (size_t)(idx & p->mask) * p->slot_size;
}

/* Producer: a free slot to fill in place, or NULL when full. A tail more
 * than nslots behind head, or ahead of it (forged), reads as full. */
static inline void *spsc_reserve_seq(struct spsc_hdr *r, struct spsc_prod *p)
{
    uint32_t h = p->head;
    if (h - p->cached_tail > p->mask) {
        p->cached_tail = LD_ACQUIRE(&r->tail); /* A2 pairs with R2 */
        if (h - p->cached_tail > p->mask)
            return NULL;
    }
    return spsc_prod_slot(p, h);
}

/* Producer: publish the slot returned by spsc_reserve_seq(). */
static inline void spsc_commit_seq(struct spsc_hdr *r, struct spsc_prod *p, uint32_t seq_off)
{
    uint32_t h = p->head;
    _Atomic uint32_t *seq = (_Atomic uint32_t *)((char *)spsc_prod_slot(p, h) + seq_off);
    ST_RELEASE(seq, h + 1); /* R1s pairs with A1s */
    p->head = h + 1;
    ST_RELAXED(&r->head, h + 1); /* resume point only; nobody orders on it */
}

#endif
