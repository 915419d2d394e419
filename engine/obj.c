/*
 * obj.c - per-NI object tables (ME, MD, EQ) and handle lookup.
 * Tables are sized by the NI's limits at PtlNIInit and never shrink before
 * PtlNIFini (see handle.h for why). Free lists are engine-owned LIFOs.
 */
#include "nic.h"

#include <stdlib.h>
#include <string.h>

int pt_obj_tables_init(struct pt_nic *nic)
{
    nic->mes = calloc((size_t)nic->limits.max_mes, sizeof *nic->mes);
    nic->mds = calloc((size_t)nic->limits.max_mds, sizeof *nic->mds);
    nic->eqs = calloc((size_t)nic->limits.max_eqs, sizeof *nic->eqs);
    nic->portals = calloc(nic->npt, sizeof *nic->portals);
    if (!nic->mes || !nic->mds || !nic->eqs || !nic->portals) {
        pt_obj_tables_fini(nic);
        return PT_E_NOSPACE;
    }
    return PT_OK;
}

void pt_obj_tables_fini(struct pt_nic *nic)
{
    free(nic->mes);
    free(nic->mds);
    free(nic->eqs);
    free(nic->portals);
    nic->mes = NULL;
    nic->mds = NULL;
    nic->eqs = NULL;
    nic->portals = NULL;
}

/* Generic slot allocation over a table of objects that start with a tag and
 * carry idx/next_free members. */
#define OBJ_ALLOC(nic, tab, freel, hwm, cnt, max, T)                               \
    do {                                                                           \
        T *o_;                                                                     \
        if ((nic)->cnt >= (uint32_t)(max))                                         \
            return NULL;                                                           \
        if ((nic)->freel) {                                                        \
            o_ = &(nic)->tab[(nic)->freel - 1];                                    \
            (nic)->freel = o_->next_free;                                          \
        } else if ((nic)->hwm < (uint32_t)(max)) {                                 \
            o_ = &(nic)->tab[(nic)->hwm];                                          \
            o_->idx = (nic)->hwm++;                                                \
            ST_RELAXED(&o_->tag, 0);                                               \
        } else {                                                                   \
            return NULL;                                                           \
        }                                                                          \
        (nic)->cnt++;                                                              \
        return o_;                                                                 \
    } while (0)

/* The caller fills the body, then publishes with pt_obj_publish(). */
static inline void obj_free(_Atomic uint32_t *tag)
{
    uint32_t g = LD_RELAXED(tag) >> 1;
    ST_RELEASE(tag, pt_gen_next(g) << 1); /* dead; the next life gets a new generation */
}

struct pt_me *pt_me_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, mes, me_free, me_hwm, me_cnt, nic->limits.max_mes, struct pt_me);
}
struct pt_md *pt_md_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, mds, md_free, md_hwm, md_cnt, nic->limits.max_mds, struct pt_md);
}
struct pt_eqo *pt_eqo_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, eqs, eq_free, eq_hwm, eq_cnt, nic->limits.max_eqs, struct pt_eqo);
}

void pt_me_release(struct pt_nic *nic, struct pt_me *me)
{
    obj_free(&me->tag);
    me->next_free = nic->me_free;
    nic->me_free = me->idx + 1;
    nic->me_cnt--;
    nic->sr[PTL_SR_MES_FREED]++;
}
void pt_md_release(struct pt_nic *nic, struct pt_md *md)
{
    obj_free(&md->tag);
    md->next_free = nic->md_free;
    nic->md_free = md->idx + 1;
    nic->md_cnt--;
    nic->sr[PTL_SR_MDS_FREED]++;
}
void pt_eqo_release(struct pt_nic *nic, struct pt_eqo *e)
{
    obj_free(&e->tag);
    e->next_free = nic->eq_free;
    nic->eq_free = e->idx + 1;
    nic->eq_cnt--;
    nic->sr[PTL_SR_EQS_FREED]++;
}

#define OBJ_LOOKUP(nic, h, htype, tab, max)                                         \
    do {                                                                            \
        if (pt_h_type(h) != (htype) || pt_h_ni(h) != (nic)->ni_index)               \
            return NULL;                                                            \
        uint32_t i_ = pt_h_idx(h);                                                  \
        if (i_ >= (uint32_t)(max))                                                  \
            return NULL;                                                            \
        if (!pt_obj_live(&(nic)->tab[i_].tag, h))                                   \
            return NULL;                                                            \
        return &(nic)->tab[i_];                                                     \
    } while (0)

/* Lookups may run on API threads (validation): the tables are allocated to
 * their limit at NI init (never-used slots have tag 0, never live), so the
 * bound is immutable and the tag check (A1) alone decides liveness. */
struct pt_me *pt_me_lookup(struct pt_nic *nic, uint32_t h) { OBJ_LOOKUP(nic, h, PT_H_ME, mes, nic->limits.max_mes); }
struct pt_md *pt_md_lookup(struct pt_nic *nic, uint32_t h) { OBJ_LOOKUP(nic, h, PT_H_MD, mds, nic->limits.max_mds); }
struct pt_eqo *pt_eqo_lookup(struct pt_nic *nic, uint32_t h) { OBJ_LOOKUP(nic, h, PT_H_EQ, eqs, nic->limits.max_eqs); }

uint32_t pt_me_handle(struct pt_nic *nic, struct pt_me *me)
{
    return pt_h_make(PT_H_ME, nic->ni_index, LD_RELAXED(&me->tag) >> 1, me->idx);
}
uint32_t pt_md_handle(struct pt_nic *nic, struct pt_md *md)
{
    return pt_h_make(PT_H_MD, nic->ni_index, LD_RELAXED(&md->tag) >> 1, md->idx);
}
uint32_t pt_eqo_handle(struct pt_nic *nic, struct pt_eqo *e)
{
    return pt_h_make(PT_H_EQ, nic->ni_index, LD_RELAXED(&e->tag) >> 1, e->idx);
}
