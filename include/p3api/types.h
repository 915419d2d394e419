/*
 * p3api/types.h - Portals 3.3 API types and constants (libportals).
 *
 * Follows the fact sheet shared/docs/portals33-api.md, section 2 (types) and
 * section 3 (constants): every type, member order and value is that of the
 * Sandia 3.3 reference implementation (REF). Spec section numbers in brackets
 * are the ones REF cites. Applications include <portals3.h>, not this file.
 */
#ifndef P3_P3API_TYPES_H
#define P3_P3API_TYPES_H

#include <stdint.h>

/*
 * PTL_API marks every exported function and object; the library is built with
 * hidden visibility, so only what carries PTL_API (and matches cmake/portals.map)
 * is exported.
 */
#ifndef PTL_API
#if defined(__GNUC__) || defined(__clang__)
#define PTL_API __attribute__((visibility("default")))
#else
#define PTL_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scalar types [3.2] ------------------------------------------------------- */

/*
 * [3.2.1] 64-bit unsigned, as in REF and the 3.3 spec. (Lustre p30 used 32 bits,
 * Cplant int; we follow REF.)
 */
typedef uint64_t ptl_size_t;

/*
 * [3.2.2] Handles are opaque 32-bit integers that encode the owning interface;
 * they compare with ==. (Lustre p30 used a struct; we follow REF and Cray.)
 */
typedef uint32_t ptl_handle_any_t;
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_me_t;
typedef ptl_handle_any_t ptl_handle_eq_t;

/* [3.2.2, 3.14.1] handle sentinels (REF values) */
#define PTL_INVALID_HANDLE  ((ptl_handle_any_t)0xffffffff)
#define PTL_HANDLE_NONE     ((ptl_handle_any_t)0x7fffffff)
/* "no event queue": MD eq_handle, PtlMDUpdate test queue, PtlEQAlloc(count 0) */
#define PTL_EQ_NONE         ((ptl_handle_eq_t)0xbfffffff)

/* [3.2.3] portal table and access control table indexes */
typedef uint32_t ptl_pt_index_t;
typedef uint32_t ptl_ac_index_t;

/* [3.12.1] wildcard portal index for PtlACEntry */
#define PTL_PT_INDEX_ANY    ((ptl_pt_index_t)0xffffffff)

/* [3.2.4] */
typedef uint64_t ptl_match_bits_t;

/* [3.2.5] network interface identifier (PTL_IFACE_* values, see <portals3.h>) */
typedef uint32_t ptl_interface_t;

/*
 * [3.2.6] identifiers. All 32 bits wide as in REF (Cray apparently used a
 * 16-bit pid; we follow REF).
 */
typedef uint32_t ptl_nid_t;
typedef uint32_t ptl_pid_t;
typedef uint32_t ptl_uid_t;
typedef uint32_t ptl_jid_t;

/* wildcards for match ids, ACL entries and PtlNIInit(pid) */
#define PTL_NID_ANY         0xffffffff
#define PTL_PID_ANY         0xffffffff
#define PTL_UID_ANY         0xffffffff
#define PTL_JID_ANY         0xffffffff

/* [3.2.7] status registers: index and value (REF: integer + #defines) */
typedef uint32_t ptl_sr_index_t;
typedef uint64_t ptl_sr_value_t;

/*
 * [3.2.7] status register indexes. Only PTL_SR_DROP_COUNT is required by the
 * spec; the others are REF's, with REF's values.
 */
#define PTL_SR_DROP_COUNT       0   /* requests dropped */
#define PTL_SR_DROP_LENGTH      1   /* bytes in dropped requests */
#define PTL_SR_RECV_COUNT       2
#define PTL_SR_RECV_LENGTH      3
#define PTL_SR_SEND_COUNT       4
#define PTL_SR_SEND_LENGTH      5
#define PTL_SR_PTLS_MAX         6
#define PTL_SR_PTLS_CUR         7
#define PTL_SR_MSGS_ALLOC       8
#define PTL_SR_MSGS_FREED       9
#define PTL_SR_MSGS_MAX         10
#define PTL_SR_MSGS_CUR         11
#define PTL_SR_MES_ALLOC        12
#define PTL_SR_MES_FREED        13
#define PTL_SR_MES_MAX          14
#define PTL_SR_MES_CUR          15
#define PTL_SR_MDS_ALLOC        16
#define PTL_SR_MDS_FREED        17
#define PTL_SR_MDS_MAX          18
#define PTL_SR_MDS_CUR          19
#define PTL_SR_EQS_ALLOC        20
#define PTL_SR_EQS_FREED        21
#define PTL_SR_EQS_MAX          22
#define PTL_SR_EQS_CUR          23
#define PTL_SR_MD_ALIGN_128     24
#define PTL_SR_MD_ALIGN_64      25
#define PTL_SR_MD_ALIGN_32      26
#define PTL_SR_MD_ALIGN_16      27
#define PTL_SR_MD_ALIGN_8       28
#define PTL_SR_NAL_REGS_START   29

/* ---- structures --------------------------------------------------------------- */

/*
 * [3.5.1] interface limits: REF's 8 int members in REF order. (The 3.2 spec
 * had 5 members with longer names; 3.3/REF renamed and extended them.)
 */
typedef struct {
	int max_mes;         /* match entries */
	int max_mds;         /* memory descriptors */
	int max_eqs;         /* event queues */
	int max_ac_index;    /* largest access control table index */
	int max_pt_index;    /* largest portal table index */
	int max_md_iovecs;   /* entries in a PTL_MD_IOVEC descriptor */
	int max_me_list;     /* match entries on one portal's list */
	int max_getput_md;   /* bytes in the put MD of PtlGetPut */
} ptl_ni_limits_t;

/* [3.7.1] process id: nid first, as in REF */
typedef struct {
	ptl_nid_t nid;
	ptl_pid_t pid;
} ptl_process_id_t;

/* [3.9.1] */
typedef enum {
	PTL_RETAIN = 0,
	PTL_UNLINK = 1
} ptl_unlink_t;

/* [3.9.1] PTL_INS_BEFORE = head of the list (or before base), AFTER = tail */
typedef enum {
	PTL_INS_BEFORE = 0,
	PTL_INS_AFTER = 1
} ptl_ins_pos_t;

/* [3.10.1] infinite MD threshold */
#define PTL_MD_THRESH_INF       (-1)

/* [3.10.1] MD options (ptl_md_t.options, bitwise OR), REF values */
#define PTL_MD_OP_PUT               0x0001
#define PTL_MD_OP_GET               0x0002
#define PTL_MD_MANAGE_REMOTE        0x0004
#define PTL_MD_TRUNCATE             0x0008
#define PTL_MD_ACK_DISABLE          0x0010
#define PTL_MD_IOVEC                0x0020
#define PTL_MD_MAX_SIZE             0x0040
#define PTL_MD_EVENT_START_DISABLE  0x0080
#define PTL_MD_EVENT_END_DISABLE    0x0100
/*
 * The Cray-only options (PTL_MD_EVENT_AUTO_UNLINK_ENABLE,
 * PTL_MD_EVENT_MANUAL_UNLINK_ENABLE, PTL_MD_FLAG_AUTO_UNLINK,
 * PTL_MD_LUSTRE_COMPLETION_SEMANTICS) are deliberately not defined: clients
 * default them to 0 with #ifndef, and we keep spec unlink-event semantics.
 */

/*
 * [3.10.1] memory descriptor; members in REF order. The 3.2 spec had
 * "unsigned int max_offset" and "eventq"; 3.3/REF have "ptl_size_t max_size"
 * and "eq_handle" (REF ChangeLog 3.3.0-8: renamed to match the spec). We
 * follow REF.
 */
typedef struct {
	void *start;                /* region, or ptl_md_iovec_t[] with PTL_MD_IOVEC */
	ptl_size_t length;          /* bytes, or iovec count with PTL_MD_IOVEC */
	int threshold;              /* operations left; PTL_MD_THRESH_INF; 0 = inactive */
	ptl_size_t max_size;        /* honoured only with PTL_MD_MAX_SIZE */
	unsigned int options;       /* PTL_MD_* */
	void *user_ptr;             /* opaque, echoed in events */
	ptl_handle_eq_t eq_handle;  /* or PTL_EQ_NONE */
} ptl_md_t;

/*
 * [3.10.2] one entry of a PTL_MD_IOVEC descriptor. REF optionally uses
 * struct iovec; ours is always this struct (same layout as struct iovec on
 * LP64 systems).
 */
typedef struct {
	void *iov_base;
	ptl_size_t iov_len;
} ptl_md_iovec_t;

/*
 * [3.11.1] event kinds, REF enum order = numeric value. (3.2 had *_FAIL kinds;
 * 3.3 reports failure through ni_fail_type of the END event.)
 */
typedef enum {
	PTL_EVENT_GET_START = 0,
	PTL_EVENT_GET_END = 1,
	PTL_EVENT_PUT_START = 2,
	PTL_EVENT_PUT_END = 3,
	PTL_EVENT_GETPUT_START = 4,
	PTL_EVENT_GETPUT_END = 5,
	PTL_EVENT_REPLY_START = 6,
	PTL_EVENT_REPLY_END = 7,
	PTL_EVENT_SEND_START = 8,
	PTL_EVENT_SEND_END = 9,
	PTL_EVENT_ACK = 10,
	PTL_EVENT_UNLINK = 11
} ptl_event_kind_t;

/* NI failure code in an event: PTL_NI_OK, or a PTL_NI_* code of <p3api/misc.h> */
typedef uint32_t ptl_ni_fail_t;
#define PTL_NI_OK               0

typedef uint32_t ptl_seq_t;
typedef uint64_t ptl_hdr_data_t;

/*
 * [3.11.4] event; members in REF order. The 3.2 spec had no jid and named two
 * members "portal" and "mem_desc"; we follow REF. REF declares jid as
 * ptl_uid_t; we use ptl_jid_t (same width, same layout).
 *
 * sequence is last and volatile: the library stores every other member
 * before it stores sequence.
 */
typedef struct {
	ptl_event_kind_t type;
	ptl_process_id_t initiator;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_pt_index_t pt_index;
	ptl_match_bits_t match_bits;
	ptl_size_t rlength;
	ptl_size_t mlength;
	ptl_size_t offset;
	ptl_handle_md_t md_handle;
	ptl_md_t md;
	ptl_hdr_data_t hdr_data;
	ptl_seq_t link;
	ptl_ni_fail_t ni_fail_type;
	volatile ptl_seq_t sequence;
} ptl_event_t;

/* [3.11.6] event queue handler, called with each dequeued event */
typedef void (*ptl_eq_handler_t)(ptl_event_t *event);
#define PTL_EQ_HANDLER_NONE     ((ptl_eq_handler_t)0)

/* [3.11.12] PtlEQPoll timeout in milliseconds */
typedef uint32_t ptl_time_t;
#define PTL_TIME_FOREVER        ((ptl_time_t)-1)

/*
 * [3.13.2] acknowledgement request. 3.3/REF spell it PTL_NO_ACK_REQ; Cray,
 * Lustre and the 3.2 spec spell it PTL_NOACK_REQ, provided as an alias.
 */
typedef enum {
	PTL_ACK_REQ = 0,
	PTL_NO_ACK_REQ = 1
} ptl_ack_req_t;
#ifndef PTL_NOACK_REQ
#define PTL_NOACK_REQ           PTL_NO_ACK_REQ
#endif

#ifdef __cplusplus
}
#endif

#endif /* P3_P3API_TYPES_H */
