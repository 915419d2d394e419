/*
 * progress.c - the API side of the engine: per-thread command rings, posting
 * commands, synchronous calls and EQ waits. How a caller waits (runs the
 * engine, sleeps, wakes others) is the waiting protocol, engine/wait.c.
 *
 * Command rings. Each API thread gets its own SPSC ring per NI on first use
 * (producer: that thread; consumer: the token holder). A ring is published in
 * nic->cmdq[] with ST_RELEASE (R-Q) after its init; the engine reads the
 * array with LD_ACQUIRE (A-Q). When a thread exits, its rings are handed back
 * (owner 0) and a later thread claims them with a CAS; the release/acquire on
 * `owner` passes the producer side from one thread to the next. Threads past
 * the PT_MAX_CMDQ - 1 private rings share the last ring, taking turns under
 * its producer lock (a thread per core of a large node, one NI: the 129th
 * thread's calls failed with PTL_NO_SPACE before).
 */
#include "nic.h"

#include "config.h"
#include "log.h"
#include "perturb.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- rings --------------------------------------------------------------- */

struct tls_ring {
    struct pt_nic *nic;
    uint32_t tag;          /* the NI's tag when claimed: a new NI at the same
                            * address (after PtlNIFini) has another generation */
    struct pt_cmdq *q;
};
static __thread struct tls_ring tls_rings[PT_MAX_NI];

static pthread_mutex_t g_life_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pt_nic *g_live[PT_MAX_NI];   /* under g_life_lock */
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *unused)
{
    pthread_mutex_lock(&g_life_lock);
    for (int i = 0; i < PT_MAX_NI; i++) {
        struct tls_ring *t = &tls_rings[i];
        /* Same address is not the same NI: after PtlNIFini + PtlNIInit malloc
         * may hand the new NI the old one's address, and our ring is freed.
         * The tag (generation) tells them apart; the live NI's tag is safe to
         * read under g_life_lock. */
        if (t->q && g_live[i] == t->nic && LD_RELAXED(&t->nic->tag) == t->tag &&
            !t->q->shared) /* the shared ring has no owner to hand back */
            ST_RELEASE(&t->q->owner, 0); /* R-OWN pairs with the claimer's CAS */
        t->q = NULL;
        t->nic = NULL;
    }
    pthread_mutex_unlock(&g_life_lock);
}

static void key_init(void) { pthread_key_create(&g_key, thread_exit); }

/* fork() (api/fork.c): held across it, so that a child never inherits it
 * held by a thread that was exiting (thread_exit) at the fork; its PtlNIInit
 * takes it (pt_nic_register_live). Taken after g_pt_ni_lock, as NIInit does. */
void pt_nic_life_fork_lock(bool lock)
{
    if (lock)
        pthread_mutex_lock(&g_life_lock);
    else
        pthread_mutex_unlock(&g_life_lock);
}

void pt_nic_register_live(struct pt_nic *nic, bool live)
{
    pthread_mutex_lock(&g_life_lock);
    g_live[nic->ni_index] = live ? nic : NULL;
    pthread_mutex_unlock(&g_life_lock);
}

static struct pt_cmdq *ring_new(struct pt_nic *nic)
{
    struct pt_cmdq *q = aligned_alloc(PT_CACHELINE, sizeof *q);
    void *slots = aligned_alloc(PT_CACHELINE, (size_t)nic->cmdq_slots * PT_CMD_SLOT);
    if (!q || !slots) {
        free(q);
        free(slots);
        return NULL;
    }
    memset(q, 0, sizeof *q);
    spsc_init(&q->ring, nic->cmdq_slots, PT_CMD_SLOT);
    if (pt_wrap_n()) { /* PTL_TEST_WRAP: the ring's indexes */
        uint32_t wb = pt_wrap32();
        ST_RELAXED(&q->ring.head, wb);
        ST_RELAXED(&q->ring.tail, wb);
        q->ring.prod_cached_tail = q->ring.cons_cached_head = wb;
    }
    pt_waitword_init(&q->room.ww, false);
    q->slots = slots;
    q->nic = nic;
    ST_RELAXED(&q->owner, 1);
    return q;
}

/* The ring of the threads past the private ones, made by the first of them.
 * Under g_life_lock (not hot: once per thread and NI). Its count in ncmdq is
 * added after it is published: the engine reads the count first, then the
 * entry, and skips an entry not yet published. */
static struct pt_cmdq *ring_shared(struct pt_nic *nic)
{
    pthread_mutex_lock(&g_life_lock);
    struct pt_cmdq *q = LD_RELAXED(&nic->cmdq[PT_MAX_CMDQ - 1]);
    if (!q && (q = ring_new(nic))) {
        q->shared = true;
        pthread_mutex_init(&q->plock, NULL);
        q->index = PT_MAX_CMDQ - 1;
        ST_RELEASE(&nic->cmdq[PT_MAX_CMDQ - 1], q); /* R-Q pairs with A-Q */
        RMW_ADD(&nic->ncmdq, 1);
        pt_log(PT_LOG_INFO, "more than %d threads use one NI: the rest share one command ring",
               PT_MAX_CMDQ - 1);
    }
    pthread_mutex_unlock(&g_life_lock);
    return q;
}

static struct pt_cmdq *ring_claim(struct pt_nic *nic)
{
    struct pt_cmdq *q;
    PT_CMDQ_EACH(nic, i, q) {
        uint32_t z = 0;
        /* A ring left by an exited thread, once the engine has taken all it
         * held: its last commands may wait for a peer's credits, and a new
         * owner's, synchronous ones too, would wait behind them without
         * bound (an adversarial client: a thread's PtlEQAlloc hung behind
         * its predecessor's puts to a stopped rank). The old owner commits
         * nothing more; the engine drains the ring meanwhile. */
        if (!q->shared && LD_RELAXED(&q->owner) == 0 && !spsc_nonempty(&q->ring) &&
            RMW_CAS(&q->owner, &z, 1))
            return q;
    }
    if (!(q = ring_new(nic)))
        return NULL;
    /* A private ring takes the next index; the last index is the shared
     * ring's. Past them the count goes up for a moment (pt_cmdq_count). */
    uint32_t idx = RMW_ADD(&nic->ncmdq, 1);
    if (idx >= PT_MAX_CMDQ - 1) {
        RMW_SUB(&nic->ncmdq, 1);
        free(q->slots);
        free(q);
        return ring_shared(nic);
    }
    q->index = idx;
    ST_RELEASE(&nic->cmdq[idx], q); /* R-Q pairs with A-Q */
    return q;
}

static struct pt_cmdq *my_ring(struct pt_nic *nic)
{
    struct tls_ring *t = &tls_rings[nic->ni_index];
    if (PT_LIKELY(t->nic == nic && t->q && t->tag == LD_RELAXED(&nic->tag)))
        return t->q;
    pthread_once(&g_key_once, key_init);
    pthread_setspecific(g_key, (void *)1);
    t->q = ring_claim(nic);
    t->nic = t->q ? nic : NULL;
    t->tag = LD_RELAXED(&nic->tag);
    return t->q;
}

/* ---- posting commands ------------------------------------------------------ */

/* A host-mode thread whose command ring is full waits this long at a time
 * (then checks PTL_PEER_TIMEOUT_MS, failure and PtlNIFini). */
#define PT_SUBMIT_WAIT_NS 10000000

void pt_nic_progress(struct pt_nic *nic)
{
    pt_wait_progress(nic);
}

/* A posted command's place: its ring and the producer index after it. */
struct ring_pos {
    struct pt_cmdq *q;
    uint32_t end;
};

/* Not yet taken by the engine (on a shared ring, others' commands may follow
 * it: "ring empty" would wait for them too). */
static bool ring_pending(void *arg)
{
    const struct ring_pos *p = arg;
    return (int32_t)(LD_ACQUIRE(&p->q->ring.tail) - p->end) < 0; /* A2 pairs with R2 */
}

/* The submitting thread (the ring's producer): a slot is free. */
static bool ring_room(void *arg)
{
    struct pt_cmdq *q = arg;
    return spsc_reserve(&q->ring, q->slots) != NULL;
}

static int ring_post(struct pt_nic *nic, struct pt_cmdq *q, const struct pt_cmd *cmd, bool multi);

int pt_nic_submit(struct pt_nic *nic, const struct pt_cmd *cmd)
{
    struct pt_cmdq *q = my_ring(nic);
    if (!q)
        return PT_E_NOSPACE;
    /* Several rings (threads): the command takes its place in the NI's order
     * (cmd_seq, nic.h; drain_cmds). One ring: its FIFO is the order. A ring
     * made after this load is another thread's, whose commands are then
     * stamped; any of ours it must follow were posted before it existed,
     * unstamped, and unstamped heads go first (drain_cmds). */
    bool multi = LD_RELAXED(&nic->ncmdq) > 1;
    if (!multi && nic->w.cmd_inline && !spsc_nonempty(&q->ring) && pt_wait_try_take(&nic->w)) {
        /* Nothing of ours queued, engine free: run the command now instead
         * of through the ring (same order, one copy and D2's fence less; in
         * offload mode the command would run here anyway, inline when the
         * engine is free: pt_wait_progress_cmd). Taken, the token is ours:
         * no D2 to pair with (model/wait.pml, submit). The handlers only
         * read the command (const), so it runs from the caller's copy. */
        if (pt_cmd_run(nic, cmd) != PT_E_AGAIN) {
            pt_wait_cmd_done(nic); /* as pt_wait_progress_cmd, then D3 */
            return PT_OK;
        }
        pt_wait_release(nic); /* out of credits: queue it like any other */
    }
    if (PT_UNLIKELY(q->shared))
        pthread_mutex_lock(&q->plock);
    int rc = ring_post(nic, q, cmd, multi);
    struct ring_pos pos = {q, LD_RELAXED(&q->ring.head)}; /* the producer's own index */
    if (PT_UNLIKELY(q->shared))
        pthread_mutex_unlock(&q->plock);
    if (rc)
        return rc;
    PT_PERTURB();
    /* D2: our commit before reading the token. Either we take the engine and
     * run the command, or the holder's release (D3) sees it. */
    FENCE_FULL();
    if (nic->has_thread)
        pt_wait_progress_cmd(nic); /* inline when free: no NIC wake-up for a command */
    else if (!cmd->done)
        pt_wait_progress_host(nic, ring_pending, &pos);
    return PT_OK;
}

/* Reserve (waiting for room), fill, stamp and commit: the ring's producer
 * (its owner, or on the shared ring the holder of plock). */
static int ring_post(struct pt_nic *nic, struct pt_cmdq *q, const struct pt_cmd *cmd, bool multi)
{
    void *slot = spsc_reserve(&q->ring, q->slots);
    if (PT_UNLIKELY(!slot)) {
        /* Ring full: the engine is out of credits towards some target. Run
         * it ourselves when we can; otherwise back off so that we do not take
         * the core from the threads that will free the credits (on 2 cores a
         * spinning waiter costs everyone a scheduler tick). Bounded: after
         * PTL_PEER_TIMEOUT_MS without the engine taking a command of this
         * ring, the call returns PTL_NO_SPACE. */
        uint64_t t0 = pt_now_ns(), limit = (uint64_t)pt_config()->ni_fail_grace_ms * 1000000u;
        uint32_t seen = LD_ACQUIRE(&q->ring.tail);
        for (int i = 0; !(slot = spsc_reserve(&q->ring, q->slots)); i++) {
            pt_wait_progress(nic);
            /* A few quick looks, unless the ring's head is stalled on
             * credits: then room comes only once a receiver has taken half
             * of what we had outstanding (C-SKIP leaves the head alone until
             * then), and the wait below spins and sleeps for it (64 engine
             * passes here cost a 255-sender incast's senders about 700
             * instructions per message). */
            if (i < 64 && !LD_RELAXED(&q->stall_at)) {
                CPU_RELAX();
                continue;
            }
            /* The limit is for a ring that does not move: while the engine
             * takes our commands (the target drains, only slowly), wait on. */
            uint32_t tail = LD_ACQUIRE(&q->ring.tail);
            if (tail != seen) {
                seen = tail;
                t0 = pt_now_ns();
            }
            if (pt_now_ns() - t0 > limit || LD_RELAXED(&nic->failed))
                return PT_E_NOSPACE;
            if (LD_RELAXED(&nic->dead))
                return PT_E_BADNI; /* PtlNIFini waits for us to leave */
            if (!nic->has_thread) {
                /* Host matching: we are an engine sleeper. Wait as one (it
                 * runs the engine while it spins, and sleeps on the bell:
                 * the peer that frees the credits rings it, docs/waiting.md
                 * "Stalled on credits"), at most until the limit's next
                 * check. */
                pt_wait_until(nic, ring_room, q, PT_SUBMIT_WAIT_NS);
                continue;
            }
            /* Offload: asleep until the engine has taken half the ring (the
             * room wait, wait.h RW), at most until the limit's next check.
             * Napping instead (2 us doubling to 1 ms, from 2 us again at
             * every command taken) cost 255 incast senders' threads a
             * context switch per message or more (docs/waiting.md). */
            pt_wait_room(&nic->w, &q->room, ring_room, q, PT_SUBMIT_WAIT_NS);
        }
    }
    memcpy(slot, cmd, sizeof *cmd);
    if (multi) {
        struct pt_cmd *c = slot;
        c->flags |= PT_CF_SEQ;
        c->seq = RMW_ADD(&nic->cmd_seq, 1);
    }
    spsc_commit(&q->ring);
    uint32_t h2 = LD_RELAXED(&q->ring.head) + 1;
    if (!nic->w.cmd_inline && h2 - q->ring.prod_cached_tail <= q->ring.mask) {
        /* Commands only posted (PTL_CMD_INLINE 0): own the slot after next
         * before we fill it (the NIC thread read it last lap), so that D2's
         * fence does not wait for it; the next one the NIC thread may be
         * reading now. Not when the ring is (nearly) full: that slot may be
         * the oldest command, the one the NIC thread reads. */
        char *n2 = spsc_slot(&q->ring, q->slots, h2);
        PREFETCH_W(n2);
        PREFETCH_W(n2 + 64);
    }
    return PT_OK;
}

/* ---- waiting ------------------------------------------------------------- */

static bool done_ready(void *arg)
{
    return LD_ACQUIRE(&((struct pt_done *)arg)->done) != 0; /* A-DONE pairs with R-DONE */
}

int pt_nic_call(struct pt_nic *nic, struct pt_cmd *cmd)
{
    struct pt_done d;
    return pt_nic_call_out(nic, cmd, &d);
}

/* Synchronous call that also returns the completion's outputs. */
int pt_nic_call_out(struct pt_nic *nic, struct pt_cmd *cmd, struct pt_done *out)
{
    memset(out, 0, sizeof *out);
    cmd->done = out;
    int rc = pt_nic_submit(nic, cmd);
    if (rc)
        return rc;
    /* A failed job ends waits for events, not this one: the engine still
     * runs local commands (and PtlNIFini waits for us to leave). */
    while (!pt_wait_until(nic, done_ready, out, -1))
        ;
    return out->rc;
}

struct eqwait {
    struct pt_nic *nic;
    const uint32_t *hs;
    int n;
    ptl_event_t *ev;
    int which;
    int rc;
    struct pt_eq *q;
};

/* The handles are resolved on every call: after a sleep (PARKED, life.h)
 * a ring seen before may have been freed. An EQ freed, or the NI finalized,
 * ends the wait with PT_E_BADEQ. */
static bool eq_ready(void *arg)
{
    struct eqwait *w = arg;
    for (int i = 0; i < w->n; i++) {
        struct pt_eqo *e = pt_eqo_lookup(w->nic, w->hs[i]);
        if (PT_UNLIKELY(!e)) {
            w->which = i;
            w->rc = PT_E_BADEQ;
            return true;
        }
        struct pt_eq *q = e->q;
        enum pt_eq_rc rc = pt_eq_take(q, w->ev);
        if (rc != PT_EQ_EMPTY) {
            w->which = i;
            w->rc = rc;
            w->q = q;
            return true;
        }
    }
    /* PtlNIFini began: read after this waiter's wake-up or entry, which
     * follow its ST_RELEASE (pt_nic_quiesce) */
    if (PT_UNLIKELY(LD_RELAXED(&w->nic->dead))) {
        w->which = 0;
        w->rc = PT_E_BADEQ;
        return true;
    }
    return false;
}

/* A wait that ends without an event: PT_E_FAIL once the NI failed and the
 * transfers with dead peers have delivered their failed ENDs (settle_until,
 * nic.h), else PT_EQ_EMPTY; or, when the transfers have just settled, the
 * failed END they posted (true: *w holds it). Two races lie here (a spinner
 * on PtlEQGet saw PTL_FAIL before its PUT_END, mp_kill_pull_nocompl_get_ofi):
 * - the job's failure is visible in the transport (pt_nic_down) before the
 *   engine has acted on it (pt_nic_fail: settle_until, then R-FAIL). A wait
 *   with a timeout reports nothing until A-FAIL (the engine runs for it: the
 *   NIC thread, or the spinner's next look); only a wait without one, which
 *   waiter_failed has already made take the engine, reports on job_failed;
 * - the last failed END may be posted, and settle_until cleared after it
 *   (poll_work), between our last look and the settling check: the acquire
 *   in pt_nic_settling pairs with that clear's release, so one more look
 *   finds the event. */
static bool eq_none(struct eqwait *w, bool forever, int *rc)
{
    struct pt_nic *nic = w->nic;
    *rc = PT_EQ_EMPTY;
    if (!pt_nic_down(nic))
        return false;
    if (!forever && !LD_ACQUIRE(&nic->failed)) /* A-FAIL: pairs with R-FAIL (nic.c) */
        return false;
    if (pt_nic_settling(nic))
        return false;
    if (eq_ready(w))
        return true;
    *rc = PT_E_FAIL;
    return false;
}

int pt_nic_eq_wait(struct pt_nic *nic, const uint32_t *hs, int n, ptl_time_t timeout_ms,
                   ptl_event_t *ev, int *which, struct pt_eq **q_p)
{
    struct eqwait w = {nic, hs, n, ev, -1, PT_EQ_EMPTY, NULL};
    if (eq_ready(&w)) {
        if (timeout_ms == 0)
            pt_wait_polled_empty(nic, false);
        goto got;
    }
    if (timeout_ms == 0) {
        /* One pass: progress once if the engine is free, look again. A
         * thread that holds it polls every source anyway; waiting for it
         * would make PtlEQGet block (in host mode, for a whole spin phase of
         * another thread's PtlEQWait). */
        bool found = pt_wait_look(nic, eq_ready, &w);
        pt_wait_polled_empty(nic, !found);
        if (found)
            goto got;
        /* A spinner learns of a failed NI as a blocked waiter does (below):
         * events posted before the failure first, then PT_E_FAIL instead of
         * PT_EQ_EMPTY for ever (mp_liveness killspin) */
        int rc;
        if (eq_none(&w, false, &rc))
            goto got;
        return rc;
    }
    int64_t tns = timeout_ms == PTL_TIME_FOREVER ? -1 : (int64_t)timeout_ms * 1000000;
    /* W2W: our EQs' watcher counts, so that D6 wakes us for their events
     * only. The slots stay valid while we are in the call (a freed EQ's slot
     * may get a new EQ while we sleep: it then rings for that one too, a
     * spurious wake at most; the free itself wakes everyone). */
    struct pt_watch wt = {.n = 0, .all = n > PT_WAIT_WATCH};
    for (int i = 0; !wt.all && i < n; i++) {
        struct pt_eqo *e = pt_eqo_lookup(nic, hs[i]);
        if (e)
            wt.w[wt.n++] = &e->watchers;
    }
    if (!pt_wait_until_watch(nic, eq_ready, &w, tns, &wt)) {
        int rc;
        if (eq_none(&w, tns < 0, &rc))
            goto got;
        return rc;
    }
got:
    if (which)
        *which = w.which;
    *q_p = w.q;
    return w.rc;
}
