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
 *   off_procs  P process blocks of proc_bytes (page aligned), block p:
 *     +0          _Atomic uint32_t heads[P][2]   p's consumer heads: [s][c] is
 *                 how far p has consumed the ring from s of class c
 *     +sum_off    _Atomic uint64_t sum[nsum]      p's "senders with work"
 *                 summary: bit k of sum[k / 64] says word k may have new bits
 *     +words_off  _Atomic uint64_t words[nwords]  bit s: sender s has work
 *     +coop_off   _Atomic uint32_t coop[PT_SHM_COOP_WORDS]  p's claim words
 *                 (the cooperative rendezvous, below)
 *     +flag_off   struct pt_flagslot[PT_FLAG_SLOTS]  p's flag slots: written
 *                 by p only, read by the members of p's groups
 *                 (util/flagline.h; coll/flag.c)
 *     +fbdir_off  struct pt_shm_fbdir             p's fast-box directory
 *     +fb_off     struct pt_shm_fbox[PT_SHM_FBOXES]  fast boxes towards p
 *                 (below, "Fast boxes")
 *     +rings_off  struct pt_shm_ring[P][2]        [s][c]: ring from s to p
 *                 (ring_bytes each, whole cache lines: two at D = 32)
 *     +pool_off   p's buffer pool (page aligned): pool_req request buffers,
 *                 then pool_rsp response buffers, slot_size bytes each
 *     Block p is bound to p's NUMA node when p attaches.
 *   off_trace  P trace areas of trace_bytes (PT_TRACE_AREA_BYTES), area
 *              r is slot r's flight recorder (util/trace.h): written by its
 *              process only, read by dumps (ptlrun), which may find it in any
 *              state.
 *
 * Per process the region grows by 2 * ring_bytes + 8 bytes + 1 bit per peer
 * (a job region is linear in P, not quadratic as the per-pair slot queues of
 * version 3 were); the pools are fixed (docs/architecture.md, "Transports
 * and the job region").
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
 * DETACHED (R-ATT's partner), then ospid 0 (ST_RELEASE: the slot is free),
 * then `departed` raised and every bell rung: a guest slot found DETACHED is
 * gone to its peers (peer_alive), their waits for its answers fail. A slot
 * claimed again before a peer looked is not DETACHED any more: each claim
 * raises the record's `gen` (G-GEN), and a peer whose engine finds it moved
 * (shm_peer_moved: at the departure sweep, before it sends to the slot's
 * id, before it takes a message from the slot, before a transfer's step)
 * fails what it had in flight with the last owner first (engine/nic.c,
 * pt_nic_guest_moved), and a CMA step refuses a slot whose state or gen
 * says its owner changed (shm.c, cma_owner_same). Before, a
 * get to a guest that left while its peer was stopped or asleep, and whose
 * slot another guest took at once, waited for ever (mp_join reclaim).
 * Peers find guests that attached after they did by rescanning the guest
 * records (LD_ACQUIRE state == ATTACHED (A-ATT), then nid/pid) when an id is
 * not a rank's; the launcher polls their ospids (it cannot waitpid them).
 *
 * Messages (sender s -> receiver r, class c). The message body lives in a
 * buffer of s's pool of class c; the (s, r, c) descriptor ring carries its
 * index. Written by s only: the buffer (header and payload), the ring's
 * entries, the ring's tail. Written by r only: heads[s][c] in r's block.
 *
 *   sender s (commit)                       receiver r (peek / release)
 *   fill buffer b; ent[tail & (D-1)] = b    t = LD_ACQUIRE(tail)         A-TAIL
 *   ST_RELEASE(tail, tail + 1)     R-TAIL   b = ent[head & (D-1)]; read buffer b
 *                                           ST_RELEASE(heads[s][c], head + 1) R-HEAD
 *   LD_ACQUIRE(heads[s][c]) (ring full,
 *   buffers to take back, or the reuse
 *   after r answered: shm_reserve)   A-HEAD
 *
 * R-TAIL pairs with A-TAIL: the entry and the buffer are written before r
 * sees the tail move. R-HEAD pairs with A-HEAD: r is done reading a buffer
 * before s takes it back to its free list and writes it again. A buffer
 * index is private to s until R-TAIL and again after A-HEAD shows r moved
 * past it; s remembers privately which buffer it put at each position.
 *
 * P-HEAD, the head carried back: each ring message r sends s (class c)
 * holds, in the high half of its buffer's first word, r's head of the ring
 * s -> r of class c as r's commit found it (16 bits). r had read every
 * buffer before it, and R-TAIL publishes it with the message: once s has
 * seen the message (A-TAIL), it may take those buffers back without A-HEAD.
 * s extends the 16 bits to the smallest position at or past its last
 * estimate (r's messages come in order and its head only grows, so that is
 * never past the head r had), and reads it only from messages r sent after
 * s attached (the tail of r's ring read after s's A-HEAD at attach). Its
 * use: the reuse after an answer (shm.c, tx_room), which without it read
 * r's head line, so that r's next R-HEAD store waited for that copy's
 * invalidation before r's fence. What s trusts: as A-HEAD, credits only.
 *
 * What r trusts: nothing. Every value read from the region is checked before
 * use: tail - head <= D (else s is faulty), every entry < the pool size of
 * that class of s (else s is faulty), lengths are the engine's to check
 * (a message is at most slot_size bytes by construction). A faulty sender is
 * never read again by this receiver (logged once). What s trusts: heads[s][c]
 * only as credits: a head that is not within [reclaimed, tail] reads as "no
 * progress" (the ring stays full; a forged head can stall s towards r, never
 * make it reuse a buffer twice: positions are reclaimed once each).
 *
 * "Senders with work" bitmap, per receiver r: words[s / 64] bit s % 64, and
 * sum[k / 64] bit k % 64 for word k. Invariant: while r's ring from s may
 * hold a message r has not seen, s's bit is set, or r has s in its private
 * active list (it polls s's two rings), or both.
 *
 *   sender s, commit (after R-TAIL)         receiver r, pickup
 *   FENCE_FULL                      F-SND   RMW_AND(sum[k/64], ~bit k)  S-CLR
 *   w = LD_RELAXED(words[s / 64])           w = LD_ACQUIRE(words[k])
 *   if !(w & bit s):                        list every sender set in w
 *     RMW_OR(words[s / 64], bit s)  B-SET
 *     if !(LD_RELAXED(sum) & bit k):
 *       RMW_OR(sum, bit k)          S-SET
 *
 *   receiver r, drop of a listed sender s whose two rings look empty (after
 *   PT_SHM_DROP_PEEKS empty peeks in a row, or at every empty peek while more
 *   than PT_SHM_DROP_LISTED senders are listed; shm.c):
 *   RMW_AND(words[s / 64], ~bit s)  B-CLR; FENCE_FULL; LD_ACQUIRE both tails
 *   still empty: unlist s.  Not empty: keep s listed and RMW_OR its bit back.
 *
 * D-BIT (Dekker, F-SND with B-CLR): s stores its tail then loads its bit;
 * r clears the bit then loads the tail. At least one sees the other: either
 * r sees the new tail (keeps s listed) or s sees its bit clear (sets it,
 * then the summary). D-SUM (B-SET then its summary load, with r's summary
 * RMW_AND then its word load): either s sees the summary bit cleared and
 * sets it again, or r's word load sees s's bit. So a set bit that r has not
 * listed always has its summary bit set, and r finds it the next time it
 * reads the summary (every peek, one relaxed load of a line that changes
 * only when a word goes from empty to non-empty). In streaming, the bit is
 * already set and s only loads a clean shared line: no RMW per message on
 * either side. The RMW_ANDs and RMW_ORs above are full fences
 * (pt_atomic.h): S-CLR (the pickup's summary RMW_AND) before the word load,
 * B-SET before the summary load.
 *
 * Model: model/region.pml (docs/waiting.md, "The senders-with-work
 * bitmap") has these steps under the same names (R-TAIL, F-SND, B-SET,
 * S-SET, S-CLR, B-CLR, D1) and one mutant per ordering or step: MUT_FSND,
 * MUT_BSET, MUT_SSET, MUT_SWAP, MUT_BCLR, MUT_RELOAD, each refuted by SPIN
 * (tests/model/run-spin).
 *
 * Claim words (the cooperative rendezvous: protocols/wire.h, PUSH). A
 * target p that asks initiator s to write part of a put picks a free word k
 * of its own (private free list), stores OPEN = gen << 2 (ST_RELAXED; the
 * PUSH that names k and OPEN is published by R-TAIL after it), and then:
 *   s, on the PUSH:  RMW_CAS(coop[k]: OPEN -> OPEN | 1)  TAKEN: s writes the
 *                    part and answers PDONE; failed: p took it back, s does
 *                    nothing (no PDONE)
 *   p, its own part pulled, no PDONE yet:
 *                    RMW_CAS(coop[k]: OPEN -> OPEN | 2)  STOLEN: p pulls the
 *                    part itself; failed: s has it, p waits for the PDONE
 * Exactly one CAS wins, so exactly one process writes the part. A host-mode
 * initiator that computes outside the library thus never holds its target
 * up. Trust: any value s stores only makes p's CAS fail, and p then waits
 * for a PDONE that s owes (what a peer that never answers costs anyway;
 * bounded by dead-peer detection when s dies). p's gen makes a word reused
 * for a later transfer differ from every earlier PUSH's OPEN.
 *
 * Doorbell: commit's pt_wake_if_sleeping_fenced (util/futex.h; D1,
 * engine/wait.h) comes after F-SND and
 * B-SET/S-SET; a sleeper announces itself and then calls rx_pending, which
 * reads the summary words and, for every bit set in the words, the two
 * rings: a message committed before the sleeper's recheck is seen by it
 * (its bit is set, as every listed sender's is once peek has returned
 * nothing) or its sender sees the announcement and wakes it. The summary
 * words only answer early: the bits alone decide (docs/waiting.md; the
 * model's MUT_PENDSUM passes, its MUT_S2 fails).
 */
#ifndef PT_SHM_REGION_H
#define PT_SHM_REGION_H

#include "flagline.h"
#include "futex.h"
#include "trace.h"
#include "xport.h"

#include <errno.h>
#include "pt_atomic.h"

#include <stdint.h>

#define PT_SHM_MAGIC     0x31524a4c54500a7fULL  /* "\x7f\nPTLJR1" little-endian  */
#define PT_SHM_VERSION   15u                    /* 2: trace areas; 3: guests;
                                                 * 4: endpoint names (ofi);
                                                 * 5: pools + descriptor rings;
                                                 * 6: the rings' credit marks;
                                                 * 7: claim words (coop);
                                                 * 8: fast boxes;
                                                 * 9: the bell's rung (D1R);
                                                 * 10: fast-box messages of up
                                                 * to 10 lines
                                                 * (a receiver judges more
                                                 * lines faulty);
                                                 * 11: flag slots;
                                                 * 12: fast-box messages of at
                                                 * most 3 lines again;
                                                 * 13: a ring buffer's first
                                                 * word carries its sender's
                                                 * head (P-HEAD);
                                                 * 14: a guest slot's claim
                                                 * generation (G-GEN);
                                                 * 15: 128-line fast-box
                                                 * lanes                      */
#define PT_SHM_COOP_WORDS 64u                   /* claim words per process     */
#define PT_SHM_FBOXES    32u                    /* fast boxes per receiver     */
#ifndef PT_SHM_FBLINES /* -D for a measurement build (the region's layout follows) */
#define PT_SHM_FBLINES   128u                   /* lines per fast-box lane (2^k):
                                                 * 32 until the sixty-second
                                                 * session, when a window of 64
                                                 * 8 B puts filled the lane and
                                                 * half of it took the rings;
                                                 * 128: the 8 B message rate
                                                 * +13-18%, 64 lines +4-12%
                                                 * (bench/results-notes.md)     */
#endif
#define PT_SHM_FB_MAXLN  3u                     /* lines one fast-box message may take
                                                 * (168 stream bytes: changed header
                                                 * words and payload); longer ones
                                                 * take the rings, faster since the
                                                 * rings' payload prefetch (2026-12-04:
                                                 * bench/results-notes.md, "Fiftieth
                                                 * session") */
#define PT_SHM_PAGE      4096u                  /* layout alignment (not sysconf:
                                                 * every process must agree)    */
#define PT_SHM_MAX_RANKS 16384u                /* sanity bound (ptlrun -n); the
                                                 * byte cap below is the real one */
#define PT_SHM_MAX_POOL  65535u                /* buffers per pool: u16 indexes */
#define PT_SHM_MAX_GUESTS 256u                  /* PTL_JOB_GUESTS ceiling        */
#define PT_SHM_MAX_PROCS (PT_SHM_MAX_RANKS + PT_SHM_MAX_GUESTS)
#define PT_SHM_MAX_BYTES (1ULL << 44)           /* refuse absurd regions (16 TiB
                                                 * of address space)           */

/* Rank attach states (pt_shm_rank.state). */
enum { PT_SHM_R_NONE = 0, PT_SHM_R_ATTACHED = 1, PT_SHM_R_DETACHED = 2,
       PT_SHM_R_CLAIMING = 3 /* guests: claimed, not yet attached */ };

/* How a rank reaches its peers (pt_shm_rank.wire): the region's queues, or
 * libfabric with the region only for identity, liveness and names. */
enum { PT_SHM_WIRE_NONE = 0, PT_SHM_WIRE_SHM = 1, PT_SHM_WIRE_OFI = 2 };
#define PT_SHM_PROV_BYTES 12u /* pt_shm_rank.prov: a provider name's first 11 */

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
    uint32_t qslots;           /* D: entries per descriptor ring (power of two) */
    uint32_t jid;              /* Portals job id                                */
    uint32_t flags;            /* PT_SHM_F_*                                    */
    uint64_t off_ranks, off_procs, proc_bytes;  /* copy of pt_shm_layout()      */
    uint64_t pool_off, ring_bytes;
    uint64_t owner_probe_addr; /* address, in the owner's address space, of a
                                * word holding PT_SHM_MAGIC: the CMA probe target
                                * when no peer has attached yet                 */
    uint64_t off_trace, trace_bytes; /* copy of pt_shm_layout(): trace areas     */
    uint32_t nguests;          /* guest process slots after the ranks           */
    uint32_t pool_req, pool_rsp; /* buffers per process and class               */

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
    /* Departures: the launcher RMW_ADDs 1 when a rank's process ended after
     * its PtlNIFini (a clean exit; a failed one fails the job instead), then
     * rings every sleeping doorbell; a guest RMW_ADDs 1 itself at its
     * PtlNIFini, after DETACHED and ospid 0 (nobody reaps it), then rings
     * every doorbell. Read LD_RELAXED by engines (xport op
     * departures, once per poll, beside job_failed): a change makes them
     * fail what they still wait for from peers that are gone, and fail at
     * once what they initiate to one. Monotonic; publishes no other data. */
    _Atomic uint32_t departed;
    uint8_t pad_[PT_SHM_PAGE - 3 * PT_CACHELINE - 5 * sizeof(uint32_t)];
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
    /* AF (engine/wait.h; docs/waiting.md "D1 without the sender's fence"):
     * 1 while this rank's every bell announcement is followed by a global
     * membarrier (AF-M), so that peers may publish a fast-box message to it
     * without F-SND. The rank: ST_RELAXED(0) before R-ATT, ST_RELEASE(1)
     * after its engine set AF (shm_af_offer), 0 at its orderly close.
     * Senders: LD_RELAXED at each fast-box commit (the bell's line, which
     * D1 loads anyway). A 1 forged by another process into a record can cost
     * that record's rank wake-ups, each bounded by its backstop
     * (PTL_WAKE_BACKSTOP_MS), as a forged `polled` or `rung` can. */
    _Atomic uint32_t af;

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
    /* Rank: fast boxes it has claimed as a sender, in any receiver's block
     * (RMW_ADD after each claim; read at its own re-attach, which then
     * looks for them). Nobody else reads it but dumps.                     */
    _Atomic uint32_t fb_claims;
    /* Rank: 1 while it takes part in CMA (PTL_CMA and its probe): ST_RELAXED
     * before R-ATT (its PTL_CMA), 0 again after a failed probe and at its
     * orderly close. Peers read it LD_RELAXED when they choose a rendezvous
     * with it (shm_peer_caps; 0, never attached: they copy). Ranks whose
     * PTL_CMA differed failed every rendezvous into the one without CMA
     * (an adversarial client: PTL_NI_FAIL, the data never written).       */
    _Atomic uint32_t cma;
    /* Rank: how it reaches its peers (PT_SHM_WIRE_*, its PTL_TRANSPORT),
     * ST_RELAXED before R-ATT; peers read it LD_RELAXED after A-ATT
     * (pt_shm_wire_check). Over ofi, its libfabric provider too: prov_hash
     * (FNV-1a of the name, never 0) and the name's first bytes for the
     * message, written before R-EP and read after A-EP; 0 until then. A job
     * whose ranks differed in either hung without a word (an adversarial
     * client: the region's rings towards a rank that reads only libfabric;
     * names in a format the other provider cannot parse).                  */
    _Atomic uint32_t wire;
    _Atomic uint32_t prov_hash;
    char prov[PT_SHM_PROV_BYTES];
    /* Guests: the slot's claim generation, + 1 at each claim (G-GEN): the
     * claimer ST_RELAXEDs it once its G-CLAIM won, before its ST_RELEASE of
     * CLAIMING (then R-ATT). Peers LD_RELAXED it after LD_ACQUIRE(state)
     * (shm_peer_moved), or after an A-TAIL of the claimer's message or the
     * A-ATT of its id (either follows that release): a value other than the
     * one they last took means the owner they dealt with left and another
     * took the slot, so what they had in flight with it will never be
     * answered. Ranks: 0 for ever. (The line's last word.)                  */
    _Atomic uint32_t gen;

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
_Static_assert(offsetof(struct pt_shm_rank, gen) + sizeof(uint32_t) == 2 * PT_CACHELINE,
               "pt_shm_rank: the identity line is full (gen is its last word)");
_Static_assert(sizeof(struct pt_waitword) <= PT_CACHELINE, "the doorbell fits its line");

/* A descriptor ring (sender s -> receiver r, class c), in r's block. Written
 * by s only: entries, then tail with ST_RELEASE (R-TAIL). Read by r (A-TAIL)
 * and by dumps. D = the header's qslots entries, ring_bytes in all.
 *
 * `want`, the credit mark, and `want_at` (docs/waiting.md, "Stalled on
 * credits"; model model/credit.pml): when a reserve found no room towards r
 * that this ring's progress could give (the ring full, or s's pool of class
 * c empty while this ring holds buffers of it), s stores want_at (relaxed:
 * the head position at which r should ring, at most the tail) and then
 * want = 1 (ST_RELEASE) (C-ARM), FENCE_FULL (C-FENCE), and reloads the head
 * (C-HEAD). r, after a receive pass that moved this ring's head (R-HEAD),
 * FENCE_FULL once (R-FENCE), LD_ACQUIREs want (R-WANT); if set and its head
 * reached want_at, it RMW_XCHGs want to 0 (R-CLR) and rings s's bell if s
 * announced a sleeper (R-RING). s's sleepers read want after announcing
 * (C-RECHECK, any thread of s): cleared means the stall may be over. Any
 * value is harmless to r (a ring more) and to s (a forged set or a forged
 * want_at delays s by at most a backstop period, PTL_WAKE_BACKSTOP_MS, when
 * it retries; a forged clear is a wake-up more). They share the line r
 * reads the first entries from. */
struct pt_shm_ring {
    _Atomic uint32_t tail;     /* messages s ever committed on this ring       */
    _Atomic uint32_t want;     /* the credit mark: s sets, r clears (above)    */
    _Atomic uint32_t want_at;  /* s writes before want; r reads after it       */
    uint32_t pad;
    _Atomic uint16_t ent[];    /* [pos & (D - 1)]: index into s's pool of class c */
};

/* Fast boxes (docs/architecture.md, "Fast boxes"; model model/fbox.pml).
 * Receiver r's block holds PT_SHM_FBOXES boxes; a sender s that has sent r
 * enough messages claims one (both ranks of the job, never guests) and from
 * then on sends r its small messages through it: two lanes (one per class),
 * each a ring of PT_SHM_FBLINES cache lines that r polls directly, so a
 * small message is one line (up to PT_SHM_FB_MAXLN) that r reads where it
 * polls: no tail, no ring entry, no pool buffer to chase. The header rides
 * as the words that differ from the previous message of the lane (a mask
 * and those words), the order stamp beside it. A box is claimed once and
 * never given back (a job has at most PT_SHM_FBOXES hot senders per
 * receiver; the rest use the rings, as every message that does not fit a
 * lane's room or size does).
 *
 * Directory (per receiver): owner[k] = s + 1 once s claimed box k
 * (RMW_CAS 0 -> s + 1, FB-CLAIM, by the claimer), then nclaimed + 1
 * (RMW_ADD, FB-COUNT). r LD_ACQUIREs nclaimed at every peek (one load of a
 * line that changes only at claims); when it moved, r LD_ACQUIREs the
 * owners and lists every box it did not know. A box r has not listed yet
 * holds at most messages r will find at a later peek (their sender's order
 * stamps make r wait for them) or through rx_pending, which reads the
 * directory itself.
 *
 * A lane (sender s -> receiver r, class c), positions counted in lines:
 *   s (commit)                                r (peek / release)
 *   lines pos+1 .. pos+n-1: seq 0, body       v = LD_ACQUIRE(line[pos].seq) FB-SEQ-A
 *   line pos: body, ST_RELEASE(seq, 2pos+1)   v == 2pos+1: read the n lines
 *                                    FB-SEQ   ST_RELEASE(rx_head[c], pos+n) FB-HEAD
 *   then F-SND and D1 as any commit
 *   room: LD_ACQUIRE(rx_head[c]) (FB-HEAD-A) when the lane looks full
 * FB-SEQ pairs with FB-SEQ-A (the body before the sequence word); FB-HEAD
 * with FB-HEAD-A (r has read the lines before s writes them again). A
 * message's first line carries 2pos+1 (odd), every other line 0: a line
 * left from an earlier lap never reads as the message due (the lane is
 * 2^31 positions round). What r trusts: nothing; the line count, the mask
 * and the length are checked against the lane's bounds before use, and a
 * sender that wrote a value no sender writes is never read again.
 * The lane never stalls a sender: no room (or a message too large) and the
 * message goes through the ring, the order stamps (xport.h, "Order") keep
 * the pair's order across the ring and the lane. */
struct pt_shm_fbdir {
    PT_ALIGNED _Atomic uint32_t owner[PT_SHM_FBOXES];  /* FB-CLAIM              */
    PT_ALIGNED _Atomic uint32_t nclaimed;              /* FB-COUNT              */
    uint8_t pad_[PT_CACHELINE - sizeof(uint32_t)];
};

struct pt_shm_fbline {
    _Atomic uint32_t seq;      /* first line of a message: 2pos+1; others 0     */
    uint32_t ord;              /* first line: the order stamp                    */
    uint32_t mask;             /* first line: header words that follow (1..30)   */
    uint16_t len;              /* first line: the message's bytes (header+payload) */
    uint8_t nlines;            /* first line: lines the message takes            */
    uint8_t reset;             /* first line: the receiver's base restarts at 0  */
    uint8_t data[48];          /* the words, then the payload; continuation lines
                                * carry 60 bytes from &ord on                     */
};
#define PT_SHM_FB_HEAD_BYTES 48u  /* stream bytes in a message's first line      */
#define PT_SHM_FB_CONT_BYTES 60u  /* stream bytes in each further line           */

struct pt_shm_fbox {
    /* Line 0: written by the owner (the sender) only, relaxed: its lane
     * tails and messages sent, so that it resumes after a re-attach. */
    PT_ALIGNED _Atomic uint32_t tx_tail[PT_CLS_NR];
    _Atomic uint32_t tx_cnt;
    /* Line 1: written by the receiver only: how far it consumed (FB-HEAD). */
    PT_ALIGNED _Atomic uint32_t rx_head[PT_CLS_NR];
    /* The delta bases: the last header of each lane, as the sender sent it
     * (its lines) and as the receiver rebuilt it (its lines). Private to each
     * side; in the region only so that a re-attach resumes them. */
    PT_ALIGNED uint32_t tx_base[PT_CLS_NR][32];
    PT_ALIGNED uint32_t rx_base[PT_CLS_NR][32];
    PT_ALIGNED struct pt_shm_fbline lane[PT_CLS_NR][PT_SHM_FBLINES];
};
_Static_assert(sizeof(struct pt_shm_fbline) == PT_CACHELINE, "a fast-box line is a cache line");
_Static_assert((PT_SHM_FBLINES & (PT_SHM_FBLINES - 1)) == 0, "lanes are a power of two long");

/* Byte offsets of every part of a region; the ONE place the layout is computed. */
struct pt_shm_layout {
    uint32_t nprocs;       /* process slots: nranks + nguests                    */
    uint32_t qslots;       /* D, entries per ring                                */
    uint32_t slot_size;
    uint32_t pool_n[2];    /* buffers per process: [PT_CLS_REQ], [PT_CLS_RSP]   */
    uint32_t nwords, nsum; /* bitmap words (64 senders each), summary words      */
    uint64_t off_ranks;    /* struct pt_shm_rank[nprocs]                         */
    uint64_t off_procs;    /* nprocs process blocks                              */
    uint64_t proc_bytes;   /* one process block, page rounded                    */
    uint64_t sum_off, words_off, coop_off, flag_off, fbdir_off, fb_off, rings_off,
        pool_off;          /* in a block */
    uint64_t ring_bytes;   /* one descriptor ring, cache-line rounded            */
    uint64_t off_trace;    /* nprocs trace areas (util/trace.h)                  */
    uint64_t trace_bytes;  /* one rank's trace area                              */
    uint64_t total;        /* region size                                        */
};

static inline uint64_t pt_shm_round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* Fill *l for a job. 0, or -EINVAL (bad parameters) / -E2BIG (too large).
 * Inline so that white-box tests and tools compute it as the library does. */
static inline int pt_shm_layout(uint32_t nranks, uint32_t nguests, uint32_t slot_size, uint32_t qslots,
                  uint32_t pool_req, uint32_t pool_rsp, struct pt_shm_layout *l)
{
    if (nranks < 1 || nranks > PT_SHM_MAX_RANKS || nguests > PT_SHM_MAX_GUESTS ||
        slot_size < PT_XPORT_MIN_SLOT ||
        slot_size % PT_CACHELINE || slot_size > (1u << 20) || (qslots & (qslots - 1)) || qslots < 2 ||
        qslots > (1u << 16) || pool_req < 1 || pool_rsp < 1 || pool_req > PT_SHM_MAX_POOL ||
        pool_rsp > PT_SHM_MAX_POOL)
        return -EINVAL;
    uint64_t n = (uint64_t)nranks + nguests;
    l->nprocs = (uint32_t)n;
    l->qslots = qslots;
    l->slot_size = slot_size;
    l->pool_n[PT_CLS_REQ] = pool_req;
    l->pool_n[PT_CLS_RSP] = pool_rsp;
    l->nwords = (uint32_t)((n + 63) / 64);
    l->nsum = (l->nwords + 63) / 64;
    l->ring_bytes = pt_shm_round_up(sizeof(struct pt_shm_ring) + (uint64_t)qslots * sizeof(uint16_t),
                             PT_CACHELINE);
    l->off_ranks = sizeof(struct pt_shm_hdr);
    l->off_procs = pt_shm_round_up(l->off_ranks + n * sizeof(struct pt_shm_rank), PT_SHM_PAGE);
    /* A process block: heads, summary (own line), words, rings, pool. */
    l->sum_off = pt_shm_round_up(n * PT_CLS_NR * sizeof(uint32_t), PT_CACHELINE);
    l->words_off = l->sum_off + pt_shm_round_up(l->nsum * sizeof(uint64_t), PT_CACHELINE);
    l->coop_off = l->words_off + pt_shm_round_up(l->nwords * sizeof(uint64_t), PT_CACHELINE);
    l->flag_off = l->coop_off + pt_shm_round_up(PT_SHM_COOP_WORDS * sizeof(uint32_t), PT_CACHELINE);
    l->fbdir_off = l->flag_off + PT_FLAG_SLOTS * sizeof(struct pt_flagslot);
    l->fb_off = l->fbdir_off + sizeof(struct pt_shm_fbdir);
    l->rings_off = l->fb_off + (uint64_t)PT_SHM_FBOXES * sizeof(struct pt_shm_fbox);
    l->pool_off = pt_shm_round_up(l->rings_off + n * PT_CLS_NR * l->ring_bytes, PT_SHM_PAGE);
    l->proc_bytes = pt_shm_round_up(l->pool_off + ((uint64_t)pool_req + pool_rsp) * slot_size,
                             PT_SHM_PAGE);
    /* n <= 2^15, ring_bytes <= 2^18, pools <= 2^37: nothing overflows 64 bits. */
    l->off_trace = l->off_procs + n * l->proc_bytes;
    l->trace_bytes = PT_TRACE_AREA_BYTES;
    l->total = l->off_trace + n * l->trace_bytes;
    return l->total > PT_SHM_MAX_BYTES ? -E2BIG : 0;
}


static inline char *pt_shm_proc(void *base, const struct pt_shm_layout *l, uint32_t p)
{
    return (char *)base + l->off_procs + (uint64_t)p * l->proc_bytes;
}
/* The ring from sender s to receiver r of class c. */
static inline struct pt_shm_ring *pt_shm_ring(void *base, const struct pt_shm_layout *l,
                                              uint32_t s, uint32_t r, uint32_t c)
{
    return (struct pt_shm_ring *)(pt_shm_proc(base, l, r) + l->rings_off +
                                  ((uint64_t)s * 2 + c) * l->ring_bytes);
}
/* r's consumer head of the ring from s of class c. */
static inline _Atomic uint32_t *pt_shm_rxhead(void *base, const struct pt_shm_layout *l,
                                              uint32_t s, uint32_t r, uint32_t c)
{
    return (_Atomic uint32_t *)(pt_shm_proc(base, l, r)) + (uint64_t)s * 2 + c;
}
static inline _Atomic uint64_t *pt_shm_words(void *base, const struct pt_shm_layout *l,
                                             uint32_t r)
{
    return (_Atomic uint64_t *)(pt_shm_proc(base, l, r) + l->words_off);
}
static inline _Atomic uint64_t *pt_shm_sum(void *base, const struct pt_shm_layout *l,
                                           uint32_t r)
{
    return (_Atomic uint64_t *)(pt_shm_proc(base, l, r) + l->sum_off);
}
/* Receiver p's fast-box directory and box k. */
static inline struct pt_shm_fbdir *pt_shm_fbdir(void *base, const struct pt_shm_layout *l, uint32_t p)
{
    return (struct pt_shm_fbdir *)(pt_shm_proc(base, l, p) + l->fbdir_off);
}
static inline struct pt_shm_fbox *pt_shm_fbox(void *base, const struct pt_shm_layout *l, uint32_t p,
                                              uint32_t k)
{
    return (struct pt_shm_fbox *)(pt_shm_proc(base, l, p) + l->fb_off) + k;
}
/* Process p's claim words (PT_SHM_COOP_WORDS). */
static inline _Atomic uint32_t *pt_shm_coop(void *base, const struct pt_shm_layout *l, uint32_t p)
{
    return (_Atomic uint32_t *)(pt_shm_proc(base, l, p) + l->coop_off);
}
/* Process p's flag slots (PT_FLAG_SLOTS, util/flagline.h). */
static inline struct pt_flagslot *pt_shm_flags(void *base, const struct pt_shm_layout *l, uint32_t p)
{
    return (struct pt_flagslot *)(pt_shm_proc(base, l, p) + l->flag_off);
}
/* Process p's pool of class c: pool_n[c] buffers of slot_size bytes. */
static inline char *pt_shm_pool(void *base, const struct pt_shm_layout *l, uint32_t p,
                                uint32_t c)
{
    return pt_shm_proc(base, l, p) + l->pool_off +
           (c ? (uint64_t)l->pool_n[0] * l->slot_size : 0);
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
