/*
 * p3/debug.h - the printf formats of the reference implementation's
 * internal debug header, which its test programs (ringtest, locktest,
 * get_bw, forktest) include to print Portals types. libportals has no
 * internal debug stream: `p3_out`, which a client may point at a file, is a
 * per-file variable here that nothing in the library reads.
 *
 * Not Portals API; provided so those clients build unchanged.
 */
#ifndef P3_P3_DEBUG_H
#define P3_P3_DEBUG_H

#include "../p3api/types.h"

#include <inttypes.h>
#include <stdio.h>

/* One format per Portals type, matching p3api/types.h. */
#define FMT_SZ_T      "%" PRIu64   /* ptl_size_t       */
#define FMT_SEQ_T     "%" PRIu32   /* ptl_seq_t        */
#define FMT_HDL_T     "%" PRIx32   /* ptl_handle_*_t   */
#define FMT_NID_T     "%" PRIu32   /* ptl_nid_t        */
#define FMT_PID_T     "%" PRIu32   /* ptl_pid_t        */
#define FMT_PTL_T     "%" PRIu32   /* ptl_pt_index_t   */
#define FMT_MBITS_T   "%#" PRIx64  /* ptl_match_bits_t */
#define FMT_NIDPID    " nid " FMT_NID_T " pid " FMT_PID_T
#define FMT_NIDPIDPTL " nid " FMT_NID_T " pid " FMT_PID_T " ptl " FMT_PTL_T

/* Where the reference implementation sent its debug output; unused here. */
static FILE *p3_out __attribute__((unused));

#endif
