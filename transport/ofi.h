/*
 * ofi.h - the libfabric transport (ofi.c, ofi_*.c; ofi_int.h lists which file
 * holds what), built when PTL_WITH_OFI is on.
 *
 * pt_ofi_open attaches to the job region like pt_shm_open (identity,
 * liveness, trace area), then opens a libfabric RDM endpoint and publishes
 * its name through the address exchange below. Same contract as
 * pt_xport_open.
 */
#ifndef PT_OFI_H
#define PT_OFI_H

#include "xport.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How ranks learn each other's endpoint names: publish ours once, look a
 * peer's up (non-blocking: -EAGAIN while it has not published). On one host
 * the job region's rank records implement it (shm.h); a PMIx client
 * (PMIx_Put/Commit/Fence/Get) is the next implementation. */
struct ofi_addrx {
    void *ctx;
    int (*publish)(void *ctx, const void *name, size_t len); /* -EIO: it said why */
    int (*lookup)(void *ctx, uint32_t rank, void *name, size_t *len);
};

int pt_ofi_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                struct pt_xport_info *info_p);

/* The same over a PMIx job (pmix.c; PTL_WITH_PMIX): no job region. */
int pt_ofi_open_pmix(uint32_t slot_size, uint32_t queue_slots, const struct pt_xport_ops **ops_p,
                     struct pt_xport **x_p, struct pt_xport_info *info_p);

/* Does this provider's fi_trywait answer "safe to sleep" without looking at
 * the completion queue? libfabric's xnet core did until 1.19: its trywait
 * returned 0 even with completions already queued (read off the socket by an
 * earlier progress call, so the wait descriptor stays quiet); Debian 12's
 * 1.17 names it `net`, 1.18 `tcp` (its native RDM endpoint, and the message
 * endpoints under `tcp;ofi_rxm`, whose trywait asks theirs). prov_version is
 * fi_info's FI_VERSION(major, minor) of the provider (117.0 in 1.17). Pure:
 * unit_ofi tests it. */
bool pt_ofi_trywait_blind(const char *prov, uint32_t prov_version);

/* ptl_info: the providers libfabric offers for what the transport needs,
 * and the one PTL_OFI_PROVIDER (or the default rule) picks. */
void pt_ofi_describe(FILE *f);

#endif
