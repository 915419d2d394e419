/*
 * static_checks.c - compile-time checks that the public headers carry REF's
 * values, member orders, type widths and function signatures
 * (shared/docs/portals33-api.md sections 2-5). C11: _Static_assert.
 * Signature checks assign each function to a pointer of the expected type;
 * a mismatch is an incompatible-pointer diagnostic, an error with -Werror.
 */
#include <stddef.h>
#include <stdint.h>

#include <portals3.h>
#include <p3nal_utcp.h>
#include <p3nal_shm.h>
#include <p3api/debug.h>
#include <p3rt/p3rt.h>
#include <portals3_ext.h>

#define CHECK(expr) _Static_assert(expr, #expr)
#define SAME_TYPE(a, b) _Generic((a), b: 1, default: 0)

/* ---- type widths (section 2) ---- */
CHECK(sizeof(ptl_size_t) == 8);
CHECK(sizeof(ptl_handle_any_t) == 4);
CHECK(sizeof(ptl_handle_ni_t) == 4 && sizeof(ptl_handle_md_t) == 4);
CHECK(sizeof(ptl_handle_me_t) == 4 && sizeof(ptl_handle_eq_t) == 4);
CHECK(sizeof(ptl_pt_index_t) == 4 && sizeof(ptl_ac_index_t) == 4);
CHECK(sizeof(ptl_match_bits_t) == 8);
CHECK(sizeof(ptl_interface_t) == 4);
CHECK(sizeof(ptl_nid_t) == 4 && sizeof(ptl_pid_t) == 4);
CHECK(sizeof(ptl_uid_t) == 4 && sizeof(ptl_jid_t) == 4);
CHECK(sizeof(ptl_sr_index_t) == 4 && sizeof(ptl_sr_value_t) == 8);
CHECK(sizeof(ptl_ni_fail_t) == 4 && sizeof(ptl_seq_t) == 4);
CHECK(sizeof(ptl_hdr_data_t) == 8 && sizeof(ptl_time_t) == 4);
CHECK((ptl_handle_any_t)-1 > 0);            /* unsigned */
CHECK((ptl_size_t)-1 > 0);
CHECK(sizeof(ptl_ni_limits_t) == 8 * sizeof(int));
CHECK(sizeof(ptl_process_id_t) == 8);

/* ---- member order ---- */
CHECK(offsetof(ptl_process_id_t, nid) == 0);
CHECK(offsetof(ptl_process_id_t, pid) == 4);

CHECK(offsetof(ptl_ni_limits_t, max_mes) == 0 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_mds) == 1 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_eqs) == 2 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_ac_index) == 3 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_pt_index) == 4 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_md_iovecs) == 5 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_me_list) == 6 * sizeof(int));
CHECK(offsetof(ptl_ni_limits_t, max_getput_md) == 7 * sizeof(int));

CHECK(offsetof(ptl_md_t, start) == 0);
CHECK(offsetof(ptl_md_t, start) < offsetof(ptl_md_t, length));
CHECK(offsetof(ptl_md_t, length) < offsetof(ptl_md_t, threshold));
CHECK(offsetof(ptl_md_t, threshold) < offsetof(ptl_md_t, max_size));
CHECK(offsetof(ptl_md_t, max_size) < offsetof(ptl_md_t, options));
CHECK(offsetof(ptl_md_t, options) < offsetof(ptl_md_t, user_ptr));
CHECK(offsetof(ptl_md_t, user_ptr) < offsetof(ptl_md_t, eq_handle));

CHECK(offsetof(ptl_md_iovec_t, iov_base) == 0);
CHECK(offsetof(ptl_md_iovec_t, iov_len) == sizeof(void *));

CHECK(offsetof(ptl_event_t, type) == 0);
CHECK(offsetof(ptl_event_t, type) < offsetof(ptl_event_t, initiator));
CHECK(offsetof(ptl_event_t, initiator) < offsetof(ptl_event_t, uid));
CHECK(offsetof(ptl_event_t, uid) < offsetof(ptl_event_t, jid));
CHECK(offsetof(ptl_event_t, jid) < offsetof(ptl_event_t, pt_index));
CHECK(offsetof(ptl_event_t, pt_index) < offsetof(ptl_event_t, match_bits));
CHECK(offsetof(ptl_event_t, match_bits) < offsetof(ptl_event_t, rlength));
CHECK(offsetof(ptl_event_t, rlength) < offsetof(ptl_event_t, mlength));
CHECK(offsetof(ptl_event_t, mlength) < offsetof(ptl_event_t, offset));
CHECK(offsetof(ptl_event_t, offset) < offsetof(ptl_event_t, md_handle));
CHECK(offsetof(ptl_event_t, md_handle) < offsetof(ptl_event_t, md));
CHECK(offsetof(ptl_event_t, md) < offsetof(ptl_event_t, hdr_data));
CHECK(offsetof(ptl_event_t, hdr_data) < offsetof(ptl_event_t, link));
CHECK(offsetof(ptl_event_t, link) < offsetof(ptl_event_t, ni_fail_type));
CHECK(offsetof(ptl_event_t, ni_fail_type) < offsetof(ptl_event_t, sequence));
CHECK(offsetof(ptl_event_t, sequence) + sizeof(ptl_seq_t) + 8 > sizeof(ptl_event_t));

#if defined(__LP64__) && defined(__GNUC__)
/* Exact REF layout on LP64 (x86_64, aarch64). */
CHECK(sizeof(ptl_md_t) == 56);
CHECK(offsetof(ptl_md_t, length) == 8 && offsetof(ptl_md_t, threshold) == 16);
CHECK(offsetof(ptl_md_t, max_size) == 24 && offsetof(ptl_md_t, options) == 32);
CHECK(offsetof(ptl_md_t, user_ptr) == 40 && offsetof(ptl_md_t, eq_handle) == 48);
CHECK(sizeof(ptl_md_iovec_t) == 16);
CHECK(offsetof(ptl_event_t, initiator) == 4 && offsetof(ptl_event_t, uid) == 12);
CHECK(offsetof(ptl_event_t, jid) == 16 && offsetof(ptl_event_t, pt_index) == 20);
CHECK(offsetof(ptl_event_t, match_bits) == 24 && offsetof(ptl_event_t, rlength) == 32);
CHECK(offsetof(ptl_event_t, mlength) == 40 && offsetof(ptl_event_t, offset) == 48);
CHECK(offsetof(ptl_event_t, md_handle) == 56 && offsetof(ptl_event_t, md) == 64);
CHECK(offsetof(ptl_event_t, hdr_data) == 120 && offsetof(ptl_event_t, link) == 128);
CHECK(offsetof(ptl_event_t, ni_fail_type) == 132 && offsetof(ptl_event_t, sequence) == 136);
CHECK(sizeof(ptl_event_t) == 144);
#endif

/* ---- member types ---- */
#define EV(m) (((ptl_event_t *)0)->m)   /* unevaluated inside _Generic */
#define MD(m) (((ptl_md_t *)0)->m)
CHECK(SAME_TYPE(EV(type), ptl_event_kind_t));
CHECK(SAME_TYPE(EV(initiator), ptl_process_id_t));
CHECK(sizeof(EV(jid)) == sizeof(ptl_jid_t));
CHECK(SAME_TYPE(EV(rlength), ptl_size_t));
CHECK(SAME_TYPE(EV(md), ptl_md_t));
CHECK(SAME_TYPE(EV(hdr_data), ptl_hdr_data_t));
CHECK(SAME_TYPE(EV(link), ptl_seq_t));
CHECK(SAME_TYPE(EV(ni_fail_type), ptl_ni_fail_t));
CHECK(SAME_TYPE(&EV(sequence), volatile ptl_seq_t *));
CHECK(SAME_TYPE(MD(start), void *));
CHECK(SAME_TYPE(MD(threshold), int));
CHECK(SAME_TYPE(MD(max_size), ptl_size_t));
CHECK(SAME_TYPE(MD(options), unsigned int));
CHECK(SAME_TYPE(MD(eq_handle), ptl_handle_eq_t));

/* ---- special values (3.1) ---- */
CHECK(PTL_INVALID_HANDLE == 0xffffffff);
CHECK(PTL_HANDLE_NONE == 0x7fffffff);
CHECK(PTL_EQ_NONE == 0xbfffffff);
CHECK(SAME_TYPE(PTL_EQ_NONE, ptl_handle_eq_t));
CHECK(PTL_PT_INDEX_ANY == 0xffffffff);
CHECK(PTL_NID_ANY == 0xffffffff && PTL_PID_ANY == 0xffffffff);
CHECK(PTL_UID_ANY == 0xffffffff && PTL_JID_ANY == 0xffffffff);
CHECK(PTL_MD_THRESH_INF == -1);
CHECK(PTL_TIME_FOREVER == 0xffffffff && SAME_TYPE(PTL_TIME_FOREVER, ptl_time_t));
CHECK(PTL_NI_OK == 0 && PTL_NI_FAIL == 1);
CHECK(PTL_NI_PEER_DIED == 2 && PTL_NI_DROPPED == 3 && PTL_NI_CMA_FAILED == 4);
CHECK(PTL_RETAIN == 0 && PTL_UNLINK == 1);
CHECK(PTL_INS_BEFORE == 0 && PTL_INS_AFTER == 1);
CHECK(PTL_ACK_REQ == 0 && PTL_NO_ACK_REQ == 1 && PTL_NOACK_REQ == PTL_NO_ACK_REQ);

/* interfaces */
CHECK(PTL_IFACE_DEFAULT == 0xf0f0f000 && PTL_IFACE_DEFAULT == PTL_IFACE_UTCP);
CHECK(PTL_IFACE_UTCP0 == 0xf0f0f000 && PTL_IFACE_UTCP1 == 0xf0f0f001);
CHECK(PTL_IFACE_UTCP2 == 0xf0f0f002 && PTL_IFACE_UTCP3 == 0xf0f0f003);
CHECK(PTL_NALTYPE_UTCP == PTL_NALTYPE_UTCP0 && PTL_NALTYPE_NONE == 0);
CHECK(PTL_IFACE_SHM == 0xf0f0f100);

/* ---- MD options (3.2) ---- */
CHECK(PTL_MD_OP_PUT == 0x0001 && PTL_MD_OP_GET == 0x0002);
CHECK(PTL_MD_MANAGE_REMOTE == 0x0004 && PTL_MD_TRUNCATE == 0x0008);
CHECK(PTL_MD_ACK_DISABLE == 0x0010 && PTL_MD_IOVEC == 0x0020);
CHECK(PTL_MD_MAX_SIZE == 0x0040 && PTL_MD_EVENT_START_DISABLE == 0x0080);
CHECK(PTL_MD_EVENT_END_DISABLE == 0x100);
#if defined(PTL_MD_EVENT_AUTO_UNLINK_ENABLE) || defined(PTL_MD_FLAG_AUTO_UNLINK) || \
    defined(PTL_MD_EVENT_MANUAL_UNLINK_ENABLE) || defined(PTL_MD_LUSTRE_COMPLETION_SEMANTICS)
#error "Cray-only MD options must not be defined (clients default them to 0)"
#endif

/* ---- event kinds (3.3) ---- */
CHECK(PTL_EVENT_GET_START == 0 && PTL_EVENT_GET_END == 1);
CHECK(PTL_EVENT_PUT_START == 2 && PTL_EVENT_PUT_END == 3);
CHECK(PTL_EVENT_GETPUT_START == 4 && PTL_EVENT_GETPUT_END == 5);
CHECK(PTL_EVENT_REPLY_START == 6 && PTL_EVENT_REPLY_END == 7);
CHECK(PTL_EVENT_SEND_START == 8 && PTL_EVENT_SEND_END == 9);
CHECK(PTL_EVENT_ACK == 10 && PTL_EVENT_UNLINK == 11);

/* ---- status registers (3.4) ---- */
CHECK(PTL_SR_DROP_COUNT == 0 && PTL_SR_DROP_LENGTH == 1);
CHECK(PTL_SR_RECV_COUNT == 2 && PTL_SR_RECV_LENGTH == 3);
CHECK(PTL_SR_SEND_COUNT == 4 && PTL_SR_SEND_LENGTH == 5);
CHECK(PTL_SR_PTLS_MAX == 6 && PTL_SR_PTLS_CUR == 7);
CHECK(PTL_SR_MSGS_ALLOC == 8 && PTL_SR_MSGS_FREED == 9);
CHECK(PTL_SR_MSGS_MAX == 10 && PTL_SR_MSGS_CUR == 11);
CHECK(PTL_SR_MES_ALLOC == 12 && PTL_SR_MES_FREED == 13);
CHECK(PTL_SR_MES_MAX == 14 && PTL_SR_MES_CUR == 15);
CHECK(PTL_SR_MDS_ALLOC == 16 && PTL_SR_MDS_FREED == 17);
CHECK(PTL_SR_MDS_MAX == 18 && PTL_SR_MDS_CUR == 19);
CHECK(PTL_SR_EQS_ALLOC == 20 && PTL_SR_EQS_FREED == 21);
CHECK(PTL_SR_EQS_MAX == 22 && PTL_SR_EQS_CUR == 23);
CHECK(PTL_SR_MD_ALIGN_128 == 24 && PTL_SR_MD_ALIGN_64 == 25);
CHECK(PTL_SR_MD_ALIGN_32 == 26 && PTL_SR_MD_ALIGN_16 == 27);
CHECK(PTL_SR_MD_ALIGN_8 == 28 && PTL_SR_NAL_REGS_START == 29);

/* ---- return codes (4) ---- */
CHECK(PTL_OK == 0 && PTL_AC_INDEX_INVALID == 1 && PTL_EQ_DROPPED == 2);
CHECK(PTL_EQ_EMPTY == 3 && PTL_EQ_INVALID == 4 && PTL_FAIL == 5);
CHECK(PTL_HANDLE_INVALID == 6 && PTL_IFACE_INVALID == 7 && PTL_MD_ILLEGAL == 8);
CHECK(PTL_MD_INVALID == 9 && PTL_MD_IN_USE == 10 && PTL_MD_NO_UPDATE == 11);
CHECK(PTL_ME_INVALID == 12 && PTL_ME_IN_USE == 13 && PTL_ME_LIST_TOO_LONG == 14);
CHECK(PTL_NI_INVALID == 15 && PTL_NO_INIT == 16 && PTL_NO_SPACE == 17);
CHECK(PTL_PID_INVALID == 18 && PTL_PROCESS_INVALID == 19 && PTL_PT_FULL == 20);
CHECK(PTL_PT_INDEX_INVALID == 21 && PTL_SEGV == 22 && PTL_SR_INDEX_INVALID == 23);
CHECK(PTL_UNKNOWN_ERROR == 24 && PTL_MAX_ERRNO == 25);
CHECK(SAME_TYPE(PTL_MD_INVALID, ptl_err_t) || sizeof(ptl_err_t) == sizeof(int));
CHECK(PTL_IFACE_DUP == 26 && PTL_EQ_IN_USE == 27 && PTL_VAL_FAILED == 28);
#if !defined(PTL_IFACE_DUP) || !defined(PTL_EQ_IN_USE) || !defined(PTL_VAL_FAILED) || \
    !defined(PTL_MAX_ERRNO)
#error "Cray return codes and PTL_MAX_ERRNO must be macros"
#endif
CHECK(SAME_TYPE(ptl_err_str[0], const char *));

/* 3.2-spec aliases */
CHECK(PTL_NOINIT == PTL_NO_INIT && PTL_NOSPACE == PTL_NO_SPACE);
CHECK(PTL_INV_NI == PTL_NI_INVALID && PTL_INV_MD == PTL_MD_INVALID);
CHECK(PTL_INV_ME == PTL_ME_INVALID && PTL_INV_EQ == PTL_EQ_INVALID);
CHECK(PTL_INV_HANDLE == PTL_HANDLE_INVALID && PTL_INV_PROC == PTL_PROCESS_INVALID);
CHECK(PTL_INV_PTINDEX == PTL_PT_INDEX_INVALID && PTL_INV_SR_INDX == PTL_SR_INDEX_INVALID);
CHECK(PTL_AC_INV_INDEX == PTL_AC_INDEX_INVALID && PTL_ILL_MD == PTL_MD_ILLEGAL);
CHECK(PTL_INUSE == PTL_ME_IN_USE && PTL_MD_INUSE == PTL_MD_IN_USE);
CHECK(PTL_NOUPDATE == PTL_MD_NO_UPDATE && PTL_ML_TOOLONG == PTL_ME_LIST_TOO_LONG);
CHECK(PTL_INIT_INV == PTL_IFACE_INVALID && PTL_INIT_DUP == PTL_IFACE_DUP);

/* ---- debug bits ---- */
CHECK(PTL_DBG_NONE == 0 && PTL_DBG_ALL == 0x0000ffff && PTL_DBG_NI_ALL == 0xffff0000);
CHECK(PTL_DBG_API == 1 << 0 && PTL_DBG_PARSE == 1 << 1 && PTL_DBG_MOVE == 1 << 2);
CHECK(PTL_DBG_REQUEST == 1 << 3 && PTL_DBG_DELIVERY == 1 << 4 && PTL_DBG_MATCH == 1 << 5);
CHECK(PTL_DBG_DROP == 1 << 6 && PTL_DBG_ACCEPT == 1 << 7 && PTL_DBG_REJECT == 1 << 8);
CHECK(PTL_DBG_BOUNDS == 1 << 9 && PTL_DBG_ME == 1 << 10 && PTL_DBG_MD == 1 << 11);
CHECK(PTL_DBG_EQ == 1 << 12 && PTL_DBG_SHUTDOWN == 1 << 13);
CHECK(PTL_DBG_NI_00 == 1u << 16 && PTL_DBG_NI_07 == 1u << 23 && PTL_DBG_NI_15 == 1u << 31);

/* ---- function signatures (5) ---- */
int (*const sig_init)(int *) = PtlInit;
void (*const sig_fini)(void) = PtlFini;
int (*const sig_ni_init)(ptl_interface_t, ptl_pid_t, ptl_ni_limits_t *, ptl_ni_limits_t *,
			 ptl_handle_ni_t *) = PtlNIInit;
int (*const sig_ni_fini)(ptl_handle_ni_t) = PtlNIFini;
int (*const sig_ni_status)(ptl_handle_ni_t, ptl_sr_index_t, ptl_sr_value_t *) = PtlNIStatus;
int (*const sig_ni_dist)(ptl_handle_ni_t, ptl_process_id_t, unsigned long *) = PtlNIDist;
int (*const sig_ni_handle)(ptl_handle_any_t, ptl_handle_ni_t *) = PtlNIHandle;
int (*const sig_get_uid)(ptl_handle_ni_t, ptl_uid_t *) = PtlGetUid;
int (*const sig_get_id)(ptl_handle_ni_t, ptl_process_id_t *) = PtlGetId;
int (*const sig_get_jid)(ptl_handle_ni_t, ptl_jid_t *) = PtlGetJid;
int (*const sig_me_attach)(ptl_handle_ni_t, ptl_pt_index_t, ptl_process_id_t, ptl_match_bits_t,
			   ptl_match_bits_t, ptl_unlink_t, ptl_ins_pos_t,
			   ptl_handle_me_t *) = PtlMEAttach;
int (*const sig_me_attach_any)(ptl_handle_ni_t, ptl_pt_index_t *, ptl_process_id_t,
			       ptl_match_bits_t, ptl_match_bits_t, ptl_unlink_t,
			       ptl_handle_me_t *) = PtlMEAttachAny;
int (*const sig_me_insert)(ptl_handle_me_t, ptl_process_id_t, ptl_match_bits_t,
			   ptl_match_bits_t, ptl_unlink_t, ptl_ins_pos_t,
			   ptl_handle_me_t *) = PtlMEInsert;
int (*const sig_me_unlink)(ptl_handle_me_t) = PtlMEUnlink;
int (*const sig_md_attach)(ptl_handle_me_t, ptl_md_t, ptl_unlink_t,
			   ptl_handle_md_t *) = PtlMDAttach;
int (*const sig_md_bind)(ptl_handle_ni_t, ptl_md_t, ptl_unlink_t, ptl_handle_md_t *) = PtlMDBind;
int (*const sig_md_unlink)(ptl_handle_md_t) = PtlMDUnlink;
int (*const sig_md_update)(ptl_handle_md_t, ptl_md_t *, ptl_md_t *,
			   ptl_handle_eq_t) = PtlMDUpdate;
int (*const sig_eq_alloc)(ptl_handle_ni_t, ptl_size_t, ptl_eq_handler_t,
			  ptl_handle_eq_t *) = PtlEQAlloc;
int (*const sig_eq_free)(ptl_handle_eq_t) = PtlEQFree;
int (*const sig_eq_get)(ptl_handle_eq_t, ptl_event_t *) = PtlEQGet;
int (*const sig_eq_wait)(ptl_handle_eq_t, ptl_event_t *) = PtlEQWait;
int (*const sig_eq_poll)(ptl_handle_eq_t *, int, ptl_time_t, ptl_event_t *, int *) = PtlEQPoll;
int (*const sig_ac_entry)(ptl_handle_ni_t, ptl_ac_index_t, ptl_process_id_t, ptl_uid_t,
			  ptl_jid_t, ptl_pt_index_t) = PtlACEntry;
int (*const sig_put)(ptl_handle_md_t, ptl_ack_req_t, ptl_process_id_t, ptl_pt_index_t,
		     ptl_ac_index_t, ptl_match_bits_t, ptl_size_t, ptl_hdr_data_t) = PtlPut;
int (*const sig_put_region)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_ack_req_t,
			    ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t,
			    ptl_size_t, ptl_hdr_data_t) = PtlPutRegion;
int (*const sig_get)(ptl_handle_md_t, ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t,
		     ptl_match_bits_t, ptl_size_t) = PtlGet;
int (*const sig_get_region)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_process_id_t,
			    ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t,
			    ptl_size_t) = PtlGetRegion;
int (*const sig_get_put)(ptl_handle_md_t, ptl_handle_md_t, ptl_process_id_t, ptl_pt_index_t,
			 ptl_ac_index_t, ptl_match_bits_t, ptl_size_t,
			 ptl_hdr_data_t) = PtlGetPut;
int (*const sig_handle_is_equal)(ptl_handle_any_t, ptl_handle_any_t) = PtlHandleIsEqual;
int (*const sig_me_md_post)(ptl_handle_ni_t, ptl_handle_me_t, ptl_process_id_t,
			    ptl_match_bits_t, ptl_match_bits_t, ptl_unlink_t, ptl_ins_pos_t,
			    ptl_md_t, ptl_unlink_t, ptl_handle_me_t *, ptl_handle_md_t *,
			    ptl_handle_eq_t) = PtlMEMDPost;
int (*const sig_me_md_attach)(ptl_handle_ni_t, ptl_pt_index_t, ptl_process_id_t,
			      ptl_match_bits_t, ptl_match_bits_t, ptl_unlink_t, ptl_ins_pos_t,
			      ptl_md_t, ptl_unlink_t, ptl_handle_me_t *,
			      ptl_handle_md_t *) = PtlMEMDAttach;
int (*const sig_eq_peek)(ptl_handle_eq_t, ptl_event_t *) = PtlEQPeek;
int (*const sig_get_put_region)(ptl_handle_md_t, ptl_size_t, ptl_handle_md_t, ptl_size_t,
				ptl_size_t, ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t,
				ptl_match_bits_t, ptl_size_t, ptl_hdr_data_t) = PtlGetPutRegion;
const char *(*const sig_error_str)(unsigned int) = PtlErrorStr;
const char *(*const sig_ni_fail_str)(ptl_handle_ni_t, ptl_ni_fail_t) = PtlNIFailStr;
const char *(*const sig_event_kind_str)(ptl_event_kind_t) = PtlEventKindStr;
int (*const sig_progress)(ptl_handle_any_t, ptl_time_t) = PtlProgress;
unsigned int (*const sig_ni_debug)(ptl_handle_ni_t, unsigned int) = PtlNIDebug;
int (*const sig_tbl_dump)(ptl_handle_ni_t, int) = PtlTblDump;
int (*const sig_me_dump)(ptl_handle_me_t) = PtlMEDump;
int (*const sig_ni_eq_dump)(ptl_handle_ni_t) = PtlNIEqDump;
int (*const sig_set_rank)(ptl_handle_ni_t, unsigned, unsigned) = PtlSetRank;
int (*const sig_set_nid_map)(ptl_handle_ni_t, ptl_nid_t *, unsigned) = PtlSetNIDMap;
int (*const sig_set_pid_map)(ptl_handle_ni_t, ptl_pid_t *, unsigned) = PtlSetPIDMap;
int (*const sig_get_rank)(ptl_handle_ni_t, unsigned *, unsigned *) = PtlGetRank;
int (*const sig_get_rank_id)(ptl_handle_ni_t, unsigned, ptl_process_id_t *) = PtlGetRankId;
int (*const sig_get_nid_map)(ptl_handle_ni_t, ptl_nid_t *, unsigned) = PtlGetNIDMap;
int (*const sig_get_pid_map)(ptl_handle_ni_t, ptl_pid_t *, unsigned) = PtlGetPIDMap;
int (*const sig_set_jid)(ptl_handle_ni_t, ptl_jid_t) = PtlSetJID;

void (*const sig_handler)(ptl_event_t *) = PTL_EQ_HANDLER_NONE;

/* ---- <portals3_ext.h> (counting events, triggered operations, reductions) ---- */
CHECK(sizeof(ptl_handle_ct_t) == sizeof(ptl_handle_any_t));
CHECK(offsetof(ptl_ct_event_t, success) == 0 && offsetof(ptl_ct_event_t, failure) == 8);
CHECK(PTL_CT_INVALID == PTL_VAL_FAILED + 1 && PTL_ARG_INVALID == PTL_CT_INVALID + 1);
CHECK(PTL_CT_NONE != PTL_INVALID_HANDLE && PTL_CT_NONE != PTL_HANDLE_NONE &&
      PTL_CT_NONE != PTL_EQ_NONE);
CHECK((PTL_CT_SEND | PTL_CT_REPLY | PTL_CT_ACK | PTL_CT_COMM) == PTL_CT_ALL);
CHECK(PTL_SUM == 0 && PTL_BXOR == 5 && PTL_INT32_T == 0 && PTL_DOUBLE == 4);
int (*const sig_ct_alloc)(ptl_handle_ni_t, ptl_handle_ct_t *) = PtlCTAlloc;
int (*const sig_ct_free)(ptl_handle_ct_t) = PtlCTFree;
int (*const sig_ct_get)(ptl_handle_ct_t, ptl_ct_event_t *) = PtlCTGet;
int (*const sig_ct_wait)(ptl_handle_ct_t, ptl_size_t, ptl_ct_event_t *) = PtlCTWait;
int (*const sig_ct_set)(ptl_handle_ct_t, ptl_ct_event_t) = PtlCTSet;
int (*const sig_ct_inc)(ptl_handle_ct_t, ptl_ct_event_t) = PtlCTInc;
int (*const sig_md_bind_ct)(ptl_handle_md_t, ptl_handle_ct_t, unsigned int) = PtlMDBindCT;
int (*const sig_atomic_put)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_ack_req_t,
			    ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t,
			    ptl_size_t, ptl_hdr_data_t, ptl_op_t, ptl_datatype_t) = PtlAtomicPut;
int (*const sig_trig_put)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_ack_req_t,
			  ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t,
			  ptl_size_t, ptl_hdr_data_t, ptl_handle_ct_t, ptl_size_t) = PtlTriggeredPut;
int (*const sig_trig_get)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_process_id_t,
			  ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t, ptl_size_t,
			  ptl_handle_ct_t, ptl_size_t) = PtlTriggeredGet;
int (*const sig_trig_atomic)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_ack_req_t,
			     ptl_process_id_t, ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t,
			     ptl_size_t, ptl_hdr_data_t, ptl_op_t, ptl_datatype_t, ptl_handle_ct_t,
			     ptl_size_t) = PtlTriggeredAtomicPut;
int (*const sig_trig_ct_inc)(ptl_handle_ct_t, ptl_ct_event_t, ptl_handle_ct_t,
			     ptl_size_t) = PtlTriggeredCTInc;
int (*const sig_trig_ct_set)(ptl_handle_ct_t, ptl_ct_event_t, ptl_handle_ct_t,
			     ptl_size_t) = PtlTriggeredCTSet;
