/*
 * portals3_ext.h - libportals extensions in the Portals 4 style: counting
 * events (CTs), triggered operations and reduction ("atomic") puts.
 *
 * Include it after (or instead of) <portals3.h>; it includes that header.
 * Everything here is run by the engine (the NIC thread in offload mode, the
 * thread holding the engine in host-matching mode): counters are counted
 * there, triggered operations fire there, and the target's engine combines a
 * reduction put into the target MD. docs/architecture.md, "Counting events
 * and triggered operations", describes the design.
 *
 * Counting events (CT)
 *   PtlCTAlloc(ni, &ct)       a counter {success, failure}, both 0
 *   PtlCTFree(ct)             frees it; operations still armed on it are
 *                             dropped (they never fire); a PtlCTWait on it
 *                             returns PTL_CT_INVALID
 *   PtlCTGet(ct, &ev)         the current value (progresses the engine once
 *                             when it is free, as PtlEQGet does)
 *   PtlCTWait(ct, test, &ev)  blocks until success + failure >= test (the
 *                             Portals 4 rule), then returns the value; sleeps
 *                             like PtlEQWait (no unbounded spinning). Once the
 *                             job has failed (a rank died), a wait that would
 *                             block returns PTL_FAIL, as PtlEQWait does
 *   PtlCTSet(ct, ev)          sets both fields
 *   PtlCTInc(ct, ev)          adds ev.success and ev.failure
 *   PtlCTSet and PtlCTInc return once the engine applied them (a PtlCTGet
 *   after them sees their effect), and fire what becomes due.
 *
 * Counting an MD's operations: PtlMDBindCT(md, ct, options) makes md count
 * into ct, from then on, every operation that completes on it whose kind is
 * in options: PTL_CT_SEND (SEND_END: a put or reduction put left it),
 * PTL_CT_REPLY (REPLY_END: a get's reply arrived), PTL_CT_ACK (ACK),
 * PTL_CT_COMM (target side: PUT_END, GET_END, GETPUT_END, reduction puts
 * included). An operation that completed with ni_fail_type != PTL_NI_OK
 * counts into .failure, every other into .success. Counting does not depend
 * on the MD's EQ or its START/END disable options. ct = PTL_CT_NONE unbinds.
 * An MD counts into at most one CT (a new PtlMDBindCT replaces the binding;
 * PtlMDUpdate keeps it); several MDs may share one.
 *
 * Triggered operations: PtlTriggered* take the arguments of the call they
 * defer, plus trig_ct and threshold. The operation is armed on trig_ct and
 * performed by the engine when trig_ct's success count is >= threshold (at
 * once if it already is); operations due together fire in the order they
 * were armed, lowest threshold first. Arguments are checked when the call is
 * made (the usual codes); the MD is looked up again when the operation fires
 * (unlinked by then: dropped, counted in PTL_SR_DROP_COUNT, like a put from
 * an MD that died after PtlPut returned). At most PTL_TRIG_SLOTS operations
 * may be armed per NI and not yet performed: one more gives PTL_NO_SPACE.
 * Operations still armed at PtlNIFini are freed with the NI.
 *
 * Reduction puts: PtlAtomicPut / PtlTriggeredAtomicPut put length bytes of
 * elements of type dt; the target's engine combines them element-wise into
 * the matched region of the target MD: target = target OP data. Operations
 * PTL_SUM, PTL_MIN, PTL_MAX on every type; PTL_BAND, PTL_BOR, PTL_BXOR on the
 * integer types only (others: PTL_ARG_INVALID). length must be a multiple of
 * the type's size: otherwise PTL_MD_ILLEGAL. Any length: up to PTL_EAGER_MAX
 * the data travels inline; beyond, the target's engine pulls it (CMA, or the
 * transport's RMA read) in parts of at most 64 KiB and combines each, or,
 * where it cannot read the initiator's memory, combines the fragments of a
 * copy-mode transfer as they arrive. At the target it behaves as a put (same matching,
 * thresholds, PUT_START/PUT_END events, ACK) except that a matched length that
 * is not a whole number of elements (truncation) fails: PUT_END (and the ACK)
 * carry PTL_NI_FAIL and nothing is written.
 *
 * Handles: ptl_handle_ct_t is typed and generational like the other handles
 * (a freed CT's handle gives PTL_CT_INVALID). At most PTL_MAX_CTS counters
 * per NI (PTL_NO_SPACE beyond).
 */
#ifndef P3_PORTALS3_EXT_H
#define P3_PORTALS3_EXT_H

#include "portals3.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef ptl_handle_any_t ptl_handle_ct_t;

/* Never a live counter (type CT, a generation and index never allocated). */
#define PTL_CT_NONE             ((ptl_handle_ct_t)0xdfffffff)

typedef struct {
	ptl_size_t success;
	ptl_size_t failure;
} ptl_ct_event_t;

/* Return codes of the extension, after the Cray codes (<p3/errno.h>). */
#define PTL_CT_INVALID          29  /* not a live counting event */
#define PTL_ARG_INVALID         30  /* an argument out of its domain (op/type, options) */

/* PtlMDBindCT options: what an MD counts. */
#define PTL_CT_SEND             0x1u
#define PTL_CT_REPLY            0x2u
#define PTL_CT_ACK              0x4u
#define PTL_CT_COMM             0x8u
#define PTL_CT_ALL              0xfu

/* Reduction operations and element types. */
typedef enum {
	PTL_SUM = 0,
	PTL_MIN = 1,
	PTL_MAX = 2,
	PTL_BAND = 3,
	PTL_BOR = 4,
	PTL_BXOR = 5
} ptl_op_t;

typedef enum {
	PTL_INT32_T = 0,
	PTL_INT64_T = 1,
	PTL_UINT64_T = 2,
	PTL_FLOAT = 3,
	PTL_DOUBLE = 4
} ptl_datatype_t;

PTL_API int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle);
PTL_API int PtlCTFree(ptl_handle_ct_t ct_handle);
PTL_API int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event);
PTL_API int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event);
PTL_API int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct);
PTL_API int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment);

PTL_API int PtlMDBindCT(ptl_handle_md_t md_handle, ptl_handle_ct_t ct_handle,
			unsigned int options);

PTL_API int PtlAtomicPut(ptl_handle_md_t md_handle, ptl_size_t local_offset,
			 ptl_size_t length, ptl_ack_req_t ack_req,
			 ptl_process_id_t target_id, ptl_pt_index_t pt_index,
			 ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
			 ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
			 ptl_op_t op, ptl_datatype_t datatype);

PTL_API int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset,
			    ptl_size_t length, ptl_ack_req_t ack_req,
			    ptl_process_id_t target_id, ptl_pt_index_t pt_index,
			    ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
			    ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
			    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

PTL_API int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset,
			    ptl_size_t length, ptl_process_id_t target_id,
			    ptl_pt_index_t pt_index, ptl_ac_index_t ac_index,
			    ptl_match_bits_t match_bits, ptl_size_t remote_offset,
			    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

PTL_API int PtlTriggeredAtomicPut(ptl_handle_md_t md_handle, ptl_size_t local_offset,
				  ptl_size_t length, ptl_ack_req_t ack_req,
				  ptl_process_id_t target_id, ptl_pt_index_t pt_index,
				  ptl_ac_index_t ac_index, ptl_match_bits_t match_bits,
				  ptl_size_t remote_offset, ptl_hdr_data_t hdr_data,
				  ptl_op_t op, ptl_datatype_t datatype,
				  ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

PTL_API int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment,
			      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

PTL_API int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct,
			      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

#ifdef __cplusplus
}
#endif

#endif /* P3_PORTALS3_EXT_H */
