/*
 * client_predefs.c - clients that define compatibility names themselves
 * before including the headers must still compile (the sheet's section 1
 * and section 4 "Name history" recommendations): PTL_IFACE_DEFAULT, the
 * 3.2-spec error names and PTL_NOACK_REQ are all guarded with #ifndef. The
 * NAL headers come after <portals3.h> and must keep the existing default.
 * ptl_event_str[] is declared here without const, as some Cray clients do.
 */
#define PTL_IFACE_DEFAULT 0xf0f0f100
#define PTL_NOSPACE 1001
#define PTL_INV_NI 1002
#define PTL_NOACK_REQ 1003

#include <portals3.h>
#include <p3nal_utcp.h>
#include <p3nal_shm.h>
#include <p3api/debug.h>

extern char *ptl_event_str[];

_Static_assert(PTL_IFACE_DEFAULT == PTL_IFACE_SHM, "client PTL_IFACE_DEFAULT kept");
_Static_assert(PTL_NOSPACE == 1001, "client PTL_NOSPACE kept");
_Static_assert(PTL_INV_NI == 1002, "client PTL_INV_NI kept");
_Static_assert(PTL_NOACK_REQ == 1003, "client PTL_NOACK_REQ kept");
_Static_assert(PTL_INV_MD == PTL_MD_INVALID, "other aliases still defined");

const char *ptl_compile_client_predefs(ptl_event_kind_t kind);

const char *ptl_compile_client_predefs(ptl_event_kind_t kind)
{
	return ptl_event_str[kind];
}
