/*
 * headers_cxx.cpp - every public header must compile as C++ (extern "C"
 * linkage, no C-only constructs). Built only when a C++ compiler is found.
 */
#include <portals3.h>
#include <p3nal_utcp.h>
#include <p3nal_shm.h>
#include <p3api/debug.h>
#include <p3rt/p3rt.h>
#include <portals/portals3.h>
#include <portals/p3nal_utcp.h>
#include <portals/p3api/debug.h>
#include <p3-config.h>
#include <p3utils.h>
#include <portals3_ext.h>

extern const char *ptl_event_str[];

int ptl_compile_headers_cxx(void);

int ptl_compile_headers_cxx(void)
{
	int (*put)(ptl_handle_md_t, ptl_ack_req_t, ptl_process_id_t, ptl_pt_index_t,
		   ptl_ac_index_t, ptl_match_bits_t, ptl_size_t, ptl_hdr_data_t) = PtlPut;
	const char *(*err)(unsigned int) = PtlErrorStr;
	ptl_eq_handler_t handler = PTL_EQ_HANDLER_NONE;
	ptl_event_kind_t kind = PTL_EVENT_ACK;
	ptl_ack_req_t ack = PTL_NOACK_REQ;
	timeout_val_t tmo;

	ptl_ct_event_t ct_ev = {1, 0};
	int (*tput)(ptl_handle_md_t, ptl_size_t, ptl_size_t, ptl_ack_req_t, ptl_process_id_t,
		    ptl_pt_index_t, ptl_ac_index_t, ptl_match_bits_t, ptl_size_t, ptl_hdr_data_t,
		    ptl_handle_ct_t, ptl_size_t) = PtlTriggeredPut;
	ptl_op_t op = PTL_SUM;
	ptl_datatype_t dt = PTL_INT32_T;

	set_timeout(&tmo, 0);
	if (tput == 0 || ct_ev.success != 1 || op != PTL_SUM || dt != PTL_INT32_T)
		return -1;
	return (put != 0) + (err != 0) + (handler == 0) + (int)kind + (int)ack +
	       (ptl_err_str[PTL_OK] != 0) + test_timeout(&tmo) +
	       (PTL_IFACE_DEFAULT == PTL_IFACE_UTCP);
}
