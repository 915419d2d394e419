/*
 * p3rt/p3rt.h - REF's runtime helpers: ranks and nid/pid maps (libportals).
 *
 * Follows shared/docs/portals33-api.md section 5.10 (REF p3rt/p3rt.h, used by
 * REF's tests, Open MPI's utcp support and others). Not part of the spec. A
 * job of group_size processes numbers them 0..group_size-1 (rank); the maps
 * give the nid and pid of each rank.
 *
 * PtlSetRank(PTL_INVALID_HANDLE, -1, -1) initialises everything from the
 * environment: PTL_MY_RID (own rank), PTL_NIDMAP and PTL_PIDMAP
 * (colon-separated nid and pid lists, indexed by rank). With the maps set,
 * PtlNIInit(..., PTL_PID_ANY, ...) takes the pid of the own rank from the map.
 * In a libportals job the job region's map is authoritative: PtlNIInit fails
 * with PTL_FAIL (one error message) when these variables contradict it.
 */
#ifndef P3_P3RT_P3RT_H
#define P3_P3RT_P3RT_H

#include "../portals3.h"

#ifdef __cplusplus
extern "C" {
#endif

PTL_API int PtlSetRank(ptl_handle_ni_t ni, unsigned rank, unsigned group_size);
PTL_API int PtlSetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned n);
PTL_API int PtlSetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned n);

PTL_API int PtlGetRank(ptl_handle_ni_t ni, unsigned *rank, unsigned *group_size);

/* Process id (nid, pid) of rank. */
PTL_API int PtlGetRankId(ptl_handle_ni_t ni, unsigned rank, ptl_process_id_t *id);

/* Copy up to n map entries into map. */
PTL_API int PtlGetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned n);
PTL_API int PtlGetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned n);

/* Older Sandia runtime call (listed by Open MPI): sets the job id. */
PTL_API int PtlSetJID(ptl_handle_ni_t ni, ptl_jid_t jid);

#ifdef __cplusplus
}
#endif

#endif /* P3_P3RT_P3RT_H */
