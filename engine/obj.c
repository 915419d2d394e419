/*
 * obj.c - per-NI object tables (ME, MD, EQ, CT) and handle lookup.
 * Tables are sized at PtlNIInit to the NI's limit plus PT_H_FREE_DEPTH and
 * never shrink before PtlNIFini (see handle.h for why). Free slots are
 * engine-owned FIFOs, reused only while more than PT_H_FREE_DEPTH are
 * queued; below that a never-used slot is taken. As the table exceeds the
 * limit by that depth, the queue never runs short once it has filled, and
 * a freed slot waits behind at least PT_H_FREE_DEPTH others (handle.h).
 */
#include "nic.h"
#include "pages.h"

#include <stdlib.h>
#include <string.h>

int pt_obj_tables_init(struct pt_nic *nic)
{
    nic->me_slots = (uint32_t)nic->limits.max_mes + PT_H_FREE_DEPTH;
    nic->md_slots = (uint32_t)nic->limits.max_mds + PT_H_FREE_DEPTH;
    nic->eq_slots = (uint32_t)nic->limits.max_eqs + PT_H_FREE_DEPTH;
    nic->ct_slots = nic->max_cts + PT_H_FREE_DEPTH;
    /* zeroed pages off the heap, touched as slots are first used (pages.h) */
    nic->cts = pt_pages_zalloc(nic->ct_slots * sizeof *nic->cts);
    nic->mes = pt_pages_zalloc(nic->me_slots * sizeof *nic->mes);
    nic->mds = pt_pages_zalloc(nic->md_slots * sizeof *nic->mds);
    nic->eqs = pt_pages_zalloc(nic->eq_slots * sizeof *nic->eqs);
    nic->portals = pt_pages_zalloc(nic->npt * sizeof *nic->portals);
    if (!nic->mes || !nic->mds || !nic->eqs || !nic->portals || !nic->cts) {
        pt_obj_tables_fini(nic);
        return PT_E_NOSPACE;
    }
    return PT_OK;
}

void pt_obj_tables_fini(struct pt_nic *nic)
{
    pt_pages_free(nic->mes, nic->me_slots * sizeof *nic->mes);
    pt_pages_free(nic->mds, nic->md_slots * sizeof *nic->mds);
    pt_pages_free(nic->eqs, nic->eq_slots * sizeof *nic->eqs);
    pt_pages_free(nic->portals, nic->npt * sizeof *nic->portals);
    pt_pages_free(nic->cts, nic->ct_slots * sizeof *nic->cts);
    nic->cts = NULL;
    nic->mes = NULL;
    nic->mds = NULL;
    nic->eqs = NULL;
    nic->portals = NULL;
}

/* Generic slot allocation over a table of objects that start with a tag and
 * carry idx/next_free members: the oldest free slot if more than
 * PT_H_FREE_DEPTH are queued, else a never-used one. */
#define OBJ_ALLOC(nic, tab, fq, hwm, cnt, max, slots, T)                           \
    do {                                                                           \
        T *o_;                                                                     \
        if ((nic)->cnt >= (uint32_t)(max))                                         \
            return NULL;                                                           \
        if ((nic)->fq.len > PT_H_FREE_DEPTH) {                                     \
            o_ = &(nic)->tab[(nic)->fq.head - 1];                                  \
            (nic)->fq.head = o_->next_free;                                        \
            if (!(nic)->fq.head)                                                   \
                (nic)->fq.tail = 0;                                                \
            (nic)->fq.len--;                                                       \
        } else if ((nic)->hwm < (nic)->slots) {                                    \
            o_ = &(nic)->tab[(nic)->hwm];                                          \
            o_->idx = (nic)->hwm++;                                                \
            ST_RELAXED(&o_->tag, (nic)->h_seed << 1); /* handle.h, pt_h_seed */     \
        } else {                                                                   \
            /* slots = max + PT_H_FREE_DEPTH: reached only while EQ                \
             * slots wait out a grace period (eqobj.c) */                          \
            return NULL;                                                           \
        }                                                                          \
        (nic)->cnt++;                                                              \
        return o_;                                                                 \
    } while (0)

/* A freed slot joins the tail of the queue. */
#define OBJ_ENQUEUE(nic, tab, fq, o)                                               \
    do {                                                                           \
        (o)->next_free = 0;                                                        \
        if ((nic)->fq.tail)                                                        \
            (nic)->tab[(nic)->fq.tail - 1].next_free = (o)->idx + 1;               \
        else                                                                       \
            (nic)->fq.head = (o)->idx + 1;                                         \
        (nic)->fq.tail = (o)->idx + 1;                                             \
        (nic)->fq.len++;                                                           \
    } while (0)

/* A slot that was allocated but never published goes back to the head, with
 * its generation: no handle named it, and the slots queued behind it wait
 * exactly as long as before. */
#define OBJ_UNALLOC(nic, fq, cnt, o)                                               \
    do {                                                                           \
        (o)->next_free = (nic)->fq.head;                                           \
        (nic)->fq.head = (o)->idx + 1;                                             \
        if (!(nic)->fq.tail)                                                       \
            (nic)->fq.tail = (o)->idx + 1;                                         \
        (nic)->fq.len++;                                                           \
        (nic)->cnt--;                                                              \
    } while (0)

/* The caller fills the body, then publishes with pt_obj_publish(). */
static inline void obj_free(_Atomic uint32_t *tag)
{
    uint32_t g = LD_RELAXED(tag) >> 1;
    ST_RELEASE(tag, pt_gen_next(g) << 1); /* dead; the next life gets a new generation */
}

struct pt_me *pt_me_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, mes, me_fq, me_hwm, me_cnt, nic->limits.max_mes, me_slots, struct pt_me);
}
struct pt_md *pt_md_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, mds, md_fq, md_hwm, md_cnt, nic->limits.max_mds, md_slots, struct pt_md);
}
struct pt_eqo *pt_eqo_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, eqs, eq_fq, eq_hwm, eq_cnt, nic->limits.max_eqs, eq_slots, struct pt_eqo);
}

struct pt_ct *pt_ct_alloc(struct pt_nic *nic)
{
    OBJ_ALLOC(nic, cts, ct_fq, ct_hwm, ct_cnt, nic->max_cts, ct_slots, struct pt_ct);
}

void pt_md_unalloc(struct pt_nic *nic, struct pt_md *md) { OBJ_UNALLOC(nic, md_fq, md_cnt, md); }

void pt_me_release(struct pt_nic *nic, struct pt_me *me)
{
    obj_free(&me->tag);
    OBJ_ENQUEUE(nic, mes, me_fq, me);
    nic->me_cnt--;
    nic->sr[PTL_SR_MES_FREED]++;
}
void pt_md_release(struct pt_nic *nic, struct pt_md *md)
{
    obj_free(&md->tag);
    OBJ_ENQUEUE(nic, mds, md_fq, md);
    nic->md_cnt--;
    nic->sr[PTL_SR_MDS_FREED]++;
}
void pt_ct_release(struct pt_nic *nic, struct pt_ct *ct)
{
    obj_free(&ct->tag);
    OBJ_ENQUEUE(nic, cts, ct_fq, ct);
    nic->ct_cnt--;
}
/* An EQ dies in two steps: its handle at PtlEQFree, its slot (and ring) once
 * no thread can still read the ring (eqobj.c). Until then the slot is on
 * neither list and counts against no limit but the table's. */
void pt_eqo_retire(struct pt_nic *nic, struct pt_eqo *e)
{
    if (nic->ev_eq == e) /* event.c's lookup cache */
        nic->ev_eq_h = PTL_EQ_NONE;
    obj_free(&e->tag);
    nic->eq_cnt--;
    nic->sr[PTL_SR_EQS_FREED]++;
}
void pt_eqo_enqueue(struct pt_nic *nic, struct pt_eqo *e) { OBJ_ENQUEUE(nic, eqs, eq_fq, e); }


uint32_t pt_ct_handle(struct pt_nic *nic, struct pt_ct *ct)
{
    return pt_h_make(PT_H_CT, nic->ni_index, LD_RELAXED(&ct->tag) >> 1, ct->idx);
}
