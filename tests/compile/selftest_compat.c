/*
 * selftest_compat.c - a REF-style test program (after REF tests/selftest.c;
 * see shared/docs/portals33-clients.md section A) written the way REF test
 * programs are: <portals3.h>, the NAL header through P3_NAL
 * (-DP3_NAL=<p3nal_utcp.h>), the REF runtime, debug and string helpers, the
 * REF-internal shims <p3-config.h> and <p3utils.h>, and the old UTCP globals.
 *
 * Build-time check: it must compile and link unchanged against libportals.
 * When run, it puts a message to itself through an ME/MD on one portal and
 * expects SEND_START, SEND_END, PUT_START and PUT_END, then prints "Success!".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <p3-config.h>

#include <portals3.h>
#ifdef P3_NAL
#include P3_NAL
#else
#include <p3nal_utcp.h>
#endif
#include <p3rt/p3rt.h>
#include <p3api/debug.h>
#include <p3utils.h>

/* REF releases before 3.3.1 required the program to define these. */
FILE *utcp_api_out, *utcp_lib_out;

/* REF tests accept the Cray duplicate-init code when the header has one. */
#ifndef PTL_IFACE_DUP
#define PTL_IFACE_DUP 999999
#endif

#ifndef PTL_MD_EVENT_AUTO_UNLINK_ENABLE
#define PTL_MD_EVENT_AUTO_UNLINK_ENABLE 0
#endif

#define SELFTEST_PTL 4
#define SELFTEST_TIMEOUT_MS 10000

static void fail(const char *what, int rc)
{
	fprintf(stderr, "%s failed: %s\n", what, PtlErrorStr((unsigned int)rc));
	exit(EXIT_FAILURE);
}

static int wait_event(ptl_handle_eq_t eq_h, ptl_event_t *ev)
{
	timeout_val_t tmo;
	int rc;

	set_timeout(&tmo, SELFTEST_TIMEOUT_MS);
	for (;;) {
		rc = PtlEQGet(eq_h, ev);
		if (rc != PTL_EQ_EMPTY)
			break;
		if (test_timeout(&tmo)) {
			clear_timeout(&tmo);
			fprintf(stderr, "timed out waiting for an event\n");
			return PTL_EQ_EMPTY;
		}
	}
	clear_timeout(&tmo);
	return rc;
}

int main(int argc, char *argv[])
{
	static const ptl_event_kind_t expect[] = {
		PTL_EVENT_SEND_START, PTL_EVENT_SEND_END,
		PTL_EVENT_PUT_START, PTL_EVENT_PUT_END
	};
	unsigned int debug = PTL_DBG_NONE;
	unsigned int rank, size, seen = 0;
	int num_if, rc, i;
	ptl_handle_ni_t ni_h;
	ptl_ni_limits_t actual;
	ptl_process_id_t my_id;
	ptl_handle_eq_t eq_h;
	ptl_handle_me_t me_h;
	ptl_handle_md_t md_h;
	ptl_md_t md;
	ptl_event_t ev;
	char buf[64];

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "-d") == 0)
			debug = PTL_DBG_ALL | PTL_DBG_NI_ALL;

	if ((rc = PtlInit(&num_if)) != PTL_OK)
		fail("PtlInit", rc);
	if ((rc = PtlSetRank(PTL_INVALID_HANDLE, -1, -1)) != PTL_OK)
		fail("PtlSetRank", rc);
	PtlNIDebug(PTL_INVALID_HANDLE, debug);

	rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &actual, &ni_h);
	if (rc != PTL_OK && rc != PTL_IFACE_DUP)
		fail("PtlNIInit", rc);
	if ((rc = PtlGetRank(ni_h, &rank, &size)) != PTL_OK)
		fail("PtlGetRank", rc);
	if ((rc = PtlGetId(ni_h, &my_id)) != PTL_OK)
		fail("PtlGetId", rc);
	printf("rank %u of %u: nid %lu pid %lu, %d interfaces, max_pt_index %d\n",
	       rank, size, (unsigned long)my_id.nid, (unsigned long)my_id.pid,
	       num_if, actual.max_pt_index);

	if ((rc = PtlEQAlloc(ni_h, 16, PTL_EQ_HANDLER_NONE, &eq_h)) != PTL_OK)
		fail("PtlEQAlloc", rc);
	if ((rc = PtlMEAttach(ni_h, SELFTEST_PTL, my_id, 0, 0, PTL_RETAIN,
			      PTL_INS_BEFORE, &me_h)) != PTL_OK)
		fail("PtlMEAttach", rc);

	strcpy(buf, "Hello, self!");
	md.start = buf;
	md.length = sizeof(buf);
	md.threshold = PTL_MD_THRESH_INF;
	md.max_size = 0;
	md.options = PTL_MD_OP_PUT | PTL_MD_EVENT_AUTO_UNLINK_ENABLE;
	md.user_ptr = NULL;
	md.eq_handle = eq_h;
	if ((rc = PtlMDAttach(me_h, md, PTL_RETAIN, &md_h)) != PTL_OK)
		fail("PtlMDAttach", rc);

	if ((rc = PtlPut(md_h, PTL_NO_ACK_REQ, my_id, SELFTEST_PTL, 0, 0, 0, 0)) != PTL_OK)
		fail("PtlPut", rc);

	for (i = 0; i < 4; i++) {
		rc = wait_event(eq_h, &ev);
		if (rc != PTL_OK && rc != PTL_EQ_DROPPED)
			fail("PtlEQGet", rc);
		printf("event %s, ni_fail_type %s, mlength %lu\n",
		       PtlEventKindStr(ev.type), PtlNIFailStr(ni_h, ev.ni_fail_type),
		       (unsigned long)ev.mlength);
		if (ev.ni_fail_type != PTL_NI_OK)
			fail("event", PTL_FAIL);
		if (ev.type == expect[0] || ev.type == expect[1] ||
		    ev.type == expect[2] || ev.type == expect[3])
			seen |= 1u << ev.type;
	}
	if (seen != ((1u << PTL_EVENT_SEND_START) | (1u << PTL_EVENT_SEND_END) |
		     (1u << PTL_EVENT_PUT_START) | (1u << PTL_EVENT_PUT_END)))
		fail("event sequence", PTL_FAIL);

	if ((rc = PtlMDUnlink(md_h)) != PTL_OK)
		fail("PtlMDUnlink", rc);
	if ((rc = PtlMEUnlink(me_h)) != PTL_OK)
		fail("PtlMEUnlink", rc);
	if ((rc = PtlEQFree(eq_h)) != PTL_OK)
		fail("PtlEQFree", rc);
	if ((rc = PtlNIFini(ni_h)) != PTL_OK)
		fail("PtlNIFini", rc);
	PtlFini();

	printf("Success!\n");
	return 0;
}
