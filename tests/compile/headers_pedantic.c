/*
 * headers_pedantic.c - every public header must compile cleanly in strict
 * ISO C (built as C90 and C99 with -pedantic-errors -Werror; see
 * CMakeLists.txt), in any order and more than once.
 */
#include <p3nal_utcp.h>
#include <p3nal_shm.h>
#include <portals3.h>
#include <portals3.h>
#include <p3api/types.h>
#include <p3api/api.h>
#include <p3api/misc.h>
#include <p3api/debug.h>
#include <p3/errno.h>
#include <p3/nal_types.h>
#include <p3/debug.h>
#include <p3rt/p3rt.h>
#include <portals/portals3.h>
#include <portals/p3nal_utcp.h>
#include <portals/p3api/debug.h>
#include <p3-config.h>
#include <p3utils.h>
#include <portals3_ext.h>
#include <portals3_ext.h>

/* Uses a few names so the unit is not empty and the macros expand cleanly. */
int ptl_compile_headers_pedantic(void);

/* The extension header's types and names. */
int ptl_compile_ext_pedantic(void);
int ptl_compile_ext_pedantic(void)
{
	ptl_ct_event_t ev;
	ptl_handle_ct_t ct = PTL_CT_NONE;
	ptl_op_t op = PTL_BXOR;
	ptl_datatype_t dt = PTL_DOUBLE;
	int (*wait)(ptl_handle_ct_t, ptl_size_t, ptl_ct_event_t *) = PtlCTWait;

	ev.success = 1;
	ev.failure = 0;
	return (int)ev.success + (ct == PTL_CT_NONE) + (int)op + (int)dt + (wait != 0) +
	       PTL_CT_INVALID + PTL_ARG_INVALID + (int)PTL_CT_ALL;
}

int ptl_compile_headers_pedantic(void)
{
	ptl_event_t ev;
	ptl_md_t md;
	ptl_md_iovec_t iov[2];
	ptl_ni_limits_t lim;
	ptl_handle_eq_t eqs[2];
	timeout_val_t tmo;
	ptl_interface_t ifaces[4];

	ifaces[0] = PTL_IFACE_DEFAULT;
	ifaces[1] = PTL_IFACE_UTCP;
	ifaces[2] = PTL_IFACE_SHM;
	ifaces[3] = PTL_NALTYPE_NONE;
	iov[0].iov_base = &lim;
	iov[0].iov_len = sizeof(lim);
	iov[1] = iov[0];
	md.start = iov;
	md.length = 2;
	md.threshold = PTL_MD_THRESH_INF;
	md.max_size = 0;
	md.options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_IOVEC | PTL_MD_MAX_SIZE;
	md.user_ptr = ifaces;
	md.eq_handle = PTL_EQ_NONE;
	ev.md = md;
	ev.type = PTL_EVENT_UNLINK;
	ev.ni_fail_type = PTL_NI_OK;
	ev.sequence = 0;
	eqs[0] = PTL_EQ_NONE;
	eqs[1] = PTL_INVALID_HANDLE;
	set_timeout(&tmo, 1);
	clear_timeout(&tmo);
	return (int)ev.type + (int)eqs[0] + test_timeout(&tmo) + PTL_SR_DROP_COUNT +
	       (PTL_DBG_ALL & PTL_DBG_API) + (PTL_NOACK_REQ == PTL_NO_ACK_REQ) +
	       (PTL_TIME_FOREVER != 0) + (PTL_EQ_HANDLER_NONE == 0) +
	       (PTL_NOSPACE == PTL_NO_SPACE) + (PTL_INIT_DUP == PTL_IFACE_DUP);
}
