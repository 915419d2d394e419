/* nic_trace.c - an NI's flight recorder: where its ring lives, and what a
 * dump needs to find the engine's state (util/trace.h, engine/nic_sig.h).
 *
 * In a job the rank's trace area always gets a valid header and the
 * engine's address, so that a dump can read the engine's state even with
 * the recorder off (PTL_TRACE=0); records are written only when it is on
 * (w.tr set). A loopback NI gets a private area only when recording. */
#include "nic_sig.h"

#include "trace.h"

#include <stdint.h>

void pt_nic_trace_start(struct pt_nic *nic)
{
    nic->w.tr = NULL;
    bool on = pt_trace_wanted();
    if (!nic->xi.trace_area && !on)
        return;
    struct pt_trace *t = pt_trace_attach(nic->xi.trace_area, nic->xi.trace_bytes, nic->xi.rank);
    if (!t)
        return;
    ST_RELAXED(&t->enabled, on);
    ST_RELAXED(&t->owner_sig, pt_nic_layout_sig());
    ST_RELAXED(&t->owner_addr, (uint64_t)(uintptr_t)nic);
    if (on)
        nic->w.tr = t;
}

void pt_nic_trace_thread(struct pt_nic *nic)
{
    struct pt_trace *t = nic->xi.trace_area ? nic->xi.trace_area : nic->w.tr;
    if (t && LD_ACQUIRE(&t->magic) == PT_TRACE_MAGIC)
        ST_RELAXED(&t->nic_tid, pt_trace_tid());
}

void pt_nic_trace_stop(struct pt_nic *nic)
{
    if (nic->xi.trace_area)
        pt_trace_detach(nic->xi.trace_area, false);
    else
        pt_trace_detach(nic->w.tr, true);
    nic->w.tr = NULL;
}
