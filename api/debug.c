/*
 * debug.c - REF's p3api/debug.h: PtlNIDebug keeps a mask (callable before
 * PtlNIInit with PTL_INVALID_HANDLE) and raises the log level for
 * PTL_DBG_* bits; the dumps print an NI's portal table through the engine.
 * Initiator-side stage timing storage lives here too.
 */
#include "api_int.h"

#include "log.h"

__thread struct pt_itiming tls_pt_itm;

static _Atomic unsigned g_dbg_mask;

PTL_API unsigned int PtlNIDebug(ptl_handle_ni_t ni, unsigned int mask)
{
    unsigned old = atomic_exchange(&g_dbg_mask, mask);
    if (mask & PTL_DBG_ALL)
        pt_log_set_level(PT_LOG_DEBUG);
    return old;
}

static int dump(struct pt_nic *nic, int what)
{
    struct pt_cmd c = {.op = PT_CMD_DUMP};
    c.u.dump_what = what;
    return pt_ptl_err(pt_nic_call(nic, &c));
}

PTL_API int PtlTblDump(ptl_handle_ni_t ni, int pt_index)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    return dump(nic, pt_index);
}

PTL_API int PtlMEDump(ptl_handle_me_t me)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(me);
    struct pt_me *m = nic ? pt_me_lookup(nic, me) : NULL;
    if (!m)
        return PTL_ME_INVALID;
    return dump(nic, (int)m->pt_index);
}

PTL_API int PtlNIEqDump(ptl_handle_ni_t ni)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    return dump(nic, -1);
}
