/* me.c - match entries (§5.4) and the combined ME+MD calls (§5.10). */
#include "api_int.h"

static int me_call(struct pt_nic *nic, struct pt_cmd *c, ptl_handle_me_t *me_handle,
                   ptl_pt_index_t *pt_p)
{
    struct pt_done d;
    int rc = pt_nic_call_out(nic, c, &d);
    if (rc == PT_OK) {
        *me_handle = d.h1;
        if (pt_p)
            *pt_p = d.u32;
    }
    return pt_ptl_err(rc);
}

PTL_API int PtlMEAttach(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                        ptl_process_id_t match_id, ptl_match_bits_t match_bits,
                        ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                        ptl_ins_pos_t position, ptl_handle_me_t *me_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!me_handle)
        return PTL_SEGV;
    if (pt_index > (ptl_pt_index_t)nic->limits.max_pt_index)
        return PTL_PT_INDEX_INVALID;
    struct pt_cmd c = {.op = PT_CMD_ME_ATTACH};
    c.u.me = (struct pt_cmd_me){0, pt_index, 0, match_id, match_bits, ignore_bits, unlink, position};
    return me_call(nic, &c, me_handle, NULL);
}

PTL_API int PtlMEAttachAny(ptl_handle_ni_t ni_handle, ptl_pt_index_t *pt_index,
                           ptl_process_id_t match_id, ptl_match_bits_t match_bits,
                           ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                           ptl_handle_me_t *me_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!me_handle || !pt_index)
        return PTL_SEGV;
    struct pt_cmd c = {.op = PT_CMD_ME_ATTACH};
    c.u.me = (struct pt_cmd_me){0, 0, 1, match_id, match_bits, ignore_bits, unlink, PTL_INS_AFTER};
    return me_call(nic, &c, me_handle, pt_index);
}

PTL_API int PtlMEInsert(ptl_handle_me_t base, ptl_process_id_t match_id,
                        ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
                        ptl_unlink_t unlink, ptl_ins_pos_t position, ptl_handle_me_t *me_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(base);
    if (!nic || !pt_me_lookup(nic, base))
        return PTL_ME_INVALID;
    if (!me_handle)
        return PTL_SEGV;
    struct pt_cmd c = {.op = PT_CMD_ME_ATTACH};
    c.u.me = (struct pt_cmd_me){base, 0, 0, match_id, match_bits, ignore_bits, unlink, position};
    return me_call(nic, &c, me_handle, NULL);
}

PTL_API int PtlMEUnlink(ptl_handle_me_t me_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(me_handle);
    if (!nic || !pt_me_lookup(nic, me_handle))
        return PTL_ME_INVALID;
    struct pt_cmd c = {.op = PT_CMD_ME_UNLINK, .h = me_handle};
    return pt_ptl_err(pt_nic_call(nic, &c));
}

/* REF extension: MEInsert (or MEAttach at the head when base is invalid) +
 * MDAttach, posting the MD only if `eq_handle` is empty (else it is left
 * inactive and PTL_MD_NO_UPDATE returned, as MDUpdate would). */
PTL_API int PtlMEMDPost(ptl_handle_ni_t ni_handle, ptl_handle_me_t base, ptl_process_id_t match_id,
                        ptl_match_bits_t match_bits, ptl_match_bits_t ignore_bits,
                        ptl_unlink_t unlink, ptl_ins_pos_t position, ptl_md_t md,
                        ptl_unlink_t unlink_op, ptl_handle_me_t *me_handle,
                        ptl_handle_md_t *md_handle, ptl_handle_eq_t eq_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!me_handle || !md_handle)
        return PTL_SEGV;
    if (!pt_me_lookup(nic, base))
        return PTL_ME_INVALID;
    struct pt_cmd c = {.op = PT_CMD_MEMD_POST};
    c.u.post.me = (struct pt_cmd_me){base, 0, 0, match_id, match_bits, ignore_bits, unlink, position};
    c.u.post.md = (struct pt_cmd_md){0, &md, unlink_op};
    c.u.post.test_eq = eq_handle;
    struct pt_done d;
    int rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK || rc == PT_E_NOUPDATE) {
        *me_handle = d.h1;
        *md_handle = d.h2;
    }
    return pt_ptl_err(rc);
}

/* Cray extension: MEAttach + MDAttach in one call. */
PTL_API int PtlMEMDAttach(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                          ptl_process_id_t match_id, ptl_match_bits_t match_bits,
                          ptl_match_bits_t ignore_bits, ptl_unlink_t unlink,
                          ptl_ins_pos_t position, ptl_md_t md, ptl_unlink_t unlink_op,
                          ptl_handle_me_t *me_handle, ptl_handle_md_t *md_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!me_handle || !md_handle)
        return PTL_SEGV;
    if (pt_index > (ptl_pt_index_t)nic->limits.max_pt_index)
        return PTL_PT_INDEX_INVALID;
    struct pt_cmd c = {.op = PT_CMD_MEMD_POST};
    c.u.post.me = (struct pt_cmd_me){0, pt_index, 0, match_id, match_bits, ignore_bits, unlink, position};
    c.u.post.md = (struct pt_cmd_md){0, &md, unlink_op};
    c.u.post.test_eq = PTL_EQ_NONE;
    struct pt_done d;
    int rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK) {
        *me_handle = d.h1;
        *md_handle = d.h2;
    }
    return pt_ptl_err(rc);
}
