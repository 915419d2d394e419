/* err.c - the one place engine errors become PTL_* codes. */
#include "api_int.h"

#include <portals3_ext.h>

int pt_ptl_err(int rc)
{
    switch (rc) {
    case PT_OK: return PTL_OK;
    case PT_E_NOINIT: return PTL_NO_INIT;
    case PT_E_BADNI: return PTL_NI_INVALID;
    case PT_E_BADME: return PTL_ME_INVALID;
    case PT_E_BADMD: return PTL_MD_INVALID;
    case PT_E_BADEQ: return PTL_EQ_INVALID;
    case PT_E_BADPT: return PTL_PT_INDEX_INVALID;
    case PT_E_BADAC: return PTL_AC_INDEX_INVALID;
    case PT_E_BADSR: return PTL_SR_INDEX_INVALID;
    case PT_E_NOSPACE: return PTL_NO_SPACE;
    case PT_E_MEINUSE: return PTL_ME_IN_USE;
    case PT_E_MDINUSE: return PTL_MD_IN_USE;
    case PT_E_NOUPDATE: return PTL_MD_NO_UPDATE;
    case PT_E_LISTLONG: return PTL_ME_LIST_TOO_LONG;
    case PT_E_PTFULL: return PTL_PT_FULL;
    case PT_E_ILLEGAL: return PTL_MD_ILLEGAL;
    case PT_E_PROCESS: return PTL_PROCESS_INVALID;
    case PT_E_SEGV: return PTL_SEGV;
    case PT_E_IFACE: return PTL_IFACE_INVALID;
    case PT_E_PID: return PTL_PID_INVALID;
    case PT_E_HANDLE: return PTL_HANDLE_INVALID;
    case PT_E_BADCT: return PTL_CT_INVALID;
    case PT_E_ARG: return PTL_ARG_INVALID;
    default: return PTL_FAIL;
    }
}
