/* eq.c - see eq.h for the protocol and who may call what. */
#include "eq.h"

#include <stdlib.h>
#include <string.h>

struct pt_eq *pt_eq_create(uint64_t count, ptl_eq_handler_t handler)
{
    uint64_t size = 1;
    while (size < count)
        size <<= 1;
    struct pt_eq *eq = aligned_alloc(PT_CACHELINE, sizeof *eq);
    if (!eq)
        return NULL;
    memset(eq, 0, sizeof *eq);
    eq->slots = calloc(size, sizeof *eq->slots);
    if (!eq->slots) {
        free(eq);
        return NULL;
    }
    eq->size = size;
    eq->mask = size - 1;
    eq->handler = handler;
    ST_RELAXED(&eq->write_count, 0);
    ST_RELAXED(&eq->read_count, 0);
    /* Every stamp is 0 (never written) from calloc: the pages of a large
     * ring are touched only as events arrive. */
    return eq;
}

void pt_eq_destroy(struct pt_eq *eq)
{
    if (!eq)
        return;
    free(eq->slots);
    free(eq);
}

/* The event's words go straight from the caller's struct into the slot (no
 * staging copy): each is read with memcpy (no aliasing question) and stored
 * relaxed, as a racing reader may load it. */
static inline void ev_store_words(uint64_t *dst, const ptl_event_t *ev)
{
    /* Unrolled (-O2 keeps the loop): a load and a store per word, not five
     * instructions (every event is written once and read once). */
#pragma GCC unroll 32
    for (size_t i = 0; i < PT_EV_WORDS; i++) {
        uint64_t x;
        memcpy(&x, (const char *)ev + 8 * i, 8);
        __atomic_store_n(&dst[i], x, __ATOMIC_RELAXED);
    }
}

/* The reader's copy goes straight into the caller's event; it is only
 * returned once the stamp check below says it is whole (on a failed check
 * the next try overwrites it). */
static inline void ev_load_words(ptl_event_t *ev, const uint64_t *src)
{
#pragma GCC unroll 32
    for (size_t i = 0; i < PT_EV_WORDS; i++) {
        uint64_t x = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
        memcpy((char *)ev + 8 * i, &x, 8);
    }
}

_Static_assert(sizeof(ptl_event_t) % 8 == 0, "events are copied in whole words");
_Static_assert(PT_EV_WORDS <= 32, "the word copies are unrolled up to 32 words");

void pt_eq_post(struct pt_eq *eq, ptl_event_t *ev)
{
    uint64_t w = LD_RELAXED(&eq->write_count);
    struct pt_eq_slot *s = &eq->slots[w & eq->mask];

    ev->sequence = (ptl_seq_t)w;
    ST_RELAXED(&s->stamp, 2 * w + 1);
    FENCE_RELEASE(); /* W1 pairs with A3: a reader racing the copy sees the busy stamp */
    ev_store_words(s->words, ev);
    ST_RELEASE(&s->stamp, 2 * w + 2);       /* R1 pairs with A1 */
    ST_RELEASE(&eq->write_count, w + 1);    /* R2 pairs with A2 */
}

static enum pt_eq_rc eq_read(struct pt_eq *eq, ptl_event_t *ev, bool consume)
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
        ev_load_words(ev, s->words);
        FENCE_ACQUIRE(); /* A3 pairs with W1 */
        if (LD_RELAXED(&s->stamp) != s1)
            continue; /* overwritten while we copied: the next try skips ahead */
        if (consume && !RMW_CAS(&eq->read_count, &r, want + 1))
            continue; /* another reader took it (and reports any drop it skipped) */
        return dropped ? PT_EQ_DROPPED : PT_EQ_OK;
    }
}

enum pt_eq_rc pt_eq_get(struct pt_eq *eq, ptl_event_t *ev) { return eq_read(eq, ev, true); }
enum pt_eq_rc pt_eq_peek(struct pt_eq *eq, ptl_event_t *ev) { return eq_read(eq, ev, false); }
