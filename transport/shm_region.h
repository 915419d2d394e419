/*
 * shm_region.h - the job region: the one piece of memory the ranks of a job
 * share. Layout, and who writes and reads every shared field.
 *
 * Creation. The creator (ptlrun, or in named mode without ptlrun the rank that
 * wins the race to create it) sizes the region with pt_shm_layout(), writes
 * every field below, initialises every queue header and doorbell, and writes
 * `ready` last with ST_RELEASE (R-READY). A rank maps the region, LD_ACQUIREs
 * `ready` (A-READY, pairs with R-READY) and then checks magic, version, size
 * and the stored layout against its own pt_shm_layout() before it touches
 * anything else. Nothing in the region is a pointer: everything is an offset
 * from the region's base, because every process maps it at its own address.
 *
 * Layout (offsets from pt_shm_layout(), all cache-line or page aligned):
 *
 * A job has nranks ranks (started by the launcher, rank r is process slot r)
 * and nguests guest slots (slots nranks .. nranks + nguests - 1) for
 * processes that join the running job (a child that re-initialises Portals
 * after fork(), a process started outside ptlrun): P = nranks + nguests
 * process slots, and every part below is per process slot.
 *
 *   0          struct pt_shm_hdr                      (one page)
 *   off_ranks  struct pt_shm_rank[P]                  (256 bytes each)
 *   off_qhdrs  struct spsc_hdr[P][P][2]               receiver-major:
 *              [r][s][c] is the header of the queue from sender s to receiver
 *              r of class c (PT_CLS_REQ, PT_CLS_RSP). Packed together so that
 *              initialising a large job touches only these pages.
 *   off_slots  P blocks of recv_block bytes (page aligned), block r holds
 *              r's receive slots: [s][c] is qslots * slot_size bytes. Block r
 *              is bound to r's NUMA node when r attaches (first touch happens
 *              later, by the senders' writes, so the policy takes effect).
 *   off_trace  P trace areas of trace_bytes (PT_TRACE_AREA_BYTES), area
 *              r is slot r's flight recorder (util/trace.h): written by its
 *              process only, read by dumps (ptlrun), which may find it in any
 *              state.
 *
 * Guests (docs/architecture.md, "Processes that join a job"). A guest slot
 * is free when its ospid is 0 (never used, or its last owner detached) or
 * names a process that no longer runs. A joining process claims it with
 * RMW_CAS(ospid: that value -> its own OS pid) (G-CLAIM; exactly one of
 * racing claimers wins), stores state CLAIMING, its Portals nid/pid and
 * probe_addr, makes sure no rank and no other live guest uses that pid
 * (FENCE_FULL, then it reads the other guests' pids: of two claimers of one
 * pid at least one sees the other and gives way), raises guests_hwm and
 * publishes ATTACHED with ST_RELEASE (R-ATT, as a rank). PtlNIFini: state
 * DETACHED (R-ATT's partner), then ospid 0 (ST_RELEASE: the slot is free).
 * Peers find guests that attached after they did by rescanning the guest
 * records (LD_ACQUIRE state == ATTACHED (A-ATT), then nid/pid) when an id is
 * not a rank's; the launcher polls their ospids (it cannot waitpid them).
 *
 * Queues. Each (s, r, c) queue is a util/spsc.h ring: producer is the token
 * holder of rank s's engine, consumer the token holder of rank r's engine.
 * The spsc_hdr comment names the orderings (R1/A1 head, R2/A2 tail).
 */
#ifndef PT_SHM_REGION_H
#define PT_SHM_REGION_H

#include "futex.h"
#include "pt_atomic.h"
#include "spsc.h"

#include <stdint.h>

#define PT_SHM_MAGIC     0x31524a4c54500a7fULL  /* "\x7f\nPTLJR1" little-endian  */
#define PT_SHM_VERSION   4u                     /* 2: trace areas; 3: guests; 4: endpoint names */
#define PT_SHM_PAGE      4096u                  /* layout alignment (not sysconf:
                                                 * every process must agree)    */
#define PT_SHM_MAX_RANKS 1024u
#define PT_SHM_MAX_GUESTS 256u                  /* PTL_JOB_GUESTS ceiling        */
#define PT_SHM_MAX_PROCS (PT_SHM_MAX_RANKS + PT_SHM_MAX_GUESTS)
#define PT_SHM_MAX_BYTES (1ULL << 44)           /* refuse absurd regions (16 TiB
                                                 * of address space)           */

/* Rank attach states (pt_shm_rank.state). */
enum { PT_SHM_R_NONE = 0, PT_SHM_R_ATTACHED = 1, PT_SHM_R_DETACHED = 2,
       PT_SHM_R_CLAIMING = 3 /* guests: claimed, not yet attached */ };

/* Region flags (pt_shm_hdr.flags). */
enum { PT_SHM_F_NAMED = 1u << 0 };   /* a POSIX shm name exists until all attached */

/*
 * The header. Lines 0-1 are written by the creator before R-READY and never
 * again (immutable; read plainly after A-READY). The later lines are live.
 */
struct pt_shm_hdr {
    uint64_t magic;            /* PT_SHM_MAGIC                                  */
    uint32_t version;          /* PT_SHM_VERSION                                */
    uint32_t hdr_size;         /* sizeof(struct pt_shm_hdr)                     */
    uint64_t total_size;       /* bytes of the whole region                     */
    int32_t owner_pid;         /* creator's OS pid (ptlrun, or the creating rank)
                                * written first of all, so stale-segment cleanup
                                * can judge even a region that never got ready */
    uint32_t nranks;
    uint32_t slot_size;        /* bytes per slot, the job's (see pt_slot_size_for) */
    uint32_t qslots;           /* slots per queue, both classes (power of two)  */
    uint32_t jid;              /* Portals job id                                */
    uint32_t flags;            /* PT_SHM_F_*                                    */
    uint64_t off_ranks, off_qhdrs, off_slots;   /* copy of pt_shm_layout()      */
    uint64_t queue_bytes, recv_block;
    uint64_t owner_probe_addr; /* address, in the owner's address space, of a
                                * word holding PT_SHM_MAGIC: the CMA probe target
                                * when no peer has attached yet                 */
    uint64_t off_trace, trace_bytes; /* copy of pt_shm_layout(): trace areas     */
    uint32_t nguests;          /* guest process slots after the ranks           */

    /* Creator: ST_RELEASE(1) after everything else (R-READY).
     * Ranks: LD_ACQUIRE (A-READY) before reading anything else.               */
    PT_ALIGNED _Atomic uint32_t ready;

    /* Job failure. Written by the launcher (RMW_CAS 0 -> PTL_NI_* code) when
     * a rank dies or the job times out, followed by pt_wake_all() on every
     * doorbell. Read by any thread of any rank with LD_RELAXED (xport op
     * job_failed): a monotonic flag that publishes no other data, so no
     * acquire is needed; the dead flags it summarises are read separately.   */
    PT_ALIGNED _Atomic uint32_t job_failed;
    _Atomic int32_t first_dead;  /* launcher: rank whose death failed the job, or
                                  * -1 (RMW_CAS with job_failed's writer; read
                                  * relaxed for messages only)                 */
    /* Ranks: RMW_ADD(1) on their first attach. The rank that brings it to
     * nranks unlinks the POSIX name (named mode). Read relaxed by the launcher
     * (reporting).                                                           */
    _Atomic uint32_t nattached;
    /* Guests: 1 + the highest guest slot ever claimed, raised with RMW_CAS
     * before the claimer publishes ATTACHED (it never decreases). Read
     * LD_ACQUIRE by receivers when a poll found nothing, to extend the
     * senders they scan (always clamped to nguests). */
    _Atomic uint32_t guests_hwm;
    uint8_t pad_[PT_SHM_PAGE - 3 * PT_CACHELINE - 4 * sizeof(uint32_t)];
};
_Static_assert(sizeof(struct pt_shm_hdr) == PT_SHM_PAGE, "pt_shm_hdr is exactly one page");
_Static_assert(offsetof(struct pt_shm_hdr, ready) == 2 * PT_CACHELINE,
               "pt_shm_hdr: identity in lines 0-1, ready on line 2");

/*
 * One record per rank. Line 0: the rank's doorbell, a process-shared
 * pt_waitword (futex.h protocol: the rank's NIC thread or host-mode waiter
 * announces sleep there; senders ring it in commit, the launcher rings all of
 * them when the job fails). Line 1: identity and liveness.
 */
struct pt_shm_rank {
    PT_ALIGNED struct pt_waitword bell;

    PT_ALIGNED _Atomic int32_t ospid; /* OS pid. Ranks: the launcher writes it
                                       * (ST_RELAXED) right after fork; the rank
                                       * claims the record at attach with RMW_CAS
                                       * (that value, its own or a dead process's
                                       * -> its pid) before R-ATT. Guests: G-CLAIM
                                       * above. Peers read it LD_RELAXED (kill(0)
                                       * and process_vm_readv need no ordering
                                       * beyond A-ATT).                          */
    /* Portals id. Ranks: the creator's, immutable. Guests: the claimer's,
     * ST_RELAXED before R-ATT; peers LD_RELAXED after A-ATT (any value is
     * harmless: it is only compared).                                       */
    _Atomic uint32_t nid, pid;
    /* Rank: ST_RELEASE(ATTACHED) at attach after ospid and probe_addr (R-ATT);
     * ST_RELEASE(DETACHED) at orderly close. Peers and the launcher
     * LD_ACQUIRE it (A-ATT) before reading probe_addr.                        */
    _Atomic uint32_t state;
    /* Launcher only: ST_RELAXED(1) when the rank exited non-zero or by a
     * signal, before the RMW on job_failed. Read LD_RELAXED by peer_alive.    */
    _Atomic uint32_t dead;
    _Atomic int32_t wstatus;          /* launcher: waitpid status once reaped
                                       * (diagnostics; relaxed both ways)       */
    /* Rank: address of a word holding PT_SHM_MAGIC in its own memory, written
     * ST_RELAXED before R-ATT; peers read it after A-ATT for the CMA probe.   */
    _Atomic uint64_t probe_addr;
    uint8_t pad_[PT_CACHELINE - 4 * sizeof(uint32_t) - 2 * sizeof(int32_t) - sizeof(uint64_t)];

    /* Lines 2-3: the rank's network endpoint name, for transports that
     * address peers by name (ofi; shm.h pt_shm_ep_publish/lookup). Written
     * by the rank only: ep_len ST_RELEASE(0), the name bytes, ep_gen + 1,
     * then ep_len ST_RELEASE(len) (R-EP). Peers LD_ACQUIRE ep_len (A-EP),
     * copy the name and ep_gen, and LD_ACQUIRE ep_len again: a different
     * value means a re-publish raced the copy (try again later).          */
    PT_ALIGNED _Atomic uint32_t ep_len;
    _Atomic uint32_t ep_gen;
    uint8_t ep_name[2 * PT_CACHELINE - 2 * sizeof(uint32_t)];
};
_Static_assert(sizeof(struct pt_shm_rank) == 4 * PT_CACHELINE,
               "pt_shm_rank: doorbell line + identity line + two endpoint-name lines");
_Static_assert(sizeof(struct pt_waitword) <= PT_CACHELINE, "the doorbell fits its line");

/* Byte offsets of every part of a region; the ONE place the layout is computed. */
struct pt_shm_layout {
    uint32_t nprocs;       /* process slots: nranks + nguests                    */
    uint64_t off_ranks;    /* struct pt_shm_rank[nprocs]                         */
    uint64_t off_qhdrs;    /* struct spsc_hdr[nprocs][nprocs][PT_CLS_NR]         */
    uint64_t off_slots;    /* nprocs receive blocks                              */
    uint64_t queue_bytes;  /* qslots * slot_size: one queue's slots              */
    uint64_t recv_block;   /* one receiver's slots, page rounded                 */
    uint64_t off_trace;    /* nprocs trace areas (util/trace.h)                  */
    uint64_t trace_bytes;  /* one rank's trace area                              */
    uint64_t total;        /* region size                                        */
};

/* Fill *l for a job. 0, or -EINVAL (bad parameters) / -E2BIG (too large). */
int pt_shm_layout(uint32_t nranks, uint32_t nguests, uint32_t slot_size, uint32_t qslots,
                  struct pt_shm_layout *l);

/* Queue (sender s -> receiver r, class c): header and slots; n is the
 * number of process slots (nranks + nguests). */
static inline struct spsc_hdr *pt_shm_qhdr(void *base, const struct pt_shm_layout *l,
                                           uint32_t n, uint32_t s, uint32_t r, uint32_t c)
{
    return (struct spsc_hdr *)((char *)base + l->off_qhdrs +
                               (((uint64_t)r * n + s) * 2 + c) * sizeof(struct spsc_hdr));
}
static inline void *pt_shm_qslots(void *base, const struct pt_shm_layout *l, uint32_t s,
                                  uint32_t r, uint32_t c)
{
    return (char *)base + l->off_slots + (uint64_t)r * l->recv_block +
           ((uint64_t)s * 2 + c) * l->queue_bytes;
}
static inline void *pt_shm_trace_area(void *base, const struct pt_shm_layout *l, uint32_t r)
{
    return (char *)base + l->off_trace + (uint64_t)r * l->trace_bytes;
}
static inline struct pt_shm_rank *pt_shm_rankrec(void *base, const struct pt_shm_layout *l,
                                                 uint32_t r)
{
    return (struct pt_shm_rank *)((char *)base + l->off_ranks) + r;
}

#endif
