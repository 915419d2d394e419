/*
 * reduce.c - dst[i] = dst[i] OP src[i]: the one reduction of libportals, used
 * by the engine for reduction puts (engine/target.c) and by the collective
 * library where it combines a pair's values itself (coll/fast.c). Pure.
 */
#include "reduce.h"

#include <portals3_ext.h>
#include <stdint.h>
#include <string.h>

/* Elements are copied in and out (no alignment is assumed of either side).
 * Integer sums wrap (computed unsigned). */
#define PT_RED_LOOP(T, EXPR)                                                                       \
    for (size_t i_ = 0; i_ + sizeof(T) <= n; i_ += sizeof(T)) {                                    \
        T a, b;                                                                                    \
        memcpy(&a, d + i_, sizeof a);                                                              \
        memcpy(&b, s + i_, sizeof b);                                                              \
        a = (EXPR);                                                                                \
        memcpy(d + i_, &a, sizeof a);                                                              \
    }
#define PT_RED_ARITH(T, UT)                                                                        \
    switch (op) {                                                                                  \
    case PTL_SUM: PT_RED_LOOP(T, (T)((UT)a + (UT)b)) break;                                        \
    case PTL_MIN: PT_RED_LOOP(T, b < a ? b : a) break;                                             \
    case PTL_MAX: PT_RED_LOOP(T, b > a ? b : a) break;                                             \
    case PTL_BAND: PT_RED_LOOP(T, (T)((UT)a & (UT)b)) break;                                       \
    case PTL_BOR: PT_RED_LOOP(T, (T)((UT)a | (UT)b)) break;                                        \
    case PTL_BXOR: PT_RED_LOOP(T, (T)((UT)a ^ (UT)b)) break;                                       \
    default: break;                                                                                \
    }
#define PT_RED_FLOAT(T)                                                                            \
    switch (op) {                                                                                  \
    case PTL_SUM: PT_RED_LOOP(T, a + b) break;                                                     \
    case PTL_MIN: PT_RED_LOOP(T, b < a ? b : a) break;                                             \
    case PTL_MAX: PT_RED_LOOP(T, b > a ? b : a) break;                                             \
    default: break;                                                                                \
    }

void pt_atomic_combine(unsigned op, unsigned type, void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    switch (type) {
    case PTL_INT32_T: PT_RED_ARITH(int32_t, uint32_t) break;
    case PTL_INT64_T: PT_RED_ARITH(int64_t, uint64_t) break;
    case PTL_UINT64_T: PT_RED_ARITH(uint64_t, uint64_t) break;
    case PTL_FLOAT: PT_RED_FLOAT(float) break;
    case PTL_DOUBLE: PT_RED_FLOAT(double) break;
    default: break;
    }
}
