/*
 * me.c - match entries and portal match lists (§6.1, §5.4). Engine-owned.
 */
#include "nic.h"

static void list_insert(struct pt_portal *p, struct pt_me *me, struct pt_me *base,
                        ptl_ins_pos_t pos)
{
    if (!base) { /* head (BEFORE) or tail (AFTER) of the portal's list */
        if (pos == PTL_INS_BEFORE) {
            me->prev = NULL;
            me->next = p->head;
            if (p->head) p->head->prev = me; else p->tail = me;
            p->head = me;
        } else {
            me->next = NULL;
            me->prev = p->tail;
            if (p->tail) p->tail->next = me; else p->head = me;
            p->tail = me;
        }
    } else if (pos == PTL_INS_BEFORE) {
        me->next = base;
        me->prev = base->prev;
        if (base->prev) base->prev->next = me; else p->head = me;
        base->prev = me;
    } else {
        me->prev = base;
        me->next = base->next;
        if (base->next) base->next->prev = me; else p->tail = me;
        base->next = me;
    }
    p->len++;
    p->used = 1;
}

int pt_me_cmd_attach(struct pt_nic *nic, const struct pt_cmd_me *a, uint32_t *h_p, uint32_t *pt_p)
{
    struct pt_me *base = NULL;
    uint32_t pt = a->pt_index;
    if (a->base_me) {
        base = pt_me_lookup(nic, a->base_me);
        if (!base)
            return PT_E_BADME;
        pt = base->pt_index;
    } else if (a->any) {
        for (pt = 0; pt < nic->npt && nic->portals[pt].used; pt++)
            ;
        if (pt == nic->npt)
            return PT_E_PTFULL;
    } else if (pt >= nic->npt) {
        return PT_E_BADPT;
    }
    if (a->unlink != PTL_UNLINK && a->unlink != PTL_RETAIN)
        return PT_E_ILLEGAL;
    if (a->pos != PTL_INS_BEFORE && a->pos != PTL_INS_AFTER)
        return PT_E_ILLEGAL;
    struct pt_portal *p = &nic->portals[pt];
    if (p->len >= (uint32_t)nic->limits.max_me_list)
        return PT_E_LISTLONG;
    struct pt_me *me = pt_me_alloc(nic);
    if (!me)
        return PT_E_NOSPACE;
    me->pt_index = pt;
    me->unlink = (uint8_t)a->unlink;
    me->match_id = a->match_id;
    me->match_bits = a->match_bits;
    me->ignore_bits = a->ignore_bits;
    me->md = NULL;
    list_insert(p, me, base, a->pos);
    nic->sr[PTL_SR_MES_ALLOC]++;
    pt_obj_publish(&me->tag);
    *h_p = pt_me_handle(nic, me);
    *pt_p = pt;
    return PT_OK;
}

/* Remove from its list and free (the MD, if any, is the caller's business). */
void pt_me_unlink_list(struct pt_nic *nic, struct pt_me *me)
{
    struct pt_portal *p = &nic->portals[me->pt_index];
    if (me->prev) me->prev->next = me->next; else p->head = me->next;
    if (me->next) me->next->prev = me->prev; else p->tail = me->prev;
    me->prev = me->next = NULL;
    p->len--;
    pt_me_release(nic, me);
}

int pt_me_cmd_unlink(struct pt_nic *nic, uint32_t h)
{
    struct pt_me *me = pt_me_lookup(nic, h);
    if (!me)
        return PT_E_BADME;
    struct pt_md *md = me->md;
    if (md && (md->pending || pt_cmdq_names_md(nic, pt_md_handle(nic, md))))
        return PT_E_MEINUSE;
    if (md) { /* the spec: the MD goes with the ME (REF only did so for PTL_UNLINK MDs) */
        md->me = NULL;
        me->md = NULL;
        pt_md_destroy(nic, md);
    }
    pt_me_unlink_list(nic, me);
    return PT_OK;
}
