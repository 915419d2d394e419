/*
 * handle.h - typed, generational handles.
 *
 *   31   29  28  27        17 16              0
 *   [ type ][ni][ generation ][      index     ]
 *
 * type: 1 NI, 2 ME, 3 MD, 4 EQ, 6 CT (counting event, portals3_ext.h).
 * Generation starts at 1, is bumped when an
 * object slot is freed, and skips 0x7ff, so 2046 generations are in use;
 * index 0x1ffff is never allocated. So no valid handle equals PTL_HANDLE_NONE
 * (0x7fffffff). Types 5 and 7 never occur, so PTL_EQ_NONE (0xbfffffff) and
 * PTL_INVALID_HANDLE (0xffffffff) never decode to an object; PTL_CT_NONE
 * (0xdfffffff) is a CT handle with generation 0x7ff and index 0x1ffff. One NI bit: a
 * process opens one NI (api/ni.c).
 *
 * Reuse bound: a freed ME, MD or EQ handle is not valid again before at least
 * PT_H_REVIVE_MIN (2^26) more creations of that type on that NI
 * (docs/architecture.md, "Handles"). Each table has PT_H_FREE_DEPTH slots
 * beyond the NI's limit and reuses free slots oldest first, only while more
 * than that many are queued (obj.c); so at least PT_H_FREE_DEPTH other
 * creations come between two lives of a slot (except possibly before its
 * first reuse), and a generation recurs only after PT_H_GENS lives.
 *
 * Every object begins with `tag` = generation << 1 | live. The engine-token
 * holder writes it (ST_RELEASE on create, after the object body: R1; and on
 * free); any API thread validates a handle by LD_ACQUIRE(tag) (A1 pairs with
 * R1) without locks. Object memory is never returned to the system before
 * PtlNIFini, so a racing validation reads a stale generation, never freed memory.
 */
#ifndef PT_HANDLE_H
#define PT_HANDLE_H

#include <stdint.h>

#include "config.h"

enum pt_htype { PT_H_NI = 1, PT_H_ME = 2, PT_H_MD = 3, PT_H_EQ = 4, PT_H_CT = 6 };

#define PT_H_GEN_SHIFT 17
#define PT_H_GEN_MASK 0x7ffu
#define PT_H_IDX_MASK 0x1ffffu
#define PT_H_IDX_MAX 0x1fffeu
#define PT_MAX_NI 2

#define PT_H_GENS (PT_H_GEN_MASK - 1u) /* generations 1 .. mask-1 */
#define PT_H_REVIVE_MIN (1u << 26)
/* Smallest depth D with (PT_H_GENS - 1) * (D + 1) + 1 >= PT_H_REVIVE_MIN. */
#define PT_H_FREE_DEPTH                                                                            \
    ((PT_H_REVIVE_MIN - 1u + PT_H_GENS - 2u) / (PT_H_GENS - 1u) - 1u)

_Static_assert((uint64_t)(PT_H_GENS - 1u) * (PT_H_FREE_DEPTH + 1u) + 1u >= PT_H_REVIVE_MIN,
               "free-list depth too small for the reuse bound");
_Static_assert((uint64_t)PT_CFG_MAX_OBJECTS + PT_H_FREE_DEPTH <= (uint64_t)PT_H_IDX_MAX + 1u,
               "index bits cannot hold a full table plus the free-list depth");
_Static_assert((uint64_t)PT_CFG_MAX_CTS + PT_H_FREE_DEPTH <= (uint64_t)PT_H_IDX_MAX + 1u,
               "index bits cannot hold a full CT table plus the free-list depth");

static inline uint32_t pt_h_make(enum pt_htype t, uint32_t ni, uint32_t gen, uint32_t idx)
{
    return ((uint32_t)t << 29) | ((ni & 1u) << 28) | ((gen & PT_H_GEN_MASK) << PT_H_GEN_SHIFT) |
           (idx & PT_H_IDX_MASK);
}
static inline uint32_t pt_h_type(uint32_t h) { return h >> 29; }
static inline uint32_t pt_h_ni(uint32_t h) { return (h >> 28) & 1u; }
static inline uint32_t pt_h_gen(uint32_t h) { return (h >> PT_H_GEN_SHIFT) & PT_H_GEN_MASK; }
static inline uint32_t pt_h_idx(uint32_t h) { return h & PT_H_IDX_MASK; }
static inline uint32_t pt_gen_next(uint32_t g)
{
    g = (g + 1) & PT_H_GEN_MASK;
    return (g == 0 || g == PT_H_GEN_MASK) ? 1 : g;
}

/* The first generation of every object slot of the NI whose own generation
 * is ni_gen (1 .. PT_H_GENS, one more per PtlNIInit of the process). A
 * process's NIs share the NI bit and the slot indices, so without it a
 * handle from a closed NI named the object in the same slot of the next one
 * (an adversarial client: an old MD handle's PtlMDUpdate read the new NI's
 * MD; PtlMEUnlink of an old ME handle removed the new one). Consecutive
 * NIs start PT_H_SEED_STRIDE generations apart (a prime, coprime with
 * PT_H_GENS): an old handle names a new object only if its slot lived
 * about that many times (with the reuse depth, some 4e7 creations) in the
 * NI before; two NIs apart, 472 lives (1.5e7 creations). */
#define PT_H_SEED_STRIDE 1259u
static inline uint32_t pt_h_seed(uint32_t ni_gen)
{
    return 1u + (uint32_t)(((uint64_t)(ni_gen ? ni_gen - 1u : 0u) * PT_H_SEED_STRIDE) % PT_H_GENS);
}

#endif
