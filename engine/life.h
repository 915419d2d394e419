/*
 * life.h - when memory that API threads read without locks may be freed: an
 * EQ's ring after PtlEQFree, the NIC structure (and everything it owns) after
 * PtlNIFini. The rule: only when no thread can still be inside a call that
 * took a pointer to it. docs/architecture.md ("Object lifetimes") has the
 * argument in full.
 *
 * Every API thread owns one record (struct pt_life, made on its first call,
 * handed to a later thread when it exits, never freed). Its `word` says
 * where the thread is:
 *
 *   OUT     not inside a call
 *   IN      inside a call: may hold any pointer it resolved from a handle
 *   PARKED  inside a call on NI `ni`, asleep in the waiting protocol's futex
 *           wait: holds the NIC, but no EQ ring (it resolves its EQ handles
 *           again after it wakes)
 *
 *   word = seq << 3 | ni << 2 | state     seq counts entries into IN
 *
 *   written by: its owner only: into IN by pt_life_in (L-E: entry, unpark),
 *               ST_RELEASE to OUT or PARKED (L-R: leave, park)
 *   read by:    reclaimers, LD_ACQUIRE (L-A): the engine freeing EQ rings
 *               (eqobj.c), PtlNIFini (pt_nic_quiesce)
 *
 * The pairs:
 *   L-E / L-F  a thread enters (pt_life_in: a store and the compiler's barrier
 *              when the process has membarrier, util/membar.h; else RMW_XCHG,
 *              a full fence), then resolves a handle (LD_ACQUIRE of the NI
 *              slot, of an object tag). A reclaimer unpublishes (NULL NI slot
 *              and nic->dead; a dead EQ tag), runs pt_membar_heavy (L-F: every
 *              thread of the process passes a full barrier; else FENCE_FULL),
 *              then reads every word. Store buffering:
 *              either the thread sees the object gone, or the reclaimer sees
 *              the thread IN. Unparking is an entry too: a waiter that wakes
 *              resolves its EQ handles again after it.
 *   L-R / L-A  leaving or parking is a ST_RELEASE; the reclaimer's LD_ACQUIRE
 *              that sees it (or any later word) orders every access the thread
 *              made inside before the free.
 *
 * So an EQ ring retired before the reclaimer read the words W is freed once
 * every word that was IN in W has changed (each change ends that IN; a
 * PARKED or OUT thread holds no ring); the NIC is freed once no word is IN or
 * PARKED on it. Seq makes a word never repeat. Calls nest (the depth
 * counter): only the outermost entry and exit write the word.
 *
 * Cost per call: two stores to the thread's own line (with membarrier; else
 * an RMW and a store); no shared line is written.
 *
 * One API thread (SOLO, docs/waiting.md "One API thread"). While the process
 * has had a single API thread, nobody else can hold its host-mode engine
 * token, read its EQs or sleep in its waits, so that thread may take and
 * release the token and take events with plain stores, and skip D3 and
 * D6's fences (their partners are other API threads of this process). It
 * does so inside a solo section, counted in its record's `solo`:
 *
 *   g_pt_solo  1 from the first call while PTL_SOLO and membarrier are on;
 *              written 0 (SO-V) by the second thread to register, never 1
 *              again; read relaxed by the hot side. Every later thread
 *              registers only after a revocation has finished its wait (SO-D,
 *              life.c), its own if need be
 *   solo       written by the owner only: +1 (plain) before it checks
 *              g_pt_solo again (SO-E), -1 with release when the section ends
 *              (SO-R); read by the revoking thread, LD_ACQUIRE (SO-A)
 *
 * The pair: owner "solo++; COMPILER_BARRIER(); load g_pt_solo" (SO-E, the hot
 * side of membar.h) against the revoker "g_pt_solo = 0; pt_membar_heavy()
 * (SO-F); load every record's solo" (SO-A): either the owner sees 0 and
 * leaves the section unused, or the revoker sees the section open and waits
 * for its SO-R, which publishes the section's plain stores (the token's
 * release, an EQ's read count). A section is bounded: a token held for a
 * wait's spin (PTL_WAIT_SPIN_US) at most, one event's read. Without
 * membarrier there is no solo path.
 */
#ifndef PT_LIFE_H
#define PT_LIFE_H

#include "membar.h"
#include "pt_atomic.h"

#include <stdbool.h>
#include <stdint.h>

#define PT_LIFE_OUT    0u
#define PT_LIFE_IN     1u
#define PT_LIFE_PARKED 2u
#define PT_LIFE_STATE  3u
#define PT_LIFE_NI(w)  (((w) >> 2) & 1u)
#define PT_LIFE_SEQ1   8u  /* one entry */

struct pt_life {
    PT_ALIGNED _Atomic uint64_t word; /* see above                                    */
    uint32_t depth;                   /* owner only: calls nested inside the outer one */
    _Atomic uint32_t used;            /* 1 while a thread owns it: CAS 0->1 (claim),
                                       * ST_RELEASE 0 at thread exit (R-U pairs with the
                                       * claimer's CAS)                              */
    struct pt_life *next;             /* registry link: set before the record is
                                       * published (R-L), never changed              */
    _Atomic uint32_t solo;            /* owner: open solo sections (SO-E, SO-R); the
                                       * revoker reads it (SO-A)                      */
};

/* 1 while the process has had one API thread (see SOLO above). */
extern _Atomic uint32_t g_pt_solo;

/* The calling thread's record (NULL before its first call). */
extern __thread struct pt_life *pt_life_self;
/* Slow path of the first call: claim or make a record, publish it. NULL when
 * out of memory. */
struct pt_life *pt_life_register(void);

/* L-E: the word to IN (next seq), ordered before the handle loads that
 * follow. With membarrier (util/membar.h) a plain store and the compiler's
 * barrier, the reclaimer's L-F being pt_membar_heavy; else an RMW (a full
 * fence) against the reclaimer's full fence. A cycle per call instead of a
 * locked instruction, which waits for every store before it (a put's stores
 * to the receiver's fast-box line among them: perf, forty-third session). */
static inline void pt_life_in(struct pt_life *l)
{
    uint64_t v = (LD_RELAXED(&l->word) & ~(uint64_t)7) + PT_LIFE_SEQ1 + PT_LIFE_IN;
    if (PT_LIKELY(LD_RELAXED(&g_pt_membar))) {
        ST_RELAXED(&l->word, v);
        COMPILER_BARRIER(); /* L-E (light) pairs with L-F (pt_membar_heavy) */
    } else {
        RMW_XCHG(&l->word, v); /* L-E pairs with L-F (FENCE_FULL) */
    }
}

/* A call that resolves no handle but may run the engine (PtlNIInit,
 * PtlNIFini, PtlFini) makes its thread an API thread all the same: a second
 * one ends SO (life.c) before it can take the token. */
static inline void pt_life_note(void)
{
    if (!pt_life_self)
        (void)pt_life_register();
}

/* Enter a call (outermost: L-E). Pointers resolved from handles after this
 * stay valid until the matching pt_life_leave. Returns the caller's record
 * for pt_life_leave; NULL (nothing entered, the call must not resolve
 * handles) only when no record could be made. */
static inline struct pt_life *pt_life_enter(void)
{
    struct pt_life *l = pt_life_self;
    if (PT_UNLIKELY(!l) && !(l = pt_life_register()))
        return NULL;
    if (l->depth++)
        return l;
    pt_life_in(l);
    return l;
}

/* Leave (outermost: OUT). l: what pt_life_enter returned. */
static inline void pt_life_leave(struct pt_life *l)
{
    if (--l->depth)
        return;
    uint64_t w = LD_RELAXED(&l->word);
    ST_RELEASE(&l->word, w & ~(uint64_t)7); /* L-R: OUT; pairs with the reclaimer's L-A */
}

/* Open a solo section (SO-E): true if the calling thread, inside a call, is
 * the process's only API thread and stays so until pt_life_solo_close; then
 * it must call that. False: take the locked path (nothing to close). */
static inline bool pt_life_solo_open(void)
{
    if (!LD_RELAXED(&g_pt_solo))
        return false;
    struct pt_life *l = pt_life_self;
    if (PT_UNLIKELY(!l))
        return false;
    ST_RELAXED(&l->solo, LD_RELAXED(&l->solo) + 1);
    COMPILER_BARRIER(); /* SO-E (light) pairs with SO-F (pt_membar_heavy) */
    if (PT_LIKELY(LD_RELAXED(&g_pt_solo)))
        return true;
    ST_RELEASE(&l->solo, LD_RELAXED(&l->solo) - 1); /* revoked meanwhile: SO-R */
    return false;
}

/* End a solo section (SO-R pairs with the revoker's SO-A): the section's
 * stores are visible to a thread that saw it end. */
static inline void pt_life_solo_close(void)
{
    struct pt_life *l = pt_life_self;
    ST_RELEASE(&l->solo, LD_RELAXED(&l->solo) - 1);
}

/* How many threads own a record now (entered a call and have not ended): a
 * hint for the waiting protocol's yields (wait.c, pt_wait_polled_empty). */
uint32_t pt_life_threads(void);

/* The waiting protocol's futex sleep (wait.c): park before it, unpark after.
 * After unparking, EQ handles must be resolved again. A nested call stays IN. */
void pt_life_park(uint32_t ni);
void pt_life_unpark(void);

/* Reclaimers, after their L-F fence. */

/* No thread is IN, or PARKED on NI ni (PtlNIFini may free that NI). */
bool pt_life_quiet(uint32_t ni);

/* A grace period: the records that were IN when it started (an engine-owned
 * array; grows as threads come). */
struct pt_life_snap {
    struct pt_life **rec;
    uint64_t *word;
    uint32_t n, cap;
};
/* Start: note every record that is IN. False when out of memory (try later). */
bool pt_life_snap_take(struct pt_life_snap *s);
/* Has every noted record left that IN (its word changed)? Forgets those
 * that did. */
bool pt_life_snap_passed(struct pt_life_snap *s);
void pt_life_snap_free(struct pt_life_snap *s);

#endif
