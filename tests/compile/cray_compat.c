/*
 * cray_compat.c - a client written for Cray XT Portals (see
 * shared/docs/portals33-api.md section 8 and portals33-clients.md sections
 * D-E: GASNet, CCI, OrangeFS, LWFS, Lustre ptllnd idioms).
 *
 * Build-time check: it must compile and link unchanged against libportals.
 * It relies on the <portals/...> include paths, PTL_NOACK_REQ, the Cray
 * return codes being distinct macros (a switch listing all of them),
 * ptl_err_str[] and a client-declared ptl_event_str[], #ifndef defaults for
 * the Cray-only MD options, and a client macro for PtlHandleIsEqual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portals/portals3.h>
#include <portals/p3nal_utcp.h>
#include <portals/p3api/debug.h>

/* Cray-only options: clients default them to 0. */
#ifndef PTL_MD_EVENT_AUTO_UNLINK_ENABLE
#define PTL_MD_EVENT_AUTO_UNLINK_ENABLE 0
#endif
#ifndef PTL_MD_EVENT_MANUAL_UNLINK_ENABLE
#define PTL_MD_EVENT_MANUAL_UNLINK_ENABLE 0
#endif
#ifndef PTL_MD_FLAG_AUTO_UNLINK
#define PTL_MD_FLAG_AUTO_UNLINK 0
#endif
#ifndef PTL_MD_LUSTRE_COMPLETION_SEMANTICS
#define PTL_MD_LUSTRE_COMPLETION_SEMANTICS 0
#endif
/* Cray PE lacks PTL_EQ_HANDLER_NONE; LWFS/Trilinos default PTL_IFACE_DUP. */
#ifndef PTL_EQ_HANDLER_NONE
#define PTL_EQ_HANDLER_NONE NULL
#endif
#ifndef PTL_IFACE_DUP
#define PTL_IFACE_DUP PTL_OK
#endif

/* Cray exports this table; clients declare it themselves. */
extern const char *ptl_event_str[];

#define CRAY_PT_INDEX 37
#define CRAY_MATCH_BITS 0x5a5aULL

/* GASNet/CCI style: every return code in one switch (needs distinct values). */
static const char *rc_class(int rc)
{
	switch (rc) {
	case PTL_OK:
	case PTL_IFACE_DUP:
	case PTL_EQ_DROPPED:
		return "success";
	case PTL_EQ_EMPTY:
		return "empty";
	case PTL_AC_INDEX_INVALID:
	case PTL_EQ_INVALID:
	case PTL_HANDLE_INVALID:
	case PTL_IFACE_INVALID:
	case PTL_MD_ILLEGAL:
	case PTL_MD_INVALID:
	case PTL_ME_INVALID:
	case PTL_NI_INVALID:
	case PTL_PID_INVALID:
	case PTL_PROCESS_INVALID:
	case PTL_PT_INDEX_INVALID:
	case PTL_SR_INDEX_INVALID:
	case PTL_SEGV:
		return "bad argument";
	case PTL_MD_IN_USE:
	case PTL_MD_NO_UPDATE:
	case PTL_ME_IN_USE:
	case PTL_EQ_IN_USE:
		return "busy";
	case PTL_ME_LIST_TOO_LONG:
	case PTL_NO_SPACE:
	case PTL_PT_FULL:
	case PTL_VAL_FAILED:
		return "resources";
	case PTL_FAIL:
	case PTL_NO_INIT:
	case PTL_UNKNOWN_ERROR:
	default:
		return "failure";
	}
}

static void check(const char *what, int rc)
{
	if (rc == PTL_OK)
		return;
	fprintf(stderr, "%s: %s (%s)\n", what, ptl_err_str[rc], rc_class(rc));
	exit(EXIT_FAILURE);
}

static int handle_valid(ptl_handle_any_t h)
{
	return !PtlHandleIsEqual(h, PTL_INVALID_HANDLE);
}

/* Lustre ptllnd defines this for Cray, after including the header. */
#define PtlHandleIsEqual(a, b) ((a) == (b))

int main(void)
{
	ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
	ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
	ptl_handle_me_t me;
	ptl_handle_md_t recv_md, send_md;
	ptl_ni_limits_t actual;
	ptl_process_id_t me_id, any_id;
	ptl_pt_index_t pt;
	ptl_md_t md;
	ptl_event_t ev;
	char recv_buf[32], send_buf[32];
	int max_ifs, rc, done = 0;

	check("PtlInit", PtlInit(&max_ifs));
	rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &actual, &ni);
	switch (rc) {
	case PTL_OK:
	case PTL_IFACE_DUP:
		break;
	default:
		check("PtlNIInit", rc);
	}
	if (!handle_valid(ni) || PtlHandleIsEqual(ni, PTL_INVALID_HANDLE))
		check("PtlNIInit handle", PTL_NI_INVALID);
	check("PtlGetId", PtlGetId(ni, &me_id));
	pt = actual.max_pt_index >= CRAY_PT_INDEX ? CRAY_PT_INDEX
						  : (ptl_pt_index_t)actual.max_pt_index;
	any_id.nid = PTL_NID_ANY;
	any_id.pid = PTL_PID_ANY;
	check("PtlACEntry", PtlACEntry(ni, 0, any_id, PTL_UID_ANY, PTL_JID_ANY,
				       PTL_PT_INDEX_ANY));
	check("PtlEQAlloc", PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq));

	memset(&md, 0, sizeof(md));
	md.start = recv_buf;
	md.length = sizeof(recv_buf);
	md.threshold = 1;
	md.options = PTL_MD_OP_PUT | PTL_MD_TRUNCATE |
		     PTL_MD_EVENT_AUTO_UNLINK_ENABLE | PTL_MD_FLAG_AUTO_UNLINK;
	md.user_ptr = recv_buf;
	md.eq_handle = eq;
	check("PtlMEMDAttach", PtlMEMDAttach(ni, pt, any_id, CRAY_MATCH_BITS, 0,
					     PTL_UNLINK, PTL_INS_AFTER, md,
					     PTL_UNLINK, &me, &recv_md));

	strcpy(send_buf, "hello from Cray");
	md.start = send_buf;
	md.length = strlen(send_buf) + 1;
	md.threshold = PTL_MD_THRESH_INF;
	md.options = PTL_MD_EVENT_START_DISABLE | PTL_MD_LUSTRE_COMPLETION_SEMANTICS;
	md.user_ptr = NULL;
	check("PtlMDBind", PtlMDBind(ni, md, PTL_RETAIN, &send_md));
	check("PtlPut", PtlPut(send_md, PTL_NOACK_REQ, me_id, pt, 0,
			       CRAY_MATCH_BITS, 0, 0));

	/* Open MPI MTL: peek before taking; stop at PUT_END. */
	while (!done) {
		rc = PtlEQPeek(eq, &ev);
		if (rc == PTL_EQ_EMPTY)
			continue;
		rc = PtlEQWait(eq, &ev);
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
			check("PtlEQWait", rc);
		printf("%s ni_fail_type %u\n", ptl_event_str[ev.type],
		       (unsigned int)ev.ni_fail_type);
		if (ev.type == PTL_EVENT_PUT_END) {
			done = 1;
			if (strcmp((char *)ev.md.user_ptr, send_buf) != 0)
				check("payload", PTL_FAIL);
		}
	}

	check("PtlMDUnlink", PtlMDUnlink(send_md));
	check("PtlEQFree", PtlEQFree(eq));
	check("PtlNIFini", PtlNIFini(ni));
	PtlFini();
	printf("%s\n", ptl_err_str[PTL_OK]);
	return 0;
}
