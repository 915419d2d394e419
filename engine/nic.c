/*
 * nic.c - NI engine lifecycle and the poll loop body (pt_nic_poll_once). The
 * NIC thread's loop and everything about sleeping and waking is in wait.c.
 */
#include "nic.h"
#include "nic_sig.h"

#include "config.h"
#include "cpu.h"
#include "log.h"
#include "pages.h"
#include "thread.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>


_Static_assert(PT_XPORT_HDR_BYTES == PT_WIRE_HDR_SIZE, "transport and wire header sizes differ");
_Static_assert(PT_XPORT_RNDV_DESC == (PT_MAX_IOV + 1) * sizeof(struct pt_wire_iov),
               "the transport must size slots for the largest rendezvous descriptor");
_Static_assert(PT_XPORT_GETPUT_MAX == 64, "max_getput_md must fit every slot");
_Static_assert(PT_XPORT_SEQ_OFF == __builtin_offsetof(struct pt_wire_hdr, xseq),
               "the transport's slot sequence word is the wire header's xseq");
_Static_assert(PT_XPORT_ORD_OFF == __builtin_offsetof(struct pt_wire_hdr, xord),
               "the transport's order stamp is the wire header's xord");
#define PT_OFF(f) __builtin_offsetof(struct pt_wire_hdr, f)
_Static_assert(PT_XPORT_OP_OFF == PT_OFF(op) && PT_XPORT_FLAGS_OFF == PT_OFF(flags) &&
                   PT_XPORT_NIOV_OFF == PT_OFF(niov) && PT_XPORT_REQ_OFF == PT_OFF(req) &&
                   PT_XPORT_TGT_LINK_OFF == PT_OFF(tgt_link) &&
                   PT_XPORT_TGT_MD_OFF == PT_OFF(tgt_md) && PT_XPORT_MLENGTH_OFF == PT_OFF(mlength) &&
                   PT_XPORT_TGT_OFFSET_OFF == PT_OFF(tgt_offset),
               "the wire fields the transport reads (xport.h) moved");
#undef PT_OFF
_Static_assert(PT_XPORT_W_PUT == PT_W_PUT && PT_XPORT_W_REPLY == PT_W_REPLY &&
                   PT_XPORT_W_FIN == PT_W_FIN && PT_XPORT_W_RFIN == PT_W_RFIN &&
                   PT_XPORT_F_RNDV == PT_WF_RNDV && PT_XPORT_IOV_MAX == PT_MAX_IOV + 1,
               "the wire codes the transport reads (xport.h) changed");

/* ---- the loop body ------------------------------------------------------- */

/* The stall counter of a transport without the credit wait (xport.h): never
 * moves, so no command is ever recorded as stalled. */
static const uint32_t g_no_stalls = 0;

/* A ring's bookkeeping after a poll took what it could from it: the credit
 * wait's record (stall: 1 + the consumer index of a head stalled with a mark
 * armed, or 0) and the room wait. */
static void ring_after(struct pt_nic *nic, struct pt_cmdq *q, uint64_t stall)
{
    if (PT_UNLIKELY(stall != LD_RELAXED(&q->stall_at)))
        ST_RELAXED(&q->stall_at, stall);
    /* RW-DUE: its producer waits for room (wait.h RW); a hint here (no
     * fence), made certain by the sleepers' rechecks (local_work) */
    if (PT_UNLIKELY(LD_RELAXED(&q->room.want)))
        pt_wait_room_due(&q->room, pt_cmdq_half_free(q));
    if (PT_UNLIKELY(stall))
        nic->cstall = true; /* every pass that armed: stall_clear next */
}

/* The head of ring q returned PT_E_AGAIN after the transport armed a credit
 * mark (the stall counter moved): counted, and its record for ring_after
 * (stall_at: 1 + its consumer index). */
static inline uint64_t stall_mark(const struct pt_cmdq *q)
{
    return (uint64_t)LD_RELAXED(&q->ring.tail) + 1; /* never 0, also at tail 2^32 - 1 */
}

static uint64_t stall_record(struct pt_nic *nic, struct pt_cmdq *q)
{
    ST_RELAXED(&nic->cstall_fails, LD_RELAXED(&nic->cstall_fails) + 1);
    return stall_mark(q);
}

/* Batched doorbells (nic.h tx_batch; docs/waiting.md, "D1 after a batch"):
 * the commits of this pass publish, and drain_cmds rings once at its end.
 * Nothing between the two waits for a peer: pt_cmd_dispatch answers
 * PT_E_AGAIN where it would. */
static inline void tx_hold(struct pt_nic *nic)
{
    if (!nic->tx_held) {
        nic->tx_held = true;
        nic->xo->tx_hold(nic->x);
    }
}

static inline void tx_flush(struct pt_nic *nic, int work)
{
    if (nic->tx_held) {
        if (g_pt_timing_on && work) { /* drain_merged holds before it knows */
            nic->tm.held_passes++;
            nic->tm.held_cmds += (uint64_t)work;
        }
        nic->tx_held = false;
        nic->xo->tx_flush(nic->x, false);
    }
}

/* One ring (one posting thread): its FIFO is the order. A stamped command
 * means more rings than the count we read showed (its poster saw them):
 * *merge is set and the rest is drain_merged's. */
static int drain_one(struct pt_nic *nic, struct pt_cmdq *q, bool *merge)
{
    int work = 0;
    uint64_t stall = 0;
    for (int b = 0; b < PT_CMD_BATCH; b++) {
        struct pt_cmd *c = spsc_peek(&q->ring, q->slots);
        if (!c)
            break;
        if (PT_UNLIKELY(c->flags & PT_CF_SEQ)) {
            *merge = true;
            break;
        }
        /* Two or more waiting (the head spsc_peek read): this pass rings
         * each receiver once, after its commands (drain_cmds). */
        if (!b && nic->tx_batch && q->ring.cons_cached_head - LD_RELAXED(&q->ring.tail) >= 2)
            tx_hold(nic);
        uint32_t arms = *nic->stall_ctr;
        if (pt_cmd_run(nic, c) == PT_E_AGAIN) {
            /* head-of-line: retried next poll, order kept. Stalled on
             * credits with a mark armed (the counter moved): recorded for
             * has_work (the credit wait, docs/waiting.md). */
            if (PT_UNLIKELY(*nic->stall_ctr != arms))
                stall = stall_record(nic, q);
            break;
        }
        PT_TRACE(nic, PT_TR_CMD, PT_TV_CMD(c->op, q->index));
        spsc_release(&q->ring);
        work++;
        /* A message to ourselves is received before the next command runs
         * (this poll's drain_rx): a put to self, then PtlMDBindCT on its
         * target, taken in one batch, counted the put into the new counter
         * (scenario_ct_offload unbind_stops_counting under TSan, once). */
        if (PT_UNLIKELY(nic->rx_self))
            break;
    }
    ring_after(nic, q, stall);
    return work;
}

/* Does command a come before b in the NI's order? Unstamped commands were
 * posted while there was one ring (pt_nic_submit): before any stamped one
 * that must follow them. */
static inline bool cmd_before(const struct pt_cmd *a, const struct pt_cmd *b)
{
    if (!(a->flags & PT_CF_SEQ) || !(b->flags & PT_CF_SEQ))
        return !(a->flags & PT_CF_SEQ) && (b->flags & PT_CF_SEQ);
    return (int32_t)(a->seq - b->seq) < 0;
}

/* A command that moves data to a target now, whose order with the others to
 * that target counts (an armed triggered one is ordered when it fires). */
static inline bool cmd_to_target(const struct pt_cmd *c)
{
    return (c->op == PT_CMD_PUT || c->op == PT_CMD_GET || c->op == PT_CMD_GETPUT ||
            c->op == PT_CMD_ATOMIC) && !(c->flags & PT_CF_TRIG);
}

#define PT_ORDER_BLOCKED 8 /* targets whose oldest command stalled, per pass */

/* The rings the engine serves, as one poll sees them (drain_merged). */
struct ring_set {
    uint32_t n;
    struct pt_cmdq *q[PT_MAX_CMDQ];
    uint64_t stall[PT_MAX_CMDQ]; /* for ring_after                          */
    bool held[PT_MAX_CMDQ];      /* its head stalled, or waits behind an older
                                  * command to its target: not for this poll */
};

/* Rings registered since the set was read, and rings counted but not yet
 * published when it was (their commands may be older than a head the set
 * already showed: see oldest_head). */
static void ring_set_grow(struct pt_nic *nic, struct ring_set *rs)
{
    uint32_t n = pt_cmdq_count(nic);
    for (uint32_t i = 0; i < n; i++) {
        if (i < rs->n && rs->q[i])
            continue;
        rs->q[i] = pt_cmdq_at(nic, i);
        if (i >= rs->n) {
            rs->stall[i] = 0;
            rs->held[i] = false;
        }
    }
    if (n > rs->n)
        rs->n = n;
}

/* The oldest head of the rings not held, or NULL. The look at every ring
 * (and at the rings registered meanwhile) is repeated until the same head is
 * the oldest twice: the look that found a head (the acquire on its ring's
 * head, A1, or an earlier one) makes every command posted before it visible
 * to the loads that follow, but not to the looks made before it. Thread A's
 * command, posted before thread B's, may have looked absent in A's ring,
 * read first, while B's was found, and a ring registered after the poll
 * read the count holds commands older than later ones of the others (a get
 * or put from B then started before A's: `mp_xthread_order`, in 1 pair of
 * 2,000, and in the first pair of 4 runs in 10). The next look finds A's. */
static struct pt_cmd *oldest_head(struct pt_nic *nic, struct ring_set *rs, uint32_t *at_p)
{
    struct pt_cmd *c = NULL;
    for (;;) {
        struct pt_cmd *best = NULL;
        uint32_t at = 0;
        for (uint32_t i = 0; i < rs->n; i++) {
            if (rs->held[i] || !rs->q[i])
                continue;
            struct pt_cmd *h = spsc_peek(&rs->q[i]->ring, rs->q[i]->slots);
            if (h && (!best || cmd_before(h, best))) {
                best = h;
                at = i;
            }
        }
        if (best == c) /* a head stays put until the engine takes it */
            return c;
        c = best;
        *at_p = at;
        ring_set_grow(nic, rs);
    }
}

/* Several rings: their heads are taken oldest first (cmd_seq, nic.h), so two
 * operations that threads initiated one after the other start at the target
 * in that order (§6.15); with the rings served in turn, a put that thread B
 * posted after thread A's PtlPut returned reached the target first in up to
 * half of 20,000 pairs (an adversarial client). A head that stalls (AGAIN)
 * holds its ring for this poll, and the heads of other rings that go to the
 * same target wait behind it (a stall with a credit mark armed: they wait on
 * that mark too, stall_at), while commands to other targets go on. */
static int drain_merged(struct pt_nic *nic)
{
    struct ring_set rs;
    rs.n = 0;
    ring_set_grow(nic, &rs);
    if (nic->tx_batch)
        tx_hold(nic); /* several rings: drain_cmds rings once at its end */
    ptl_process_id_t blocked[PT_ORDER_BLOCKED];
    uint64_t blocked_stall[PT_ORDER_BLOCKED];
    uint32_t nblocked = 0;
    int work = 0;
    for (uint32_t budget = PT_CMD_BATCH * rs.n; budget; budget--) {
        uint32_t at = 0;
        struct pt_cmd *c = oldest_head(nic, &rs, &at);
        if (!c)
            break;
        struct pt_cmdq *q = rs.q[at];
        if (cmd_to_target(c)) {
            uint32_t b = 0;
            while (b < nblocked && (blocked[b].nid != c->u.mv.target.nid ||
                                    blocked[b].pid != c->u.mv.target.pid))
                b++;
            if (b < nblocked) { /* behind an older command to the same target */
                rs.held[at] = true;
                rs.stall[at] = blocked_stall[b] ? stall_mark(q) : 0;
                continue;
            }
        }
        uint32_t arms = *nic->stall_ctr;
        if (pt_cmd_run(nic, c) == PT_E_AGAIN) {
            rs.held[at] = true;
            if (PT_UNLIKELY(*nic->stall_ctr != arms))
                rs.stall[at] = stall_record(nic, q);
            if (cmd_to_target(c)) {
                if (nblocked == PT_ORDER_BLOCKED)
                    break; /* too many stalled targets: the rest next poll */
                blocked[nblocked] = c->u.mv.target;
                blocked_stall[nblocked++] = rs.stall[at];
            }
            continue;
        }
        PT_TRACE(nic, PT_TR_CMD, PT_TV_CMD(c->op, at));
        spsc_release(&q->ring);
        work++;
        if (PT_UNLIKELY(nic->rx_self))
            break; /* received before the next command runs (drain_one) */
    }
    for (uint32_t i = 0; i < rs.n; i++)
        if (rs.q[i])
            ring_after(nic, rs.q[i], rs.stall[i]);
    return work;
}

/* C-SKIP (model/credit.pml; docs/waiting.md, "Stalled on credits").
 * A pass that need not retry the single ring's head: the command stalled
 * on credits last pass, and every mark armed for it is still set, so no
 * receiver has yet taken half of what we had outstanding there (it clears
 * the mark when it does, C-CLEAR in model/credit.pml) -- the condition on
 * which a sleeper may sleep (C-RECHECK, pt_nic_has_work). A retry would
 * resolve the command again (MD, target, protocol) and reload and refence
 * the ring head to find no room or a few slots: in a 255-sender incast on 2
 * cores a host-mode sender ran pt_cmd_put 4.4 times per message sent. The
 * send waits for half the ring instead, as a sleeping sender does. Bounded:
 * at most PT_STALL_SKIPS passes in a row (a mark that stays set for another
 * reason costs that many polls, not a hang), and never once the job failed
 * or a peer left (the command must then fail, peer_gone). */
#define PT_STALL_SKIPS 64

static bool stall_holds(struct pt_nic *nic, struct pt_cmdq *q)
{
    uint64_t st = LD_RELAXED(&q->stall_at);
    if (!st || st != stall_mark(q) || nic->stall_skips >= PT_STALL_SKIPS ||
        LD_RELAXED(&nic->failed) || LD_RELAXED(&nic->departed_seen) ||
        !nic->xo->stall_armed(nic->x)) {
        nic->stall_skips = 0;
        return false;
    }
    nic->stall_skips++;
    ring_after(nic, q, st); /* the room wait as after a pass that took nothing */
    return true;
}

static int drain_cmds(struct pt_nic *nic)
{
    uint32_t n = pt_cmdq_count(nic);
    if (PT_UNLIKELY(nic->cstall)) { /* the stalls are retried: a new set of marks */
        struct pt_cmdq *q1 = n == 1 ? pt_cmdq_at(nic, 0) : NULL;
        if (q1 && stall_holds(nic, q1))
            return 0;
        nic->cstall = false;
        nic->xo->stall_clear(nic->x);
    }
    if (!n)
        return 0;
    int work;
    if (PT_LIKELY(n == 1)) {
        struct pt_cmdq *q = pt_cmdq_at(nic, 0);
        bool merge = false;
        work = q ? drain_one(nic, q, &merge) : 0;
        if (merge)
            work += drain_merged(nic);
    } else {
        work = drain_merged(nic);
    }
    tx_flush(nic, work);
    return work;
}

/* Does a command queued in any ring, not yet taken, move data from or into
 * the MD with handle h? An unlink or update must not pull an MD from under
 * a put that PtlPut already accepted: each thread has its own ring, and
 * thread B's PtlMDUnlink may run while thread A's put, whose call returned
 * before B's began, still waits in A's ring (stalled on credits; when the
 * rings were served in turn, also without a stall): the put then found no MD
 * and was dropped without an event. Such an MD is in use (§6.12). Token holder only (the consumer indexes are ours); a head read
 * by acquire (A1) shows every command committed before the caller's command
 * was (its producer's R1, then whatever ordered the two calls). Not hot:
 * unlinks and updates only, and a ring holds a few commands at most. */
bool pt_cmdq_names_md(struct pt_nic *nic, uint32_t h)
{
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        uint32_t end = LD_ACQUIRE(&q->ring.head); /* A1 pairs with R1 */
        for (uint32_t k = LD_RELAXED(&q->ring.tail); k != end; k++) {
            const struct pt_cmd *c = spsc_slot(&q->ring, q->slots, k);
            switch (c->op) {
            case PT_CMD_PUT:
            case PT_CMD_GET:
            case PT_CMD_ATOMIC:
                if (c->h == h)
                    return true;
                break;
            case PT_CMD_GETPUT:
                if (c->h == h || c->u.mv.md2 == h)
                    return true;
                break;
            default:
                break;
            }
        }
    }
    return false;
}

int pt_rx_dispatch(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer, enum pt_cls cls)
{
    int pt_req_handle(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_ack(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_fin(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_nack(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_reply(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_rfin(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_push(struct pt_nic *, struct pt_wire_hdr *, uint32_t);
    int pt_rsp_pdone(struct pt_nic *, struct pt_wire_hdr *, uint32_t);

    /* Every message, whatever its class, is bounded by its slot before any
     * handler reads it: inline payload and rendezvous iovecs must fit. */
    if (h->inline_len > nic->slot_size - PT_WIRE_HDR_SIZE ||
        ((h->flags & PT_WF_RNDV) &&
         (h->niov > PT_MAX_IOV + 1 ||
          (size_t)h->niov * sizeof(struct pt_wire_iov) > nic->slot_size - PT_WIRE_HDR_SIZE))) {
        nic->drops_bad_header++;
        nic->sr[PTL_SR_DROP_COUNT]++;
        return PT_OK;
    }
    if (h->op == PT_W_DATA)
        return pt_rx_data(nic, h, peer, cls);
    if (cls == PT_CLS_REQ) {
        if (h->op == PT_W_PUT || h->op == PT_W_GET || h->op == PT_W_GETPUT)
            return pt_req_handle(nic, h, peer);
    } else {
        switch (h->op) {
        case PT_W_ACK: return pt_rsp_ack(nic, h, peer);
        case PT_W_FIN: return pt_rsp_fin(nic, h, peer);
        case PT_W_NACK: return pt_rsp_nack(nic, h, peer);
        case PT_W_REPLY: return pt_rsp_reply(nic, h, peer);
        case PT_W_RFIN: return pt_rsp_rfin(nic, h, peer);
        case PT_W_PUSH: return pt_rsp_push(nic, h, peer);
        case PT_W_PDONE: return pt_rsp_pdone(nic, h, peer);
        default: break;
        }
    }
    nic->drops_bad_header++; /* unknown op or wrong class: dropped, counted */
    nic->sr[PTL_SR_DROP_COUNT]++;
    return PT_OK;
}

void pt_nic_park_note(struct pt_nic *nic, uint32_t peer, uint64_t until)
{
    uint32_t n = nic->park_pass_n++;
    if (n < PT_PARK_MAX)
        ST_RELAXED(&nic->park_peer[n], peer);
    if (until < nic->park_pass_until)
        nic->park_pass_until = until;
}

/* End of a receive pass: the requests it left parked for a match, and
 * match_gen now (a command run after this pass makes them work again). One
 * relaxed load when nothing was or is parked. */
static void park_publish(struct pt_nic *nic)
{
    uint32_t n = nic->park_pass_n;
    if (PT_LIKELY(!n) && PT_LIKELY(!LD_RELAXED(&nic->park_n)))
        return;
    ST_RELAXED(&nic->park_until, nic->park_pass_until);
    ST_RELAXED(&nic->park_gen, LD_RELAXED(&nic->match_gen));
    ST_RELAXED(&nic->park_n, n);
}

/* A message that cannot be handled yet (AGAIN: a response slot to its
 * sender is full) stays queued, and its sender is held for the rest of this
 * poll: nothing later from that peer overtakes it (order per peer), and
 * every other peer is still served (one peer that never drains our answers
 * must not stop us serving the rest). */
static int drain_rx(struct pt_nic *nic)
{
    int work = 0;
    bool held = false;
    nic->park_pass_n = 0;
    nic->park_pass_until = UINT64_MAX;
    for (int b = 0; b < PT_RX_BATCH; b++) {
        uint32_t peer;
        enum pt_cls cls;
        PT_TM_BEGIN(t);
        struct pt_wire_hdr *h = nic->xo->peek(nic->x, &peer, &cls);
        if (!h)
            break;
        if (b == 0)
            pt_wait_rx_hint(&nic->w); /* a polling waiter's D4 line, while we work */
        PT_TM_STAGE(&nic->tm, t, PT_ST_DEQUEUE);
        PT_TRACE(nic, PT_TR_RX, PT_TV_MSG(peer, cls, h->op));
        if (PT_UNLIKELY(peer >= nic->xi.nranks))
            pt_nic_guest_moved(nic, peer); /* a new owner's, maybe: the last's fail first */
        if (pt_rx_dispatch(nic, h, peer, cls) == PT_E_AGAIN) {
            /* Cannot answer yet: leave it queued. A request lets that peer's
             * later responses pass it (xport.h, "Order"); for the rest of
             * this poll the peer is held, and the other peers are served. */
            PT_TRACE(nic, PT_TR_RX_DEFER, PT_TV_MSG(peer, cls, h->op));
            nic->xo->defer(nic->x, peer, cls);
            held = true;
            continue;
        }
        nic->xo->release(nic->x, peer, cls);
        nic->tm.msgs++;
        work++;
    }
    if (held)
        nic->xo->unhold_all(nic->x);
    park_publish(nic);
    if (work && nic->rx_done)
        nic->rx_released = true; /* pt_nic_poll_once rings senders waiting for room */
    return work;
}

static void fail_dead_peers(struct pt_nic *nic);

/* Transfers with dead peers that are still in flight (token holder): their
 * transport holds a step (an ofi pull's posted reads end only when the
 * provider fails them or pull_drain gives them up), or the op has not been
 * stepped since the death (its next step fails it). Their failed END events come from
 * pt_ops_progress in a later pass; until then the NI settles (settle_until). */
static bool dead_ops(struct pt_nic *nic)
{
    for (struct pt_op *op = nic->ops; op; op = op->next)
        if (!nic->xo->peer_alive(nic->x, op->rsp_peer))
            return true;
    return false;
}

/* What dead or departed peers sent before they went is taken first
 * (bounded): an answer that arrived beats a failure. Then everything still
 * in flight with them fails (fail_dead_peers). */
static void take_arrived_then_fail(struct pt_nic *nic)
{
    for (int i = 0; i < PT_WAIT_FAIL_POLLS && drain_rx(nic); i++)
        ;
    fail_dead_peers(nic);
}

/* ---- fork() --------------------------------------------------------------
 *
 * A child of fork() that re-initialises (docs/architecture.md, "Processes
 * that join a job") runs malloc and starts threads, so at the instant of the
 * fork no thread of ours may hold a lock the child will need. Our locks are
 * not the problem (the child drops the parent's NI unread), the allocator's
 * are: glibc's malloc takes its own locks around fork(), but ASan's runtime
 * before LLVM 18 (gcc 12's libasan, the ASan stage's) does not, and a NIC
 * thread inside malloc or free at the fork (its start-up: ASan's thread
 * start frees, and a thread's first free allocates an 8 KiB quarantine
 * batch under the size class's region lock; later: an MD's iovec freed at
 * unlink, /proc reads) leaves the child that lock held for ever: its first
 * new thread blocks in its own start-up (mp_join_limit_offload; docs/
 * architecture.md, "fork() with the library's threads running"). So the
 * forking thread (api/fork.c, a pthread_atfork prepare handler) parks the
 * NIC thread at a safe point, where it holds at most the engine token (the
 * parent's own, which the child never touches) and is not inside the
 * allocator: the top of a poll (RUN) or of the work check (S2, announced,
 * token free), which an awake thread reaches within a poll and a sleeping
 * one after the forker's ring. The NIC thread stays parked until the
 * parent's handler lets it go; the fork happens in between. */
#define PT_FORK_NAP_NS 1000000 /* the forker's wait between two rings         */
#define PT_FORK_PARK_NS 100000000 /* the parked thread's recheck of fork_park */

static void fork_signal(struct pt_nic *nic)
{
    FENCE_FULL(); /* the caller's store before the wake's seq bump */
    pt_wake_all(&nic->fork_ww);
}

/* fork_park holds the generation of the fork being prepared (0: none) and
 * fork_parked the generation the NIC thread last parked for: a thread that
 * has just been let go (and not yet left) is never taken for parked by the
 * next fork's prepare, and parks again for it. */
static __attribute__((noinline, cold)) void fork_park(struct pt_nic *nic)
{
    struct pt_waitword *ww = &nic->fork_ww;
    uint32_t g;
    while ((g = LD_ACQUIRE(&nic->fork_park)) != 0) {
        if (LD_RELAXED(&nic->fork_parked) != g) {
            ST_RELEASE(&nic->fork_parked, g);
            fork_signal(nic);
        }
        uint32_t seq = LD_ACQUIRE(&ww->seq);
        RMW_ADD(&ww->sleepers, 1); /* full fence: seq read before the recheck */
        if (LD_ACQUIRE(&nic->fork_park) == g)
            pt_futex_wait(ww, seq, PT_FORK_PARK_NS);
        RMW_SUB(&ww->sleepers, 1);
    }
}

/* A safe point: the NIC thread parks here while a fork is being prepared. */
static inline void fork_point(struct pt_nic *nic)
{
    if (PT_UNLIKELY(LD_RELAXED(&nic->fork_park)) && pt_wait_on_nic_thread())
        fork_park(nic);
}

bool pt_nic_fork_prepare(struct pt_nic *nic, uint64_t deadline_ns)
{
    if (!nic->has_thread || pt_wait_on_nic_thread()) /* the NIC thread forks: it is here */
        return true;
    struct pt_waitword *ww = &nic->fork_ww;
    uint32_t g = ++nic->fork_gen ? nic->fork_gen : ++nic->fork_gen;
    ST_RELAXED(&nic->fork_park, g);
    FENCE_FULL(); /* the request before the rings below */
    while (LD_ACQUIRE(&nic->fork_parked) != g) {
        if (pt_now_ns() >= deadline_ns)
            return false;
        uint32_t seq = LD_ACQUIRE(&ww->seq);
        RMW_ADD(&ww->sleepers, 1);
        /* Asleep in S3, it wakes and comes to S1 or S2. Rung again at every
         * nap: S2 skips the work check (and so the safe point) while an API
         * thread holds the engine, and sleeps again. */
        pt_wait_ring(&nic->w, nic->w.bell);
        if (LD_ACQUIRE(&nic->fork_parked) != g)
            pt_futex_wait(ww, seq, PT_FORK_NAP_NS);
        RMW_SUB(&ww->sleepers, 1);
    }
    return true;
}

void pt_nic_fork_resume(struct pt_nic *nic)
{
    if (!nic->has_thread)
        return;
    ST_RELEASE(&nic->fork_park, 0);
    fork_signal(nic);
}

static int poll_work(struct pt_nic *nic, bool rx);

static int poll_once(struct pt_nic *nic, bool rx)
{
    if (PT_LIKELY(!g_pt_timing_on))
        return poll_work(nic, rx);
    uint64_t t = pt_tsc();
    int work = poll_work(nic, rx);
    nic->tm.polls++;
    if (work) {
        nic->tm.busy_polls++;
        nic->tm.busy_work += (uint64_t)work;
        nic->tm.busy_ticks += pt_tsc() - t;
    }
    return work;
}

static int poll_work(struct pt_nic *nic, bool rx)
{
    fork_point(nic);
    uint32_t jf = nic->xo->job_failed(nic->x); /* one relaxed load of the region */
    if (PT_UNLIKELY(jf)) {
        if (!LD_RELAXED(&nic->failed))
            pt_nic_fail(nic, jf);
        else if (nic->ireq_live | nic->rfw_live | nic->cin_live)
            fail_dead_peers(nic); /* a peer that died after the first */
    }
    /* A peer left the job in order and ended: what we still wait for from
     * it will never come (a get to a rank that had finished waited for
     * ever). The count lies beside job_failed (no extra line). */
    uint32_t dp = nic->xo->departures(nic->x);
    if (PT_UNLIKELY(dp != LD_RELAXED(&nic->departed_seen))) {
        ST_RELAXED(&nic->departed_seen, dp);
        /* What it sent before it left is taken first (bounded), as
         * pt_nic_fail does: an answer that arrived beats a failure (an
         * audit: a server's reply sent just before its PtlNIFini was
         * dropped, and the get ended PTL_NI_PEER_DIED: mp_finireply). */
        take_arrived_then_fail(nic);
    }
    uint64_t su = LD_RELAXED(&nic->settle_until);
    if (PT_UNLIKELY(su) && (pt_now_ns() >= su || !dead_ops(nic)))
        ST_RELEASE(&nic->settle_until, 0); /* after the failed ENDs (pt_ops_progress) */
    int work = drain_cmds(nic);     /* what we send now, we may receive below */
    if (rx || nic->rx_self) {
        nic->rx_self = false;
        work += drain_rx(nic);
    }
    if (nic->trig_rhead)
        work += pt_trig_run(nic);   /* triggered operations that fired (ct.c) */
    if (nic->ops)
        work += pt_ops_progress(nic);
    if (PT_UNLIKELY(nic->eq_waiting | nic->eq_retired))
        pt_eq_reclaim(nic, false); /* freed EQs' rings, once nobody can read them */
    bool fenced = pt_ev_wake(nic); /* D6, once per poll, not per event */
    if (nic->rx_released) { /* after every R-HEAD of this poll (drain_rx) */
        nic->rx_released = false;
        nic->rx_done(nic->x, fenced); /* R-FENCE (D6's if it ran) .. R-RING */
    }
    return work;
}

int pt_nic_poll_once(struct pt_nic *nic)
{
    return poll_once(nic, true);
}

/* The receive side's turn in a poll after a command (nic.h). */
static inline bool send_rx_turn(struct pt_nic *nic)
{
    return nic->xo->tx_needs_peek || ++nic->send_polls % PT_NIC_SEND_RX_EVERY == 0;
}

int pt_nic_poll_send(struct pt_nic *nic)
{
    return poll_once(nic, send_rx_turn(nic));
}

int pt_nic_poll_after(struct pt_nic *nic)
{
    bool rx = send_rx_turn(nic);
    if (rx || nic->rx_self || nic->trig_rhead || nic->ops || nic->rx_released ||
        PT_UNLIKELY(nic->eq_waiting | nic->eq_retired))
        return poll_once(nic, rx);
    pt_ev_wake(nic); /* D6, as poll_once */
    return 0;
}

/* Everything in flight with a dead peer ends now, failed with
 * PTL_NI_PEER_DIED: the streams it was sending us, the requests we sent it
 * that wait for an answer, and our rendezvous replies it has not pulled
 * (their GET_ENDs, owed to an EQ: pt_rfw_fail_peer). Only after the job
 * failed (then every poll looks again while any of these is outstanding
 * with anyone: a peer that died after the first; peer_alive asks the kernel
 * at most every 10 ms per peer), or when the launcher counted a departure
 * (a peer that left in order and ended: once per change of the count,
 * poll_once). Until the sixtieth session the later looks came only while
 * requests of ours were outstanding, and at the streams not at all: a peer
 * that died after the job had failed (another rank's death) left its
 * replies' GET_ENDs and its stream's PUT_END owed for ever, the MDs busy
 * (mp_rfin_died second). */
static void fail_peer(struct pt_nic *nic, uint32_t p);

/* Process slot p changed hands since the engine last asked (xport.h,
 * peer_moved: true once per change). */
static bool slot_moved(struct pt_nic *nic, uint32_t p)
{
    return nic->xo->peer_moved && nic->xo->peer_moved(nic->x, p);
}

static void fail_dead_peers(struct pt_nic *nic)
{
    for (uint32_t p = 0; p < nic->xi.nprocs; p++) {
        bool streams = nic->cin[PT_CLS_REQ][p].active || nic->cin[PT_CLS_RSP][p].active;
        if (!streams && !nic->ireq_head[p] && !nic->rfw_head[p])
            continue;
        /* A guest slot claimed again before we looked is alive, but not
         * the owner we wait for: pt_nic_guest_moved fails the last owner's. */
        if (nic->xo->peer_alive(nic->x, p)) {
            if (p >= nic->xi.nranks)
                (void)pt_nic_guest_moved(nic, p);
            continue;
        }
        fail_peer(nic, p);
    }
}

/* Everything in flight with peer p fails (PTL_NI_PEER_DIED): the streams it
 * was sending us, our copy-mode streams to it, our requests that wait for
 * its answers and our rendezvous replies that wait for its RFIN. */
static void fail_peer(struct pt_nic *nic, uint32_t p)
{
    for (int c = 0; c < PT_CLS_NR; c++) {
        struct pt_copyin *st = &nic->cin[c][p];
        if (!st->active)
            continue;
        st->active = 0;
        nic->cin_live--;
        PT_TRACE(nic, PT_TR_XFER_FAIL, PT_TV_XFER(p, st->got));
        if (st->md) {
            st->ev.ni_fail_type = PTL_NI_PEER_DIED;
            pt_ev_post_owed(nic, st->md,
                            st->is_reply ? PTL_EVENT_REPLY_END : PTL_EVENT_PUT_END, &st->ev,
                            st->owes_end);
            st->md->pending--;
            pt_md_check_unlink(nic, st->md, &st->ev);
        }
    }
    /* Copy-mode streams to it end first (failed): their END comes
     * before the ACK its record fails with, as for a put initiated to a
     * peer already known gone. Else a host-mode put started before the
     * engine saw the departure posted ACK (failed), then SEND_END (ok)
     * once the rest had gone into the rings nobody reads (an
     * adversarial client, fifty-ninth session; mp_departed putorder). */
    for (struct pt_op *op = nic->ops, *next; op; op = next) {
        next = op->next;
        if (op->kind == PT_OP_COPY_SEND && op->rsp_peer == p) {
            op->failed = 1;
            op->left = 0;
            pt_copy_send_step(nic, op); /* its END, failed; the op freed */
        }
    }
    pt_ireq_fail_peer(nic, p);
    pt_rfw_fail_peer(nic, p);
}

/* A guest slot that changed hands (xport.h, peer_moved; shm_region.h, G-GEN):
 * its last owner left in order and a new one claimed the slot before our
 * departure sweep looked, so the slot looks alive, while nothing we had in
 * flight with the last owner will ever be answered (the new owner drops
 * what waited in the slot's queues). It all fails now, before anything of
 * the new owner's: asked by the sweep, before a command to the slot's id
 * (initiator.c, cmd_rank), before a message from the slot is taken
 * (drain_rx) and before each step of a transfer with it (pt_ops_progress),
 * so whatever the engine holds with the slot when it sees the change is the
 * last owner's. That includes our rendezvous pulls and pushes and copy-mode
 * streams with it (pt_ops_fail_moved, fail_peer): their next step would
 * name the slot, that is its new owner (before, a pull under way took the
 * new owner's bytes and ended PTL_NI_OK, a push wrote into its memory, a
 * stream went on into its queue: mp_join rndvmove); shm's CMA also refuses
 * a slot whose owner changed since (shm.c, cma_owner_same). An answer the
 * last owner sent before it left that we take only after the change finds
 * its request failed (stale): the ring does not say whose a message is, and
 * a failure is what is documented.
 * Before, a get outstanding to a guest that left while we were stopped or
 * asleep, its slot taken again at once, waited for ever (mp_join reclaim).
 * Cold: guests only, a change only at a claim. Out of line and cold on
 * purpose: cmd_rank (initiator.c, inlined into every put) calls it on its
 * guest branch, and with link-time optimisation inlining it (fail_peer and
 * all) there the 8 B put ping-pong's p50 rose 10-25 ns in host mode
 * (sixtieth session, bench/RESULTS.md). */
__attribute__((noinline, cold)) bool pt_nic_guest_moved(struct pt_nic *nic, uint32_t p)
{
    if (!slot_moved(nic, p))
        return false;
    pt_ops_fail_moved(nic, p); /* our pulls and pushes with the last owner: no
                                * step of theirs may reach the new one */
    fail_peer(nic, p);
    return true;
}

void pt_nic_fail(struct pt_nic *nic, uint32_t code)
{
    PT_TRACE(nic, PT_TR_JOB_FAIL, code);
    pt_log(PT_LOG_WARN, "NI failed: %s; in-flight operations with dead peers complete with "
                        "that failure",
           code == PTL_NI_PEER_DIED ? "PTL_NI_PEER_DIED (a rank of the job died)"
                                    : "PTL_NI_FAIL (the launcher failed the job, or a "
                                      "connection to a peer was lost)");
    /* What the dead peers sent before they died is taken first (bounded): an
     * answer that arrived beats a failure. */
    take_arrived_then_fail(nic);
    /* Transfers with dead peers fail at their next step (the transport's pull
     * and reserve report it); make sure somebody runs them, and wake waiters. */
    nic->events_posted = true;
    /* ... and a waiter that sees the failure (A-FAIL) sees this too: it looks
     * for their failed ENDs, bounded, before it reports PTL_FAIL (wait.c,
     * waiter_failed; the ofi pull tests, mp_kill late). */
    if (dead_ops(nic))
        ST_RELEASE(&nic->settle_until, pt_now_ns() + PT_WAIT_FAIL_SETTLE_NS);
    ST_RELEASE(&nic->failed, code); /* R-FAIL: after the failures' events; pairs with A-FAIL */
    pt_wait_wake_everyone(&nic->w);
}

void pt_nic_drain(struct pt_nic *nic, int max)
{
    for (int i = 0; i < max && pt_nic_poll_once(nic); i++)
        ;
}

/* Arrivals as work for a sleeper (after its full fence). The park rule
 * (docs/waiting.md, "Parked for a match"; model/park.pml): the requests the
 * last receive pass left waiting for a match are no work while no command
 * that could change what they match ran since (match_gen) and their wait
 * has not ended; everything else that arrived is. A command is work of its
 * own until it has run, and whoever runs it looks for our work when it
 * releases the engine (D3), with match_gen moved. */
static bool rx_work(struct pt_nic *nic)
{
    uint32_t n = LD_RELAXED(&nic->park_n);
    if (PT_LIKELY(!n) || n > PT_PARK_MAX || !nic->xo->rx_pending_beyond ||
        LD_RELAXED(&nic->park_gen) != LD_RELAXED(&nic->match_gen) ||
        pt_now_ns() >= LD_RELAXED(&nic->park_until))
        return nic->xo->rx_pending(nic->x);
    uint32_t peers[PT_PARK_MAX];
    for (uint32_t i = 0; i < n; i++)
        peers[i] = LD_RELAXED(&nic->park_peer[i]);
    return nic->xo->rx_pending_beyond(nic->x, peers, n);
}

bool pt_nic_has_work(struct pt_nic *nic)
{
    fork_point(nic); /* S2 (and the backstop's check): the NIC thread, token free */
    return rx_work(nic) || pt_nic_local_work(nic) ||
           nic->xo->departures(nic->x) != LD_RELAXED(&nic->departed_seen);
}

uint64_t pt_nic_park_until(struct pt_nic *nic)
{
    return LD_RELAXED(&nic->park_until);
}

int64_t pt_nic_park_left_ns(struct pt_nic *nic)
{
    if (PT_LIKELY(!LD_RELAXED(&nic->park_n)))
        return -1;
    uint64_t u = LD_RELAXED(&nic->park_until), now = pt_now_ns();
    return u > now ? (int64_t)(u - now) : 0;
}

/* Work a sleeping NIC thread would not otherwise hear about: commands and
 * in-flight transfers are local; inbound messages rang the bell themselves
 * unless somebody raised `polled` (then use pt_nic_leave_polled). */
bool pt_nic_local_work(struct pt_nic *nic)
{
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        /* RW (wait.h): a producer asleep on its full ring that half the ring
         * would wake is work (drain_cmds rings it); the caller's fence came
         * after our consumer index stores (R2) and before this load. */
        if (PT_UNLIKELY(LD_RELAXED(&q->room.want)) && pt_cmdq_half_free(q))
            return true;
        if (spsc_nonempty(&q->ring)) {
            /* C-RECHECK (the credit wait, model/credit.pml): a ring whose
             * head is a command stalled on credits is no work while every
             * mark armed for it is still set: the peer that frees room
             * clears its mark and rings us (the caller fenced after
             * announcing itself). */
            uint64_t st = LD_RELAXED(&q->stall_at);
            if (PT_LIKELY(!st) || st != stall_mark(q) ||
                !nic->xo->stall_armed(nic->x))
                return true;
        }
    }
    uint32_t busy = LD_RELAXED(&nic->nops) - LD_RELAXED(&nic->nops_idle);
    uint32_t cs = LD_RELAXED(&nic->nops_cstall);
    if (busy && (busy != cs || !nic->xo->stall_armed(nic->x)))
        return true; /* C-RECHECK for copy streams, as for commands above */
    return LD_RELAXED(&nic->trig_nready) != 0;
}

bool pt_nic_credit_stalled(struct pt_nic *nic)
{
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        if (LD_RELAXED(&q->stall_at))
            return true;
    }
    return LD_RELAXED(&nic->nops_cstall) != 0;
}

void pt_nic_thread_start(struct pt_nic *nic)
{
    pt_nic_trace_thread(nic);
    (void)pthread_setname_np(pthread_self(), "ptl-nic"); /* top -H, gdb, mp_nicplace */
    if (nic->nic_cpu >= 0) {
        int rc = pt_cpu_pin_self(nic->nic_cpu);
        if (rc)
            pt_log(PT_LOG_INFO, "NIC thread: cannot pin to core %d (%s)", nic->nic_cpu,
                   strerror(-rc));
    }
    /* LP's timed sleeps (PTL_WAIT_LEASE_US) on a core of its own: the
     * default timer slack (50 us) would make each up to twice as long. */
    if (nic->w.lease_poll)
        (void)prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
    /* Its scheduling class (PTL_NIC_BATCH) is the waiting protocol's:
     * engine/wait.c, NB. */
}

/* ---- lifecycle ----------------------------------------------------------- */

/* A desired limit of 0 or less is no preference: the library's value, as
 * for a NULL desired (clients zero the struct and set the members they care
 * about; a zeroed max_pt_index must not mean "portal 0 only"). Otherwise
 * min(desired, library), the fact sheet's rule; actual says what holds. */
static int clamp_limit(int desired, int lib)
{
    return desired > 0 && desired < lib ? desired : lib;
}

/* cin[] and copy_busy[] of every class, one per process slot of the job. */
/* Per-peer engine state, one entry per process slot of the job (ranks and
 * guests), in one anonymous mapping off the application's heap (whose layout
 * a client may depend on, and which REF's forktest overruns): in order,
 * nomatch_since[np], nomatch_cpu0[np], cin[PT_CLS_NR][np], ireq_head[np], rfw_head[np],
 * copy_busy[PT_CLS_NR][np]
 * (widest first, so every array is aligned). */
static size_t peer_state_bytes(const struct pt_nic *nic)
{
    size_t np = nic->xi.nprocs;
    return np * (2 * sizeof(uint64_t) + PT_CLS_NR * sizeof(struct pt_copyin) +
                 2 * sizeof(uint32_t) + PT_CLS_NR);
}

int pt_nic_create(ptl_interface_t iface, ptl_pid_t pid, const ptl_ni_limits_t *desired,
                  uint32_t ni_index, uint32_t gen, struct pt_nic **nic_p)
{
    const struct pt_config *cfg = pt_config();
    struct pt_nic *nic = aligned_alloc(PT_CACHELINE, sizeof *nic);
    if (!nic)
        return PT_E_NOSPACE;
    memset(nic, 0, sizeof *nic);
    nic->ni_index = ni_index;
    nic->h_seed = pt_h_seed(gen);
    nic->iface = iface;
    nic->offload = cfg->offload;
    nic->rndv_seg = (uint32_t)cfg->rndv_seg;
    uint32_t cmd_slots = 8;
    while (cmd_slots < (uint32_t)cfg->cmd_slots)
        cmd_slots <<= 1;
    nic->cmdq_slots = cmd_slots;
    uint32_t qslots = pt_queue_slots_for((uint32_t)cfg->queue_slots);

    /* Limits: the library's, lowered member-wise by desired (§5.2). */
    int maxo = (int)cfg->max_objs;
    ptl_ni_limits_t lib = {
        .max_mes = maxo, .max_mds = maxo, .max_eqs = maxo,
        .max_ac_index = PT_MAX_AC - 1, .max_pt_index = (int)cfg->max_pt_index,
        .max_md_iovecs = PT_MAX_IOV, .max_me_list = maxo, .max_getput_md = 64,
    };
    if (desired) {
        nic->limits.max_mes = clamp_limit(desired->max_mes, lib.max_mes);
        nic->limits.max_mds = clamp_limit(desired->max_mds, lib.max_mds);
        nic->limits.max_eqs = clamp_limit(desired->max_eqs, lib.max_eqs);
        nic->limits.max_ac_index = clamp_limit(desired->max_ac_index, lib.max_ac_index);
        nic->limits.max_pt_index = clamp_limit(desired->max_pt_index, lib.max_pt_index);
        nic->limits.max_md_iovecs = clamp_limit(desired->max_md_iovecs, lib.max_md_iovecs);
        nic->limits.max_me_list = clamp_limit(desired->max_me_list, lib.max_me_list);
        nic->limits.max_getput_md = clamp_limit(desired->max_getput_md, lib.max_getput_md);
    } else {
        nic->limits = lib;
    }
    nic->npt = (uint32_t)nic->limits.max_pt_index + 1;

    /* Slot: header + eager payload; one function shared with ptlrun, which
     * sizes the job region (the region's value wins, see below). */
    uint32_t eager = (uint32_t)cfg->eager_max;
    if (eager < (uint32_t)lib.max_getput_md)
        eager = (uint32_t)lib.max_getput_md; /* getput always travels inline */
    nic->slot_size = pt_slot_size_for(eager);
    nic->eager_max = eager;

    int rc = pt_xport_open(nic->slot_size, qslots, pid, &nic->xo, &nic->x, &nic->xi);
    if (rc) {
        free(nic);
        return rc == -EADDRINUSE ? PT_E_PID : rc == -ENOSPC ? PT_E_NOSPACE : PT_E_FAIL;
    }
    /* The credit wait (docs/waiting.md): only with a transport that has it. */
    nic->stall_ctr = &g_no_stalls;
    nic->cstall = false;
    nic->rx_released = false;
    if (cfg->credit_wait && nic->xo->stall_counter && nic->xo->stall_clear &&
        nic->xo->stall_armed)
        nic->stall_ctr = nic->xo->stall_counter(nic->x);
    /* Whatever PTL_CREDIT_WAIT says here, peers may wait for our rings. */
    nic->rx_done = nic->xo->stall_counter && nic->xo->stall_clear && nic->xo->stall_armed
                       ? nic->xo->rx_done : NULL;
    nic->tx_batch = cfg->shm_ring_batch && nic->xo->tx_hold && nic->xo->tx_flush;
    nic->tx_held = false;
    nic->tm.t0 = pt_tsc(); /* PTL_TIMING's engine pass table: the NI's life */
    /* The region fixes the slot size for the whole job; adopt it. */
    nic->slot_size = nic->xi.slot_size;
    if (nic->eager_max > nic->slot_size - PT_WIRE_HDR_SIZE)
        nic->eager_max = nic->slot_size - PT_WIRE_HDR_SIZE;
    nic->xo->id_of(nic->x, nic->xi.rank, &nic->id.nid, &nic->id.pid);
    if (pid != PTL_PID_ANY && pid != nic->id.pid) {
        nic->xo->close(nic->x);
        free(nic);
        return PT_E_PID;
    }
    nic->uid = (ptl_uid_t)getuid();
    nic->jid = nic->xi.jid;
    nic->rndv_mode = (int)cfg->rndv_mode;
    nic->cma_ok = nic->xi.cma_ok && cfg->cma;
    nic->rndv_iov_max = nic->xi.rndv_iov_max;
    nic->cma_min = (uint64_t)cfg->rndv_cma_min;
    nic->coop_min = nic->xo->push && nic->xo->coop_word && nic->xi.nprocs > 1
                        ? (uint64_t)cfg->rndv_coop_min : 0;
    nic->coop_takeback = cfg->rndv_coop_takeback != 0;
    nic->coop_free = PT_XPORT_COOP_WORDS >= 64 ? ~0ull : (1ull << PT_XPORT_COOP_WORDS) - 1;
    if (pt_wrap_n()) { /* PTL_TEST_WRAP: claim-word lives 4 before OPEN's wrap (gen << 2, 30 bits) */
        for (uint32_t k = 0; k < PT_XPORT_COOP_WORDS; k++)
            nic->coop_gen[k] = (1u << 30) - 4u;
        ST_RELAXED(&nic->cmd_seq, pt_wrap32()); /* the command stamps */
    }
    /* Per-peer stream state, sized by the job's process slots (ranks and
     * guests): one anonymous mapping, off the application's heap (whose
     * layout a client may depend on: transport/shm_attach.c, open_locked). */
    char *pm = mmap(NULL, peer_state_bytes(nic), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pm == MAP_FAILED) {
        nic->xo->close(nic->x);
        free(nic);
        return PT_E_NOSPACE;
    }
    size_t np = nic->xi.nprocs;
    nic->nomatch_since = (uint64_t *)(void *)pm;
    nic->nomatch_cpu0 = nic->nomatch_since + np;
    struct pt_copyin *cin = (struct pt_copyin *)(void *)(nic->nomatch_cpu0 + np);
    nic->ireq_head = (uint32_t *)(void *)(cin + PT_CLS_NR * np);
    nic->rfw_head = nic->ireq_head + np;
    uint8_t *busy = (uint8_t *)(nic->rfw_head + np);
    for (int c = 0; c < PT_CLS_NR; c++) {
        nic->cin[c] = cin + (size_t)c * np;
        nic->copy_busy[c] = busy + (size_t)c * np;
    }
    nic->nomatch_ns = (uint64_t)cfg->nomatch_us * 1000;
    nic->nomatch_idle_ns = (uint64_t)cfg->nomatch_idle_us * 1000;
    nic->eq_room_ns = (uint64_t)cfg->eq_room_us * 1000;
    nic->ev_eq_h = PTL_EQ_NONE;
    nic->tx_rank = -1;
    pt_waitword_init(&nic->fork_ww, false);
    pt_wait_init(&nic->w, nic->xo->doorbell(nic->x), nic->offload, cfg->nic_yield,
                 (uint64_t)cfg->nic_spin_us * 1000, (uint64_t)cfg->wait_spin_us * 1000,
                 nic->xi.ranks_here);
    pt_wait_set_batch(&nic->w, cfg->nic_batch, nic->ni_index); /* NB */
    if (nic->xo->wait_fd &&
        pt_wait_set_fd(&nic->w, nic->xo->wait_fd(nic->x),
                       nic->xo->cq_fd ? nic->xo->cq_fd(nic->x) : -1,
                       nic->xo->ring_fd ? nic->xo->ring_fd(nic->x) : -1) != 0) {
        pt_log(PT_LOG_ERR, "cannot create the eventfd the engine sleeps on");
        goto fail_fd;
    }
    pt_nic_trace_start(nic);

    /* ACL: REF initialises every entry to "any process of my uid" (§6.14). */
    for (int i = 0; i < PT_MAX_AC; i++) {
        nic->acl[i].id.nid = PTL_NID_ANY;
        nic->acl[i].id.pid = PTL_PID_ANY;
        nic->acl[i].uid = nic->uid;
        nic->acl[i].jid = PTL_JID_ANY;
        nic->acl[i].pt_index = PTL_PT_INDEX_ANY;
    }
    nic->max_cts = (uint32_t)cfg->max_cts;
    struct pt_op *ops = NULL;
    if (pt_obj_tables_init(nic))
        goto fail_tables;
    nic->ops_n = 2;
    while (nic->ops_n < (uint32_t)cfg->max_ops)
        nic->ops_n <<= 1;
    ops = pt_pages_zalloc(nic->ops_n * sizeof *ops); /* pages.h */
    if (!ops)
        goto fail_ops;
    nic->ops_pool = ops;
    nic->ops_free = NULL;
    nic->ops_hwm = 0;
    pt_ops_grow(nic); /* the rest as they are needed (PT_LAZY_CHUNK) */
    nic->ops = NULL;
    uint32_t nreq = 16;
    while (nreq < (uint32_t)cfg->req_slots)
        nreq <<= 1;
    if (pt_ireq_init(nic, nreq))
        goto fail_ops;
    if (pt_rfw_init(nic, nreq)) {
        pt_ireq_fini(nic);
        goto fail_ops;
    }
    if (pt_ct_init(nic, nic->max_cts, (uint32_t)cfg->trig_slots)) {
        pt_rfw_fini(nic);
        pt_ireq_fini(nic);
        goto fail_ops;
    }
    nic->sr[PTL_SR_PTLS_MAX] = nic->npt;
    ST_RELAXED(&nic->tag, (gen << 1) | 1u);

    if (nic->offload) {
        unsigned ncand = 0;
        nic->nic_cpu = cfg->nic_cpu >= 0 ? (int)cfg->nic_cpu
                                         : pt_cpu_choose_nic(-1, nic->xi.local_rank, &ncand);
        cpu_set_t app;
        bool app_ok = sched_getaffinity(0, sizeof app, &app) == 0;
        nic->nic_shares_core = nic->nic_cpu >= 0 && app_ok && CPU_COUNT(&app) == 1 &&
                               CPU_ISSET(nic->nic_cpu, &app);
        /* Two NIC threads of this host on one core: every rank's on the
         * core PTL_NIC_CPU names (not when ptlrun --cpus gave each its own,
         * PTL_NIC_OWN_CPU), or more ranks than the cores they spread over
         * (not when each shares its own rank's core: ptlrun --cpus). */
        bool crowded = nic->xi.ranks_here > 1 &&
                       ((cfg->nic_cpu >= 0 && !cfg->nic_own_cpu) ||
                        (!nic->nic_shares_core && nic->xi.ranks_here > ncand));
        pt_wait_set_crowded(&nic->w, crowded);
        /* A core of its own (LP, PTL_NIC_LEASE_POLL=-1): ptlrun --cpus with
         * twice as many cores as ranks pins the ranks (PTL_JOB_CPUS) and
         * gives each NIC thread one of the others (PTL_NIC_CPU, off the
         * rank's core); unpinned, twice as many cores as ranks on this
         * host, the NIC threads spread over them (not crowded). */
        cpu_set_t sib;
        struct pt_nic_place place = {
            .nic_cpu = nic->nic_cpu,
            .app = app_ok ? &app : NULL,
            .pinned = cfg->job_cpus > 0,
            .own_cpu = cfg->nic_own_cpu != 0,
            .crowded = crowded,
            .shares = nic->nic_shares_core,
            .ranks_here = nic->xi.ranks_here,
            .online = sysconf(_SC_NPROCESSORS_ONLN),
            .nic_sib = nic->nic_cpu >= 0 && pt_cpu_siblings(nic->nic_cpu, &sib) ? &sib : NULL,
        };
        bool own = pt_cpu_nic_own_core(&place);
        pt_wait_set_lease_poll(&nic->w, cfg->nic_lease_poll >= 0 ? cfg->nic_lease_poll != 0 : own);
        pt_wait_set_cmd_inline(&nic->w, cfg->cmd_inline != 0);
        if (!cfg->cmd_inline && !own)
            pt_log(PT_LOG_INFO, "PTL_CMD_INLINE=0 and the NIC thread has no core of its own: a "
                                "command posted while it sleeps costs a wake-up (docs/waiting.md, "
                                "\"Commands only posted\")");
        nic->has_thread = true;
        int trc = pt_thread_create(&nic->thread, NULL, pt_wait_nic_thread, nic);
        if (trc != 0) {
            pt_log(PT_LOG_WARN, "cannot start the NIC thread (%s); running in host-matching mode",
                   strerror(trc));
            nic->has_thread = false;
            nic->offload = false;
            int xfd = nic->w.xfd, efd = nic->w.efd, rfd = nic->w.rfd;
            pt_wait_init(&nic->w, nic->xo->doorbell(nic->x), false, cfg->nic_yield,
                         (uint64_t)cfg->nic_spin_us * 1000, (uint64_t)cfg->wait_spin_us * 1000,
                         nic->xi.ranks_here);
            nic->w.xfd = xfd; /* keep the descriptors made above */
            nic->w.efd = efd;
            nic->w.rfd = rfd;
            pt_nic_trace_start(nic);
        }
    }
    /* AF (wait.h): host mode (the engine's sleepers are API threads), a core
     * per rank (yield_ns 0: ranks outnumber cores, and their waits end in
     * sleeps often) and a spin that dwarfs the membarrier's ~10 us. Our
     * side first: AF-M runs before any peer learns it may skip F-SND. */
    if (!nic->offload && nic->xo->af_offer && cfg->asym_fsnd && nic->w.yield_ns &&
        cfg->wait_spin_us >= PT_AF_MIN_SPIN_US) {
        pt_wait_set_af(&nic->w, true);
        if (!nic->xo->af_offer(nic->x, true))
            pt_wait_set_af(&nic->w, false);
    }
    pt_nic_register_live(nic, true);
    *nic_p = nic;
    return PT_OK;

fail_ops:
    pt_pages_free(ops, nic->ops_n * sizeof *ops);
    pt_obj_tables_fini(nic);
fail_tables:
    pt_log(PT_LOG_WARN, "PtlNIInit: the NI's tables do not fit (PTL_MAX_OBJECTS, PTL_MAX_OPS, "
                        "PTL_REQ_SLOTS, PTL_TRIG_SLOTS and PTL_MAX_CTS size them): PTL_NO_SPACE");
    pt_nic_trace_stop(nic);
    pt_wait_fini(&nic->w);
fail_fd:
    munmap(pm, peer_state_bytes(nic));
    nic->xo->close(nic->x);
    free(nic);
    return PT_E_NOSPACE;
}

void pt_nic_stop_thread(struct pt_nic *nic)
{
    if (!nic->has_thread)
        return;
    pt_wait_stop(&nic->w);
    pthread_join(nic->thread, NULL);
    nic->has_thread = false;
}

/* A peer may still read or write our memory: a rendezvous put of ours it has
 * not pulled (its FIN), a get of ours whose reply has not come, a reply of
 * ours it has not pulled (its RFIN), any transfer in progress (an op: a pull,
 * a cooperative part). PtlNIFini waits for these: once it returns, the
 * application may reuse or free that memory, and a peer that pulled it
 * afterwards got whatever was there, reported as PTL_NI_OK (an adversarial
 * client's 1 MiB put: the target received bytes written after PtlNIFini
 * returned); a part we claimed but never finished left its target waiting
 * for ever. Not hot: the flush only. */
static bool peers_in_memory(struct pt_nic *nic)
{
    if (nic->ops)
        return true;
    for (uint32_t p = 0; p < nic->xi.nprocs; p++)
        for (uint32_t s = nic->ireq_head[p]; s; s = nic->ireqs[s - 1].next) {
            const struct pt_ireq *r = &nic->ireqs[s - 1];
            if (r->kind == PT_IRQ_GET || r->send_end)
                return true;
        }
    for (uint32_t pt = 0; pt < nic->npt; pt++)
        for (const struct pt_me *me = nic->portals[pt].head; me; me = me->next)
            if (me->md && me->md->pending)
                return true;
    return false;
}

/* Commands not yet taken, in any ring: also those stalled on credits, which
 * pt_nic_local_work leaves out on purpose (a sleeper waits for the peer's
 * ring, not for them); the flush must send them (an adversarial client: 40
 * puts accepted, PtlNIFini returned at once, 3-8 of them arrived). */
static uint32_t cmds_queued(struct pt_nic *nic)
{
    uint32_t queued = 0;
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q)
        queued += LD_ACQUIRE(&q->ring.head) - LD_RELAXED(&q->ring.tail); /* A1 */
    return queued;
}

/* For the backstop's verdict (wait.c describe_pending): which local work
 * pt_nic_local_work saw, so that a report names its source. Cold path;
 * relaxed reads of words other threads may be changing. */
void pt_nic_local_work_describe(struct pt_nic *nic, char *buf, size_t len)
{
    uint32_t room = 0, stalled = 0;
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        room += LD_RELAXED(&q->room.want) != 0;
        stalled += LD_RELAXED(&q->stall_at) != 0;
    }
    snprintf(buf, len,
             "commands queued %u (rings stalled on credits %u, producers asleep on a full "
             "ring %u, credit-stalled dispatches %llu), ops %u (idle %u, credit-stalled %u), "
             "triggered ready %u, credit marks armed %d",
             cmds_queued(nic), stalled, room,
             (unsigned long long)LD_RELAXED(&nic->cstall_fails), (unsigned)LD_RELAXED(&nic->nops),
             (unsigned)LD_RELAXED(&nic->nops_idle), (unsigned)LD_RELAXED(&nic->nops_cstall),
             (unsigned)LD_RELAXED(&nic->trig_nready),
             nic->xo->stall_armed ? (int)nic->xo->stall_armed(nic->x) : -1);
}

static bool flush_due(struct pt_nic *nic)
{
    return cmds_queued(nic) || pt_nic_local_work(nic) || LD_RELAXED(&nic->nops) ||
           peers_in_memory(nic);
}

/* PtlNIFini must not lose what was posted: a put whose command is still in a
 * ring (the NIC thread had the token when PtlPut returned) or whose data is
 * still moving, nor leave a peer in our memory (peers_in_memory). Run the
 * engine here until none of that is left, bounded by PTL_PEER_TIMEOUT_MS
 * (credits or answers may never come from a dead or stopped peer). A
 * cooperative transfer whose part a peer claimed (nops_idle) waits for its
 * PDONE too: the peer writes into our MD's memory until then. When nothing
 * is left, one more pass answers requests that arrived meanwhile (ACKs,
 * replies); if that pass started something (a PUSH we claimed, a pull), it
 * is waited for as well. */
static void flush(struct pt_nic *nic)
{
    uint64_t t0 = pt_now_ns(), limit = (uint64_t)pt_config()->ni_fail_grace_ms * 1000000u;
    /* Nothing attaches to an NI being finalised: a request waiting for its
     * match entry (target.c, nomatch_expired) is dropped at once, not held
     * for PTL_NOMATCH_WAIT_US with its sender's later messages behind it (an
     * adversarial client's gets to itself held its PtlNIFini for 2 s, the
     * flush's limit). The NIC thread has ended: this thread alone reads it. */
    nic->nomatch_ns = 0;
    bool last = false;
    for (;;) {
        bool due = flush_due(nic);
        if (!due && last)
            break;
        if (due && (pt_nic_down(nic) || pt_now_ns() - t0 >= limit))
            break;
        last = !due;
        if (pt_wait_try_take(&nic->w)) {
            pt_nic_poll_once(nic);
            pt_wait_give(&nic->w); /* single-threaded: the NIC thread has ended */
        }
        CPU_RELAX();
    }
    uint32_t left = cmds_queued(nic);
    if (left)
        pt_log(PT_LOG_WARN, "PtlNIFini: %u operations posted to this NI were never sent (no "
                            "credits from their target within PTL_PEER_TIMEOUT_MS, or the job "
                            "failed)", left);
}

bool pt_nic_quiesce(struct pt_nic *nic)
{
    ST_RELEASE(&nic->dead, 1);
    /* L-F: the caller's unpublished NI slot and `dead` before reading the
     * words; pairs with each thread's L-E (life.h). A thread that enters
     * after this finds no NI; one inside is seen below. */
    pt_membar_heavy();
    /* Sleepers wake (the seq bump: one that read seq before it never
     * blocks) and recheck; EQ waiters then see `dead`, synchronous callers
     * get their completion from the engine, which runs until they leave. */
    pt_wait_wake_everyone(&nic->w);
    uint64_t t0 = pt_now_ns(), limit = (uint64_t)pt_config()->ni_fail_grace_ms * 1000000u;
    long nap_ns = 1000;
    while (!pt_life_quiet(nic->ni_index)) {
        if (pt_now_ns() - t0 >= limit)
            return false;
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 1000000)
            nap_ns *= 2;
    }
    return true;
}

void pt_nic_destroy(struct pt_nic *nic)
{
    pt_nic_stop_thread(nic);
    flush(nic);
    /* Parts of cooperative transfers still open (flush ran out of time, or
     * the job failed) are closed, so that no peer claims one and writes
     * into memory the application may free once we return. */
    for (struct pt_op *op = nic->ops; op; op = op->next)
        pt_coop_close(nic, op);
    if (pt_log_level() >= PT_LOG_INFO) { /* PTL_LOG_LEVEL=2: the waiting counters */
        fprintf(stderr, "NI %u (rank %u):\n", nic->ni_index, nic->xi.rank);
        pt_wait_dump(&nic->w, stderr);
        if (LD_RELAXED(&nic->coop_split) || LD_RELAXED(&nic->coop_push))
            fprintf(stderr, "  cooperative rendezvous: %u puts split, %u pushes served\n",
                    LD_RELAXED(&nic->coop_split), LD_RELAXED(&nic->coop_push));
    }
    pt_nic_register_live(nic, false);
    ST_RELEASE(&nic->tag, 0);
    /* Single-threaded from here: free what the engine owned. */
    for (uint32_t i = 0; i < nic->md_hwm; i++)
        if (LD_RELAXED(&nic->mds[i].tag) & 1u)
            free(nic->mds[i].iov);
    for (uint32_t i = 0; i < nic->eq_hwm; i++)
        if (LD_RELAXED(&nic->eqs[i].tag) & 1u)
            pt_eq_destroy(nic->eqs[i].q);
    pt_eq_reclaim(nic, true);
    pt_eq_trash_drain(nic);
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        if (q->shared)
            pthread_mutex_destroy(&q->plock);
        free(q->slots);
        free(q);
    }
    pt_pages_free(nic->ops_pool, nic->ops_n * sizeof *nic->ops_pool);
    pt_ireq_fini(nic);
    pt_rfw_fini(nic);
    munmap(nic->nomatch_since, peer_state_bytes(nic));
    pt_obj_tables_fini(nic);
    pt_nic_trace_stop(nic);
    pt_wait_fini(&nic->w);
    nic->xo->close(nic->x);
    pt_launcher_unwatch(); /* one NI per process: its last (launcher.c) */
    /* After the transport's close: a read still posted (ofi: a step given up
     * on when the peer was lost or the flush's grace ran out) may complete
     * until then, into the reduction scratch among others (an audit). */
    pt_ct_fini(nic); /* with the operations still armed (never fired) */
    free(nic);
}

/* ---- debugging dumps (PtlTblDump, PtlMEDump, PtlNIEqDump) ------------------ */

void pt_nic_dump(struct pt_nic *nic, int what, FILE *f)
{
    fprintf(f, "NI %u: id %u/%u uid %u jid %u, %u MEs, %u MDs, %u EQs, %u ops in flight, "
               "drops %llu (bad headers %llu)\n",
            nic->ni_index, nic->id.nid, nic->id.pid, nic->uid, nic->jid, nic->me_cnt,
            nic->md_cnt, nic->eq_cnt, LD_RELAXED(&nic->nops),
            (unsigned long long)nic->sr[PTL_SR_DROP_COUNT],
            (unsigned long long)nic->drops_bad_header);
    fprintf(f, "  cooperative rendezvous: %u puts split, %u pushes served, %u short PDONEs, "
               "%u parts taken back\n",
            LD_RELAXED(&nic->coop_split), LD_RELAXED(&nic->coop_push), LD_RELAXED(&nic->coop_short),
            LD_RELAXED(&nic->coop_stolen));
    pt_wait_dump(&nic->w, f);
    fprintf(f, "  counting events: %u live; triggered operations: %u of %u slots reserved, "
               "%u fired and waiting to run\n",
            nic->ct_cnt, LD_RELAXED(&nic->trig_used), nic->trig_n, LD_RELAXED(&nic->trig_nready));
    for (uint32_t p = 0; p < nic->npt; p++) {
        if (what >= 0 && (uint32_t)what != p)
            continue;
        if (!nic->portals[p].len)
            continue;
        fprintf(f, "  portal %u: %u entries\n", p, nic->portals[p].len);
        for (struct pt_me *me = nic->portals[p].head; me; me = me->next) {
            fprintf(f, "    ME %#x id %u/%u bits %#llx ignore %#llx %s", pt_me_handle(nic, me),
                    me->match_id.nid, me->match_id.pid, (unsigned long long)me->match_bits,
                    (unsigned long long)me->ignore_bits,
                    me->unlink == PTL_UNLINK ? "unlink" : "retain");
            if (me->md)
                fprintf(f, " MD %#x len %llu thr %d off %llu opts %#x pending %u\n",
                        pt_md_handle(nic, me->md), (unsigned long long)me->md->mem.len,
                        me->md->umd.threshold, (unsigned long long)me->md->local_off,
                        me->md->umd.options, me->md->pending);
            else
                fprintf(f, " (no MD)\n");
        }
    }
}
