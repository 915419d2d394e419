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

void pt_eq_post(struct pt_eq *eq, ptl_event_t *ev)
{
    uint64_t w = LD_RELAXED(&eq->write_count);
    struct pt_eq_slot *s = &eq->slots[w & eq->mask];
    uint64_t words[PT_EV_WORDS];

    ev->sequence = (ptl_seq_t)w;
    memset(words, 0, sizeof words);
    memcpy(words, ev, sizeof *ev);
    ST_RELAXED(&s->stamp, 2 * w + 1);
    FENCE_RELEASE(); /* W1 pairs with A3: a reader racing the copy sees the busy stamp */
    copy_words_relaxed(s->words, words, PT_EV_WORDS);
    ST_RELEASE(&s->stamp, 2 * w + 2);       /* R1 pairs with A1 */
    ST_RELEASE(&eq->write_count, w + 1);    /* R2 pairs with A2 */
}

static enum pt_eq_rc eq_read(struct pt_eq *eq, ptl_event_t *ev, bool consume)
{
    for (;;) {
        uint64_t r = LD_ACQUIRE(&eq->read_count);
        uint64_t wc = LD_ACQUIRE(&eq->write_count); /* A2 pairs with R2 */
        if (r == wc)
            return PT_EQ_EMPTY;
        /* Events were lost iff the oldest survivor lies past our read
         * position. Decided afresh on every try: a reader that loses the
         * claim below must not carry a drop another reader will report. */
        uint64_t want = r;
        if (wc - r > eq->size)
            want = wc - eq->size; /* oldest survivor */
        bool dropped = want != r;
        struct pt_eq_slot *s = &eq->slots[want & eq->mask];
        uint64_t s1 = LD_ACQUIRE(&s->stamp); /* A1 pairs with R1 */
        if (s1 != 2 * want + 2) {
            CPU_RELAX(); /* being written, or overwritten since we looked: look again */
            continue;
        }
        uint64_t words[PT_EV_WORDS];
        copy_words_relaxed(words, s->words, PT_EV_WORDS);
        FENCE_ACQUIRE(); /* A3 pairs with W1 */
        if (LD_RELAXED(&s->stamp) != s1)
            continue; /* overwritten while we copied: the next try skips ahead */
        if (consume && !RMW_CAS(&eq->read_count, &r, want + 1))
            continue; /* another reader took it (and reports any drop it skipped) */
        memcpy(ev, words, sizeof *ev);
        return dropped ? PT_EQ_DROPPED : PT_EQ_OK;
    }
}

enum pt_eq_rc pt_eq_get(struct pt_eq *eq, ptl_event_t *ev) { return eq_read(eq, ev, true); }
enum pt_eq_rc pt_eq_peek(struct pt_eq *eq, ptl_event_t *ev) { return eq_read(eq, ev, false); }
