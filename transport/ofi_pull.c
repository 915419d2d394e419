/*
 * ofi_pull.c - the libfabric transport's bulk data (ofi_int.h): a receiver
 * pulls a rendezvous descriptor's memory with fi_read, in asynchronous steps
 * the engine polls (engine/target.c, xfer_busy), under the key the sender's
 * commit registered (ofi.c, reg_desc; the table rk, rkey_add/rkey_end). A
 * step whose peer is lost is given up once its reads have ended. Token
 * holder only.
 */
#include "ofi_int.h"

#include "clock.h"
#include "log.h"
#include "pt_atomic.h"

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/* A pull step's reads complete only with the peer's help (rxm serves a read
 * from the peer's progress), so a step may stay in flight for ever once the
 * peer is gone: seen, rxm answered fi_read -FI_EAGAIN for ever once the
 * initiator of a 64 MiB put was killed mid-transfer, and its target's NIC
 * thread spun with the job's failure never reported
 * (mp_pmix_kill_initiator_recovery, mp_netns_kill: docs/ofi.md). So every
 * 4,096 -EAGAIN answers: the probe timer read here (non-blocking) runs
 * probe_tick, and the peer is lost when it is marked dead (a probe not
 * completed within OFI_PROBE_LATE periods, a failed send), gone, or the job
 * region says so. */
/* The job region (the launcher's word) says the peer is gone: mark it dead. */
static bool launcher_lost(struct pt_xport *x, uint32_t peer)
{
    if (x->so->peer_alive(x->shm, peer))
        return false;
    pt_ofi_mark_dead(x, peer, OFI_WHY_LAUNCHER);
    return true;
}

static bool pull_peer_lost(struct pt_xport *x, uint32_t peer)
{
    if (x->tfd >= 0) {
        uint64_t v;
        if (read(x->tfd, &v, sizeof v) == (ssize_t)sizeof v)
            pt_ofi_probe_tick(x);
    }
    return x->dead[peer] || LD_RELAXED(&x->gone[peer]) || launcher_lost(x, peer);
}

/* One read of a pull step. PTL_OFI_FAULT, for tests only (docs/ofi.md),
 * makes a step (its first read, or its completion) wait until
 * pull_peer_lost finds the peer lost: OFI_FAULT_EAGAIN answers for the
 * provider as rxm did once the initiator was killed (-FI_EAGAIN for ever,
 * nothing posted); OFI_FAULT_NOCOMPL posts the read under an index no step
 * has, so that progress() never counts its completion (pending stays up).
 * Without it: one predictable branch. */
static inline ssize_t pull_read(struct pt_xport *x, uint32_t peer, void *buf, size_t len,
                                uint64_t ra, uint64_t key, struct ofi_ctx *c)
{
    if (PT_UNLIKELY(x->fault)) {
        if (x->fault == OFI_FAULT_EAGAIN)
            return -FI_EAGAIN;
        if (x->fault == OFI_FAULT_NOCOMPL)
            c->idx = 15u; /* no step's (OFI_STEPS < 16) */
    }
    return fi_read(x->ep, buf, len, NULL, x->addr[peer], ra, key, &c->fc);
}

/* The step is given up on with reads still posted: their contexts stay the
 * provider's (a new set for the slot's next step), their completions no
 * longer count (a new gen). */
static ssize_t pull_lost(struct pt_xport *x, struct ofi_step *t, uint32_t peer)
{
    pt_log_once(PT_LOG_WARN, "ofi: a read from rank %u given up: the rank is lost", peer);
    if (!t)
        return -ESRCH; /* nothing posted */
    if (t->pending) {
        struct ofi_rdset *n = calloc(1, sizeof *n);
        if (!n) {
            /* The slot keeps its reads' contexts for good (busy, matching
             * no call): one step fewer in flight until the NI closes. */
            t->peer = UINT32_MAX;
            return -ENOMEM;
        }
        t->rd->next = x->rd_lost;
        x->rd_lost = t->rd;
        t->rd = n;
        t->pending = 0;
    }
    t->gen++;
    t->busy = false;
    t->drain_t = 0;
    return -ESRCH;
}

/* The peer of step t is lost while reads of t are still posted. Until the
 * provider ends them, each may still write into the op's memory: bytes the
 * peer sent before it died wait in our socket and land whenever our
 * progress() reads them, after the engine has reported the op failed and
 * its owner has unlinked or freed that memory (an audit). So the step is
 * given up only once its reads have ended (a dead peer's connection is
 * reset or closed, and the provider fails what it carried: pull_collect
 * then answers their error), or OFI_DRAIN_MS after the loss was seen (a
 * provider that never ends them; none we know of, but the engine must not
 * wait for ever). Meanwhile -EAGAIN: the engine asks again next pass. */
static ssize_t pull_drain(struct pt_xport *x, struct ofi_step *t, uint32_t peer)
{
    if (!t || !t->pending)
        return pull_lost(x, t, peer);
    uint64_t now = pt_now_ns();
    if (!t->drain_t)
        t->drain_t = now ? now : 1;
    else if (now - t->drain_t >= (uint64_t)OFI_DRAIN_MS * 1000000u)
        return pull_lost(x, t, peer);
    return -EAGAIN;
}

/* The step t (in flight) or a first read (t NULL) is not done: -EAGAIN, the
 * engine asks again next pass. Every 4,096 answers: is the peer still there?
 * Once the job has failed (one relaxed load), on every answer: the drain's
 * clock (OFI_DRAIN_MS) then starts at the death, not up to 4,096 passes
 * later, which under load took over a second, and the failed END came after
 * the engine's settling bound (PT_WAIT_FAIL_SETTLE_NS): PTL_FAIL first
 * (mp_kill_pull_nocompl_wait_ofi_host, beside other jobs). */
static ssize_t pull_again(struct pt_xport *x, struct ofi_step *t, uint32_t peer)
{
    uint32_t n = t ? ++t->turns : ++x->post_turns[peer];
    if (x->dead[peer] || LD_RELAXED(&x->gone[peer]) ||
        (PT_UNLIKELY(x->so->job_failed(x->shm)) && launcher_lost(x, peer)) ||
        ((n & 0xfff) == 0 && pull_peer_lost(x, peer)))
        return pull_drain(x, t, peer);
    return -EAGAIN;
}

/* The step in flight: its bytes once every read completed, its error if one
 * failed, else -EAGAIN. */
static ssize_t pull_collect(struct pt_xport *x, struct ofi_step *t)
{
    if (t->pending) {
        pt_ofi_progress(x);
        if (t->pending)
            return pull_again(x, t, t->peer);
    }
    t->busy = false;
    if (t->err) /* a dead peer's reads (pull_drain): the engine says PEER_DIED */
        return x->dead[t->peer] || LD_RELAXED(&x->gone[t->peer]) ? -ESRCH
               : t->err < 0                                      ? t->err
                                                                 : -EIO;
    return (ssize_t)t->len;
}

/* A pull step, asynchronous: the first call posts up to OFI_MAX_READS reads
 * (a step of more pieces ends early: the engine takes what moved and asks
 * for the rest) and, like every later call with the same arguments, answers
 * -EAGAIN until they complete; then the bytes they moved. Up to OFI_STEPS
 * steps (of different ops) are in flight at once; the engine polls its
 * other peers, commands and events meanwhile (before, it waited here for a
 * whole PTL_RNDV_SEG segment's reads, one segment at a time). */
ssize_t pt_ofi_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote, uint64_t desc)
{
    if (peer >= x->n)
        return -EINVAL;
    if (peer == x->me)
        return pt_iov_copy_local(local, nlocal, remote, nremote);
    if (nremote < 1 || nlocal < 1)
        return -EFAULT;
    struct ofi_step *t = NULL;
    for (uint32_t k = 0; k < OFI_STEPS; k++) {
        struct ofi_step *u = &x->st[k];
        if (u->busy && u->peer == peer && u->desc == desc && u->l0 == local[0].iov_base &&
            u->r0 == remote[0].iov_base)
            return pull_collect(x, u); /* ours (its length may differ from this
                                         * call's: the bytes moved are from the start) */
        if (!u->busy && !t)
            t = u;
    }
    if (!t) {
        pt_ofi_progress(x);
        return -EBUSY; /* every slot in flight: the engine asks again later */
    }
    /* The descriptor's own key (desc), whose registration lives until our
     * answer to it, which comes after this step; else (never seen: a
     * registration evicted from a full table) one whose registration holds
     * every byte this step reads. Not merely the first that covers them: the
     * descriptors of one peer may overlap (two puts from one buffer), and
     * with steps asynchronous another op's FIN could end that key while our
     * reads use it (an audit). rkey_end spares keys busy steps use. Not one
     * whose range held only the first byte either: read past its end ("out
     * of registered range" at the peer, whose tcp then reset the
     * connection). */
    uint64_t a0 = UINT64_MAX, a1 = 0;
    for (int i = 0; i < nremote; i++) {
        uint64_t b = (uint64_t)(uintptr_t)remote[i].iov_base, e = b + remote[i].iov_len;
        if (!remote[i].iov_len)
            continue;
        if (b < a0)
            a0 = b;
        if (e > a1)
            a1 = e;
    }
    const struct ofi_rkey *rk = NULL;
    for (uint32_t k = 0; k < x->nrk; k++) {
        const struct ofi_rkey *r = &x->rk[k];
        if (r->peer == peer && a0 >= r->lo && a1 <= r->hi && (!rk || r->id == desc)) {
            rk = r;
            if (r->id == desc)
                break;
        }
    }
    if (!rk || x->dead[peer] || !pt_ofi_peer_addr(x, peer))
        return rk ? -ESRCH : -EFAULT;
    uint64_t key = rk->key, base = x->mr_virt ? 0 : rk->lo;
    uint32_t idx = OFI_RD_IDX((uint32_t)(t - x->st), t->gen);
    size_t done = 0, li = 0, ri = 0, lo = 0, ro = 0;
    uint32_t posted = 0;
    t->err = 0;
    while (posted < OFI_MAX_READS && (int)li < nlocal && (int)ri < nremote) {
        size_t m = local[li].iov_len - lo;
        if (remote[ri].iov_len - ro < m)
            m = remote[ri].iov_len - ro;
        if (m > x->max_read)
            m = x->max_read;
        if (m) {
            uint64_t ra = (uint64_t)(uintptr_t)remote[ri].iov_base + ro - base;
            struct ofi_ctx *c = &t->rd->c[posted];
            c->kind = CTX_READ;
            c->idx = idx;
            ssize_t rc = pull_read(x, peer, (char *)local[li].iov_base + lo, m, ra, key, c);
            if (rc == -FI_EAGAIN || rc == -FI_EBUSY) { /* (-EBUSY: ours means "later") */
                if (posted)
                    break; /* a shorter step */
                pt_ofi_progress(x); /* the provider's queue is full: no step taken */
                ssize_t r = pull_again(x, NULL, peer);
                return r == -EAGAIN ? -EBUSY : r;
            }
            if (rc) {
                pt_log_once(PT_LOG_WARN, "ofi: fi_read from rank %u: %s", peer,
                            pt_fi_strerror((int)-rc));
                if (!posted)
                    return rc;
                t->err = (int)rc;
                break;
            }
            t->pending++;
            posted++;
            done += m;
        }
        lo += m;
        ro += m;
        if (lo == local[li].iov_len) { li++; lo = 0; }
        if (ro == remote[ri].iov_len) { ri++; ro = 0; }
    }
    x->post_turns[peer] = 0;
    t->busy = true;
    t->desc = desc;
    t->key = key;
    t->turns = 0;
    t->drain_t = 0;
    t->peer = peer;
    t->l0 = local[0].iov_base;
    t->r0 = remote[0].iov_base;
    t->len = done;
    return pull_collect(x, t);
}
