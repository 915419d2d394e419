/*
 * progress.c - the API side of the engine: per-thread command rings, posting
 * commands, and waiting (for a completion word or an event) while running the
 * engine when nobody else does.
 *
 * Command rings. Each API thread gets its own SPSC ring per NI on first use
 * (producer: that thread; consumer: the token holder). A ring is published in
 * nic->cmdq[] with ST_RELEASE (R-Q) after its init; the engine reads the
 * array with LD_ACQUIRE (A-Q). When a thread exits, its rings are handed back
 * (owner 0) and a later thread claims them with a CAS; the release/acquire on
 * `owner` passes the producer side from one thread to the next.
 */
#include "nic.h"

#include "config.h"
#include "log.h"

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
        if (t->q && g_live[i] == t->nic)
            ST_RELEASE(&t->q->owner, 0); /* R-OWN pairs with the claimer's CAS */
        t->q = NULL;
        t->nic = NULL;
    }
    pthread_mutex_unlock(&g_life_lock);
}

static void key_init(void) { pthread_key_create(&g_key, thread_exit); }

void pt_nic_register_live(struct pt_nic *nic, bool live)
{
    pthread_mutex_lock(&g_life_lock);
    g_live[nic->ni_index] = live ? nic : NULL;
    pthread_mutex_unlock(&g_life_lock);
}

static struct pt_cmdq *ring_claim(struct pt_nic *nic)
{
    uint32_t n = LD_ACQUIRE(&nic->ncmdq);
    for (uint32_t i = 0; i < n; i++) {
        struct pt_cmdq *q = LD_ACQUIRE(&nic->cmdq[i]); /* A-Q pairs with R-Q */
        uint32_t z = 0;
        if (q && LD_RELAXED(&q->owner) == 0 && RMW_CAS(&q->owner, &z, 1))
            return q; /* a ring left by an exited thread */
    }
    struct pt_cmdq *q = aligned_alloc(PT_CACHELINE, sizeof *q);
    void *slots = aligned_alloc(PT_CACHELINE, (size_t)nic->cmdq_slots * PT_CMD_SLOT);
    if (!q || !slots) {
        free(q);
        free(slots);
        return NULL;
    }
    memset(q, 0, sizeof *q);
    spsc_init(&q->ring, nic->cmdq_slots, PT_CMD_SLOT);
    q->slots = slots;
    q->nic = nic;
    ST_RELAXED(&q->owner, 1);
    uint32_t idx = RMW_ADD(&nic->ncmdq, 1);
    if (idx >= PT_MAX_CMDQ) {
        RMW_SUB(&nic->ncmdq, 1);
        free(slots);
        free(q);
        pt_log_once(PT_LOG_WARN, "more than %d threads use one NI: PTL_NO_SPACE", PT_MAX_CMDQ);
        return NULL;
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

/* ---- running the engine from an API thread ------------------------------- */

/* Poll until quiet (bounded), so that leaving does not find work it must
 * hand to a sleeping NIC thread (a wake-up is a syscall and a migration). */
static void poll_quiet(struct pt_nic *nic)
{
    /* A poll that did at most one thing (typically: sent our message) has
     * nothing to follow up; a loopback send is received in the same poll
     * (commands first, then the transport) and makes two. */
    for (int i = 0; i < 8 && pt_nic_poll_once(nic) > 1; i++)
        ;
}

void pt_nic_progress(struct pt_nic *nic)
{
    if (pt_nic_try_take(nic)) {
        poll_quiet(nic);
        pt_nic_leave(nic);
    }
}

/* Host mode: every caller runs the engine, so take the token even if another
 * thread holds it briefly (it never holds it long: one poll). */
static void progress_host(struct pt_nic *nic)
{
    for (int i = 0;; i++) {
        if (pt_nic_try_take(nic)) {
            poll_quiet(nic);
            pt_nic_leave(nic);
            return;
        }
        if (i > 256)
            sched_yield();
        else
            CPU_RELAX();
    }
}

int pt_nic_submit(struct pt_nic *nic, const struct pt_cmd *cmd)
{
    struct pt_cmdq *q = my_ring(nic);
    if (!q)
        return PT_E_NOSPACE;
    if (!nic->has_thread && !spsc_nonempty(&q->ring) && pt_nic_try_take(nic)) {
        /* Host matching, nothing of ours queued, engine free: run the command
         * now instead of through the ring (same order, one copy less). */
        struct pt_cmd c;
        memcpy(&c, cmd, sizeof c);
        if (pt_cmd_dispatch(nic, &c) != PT_E_AGAIN) {
            poll_quiet(nic); /* progress as every host-mode call does */
            pt_nic_leave(nic);
            return PT_OK;
        }
        pt_nic_give(nic); /* out of credits: queue it like any other */
    }
    void *slot = spsc_reserve(&q->ring, q->slots);
    if (PT_UNLIKELY(!slot)) {
        /* Ring full: the engine is out of credits towards some target. Run
         * it ourselves when we can; otherwise back off so that we do not take
         * the core from the threads that will free the credits (on 2 cores a
         * spinning waiter costs everyone a scheduler tick). Bounded: after
         * PTL_PEER_TIMEOUT_MS the call returns PTL_NO_SPACE. */
        uint64_t t0 = pt_now_ns(), limit = (uint64_t)pt_config()->ni_fail_grace_ms * 1000000u;
        long nap_ns = 2000;
        for (int i = 0; !(slot = spsc_reserve(&q->ring, q->slots)); i++) {
            pt_nic_progress(nic);
            if (i < 64) {
                CPU_RELAX();
                continue;
            }
            if (pt_now_ns() - t0 > limit || LD_RELAXED(&nic->failed))
                return PT_E_NOSPACE;
            struct timespec ts = {0, nap_ns};
            nanosleep(&ts, NULL);
            if (nap_ns < 1000000)
                nap_ns *= 2;
        }
    }
    memcpy(slot, cmd, sizeof *cmd);
    spsc_commit(&q->ring);
    if (nic->has_thread) {
        /* The NIC thread may be giving the token up and going to sleep right
         * now. Our commit and its recheck of the rings form a store-buffer
         * pair: FENCE_FULL here pairs with its RMW on the bell's sleepers, so
         * either it sees the command or we see it asleep (and wake it). */
        FENCE_FULL();
        /* Inline when the token is free, synchronous calls too: waking a
         * sleeping NIC thread for them cost 8 us per call on a shared core
         * (a futex wake and a context switch), running it here 0.1 us. */
        pt_nic_progress(nic);
        if (LD_RELAXED(&nic->nic_asleep) && LD_RELAXED(&nic->token) == 0 &&
            pt_nic_local_work(nic))
            pt_wake_all(nic->bell);
    } else if (!cmd->done) {
        progress_host(nic);
    }
    return PT_OK;
}

/* ---- waiting ------------------------------------------------------------- */

typedef bool (*ready_fn)(void *arg);

/* A waiter stops polling without the engine token: if the NIC thread sleeps
 * while work waits (peers skipped its doorbell while we polled), wake it.
 * Callers lowered bell->polled first (an RMW: the full fence this needs). */
static void hand_over(struct pt_nic *nic)
{
    if (nic->has_thread && LD_RELAXED(&nic->nic_asleep) && pt_nic_has_work(nic))
        pt_wake_all(nic->bell);
}

/* Claim to poll for the NIC thread (bell->polled), adopting a parked claim
 * when there is one: then the doorbell's line, which peers read on every
 * send, is not written at all (see nic->lease). */
static void poll_claim(struct pt_nic *nic)
{
    uint32_t one = 1;
    if (LD_RELAXED(&nic->lease) && RMW_CAS(&nic->lease, &one, 0))
        return; /* the parked count is ours now */
    RMW_ADD(&nic->bell->polled, 1);
}

/* Give the claim up. A waiter that got what it waited for parks it for the
 * next wait (the application usually waits again within microseconds); the
 * NIC thread ends a parked claim after PTL_POLL_LEASE_US. What arrives
 * meanwhile is progressed by the next waiter or by the NIC thread then: the
 * caller's leave still wakes the NIC thread for work already there. */
static void poll_unclaim(struct pt_nic *nic, bool got)
{
    uint32_t zero = 0, skip = LD_RELAXED(&nic->lease_skip);
    if (skip) /* the last lease went unused: the application computes between waits */
        ST_RELAXED(&nic->lease_skip, skip - 1);
    else if (got && nic->lease_ns && !LD_RELAXED(&nic->lease) &&
             RMW_CAS(&nic->lease, &zero, 1)) {
        ST_RELAXED(&nic->lease_t, pt_now_ns());
        /* Only a NIC thread in a timed sleep ends the lease. One that went
         * to sleep seeing neither a claim nor a lease sleeps without a
         * timeout: wake it (once per busy phase). Our CAS (a full fence) and
         * its RMW on `sleepers` before it reads `lease` form the Dekker pair:
         * it sees the lease, or we see nic_untimed. */
        if (LD_RELAXED(&nic->nic_untimed))
            pt_wake_all(nic->bell);
        return;
    }
    RMW_SUB(&nic->bell->polled, 1); /* full fence: pairs with the producers' FENCE_FULL */
}

/* Wait until ready(arg), running the engine whenever we can take the token.
 * timeout_ns < 0: forever. Returns true if ready, false on timeout. */
static bool wait_until(struct pt_nic *nic, ready_fn ready, void *arg, int64_t timeout_ns)
{
    if (ready(arg))
        return true; /* fast path: touch no shared line */
    uint64_t start = pt_now_ns(), spin_start = start;
    bool holding = false, wanted = false, ok = false;
    struct pt_waitword *bell = nic->bell, *evw = nic->ev_wait;

    /* `polled` exists to spare a sleeping NIC thread needless wake-ups; with
     * no NIC thread (host matching) it would only bounce the doorbell's line
     * between cores on every wait, so it is left alone. */
    const bool track = nic->has_thread;
    if (track)
        poll_claim(nic); /* we poll: peers need not ring the NIC's bell */
    for (uint32_t it = 0;; it++) {
        if (ready(arg)) {
            ok = true;
            break;
        }
        if (PT_UNLIKELY(LD_RELAXED(&nic->failed) || nic->xo->job_failed(nic->x))) {
            /* A peer died: waiting could be forever. But what live peers
             * sent before may be queued still (the NIC thread may hold the
             * engine this very moment): take the engine - it is held for one
             * poll at a time, so this is short; bounded anyway - and poll
             * until quiet, so the failure is recorded, its events posted and
             * everything already here delivered. Then decide. */
            for (uint64_t t0 = pt_now_ns(); !holding && pt_now_ns() - t0 < 10000000u;) {
                if (pt_nic_try_take(nic))
                    holding = true;
                else
                    CPU_RELAX();
            }
            if (holding)
                pt_nic_drain(nic, 64);
            ok = ready(arg);
            break;
        }
        if (holding || pt_nic_try_take(nic)) {
            holding = true;
            if (wanted) {
                RMW_SUB(&nic->want, 1);
                wanted = false;
            }
            if (pt_nic_poll_once(nic))
                continue;
        } else if (!wanted && nic->has_thread) {
            RMW_ADD(&nic->want, 1); /* ask an idle NIC thread to hand over */
            wanted = true;
        }
        if ((it & 15) != 15) {
            CPU_RELAX();
            continue;
        }
        uint64_t now = pt_now_ns();
        if (timeout_ns >= 0 && now - start >= (uint64_t)timeout_ns)
            break;
        if (now - spin_start < nic->wait_spin_ns)
            continue;

        /* Spun long enough: hand progress to the NIC thread (or to the bell in
         * host mode) and sleep until an event/completion or a message. */
        if (wanted) {
            RMW_SUB(&nic->want, 1);
            wanted = false;
        }
        if (track)
            RMW_SUB(&bell->polled, 1); /* full fence: pairs with the NIC's sleepers RMW */
        if (holding) {
            holding = false;
            pt_nic_leave_polled(nic); /* wakes the NIC thread if work is left */
        } else {
            hand_over(nic);
        }
        uint32_t seq = LD_ACQUIRE(&evw->seq);
        RMW_ADD(&evw->sleepers, 1); /* full fence: pairs with the engine's wake check */
        /* The recheck may itself consume what we wait for (eq_ready dequeues
         * an event): remember it, or the event is lost. */
        bool got = ready(arg);
        bool skip = got ||
                    (!nic->has_thread && LD_RELAXED(&nic->token) == 0 && pt_nic_has_work(nic));
        if (!skip) {
            int64_t left = 1000000000; /* safety net: re-evaluate at least every second */
            if (timeout_ns >= 0) {
                int64_t rem = timeout_ns - (int64_t)(pt_now_ns() - start);
                if (rem < left)
                    left = rem > 0 ? rem : 0;
            }
            pt_futex_wait(evw, seq, left);
        }
        RMW_SUB(&evw->sleepers, 1);
        if (track)
            RMW_ADD(&bell->polled, 1);
        if (got) {
            ok = true;
            break;
        }
        spin_start = pt_now_ns();
    }
    if (wanted)
        RMW_SUB(&nic->want, 1);
    if (track)
        poll_unclaim(nic, ok);
    if (holding)
        pt_nic_leave_polled(nic);
    else
        hand_over(nic);
    return ok;
}

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
    wait_until(nic, done_ready, out, -1);
    return out->rc;
}

struct eqwait {
    struct pt_eq **qs;
    int n;
    ptl_event_t *ev;
    int which;
    int rc;
};

static bool eq_ready(void *arg)
{
    struct eqwait *w = arg;
    for (int i = 0; i < w->n; i++) {
        enum pt_eq_rc rc = pt_eq_get(w->qs[i], w->ev);
        if (rc != PT_EQ_EMPTY) {
            w->which = i;
            w->rc = rc;
            return true;
        }
    }
    return false;
}

int pt_nic_eq_wait(struct pt_nic *nic, struct pt_eq **qs, int n, ptl_time_t timeout_ms,
                   ptl_event_t *ev, int *which)
{
    struct eqwait w = {qs, n, ev, -1, PT_EQ_EMPTY};
    if (eq_ready(&w))
        goto got;
    if (timeout_ms == 0) {
        /* One pass: progress once, look again. */
        if (nic->has_thread)
            pt_nic_progress(nic);
        else
            progress_host(nic);
        if (eq_ready(&w))
            goto got;
        return PT_EQ_EMPTY;
    }
    int64_t tns = timeout_ms == PTL_TIME_FOREVER ? -1 : (int64_t)timeout_ms * 1000000;
    if (!wait_until(nic, eq_ready, &w, tns))
        return LD_RELAXED(&nic->failed) || nic->xo->job_failed(nic->x) ? PT_E_FAIL : PT_EQ_EMPTY;
got:
    if (which)
        *which = w.which;
    return w.rc;
}
