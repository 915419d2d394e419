/* eq.c - see eq.h for the protocol and who may call what. */
#include "config.h"
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
    /* PTL_TEST_WRAP: the 32-bit event sequence (and START links) wrap soon;
     * the 64-bit counts themselves do not */
    ST_RELAXED(&eq->write_count, (uint64_t)pt_wrap32());
    ST_RELAXED(&eq->read_count, (uint64_t)pt_wrap32());
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

enum pt_eq_rc pt_eq_peek(struct pt_eq *eq, ptl_event_t *ev) { return pt_eq_read(eq, ev, false, false); }
