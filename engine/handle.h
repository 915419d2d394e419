/*
 * handle.h - typed, generational handles.
 *
 *   31   29 28  26 25        16 15            0
 *   [ type ][ ni  ][ generation ][    index     ]
 *
 * type: 1 NI, 2 ME, 3 MD, 4 EQ. Generation starts at 1, is bumped when an
 * object slot is freed, and skips 0x3ff so that no valid handle can equal
 * PTL_HANDLE_NONE (0x7fffffff); index 0xffff is never allocated. Types 5-7
 * never occur, so PTL_EQ_NONE (0xbfffffff) and PTL_INVALID_HANDLE
 * (0xffffffff) never decode to an object.
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

enum pt_htype { PT_H_NI = 1, PT_H_ME = 2, PT_H_MD = 3, PT_H_EQ = 4 };

#define PT_H_GEN_MASK 0x3ffu
#define PT_H_IDX_MAX 0xfffeu
#define PT_MAX_NI 8

static inline uint32_t pt_h_make(enum pt_htype t, uint32_t ni, uint32_t gen, uint32_t idx)
{
    return ((uint32_t)t << 29) | ((ni & 7u) << 26) | ((gen & PT_H_GEN_MASK) << 16) | (idx & 0xffffu);
}
static inline uint32_t pt_h_type(uint32_t h) { return h >> 29; }
static inline uint32_t pt_h_ni(uint32_t h) { return (h >> 26) & 7u; }
static inline uint32_t pt_h_gen(uint32_t h) { return (h >> 16) & PT_H_GEN_MASK; }
static inline uint32_t pt_h_idx(uint32_t h) { return h & 0xffffu; }
static inline uint32_t pt_gen_next(uint32_t g)
{
    g = (g + 1) & PT_H_GEN_MASK;
    return (g == 0 || g == PT_H_GEN_MASK) ? 1 : g;
}

#endif
