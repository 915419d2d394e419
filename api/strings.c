/*
 * api/strings.c - names of return codes, event kinds and NI failure codes.
 *
 * Implements PtlErrorStr, PtlEventKindStr and PtlNIFailStr of
 * <p3api/misc.h> and the tables ptl_err_str[] (declared in <p3/errno.h>) and
 * ptl_event_str[] (exported but not declared: clients declare it themselves);
 * see shared/docs/portals33-api.md section 5.10. Each string is the
 * constant's own name. Pure functions of their arguments: any thread may call
 * them at any time, before PtlInit too.
 */
#include <portals3.h>
#include <p3/errno.h>

#include <stddef.h>

#define PTL_STR_ENTRY(name) [name] = #name

/* Every code from PTL_OK to PTL_VAL_FAILED; PTL_MAX_ERRNO itself is no code. */
PTL_API const char *ptl_err_str[PTL_MAX_ERRNO + 4] = {
	PTL_STR_ENTRY(PTL_OK),
	PTL_STR_ENTRY(PTL_AC_INDEX_INVALID),
	PTL_STR_ENTRY(PTL_EQ_DROPPED),
	PTL_STR_ENTRY(PTL_EQ_EMPTY),
	PTL_STR_ENTRY(PTL_EQ_INVALID),
	PTL_STR_ENTRY(PTL_FAIL),
	PTL_STR_ENTRY(PTL_HANDLE_INVALID),
	PTL_STR_ENTRY(PTL_IFACE_INVALID),
	PTL_STR_ENTRY(PTL_MD_ILLEGAL),
	PTL_STR_ENTRY(PTL_MD_INVALID),
	PTL_STR_ENTRY(PTL_MD_IN_USE),
	PTL_STR_ENTRY(PTL_MD_NO_UPDATE),
	PTL_STR_ENTRY(PTL_ME_INVALID),
	PTL_STR_ENTRY(PTL_ME_IN_USE),
	PTL_STR_ENTRY(PTL_ME_LIST_TOO_LONG),
	PTL_STR_ENTRY(PTL_NI_INVALID),
	PTL_STR_ENTRY(PTL_NO_INIT),
	PTL_STR_ENTRY(PTL_NO_SPACE),
	PTL_STR_ENTRY(PTL_PID_INVALID),
	PTL_STR_ENTRY(PTL_PROCESS_INVALID),
	PTL_STR_ENTRY(PTL_PT_FULL),
	PTL_STR_ENTRY(PTL_PT_INDEX_INVALID),
	PTL_STR_ENTRY(PTL_SEGV),
	PTL_STR_ENTRY(PTL_SR_INDEX_INVALID),
	PTL_STR_ENTRY(PTL_UNKNOWN_ERROR),
	[PTL_MAX_ERRNO] = "PTL_UNKNOWN_ERROR",
	PTL_STR_ENTRY(PTL_IFACE_DUP),
	PTL_STR_ENTRY(PTL_EQ_IN_USE),
	PTL_STR_ENTRY(PTL_VAL_FAILED),
};

/* Indexed by ptl_event_kind_t (Cray's table, same order as REF's enum). */
PTL_API const char *ptl_event_str[PTL_EVENT_UNLINK + 1] = {
	PTL_STR_ENTRY(PTL_EVENT_GET_START),
	PTL_STR_ENTRY(PTL_EVENT_GET_END),
	PTL_STR_ENTRY(PTL_EVENT_PUT_START),
	PTL_STR_ENTRY(PTL_EVENT_PUT_END),
	PTL_STR_ENTRY(PTL_EVENT_GETPUT_START),
	PTL_STR_ENTRY(PTL_EVENT_GETPUT_END),
	PTL_STR_ENTRY(PTL_EVENT_REPLY_START),
	PTL_STR_ENTRY(PTL_EVENT_REPLY_END),
	PTL_STR_ENTRY(PTL_EVENT_SEND_START),
	PTL_STR_ENTRY(PTL_EVENT_SEND_END),
	PTL_STR_ENTRY(PTL_EVENT_ACK),
	PTL_STR_ENTRY(PTL_EVENT_UNLINK),
};

static const char *const ni_fail_str[] = {
	PTL_STR_ENTRY(PTL_NI_OK),
	PTL_STR_ENTRY(PTL_NI_FAIL),
	PTL_STR_ENTRY(PTL_NI_PEER_DIED),
	PTL_STR_ENTRY(PTL_NI_DROPPED),
	PTL_STR_ENTRY(PTL_NI_CMA_FAILED),
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

PTL_API const char *PtlErrorStr(unsigned int ptl_errno)
{
	/* the extension's codes (<portals3_ext.h>), past the exported table */
	if (ptl_errno == 29)
		return "PTL_CT_INVALID";
	if (ptl_errno == 30)
		return "PTL_ARG_INVALID";
	if (ptl_errno >= ARRAY_LEN(ptl_err_str) || ptl_err_str[ptl_errno] == NULL)
		return "PTL_UNKNOWN_ERROR";
	return ptl_err_str[ptl_errno];
}

PTL_API const char *PtlEventKindStr(ptl_event_kind_t ev_kind)
{
	unsigned int kind = (unsigned int)ev_kind;

	if (kind >= ARRAY_LEN(ptl_event_str))
		return "PTL_UNKNOWN_EVENT_KIND";
	return ptl_event_str[kind];
}

/*
 * ni is unused: every libportals interface has the same failure codes (REF
 * asks the interface's NAL for codes above PTL_NI_FAIL).
 */
PTL_API const char *PtlNIFailStr(ptl_handle_ni_t ni, ptl_ni_fail_t nal_errno)
{
	(void)ni;
	if (nal_errno >= ARRAY_LEN(ni_fail_str))
		return "PTL_NI_UNKNOWN_ERROR";
	return ni_fail_str[nal_errno];
}
