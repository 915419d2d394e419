/*
 * pmix_job.h - the job of a process started by a PMIx launcher (pmix.c),
 * built when PTL_WITH_PMIX is on: identity, liveness and the endpoint-name
 * exchange that the ofi transport takes from the job region otherwise.
 */
#ifndef PT_PMIX_JOB_H
#define PT_PMIX_JOB_H

#include "ofi.h"
#include "xport.h"

#include <stdbool.h>
#include <stdio.h>

#define PT_PMIX_NAME_MAX 256u /* an endpoint name (fi_getname) */

/* What ofi.c uses in place of the job region: ops (peer_alive, doorbell,
 * peer_ospid, rank_of, id_of, job_failed, close; the others are NULL) on x,
 * the address exchange, and a descriptor that becomes readable when the
 * launcher reports a death (ofi puts it in its sleep set and reads it). */
struct pt_pmix_sub {
    const struct pt_xport_ops *ops;
    struct pt_xport *x;
    struct ofi_addrx ax;
    int event_fd;
    bool all_local;  /* every rank of the job is on this node (PMIX_LOCAL_SIZE is
                      * the job size): a loopback address reaches them all */
};

/* Was this process started by a PMIx launcher (PMIX_NAMESPACE, PMIX_RANK)? */
bool pt_pmix_launched(void);
/* PMIx_Init, rank and size, the event handler. Fills info_p's rank,
 * nranks, nprocs, jid, cma_*, trace_*. 0 or -errno (message logged). */
int pt_pmix_open(struct pt_xport_info *info_p, struct pt_pmix_sub *sub_p);
/* The rank runtime (api/rt.c, PtlGetRank before any NI): rank and size from
 * PMIx. Holds a PMIx_Init until pt_pmix_rt_release (PtlFini). 0 or -errno. */
int pt_pmix_rank_size(uint32_t *rank_p, uint32_t *size_p);
void pt_pmix_rt_release(void);
/* ptl_info: the PMIx library's version, and whether we were launched by PMIx. */
void pt_pmix_describe(FILE *f);

#endif
