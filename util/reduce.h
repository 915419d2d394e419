/*
 * reduce.h - element-wise reduction over the Portals reduction types and
 * operations of <portals3_ext.h> (ptl_op_t, ptl_datatype_t).
 */
#ifndef PT_REDUCE_H
#define PT_REDUCE_H

#include <stddef.h>

/* dst[i] = dst[i] OP src[i] over n bytes (whole elements; no alignment
 * assumed). Integer sums wrap; min and max keep dst on ties and unordered
 * pairs. An op or type outside the tables leaves dst alone (callers check
 * with pt_atomic_valid, engine/nic.h). */
void pt_atomic_combine(unsigned op, unsigned type, void *dst, const void *src, size_t n);

#endif
