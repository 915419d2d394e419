/*
 * nic_sig.h - the signature of the engine structures a dump reads from a
 * rank's memory (process_vm_readv, tools/ptl_dump.c). The rank publishes it
 * in its trace header (owner_sig, beside owner_addr = its struct pt_nic);
 * the dumper computes its own and reads the rank's state only when both
 * agree (same layouts: the same build of the engine), else it shows the
 * trace ring alone.
 */
#ifndef PT_NIC_SIG_H
#define PT_NIC_SIG_H

#include "nic.h"

#include <stddef.h>
#include <stdint.h>

static inline uint64_t pt_nic_layout_sig(void)
{
    const uint64_t v[] = {
        sizeof(struct pt_nic), offsetof(struct pt_nic, w), offsetof(struct pt_nic, cmdq),
        offsetof(struct pt_nic, ncmdq), offsetof(struct pt_nic, eqs),
        offsetof(struct pt_nic, eq_hwm), offsetof(struct pt_nic, ops),
        offsetof(struct pt_nic, nops), offsetof(struct pt_nic, sr), sizeof(struct pt_wait),
        sizeof(struct pt_op), offsetof(struct pt_op, rv), offsetof(struct pt_op, next),
        sizeof(struct pt_rndv), sizeof(struct pt_cmdq), sizeof(struct pt_eqo),
        sizeof(struct pt_eq), sizeof(struct pt_copyin), PT_MAX_CMDQ,
    };
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the numbers */
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        h ^= v[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Set up the NI's flight recorder (nic_trace.c): the job region's area for
 * this rank, or a private one; publishes the engine's address for dumps.
 * Called by pt_nic_create after pt_wait_init; harmless when tracing is off. */
void pt_nic_trace_start(struct pt_nic *nic);
/* The NIC thread says who it is (dumps name it). */
void pt_nic_trace_thread(struct pt_nic *nic);
/* Before the NIC is freed: dumps stop reading its memory. */
void pt_nic_trace_stop(struct pt_nic *nic);

#endif
