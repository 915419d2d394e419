/*
 * shm.h - the shared-memory transport (the job region of shm_region.h) and
 * the creator/launcher side of the region, used by ptlrun and ptl_info.
 *
 * How a rank finds its job (pt_xport_open -> pt_shm_open):
 *   PTL_JOB_FD=<fd>, PTL_JOB_SIZE=<bytes>  an inherited memfd (ptlrun default):
 *       nothing appears in /dev/shm; the kernel frees the region with the last
 *       process that maps it, whatever way the processes end.
 *   PTL_JOB=<name>  a named POSIX segment /ptl-<uid>-<name>. ptlrun --named
 *       creates it; without ptlrun the first rank to arrive creates it
 *       (PTL_NRANKS required; PTL_NIDMAP/PTL_PIDMAP/PTL_JID optional) by
 *       building it under a private name and link(2)ing it into place, so a
 *       rank never sees a half-built region. The rank whose attach completes
 *       the job unlinks the name. A name that is not a regular file owned by
 *       this uid with mode 0600 (no group or other bits) is refused, never
 *       waited on: opens do not follow links and do not block.
 *   PTL_MY_RID=<rank>, PTL_NRANKS (checked when set). A process without
 *       PTL_MY_RID, or whose rank another live process holds (a child of
 *       fork() re-initialising Portals), joins the job as a guest: a slot
 *       of its own and a Portals pid no process of the job has (PTL_PID_ANY),
 *       or the pid it asked for if free (shm_region.h, "Guests").
 */
#ifndef PT_SHM_H
#define PT_SHM_H

#include "shm_region.h"
#include "xport.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- rank side ----------------------------------------------------------- */

/* Attach to the job the environment names (see above). Same contract as
 * pt_xport_open: 0 or -errno (logged); -EADDRINUSE when pid_hint is neither
 * PTL_PID_ANY nor this rank's pid in the job map, or (a guest) is taken;
 * -ENOSPC when every guest slot is in use. */
int pt_shm_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                struct pt_xport_info *info_p);

/* A node's region of a job whose other ranks may be on other hosts (a PMIx
 * job, transport/mix.c): as PTL_JOB=<job> without ptlrun, the first of the
 * node's ranks to arrive creates it, the last to attach unlinks its name,
 * but the description is the caller's, never the environment's. nranks:
 * the node's ranks; my_rid: this process's index among them; nidmap,
 * pidmap: their Portals ids, colon-separated (as PTL_NIDMAP/PTL_PIDMAP);
 * ring_prefix (or NULL): bind the ring socket (pt_shm_ring_socket). */
struct pt_shm_node {
    const char *job;
    uint32_t nranks, my_rid, jid;
    const char *nidmap, *pidmap;
    const char *ring_prefix;
};
int pt_shm_open_node(const struct pt_shm_node *nd, uint32_t slot_size, uint32_t queue_slots,
                     uint32_t pid_hint, const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p);

/* The ring socket: from now on every ring of a peer's bell (a message, or
 * room freed for a waiting sender) also sends a byte to the peer's
 * abstract unix address prefix<slot>, and this process binds its own, whose
 * descriptor pt_shm_ring_fd returns (-1 without one): for engines that sleep
 * in poll() on another transport's descriptor beside the bell (mix.c,
 * engine/wait.c). Every process of the region must bind one. 0 or -errno. */
int pt_shm_ring_socket(struct pt_xport *x, const char *prefix);
int pt_shm_ring_fd(struct pt_xport *x);

/* Liveness without a launcher (shm_watch.c): a thread of this process
 * sleeps on the pidfds of the ranks after it (up to 256) and does what
 * ptlrun does when one ends: still attached, the job fails
 * (PTL_NI_PEER_DIED, every bell rung); detached, a departure is counted.
 * One that has not attached within twice PTL_PMIX_TIMEOUT_S of the watch's start
 * is taken for dead too (it may have died before it could: nobody knows its
 * pid), and the region's name is removed. Stopped by the transport's close.
 * 0 or -errno. */
int pt_shm_watch_start(struct pt_xport *x);
void pt_shm_watch_stop(struct pt_xport *x);
/* A failure this rank learnt outside the region (a death PMIx reported),
 * made the region's: its other ranks see it, and the watch's stop removes
 * the name when not every rank attached. Cold path. */
void pt_shm_job_fail(struct pt_xport *x, uint32_t code);

/* The ops of the shared-memory transport (the ofi transport keeps the job
 * region for identity, liveness and names and delegates those ops here). */
const struct pt_xport_ops *pt_shm_ops(void);

/* Endpoint names in the rank records (shm_region.h, lines 2-3), the
 * one-host implementation of the ofi transport's address exchange. x is a
 * shm transport from pt_shm_open. publish: this rank's name (control path,
 * the owner only); -E2BIG if longer than PT_SHM_EP_NAME_MAX. lookup: 0 with
 * *len and *gen set, -EAGAIN while the rank has not published (or is
 * re-publishing), -ENOBUFS if *len is too small, -EINVAL for a bad rank.
 * Any thread; no syscall. */
#define PT_SHM_EP_NAME_MAX (2u * 64u - 8u)
int pt_shm_ep_publish(struct pt_xport *x, const void *name, size_t len);
int pt_shm_ep_lookup(struct pt_xport *x, uint32_t rank, void *name, size_t *len, uint32_t *gen);

/* Every process of a job must reach the others the same way (shm_region.h,
 * pt_shm_rank.wire). provider: the ofi transport names its libfabric
 * provider in this rank's record; before it publishes its endpoint name
 * (the owner only). wire_check: this process against every peer attached
 * so far; -EPROTO, logged with both sides' words, when one differs (the
 * caller closes and PtlNIInit fails). Each side checks after its own R-ATT
 * (and R-EP) and a full fence, so of two processes that attach at once at
 * least one sees the other. Control path; no syscall. */
void pt_shm_wire_provider(struct pt_xport *x, const char *prov);
int pt_shm_wire_check(struct pt_xport *x);
/* Queue depth of the job (the region's), and whether rank is attached now
 * (not yet or no longer: false). For transports built on the region. */
uint32_t pt_shm_queue_depth(struct pt_xport *x);
bool pt_shm_rank_attached(struct pt_xport *x, uint32_t rank);

/* ---- creator / launcher side ---------------------------------------------- */

struct pt_shm_spec {
    uint32_t nranks, nguests, slot_size, qslots, jid;
    const uint32_t *nids, *pids;   /* per-rank Portals ids; NULL: nid 0, pid = rank */
    uint32_t pool_req, pool_rsp;   /* buffers per process and class (PTL_POOL_*)  */
};

struct pt_shm_region {
    void *base;
    uint64_t size;
    int fd;                        /* memfd or shm fd, FD_CLOEXEC set             */
    bool named;
    char name[80];                 /* named: "/ptl-<uid>-<job>"                    */
    struct pt_shm_layout l;
    uint32_t nranks;
};

/* "/ptl-<uid>-<job>" into buf. -EINVAL if job is empty, too long or has
 * characters other than [A-Za-z0-9._-] (a creator's private name adds
 * "~<pid>", and no job name can contain a "~"). */
int pt_shm_name(char *buf, size_t len, const char *job);

/* Create and publish a region (ready flag set) owned by the calling process.
 * job == NULL: an anonymous memfd (MFD_CLOEXEC; clear it in the child that is
 * to inherit it). job != NULL: the named segment /ptl-<uid>-<job>, which must
 * not exist (-EEXIST). 0 or -errno; on error nothing is left behind. */
int pt_shm_create(const struct pt_shm_spec *spec, const char *job, struct pt_shm_region *r);

/* Unmap and close; unlink the name too when asked (named regions). */
void pt_shm_region_close(struct pt_shm_region *r, bool unlink_name);

/* Launcher: a child's OS pid, right after fork. */
void pt_shm_set_ospid(struct pt_shm_region *r, uint32_t rank, pid_t pid);
/* Launcher: rank exited (waitpid status). A failure (non-zero exit or a
 * signal) marks the rank dead, fails the job with PTL_NI_PEER_DIED unless it
 * failed already, and wakes every doorbell. Returns true if it was a failure. */
bool pt_shm_rank_exited(struct pt_shm_region *r, uint32_t rank, int wstatus);
/* Launcher: fail the whole job with a PTL_NI_* code (timeout, signal) and wake
 * every doorbell. */
void pt_shm_fail_job(struct pt_shm_region *r, uint32_t code);
/* Launcher: guests (processes that joined the job; ptlrun cannot waitpid
 * them) whose process is gone while still attached: each is marked dead and
 * fails the job with PTL_NI_PEER_DIED, as a rank that failed. Returns how
 * many this call found; the first one's guest index, OS pid and Portals pid
 * go to *guest_p, *ospid_p, *pid_p. Polled by ptlrun's loop. */
int pt_shm_guests_reap(struct pt_shm_region *r, uint32_t *guest_p, pid_t *ospid_p,
                       uint32_t *pid_p);
/* Attach state of a rank (PT_SHM_R_*), for reports. */
uint32_t pt_shm_rank_state(const struct pt_shm_region *r, uint32_t rank);

/* Remove /dev/shm/ptl-<uid>-* segments of the calling user that no live
 * process can still use: neither the owner nor any rank recorded in the
 * header is alive (segments without a valid header: older than 60 s), and
 * creators' private names "<name>~<pid>" whose creator is gone. Only regular
 * files owned by the caller are looked at; nothing is opened blocking or
 * through a link. Returns the number removed; verbose prints each one (and
 * each name left alone) on stderr. */
int pt_shm_clean_stale(bool verbose);

/* Bytes a region for this job would take (0 if it cannot be laid out). */
uint64_t pt_shm_region_bytes(uint32_t nranks, uint32_t nguests, uint32_t slot_size,
                             uint32_t qslots, uint32_t pool_req, uint32_t pool_rsp);
/* Guest slots of a job: PTL_JOB_GUESTS, by default 4 whatever the job's size. */
uint32_t pt_shm_guests(void);

/* Read a word of `pid`'s memory at `addr` with process_vm_readv: 0, or -errno
 * (EPERM: ptrace scope / Yama or a non-dumpable target; ENOSYS: kernel or
 * seccomp; ESRCH: no such process). *why gets a static explanation. */
int pt_cma_probe(pid_t pid, uint64_t addr, const char **why);
/* Address of this process's probe word (holds PT_SHM_MAGIC). */
uint64_t pt_cma_probe_addr(void);
/* Let any process of this uid read ours with process_vm_readv although Yama's
 * ptrace_scope is 1 (PR_SET_PTRACER_ANY), or withdraw that (any == false).
 * Without Yama the kernel refuses with EINVAL: there is nothing to allow. */
void pt_cma_allow_readers(bool any);

#endif
