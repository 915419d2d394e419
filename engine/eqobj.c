/* eqobj.c - EQ objects of an NI: create and free (the ring itself is eq/). */
#include "nic.h"

int pt_eq_cmd_alloc(struct pt_nic *nic, uint64_t count, ptl_eq_handler_t handler, uint32_t *h_p)
{
    if (count > (1u << 24))
        return PT_E_NOSPACE;
    struct pt_eqo *e = pt_eqo_alloc(nic);
    if (!e)
        return PT_E_NOSPACE;
    e->q = pt_eq_create(count, handler);
    if (!e->q) {
        /* never published: give the slot back without a generation bump */
        pt_eqo_unalloc(nic, e);
        return PT_E_NOSPACE;
    }
    nic->sr[PTL_SR_EQS_ALLOC]++;
    pt_obj_publish(&e->tag); /* q is visible before the handle validates */
    *h_p = pt_eqo_handle(nic, e);
    return PT_OK;
}

int pt_eq_cmd_free(struct pt_nic *nic, uint32_t h)
{
    struct pt_eqo *e = pt_eqo_lookup(nic, h);
    if (!e)
        return PT_E_BADEQ;
    struct pt_eq *q = e->q;
    pt_eqo_release(nic, e);
    /* REF frees regardless of MDs still naming it; events for it are then
     * dropped at post time (event.c looks the handle up). */
    pt_eq_destroy(q);
    e->q = NULL;
    return PT_OK;
}
