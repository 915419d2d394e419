/* md.c - memory descriptors (§5.5, §6.11). */
#include "api_int.h"

static int md_validate_eq(struct pt_nic *nic, ptl_handle_eq_t eq)
{
    if (eq == PTL_EQ_NONE)
        return PTL_OK; /* valid on every NI (REF quirk §9.6 not copied) */
    struct pt_nic *owner = pt_api_nic_of(eq);
    if (!owner || pt_h_type(eq) != PT_H_EQ || !pt_eqo_lookup(owner, eq))
        return PTL_EQ_INVALID;
    return owner == nic ? PTL_OK : PTL_MD_ILLEGAL;
}

static int md_create(struct pt_nic *nic, uint32_t me, const ptl_md_t *md, ptl_unlink_t unlink_op,
                     ptl_handle_md_t *md_handle)
{
    int rc = md_validate_eq(nic, md->eq_handle);
    if (rc != PTL_OK)
        return rc;
    struct pt_cmd c = {.op = PT_CMD_MD_ATTACH};
    c.u.md = (struct pt_cmd_md){me, md, unlink_op};
    struct pt_done d;
    rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK)
        *md_handle = d.h1;
    return pt_ptl_err(rc);
}

PTL_API int PtlMDAttach(ptl_handle_me_t me_handle, ptl_md_t md, ptl_unlink_t unlink_op,
                        ptl_handle_md_t *md_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(me_handle);
    if (!nic || !pt_me_lookup(nic, me_handle))
        return PTL_ME_INVALID;
    if (!md_handle)
        return PTL_SEGV; /* REF (SPEC32 allowed NULL; open question §10.5) */
    PT_TM_BEGIN(t0);
    int rc = md_create(nic, me_handle, &md, unlink_op, md_handle);
    if (g_pt_timing_on) { /* "post the receive for the pong" */
        tls_pt_itm.ticks[PT_IS_POST_RECV] += pt_tsc() - t0;
        tls_pt_itm.count[PT_IS_POST_RECV]++;
    }
    return rc;
}

PTL_API int PtlMDBind(ptl_handle_ni_t ni_handle, ptl_md_t md, ptl_unlink_t unlink_op,
                      ptl_handle_md_t *md_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!md_handle)
        return PTL_SEGV;
    return md_create(nic, 0, &md, unlink_op, md_handle);
}

PTL_API int PtlMDUnlink(ptl_handle_md_t md_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(md_handle);
    if (!nic || !pt_md_lookup(nic, md_handle))
        return PTL_MD_INVALID;
    struct pt_cmd c = {.op = PT_CMD_MD_UNLINK, .h = md_handle};
    return pt_ptl_err(pt_nic_call(nic, &c));
}

PTL_API int PtlMDUpdate(ptl_handle_md_t md_handle, ptl_md_t *old_md, ptl_md_t *new_md,
                        ptl_handle_eq_t eq_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(md_handle);
    if (!nic || !pt_md_lookup(nic, md_handle))
        return PTL_MD_INVALID;
    if (eq_handle != PTL_EQ_NONE) {
        struct pt_nic *en = pt_api_nic_of(eq_handle);
        if (!en || en != nic || pt_h_type(eq_handle) != PT_H_EQ || !pt_eqo_lookup(en, eq_handle))
            return PTL_EQ_INVALID;
    }
    if (new_md) {
        int rc = md_validate_eq(nic, new_md->eq_handle);
        if (rc != PTL_OK)
            return rc;
    }
    struct pt_cmd c = {.op = PT_CMD_MD_UPDATE, .h = md_handle};
    c.u.upd.newmd = new_md;
    c.u.upd.oldmd = old_md;
    c.u.upd.test_eq = eq_handle;
    return pt_ptl_err(pt_nic_call(nic, &c));
}
