/* config.c - the tunables table; see config.h. */
#include "config.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static struct pt_config g_cfg;

#define T(n, f, d, lo, hi, h) { n, d, lo, hi, h, &g_cfg.f, NULL, 0, "default" }
#define TS(n, f, h) { n, 0, 0, 0, h, NULL, g_cfg.f, sizeof g_cfg.f, "default" }
static struct pt_tunable g_table[] = {
    T("PTL_OFFLOAD", offload, 1, 0, 1,
      "1: a NIC thread per NI does all receive-side work; 0: host matching, the calling thread runs the engine inside Ptl calls"),
    T("PTL_NIC_CPU", nic_cpu, -1, -1, 4095,
      "core the NIC thread is pinned to; -1: the host's k-th rank's on the k-th allowed core of the caller's NUMA node counting down from the last (libnuma), so that a host's NIC threads spread (docs/architecture.md)"),
    T("PTL_NIC_SPIN_US", nic_spin_us, 50, 0, 10000000,
      "microseconds an idle NIC thread polls before it sleeps on its doorbell"),
    T("PTL_WAKE_BACKSTOP_MS", wake_backstop_ms, 100, 0, 60000,
      "a sleeping engine looks for work at least this often (0: never): only a peer that wrote the doorbell words (a fault) makes it find any; then logged, and 1 ms from there on"),
    T("PTL_CREDIT_WAIT", credit_wait, 1, 0, 1,
      "1: an engine whose only work is a command stalled on credits (the ring to the target full, or the buffer pool empty) sleeps until the peer that frees room rings it (docs/waiting.md, \"Stalled on credits\"); 0: it polls until the command goes through (a receiver rings its senders either way)"),
    T("PTL_NOMATCH_WAIT_US", nomatch_us, 20000, 0, 10000000,
      "a request that matches no entry is dropped only after it matched nothing for this long (its sender's later messages wait behind it): a peer still attaching its entries does not lose it (0: drop at once)"),
    T("PTL_NOMATCH_IDLE_US", nomatch_idle_us, 1000000, 0, 60000000,
      "offload mode: while no thread of the target process has entered the library since an unmatched request began to wait, and none waits inside it, the request waits on past PTL_NOMATCH_WAIT_US, up to this long in all (an application the machine has not run yet, still to attach its entries; 0: no longer than PTL_NOMATCH_WAIT_US)"),
    T("PTL_EQ_ROOM_WAIT_US", eq_room_us, 20000, 0, 10000000,
      "a request whose events would overwrite unread ones in its EQ waits this long for the reader (once until the reader reads again), then overwrites them (0: at once, no waiting)"),
    T("PTL_ASYM_FENCE", asym_fence, 1, 0, 1,
      "1: an API call's entry orders itself against PtlEQFree and PtlNIFini by the membarrier(2) system call on their side instead of a locked instruction on every call (util/membar.h; off where the kernel lacks it); 0: a locked instruction per call"),
    T("PTL_SOLO", solo, 1, 0, 1,
      "1: while the process has had one API thread only (and PTL_ASYM_FENCE is on), that thread takes and releases the host-mode engine token and takes events from an EQ with plain stores, not locked instructions, and skips the fences that only other API threads of the process need (D3, D6); the second thread to call the library ends this for the process's life (membarrier(2) and a wait of at most one open section of the first; docs/waiting.md, \"One API thread\"); 0: locked instructions always"),
    T("PTL_ASYM_FSND", asym_fsnd, 1, 0, 1,
      "1: a host-mode rank with a core of its own (ranks do not outnumber cores, PTL_WAIT_SPIN_US at least 50) lets its peers on this host publish small messages to it without a full fence, and pays instead with a membarrier(2) (MEMBARRIER_CMD_GLOBAL_EXPEDITED, some 10 us) each time one of its threads is about to sleep in the library (docs/waiting.md, \"D1 without the sender's fence\"; off where the kernel lacks it); 0: the sender's fence always"),
    T("PTL_WAIT_SPIN_US", wait_spin_us, 1000, 0, 10000000,
      "microseconds PtlEQWait/PtlEQPoll and synchronous calls poll (running the engine) before sleeping"),
    T("PTL_WAIT_LEASE_US", wait_lease_us, 50, 0, 100000,
      "offload mode: a waiter that has what it waited for leaves its \"I poll, do not ring\" mark up for its next wait (peers do not ring the NIC thread between two waits); the NIC thread, asleep with this timeout while a lease may be out, takes back one older than this (docs/waiting.md, \"The poll lease\"); off when the job has more ranks than cores (PTL_WAIT_YIELD_US 0); 0: every wait lowers the mark as it leaves"),
    T("PTL_WAIT_LEASE_MAX_US", wait_lease_max_us, 800, 0, 1000000,
      "offload mode: while waiters keep renewing leases (a PtlEQGet spinner, a ping-pong of waits), the NIC thread doubles its timed sleep from PTL_WAIT_LEASE_US up to this, so that it does not wake on the application's core every period; a lease left for good then ends within two of these (docs/waiting.md, \"The poll lease\")"),
    T("PTL_NIC_OWN_CPU", nic_own_cpu, 0, 0, 1,
      "set by ptlrun --cpus with at least two cores per rank: PTL_NIC_CPU is a core of the NIC thread's own (no rank and no other NIC thread on it); then the NIC threads are not crowded and may poll for a lease (PTL_NIC_LEASE_POLL)"),
    T("PTL_CMD_INLINE", cmd_inline, 1, 0, 1,
      "offload mode: 1 (default): an API call whose engine is free (the NIC thread asleep or between runs) runs its command itself, as host mode does; 0: commands always go through the command ring to the NIC thread, rung if it sleeps (the application's thread posts; it still runs the engine while it waits for an event or a synchronous call, in PtlEQPeek/PtlCTGet, and on a full ring; meant for a NIC thread with a core of its own: on a shared core every post costs a wake-up). With a core per thread (16-core machine, 2026-12-04) 0 was slower on every figure: 8 B rate 2.2 against 3.3 M/s, ping-pong p50 2.0 against 0.52 us (bench/results-notes.md, \"Forty-eighth session\")"),
    T("PTL_NIC_LEASE_POLL", nic_lease_poll, -1, -1, 1,
      "offload mode: 1: while a poll lease is out (the application left the library after a wait, so peers do not ring), the NIC thread polls the engine instead of sleeping, and the work that arrives meanwhile (a collective's steps, a get to answer) goes on while the application computes; 0: it sleeps with the lease's timeout (PTL_WAIT_LEASE_US); -1: 1 where the NIC thread has a core of its own (pinned off its rank's cores, or twice as many cores as ranks on the host), else 0 (docs/waiting.md, \"A core of its own\")"),
    T("PTL_WAIT_YIELD_US", wait_yield_us, -1, -1, 10000000,
      "microseconds a waiter (or a PtlEQGet/PtlEQPoll loop) finds nothing before it gives the core away (sched_yield) at every further look (not a PtlEQGet/PtlEQPoll loop that is its process's only API thread while no NIC thread of its is awake, unless 0: nothing of its own needs the core, docs/waiting.md, \"Whom a spinner's yield serves\"); -1: 0 when the job's threads on this host outnumber the cores this process may run on (shared-memory jobs: more ranks than cores), else 20"),
    T("PTL_JOB_CPUS", job_cpus, 0, 0, 1 << 20,
      "set by ptlrun --cpus: how many cores the job's ranks are pinned to, one each (PTL_WAIT_YIELD_US=-1 compares the ranks with it); 0: the cores this process may run on"),
    T("PTL_NIC_YIELD", nic_yield, 1, 0, 1,
      "1: an idle NIC thread hands the engine to an API thread that waits, instead of spinning beside it"),
    T("PTL_NIC_BATCH", nic_batch, 1, 0, 1,
      "1: the NIC thread runs under SCHED_BATCH, so that a wake-up by a peer does not preempt the application on a shared core, except while an application thread sleeps in a wait (then it is SCHED_OTHER, so that its wake-up does not wait for a scheduler tick beside other programs; docs/waiting.md \"Batch, and urgent while a waiter sleeps\"); 0: normal scheduling"),
    T("PTL_CMD_SLOTS", cmd_slots, 256, 8, 65536,
      "command ring slots per API thread (power of two)"),
    T("PTL_EAGER_MAX", eager_max, 4032, 0, 65472,
      "largest payload carried inline in a receive-queue slot; larger messages use rendezvous"),
    T("PTL_QUEUE_SLOTS", queue_slots, 32, 4, 4096,
      "descriptor-ring entries per sender, receiver and class (the sender's credits towards one receiver; power of two)"),
    T("PTL_POOL_REQ", pool_req, 256, 16, 65535,
      "message buffers (slots) each process owns for requests in the job region, shared by all its receivers"),
    T("PTL_POOL_RSP", pool_rsp, 128, 16, 65535,
      "message buffers (slots) each process owns for responses in the job region (separate: responses move while requests are stuck)"),
    T("PTL_RNDV_MODE", rndv_mode, 0, 0, 2,
      "rendezvous data movement: 0 auto (by size), 1 CMA single copy, 2 pipelined copy through the region"),
    T("PTL_RNDV_CMA_MIN", rndv_cma_min, 7168, 0, INT64_MAX,
      "in auto mode, rendezvous transfers of at least this many bytes use CMA (below: copy through the queues, two fragments at most); 7 KiB: copy 0.36-0.40x Open MPI's ping-pong at 4-6 KiB in the fast core placement, where CMA was 1.0-1.1x, and within -5..+8% of CMA in the slow one (bench/results-notes.md, fiftieth session; 4 KiB from the sixteenth session until then)"),
    T("PTL_RNDV_SEG", rndv_seg, 1048576, 4096, 1 << 30,
      "bytes the engine moves per rendezvous step before it polls again, for a lone transfer; with several in flight a step is a quarter of this"),
    T("PTL_RNDV_COOP_MIN", rndv_coop_min, 81920, 0, INT64_MAX,
      "CMA rendezvous puts of at least this many bytes are cooperative: the target pulls the first half while the initiator writes the second (two cores copy at once); 0 turns it off. 80 KiB: below it the split's hand-over costs more than the second core saves (ping-pong p50 at 64-72 KiB 0.1-0.4 us less without it, equal at 80 KiB, 0.1-0.4 us more without it from 88 KiB; bench/results-notes.md, sixty-ninth session; 64 KiB until then)"),
    T("PTL_RNDV_COOP_TAKEBACK", rndv_coop_takeback, 1, 0, 1,
      "1: the target of a cooperative put pulls the initiator's part itself when the initiator has not claimed it by the time the target's own part is done (an initiator busy outside the library never holds it up); 0: it always waits for the initiator"),
    T("PTL_MAX_OPS", max_ops, 1024, 2, 65536,
      "rendezvous transfers one NI moves at once (pulls, pushes, copy-mode streams; rounded up to a power of two); more wait their turn"),
    T("PTL_CMA", cma, 1, 0, 1,
      "0 forbids process_vm_readv/writev; rendezvous then copies through the region"),
    T("PTL_SHM_FBOX", shm_fbox, 1, 0, 1,
      "1 (default): after 16 messages to a rank, a sender claims a fast box in the receiver's block (32 per receiver, first come) and sends its small messages there, one cache line each, which the receiver polls directly (8 B latency 1.3-1.5x Open MPI instead of 1.8-2x in the slow core placement); 0: every message goes through the descriptor rings and the buffer pools"),
    T("PTL_SHM_FBOX_STREAK", shm_fbox_streak, 0, 0, 1 << 30,
      "0 (default): a sender that holds a fast box sends every small message that fits through its lane, streams included (what does not fit, or finds the lane full, takes the rings); N: from the N-th message in a row to one rank without an answer, through the rings (4 was the default until 2026-12-03: on 2026-11-28 a stream through a lane halved the offload message rate; measured again on 2026-12-03, no limit gave the 8 B message rate +4-37% in host mode and -8..+22% in offload mode)"),
    T("PTL_SHM_RING_BATCH", shm_ring_batch, 1, 0, 1,
      "1 (default): an engine pass that finds two or more commands waiting in a ring, or serves several rings, rings each receiver it sent to once, after the pass's commands or every 32 messages (one full fence per pass instead of one per message: the fence waits for the message's line to leave, docs/waiting.md \"D1 after a batch\"); 0: every message rings as it is committed"),
    T("PTL_MAX_PT_INDEX", max_pt_index, 63, 7, 255,
      "highest portal index an NI offers (REF offers 7; Cray-era clients use up to 38)"),
    T("PTL_MAX_OBJECTS", max_objs, PT_CFG_MAX_OBJECTS, 16, PT_CFG_MAX_OBJECTS,
      "library limit on MEs, MDs and EQs per NI (each)"),
    T("PTL_REQ_SLOTS", req_slots, 4096, 16, 1 << 20,
      "initiator requests per NI that wait for their answer (gets, rendezvous puts, puts asking for an ACK; power of two): more wait in their command ring; as many records of rendezvous get replies not yet pulled (target side, all initiators together): more such gets wait at the target"),
    T("PTL_MAX_CTS", max_cts, PT_CFG_MAX_CTS, 1, PT_CFG_MAX_CTS,
      "counting events (PtlCTAlloc, portals3_ext.h) per NI; one more gives PTL_NO_SPACE (the table is address space, touched as counters are first used; each collective group holds about 170 at 8 members: 4,096 allowed about 20 groups)"),
    T("PTL_COLL_PT", coll_pt, 60, 0, 255,
      "portal index the collective library (p3coll.h) uses for its own messages; keep it free of application MEs and at most PTL_MAX_PT_INDEX"),
    T("PTL_COLL_SMALL_MAX", coll_small_max, 256, 0, 4096,
      "allreduce/reduce payloads up to this many bytes (and at most PTL_EAGER_MAX) use each group's persistent slots (MEs, counters and buffers set up at PtlCollGroupCreate, result copied out at the wait); larger ones build a schedule per call; 0: never; must be the same in every member"),
    T("PTL_COLL_FLAGS", coll_flags, 1, 0, 1,
      "1 (default): a blocking barrier, and a blocking allreduce, reduce or bcast of 1 to 16 bytes, in a group whose members all share this node's memory run on flag slots there (single-writer lines: each member stores its arrival and value, the others read them; a wake message only to a member that announced a sleep); 0: every call on triggered operations (a member with 0 takes no slot, so its groups use triggered operations on every member)"),
    T("PTL_COLL_LARGE_MIN", coll_large_min, 32768, 0, (int64_t)1 << 40,
      "allreduce/reduce payloads of at least this many bytes (and at least one element per member of the largest power of two in the group) run as reduce-scatter + allgather (recursive halving, then doubling); smaller ones above PTL_COLL_SMALL_MAX as recursive doubling of the whole vector; 0: never; must be the same in every member"),
    T("PTL_TEST_WRAP", test_wrap, 0, 0, 1 << 20,
      "tests only: free-running counters (ring tails and heads, fast-box lanes, order stamps, doorbell and wait-word seqs, command rings and stamps, request ids, op and claim-word generations, EQ sequence, ofi stamps and queues, collective call sequence) start this many steps before their wrap; 0: off"),
    T("PTL_TEST_THREAD_END_US", test_thread_end_us, 0, 0, 1000000,
      "tests only: every thread the library starts (NIC thread, launcher watch, region watch) waits this many microseconds before it ends; the call that ends it still returns after it has ended; 0: off"),
    T("PTL_COLL_BCAST_SEG", coll_bcast_seg, 0, 0, (int64_t)1 << 40,
      "bcasts of more than this many bytes in groups of 3 or more run pipelined: the data goes down the binomial tree in segments of this size (at most 64 of them; larger bcasts get larger segments), each forwarded by a triggered put as soon as it arrived (131072 is a start where every rank has a core of its own); 0 (the default: slower where ranks outnumber cores, docs/coll.md): the whole buffer per tree edge; must be the same in every member"),
    T("PTL_COLL_RED_SEG", coll_red_seg, 65536, 0, (int64_t)1 << 40,
      "per-call allreduce/reduce: the reduction puts of a block are at most this many bytes each (rounded down to whole elements; beyond PTL_EAGER_MAX the target engine pulls and combines them: fewer messages, fewer hand-overs between the members); 0: PTL_EAGER_MAX (every reduction put eager); must be the same in every member"),
    T("PTL_TRIG_SLOTS", trig_slots, 4096, 1, 1 << 20,
      "triggered operations (PtlTriggered*, portals3_ext.h) armed and not yet performed, per NI; one more gives PTL_NO_SPACE"),
    T("PTL_TIMING", timing, 0, 0, 1,
      "1: record per-stage timestamps (initiator and NIC-thread tables)"),
    T("PTL_TRACE", trace, 0, 0, 1,
      "1: every NI records its engine's decisions in a ring in the job region, shown by ptlrun's dump of a hung job (util/trace.h); off by default: it costs 8-22% of the 8 B ping-pong (bench/RESULTS.md)"),
    T("PTL_LOG_LEVEL", log_level, 1, 0, 3,
      "0 errors, 1 warnings, 2 info, 3 debug (stderr; never on the data path)"),
    T("PTL_PEER_TIMEOUT_MS", ni_fail_grace_ms, 2000, 10, 3600000,
      "bound of the waits that depend on peers: a call on a full command ring (then PTL_NO_SPACE), a put or get to a process that may be joining the job, PtlNIFini's flush of what is in flight and its wait for threads still inside calls"),
    T("PTL_JOB_GUESTS", job_guests, -1, -1, 256,
      "slots for processes that join a running job (a child that re-initialises Portals after fork, a process started outside ptlrun with PTL_JOB): read by ptlrun (or the rank that creates a named job) when it sizes the region; -1: 4"),
    T("PTL_TRANSPORT", transport, 2, 0, 2,
      "0 or shm: the shared job region (a PMIx job: only when every rank is on this host); 1 or ofi: libfabric for every peer, same host included (build option PTL_WITH_OFI); 2 or auto: a ptlrun job the region, a PMIx job each peer by its host, the node's region for ranks on this host and libfabric beyond it (docs/ofi.md)"),
    TS("PTL_OFI_PROVIDER", ofi_provider,
       "libfabric provider for PTL_TRANSPORT=ofi, e.g. \"tcp;ofi_rxm\" (empty: the best reliable one found; ptl_info lists them)"),
    T("PTL_OFI_PROBE_MS", ofi_probe_ms, 500, 0, 60000,
      "PMIx job (mpirun, srun), offload mode: every this many ms a rank's engine sends a probe (a 64-byte message) to each peer (at most 64 per period, round robin); a failed send, or a probe still outstanding after 2 periods whose peer endpoint the kernel's check (a TCP connect to it) finds gone (tcp; other providers: outstanding after 4 periods), makes the peer dead and fails the NI with PTL_NI_PEER_DIED; 0: no probes (docs/ofi.md)"),
    T("PTL_PMIX_TIMEOUT_S", pmix_timeout_s, 120, 1, 86400,
      "PMIx job (mpirun, srun): seconds PtlNIInit waits in the wire-up fence for every rank of the job to reach its own PtlNIInit; then it fails (PTL_FAIL) with a message naming this variable, instead of waiting until the launcher kills the job (docs/ofi.md, \"PMIx wire-up\")"),
    T("PTL_OFI_SHORT", ofi_short, 1, 0, 1,
      "PTL_TRANSPORT=ofi: 1 a data message whose changed header words and payload fit the provider's inject size (64 bytes on tcp;ofi_rxm: an 8 B put) goes short, by fi_inject, with no completion; 0 every message whole (a 64-byte prefix and the 128-byte header) and by fi_send (docs/ofi.md, \"Short messages\")"),
    T("PTL_OFI_FAULT", ofi_fault, 0, 0, 3,
      "tests only: a fault in PTL_TRANSPORT=ofi (docs/ofi.md, \"given up\", \"A connection lost\"): 1 every RMA read of a rendezvous pull is answered as a provider that keeps answering -FI_EAGAIN (never posted), 2 reads are posted but their completions never count (the pull must give up when it finds its peer lost); 3 rank 0's 10th data message fails as on a connection lost to a live peer (its NI must fail); 0: off"),
    T("PTL_DEPART_RING_MS", depart_ring_ms, 0, 0, 10000,
      "tests only: ptlrun waits this many ms between counting a rank's departure and ringing the sleeping engines, as a launcher preempted there would (the engines' backstop must take the ring for late, not lost: engine/wait.c producer_may_be_late); 0: off"),
};
#undef T
#undef TS

/* Runtime variables that are not tunables but are PTL_* by convention. */
static const char *g_runtime_vars[] = {
    "PTL_MY_RID", "PTL_NIDMAP", "PTL_PIDMAP", "PTL_JOB", "PTL_JOB_FD", "PTL_JOB_SIZE",
    "PTL_IFACE", "PTL_JID", "PTL_NRANKS", "PTL_TIMING_OUT", "PTL_LAUNCHER_PID", NULL};

/* Sizes of rings and tables indexed by a mask. Before, a value that was not
 * a power of two was rounded up where it was used, silently, and ptl_info
 * printed the value asked for (an audit: PTL_QUEUE_SLOTS=48, rings of 64). */
static bool must_be_pow2(const char *name)
{
    static const char *const names[] = {"PTL_CMD_SLOTS", "PTL_QUEUE_SLOTS", "PTL_MAX_OPS",
                                        "PTL_REQ_SLOTS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* A value is warned about once per process: the table is parsed at the
 * first use and again by pt_config_reload (PtlInit), and every rank printed
 * each warning twice (an audit). Cold: start-up only. */
static char g_warned[sizeof(g_table) / sizeof(g_table[0])][48];
/* Variables that also take names: value k is names[k] (PTL_RNDV_MODE's are
 * enum pt_rndv_mode's, PTL_TRANSPORT's enum pt_transport_kind's). Matched
 * without regard to case or surrounding blanks: "OFI" used to run on shared
 * memory with a warning that it was not a number (an adversarial session). */
static const struct {
    const char *var;
    const char *names[4]; /* NULL-terminated */
} g_named[] = {
    {"PTL_RNDV_MODE", {[PT_RNDV_AUTO] = "auto", [PT_RNDV_CMA] = "cma", [PT_RNDV_COPY] = "copy"}},
    {"PTL_TRANSPORT",
     {[PT_TRANSPORT_SHM] = "shm", [PT_TRANSPORT_OFI] = "ofi", [PT_TRANSPORT_AUTO] = "auto"}},
};
_Static_assert(PT_RNDV_COPY == 2 && PT_TRANSPORT_AUTO == 2, "g_named's lists are dense");

static const char *const *named_values(const char *var)
{
    for (size_t k = 0; k < sizeof g_named / sizeof g_named[0]; k++)
        if (!strcmp(var, g_named[k].var))
            return g_named[k].names;
    return NULL;
}

/* "auto, cma, copy (0-2)": what a named variable accepts, for its warning. */
static const char *names_help(const char *const *names, char *buf, size_t len)
{
    size_t o = 0;
    int k = 0;
    for (; names[k] && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? ", " : "", names[k]);
    if (o < len)
        snprintf(buf + o, len - o, " (0-%d)", k - 1);
    return buf;
}

/* A tunable's number as a user means it: decimal, leading zeros included
 * (PTL_PEER_TIMEOUT_MS=0100 is a hundred, not octal 64), or hex after 0x;
 * blanks around it ignored, as around a named value. 1: a number; 0: not
 * one; -1: a number out of long long's range. */
static int parse_num(const char *s, long long *v)
{
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s + (*s == '+' || *s == '-');
    int base = p[0] == '0' && (p[1] == 'x' || p[1] == 'X') ? 16 : 10;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, base);
    if (end == s || !isdigit((unsigned char)*p))
        return 0;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return 0;
    if (errno == ERANGE)
        return -1;
    *v = x;
    return 1;
}

static int name_index(const char *const *names, const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    for (int k = 0; names[k]; k++)
        if (strlen(names[k]) == n && !strncasecmp(names[k], s, n))
            return k;
    return -1;
}

static bool first_warning(size_t i, const char *s)
{
    if (!strncmp(g_warned[i], s, sizeof g_warned[i] - 1) && g_warned[i][0])
        return false;
    snprintf(g_warned[i], sizeof g_warned[i], "%s", s);
    return true;
}

static void parse_env(void)
{
    for (size_t i = 0; i < sizeof(g_table) / sizeof(g_table[0]); i++) {
        struct pt_tunable *t = &g_table[i];
        const char *s = getenv(t->name);
        if (t->svalue) {
            t->svalue[0] = '\0';
            t->source = "default";
            if (s && *s) {
                if (strlen(s) >= t->ssize) {
                    if (first_warning(i, s))
                        pt_log(PT_LOG_WARN, "%s=%s is longer than %zu characters; ignored",
                               t->name, s, t->ssize - 1);
                    continue;
                }
                memcpy(t->svalue, s, strlen(s) + 1);
                t->source = "env";
            }
            continue;
        }
        *t->value = t->def;
        t->source = "default";
        if (!s || !*s)
            continue;
        long long v = 0;
        int num = parse_num(s, &v);
        if (num < 0) {
            if (first_warning(i, s))
                pt_log(PT_LOG_WARN, "%s=%s out of range [%lld, %lld]; using %lld", t->name, s,
                       (long long)t->min, (long long)t->max, (long long)t->def);
            t->source = "default: the environment's value was refused";
            continue;
        }
        if (!num) {
            const char *const *names = named_values(t->name);
            int k = names ? name_index(names, s) : -1;
            if (k >= 0) {
                v = k;
            } else {
                if (first_warning(i, s)) {
                    char help[64];
                    if (names)
                        pt_log(PT_LOG_WARN, "%s=%s is none of %s; using %lld", t->name, s,
                               names_help(names, help, sizeof help), (long long)t->def);
                    else
                        pt_log(PT_LOG_WARN, "%s=%s is not a number; using %lld", t->name, s,
                               (long long)t->def);
                }
                t->source = "default: the environment's value was refused";
                continue;
            }
        }
        if (v < t->min || v > t->max) {
            if (first_warning(i, s))
                pt_log(PT_LOG_WARN, "%s=%lld out of range [%lld, %lld]; using %lld", t->name, v,
                       (long long)t->min, (long long)t->max, (long long)t->def);
            t->source = "default: the environment's value was refused";
            continue;
        }
        if (must_be_pow2(t->name) && (v & (v - 1))) {
            long long up = 1;
            while (up < v)
                up <<= 1;
            if (first_warning(i, s))
                pt_log(PT_LOG_WARN, "%s=%lld is not a power of two; using %lld", t->name, v, up);
            v = up; /* the maxima are powers of two: still in range */
        }
        *t->value = v;
        t->source = "env";
    }
    pt_log_set_level((int)g_cfg.log_level);
}

static void warn_unknown(void)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "PTL_", 4))
            continue;
        size_t n = strcspn(*e, "=");
        bool known = false;
        for (size_t i = 0; !known && i < sizeof(g_table) / sizeof(g_table[0]); i++)
            known = strlen(g_table[i].name) == n && !strncmp(*e, g_table[i].name, n);
        for (size_t i = 0; !known && g_runtime_vars[i]; i++)
            known = strlen(g_runtime_vars[i]) == n && !strncmp(*e, g_runtime_vars[i], n);
        if (!known)
            pt_log(PT_LOG_WARN, "unknown variable %.*s ignored (see ptl_info)", (int)n, *e);
    }
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void init_once(void)
{
    parse_env();
    warn_unknown();
}

const struct pt_config *pt_config(void)
{
    pthread_once(&g_once, init_once);
    return &g_cfg;
}

void pt_config_reload(void)
{
    pthread_once(&g_once, init_once);
    parse_env();
}

int pt_tunables(const struct pt_tunable **table_p)
{
    pt_config();
    *table_p = g_table;
    return (int)(sizeof(g_table) / sizeof(g_table[0]));
}
