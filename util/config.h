/*
 * config.h - the one table of PTL_* tunables.
 *
 * Parsed once (first call of pt_config()) from the environment into a const
 * struct; nothing reads getenv() on a hot path. Unknown PTL_* variables are
 * warned about once. ptl_info prints the table with effective values and
 * where each came from.
 */
#ifndef PT_CONFIG_H
#define PT_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ceiling of PTL_MAX_OBJECTS; engine/handle.h sizes the index field for it. */
#define PT_CFG_MAX_OBJECTS 65535
/* Ceiling of PTL_MAX_CTS (counting events per NI). */
#define PT_CFG_MAX_CTS 65535

enum pt_rndv_mode { PT_RNDV_AUTO = 0, PT_RNDV_CMA = 1, PT_RNDV_COPY = 2 };

struct pt_config {
    int64_t offload;        /* PTL_OFFLOAD: 1 = NIC thread, 0 = host matching        */
    int64_t nic_cpu;        /* PTL_NIC_CPU: core for the NIC thread, -1 = choose     */
    int64_t nic_spin_us;    /* PTL_NIC_SPIN_US: NIC thread idle spin before sleeping */
    int64_t wait_spin_us;   /* PTL_WAIT_SPIN_US: API waiter spin before sleeping     */
    int64_t asym_fence;     /* PTL_ASYM_FENCE: call entry fenced by membarrier      */
    int64_t solo;           /* PTL_SOLO: one API thread skips the token's locked ops */
    int64_t asym_fsnd;      /* PTL_ASYM_FSND: AF, peers skip F-SND to a host-mode rank */
    int64_t wait_yield_us;  /* PTL_WAIT_YIELD_US: spin before yielding; -1 auto      */
    int64_t wait_lease_us;  /* PTL_WAIT_LEASE_US: offload poll lease; 0 off          */
    int64_t wait_lease_max_us; /* PTL_WAIT_LEASE_MAX_US: T1's longest timed sleep     */
    int64_t nic_own_cpu;    /* PTL_NIC_OWN_CPU: ptlrun gave PTL_NIC_CPU to this NIC alone */
    int64_t nic_lease_poll; /* PTL_NIC_LEASE_POLL: NIC thread polls while a lease is out */
    int64_t cmd_inline;     /* PTL_CMD_INLINE: API threads run their commands when the engine is free */
    int64_t job_cpus;       /* PTL_JOB_CPUS: cores the job's ranks share (ptlrun)   */
    int64_t wake_backstop_ms; /* PTL_WAKE_BACKSTOP_MS: engine sleeps at most this long */
    int64_t credit_wait;    /* PTL_CREDIT_WAIT: a sender stalled on credits may sleep */
    int64_t eq_room_us;     /* PTL_EQ_ROOM_WAIT_US: a request waits this long for EQ room */
    int64_t nomatch_us;     /* PTL_NOMATCH_WAIT_US: an unmatched request waits this long */
    int64_t nomatch_idle_us; /* PTL_NOMATCH_IDLE_US: ... or this long while the application is away */
    int64_t nic_yield;      /* PTL_NIC_YIELD: NIC thread hands the engine to waiters */
    int64_t nic_batch;      /* PTL_NIC_BATCH: NIC thread under SCHED_BATCH           */
    int64_t cmd_slots;      /* PTL_CMD_SLOTS: command ring slots per API thread      */
    int64_t eager_max;      /* PTL_EAGER_MAX: largest payload sent inline            */
    int64_t queue_slots;    /* PTL_QUEUE_SLOTS: descriptor-ring entries per pair     */
    int64_t pool_req;       /* PTL_POOL_REQ: request buffers per process             */
    int64_t pool_rsp;       /* PTL_POOL_RSP: response buffers per process            */
    int64_t rndv_mode;      /* PTL_RNDV_MODE: 0 auto, 1 cma, 2 copy                  */
    int64_t rndv_cma_min;   /* PTL_RNDV_CMA_MIN: auto mode uses CMA from this size   */
    int64_t rndv_seg;       /* PTL_RNDV_SEG: bytes moved per engine step             */
    int64_t rndv_coop_min;  /* PTL_RNDV_COOP_MIN: cooperative rendezvous from here    */
    int64_t max_ops;        /* PTL_MAX_OPS: rendezvous transfers in flight per NI     */
    int64_t rndv_coop_takeback; /* PTL_RNDV_COOP_TAKEBACK: unclaimed parts taken back */
    int64_t cma;            /* PTL_CMA: 0 forbids process_vm_readv                   */
    int64_t shm_fbox;       /* PTL_SHM_FBOX: senders claim fast boxes (shm)          */
    int64_t shm_fbox_streak; /* PTL_SHM_FBOX_STREAK: a stream takes the rings from here */
    int64_t shm_ring_batch;  /* PTL_SHM_RING_BATCH: D1 once per pass of several commands */
    int64_t max_pt_index;   /* PTL_MAX_PT_INDEX: highest portal index offered        */
    int64_t max_objs;       /* PTL_MAX_OBJECTS: MEs, MDs and EQs per NI, each        */
    int64_t req_slots;      /* PTL_REQ_SLOTS: requests waiting for answers, per NI   */
    int64_t max_cts;        /* PTL_MAX_CTS: counting events per NI                   */
    int64_t coll_pt;        /* PTL_COLL_PT: portal index of the collective library    */
    int64_t coll_small_max; /* PTL_COLL_SMALL_MAX: allreduce bytes on the persistent path */
    int64_t coll_flags;     /* PTL_COLL_FLAGS: blocking small collectives on flag slots */
    int64_t coll_large_min; /* PTL_COLL_LARGE_MIN: allreduce bytes for reduce-scatter + allgather */
    int64_t test_wrap;      /* PTL_TEST_WRAP (tests only): counters start this close to their wrap */
    int64_t test_thread_end_us; /* PTL_TEST_THREAD_END_US (tests only): our threads end this late */
    int64_t coll_bcast_seg; /* PTL_COLL_BCAST_SEG: segment of the pipelined large bcast */
    int64_t coll_red_seg;   /* PTL_COLL_RED_SEG: bytes per reduction put of a collective */
    int64_t trig_slots;     /* PTL_TRIG_SLOTS: triggered operations armed per NI     */
    int64_t timing;         /* PTL_TIMING: per-stage instrumentation on              */
    int64_t trace;          /* PTL_TRACE: the flight recorder (util/trace.h) on      */
    int64_t log_level;      /* PTL_LOG_LEVEL: 0 err, 1 warn, 2 info, 3 debug         */
    int64_t ni_fail_grace_ms; /* PTL_PEER_TIMEOUT_MS: how long a dead peer is waited */
    int64_t job_guests;     /* PTL_JOB_GUESTS: process slots for joiners, -1 default */
    int64_t transport;      /* PTL_TRANSPORT: 0 shm (the job region), 1 ofi (libfabric),
                             * 2 auto (per peer in a PMIx job: transport/mix.c) */
    char ofi_provider[64];  /* PTL_OFI_PROVIDER: libfabric provider; "" = best found  */
    int64_t ofi_probe_ms;   /* PTL_OFI_PROBE_MS: PMIx job, liveness probe period     */
    int64_t pmix_timeout_s; /* PTL_PMIX_TIMEOUT_S: PMIx job, bound on the wire-up fence */
    int64_t ofi_short;      /* PTL_OFI_SHORT: 1 short messages and fi_inject, 0 none  */
    int64_t ofi_fault;      /* PTL_OFI_FAULT: tests only, a fault in ofi's pull (0 off) */
    int64_t depart_ring_ms; /* PTL_DEPART_RING_MS: tests only, the launcher's ring late */
};

enum pt_transport_kind { PT_TRANSPORT_SHM = 0, PT_TRANSPORT_OFI = 1, PT_TRANSPORT_AUTO = 2 };

struct pt_tunable {
    const char *name;
    int64_t def, min, max;
    const char *help;
    int64_t *value;   /* into the parsed struct; NULL for a string tunable */
    char *svalue;     /* a string tunable: its buffer in the parsed struct  */
    size_t ssize;
    const char *source; /* "default" or "env" after parsing */
};

const struct pt_config *pt_config(void);

/* Table access for ptl_info and the README generator. */
int pt_tunables(const struct pt_tunable **table_p);

/* Re-read the environment (tests and benchmarks that switch modes in-process). */
void pt_config_reload(void);

/* PTL_TEST_WRAP=N (tests only; 0 off): every free-running counter that
 * advances per message, event, command, wake-up or credit starts N steps
 * before its wrap instead of at 0, consistently on both sides of the job
 * region (the region's creator and every rank read the same environment),
 * so that a short run carries traffic across the wrap. 32-bit counters
 * start at 2^32 - N; counters masked to fewer bits (the collectives' 30-bit
 * call sequence) at 2^bits - N; per-slot generations a few lives before
 * theirs. */
static inline uint32_t pt_wrap_n(void) { return (uint32_t)pt_config()->test_wrap; }
static inline uint32_t pt_wrap32(void) { return 0u - pt_wrap_n(); }
#endif
