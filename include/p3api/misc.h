/*
 * p3api/misc.h - Portals 3.3 helper calls that are not in the spec (libportals).
 *
 * Follows shared/docs/portals33-api.md section 5.10: REF's string helpers and
 * PtlProgress, and the NI failure codes that appear in ptl_event_t.ni_fail_type.
 * Cray has none of the *Str functions (it exports ptl_err_str[] and
 * ptl_event_str[] instead); we provide both. Included by <portals3.h>.
 */
#ifndef P3_P3API_MISC_H
#define P3_P3API_MISC_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ni_fail_type values. PTL_NI_OK (0, <p3api/types.h>) and PTL_NI_FAIL (1) are
 * REF's; REF leaves codes >= 2 to the NAL. Ours are libportals-specific.
 */
#define PTL_NI_FAIL             1   /* generic failure */
#define PTL_NI_PEER_DIED        2   /* the peer process exited or crashed */
#define PTL_NI_DROPPED          3   /* the target dropped the request */
#define PTL_NI_CMA_FAILED       4   /* cross-memory copy was refused or failed */

/* Name of return code ptl_errno ("PTL_MD_INVALID"); "PTL_UNKNOWN_ERROR" if none. */
PTL_API const char *PtlErrorStr(unsigned int ptl_errno);

/* Name of ni_fail_type nal_errno ("PTL_NI_OK"); "PTL_NI_UNKNOWN_ERROR" if none. */
PTL_API const char *PtlNIFailStr(ptl_handle_ni_t ni, ptl_ni_fail_t nal_errno);

/* Name of an event kind ("PTL_EVENT_PUT_END"); "PTL_UNKNOWN_EVENT_KIND" if none. */
PTL_API const char *PtlEventKindStr(ptl_event_kind_t ev_kind);

/*
 * Drives progress on the NI owning handle for up to timeout ms. Never needed
 * for correctness: polling or waiting on an event queue also makes progress.
 */
PTL_API int PtlProgress(ptl_handle_any_t handle, ptl_time_t timeout);

/*
 * REF's PTL_SR_MLIST_LEN(pt_index) / PTL_SR_MLIST_MAX(pt_index) per-portal
 * register macros are not provided: their index formula is not known and
 * REF's PTL_SR_MLIST_MAX does not compile.
 */

#ifdef __cplusplus
}
#endif

#endif /* P3_P3API_MISC_H */
