/*
 * event.c - posting events to an MD's EQ, honouring the START/END disable
 * options (§6.9): START_DISABLE drops *_START, END_DISABLE drops *_END; ACK
 * and UNLINK are dropped only when both are set (REF). Threshold accounting
 * and unlinking never depend on whether an event was posted.
 */
#include "nic.h"

static bool is_start(ptl_event_kind_t k)
{
    return k == PTL_EVENT_GET_START || k == PTL_EVENT_PUT_START || k == PTL_EVENT_GETPUT_START ||
           k == PTL_EVENT_REPLY_START || k == PTL_EVENT_SEND_START;
}
static bool is_end(ptl_event_kind_t k)
{
    return k == PTL_EVENT_GET_END || k == PTL_EVENT_PUT_END || k == PTL_EVENT_GETPUT_END ||
           k == PTL_EVENT_REPLY_END || k == PTL_EVENT_SEND_END;
}

void pt_ev_post(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind, ptl_event_t *ev)
{
    unsigned opt = md->umd.options;
    bool sd = opt & PTL_MD_EVENT_START_DISABLE, ed = opt & PTL_MD_EVENT_END_DISABLE;
    if ((is_start(kind) && sd) || (is_end(kind) && ed) || (sd && ed))
        return;
    if (md->umd.eq_handle == PTL_EQ_NONE)
        return;
    /* Look the EQ up at every post: an EQ freed under an MD (a user error the
     * spec allows) then loses events instead of corrupting memory. */
    struct pt_eqo *e = pt_eqo_lookup(nic, md->umd.eq_handle);
    if (!e)
        return;
    ev->type = kind;
    ev->md_handle = pt_md_handle(nic, md);
    pt_md_snapshot(md, &ev->md);
    if (is_start(kind)) /* START's link is its own sequence; its END carries the same */
        ev->link = (ptl_seq_t)LD_RELAXED(&e->q->write_count);
    pt_eq_post(e->q, ev);
    PT_TRACE(nic, PT_TR_EVENT, (uint64_t)kind | (uint64_t)ev->ni_fail_type << 8);
    nic->events_posted = true;
}
