/*
 * p3/errno.h - Portals 3.3 return codes (libportals).
 *
 * Follows shared/docs/portals33-api.md section 4: REF's ptl_err_t values 0..25
 * (alphabetical after PTL_OK, as in the 3.3 spec's summary table), plus the
 * Cray codes PTL_IFACE_DUP, PTL_EQ_IN_USE and PTL_VAL_FAILED as distinct
 * macros >= 26, plus the 3.2-spec names as aliases. Included by <portals3.h>.
 */
#ifndef P3_P3_ERRNO_H
#define P3_P3_ERRNO_H

#include "../p3api/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	PTL_OK = 0,
	PTL_AC_INDEX_INVALID = 1,
	PTL_EQ_DROPPED = 2,         /* success: event returned, earlier ones lost */
	PTL_EQ_EMPTY = 3,
	PTL_EQ_INVALID = 4,
	PTL_FAIL = 5,
	PTL_HANDLE_INVALID = 6,
	PTL_IFACE_INVALID = 7,
	PTL_MD_ILLEGAL = 8,
	PTL_MD_INVALID = 9,
	PTL_MD_IN_USE = 10,
	PTL_MD_NO_UPDATE = 11,
	PTL_ME_INVALID = 12,
	PTL_ME_IN_USE = 13,
	PTL_ME_LIST_TOO_LONG = 14,
	PTL_NI_INVALID = 15,
	PTL_NO_INIT = 16,
	PTL_NO_SPACE = 17,
	PTL_PID_INVALID = 18,
	PTL_PROCESS_INVALID = 19,
	PTL_PT_FULL = 20,
	PTL_PT_INDEX_INVALID = 21,
	PTL_SEGV = 22,
	PTL_SR_INDEX_INVALID = 23,
	PTL_UNKNOWN_ERROR = 24,     /* REF-only catch-all */
	PTL_MAX_ERRNO = 25          /* one past the last REF code */
} ptl_err_t;

/*
 * REF has PTL_MAX_ERRNO only as an enumerator; the self-referencing macro lets
 * clients test it with #ifdef (it still expands to the enumerator).
 */
#define PTL_MAX_ERRNO           PTL_MAX_ERRNO

/*
 * Cray return codes, not in REF. Macros, with values distinct from every REF
 * code: clients write "switch (rc) { case PTL_OK: case PTL_IFACE_DUP: ... }"
 * (an alias of PTL_OK would be a duplicate case) and others write
 * "#ifndef PTL_IFACE_DUP / #define PTL_IFACE_DUP ..." (needs a macro).
 */
#define PTL_IFACE_DUP           26  /* PtlNIInit: interface already initialised */
#define PTL_EQ_IN_USE           27  /* PtlEQFree: an MD still uses the EQ */
#define PTL_VAL_FAILED          28  /* memory registration failed */

/*
 * ptl_err_str[rc] is the name of return code rc ("PTL_MD_INVALID"), for every
 * rc from PTL_OK to PTL_VAL_FAILED (PTL_MAX_ERRNO + 4 entries). Exported as in
 * REF and Cray. (ptl_event_str[] is exported too, but deliberately not
 * declared here: clients declare it themselves, with varying constness.)
 */
PTL_API extern const char *ptl_err_str[];

/*
 * 3.2-spec (and Cplant/Lustre) names of the same codes, mapped to the 3.3
 * names. Each is guarded so that a client that defines its own first still
 * compiles.
 */
#ifndef PTL_NOINIT
#define PTL_NOINIT              PTL_NO_INIT
#endif
#ifndef PTL_NOSPACE
#define PTL_NOSPACE             PTL_NO_SPACE
#endif
#ifndef PTL_INV_NI
#define PTL_INV_NI              PTL_NI_INVALID
#endif
#ifndef PTL_INV_MD
#define PTL_INV_MD              PTL_MD_INVALID
#endif
#ifndef PTL_INV_ME
#define PTL_INV_ME              PTL_ME_INVALID
#endif
#ifndef PTL_INV_EQ
#define PTL_INV_EQ              PTL_EQ_INVALID
#endif
#ifndef PTL_INV_HANDLE
#define PTL_INV_HANDLE          PTL_HANDLE_INVALID
#endif
#ifndef PTL_INV_PROC
#define PTL_INV_PROC            PTL_PROCESS_INVALID
#endif
#ifndef PTL_INV_PTINDEX
#define PTL_INV_PTINDEX         PTL_PT_INDEX_INVALID
#endif
#ifndef PTL_INV_SR_INDX
#define PTL_INV_SR_INDX         PTL_SR_INDEX_INVALID
#endif
#ifndef PTL_AC_INV_INDEX
#define PTL_AC_INV_INDEX        PTL_AC_INDEX_INVALID
#endif
#ifndef PTL_ILL_MD
#define PTL_ILL_MD              PTL_MD_ILLEGAL
#endif
#ifndef PTL_INUSE
#define PTL_INUSE               PTL_ME_IN_USE
#endif
#ifndef PTL_MD_INUSE
#define PTL_MD_INUSE            PTL_MD_IN_USE
#endif
#ifndef PTL_NOUPDATE
#define PTL_NOUPDATE            PTL_MD_NO_UPDATE
#endif
#ifndef PTL_ML_TOOLONG
#define PTL_ML_TOOLONG          PTL_ME_LIST_TOO_LONG
#endif
#ifndef PTL_INIT_INV
#define PTL_INIT_INV            PTL_IFACE_INVALID
#endif
#ifndef PTL_INIT_DUP
#define PTL_INIT_DUP            PTL_IFACE_DUP
#endif

#ifdef __cplusplus
}
#endif

#endif /* P3_P3_ERRNO_H */
