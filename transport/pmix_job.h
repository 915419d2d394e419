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

/* What ofi*.c use in place of the job region: ops (peer_alive, doorbell,
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
/* After the wire-up fence: were ranks a and b started on one machine (the
 * boot ids they published agree, or one is unknown)? */
bool pt_pmix_same_machine(uint32_t a, uint32_t b);
/* After pt_pmix_open: PMIX_LOCAL_SIZE (ranks of the job on this node; 0:
 * the launcher did not say), and 16 hex digits that name the job (a hash of
 * its namespace: the node regions' names, mix.c). */
uint32_t pt_pmix_local_size(void);
const char *pt_pmix_job_key(void);
/* pt_ofi_open_pmix after its pt_pmix_open (ofi_open.c): libfabric on the sub
 * (closed on failure). connect_later (mix.c): host mode's connections to
 * the peers wait for pt_ofi_serve, which must follow. */
int pt_ofi_open_pmix_sub(const struct pt_pmix_sub *sub, uint32_t slot_size, uint32_t queue_slots,
                         bool connect_later, const struct pt_xport_ops **ops_p,
                         struct pt_xport **x_p, struct pt_xport_info *info_p);
/* After pt_ofi_open_pmix_sub(connect_later): others[p] nonzero for the peers
 * another transport serves (NULL: none), which ofi never connects to, probes
 * or says bye to; then host mode's connections. 0 or -errno. */
int pt_ofi_serve(struct pt_xport *x, const uint8_t *others);
/* Every rank of the job on this node (mix.c, no ofi): fill every rank's nid
 * with ours without a fence, and have the death handler ring `wake` (the
 * engine's bell) after it marks the job failed. x: the sub from
 * pt_pmix_open. 0 or -errno. */
int pt_pmix_node_only(struct pt_xport *x, struct pt_waitword *wake);
/* The ofi transport's provider, for the wire check of the fence (ctx: the
 * exchange's, pt_pmix_sub.ax.ctx); before it publishes. */
void pt_pmix_wire_provider(void *ctx, const char *prov);
/* A PMIx job's transport chosen per peer (mix.c): libfabric opened as
 * pt_ofi_open_pmix, then the node region (shm.h, pt_shm_open_node) for the
 * ranks on this host. shm_only: PTL_TRANSPORT=shm, refused (-EHOSTUNREACH,
 * logged) when a rank is on another host. Same contract as pt_xport_open. */
int pt_mix_open_pmix(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint, bool shm_only,
                     const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p);
/* The rank runtime (api/rt.c, PtlGetRank before any NI): rank and size from
 * PMIx. Holds a PMIx_Init until pt_pmix_rt_release (PtlFini). 0 or -errno. */
int pt_pmix_rank_size(uint32_t *rank_p, uint32_t *size_p);
void pt_pmix_rt_release(void);
/* ptl_info: the PMIx library's version, and whether we were launched by PMIx. */
void pt_pmix_describe(FILE *f);

#endif
