/* nic_trace.c - an NI's flight recorder: where its ring lives, and what a
 * dump needs to find the engine's state (util/trace.h, engine/nic_sig.h). */
#include "nic_sig.h"

#include "trace.h"

#include <stdint.h>

void pt_nic_trace_start(struct pt_nic *nic)
{
    nic->w.tr = NULL;
    if (!pt_trace_wanted())
        return;
    struct pt_trace *t = pt_trace_attach(nic->xi.trace_area, nic->xi.trace_bytes, nic->xi.rank);
    if (!t)
        return;
    ST_RELAXED(&t->owner_sig, pt_nic_layout_sig());
    ST_RELAXED(&t->owner_addr, (uint64_t)(uintptr_t)nic);
    nic->w.tr = t;
}

void pt_nic_trace_thread(struct pt_nic *nic)
{
    if (nic->w.tr)
        ST_RELAXED(&nic->w.tr->nic_tid, pt_trace_tid());
}

void pt_nic_trace_stop(struct pt_nic *nic)
{
    pt_trace_detach(nic->w.tr, nic->xi.trace_area == NULL);
    nic->w.tr = NULL;
}
