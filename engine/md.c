/*
 * md.c - memory descriptors: validation, activity, threshold, auto-unlink
 * (§6.3-§6.5, §6.12). Engine-owned; called by the token holder only.
 */
#include "nic.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Memory no process can have: more than half the address space, or past its
 * end (start + length wraps). PtlMDBind took a length of 2^64 - 1, or a
 * region from 2^64 - 4096, and a transfer then ran off the end (an
 * adversarial client). Whether the pages are mapped is not asked here: a
 * transfer's copy or pull says so (README, "Behaviour worth knowing"). */
static bool region_fits(const void *start, ptl_size_t length)
{
    uintptr_t s = (uintptr_t)start;
    return length <= (ptl_size_t)PTRDIFF_MAX && s + (uintptr_t)length >= s;
}

int pt_md_build(struct pt_nic *nic, struct pt_md *md, const ptl_md_t *umd, ptl_unlink_t op)
{
    if (op != PTL_UNLINK && op != PTL_RETAIN)
        return PT_E_ILLEGAL;
    if (umd->eq_handle != PTL_EQ_NONE) {
        if (pt_h_type(umd->eq_handle) != PT_H_EQ)
            return PT_E_BADEQ;
        if (pt_h_ni(umd->eq_handle) != nic->ni_index)
            return pt_eqo_lookup(nic, umd->eq_handle) ? PT_E_ILLEGAL : PT_E_BADEQ;
        if (!pt_eqo_lookup(nic, umd->eq_handle))
            return PT_E_BADEQ;
    }
    struct iovec *iov = NULL;
    if (umd->options & PTL_MD_IOVEC) {
        if (umd->length > (ptl_size_t)nic->limits.max_md_iovecs)
            return PT_E_ILLEGAL;
        if (umd->length && !umd->start)
            return PT_E_ILLEGAL;
        if (umd->length) {
            iov = malloc(umd->length * sizeof *iov);
            if (!iov)
                return PT_E_NOSPACE;
            const ptl_md_iovec_t *src = umd->start;
            ptl_size_t total = 0;
            for (ptl_size_t i = 0; i < umd->length; i++) {
                if ((!src[i].iov_base && src[i].iov_len) ||
                    !region_fits(src[i].iov_base, src[i].iov_len) ||
                    total + src[i].iov_len < total) {
                    free(iov);
                    return PT_E_ILLEGAL;
                }
                total += src[i].iov_len;
                iov[i].iov_base = src[i].iov_base;
                iov[i].iov_len = src[i].iov_len;
            }
        }
    } else if ((!umd->start && umd->length) || !region_fits(umd->start, umd->length)) {
        return PT_E_ILLEGAL;
    }
    free(md->iov);
    md->iov = iov;
    md->umd = *umd;
    if (md->umd.threshold < 0 && md->umd.threshold != PTL_MD_THRESH_INF)
        md->umd.threshold = 0; /* REF: any other negative value means inactive */
    md->ev_kinds = pt_md_ev_kinds(&md->umd);
    if (iov || (umd->options & PTL_MD_IOVEC))
        pt_mem_iovec(&md->mem, iov, (uint32_t)umd->length);
    else
        pt_mem_contig(&md->mem, umd->start, umd->length);
    md->local_off = 0;
    md->unlink_op = (uint8_t)op;
    md->unlink_due = 0;
    md->inactive_by_use = 0;
    return PT_OK;
}


void pt_md_destroy(struct pt_nic *nic, struct pt_md *md)
{
    struct pt_me *me = md->me;
    if (me) {
        me->md = NULL;
        md->me = NULL;
        if (me->unlink == PTL_UNLINK)
            pt_me_unlink_list(nic, me);
    }
    free(md->iov);
    md->iov = NULL;
    md->unlink_due = 0;
    pt_md_release(nic, md);
}

/* pt_md_check_unlink's (nic.h) when the MD is due. */
void pt_md_unlink_due(struct pt_nic *nic, struct pt_md *md, const ptl_event_t *cause)
{
    if (!md->unlink_due || !(LD_RELAXED(&md->tag) & 1u))
        return; /* not due, or already unlinked by an earlier step of this message */
    if (cause)
        md->unlink_ev = *cause;
    if (md->pending)
        return; /* after the last pending operation completes */
    ptl_event_t ev = md->unlink_ev;
    ev.ni_fail_type = PTL_NI_OK;
    pt_ev_post(nic, md, PTL_EVENT_UNLINK, &ev);
    pt_md_destroy(nic, md);
}
