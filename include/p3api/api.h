/*
 * p3api/api.h - Portals 3.3 API functions (libportals).
 *
 * Follows shared/docs/portals33-api.md section 5: signatures of sections
 * 5.1-5.9 exactly as REF declares them, plus the non-spec calls of 5.10 that
 * clients link against (REF's PtlMEMDPost; Cray's PtlMEMDAttach, PtlEQPeek,
 * PtlGetPutRegion). Every function returns a return code of <p3/errno.h>
 * unless noted. Applications include <portals3.h>, not this file.
 */
#ifndef P3_P3API_API_H
#define P3_P3API_API_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 5.1 initialisation [3.4] ------------------------------------------------ */

/*
 * Idempotent: a second call returns PTL_OK. *max_interfaces receives the
 * number of interfaces a process may open. (Cplant 3.0 had PtlInit(void).)
 */
PTL_API int PtlInit(int *max_interfaces);

/* Closes every open interface; later calls other than PtlInit fail PTL_NO_INIT. */
PTL_API void PtlFini(void);

/* ---- 5.2 network interfaces [3.5] --------------------------------------------- */

/*
 * pid may be PTL_PID_ANY; desired and actual may be NULL. A second PtlNIInit
 * of the same interface returns the existing handle (see the library docs for
 * whether the code is PTL_OK, as in REF, or PTL_IFACE_DUP, as on Cray; clients
 * accept both).
 */
PTL_API int PtlNIInit(ptl_interface_t interface, ptl_pid_t pid,
		      ptl_ni_limits_t *desired, ptl_ni_limits_t *actual,
		      ptl_handle_ni_t *ni_handle);

PTL_API int PtlNIFini(ptl_handle_ni_t ni_handle);

PTL_API int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t register_index,
			ptl_sr_value_t *status);

PTL_API int PtlNIDist(ptl_handle_ni_t ni_handle, ptl_process_id_t process,
		      unsigned long *distance);

/* NI owning any object handle; an NI handle maps to itself. */
PTL_API int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle);

/* ---- 5.3 identification [3.6-3.8] --------------------------------------------- */

PTL_API int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid);
PTL_API int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_id_t *id);
PTL_API int PtlGetJid(ptl_handle_ni_t ni_handle, ptl_jid_t *jid);

/* ---- 5.4 match entries [3.9] --------------------------------------------------- */

PTL_API int PtlMEAttach(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
			ptl_process_id_t match_id, ptl_match_bits_t match_bits,
			ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
			ptl_ins_pos_t position, ptl_handle_me_t *me_handle);

/* Attaches to an unused portal index and returns it in *pt_index. */
PTL_API int PtlMEAttachAny(ptl_handle_ni_t ni_handle, ptl_pt_index_t *pt_index,
			   ptl_process_id_t match_id, ptl_match_bits_t match_bits,
			   ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
			   ptl_handle_me_t *me_handle);

PTL_API int PtlMEInsert(ptl_handle_me_t base, ptl_process_id_t match_id,
			ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
			ptl_unlink_t unlink, ptl_ins_pos_t position,
			ptl_handle_me_t *me_handle);

PTL_API int PtlMEUnlink(ptl_handle_me_t me_handle);

/* ---- 5.5 memory descriptors [3.10] -------------------------------------------- */

PTL_API int PtlMDAttach(ptl_handle_me_t me_handle, ptl_md_t md,
			ptl_unlink_t unlink_op, ptl_handle_md_t *md_handle);

/* (3.2 spec and Cplant: 3 arguments, no unlink_op; we follow REF.) */
PTL_API int PtlMDBind(ptl_handle_ni_t ni_handle, ptl_md_t md,
		      ptl_unlink_t unlink_op, ptl_handle_md_t *md_handle);

PTL_API int PtlMDUnlink(ptl_handle_md_t md_handle);

/*
 * old_md and new_md may be NULL. The update is done only if eq_handle is
 * PTL_EQ_NONE or that queue is empty; otherwise PTL_MD_NO_UPDATE.
 */
PTL_API int PtlMDUpdate(ptl_handle_md_t md_handle, ptl_md_t *old_md,
			ptl_md_t *new_md, ptl_handle_eq_t eq_handle);

/* ---- 5.6 event queues [3.11] --------------------------------------------------- */

/* (3.2 spec, Cplant: 3 arguments, no handler; we follow REF.) */
PTL_API int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count,
		       ptl_eq_handler_t eq_handler, ptl_handle_eq_t *eq_handle);

PTL_API int PtlEQFree(ptl_handle_eq_t eq_handle);

/* Non-blocking; PTL_OK or PTL_EQ_DROPPED with *event filled, else PTL_EQ_EMPTY. */
PTL_API int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event);

/* Blocks until an event is available. */
PTL_API int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event);

/*
 * Waits up to timeout ms (0: one pass; PTL_TIME_FOREVER: no limit) on size
 * queues of one NI; *which_eq is the index of the queue the event came from.
 * (Lustre p30: int timeout; we follow REF.)
 */
PTL_API int PtlEQPoll(ptl_handle_eq_t *eq_handles, int size, ptl_time_t timeout,
		      ptl_event_t *event, int *which_eq);

/* ---- 5.7 access control [3.12] ------------------------------------------------- */

/* (3.2 spec: no job_id; we follow REF.) pt_index may be PTL_PT_INDEX_ANY. */
PTL_API int PtlACEntry(ptl_handle_ni_t ni_handle, ptl_ac_index_t ac_index,
		       ptl_process_id_t match_id, ptl_uid_t user_id,
		       ptl_jid_t job_id, ptl_pt_index_t pt_index);

/* ---- 5.8 data movement [3.13] -------------------------------------------------- */

PTL_API int PtlPut(ptl_handle_md_t md_handle, ptl_ack_req_t ack_req,
		   ptl_process_id_t target_id, ptl_pt_index_t pt_index,
		   ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
		   ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);

PTL_API int PtlPutRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset,
			 ptl_size_t length, ptl_ack_req_t ack_req,
			 ptl_process_id_t target_id, ptl_pt_index_t pt_index,
			 ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
			 ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);

PTL_API int PtlGet(ptl_handle_md_t md_handle, ptl_process_id_t target_id,
		   ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
		   ptl_match_bits_t match_bits, ptl_size_t remote_offset);

PTL_API int PtlGetRegion(ptl_handle_md_t md_handle, ptl_size_t local_offset,
			 ptl_size_t length, ptl_process_id_t target_id,
			 ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
			 ptl_match_bits_t match_bits, ptl_size_t remote_offset);

/* Atomic swap; the two handles may name the same MD. */
PTL_API int PtlGetPut(ptl_handle_md_t get_md_handle, ptl_handle_md_t put_md_handle,
		      ptl_process_id_t target_id, ptl_pt_index_t pt_index,
		      ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
		      ptl_size_t remote_offset, ptl_hdr_data_t hdr_data);

/* ---- 5.9 handles ------------------------------------------------------------------ */

/*
 * Not in REF (Lustre p30 had it as an inline). Boolean: non-zero when the two
 * handles are equal. A function, so a client's own
 * "#define PtlHandleIsEqual(a,b) ((a)==(b))" after this header still works.
 */
PTL_API int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2);

/* ---- 5.10 non-spec calls clients link against ------------------------------------- */

/*
 * REF extension (undocumented; used by Open MPI): PtlMEInsert relative to base
 * + PtlMDAttach in one call, plus a conditional PtlMDUpdate against eq_handle.
 */
PTL_API int PtlMEMDPost(ptl_handle_ni_t ni_handle, ptl_handle_me_t base,
			ptl_process_id_t match_id, ptl_match_bits_t match_bits,
			ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
			ptl_ins_pos_t position, ptl_md_t md, ptl_unlink_t unlink_op,
			ptl_handle_me_t *me_handle, ptl_handle_md_t *md_handle,
			ptl_handle_eq_t eq_handle);

/* Cray extension: PtlMEAttach + PtlMDAttach in one call. */
PTL_API int PtlMEMDAttach(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
			  ptl_process_id_t match_id, ptl_match_bits_t match_bits,
			  ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
			  ptl_ins_pos_t position, ptl_md_t md, ptl_unlink_t unlink_op,
			  ptl_handle_me_t *me_handle, ptl_handle_md_t *md_handle);

/* Cray extension: like PtlEQGet, but leaves the event in the queue. */
PTL_API int PtlEQPeek(ptl_handle_eq_t eq_handle, ptl_event_t *event);

/*
 * Cray extension: PtlGetPut on regions, length bytes at local_put_offset of
 * the put MD and local_get_offset of the get MD.
 */
PTL_API int PtlGetPutRegion(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
			    ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
			    ptl_size_t length, ptl_process_id_t target_id,
			    ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
			    ptl_match_bits_t match_bits, ptl_size_t remote_offset,
			    ptl_hdr_data_t hdr_data);

#ifdef __cplusplus
}
#endif

#endif /* P3_P3API_API_H */
