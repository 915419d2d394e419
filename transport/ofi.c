/*
 * ofi.c - the libfabric transport: wire messages between the ranks' engines
 * as libfabric messages on one reliable-datagram endpoint (FI_EP_RDM) per
 * rank, bulk data by RMA read issued by the side that pulls (ofi.h).
 *
 * What stays the same as on shared memory (xport.h): slots, two classes,
 * credits, the order rules, defer/unhold. What differs:
 *
 *   Sending. reserve() hands out a send buffer from a pool (registered when
 *   the provider wants local registration); the slot is the buffer after a
 *   64-byte transport prefix (struct ofi_pfx: sender rank, class, credits
 *   returned). commit() stamps the order word as shm does and fi_send()s
 *   prefix + the bytes used; the buffer returns to the pool at its send
 *   completion. Credits: PTL_QUEUE_SLOTS per (sender, receiver, class), as
 *   on shm; reserve returns NULL without one, so a receiver that stops
 *   releasing stalls only its own senders.
 *
 *   Receiving. A few large buffers are posted with FI_MULTI_RECV. peek()
 *   reads the CQ (this is the only place the provider makes progress: data
 *   progress is FI_PROGRESS_MANUAL and nothing but the engine-token holder
 *   calls in, so there is no provider thread), copies each message into the
 *   (sender, class) receive ring and reposts a buffer once the provider has
 *   released it. From the rings on, peek/release/defer are shm's logic.
 *   release() returns credits: on the next message to that peer (prefix),
 *   or in a credit message once half a queue is owed.
 *
 *   Bulk. A rendezvous descriptor (the wire header's PT_WF_RNDV) names
 *   memory of the sender; commit() registers it for remote read (fi_mr_regv,
 *   FI_REMOTE_READ) and puts the key in the prefix; the receiver's pull()
 *   fi_read()s segments into the matched buffer, progressing its own CQ
 *   meanwhile (the owner must progress too: its engine is woken by the read
 *   request on its sockets). The registration ends when the descriptor's
 *   answer comes back (FIN for a put, RFIN for a get reply, which echo
 *   `req` / `tgt_link`), or at close.
 *
 *   Sleeping. cq_fd() is the CQ's wait object (FI_WAIT_FD), wait_fd() an
 *   epoll set of one pidfd per peer rank on this host (and, in a PMIx job,
 *   the launcher's event and the probe's timer); rx_pending() is "a message
 *   is queued, or fi_trywait() says completions are pending". The waiting
 *   protocol (engine/wait.c) sleeps in poll() on both beside its own
 *   eventfd.
 *
 *   Names. Each rank publishes its fi_getname() through a small address
 *   exchange (struct ofi_addrx); on one host the job region's rank records
 *   hold them (shm.h pt_shm_ep_publish/lookup); a peer is inserted into the
 *   address vector at the first send to it, once it has published.
 *
 *   Liveness (PMIx job). A timerfd in the sleep set fires every
 *   PTL_OFI_PROBE_MS; the engine then (peek, probe_tick) probes up to
 *   OFI_PROBE_MAX peers. A death rests on evidence: a failed send, or (a
 *   probe not completed for OFI_PROBE_CHECK of our own periods) the kernel
 *   refusing a TCP connection to the peer's listening address (tcp provider;
 *   other providers: a probe not completed for OFI_PROBE_LATE of our
 *   periods). A dead peer fails the job unless it said bye (its orderly
 *   close). Sends wait per peer: one peer that does not take them holds up
 *   no other (docs/ofi.md, "Peer death in a PMIx job").
 *
 * The job region stays underneath for identity, liveness, the failure flag
 * and the trace area: those ops are shm's.
 *
 * This file is the data path and the ops table; the pull, the peers'
 * liveness and the opening live beside it (the table in ofi_int.h).
 */
#include "ofi_int.h"
#include "shm_fbcode.h"

#include "log.h"
#include "pt_atomic.h"
#include "shm.h"

#include <p3api/misc.h>

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

/* Which header words of h differ from base (words 0 .. 30). */
static inline uint32_t ofi_short_mask(const void *h, const uint32_t *base)
{
    uint32_t w0, b0 = base[0];
    memcpy(&w0, h, 4);
    return pt_fb_diff(h, base) | (uint32_t)(w0 != b0);
}

/* ---- helpers --------------------------------------------------------------- */

static inline char *inq_slot(struct pt_xport *x, struct ofi_inq *q, uint32_t i)
{
    return q->slots + (size_t)(i & (x->qslots - 1)) * x->slot;
}

static inline uint32_t *slot_ord(void *slot) { return (uint32_t *)((char *)slot + PT_XPORT_ORD_OFF); }

/* Post multi-receive buffer i. */
int pt_ofi_post_rbuf(struct pt_xport *x, uint32_t i)
{
    struct ofi_rbuf *b = &x->rb[i];
    struct iovec v = {b->mem, b->size};
    struct fi_msg m = {.msg_iov = &v, .desc = &b->desc, .iov_count = 1,
                       .addr = FI_ADDR_UNSPEC, .context = &b->c.fc};
    ssize_t rc;
    /* A provider that keeps answering -FI_EAGAIN is not waited for without
     * bound: PtlNIInit fails saying so; in progress() the buffer stays
     * unposted and the next progress() tries again. */
    uint32_t tries = 0;
    do {
        rc = fi_recvmsg(x->ep, &m, FI_MULTI_RECV);
        if (rc == -FI_EAGAIN)
            (void)fi_cq_read(x->cq, NULL, 0);
    } while (rc == -FI_EAGAIN && ++tries < 10000);
    if (rc == -FI_EAGAIN) {
        pt_log_once(PT_LOG_WARN, "ofi: the provider takes no receive buffer (fi_recvmsg: %s, "
                                 "%u tries)", pt_fi_strerror(FI_EAGAIN), tries);
        return (int)rc;
    }
    if (rc) {
        log_fi("fi_recvmsg", rc);
        return (int)rc;
    }
    b->posted = true;
    return 0;
}

/* Insert peer's published name into the address vector: true once known. */
bool pt_ofi_peer_addr(struct pt_xport *x, uint32_t peer)
{
    if (PT_LIKELY(x->addr[peer] != FI_ADDR_NOTAVAIL))
        return true;
    char name[256];
    size_t len = sizeof name;
    if (x->ax.lookup(x->ax.ctx, peer, name, &len) != 0)
        return false; /* not published yet: the engine retries (reserve NULL) */
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    int rc = fi_av_insert(x->av, name, 1, &a, 0, NULL);
    if (rc != 1) {
        pt_log_once(PT_LOG_ERR, "ofi: fi_av_insert for rank %u failed (%d)", peer, rc);
        return false;
    }
    x->addr[peer] = a;
    return true;
}

static uint32_t sbuf_get(struct pt_xport *x)
{
    uint32_t i = x->sfree;
    if (i != UINT32_MAX)
        x->sfree = x->sb[i].next;
    return i;
}

/* A send buffer leaves the provider (completed, failed or dropped). */
static void sbuf_done(struct pt_xport *x, uint32_t i)
{
    struct ofi_sbuf *b = &x->sb[i];
    if (PT_UNLIKELY(b->what)) {
        if (b->what == 1) {
            /* the probe left: the peer took it (or it failed: mark_dead) */
            x->probe_t[b->peer] = 0;
            if (x->conn && x->conn[b->peer] == OFI_CONN_ASKED)
                x->conn[b->peer] = x->dead[b->peer] ? OFI_CONN_NONE : OFI_CONN_UP;
            x->chk_shift[b->peer] = 0;
            x->chk_next[b->peer] = x->tick;
            if (x->nchk)
                chk_close(x, b->peer);
        } else if (x->byes_left) {
            x->byes_left--;
        }
        b->what = 0;
    }
    sbuf_free(x, i);
}

/* A send to peer failed (why: the provider's words): it is dead to us
 * (mark_dead). Said as a warning unless the peer has left the job in order
 * (a ptlrun job's region says so): then what we still sent it goes nowhere,
 * as on shared memory (the reference clients' ringtest printed the warning
 * after "Passed all rounds"). */
static void send_failed(struct pt_xport *x, uint32_t peer, const char *why)
{
    bool left = !x->pmix && peer < x->n && !pt_shm_rank_attached(x->shm, peer);
    if (left)
        pt_log(PT_LOG_DEBUG, "ofi: a send to rank %u, which has left, failed: %s", peer, why);
    else
        pt_log_once(PT_LOG_WARN, "ofi: a send to rank %u failed: %s", peer, why);
    pt_ofi_mark_dead(x, peer, OFI_WHY_SEND);
}

/* Hand buffer i (b->c.idx bytes) to the provider. False: -FI_EAGAIN, it
 * stays the caller's to queue. True: it left, or the send failed (the peer
 * is dead to us, the buffer done). */
static bool try_send(struct pt_xport *x, uint32_t i)
{
    struct ofi_sbuf *b = &x->sb[i];
    ssize_t rc;
    if (PT_UNLIKELY(x->fault == OFI_FAULT_SENDERR) && x->me == 0 && b->peer != x->me &&
        (((const struct ofi_pfx *)b->mem)->kind == OFI_K_DATA ||
         ((const struct ofi_pfx *)b->mem)->magic == OFI_SMAGIC) &&
        ++x->fault_sends == 10)
        rc = -FI_EIO; /* as a connection lost to a live peer */
    else if (b->c.idx <= x->inject && !b->what) {
        /* copied by the provider now, no completion: the buffer is ours
         * again. Probes and byes keep fi_send: their completion is what
         * they are for (sbuf_done). */
        rc = fi_inject(x->ep, b->mem, b->c.idx, x->addr[b->peer]);
        if (PT_LIKELY(rc == 0)) {
            sbuf_done(x, i);
            return true;
        }
    } else
        rc = fi_send(x->ep, b->mem, b->c.idx, b->desc, x->addr[b->peer], &b->c.fc);
    if (PT_LIKELY(rc == 0))
        return true;
    if (rc == -FI_EAGAIN)
        return false;
    send_failed(x, b->peer, pt_fi_strerror((int)-rc));
    sbuf_done(x, i);
    return true;
}

/* The token holder, after pend or nowe changed: the mirror rx_pending reads. */
static inline void backlog_note(struct pt_xport *x)
{
    uint32_t b = x->pend_head != x->pend_tail || x->nowe;
    if (LD_RELAXED(&x->backlog) != b)
        ST_RELAXED(&x->backlog, b);
}

/* Hand a filled buffer to the provider, or queue it behind the earlier ones
 * to the same peer (per peer, the queue keeps commit order). */
static void send_or_queue(struct pt_xport *x, uint32_t i, size_t len)
{
    struct ofi_sbuf *b = &x->sb[i];
    uint32_t peer = b->peer;
    b->c.idx = (uint32_t)len; /* remembered for a retry */
    if (PT_UNLIKELY(peer_closed(x, peer))) {
        sbuf_done(x, i); /* dropped */
        return;
    }
    if (PT_LIKELY(!x->npendp[peer]) && try_send(x, i))
        return;
    x->pend[x->pend_head++ % x->npend_cap] = i;
    x->npendp[peer]++;
    backlog_note(x);
}

/* Retry the queued sends, in commit order per peer: a peer that answers
 * -FI_EAGAIN keeps its buffers (this pass tries no later one of it), the
 * others go on. The ring is compacted in place. */
static void flush_pending(struct pt_xport *x)
{
    uint32_t pass = ++x->flush_pass;
    if (PT_UNLIKELY(pass == 0))
        pass = x->flush_pass = 1; /* blk[] starts at 0: never a pass */
    uint32_t w = x->pend_tail;
    for (uint32_t r = x->pend_tail; r != x->pend_head; r++) {
        uint32_t i = x->pend[r % x->npend_cap];
        struct ofi_sbuf *b = &x->sb[i];
        uint32_t peer = b->peer;
        if (PT_UNLIKELY(peer_closed(x, peer))) {
            x->npendp[peer]--;
            sbuf_done(x, i); /* dropped */
            continue;
        }
        if (x->blk[peer] != pass) {
            if (try_send(x, i)) {
                x->npendp[peer]--;
                continue;
            }
            x->blk[peer] = pass;
        }
        x->pend[w++ % x->npend_cap] = i; /* kept, in order */
    }
    x->pend_head = w;
    if (w == x->pend_tail)
        x->pend_head = x->pend_tail = 0; /* empty: the counters never wrap */
    backlog_note(x);
}

/* A send buffer holding a bare prefix of `kind` from us to peer (a control
 * message: credits, probe, bye), or UINT32_MAX when none is free or the peer
 * cannot be named. */
static uint32_t ctl_buf(struct pt_xport *x, uint32_t peer, uint16_t kind)
{
    if (!pt_ofi_peer_addr(x, peer))
        return UINT32_MAX;
    uint32_t i = sbuf_get(x);
    if (i == UINT32_MAX)
        return i;
    struct ofi_sbuf *b = &x->sb[i];
    struct ofi_pfx *p = (struct ofi_pfx *)b->mem;
    memset(p, 0, sizeof *p);
    p->magic = OFI_MAGIC;
    p->kind = kind;
    p->src = x->me;
    b->peer = peer;
    return i;
}

/* A credit message to peer (what we owe it), if a buffer is free. */
static void send_credits(struct pt_xport *x, uint32_t peer)
{
    uint32_t i = ctl_buf(x, peer, OFI_K_CREDIT);
    if (i == UINT32_MAX)
        return; /* later: owe_flag stays set */
    struct ofi_pfx *p = (struct ofi_pfx *)x->sb[i].mem;
    p->cred[0] = x->owe[peer * 2];
    p->cred[1] = x->owe[peer * 2 + 1];
    x->owe[peer * 2] = x->owe[peer * 2 + 1] = 0;
    x->owe_flag[peer] = false;
    send_or_queue(x, i, OFI_PFX);
}

/* End our registration that answer h from peer completes, if any: the one
 * whose key the answer names (key: the reader forgot that one; two replies
 * of the same memory have the same id, and the two sides' tables need not
 * list them in the same order: closing the other one made the peer's next
 * read fail "unknown key", and tcp resets the connection), else (0: the
 * reader had no key left for it) the first of that id. */
static void reg_end(struct pt_xport *x, uint32_t peer, const void *h, uint64_t key)
{
    uint8_t op;
    if (W_OP(h) == PT_XPORT_W_FIN)
        op = PT_XPORT_W_PUT;
    else if (W_OP(h) == PT_XPORT_W_RFIN)
        op = PT_XPORT_W_REPLY;
    else
        return;
    uint64_t id = pt_xport_desc_id(h);
    for (uint32_t k = 0; k < x->nreg; k++) {
        struct ofi_reg *r = &x->reg[k];
        if (r->peer == peer && r->op == op && (key ? r->key == key : r->id == id)) {
            fi_close(&r->mr->fid);
            x->reg[k] = x->reg[--x->nreg];
            return;
        }
    }
}

static void rkey_add(struct pt_xport *x, uint32_t peer, const void *h, uint64_t key);

/* Credits sender s returns with a message; never above the queue (a peer
 * returning more is faulty). */
static inline void take_credits(struct pt_xport *x, uint32_t s, const uint32_t *cred)
{
    for (int c = 0; c < PT_CLS_NR; c++) {
        uint32_t v = x->cred[s * 2 + c] + cred[c];
        x->cred[s * 2 + c] = v > x->qslots ? x->qslots : v;
    }
    if (cred[0] | cred[1])
        pt_ofi_cred_bump(x); /* CE-BUMP: a stalled send may go now */
}

/* The slot a data message from s takes at q's head, or NULL (counted,
 * logged) when s sent beyond its credits and the message is dropped. */
static inline char *inq_next(struct pt_xport *x, struct ofi_inq *q, uint32_t s)
{
    if (PT_UNLIKELY(q->head - q->tail >= x->qslots)) {
        x->bad_msgs++;
        pt_log_once(PT_LOG_WARN, "ofi: rank %u sent beyond its credits: message dropped", s);
        return NULL;
    }
    return inq_slot(x, q, q->head);
}

/* A short message (ofi_spfx): its header rebuilt on the base of its class
 * from its sender, which it then becomes; as a full message with rkey 0
 * from there on. */
static void on_short(struct pt_xport *x, const char *buf, size_t len)
{
    struct ofi_spfx sp;
    memcpy(&sp, buf, sizeof sp);
    if (PT_UNLIKELY(sp.src >= x->n || sp.cls >= PT_CLS_NR || (sp.mask & ~OFI_SMASK) ||
                    sp.nw != pt_fb_pop(sp.mask) || len < sizeof sp + 4u * sp.nw ||
                    PT_XPORT_HDR_BYTES + (len - sizeof sp - 4u * sp.nw) > x->slot)) {
        x->bad_msgs++;
        pt_log_once(PT_LOG_WARN, "ofi: a malformed short message (%zu bytes) was dropped", len);
        return;
    }
    uint32_t s = sp.src;
    take_credits(x, s, sp.cred);
    uint32_t *base = x->rbase + ((size_t)s * 2 + sp.cls) * 32;
    const char *w = buf + sizeof sp;
    for (uint32_t m = sp.mask; m; m &= m - 1) {
        memcpy(&base[__builtin_ctz(m)], w, 4); /* the base moves even if the
                                                 * message is dropped below */
        w += 4;
    }
    size_t plen = len - sizeof sp - 4u * sp.nw;
    struct ofi_inq *q = &x->in[s * 2 + sp.cls];
    char *slot = inq_next(x, q, s);
    if (PT_UNLIKELY(!slot))
        return;
    memcpy(slot, base, PT_XPORT_HDR_BYTES);
    *slot_ord(slot) = sp.ord;
    memcpy(slot + PT_XPORT_HDR_BYTES, w, plen);
    if (PT_UNLIKELY(x->nreg) && sp.cls == PT_CLS_RSP)
        reg_end(x, s, slot, 0);
    q->head++;
    ST_RELAXED(&x->queued, LD_RELAXED(&x->queued) + 1);
}

/* A message arrived: check it, take its credits, copy a data message into
 * its ring. */
static void on_message(struct pt_xport *x, const char *buf, size_t len)
{
    /* The provider packs messages into a multi-receive buffer at any byte
     * offset: the prefix is copied out, the slot copied into its aligned ring. */
    struct ofi_pfx pf;
    const struct ofi_pfx *p = &pf;
    uint16_t magic;
    memcpy(&magic, buf, sizeof magic); /* a message is never shorter than 2 bytes */
    if (magic == OFI_SMAGIC && len >= sizeof(struct ofi_spfx)) {
        on_short(x, buf, len);
        return;
    }
    if (PT_UNLIKELY(len < OFI_PFX)) {
        x->bad_msgs++;
        pt_log_once(PT_LOG_WARN, "ofi: a %zu-byte message was dropped (shorter than the prefix)",
                    len);
        return;
    }
    memcpy(&pf, buf, sizeof pf);
    if (PT_UNLIKELY(p->magic != OFI_MAGIC || p->src >= x->n)) {
        x->bad_msgs++;
        pt_log_once(PT_LOG_WARN, "ofi: a malformed message (%zu bytes, magic %#x, from %u) was "
                                 "dropped", len, p->magic, p->src);
        return;
    }
    uint32_t s = p->src;
    take_credits(x, s, p->cred);
    if (p->kind == OFI_K_CREDIT || p->kind == OFI_K_PROBE)
        return;
    if (p->kind == OFI_K_BYE) {
        if (!x->bye[s] && x->pmix)
            ST_RELAXED(&x->byes, LD_RELAXED(&x->byes) + 1);
        x->bye[s] = 1;
        return;
    }
    if (PT_UNLIKELY(p->kind != OFI_K_DATA || p->cls >= PT_CLS_NR || p->len < PT_XPORT_HDR_BYTES ||
                    p->len > x->slot || len != OFI_PFX + p->len)) {
        x->bad_msgs++;
        pt_log_once(PT_LOG_WARN, "ofi: a malformed message from rank %u was dropped", s);
        return;
    }
    /* the base moves with every data message, dropped below or not */
    memcpy(x->rbase + ((size_t)s * 2 + p->cls) * 32, buf + OFI_PFX, PT_XPORT_HDR_BYTES);
    struct ofi_inq *q = &x->in[s * 2 + p->cls];
    char *slot = inq_next(x, q, s);
    if (PT_UNLIKELY(!slot))
        return;
    memcpy(slot, buf + OFI_PFX, p->len);
    if (PT_UNLIKELY(x->nreg) && p->cls == PT_CLS_RSP)
        reg_end(x, s, slot, p->rkey);
    if (PT_UNLIKELY(W_FLAGS(slot) & PT_XPORT_F_RNDV) && p->rkey &&
        (W_OP(slot) == PT_XPORT_W_PUT || W_OP(slot) == PT_XPORT_W_REPLY))
        rkey_add(x, s, slot, p->rkey);
    q->head++;
    ST_RELAXED(&x->queued, LD_RELAXED(&x->queued) + 1);
}

/* Read the CQ once (one batch). Returns completions handled. */
/* The step a read completion counts for, or NULL (its step was given up on). */
static inline struct ofi_step *read_step(struct pt_xport *x, const struct ofi_ctx *c)
{
    uint32_t slot = c->idx & 15u;
    if (slot >= OFI_STEPS)
        return NULL; /* OFI_FAULT_NOCOMPL's index */
    struct ofi_step *t = &x->st[slot];
    return c->idx == OFI_RD_IDX(slot, t->gen) ? t : NULL;
}

int pt_ofi_progress(struct pt_xport *x)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    ssize_t n = fi_cq_read(x->cq, e, OFI_CQ_BATCH);
    if (n == -FI_EAGAIN) {
        if (PT_UNLIKELY(x->pend_head != x->pend_tail))
            flush_pending(x);
        return 0;
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof err);
        if (fi_cq_readerr(x->cq, &err, 0) == 1) {
            struct ofi_ctx *c = err.op_context;
            if (c && c->kind == CTX_SEND) {
                struct ofi_sbuf *b = (struct ofi_sbuf *)c;
                send_failed(x, b->peer, pt_fi_strerror(err.err));
                sbuf_done(x, (uint32_t)(b - x->sb));
            } else if (c && c->kind == CTX_READ) {
                struct ofi_step *t = read_step(x, c);
                if (t) {
                    t->pending--;
                    t->err = err.err ? -err.err : -EIO;
                }
            } else if (c && c->kind == CTX_RECV) {
                struct ofi_rbuf *b = (struct ofi_rbuf *)c;
                if (err.flags & FI_MULTI_RECV)
                    b->posted = false;
                if (err.err != FI_ECANCELED)
                    pt_log_once(PT_LOG_WARN, "ofi: receive error: %s", pt_fi_strerror(err.err));
            } else if (!c) {
                /* an injected send's late error names no peer: its death is
                 * left to the probes and the next send's error */
                pt_log_once(PT_LOG_WARN, "ofi: a send without completion failed: %s",
                            pt_fi_strerror(err.err));
            }
        }
        return 1;
    }
    if (n < 0) {
        pt_log_once(PT_LOG_ERR, "ofi: fi_cq_read: %s", pt_fi_strerror((int)-n));
        return 0;
    }
    for (ssize_t k = 0; k < n; k++) {
        struct ofi_ctx *c = e[k].op_context;
        if (c->kind == CTX_SEND) {
            sbuf_done(x, (uint32_t)((struct ofi_sbuf *)c - x->sb));
        } else if (c->kind == CTX_RECV) {
            struct ofi_rbuf *b = (struct ofi_rbuf *)c;
            if (e[k].flags & FI_RECV)
                on_message(x, e[k].buf, e[k].len);
            if (e[k].flags & FI_MULTI_RECV)
                b->posted = false;
        } else if (c->kind == CTX_READ) {
            struct ofi_step *t = read_step(x, c);
            if (t)
                t->pending--; /* else a read of a step given up on (pull_lost) */
        }
    }
    for (uint32_t i = 0; i < OFI_NRBUF; i++)
        if (!x->rb[i].posted)
            (void)pt_ofi_post_rbuf(x, i);
    if (PT_UNLIKELY(x->pend_head != x->pend_tail))
        flush_pending(x);
    if (PT_UNLIKELY(x->nowe)) {
        x->nowe = 0;
        for (uint32_t p = 0; p < x->n; p++)
            if (x->owe_flag[p]) {
                send_credits(x, p);
                if (x->owe_flag[p])
                    x->nowe = 1;
            }
        backlog_note(x);
    }
    return (int)n;
}

/* ---- the ops --------------------------------------------------------------- */

static void *ofi_reserve(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (PT_UNLIKELY(peer >= x->n))
        return NULL;
    if (PT_UNLIKELY(x->dead[peer]))
        return NULL; /* not a stall (nothing armed): the command fails (peer_gone) */
    if (PT_UNLIKELY(x->cred[peer * 2 + cls] == 0)) {
        pt_ofi_progress(x); /* credit returns may be waiting in the CQ */
        if (x->cred[peer * 2 + cls] == 0) {
            /* CE-ARM: stalled on credits. Their return is a message from
             * the peer: it reaches a sleeper through the CQ's descriptor
             * (or this NI's next CQ read raises the epoch, CE-BUMP), so the
             * engine may sleep on the stall (stall_armed). */
            if (!LD_RELAXED(&x->arm))
                ST_RELEASE(&x->arm, (1ull << 32) | LD_RELAXED(&x->cred_epoch));
            x->stall_ctr++;
            return NULL;
        }
    }
    if (PT_UNLIKELY(!pt_ofi_peer_addr(x, peer)))
        return NULL;
    /* A reservation the engine did not commit (it may reserve, then decide
     * otherwise) is handed out again: one outstanding at a time (xport.h). */
    uint32_t i = x->pend_res;
    if (i == UINT32_MAX) {
        if (PT_UNLIKELY(x->sfree == UINT32_MAX)) {
            pt_ofi_progress(x); /* send completions return buffers */
            if (x->sfree == UINT32_MAX)
                return NULL;
        }
        i = sbuf_get(x);
    }
    x->sb[i].peer = peer;
    x->sb[i].c.idx = (uint32_t)cls;
    x->pend_res = i;
    return x->sb[i].mem + OFI_PFX;
}

/* Rendezvous descriptor in a message we send: register its memory for the
 * peer's reads; the key travels in the prefix. One piece only (the engine
 * streams memory of more pieces through the queues: rndv_iov_max): tcp's
 * fi_mr_regv registers the first piece of several and says nothing
 * (mr_iov_limit 1), and the peer's reads past it failed (an audit: every
 * rendezvous from an iovec MD). The registration is then exactly the range
 * the peer's table (rkey_add) holds. */
/* Whether every page of [p, p + len) can be read, asked of the kernel one
 * byte per page (process_vm_readv on ourselves: EFAULT, no signal). Over
 * libfabric the peer reads registered memory with fi_read, and the tcp
 * provider that serves the read from unreadable memory fails it inside
 * ("Bad address") and tells nobody: the puller's read never completed, and
 * the healthy peer waited for ever (an adversarial client: a send MD, or a
 * get's target MD, over PROT_NONE memory; shm's CMA pull says EFAULT and both
 * sides end PTL_NI_FAIL). Memory protected after this look is still the
 * client's to lose. One call per 1,024 pages. */
static bool readable(const void *p, size_t len)
{
    enum { PAGES = 1024 };
    static _Thread_local struct iovec rv[PAGES];
    static _Thread_local char sink[PAGES];
    const size_t pg = 4096;
    uintptr_t a = (uintptr_t)p, end = a + len;
    while (a < end) {
        uint32_t n = 0;
        for (; n < PAGES && a < end; n++) {
            rv[n] = (struct iovec){(void *)a, 1};
            a = (a & ~(uintptr_t)(pg - 1)) + pg;
        }
        struct iovec lv = {sink, n};
        if (process_vm_readv(getpid(), &lv, 1, rv, n, 0) != (ssize_t)n)
            return errno == ENOSYS || errno == EPERM; /* no answer: not refused */
    }
    return true;
}

static uint64_t reg_desc(struct pt_xport *x, uint32_t peer, const void *h)
{
    uint32_t niov = W_NIOV(h);
    if (niov != 1) {
        pt_log_once(PT_LOG_WARN, "ofi: a rendezvous descriptor of %u pieces: not registered "
                                 "(its transfer fails)", niov);
        return 0;
    }
    if (x->nreg == x->reg_cap) {
        pt_log_once(PT_LOG_WARN, "ofi: more than %u rendezvous descriptors in flight: the "
                                 "next ones fail (PTL_NI_FAIL)", x->reg_cap);
        return 0;
    }
    const struct ofi_wiov *w = W_IOV(h);
    struct iovec v[PT_XPORT_IOV_MAX];
    for (uint32_t i = 0; i < niov; i++) {
        v[i].iov_base = (void *)(uintptr_t)w[i].addr;
        v[i].iov_len = w[i].len;
    }
    for (uint32_t i = 0; i < niov; i++)
        if (!readable(v[i].iov_base, v[i].iov_len)) {
            pt_log_once(PT_LOG_WARN, "ofi: rendezvous memory at %p (%zu bytes) cannot be read: "
                                     "not registered (its transfer fails, PTL_NI_FAIL)",
                        v[i].iov_base, v[i].iov_len);
            return 0;
        }
    struct fid_mr *mr = NULL;
    int rc = fi_mr_regv(x->domain, v, niov, FI_REMOTE_READ, 0, ++x->next_key, 0, &mr, NULL);
    if (rc == 0 && (x->info->domain_attr->mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(mr, &x->ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(mr);
    }
    if (rc) {
        if (mr)
            fi_close(&mr->fid);
        pt_log_once(PT_LOG_WARN, "ofi: registering rendezvous memory: %s", pt_fi_strerror(-rc));
        return 0;
    }
    struct ofi_reg *r = &x->reg[x->nreg++];
    r->mr = mr;
    r->key = fi_mr_key(mr);
    r->peer = peer;
    r->op = W_OP(h);
    r->id = pt_xport_desc_id(h);
    return r->key;
}

/* We answer a descriptor of peer's (FIN for its put, RFIN for its reply):
 * forget its key, and return it for the answer to name (reg_end), or 0 when
 * none is left (evicted: rkey_add). */
static uint64_t rkey_end(struct pt_xport *x, uint32_t peer, const void *h)
{
    uint8_t op = W_OP(h) == PT_XPORT_W_FIN ? PT_XPORT_W_PUT : PT_XPORT_W_REPLY;
    uint64_t id = pt_xport_desc_id(h);
    uint32_t pick = UINT32_MAX;
    for (uint32_t k = 0; k < x->nrk; k++) {
        struct ofi_rkey *r = &x->rk[k];
        if (r->peer != peer || r->op != op || r->id != id)
            continue;
        /* Two replies with the same id: end one no pull step reads with
         * (steps are asynchronous: another op's may be in flight). */
        bool used = false;
        for (uint32_t t = 0; t < OFI_STEPS && !used; t++)
            used = x->st[t].busy && x->st[t].peer == peer && x->st[t].key == r->key;
        if (pick == UINT32_MAX || !used)
            pick = k;
        if (!used)
            break;
    }
    if (pick == UINT32_MAX)
        return 0;
    uint64_t key = x->rk[pick].key;
    x->rk[pick] = x->rk[--x->nrk];
    return key;
}

static void rkey_add(struct pt_xport *x, uint32_t peer, const void *h, uint64_t key)
{
    uint32_t niov = W_NIOV(h) < PT_XPORT_IOV_MAX ? W_NIOV(h) : PT_XPORT_IOV_MAX;
    const struct ofi_wiov *w = W_IOV(h);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < niov; i++) {
        if (w[i].addr < lo)
            lo = w[i].addr;
        if (w[i].addr + w[i].len > hi)
            hi = w[i].addr + w[i].len;
    }
    uint32_t k;
    if (x->nrk < x->reg_cap) {
        k = x->nrk++;
    } else { /* a peer that never gets its answer: the oldest goes */
        k = x->rk_next++ % x->reg_cap;
    }
    x->rk[k] = (struct ofi_rkey){lo, hi, key, peer, W_OP(h), pt_xport_desc_id(h)};
}

static void ofi_commit(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len)
{
    uint32_t i = x->pend_res;
    x->pend_res = UINT32_MAX;
    struct ofi_sbuf *b = &x->sb[i];
    struct ofi_pfx *p = (struct ofi_pfx *)b->mem;
    void *h = b->mem + OFI_PFX;
    if (len > x->slot)
        len = x->slot;
    *slot_ord(h) = x->sent[peer]++;
    p->magic = OFI_MAGIC;
    p->kind = OFI_K_DATA;
    p->cls = (uint16_t)cls;
    p->src = x->me;
    p->len = len;
    p->cred[0] = x->owe[peer * 2];
    p->cred[1] = x->owe[peer * 2 + 1];
    x->owe[peer * 2] = x->owe[peer * 2 + 1] = 0;
    p->rkey = 0;
    uint8_t op = W_OP(h);
    if (PT_UNLIKELY(W_FLAGS(h) & PT_XPORT_F_RNDV) && (op == PT_XPORT_W_PUT || op == PT_XPORT_W_REPLY))
        p->rkey = reg_desc(x, peer, h);
    else if (PT_UNLIKELY(x->nrk) && (op == PT_XPORT_W_FIN || op == PT_XPORT_W_RFIN))
        p->rkey = rkey_end(x, peer, h);
    x->cred[peer * 2 + cls]--;
    uint32_t *base = x->sbase + ((size_t)peer * 2 + cls) * 32;
    if (x->short_max && !p->rkey) {
        uint32_t mask = ofi_short_mask(h, base);
        uint32_t nw = pt_fb_pop(mask), plen = len - PT_XPORT_HDR_BYTES;
        uint32_t tot = (uint32_t)sizeof(struct ofi_spfx) + 4 * nw + plen;
        if (tot <= x->short_max) {
            /* Built at the buffer's start: tot <= OFI_PFX, so below h. */
            struct ofi_spfx sp = {OFI_SMAGIC, (uint8_t)cls, (uint8_t)nw, x->me, mask,
                                  *slot_ord(h), {p->cred[0], p->cred[1]}};
            char *o = b->mem + sizeof sp;
            const char *hw = h;
            for (uint32_t m = mask; m; m &= m - 1) {
                memcpy(o, hw + 4 * (uint32_t)__builtin_ctz(m), 4);
                o += 4;
            }
            memcpy(o, hw + PT_XPORT_HDR_BYTES, plen);
            memcpy(base, h, PT_XPORT_HDR_BYTES); /* before sp overwrites the prefix: h is past it */
            memcpy(b->mem, &sp, sizeof sp);
            send_or_queue(x, i, tot);
            return;
        }
    }
    memcpy(base, h, PT_XPORT_HDR_BYTES); /* every data message moves the base */
    send_or_queue(x, i, OFI_PFX + len);
}

/* As shm's order_pick (xport.h, "Order"). */
static int order_pick(struct pt_xport *x, uint32_t s, int c, uint32_t ord, void **slot_p)
{
    int o = c ^ 1;
    if (o == PT_CLS_REQ && x->rxo[s].req_waits)
        return c;
    struct ofi_inq *oq = &x->in[s * 2 + o];
    if (oq->head == oq->tail)
        return c;
    void *other = inq_slot(x, oq, oq->tail);
    if ((int32_t)(*slot_ord(other) - ord) > 0)
        return c;
    *slot_p = other;
    return o;
}

static void *scan(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    const uint32_t n = x->n;
    for (int c0 = PT_CLS_RSP; c0 >= PT_CLS_REQ; c0--) {
        uint32_t s = x->rr[c0];
        for (uint32_t i = 0; i < n; i++) {
            if (++s == n)
                s = 0;
            if (PT_UNLIKELY(x->nheld) && x->rxo[s].held)
                continue;
            int c = c0;
            struct ofi_inq *q = &x->in[s * 2 + c];
            if (q->head == q->tail)
                continue;
            void *slot = inq_slot(x, q, q->tail);
            uint32_t ord = *slot_ord(slot);
            if (PT_UNLIKELY(ord != x->rxo[s].next)) {
                c = order_pick(x, s, c, ord, &slot);
                q = &x->in[s * 2 + c];
                ord = *slot_ord(slot);
            }
            q->ord = ord;
            x->rr[c] = s;
            *peer_p = s;
            *cls_p = (enum pt_cls)c;
            return slot;
        }
    }
    return NULL;
}

/* A small control message (probe or bye) to peer: false when no buffer is
 * free or the peer cannot be named. */
bool pt_ofi_send_ctl(struct pt_xport *x, uint32_t peer, uint16_t kind, uint8_t what)
{
    uint32_t i = ctl_buf(x, peer, kind);
    if (i == UINT32_MAX)
        return false;
    x->sb[i].what = what;
    if (what == 2)
        x->byes_left++;
    send_or_queue(x, i, OFI_PFX);
    return true;
}

static void *ofi_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    if (PT_UNLIKELY(LD_RELAXED(&x->probe_due)))
        pt_ofi_probe_tick(x);
    if (LD_RELAXED(&x->queued)) {
        void *m = scan(x, peer_p, cls_p);
        if (m)
            return m;
    }
    /* The look after the one that read the message (the engine's next
     * peek in the same pass: drain_rx) does not read the CQ again. The
     * provider's progress there finds nothing new, and it costs a poll and a
     * read that drains the wait object's signal. Both would sit between a
     * ping-pong's recvfrom and its answer's sendto (bench/results-ofi.md).
     * The next pass reads again, or rx_pending's fi_trywait does before any
     * sleep. */
    if (x->cq_served) {
        x->cq_served = false;
        return NULL;
    }
    /* Again only after a full batch (more may be there). */
    int n = pt_ofi_progress(x);
    if (!n)
        return NULL;
    while (n == OFI_CQ_BATCH)
        n = pt_ofi_progress(x);
    void *m = scan(x, peer_p, cls_p);
    x->cq_served = m != NULL;
    return m;
}

static void ofi_release(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    struct ofi_inq *q = &x->in[peer * 2 + cls];
    x->rxo[peer].next = q->ord + 1;
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 0;
    q->tail++;
    ST_RELAXED(&x->queued, LD_RELAXED(&x->queued) - 1);
    if (++x->owe[peer * 2 + cls] >= x->qslots / 2 && !x->owe_flag[peer]) {
        x->owe_flag[peer] = true;
        send_credits(x, peer);
        if (x->owe_flag[peer])
            x->nowe = 1; /* no buffer now: progress() sends it */
        backlog_note(x);
    }
}

static void ofi_defer(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 1;
    if (!x->rxo[peer].held) {
        x->rxo[peer].held = 1;
        x->held_list[x->nheld++] = peer;
    }
}

static void ofi_unhold_all(struct pt_xport *x)
{
    while (x->nheld)
        x->rxo[x->held_list[--x->nheld]].held = 0;
}

/* Any thread: a message queued, or completions the provider has (fi_trywait
 * says it is not safe to sleep on the wait fd). False means: sleeping on
 * wait_fd is safe, the fd becomes readable for anything that comes later. */
static bool ofi_rx_pending(struct pt_xport *x)
{
    if (LD_RELAXED(&x->queued))
        return true;
    if (x->npidfd || x->ev_fd >= 0 || x->tfd >= 0) {
        /* A peer's pidfd fired: it exited. Still attached to the job region
         * (no orderly PtlNIFini) it is dead to us, as the launcher judges
         * (pt_shm_rank_exited), and the job has failed: work for the engine
         * (pt_nic_fail). Its pidfd leaves the set (it would stay readable). */
        struct epoll_event ev[8];
        int k = epoll_wait(x->epfd, ev, 8, 0);
        bool died = false;
        for (int i = 0; i < k; i++) {
            if (ev[i].data.u32 == UINT32_MAX - 2) {
                /* the probe timer: work for the engine (peek, probe_tick) */
                uint64_t v;
                ssize_t r = read(x->tfd, &v, sizeof v);
                (void)r;
                ST_RELAXED(&x->probe_due, 1);
                died = true;
                continue;
            }
            if (ev[i].data.u32 == UINT32_MAX - 1) {
                /* PMIx: the launcher reported a death; job_failed says so */
                uint64_t v;
                ssize_t r = read(x->ev_fd, &v, sizeof v);
                (void)r;
                died = true;
                continue;
            }
            uint32_t p = ev[i].data.u32;
            if (p >= x->n || x->pidfd[p] < 0)
                continue;
            (void)epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->pidfd[p], NULL);
            if (!x->pmix && pt_shm_rank_attached(x->shm, p)) {
                ST_RELAXED(&x->gone[p], 1);
                uint32_t z = 0;
                RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
                died = true;
            }
        }
        if (died)
            return true;
    }
    /* A send the provider refused (-FI_EAGAIN) or an owed credit message
     * leaves only when progress() retries it, and the wait descriptor need
     * not become readable first (the provider's contract: after
     * -FI_EAGAIN, progress and try again). An engine asleep on it while
     * the peer waits for that very send would wait for something unrelated
     * (the probe timer, the backstop) or, in host mode, for ever. So it is
     * work: the engine keeps polling until it is out, as a manual-progress
     * libfabric client must. Checked after the descriptors above, so that
     * a peer's death and the probe's period are still seen meanwhile. */
    if (LD_RELAXED(&x->backlog))
        return true;
    /* A provider whose fi_trywait neither looks at the CQ nor resets its wait
     * object (pt_ofi_trywait_blind) gets both done here, in this order:
     * first the wait set's signal is reset (fi_wait with no timeout only
     * does that here: it times out before it would poll), then a read of no
     * entries runs the provider's progress and answers -FI_EAGAIN only when
     * the CQ is empty. After that, a completion that any thread's progress
     * reports sets the signal again, and what is still on a socket keeps
     * the progress set readable: the descriptor wakes the sleeper either
     * way. Reset after the look, a completion reported in between would be
     * slept through; not reset at all, the descriptor stayed readable after
     * the first completion and the offload NIC thread spun through poll()
     * beside its application (`net`, bench/results-ofi.md, fifty-second
     * session). */
    if (x->trywait_blind) {
        (void)fi_wait(x->ws, 0);
        if (fi_cq_read(x->cq, NULL, 0) != -FI_EAGAIN)
            return true;
    }
    struct fid *f = &x->cq->fid;
    return fi_trywait(x->fabric, &f, 1) != FI_SUCCESS;
}

static int ofi_wait_fd(struct pt_xport *x) { return x->epfd; }
static int ofi_cq_fd(struct pt_xport *x) { return x->cq_fd; }

static bool ofi_peer_alive(struct pt_xport *x, uint32_t peer)
{
    if (peer < x->n && peer != x->me && (x->dead[peer] || LD_RELAXED(&x->gone[peer])))
        return false;
    /* A PMIx job's peer that said bye will answer nothing more: gone, as a
     * ptlrun job's rank that left in order and ended (the launcher's word). */
    if (x->pmix && peer < x->n && peer != x->me && x->bye[peer])
        return false;
    return x->so->peer_alive(x->shm, peer);
}

static struct pt_waitword *ofi_doorbell(struct pt_xport *x) { return x->so->doorbell(x->shm); }
static pid_t ofi_peer_ospid(struct pt_xport *x, uint32_t p) { return x->so->peer_ospid(x->shm, p); }
static int ofi_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    /* Guests (processes that join a running job) live in the job region's
     * queues only: over ofi the peers are the ranks (docs/ofi.md). */
    int r = x->so->rank_of(x->shm, nid, pid);
    return r >= 0 && (uint32_t)r < x->n ? r : -1;
}
static void ofi_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    x->so->id_of(x->shm, rank, nid_p, pid_p);
}
static uint32_t ofi_job_failed(struct pt_xport *x)
{
    uint32_t f = x->so->job_failed(x->shm);
    return f ? f : LD_RELAXED(&x->failed);
}
static uint32_t ofi_departures(struct pt_xport *x)
{
    return x->so->departures(x->shm) + LD_RELAXED(&x->byes);
}

/* The credit wait (xport.h; docs/waiting.md, "Over ofi"). */
static const uint32_t *ofi_stall_counter(struct pt_xport *x) { return &x->stall_ctr; }
/* Token holder: the stalls armed so far are forgotten (the engine retries). */
static void ofi_stall_clear(struct pt_xport *x) { ST_RELAXED(&x->arm, 0); }
/* Any thread, after its full fence (C-RECHECK): a stall was armed since
 * stall_clear and no credits came back (nor a peer died) since (CE-LOOK).
 * Credits that arrive later are a message in the CQ, which rx_pending's
 * trywait sees or whose completion wakes the sleeper on the descriptor. */
static bool ofi_stall_armed(struct pt_xport *x)
{
    uint64_t a = LD_ACQUIRE(&x->arm); /* pairs with CE-ARM's release */
    return a && (uint32_t)a == LD_ACQUIRE(&x->cred_epoch); /* pairs with CE-BUMP */
}
static const struct pt_xport_ops g_ofi_ops = {
    .name = "ofi",
    .tx_needs_peek = true, /* fi_cq_read (ofi_peek) drives the provider's sends */
    .pull_async = true,    /* fi_read: posted, completed in the CQ */
    .reserve = ofi_reserve,
    .commit = ofi_commit,
    .peek = ofi_peek,
    .release = ofi_release,
    .defer = ofi_defer,
    .unhold_all = ofi_unhold_all,
    .rx_pending = ofi_rx_pending,
    .pull = pt_ofi_pull,
    .peer_alive = ofi_peer_alive,
    .doorbell = ofi_doorbell,
    .peer_ospid = ofi_peer_ospid,
    .rank_of = ofi_rank_of,
    .id_of = ofi_id_of,
    .job_failed = ofi_job_failed,
    .departures = ofi_departures,
    .close = pt_ofi_close,
    .wait_fd = ofi_wait_fd,
    .cq_fd = ofi_cq_fd,
    .stall_counter = ofi_stall_counter,
    .stall_clear = ofi_stall_clear,
    .stall_armed = ofi_stall_armed,
    /* no rx_done: our receivers return credits by message as they release
     * (ofi_release, send_credits), nothing to ring after a receive pass */
};

const struct pt_xport_ops *pt_ofi_ops(void) { return &g_ofi_ops; }
