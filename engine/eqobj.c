/* eqobj.c - EQ objects of an NI: create and free (the ring itself is eq/). */
#include "nic.h"

/* API thread, outside the engine: the ring of a new EQ. Its memory can be
 * large (PtlEQAlloc(1 << 24): 2 GiB of address space); making it here keeps
 * the engine from stalling every rank's traffic while it is allocated. */
struct pt_eq *pt_eq_prepare(uint64_t count, ptl_eq_handler_t handler)
{
    if (count > (1u << 24))
        return NULL;
    return pt_eq_create(count, handler);
}

void pt_eq_discard(struct pt_eq *q) { pt_eq_destroy(q); }

/* Engine: give a prepared ring a slot and a handle. On failure the caller
 * still owns q. */
int pt_eq_cmd_alloc(struct pt_nic *nic, struct pt_eq *q, uint32_t *h_p)
{
    struct pt_eqo *e = pt_eqo_alloc(nic);
    if (!e)
        return PT_E_NOSPACE;
    e->q = q;
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
