/*
 * wait.h - who runs the engine, who sleeps, who wakes whom. The whole
 * waiting protocol lives here (wait.c); nothing else in the tree touches the
 * words below. docs/waiting.md explains it with its state diagrams, and
 * model/wait.pml is its SPIN model (model/room.pml the room wait's; both
 * run by tests/model/run-spin in CI):
 * every step named [Sx]/[Dx] below is a labelled step of that model.
 *
 * Actors, per rank: API threads (any number) and, in offload mode, one NIC
 * thread. Peers (other ranks, other processes) publish messages into this
 * rank's receive queues.
 *
 * The shared words
 *
 *   word              lives   written by                 read by
 *   ----------------  ------  -------------------------  -------------------------
 *   token             nic     any thread: CAS 0->1        all
 *                             (A-TOK), ST_RELEASE 0 (R-TOK)
 *   want              nic     API waiters (RMW)            NIC thread (relaxed, hint)
 *   stop              nic     pt_wait_stop (release)       NIC thread
 *   nic_state         nic     NIC thread (relaxed)         dumps; a spinner's yield (SY,
 *                                                          a hint: no wake decision)
 *   bell.seq          region  every waker (RMW)            engine sleepers (futex word)
 *   bell.sleepers     region  engine sleepers (RMW)        peers, token releasers
 *   bell.polled       region  offload API waiters (RMW)    peers
 *   bell.rung         region  engine sleepers (clear, S2/W2), peers (D1R)
 *                             peers (XCHG 0->1, D1R)
 *   evw.seq/sleepers  nic     event sleepers / the engine  the engine / event sleepers
 *   fdless            nic     NIC thread (relaxed; F1)     token releasers (D5, D5T)
 *   spin_look         nic     spinning API threads (relaxed) NIC thread (S2, a hint)
 *   lease             nic     API waiters, NIC thread      API waiters, NIC thread
 *                             (CAS 0->stamp L1, CAS stamp->0 L2)
 *   untimed           nic     NIC thread (relaxed; T1)     leaving waiters (L1)
 *   eqo.watchers      nic     event sleepers (RMW; W2W)    the engine (D6)
 *   watch_all         nic     event sleepers (RMW; W2W)    the engine (D6)
 *   eq_sleepers       nic     event sleepers (RMW; W2W)    the engine (target.c: a hint
 *                                                          for unmatched requests)
 *   cmdq room.want    cmdq    its producer (RW-ARM),      the engine (RW-DUE, has_work)
 *                             the engine (RW-CLR, XCHG)
 *   cmdq room.ww      cmdq    its producer (sleepers RMW), the engine (RW-RING)
 *                             the engine (seq, RW-RING)
 *
 * "Engine sleepers" sleep on the bell until there is engine work: the NIC
 * thread (offload) or API waiters (host matching, where whoever waits runs
 * the engine). "Event sleepers" are offload-mode API waiters; they sleep on
 * the private evw until an event or completion is posted. In host mode the
 * two are the same threads and `ev` is the bell itself.
 *
 * The rules (each a store-buffering pair: one side publishes, FENCE_FULL,
 * reads the other side's announcement; SPIN checks every pair):
 *
 *   D1  a peer publishes a message (transport commit), fence, and rings the
 *       bell iff sleepers && !polled        <->  S2: an engine sleeper
 *       announces (sleepers++), fence, rechecks token == 0 && work.
 *       D1R: only if no peer rang since the sleepers' last announcement
 *       (XCHG rung 0 -> 1; the sleeper clears it between its seq read and
 *       its sleepers++: pt_announce, util/futex.h).
 *   D2  an API thread commits a command, fence, and runs the engine itself
 *       if the token is free (pt_wait_progress)  <->  D3 (the holder).
 *   D3  the token holder releases (R-TOK), fence, and, when sleepers &&
 *       token == 0 && work, drains the work itself (bounded) or rings
 *       <->  S2, and D2's reader. KL: with a lease out (read after the
 *       fence) only local work counts; inbound work waits for the lease's
 *       end (L2 or an adopting waiter, each of which looks after a fence).
 *   D4  an offload waiter lowers polled (RMW: fence), then checks as D3
 *       <->  D1 (peers skipped the ring while polled was up).
 *   D6  the engine posts events or completions, fence, and wakes `ev` iff it
 *       has sleepers and, for events into EQs, one of those EQs has a
 *       watcher  <->  W2W + W2: an event sleeper counts itself a watcher of
 *       its EQs (RMW), announces (RMW), rechecks.
 *   D5  (a transport descriptor: ofi) the CQ belongs to the engine holder.
 *       The NIC thread marks every sleep (F1, before sleepers++, with the
 *       seq its S2 read); if its S2 finds the token held it sleeps on the
 *       eventfd alone [S3b], else on the descriptor after its own
 *       fi_trywait. A releaser whose D3/D4 check finds it asleep and the
 *       token free reads the mark first: it rings unless the bell's seq
 *       moved since the mark's (a ring reached that sleep already), and
 *       does nothing else: the woken NIC thread's S2 rechecks the work
 *       <->  S2/F1.
 *   D5T (D5 beside a PtlEQGet spinner: spin_look recent at S2) the NIC thread
 *       sleeps on the eventfd alone with a timeout (PTL_WAIT_LEASE_US,
 *       doubling to PTL_WAIT_LEASE_MAX_US) whether or not the token is held,
 *       and its mark says so (PT_FDLESS_TIMED); a releaser that reads a
 *       current timed mark does not ring: the timeout ends that sleep, and
 *       the spinner reads the CQ at its looks meanwhile.
 *   L1  (the poll lease, offload; PTL_WAIT_LEASE_US) a waiter that leaves
 *       with what it waited for, or a spinner's look (PtlEQGet, PtlEQPoll(0):
 *       pt_wait_look), may leave its count in bell.polled up as the
 *       NI's one lease: CAS lease 0->stamp (fence), then reads `untimed`; if set,
 *       it takes the lease back (CAS stamp->0) and lowers polled (D4)  <->  T1:
 *       the NIC thread stores untimed = 1 before S2's fence and reads `lease`
 *       after it; it sleeps without a timeout only if it saw no lease.
 *   L2  whoever ends the lease owns its count: the next waiter (CAS stamp->0 in
 *       W1: it polls on that count) or the NIC thread (CAS stamp->0 after a timed
 *       sleep, then polled-- as D4, then S2's recheck, since it is awake).
 *   RW  (the room wait, offload) an API thread whose command ring is full
 *       marks the ring (RW-ARM: want = 1), announces itself on the ring's
 *       room word (RW-FENCE: sleepers++, an RMW), reloads the consumer index
 *       (RW-ROOM) and sleeps if still full  <->  the engine holder stores
 *       the consumer index as it takes commands (R2), and every engine
 *       sleeper's recheck after its fence (S2, W2, D3's has_work) reads the
 *       mark: set with half the ring free is work, and the engine's next
 *       drain_cmds pass clears it (RW-CLR, an XCHG) and rings the room word
 *       (RW-RING). drain_cmds also reads the mark at every pass without a
 *       fence (the common case: the holder is running and sees it there).
 *
 *   SO  (one API thread, host mode: engine/life.h "One API thread") the
 *       process's only API thread takes and releases the token with plain
 *       stores inside a solo section, and skips D3's and D6's fences: their
 *       partners (S2, W2, W2W) are engine and event sleepers of this process,
 *       i.e. other API threads, and there are none. D1, S2, W2 against
 *       peers, and every fence a transport pairs with another process, stay.
 *       The second API thread ends SO for good before its first call
 *       (SO-V, SO-F, SO-A: life.c). Model: SOLO (host, one thread per rank).
 *
 *   AF  (D1 without the sender's fence, host mode over shared memory:
 *       docs/waiting.md "D1 without the sender's fence") a rank whose engine
 *       sleepers are its API threads (no NIC thread) and that does not share
 *       its cores with more ranks advertises it (the transport's af_offer);
 *       peers then publish a fast-box message to it with a compiler barrier
 *       in place of F-SND's fence, and every announcement on its bell (W2)
 *       is followed by AF-M, a membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)
 *       before the recheck: every sender's publish still in its store buffer
 *       lands first, and a sender past the barrier loads our announcement.
 *       Model: ASYM (host mode); mutant MUT_AFM leaves AF-M out.
 *
 * Invariant the rules give (model: no_lost_work, no_lost_event): whenever
 * work is pending, somebody holds the token, or somebody that will run the
 * engine is awake, or the bell is rung; whenever an event is posted, its
 * waiter is awake or woken.
 *
 * One timeout is part of the protocol: a NIC thread that may owe a lease
 * its end (a lease out, leases left within the last PT_WAIT_LEASE_ACTIVE
 * periods, or a waiter that took one back because of `untimed`) sleeps
 * with a timeout (T1): PTL_WAIT_LEASE_US, doubled at each wake that finds
 * the lease renewed, up to PTL_WAIT_LEASE_MAX_US; the model lets that sleep
 * end whenever a lease is out. With a core of its own (LP, lease_poll) the
 * period stays PTL_WAIT_LEASE_US and a lease unchanged for a period is
 * polled for (the NIC thread goes back to S1 without announcing; model
 * POLLEASE). Every other futex timeout implements a caller's own
 * PtlEQPoll timeout or the backstop.
 */
#ifndef PT_WAIT_H
#define PT_WAIT_H

#include "futex.h"
#include "life.h"
#include "pt_atomic.h"
#include "trace.h"

#include <stdbool.h>
#include <stdint.h>

struct pt_nic;
struct pt_wait;

/* The room wait (RW above; docs/waiting.md "A full command ring"): one per
 * command ring. `want`: the ring's producer sets it (RW-ARM, relaxed, before
 * RW-FENCE), the engine holder clears it (RW-CLR, XCHG); anyone reads it
 * (relaxed: drain_cmds at every pass as a hint, has_work after its caller's
 * fence). `ww`: the producer sleeps on ww.seq, announced in ww.sleepers
 * (RW-FENCE); RW-RING bumps seq and wakes. Its own line: the producer
 * writes it only when its ring is full, the engine reads `want` per pass. */
struct pt_roomwait {
    PT_ALIGNED _Atomic uint32_t want;
    struct pt_waitword ww;
};

/* RW-CLR / RW-RING, by the engine holder (drain_cmds) after RW-DUE (its
 * relaxed load found `want` set) once `enough` (half its ring is free): a
 * producer that marked the ring is woken once per mark. The XCHG is a full
 * fence before pt_wake_all's seq bump. */
static inline void pt_wait_room_due(struct pt_roomwait *rw, bool enough)
{
    if (enough && RMW_XCHG(&rw->want, 0))
        pt_wake_all(&rw->ww); /* RW-RING: seq first, so a producer that has
                               * not blocked yet does not */
}

/* The producer (RW-ARM, RW-FENCE, RW-ROOM, then the sleep): wait at most
 * timeout_ns until room(arg); true when there is room. Clears nothing: a
 * mark left set costs the engine one spurious ring at most. */
bool pt_wait_room(struct pt_wait *w, struct pt_roomwait *rw, bool (*room)(void *), void *arg,
                  int64_t timeout_ns);

/* The NIC thread's state (nic_state; model: nic_st). Written only by the NIC
 * thread; read by dumps and tests, and by a spinner choosing whether to yield
 * (SY, pt_wait_polled_empty: when, never whether, anyone runs); never for a
 * wake decision. */
enum pt_nic_state {
    PT_NIC_RUN = 0,   /* holds the token, polling                              */
    PT_NIC_IDLE,      /* gave the token up (idle or yielded), will try to sleep */
    PT_NIC_ARM,       /* announced on the bell (sleepers++), rechecking [S2]    */
    PT_NIC_SLEEP,     /* in futex_wait on the bell [S3]                         */
    PT_NIC_STOP,      /* the thread has ended                                   */
};
const char *pt_nic_state_name(uint32_t s);

/* Counters (relaxed; dumps and tests). */
struct pt_wait_stats {
    _Atomic uint64_t nic_sleeps;     /* NIC thread futex sleeps                     */
    _Atomic uint64_t nic_armed_work; /* arms cancelled by the recheck (S2 found work) */
    _Atomic uint64_t waiter_sleeps;  /* API waiter futex sleeps                     */
    _Atomic uint64_t kicks_drained;  /* D3/D4 found work for a sleeper and drained it */
    _Atomic uint64_t kicks_rung;     /* D3/D4 rang the bell                         */
    _Atomic uint64_t missed_wakes;   /* backstop wake-ups that found work (a fault)  */
    _Atomic uint64_t late_wakes;     /* ... whose producer was still runnable        */
    _Atomic uint64_t bell_repairs;   /* forged `polled` words put right              */
    _Atomic uint64_t nic_fdless_sleeps; /* [S3b]: asleep on the eventfd alone          */
    _Atomic uint64_t fd_handovers;   /* D5: a releaser rang a marked NIC thread       */
    _Atomic uint64_t fd_handovers_owed; /* D5: ... found it rung already (no ring)     */
    _Atomic uint64_t fd_handovers_timed; /* D5T: ... found it timed (no ring)          */
    _Atomic uint64_t nic_spin_sleeps; /* D5T: NIC sleeps timed beside a spinner       */
    _Atomic uint64_t leases_left;    /* L1: waiters that left a lease                 */
    _Atomic uint64_t leases_ended;   /* L2: ... ended by the NIC thread               */
    _Atomic uint64_t nic_timed_sleeps; /* T1: NIC sleeps with the lease timeout        */
    _Atomic uint64_t nic_lease_polls; /* LP: leases the NIC thread polled for (its own) */
    _Atomic uint64_t ev_rings;       /* D6 rang the event sleepers                  */
    _Atomic uint64_t room_sleeps;    /* RW: producers asleep on a full command ring  */
    _Atomic uint64_t park_wakes;     /* NIC sleeps ended by a parked request's wait  */
    _Atomic uint64_t af_membars;     /* AF-M: global membarriers before a recheck     */
};

/* The NIC thread's sleep mark (F1): flag bit 0; bit 1 (PT_FDLESS_TIMED) set
 * when that sleep ends by its own timeout (the spinner rule, D5T); above
 * them the low 30 bits of the seq S2 read. */
#define PT_FDLESS(seq) ((uint32_t)(seq) << 2 | 1u)
#define PT_FDLESS_TIMED 2u

struct pt_wait {
    PT_ALIGNED _Atomic uint32_t token; /* 0 free; A-TOK/R-TOK                       */
    _Atomic uint32_t holds;            /* holds ended: each holder bumps it before
                                        * R-TOK (relaxed, on the line it owns). Read
                                        * only by the backstop: did anyone run the
                                        * engine between its two looks?            */
    _Atomic uint32_t want;             /* API threads waiting for the token (hint)  */
    _Atomic uint32_t stop;             /* NIC thread: end                           */
    _Atomic uint32_t nic_state;        /* enum pt_nic_state                         */
    struct pt_waitword *bell;          /* engine sleepers (in the job region)       */
    struct pt_waitword *ev;            /* event sleepers: &evw (offload) or bell    */
    bool nic_thread;                   /* a NIC thread runs (offload mode)          */
    bool solo_held;                    /* the holder took the token in a solo section
                                        * (SO): written and read by the holder only */
    bool yield;                        /* PTL_NIC_YIELD                             */
    uint64_t nic_spin_ns;              /* PTL_NIC_SPIN_US                           */
    uint64_t nic_idle_ns;              /* the NIC thread's idle spin: nic_spin_ns, its
                                        * share when ranks outnumber cores (spin_share) */
    uint64_t wait_spin_ns;             /* PTL_WAIT_SPIN_US                          */
    uint64_t yield_ns;                 /* PTL_WAIT_YIELD_US (pt_wait_init)          */
    bool nic_crowded;                  /* another NIC thread of this host shares our
                                        * core (pt_wait_set_crowded): no long spin  */
    struct pt_waitword evw;            /* offload: event sleepers                   */
    /* Hostile-peer backstop (not part of the protocol: SPIN proves it without).
     * Any rank of the job can write the bell; a forged sleepers/polled makes
     * peers skip the ring. polled_mine is the true count of our own polling
     * waiters (raised before bell->polled, lowered after: polled_mine >=
     * the legitimate bell->polled at every instant), so a bell->polled above
     * it was written by somebody else and is put right (repair_bell). Engine
     * sleepers sleep at most backstop_ns (PTL_WAKE_BACKSTOP_MS); one that
     * wakes to find work nobody rang for waits one period more, then does
     * the work; unless a thread that may still ring is runnable (a producer
     * preempted between publish and ring: late_wakes), it logs a fault and
     * uses 1 ms from then on. */
    _Atomic uint32_t polled_mine;
    _Atomic uint64_t backstop_ns;      /* 0: none (relaxed; shortened once)         */
    struct pt_wait_stats st;
    struct pt_trace *tr;               /* flight recorder or NULL (util/trace.h): set
                                        * after pt_wait_init, before any thread runs */
    /* A transport whose arrivals do not ring the bell (ofi; xport.h wait_fd):
     * engine sleepers sleep in poll() on xfd and efd instead of the futex,
     * and every ring of the bell by this process also writes efd (see
     * "Sleeping on a descriptor" in docs/waiting.md). -1: futex only. */
    int xfd;                           /* the transport's descriptor             */
    int cfd;                           /* polled beside xfd, not inside it: the
                                        * provider's own (xport.h cq_fd), or -1  */
    int efd;                           /* our eventfd (written by ringers)        */
    int rfd;                           /* the transport's ring socket (peers of
                                        * this host ring it after their seq bump:
                                        * xport.h ring_fd), or -1                 */
    /* P1/P2 (wait.c, fd_wait): 1 while an engine sleeper of this process
     * polls the descriptors (xfd, cfd, efd, rfd); the others sleep on the bell's
     * futex meanwhile. RMW only (CAS to take, XCHG to give back). */
    _Atomic uint32_t fd_poller;
    /* D5: the NIC thread's mark, stored at every S2 (F1, before its
     * sleepers++): PT_FDLESS(seq), seq the bell's seq its S2 read, so that
     * a releaser can tell whether a ring has reached that sleep since (D5
     * rings once per sleep, on the eventfd alone [S3b] or on the
     * descriptor). One word, so flag and seq are read together. Read by
     * releasers after their fence; written only by the NIC thread. */
    _Atomic uint32_t fdless;
    /* D5T, the spinner rule (docs/waiting.md "A spinner on a descriptor"):
     * spin_look, the time of the last look (PtlEQGet, PtlEQPoll(0)) of an API
     * thread that spins on such looks, written by it (relaxed), read by the
     * NIC thread at S2 as a hint. While it is recent, the NIC thread sleeps
     * on the eventfd alone with a timeout (fd_spin_ns, doubling per timed
     * sleep up to lease_max_ns) and marks the sleep PT_FDLESS_TIMED, and
     * releasers skip the hand-over ring. fd_spin_ns 0: off (no descriptor,
     * host matching, PTL_WAIT_LEASE_US=0). */
    _Atomic uint64_t spin_look;
    uint64_t fd_spin_ns; /* lease_ns's value on a descriptor NI (lease_ns is 0 there) */
    /* D6's filter: sleepers (W2) that wait for more EQs than a pt_watch
     * holds, so for any event. Written by them (RMW, W2W), read by D6. */
    _Atomic uint32_t watch_all;
    _Atomic uint32_t eq_sleepers;      /* API threads asleep in an EQ wait (RMW with
                                        * the watchers, W2W; a hint for
                                        * target.c's unmatched requests)       */
    /* The poll lease (L1, L2, T1; docs/waiting.md "The poll lease"). lease:
     * nonzero while bell.polled (and polled_mine) hold one count that no
     * waiter holds; its value is the leaving waiter's stamp (the NIC thread
     * ends a lease it has seen unchanged at two timed wake-ups, so a lease
     * lives one to two periods). untimed: 1 from the NIC thread's S2 until it
     * decides to sleep with a timeout, or wakes. lease_ns 0: no lease
     * (PTL_WAIT_LEASE_US=0, or host matching, where the waiters are the engine
     * sleepers). lease_max_ns: T1's timed sleep doubles from lease_ns up to
     * this while leases keep being renewed (a lease left for good ends
     * within two of these). */
    _Atomic uint32_t lease;
    _Atomic uint32_t untimed;
    _Atomic uint32_t lease_wanted; /* a waiter took its lease back (untimed): a hint */
    uint64_t lease_ns, lease_max_ns;
    /* PK: the park_until (nic.h) a releaser's kick last rang the engine's
     * sleepers for (relaxed, any releaser; a hint: a second ring for the
     * same park costs a spurious wake at most). */
    _Atomic uint64_t park_rung;
    /* A core of its own (pt_wait_set_lease_poll; PTL_NIC_LEASE_POLL): while a
     * lease is out the NIC thread polls the engine instead of sleeping (LP),
     * and ends a lease it has seen unchanged for lease_max_ns. Private to
     * the NIC thread after pt_wait_set_lease_poll (before it starts). */
    bool lease_poll;
    /* PTL_CMD_INLINE (pt_wait_set_cmd_inline; before the NIC thread
     * starts, read-only after): an API thread whose engine is free runs its
     * command itself (true; always in host mode), or only posts it and
     * rings a sleeping NIC thread (false: a core of its own). */
    bool cmd_inline;
    /* AF (pt_wait_set_af; host mode, set before the transport advertises
     * it, then read-only): W2 runs AF-M. af_bound: an AF-M failed (any
     * waiter stores 1, relaxed); from then on every W3 sleep is at most 1 ms. */
    bool af;
    _Atomic bool af_bound;
    /* NB, the NIC thread's scheduling class (docs/waiting.md "Batch, and
     * urgent while a waiter sleeps"; outside the protocol: a class decides
     * how soon a woken thread runs, never whether). With PTL_NIC_BATCH the
     * NIC thread is SCHED_BATCH (a peer's ring does not preempt its
     * application on a shared core), except while an API thread of ours
     * sleeps in a wait (W3): then nothing of ours runs on that core, and a
     * batch thread's wake-up waited for the scheduler's tick whenever another
     * program held the core (8 B offload ping-pong beside two CPU-bound
     * processes: mean 3.2-6.7 us, host matching 1.2-1.3). D6's ring ends it
     * (pt_wait_cls_calm): the sleeper it wakes wants the core next. The
     * rest of its state (a lock, the sleepers, the NIC thread's id, the
     * class set) is wait.c's, per NI index (cls_slot): these three bytes use
     * the struct's tail, since a struct pt_wait one line longer cost the 8 B
     * message rate 4-6% (every field of struct pt_nic after it moves). Not
     * where the job's ranks outnumber the cores (yield_ns 0; wait.c
     * cls_urgent_ok): a sleeping rank's core then goes to another rank,
     * which an urgent NIC thread would preempt. */
    bool nic_batch;                    /* PTL_NIC_BATCH, offload (set before the
                                        * NIC thread starts, read-only after)   */
    _Atomic uint8_t cls_urgent;        /* the NIC thread is SCHED_OTHER for a
                                        * sleeper: D6's hint (relaxed; written
                                        * under the slot's lock)                */
    uint8_t cls_slot;                  /* the NI's index (pt_wait_set_batch)    */
};

/* Trace points (util/trace.h): PT_TRACE for the token holder's engine ring,
 * PT_TRACE_WAIT for the wait ring (any thread). `nic` is a struct pt_nic *. */
#define PT_TRACE(nic, site, val)      PT_TRACE_T((nic)->w.tr, (site), (val))
#define PT_TRACE_WAIT(nic, site, val) PT_TRACE_WAIT_T((nic)->w.tr, (site), (val))

/* Named constants of the protocol (each bounds work, none is a timeout that
 * correctness relies on). */
#define PT_WAIT_QUIET_POLLS   8   /* poll-until-quiet bound after inline work      */
#define PT_WAIT_KICK_ROUNDS   4   /* D3: drain rounds before ringing instead        */
#define PT_WAIT_KICK_POLLS    8   /* D3: polls per drain round                      */
#define PT_WAIT_LATE_PEERS   16   /* backstop: pending senders whose threads it reads */
#define PT_WAIT_CLOCK_EVERY  16   /* waiter reads the clock every 16 spins          */
#define PT_WAIT_FAIL_TAKE_NS 10000000u /* a failed job: try 10 ms to take the token */
#define PT_WAIT_FAIL_SEEN_NS 1000000000u /* ... or until the engine took the failure
                                         * in (its failed END events), at most 1 s  */
#define PT_WAIT_FAIL_POLLS   64   /* ... and drain what already arrived             */
#define PT_WAIT_FAIL_SETTLE_NS 5000000000ull /* ... and look at most 5 s for the failed
                                   * ENDs of transfers the transport still holds
                                   * (settle_until; ofi gives a dead peer's posted
                                   * reads up OFI_DRAIN_MS, 2 s, after it sees the
                                   * death; 3 s left too little beside other jobs)  */
#define PT_WAIT_FAIL_NAP_NS 200000 /* ... between two looks while another runs it   */
#define PT_HOST_SPIN_YIELD  256   /* host mode: spins before sched_yield            */
#define PT_WAIT_LEASE_ACTIVE 4    /* T1: after a lease was left, the NIC thread
                                   * sleeps with a timeout for this many lease
                                   * periods (then, idle, without)                */
#define PT_WAIT_SPINNER_NS 20000u /* a look within this of the thread's last empty
                                   * look makes it a spinner (pt_wait_look)    */
#define PT_WAIT_YIELD_NS  20000u  /* a waiter spins this long without what it waits
                                   * for, then yields the core at every clock check
                                   * (the default; 0 when oversubscribed:
                                   * pt_wait_init)                             */
#define PT_WAIT_NAP_NS  1000000u  /* a waiter that has looked this long without
                                   * what it waits for naps (sleeps) once per
                                   * this much more looking, instead of one
                                   * of its yields (pt_wait_polled_empty)      */
#define PT_WAIT_NAP_SLEEP_NS 1000u /* the nap asked for (the kernel's timer slack,
                                   * 50 us by default, makes it longer)        */

/* Offload mode: is an API thread inside a blocking wait (polling, or
 * asleep on the event word)? A hint with no ordering, for choices that
 * only cost speed when wrong (the cooperative rendezvous: a NIC thread
 * that shares its core with the application writes a part of a put only
 * while the application waits, so it never takes the core from it). */
static inline bool pt_wait_api_waiting(struct pt_wait *w)
{
    /* a lease's count is nobody's wait (L1) */
    return LD_RELAXED(&w->polled_mine) > (LD_RELAXED(&w->lease) != 0) ||
           LD_RELAXED(&w->ev->sleepers) != 0;
}

/* Set up (API thread, before the NIC thread starts). */
/* ranks_here: the job's ranks that share this host's cores (a rank's
 * waiting thread each: its NIC thread hands it the engine and sleeps), 0 if
 * unknown; with PTL_WAIT_YIELD_US=-1, more of them than cores makes waiters
 * yield at once (yield_ns 0), else after PT_WAIT_YIELD_NS. */
void pt_wait_init(struct pt_wait *w, struct pt_waitword *bell, bool nic_thread, bool yield,
                  uint64_t nic_spin_ns, uint64_t wait_spin_ns, uint32_t ranks_here);
/* The NIC thread's core is also another NIC thread's (PTL_NIC_CPU names one
 * core for every rank of the host, or there are more ranks than cores to
 * spread them over): its idle spin stays PTL_NIC_SPIN_US even while our
 * application sleeps (nic_spin, wait.c). Before the NIC thread starts. */
void pt_wait_set_crowded(struct pt_wait *w, bool crowded);
/* NB: PTL_NIC_BATCH for the NI of index slot (< PT_MAX_NI), before its NIC
 * thread starts (offload mode only). */
void pt_wait_set_batch(struct pt_wait *w, bool on, uint32_t slot);
/* The NIC thread has a core of its own: poll while a lease is out (LP; no
 * effect without leases). Before the NIC thread starts. */
void pt_wait_set_lease_poll(struct pt_wait *w, bool on);
void pt_wait_set_cmd_inline(struct pt_wait *w, bool on);
/* AF: before the transport advertises it (host mode only), and only where
 * a waiter spins at least this long before it sleeps (PTL_WAIT_SPIN_US). */
#define PT_AF_MIN_SPIN_US 50
void pt_wait_set_af(struct pt_wait *w, bool on);
/* Sleep on the transport's descriptor too (after pt_wait_init, before any
 * thread runs): 0, or -errno (no eventfd). pt_wait_fini closes what it made. */
int pt_wait_set_fd(struct pt_wait *w, int xfd, int cfd, int rfd);
void pt_wait_fini(struct pt_wait *w);
/* Ring the bell: pt_wake_all, and the eventfd when sleepers poll (wait.c). */
void pt_wait_ring(struct pt_wait *w, struct pt_waitword *ww);

/* The NIC thread's body (pthread start routine; arg is the struct pt_nic). */
void *pt_wait_nic_thread(void *nic);
/* Ask the NIC thread to end (it is then joined by the caller). */
void pt_wait_stop(struct pt_wait *w);

/* Token. A-TOK: the CAS; pairs with R-TOK in every release below. */
static inline bool pt_wait_try_take(struct pt_wait *w)
{
    if (LD_RELAXED(&w->token) != 0)
        return false;
    if (!w->nic_thread && pt_life_solo_open()) {
        /* SO: the process's only API thread, and no NIC thread: nobody else
         * takes the token until our section ends (life.h) */
        ST_RELAXED(&w->token, 1);
        w->solo_held = true;
    } else {
        uint32_t z = 0;
        if (!RMW_CAS(&w->token, &z, 1)) /* A-TOK */
            return false;
    }
    PT_TRACE_TAKE_T(w->tr);
    return true;
}
/* Plain release (R-TOK) for a holder that owes nobody a check: the NIC thread
 * (it arms next, S2) and single-threaded teardown. A solo holder's section
 * ends here (SO-R). */
static inline void pt_wait_give(struct pt_wait *w)
{
    PT_TRACE_GIVE_T(w->tr);
    ST_RELAXED(&w->holds, LD_RELAXED(&w->holds) + 1); /* only the holder writes it */
    bool solo = w->solo_held;
    w->solo_held = false;
    ST_RELEASE(&w->token, 0); /* R-TOK pairs with A-TOK */
    if (solo)
        pt_life_solo_close(); /* SO-R */
}
/* R-TOK and D3's fence, which a solo holder (SO) does not need: its partner
 * S2 is another API thread of this process (host mode). */
static inline void pt_wait_give_d3(struct pt_wait *w)
{
    bool solo = w->solo_held;
    pt_wait_give(w);
    if (!solo)
        FENCE_FULL(); /* D3: our release before reading sleepers; pairs with S2's RMW */
}
/* D3: release, and make sure an engine sleeper is not left with work. */
void pt_wait_release(struct pt_nic *nic);

/* Run the engine once if nobody does (take, poll until quiet, D3 release).
 * After a command commit this is D2's reader half. */
void pt_wait_progress(struct pt_nic *nic);
/* The same after a command (PtlPut, PtlGet, PtlMEAttach, ...): the first poll runs
 * the command and looks at the receive side only every PT_NIC_SEND_RX_EVERY
 * calls (pt_nic_poll_send); it polls until quiet only if that poll did more.
 * What arrived meanwhile is taken by the next wait, the NIC thread, or this
 * release's D3 kick when an engine sleeper would be left with it (model:
 * submit's `so`). A streaming sender's receive-side look was a third of its
 * instructions per message. */
void pt_wait_progress_cmd(struct pt_nic *nic);
/* For a holder that ran its command directly (the direct dispatch,
 * pt_nic_submit): what that command can have left (pt_nic_poll_after), then
 * D3. */
void pt_wait_cmd_done(struct pt_nic *nic);
/* Host matching: as above, but a caller whose own command is queued keeps
 * trying until the command has been taken (bounded by the holder's poll). */
void pt_wait_progress_host(struct pt_nic *nic, bool (*mine_pending)(void *), void *arg);

/* A caller that polls without waiting (PtlEQGet, PtlEQPoll with timeout 0)
 * reports each result here. Clients spin on such calls (the reference
 * implementation's handshake, locktest): after PT_WAIT_YIELD_NS of nothing
 * but empty polls, every further empty poll yields the core, as a waiter
 * in pt_wait_until does. Without it, two spinners sharing a core run in
 * scheduler slices of several ms, and a partner's timer-driven resend comes
 * that much late (REF ringtest hung in offload mode, 4 ranks on 2 cores).
 * Only where the yield serves a thread of ours (SY, pt_wait_yield_serves).
 * After PT_WAIT_NAP_NS of them it naps once per PT_WAIT_NAP_NS, and reads
 * the transport's slow sources first (rx_pending, result unused: the
 * probe's timer, a death the launcher noticed), which otherwise only a
 * thread about to sleep reads. Thread-local state only; not a word of the
 * protocol. */
void pt_wait_polled_empty(struct pt_nic *nic, bool empty);
/* SY (pt_wait_polled_empty): does a spinner's yield serve a thread of ours?
 * Yes where ranks outnumber cores (yield_ns 0), where another API thread
 * lives (api_threads > 1: pt_life_threads), or where our NIC thread is awake
 * (nic_state before PT_NIC_SLEEP); else it only hands the core to another
 * program. Pure (tests/unit/test_yield.c, its table). */
bool pt_wait_yield_serves(bool nic_thread, uint32_t nic_state, uint64_t yield_ns,
                          uint32_t api_threads);
/* Is the calling thread an NI's NIC thread? */
bool pt_wait_on_nic_thread(void);
/* A bounded wait for the application to do something (read its EQ, attach
 * an entry), taken one engine poll at a time by the token holder: false
 * until limit_ns have passed since the first call (*since: 0 when not
 * waiting), then true once, with *since back to 0. On the NIC thread each
 * false yields the core: the thread waited for may share it. */
bool pt_wait_patience(uint64_t *since, uint64_t limit_ns);

/* D6, producer half: the engine posted events or completions (token holder,
 * end of a poll). all: counters, completions, frees: every event sleeper
 * must look. Otherwise only events into the EQs whose watchers are
 * watch[0..n): a sleeper waits for EQs it counted itself a watcher of
 * (W2W, before W2), so ring only when one of those has any. Sleepers on
 * other EQs are not woken for nothing (a target asleep in PtlEQWait on one
 * EQ while its NIC thread answers gets whose events go to another: 8 B
 * offload PtlGet 1.2-1.5 -> 0.9 us; docs/waiting.md "Whom D6 wakes"). */
/* NB: the NIC thread back to SCHED_BATCH (wait.c; cold, a system call). */
void pt_wait_cls_calm(struct pt_wait *w);

static inline bool pt_wait_events_posted(struct pt_wait *w, bool all,
                                         _Atomic uint32_t *const *watch, unsigned n)
{
    /* SO: the holder is the only API thread (host mode), and no other can
     * sleep on the bell: D6's fence has no partner. Returns whether it fenced. */
    bool fenced = !w->solo_held;
    if (fenced)
        FENCE_FULL(); /* D6: the posts before reading sleepers and watchers; pairs with W2W/W2 */
    if (!LD_RELAXED(&w->ev->sleepers))
        return fenced;
    bool ring = all || LD_RELAXED(&w->watch_all) != 0;
    for (unsigned i = 0; !ring && i < n; i++)
        ring = LD_RELAXED(watch[i]) != 0;
    if (ring) {
        RMW_ADD(&w->st.ev_rings, 1); /* a statistic; the ring's own RMW follows */
        pt_wait_ring(w, w->ev);
        if (PT_UNLIKELY(LD_RELAXED(&w->cls_urgent)))
            pt_wait_cls_calm(w); /* NB: the sleepers we woke want the core */
        return true; /* the RMWs fenced */
    }
    return fenced;
}

/* The engine found a message for this rank (drain_rx). An offload waiter
 * that polls will lower bell.polled (D4) as soon as it has what it waits
 * for, and a peer read that line after its last commit (D1): take the line
 * for writing now, while the message is handled, instead of stalling on it
 * in D4. A prefetch: no word changes, no ordering, any thread's view. */
static inline void pt_wait_rx_hint(struct pt_wait *w)
{
    /* With leases the waiter usually leaves the line alone (L1), so this
     * prefetch is then wasted; skipping it with leases on made no difference
     * to the PtlEQGet spinner, and the ACK patterns were not measured both
     * ways (2026-11-29). */
    if (w->nic_thread && LD_RELAXED(&w->polled_mine))
        PREFETCH_W(&w->bell->polled);
}

/* One look for a caller that does not wait (PtlEQGet, PtlEQPoll with
 * timeout 0): run the engine once if free, then ready(arg). A spinner (it
 * looked less than PT_WAIT_SPINNER_NS ago) with leases on keeps a lease
 * between its looks (wait.c). */
typedef bool (*pt_ready_fn)(void *arg);
bool pt_wait_look(struct pt_nic *nic, pt_ready_fn ready, void *arg);

/* Wait until ready(arg) (which may consume what it finds), running the engine
 * whenever the token is free. timeout_ns < 0: forever. Returns true if ready,
 * false on timeout or when the job failed (the caller looks at why). */
bool pt_wait_until(struct pt_nic *nic, pt_ready_fn ready, void *arg, int64_t timeout_ns);

/* W2W: the EQs a waiter waits for, counted as their watchers while it
 * sleeps (before W2's announcement), so that D6 rings for their events
 * and not for others'. n == 0 and !all: none (a counter or a command:
 * those wake every sleeper, pt_wait_events_posted's `all`). */
#define PT_WAIT_WATCH 4 /* EQs a pt_watch holds; and D6's list per poll (nic.h) */
struct pt_watch {
    _Atomic uint32_t *w[PT_WAIT_WATCH]; /* the EQs' pt_eqo.watchers           */
    unsigned n;
    bool all;                          /* more EQs than w holds: watch_all    */
};
bool pt_wait_until_watch(struct pt_nic *nic, pt_ready_fn ready, void *arg, int64_t timeout_ns,
                         const struct pt_watch *watch);

/* Wake every sleeper of this NI (the job failed, or the NI stops). */
void pt_wait_wake_everyone(struct pt_wait *w);

void pt_wait_dump(const struct pt_wait *w, void *file);

#endif
