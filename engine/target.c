/*
 * target.c - the target side: an incoming request is translated (§6.2: portal,
 * ACL, match-list walk, MD acceptance), its data moved, its events posted and
 * its response sent; multi-step transfers continue in pt_ops_progress().
 * Engine-owned; token holder only. No malloc, syscalls (except the transport's
 * CMA pull), locks or logging on this path.
 */
#include "config.h"
#include "match.h"
#include "nic.h"
#include "pages.h"
#include "reduce.h"

#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

static void rsp_init(struct pt_nic *nic, struct pt_wire_hdr *r, uint8_t op,
                     const struct pt_wire_hdr *h)
{
    pt_wire_clear(r);
    r->op = op;
    r->src_nid = nic->id.nid;
    r->src_pid = nic->id.pid;
    r->uid = nic->uid;
    r->jid = nic->jid;
    r->pt_index = h->pt_index;
    r->match_bits = h->match_bits;
    r->init_md = h->init_md;
    r->remote_offset = h->remote_offset;
    r->local_offset = h->local_offset;
    r->rlength = h->rlength;
    r->hdr_data = h->hdr_data;
    r->link = h->link;
    r->req = h->req;
}

/* How a get's reply travels: our choice (pt_nic_choose_md), but by
 * rendezvous only when the initiator promised the reply an op
 * (PT_WF_REPLY_OP); else in copy mode, which needs no op of its. */
static enum pt_proto_kind reply_proto(struct pt_nic *nic, const struct pt_wire_hdr *h,
                                      uint32_t peer, uint64_t mlen, const struct pt_md *md,
                                      uint64_t off)
{
    enum pt_proto_kind pk = pt_nic_choose_md(nic, peer, mlen, md, off);
    return pk == PT_PROTO_RNDV && !(h->flags & PT_WF_REPLY_OP) ? PT_PROTO_COPY : pk;
}

/* §6.2 steps 2-4: may the request enter portal h->pt_index at all? */
static bool admitted(const struct pt_nic *nic, const struct pt_wire_hdr *h,
                     const struct pt_req *r)
{
    if (h->pt_index >= nic->npt || h->ac_index >= (uint32_t)nic->limits.max_ac_index + 1)
        return false;
    const struct pt_acl *a = &nic->acl[h->ac_index];
    return pt_acl_check(&a->id, a->uid, a->jid, a->pt_index, r) == PT_ACL_OK;
}

/* §6.2 steps 2-6. Returns the accepting MD or NULL (dropped). */
static struct pt_md *translate(struct pt_nic *nic, const struct pt_wire_hdr *h,
                               const struct pt_req *r, uint64_t *off_p, uint64_t *mlen_p)
{
    if (!admitted(nic, h, r))
        return NULL;
    for (struct pt_me *me = nic->portals[h->pt_index].head; me; me = me->next) {
        struct pt_md *md = me->md;
        if (!md || !pt_md_active(md))
            continue;
        struct pt_me_key k = {me->match_id, me->match_bits, me->ignore_bits};
        if (!pt_match_me(&k, r))
            continue;
        struct pt_md_view v = {md->umd.options, md->umd.threshold, md->inactive_by_use,
                               md->mem.len, md->local_off};
        if (pt_md_accept(&v, r, off_p, mlen_p))
            return md; /* first accepting MD wins; a rejecting one lets the walk go on */
    }
    return NULL;
}

/* dst[off, off + n) = dst OP src for a reduction put's acode (type << 8 |
 * op, checked valid), element by element: in place in a contiguous MD, else
 * through a small buffer (the MD may be an iovec list). n is a whole number
 * of elements; [off, off + n) lies in the MD (matched). */
void pt_atomic_apply(const struct pt_mem *dst, uint64_t off, const void *src, uint64_t n,
                     unsigned acode)
{
    unsigned op = acode & 0xffu, type = acode >> 8;
    if (dst->niov == 1 && off <= dst->len && n <= dst->len - off) {
        pt_atomic_combine(op, type, (char *)dst->iov[0].iov_base + off, src, (size_t)n);
        return;
    }
    unsigned char buf[4096]; /* a multiple of every element size */
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < sizeof buf ? (size_t)(n - done) : sizeof buf;
        pt_mem_read(dst, off + done, buf, k);
        pt_atomic_combine(op, type, buf, (const char *)src + done, k);
        pt_mem_write(dst, off + done, buf, k);
        done += k;
    }
}


/* One step of a rendezvous reduction put: pull the next part (at most the
 * scratch) and combine it into the MD where it belongs. A part that is not a
 * whole number of elements (a short read) fails the transfer. */
static long atomic_step(struct pt_nic *nic, struct pt_op *op, uint64_t seg)
{
    uint64_t at = op->rv.dst_off + op->rv.done;
    long n = pt_rndv_pull_flat(&op->rv, nic->xo, nic->x, nic->ascratch,
                               seg < PT_ATOMIC_SCRATCH ? seg : PT_ATOMIC_SCRATCH);
    if (n <= 0)
        return n;
    if (!pt_atomic_whole(op->acode, (uint64_t)n))
        return -EFAULT;
    pt_atomic_apply(&op->md->mem, at, nic->ascratch, (uint64_t)n, op->acode);
    return n;
}

/* A cooperative transfer whose own part is done waits for the initiator's
 * PDONE: no local work until it comes (has_work: nops_idle), so the engine
 * may sleep; the PDONE rings us like any message. */
static void coop_idle(struct pt_nic *nic, struct pt_op *op)
{
    if (op->idle || LD_RELAXED(&nic->failed))
        return;
    op->idle = 1;
    ST_RELAXED(&nic->nops_idle, LD_RELAXED(&nic->nops_idle) + 1);
}

/* ... and is work again (its PDONE came, its part was taken back, the op
 * ends, or the job failed). */
static void coop_busy(struct pt_nic *nic, struct pt_op *op)
{
    if (!op->idle)
        return;
    op->idle = 0;
    ST_RELAXED(&nic->nops_idle, LD_RELAXED(&nic->nops_idle) - 1);
}

/* The claim word of a cooperative transfer is ours again (its PDONE came,
 * we took the part back, or the initiator died): a later PUSH naming it
 * carries another OPEN value. */
static void coop_unclaim(struct pt_nic *nic, struct pt_op *op)
{
    if (op->claim == PT_COOP_NONE)
        return;
    nic->coop_free |= 1ull << op->claim;
    op->claim = PT_COOP_NONE;
}

bool pt_coop_close(struct pt_nic *nic, struct pt_op *op)
{
    if (op->claim == PT_COOP_NONE)
        return false;
    _Atomic uint32_t *word = nic->xo->coop_word(nic->x, nic->xi.rank, op->claim);
    uint32_t open = op->claim_open;
    return word && RMW_CAS(word, &open, op->claim_open | 2u);
}

/* The initiator's part is settled: it wrote `wrote` bytes from the part's
 * start (a PDONE), or none (we took the part back, or it died). Nobody
 * waits for anybody any more; the rest of the part is ours to pull (unless
 * the transfer failed). */
static void coop_settle(struct pt_nic *nic, struct pt_op *op, uint64_t wrote)
{
    coop_unclaim(nic, op);
    op->coop_wait = 0;
    op->tail_from = op->push_at + wrote;
    op->tail_to = op->push_at + op->push_len;
    coop_busy(nic, op);
}

/* Our own part is pulled (or failed) and no PDONE has come: take the
 * initiator's part back if it has not claimed it (shm_region.h, "Claim
 * words"). False: the initiator holds it; its PDONE is due. */
static bool coop_steal(struct pt_nic *nic, struct pt_op *op)
{
    if ((!nic->coop_takeback && !op->failed) || !pt_coop_close(nic, op))
        return false;
    coop_settle(nic, op, 0);
    ST_RELAXED(&nic->coop_stolen, LD_RELAXED(&nic->coop_stolen) + 1);
    return true;
}

/*
 * Cooperative rendezvous (wire.h, PUSH): the initiator offered to write part
 * of a large put itself. We keep the first half, page aligned in our MD, and
 * ask it for the rest in the response slot the request reserved: both copies
 * then run at once, on the two processes' cores (a 1 MiB put moved in 40 us
 * instead of 79 on the 2-core VM: bench/results-notes.md). The transfer ends
 * when our part is pulled and its PDONE has come (pt_rsp_pdone); what it did
 * not write we pull ourselves. No split when the part cannot be described in
 * one message.
 */
static void coop_split(struct pt_nic *nic, struct pt_op *op, struct pt_wire_hdr *rsp,
                       const struct pt_wire_hdr *h, uint32_t peer)
{
    uint64_t mlen = op->rv.total;
    uint64_t at = (mlen / 2) & ~(uint64_t)4095; /* whole pages each, mostly */
    if (at == 0)
        at = mlen / 2;
    struct iovec v[PT_MAX_IOV + 1];
    int n = pt_mem_slice(&op->md->mem, op->rv.dst_off + at, mlen - at, v, PT_MAX_IOV + 1);
    uint64_t described = 0;
    for (int i = 0; i < n; i++)
        described += v[i].iov_len;
    if (described != mlen - at || !nic->coop_free)
        return; /* more pieces than a message holds, or no claim word free: we pull it all */
    uint32_t k = (uint32_t)__builtin_ctzll(nic->coop_free);
    _Atomic uint32_t *word = nic->xo->coop_word(nic->x, nic->xi.rank, k);
    if (!word)
        return;
    nic->coop_free &= ~(1ull << k);
    op->claim = k;
    op->claim_open = ++nic->coop_gen[k] << 2;
    ST_RELAXED(word, op->claim_open); /* OPEN; the PUSH's R-TAIL publishes it */
    rsp_init(nic, rsp, PT_W_PUSH, h);
    rsp->tgt_offset = at;
    rsp->mlength = mlen - at;
    rsp->tgt_link = (uint32_t)(op - nic->ops_pool) + op->gen;
    rsp->tgt_md = k;                 /* the claim word, and */
    rsp->hdr_data = op->claim_open;  /* the value it holds while open */
    struct pt_wire_iov *w = pt_wire_payload(rsp);
    for (int i = 0; i < n; i++) {
        w[i].addr = (uint64_t)(uintptr_t)v[i].iov_base;
        w[i].len = v[i].iov_len;
    }
    rsp->niov = (uint16_t)n;
    rsp->flags = PT_WF_RNDV | (nic->coop_takeback ? PT_WF_COOP : 0); /* COOP: we take back */
    pt_xmit(nic, peer, PT_CLS_RSP, rsp);
    ST_RELAXED(&nic->coop_split, LD_RELAXED(&nic->coop_split) + 1);
    op->rv.total = at;
    op->coop_wait = 1;
    op->push_at = at;
    op->push_len = mlen - at;
}

/* The initiator's answer to our PUSH: it wrote `mlength` bytes of the part
 * from its start (all, some before a failure, or none). What it did not
 * write becomes ours to pull. A PDONE that names no transfer of that peer
 * waiting for one is stale or forged: dropped. */
int pt_rsp_pdone(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_op *op = &nic->ops_pool[h->tgt_link & (nic->ops_n - 1)];
    if ((uint32_t)(op - nic->ops_pool) + op->gen != h->tgt_link || op->kind != PT_OP_RNDV_PUT ||
        !op->coop_wait || op->rsp_peer != peer)
        return PT_OK;
    uint64_t wrote = h->mlength < op->push_len ? h->mlength : op->push_len;
    if (wrote < op->push_len)
        ST_RELAXED(&nic->coop_short, LD_RELAXED(&nic->coop_short) + 1);
    coop_settle(nic, op, wrote); /* work again: pull the rest, or finish */
    return PT_OK;
}

static void drop(struct pt_nic *nic, const struct pt_wire_hdr *h)
{
    PT_TRACE(nic, PT_TR_DROP, PT_TV_PTL(h->pt_index, h->rlength));
    nic->sr[PTL_SR_DROP_COUNT]++;
    nic->sr[PTL_SR_DROP_LENGTH] += h->rlength;
}

/* A target-side event from a request header (or an RFIN, which echoes the
 * request's fields): who, where, how much. */
static void target_event(ptl_event_t *ev, const struct pt_wire_hdr *h, uint64_t mlen,
                         uint64_t off, uint64_t hdr_data)
{
    pt_ev_clear(ev);
    ev->initiator.nid = h->src_nid;
    ev->initiator.pid = h->src_pid;
    ev->uid = h->uid;
    ev->jid = h->jid;
    ev->pt_index = h->pt_index;
    ev->match_bits = h->match_bits;
    ev->rlength = h->rlength;
    ev->mlength = mlen;
    ev->offset = off;
    ev->hdr_data = hdr_data;
    ev->ni_fail_type = PTL_NI_OK;
}

/*
 * A request that matches nothing. Portals drops it, and we do, but not at
 * once: the NIC thread handles a message the moment it arrives, often before
 * the target's application has attached the entry it was meant for (two
 * processes started together; REF's partner_handshake then resends after a
 * second, and two such timers racing each other left a side waiting forever
 * for an ACK: ringtest, locktest, put_bw and put_pp hung in offload mode).
 * Host matching never dropped those: the message waited in the queue until
 * the target called in, and its PtlMEAttach ran first. So an unmatched
 * request is deferred (AGAIN: it stays queued, its sender's later messages
 * behind it) and matched again for up to PTL_NOMATCH_WAIT_US (20 ms)
 * before it is dropped. One timestamp per sender: only the
 * sender's oldest request can wait. A request that matches clears it. While
 * it waits it is parked: no work for the engine's sleepers until a command
 * runs that can change what it matches, or its wait ends (pt_nic_park_note;
 * docs/waiting.md, "Parked for a match").
 *
 * 20 ms of the clock are not 20 ms of the application's: on a loaded machine
 * (six 2-rank jobs on 2 cores, fifty-eighth session) a rank between
 * PtlNIInit and its PtlMEAttach went unscheduled, or ran a few slices, for
 * longer, and the peer's first put was dropped (mp_forkuse hung in 12 of 90
 * runs). So in offload mode the wait counts the application's CPU time too
 * (the process's, less the NIC thread's): past PTL_NOMATCH_WAIT_US of the
 * clock the request is dropped once the application has also had that much
 * CPU time since it came, or a thread of it sleeps in an EQ wait (it waits
 * for events, not setting up), unless an entry that matches it waits for
 * its MD; in any case once PTL_NOMATCH_IDLE_US (1 s) has passed
 * (nomatch_setting_up). An application that runs and attaches nothing, or
 * waits for its events, loses the request after 20 ms, as before; one the
 * machine has not run yet gets its 20 ms. Host matching runs the engine
 * inside the application's calls, which drain their commands first, and
 * needs none of this.
 */
/* nomatch_since[sender] after a wait ended: this bit, a 31-bit key of the
 * request dropped (its portal and match bits), and match_gen then. */
#define NOMATCH_ENDED (1ull << 63)

static uint64_t nomatch_key(const struct pt_wire_hdr *h)
{
    uint64_t k = (h->match_bits ^ (h->match_bits >> 31) ^ ((uint64_t)h->pt_index << 17)) *
                 0x9e3779b97f4a7c15ull;
    return (k >> 33) << 32; /* bits 32..62 */
}

/* CPU time of the application's threads: the process's less the NIC
 * thread's (ns; two system calls, only while a request waits for its entry). */
static uint64_t nomatch_app_cpu(struct pt_nic *nic)
{
    struct timespec p, t;
    clockid_t cid;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p) != 0)
        return 0;
    uint64_t ns = (uint64_t)p.tv_sec * 1000000000u + (uint64_t)p.tv_nsec;
    if (pthread_getcpuclockid(nic->thread, &cid) == 0 && clock_gettime(cid, &t) == 0) {
        uint64_t n = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
        ns = ns > n ? ns - n : 0;
    }
    return ns;
}

/* Past PTL_NOMATCH_WAIT_US: may the application still be attaching the
 * entry? Yes while an entry that matches the request waits for its MD (an
 * entry is two calls, PtlMEAttach and PtlMDAttach) and the ACL admits the
 * request (a refused one never matches, whatever is attached: it waited
 * up to PTL_NOMATCH_IDLE_US before, mp_nomatch acl), and while the
 * application has had less than w of CPU time since the request came,
 * unless a thread of it sleeps in an EQ wait (it waits for events, not
 * setting up: a thread asleep until its own command is done would not do,
 * it may be the attach). Cold path. */
static bool nomatch_setting_up(struct pt_nic *nic, const struct pt_wire_hdr *h,
                               const struct pt_req *r, uint64_t cpu0, uint64_t w)
{
    if (admitted(nic, h, r)) /* an entry the ACL keeps it from is no reason to wait */
        for (const struct pt_me *me = nic->portals[h->pt_index].head; me; me = me->next) {
            struct pt_me_key k = {me->match_id, me->match_bits, me->ignore_bits};
            if (!me->md && pt_match_me(&k, r))
                return true;
        }
    /* signed: the two clocks are read apart, so the difference can step
     * back by a few microseconds (read as "ran 2^64 ns", it dropped) */
    return !LD_RELAXED(&nic->w.eq_sleepers) && (int64_t)(nomatch_app_cpu(nic) - cpu0) < (int64_t)w;
}

static bool nomatch_expired(struct pt_nic *nic, uint32_t peer, const struct pt_wire_hdr *h,
                            const struct pt_req *r, uint64_t *until)
{
    uint64_t *since = &nic->nomatch_since[peer];
    if (!nic->nomatch_ns)
        return true;
    uint64_t ended = NOMATCH_ENDED | nomatch_key(h) | LD_RELAXED(&nic->match_gen);
    /* The sender's wait for this entry ended and no command that can change
     * what its requests match has run since: the next request for the same
     * portal and match bits (queued behind the dropped one, or sent in the
     * same burst) has nothing new to wait for, and is dropped at once. Each
     * waited PTL_NOMATCH_WAIT_US in turn before (an adversarial client: 300
     * puts into an unlinked entry held their sender 6 s; mp_nomatch burst).
     * A request for another entry, or one after an attach, waits as the
     * first did: what is sent for an entry attached late still finds it. */
    if (*since & NOMATCH_ENDED) {
        if (*since == ended)
            return true;
        *since = 0;
    }
    const uint64_t w = nic->nomatch_ns;
    /* ext: offload mode with its NIC thread (the engine may run on an API
     * thread too; PtlNIFini clears has_thread once the thread is joined) */
    const bool ext = nic->has_thread && nic->nomatch_idle_ns > w;
    uint64_t now = pt_now_ns();
    if (!*since) { /* the wait begins (ext only goes from true to false) */
        *since = now;
        nic->nomatch_cpu0[peer] = ext ? nomatch_app_cpu(nic) : 0;
    }
    uint64_t el = now - *since;
    bool wait_on = el < w;
    if (!wait_on && ext && el < nic->nomatch_idle_ns)
        wait_on = nomatch_setting_up(nic, h, r, nic->nomatch_cpu0[peer], w);
    if (wait_on) {
        uint64_t next = el < w ? *since + w : now + w / 2, cap = *since + nic->nomatch_idle_ns;
        *until = el < w || next < cap ? next : cap;
        /* No sched_yield here (the NIC thread had one "to the application
         * that may be attaching", from when a waiting request was retried
         * on every poll). A parked request is looked at again only after a
         * command that can change what it matches, or when its wait ends,
         * and the NIC thread sleeps meanwhile: the yield came after each
         * command run for the application, with the engine held, and beside
         * other CPU-bound processes gave the core away for a slice each
         * time (mp_coll_lists_loaded; docs/waiting.md, "No yield while
         * parked"). */
        return false;
    }
    *since = ended;
    return true;
}

/* ---- replies awaiting their RFIN (struct pt_rfw, nic.h) -----------------
 *
 * A rendezvous GET reply leaves the target's MD busy (`pending`) and one
 * GET_END owed (pt_ev_owe) until the initiator's RFIN says it pulled. Before
 * the thirty-eighth session nothing per reply was kept: an initiator that
 * died between the reply and its RFIN left the MD answering PtlMDUnlink with
 * PTL_MD_IN_USE for ever, and the END never came. Each reply now has a
 * record on its initiator's list; the RFIN removes it, and fail_dead_peers
 * (nic.c) fails the dead initiator's: GET_END with PTL_NI_PEER_DIED, the MD
 * no longer busy. Records come from a table as large as the request table,
 * threaded PT_LAZY_CHUNK at a time. When none is free the get waits for one
 * (pt_req_handle: AGAIN before any side effect; an RFIN or a death frees
 * one). Until the sixtieth session its reply went untracked instead, and an
 * initiator that died before pulling it left the MD busy and its GET_END owed
 * to the EQ for ever: every PtlMDUpdate with that test EQ answered
 * PTL_MD_NO_UPDATE, and the EQ's room was one smaller, for the life of the NI
 * (mp_rfin_died untracked). Engine only. */
static void rfw_grow(struct pt_nic *nic)
{
    uint32_t end = nic->rfw_hwm + PT_LAZY_CHUNK < nic->rfw_n ? nic->rfw_hwm + PT_LAZY_CHUNK
                                                              : nic->rfw_n;
    for (uint32_t i = end; i-- > nic->rfw_hwm;) {
        nic->rfws[i].next = nic->rfw_free;
        nic->rfw_free = i + 1;
    }
    nic->rfw_hwm = end;
}

int pt_rfw_init(struct pt_nic *nic, uint32_t n)
{
    nic->rfws = pt_pages_zalloc(n * sizeof *nic->rfws); /* rfw_head: the peer state */
    if (!nic->rfws)
        return PT_E_NOSPACE;
    nic->rfw_n = n;
    nic->rfw_free = 0;
    nic->rfw_hwm = 0;
    rfw_grow(nic);
    return PT_OK;
}

void pt_rfw_fini(struct pt_nic *nic)
{
    pt_pages_free(nic->rfws, nic->rfw_n * sizeof *nic->rfws);
    nic->rfws = NULL;
}

/* A record is free, or can be threaded (rfw_add then finds one). */
static inline bool rfw_avail(const struct pt_nic *nic)
{
    return nic->rfw_free || nic->rfw_hwm < nic->rfw_n;
}

/* The caller saw rfw_avail. */
static void rfw_add(struct pt_nic *nic, uint32_t peer, uint32_t md, const ptl_event_t *ev)
{
    if (!nic->rfw_free)
        rfw_grow(nic);
    uint32_t s = nic->rfw_free;
    struct pt_rfw *r = &nic->rfws[s - 1];
    nic->rfw_free = r->next;
    r->md = md;
    r->peer = peer;
    r->ev = *ev;
    r->prev = 0;
    r->next = nic->rfw_head[peer];
    if (r->next)
        nic->rfws[r->next - 1].prev = s;
    nic->rfw_head[peer] = s;
    nic->rfw_live++;
}

static void rfw_remove(struct pt_nic *nic, struct pt_rfw *r)
{
    uint32_t s = (uint32_t)(r - nic->rfws) + 1;
    if (r->prev)
        nic->rfws[r->prev - 1].next = r->next;
    else
        nic->rfw_head[r->peer] = r->next;
    if (r->next)
        nic->rfws[r->next - 1].prev = r->prev;
    r->next = nic->rfw_free;
    nic->rfw_free = s;
    nic->rfw_live--;
}

/* The RFIN for MD md from peer came: its record (any of several alike) goes. */
static void rfw_answered(struct pt_nic *nic, uint32_t peer, uint32_t md, uint32_t link,
                         uint64_t off)
{
    if (peer >= nic->xi.nprocs)
        return;
    for (uint32_t s = nic->rfw_head[peer]; s; s = nic->rfws[s - 1].next) {
        struct pt_rfw *r = &nic->rfws[s - 1];
        if (r->md == md && (uint32_t)r->ev.link == link && r->ev.offset == off) {
            rfw_remove(nic, r);
            return;
        }
    }
}

void pt_rfw_fail_peer(struct pt_nic *nic, uint32_t peer)
{
    uint32_t s = nic->rfw_head[peer];
    if (!s)
        return;
    while (nic->rfws[s - 1].next) /* newest first: end them oldest first */
        s = nic->rfws[s - 1].next;
    while (s) {
        struct pt_rfw *r = &nic->rfws[s - 1];
        s = r->prev;
        struct pt_md *md = pt_md_lookup(nic, r->md);
        ptl_event_t ev = r->ev;
        rfw_remove(nic, r);
        if (!md || !md->pending)
            continue;
        md->pending--;
        ev.ni_fail_type = PTL_NI_PEER_DIED;
        pt_ev_post_owed(nic, md, PTL_EVENT_GET_END, &ev, true); /* owed at the GET */
        pt_md_check_unlink(nic, md, &ev);
    }
}

int pt_req_handle(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    PT_TM_BEGIN(t);
    bool rndv = h->flags & PT_WF_RNDV;
    bool copy = h->flags & PT_WF_COPY;
    bool ack = h->flags & PT_WF_ACK_REQ;
    /* A GETPUT carries all its data inline and never more than max_getput_md:
     * anything else is forged, and would make the reply overrun its slot. */
    bool bad_getput = h->op == PT_W_GETPUT &&
                      (rndv || copy || h->rlength != h->inline_len ||
                       h->rlength > (uint64_t)nic->limits.max_getput_md);
    /* A reduction put names a known operation on a type it applies to; an
     * eager one carries all its bytes inline. */
    bool atomic = h->flags & PT_WF_ATOMIC;
    if (PT_UNLIKELY(atomic) &&
        (h->op != PT_W_PUT || (!rndv && !copy && h->rlength != h->inline_len) ||
         (h->tgt_link >> 16) || !pt_atomic_valid(h->tgt_link & 0xffu, h->tgt_link >> 8)))
        bad_getput = true;
    if (bad_getput) { /* lengths were bounded at dispatch entry (nic.c) */
        nic->drops_bad_header++;
        drop(nic, h);
        return PT_OK; /* no response: we cannot trust what it asks for */
    }
    /* Every response this request may need is reserved before any side effect,
     * so a full response queue leaves the request untouched for a later poll. */
    struct pt_wire_hdr *rsp = NULL;
    if (h->op != PT_W_PUT || ack || rndv) {
        rsp = nic->xo->reserve(nic->x, peer, PT_CLS_RSP);
        if (!rsp)
            return PT_E_AGAIN;
    }
    struct pt_req r = {h->op, {h->src_nid, h->src_pid}, h->uid, h->jid, h->pt_index,
                       h->match_bits, h->rlength, h->remote_offset};
    PT_TM_STAGE(&nic->tm, t, PT_ST_HEADER);
    uint64_t off = 0, mlen = 0;
    struct pt_md *md = translate(nic, h, &r, &off, &mlen);
    PT_TM_STAGE(&nic->tm, t, PT_ST_MATCH);
    /* A copy-mode reply streams from an op of ours (a rendezvous reply does
     * not: the initiator pulls, with an op promised to it, ops_promised;
     * waiting for one here while it waits for ours, both sides' replies
     * could wait for ever). */
    /* A rendezvous reply needs a record that waits for its RFIN (rfw_add):
     * with every record taken the get waits for an RFIN (a response: it
     * passes this request) or a death to free one. */
    enum pt_proto_kind rpk =
        h->op == PT_W_GET && md ? reply_proto(nic, h, peer, mlen, md, off) : PT_PROTO_EAGER;
    if ((rpk == PT_PROTO_COPY && (!pt_ops_avail(nic) || nic->copy_busy[PT_CLS_RSP][peer])) ||
        (rpk == PT_PROTO_RNDV && !rfw_avail(nic)))
        return PT_E_AGAIN; /* no side effect yet: retried on a later poll */
    /* A rendezvous put needs an op for its pull: with PTL_MAX_OPS of them in
     * flight it waits (its sender's later responses pass it, xport.h) rather
     * than fail (an adversarial client: 3,000 64 KiB puts to one target,
     * up to 3,542 failed events). */
    if (h->op == PT_W_PUT && rndv && md && !pt_ops_avail(nic))
        return PT_E_AGAIN; /* no side effect yet: retried once an op is free */
    uint64_t until;
    if (!md && PT_UNLIKELY(!nomatch_expired(nic, peer, h, &r, &until))) {
        /* no side effect yet: matched again on a later poll, after a command
         * that can change what it matches or when its wait ends; till then
         * it is no work for a sleeper (docs/waiting.md, "Parked for a match") */
        pt_nic_park_note(nic, peer, until);
        return PT_E_AGAIN;
    }
    if (md && PT_UNLIKELY(nic->nomatch_since[peer]))
        nic->nomatch_since[peer] = 0;
    if (!md) {
        drop(nic, h);
        if (copy && h->rlength > h->inline_len) /* swallow the fragments that follow */
            pt_copyin_begin(nic, PT_CLS_REQ, peer, h->rlength, h->inline_len);
        if (h->op != PT_W_PUT) {
            rsp_init(nic, rsp, PT_W_NACK, h);
            pt_xmit(nic, peer, PT_CLS_RSP, rsp);
        } else if (rndv) {
            rsp_init(nic, rsp, PT_W_FIN, h);
            rsp->flags = PT_WF_DROPPED;
            pt_xmit(nic, peer, PT_CLS_RSP, rsp);
        } else if (ack) { /* no ACK will come: release the initiator's record */
            rsp_init(nic, rsp, PT_W_NACK, h);
            pt_xmit(nic, peer, PT_CLS_RSP, rsp);
        }
        return PT_OK;
    }

    PT_TRACE(nic, PT_TR_MATCH, PT_TV_PTL(h->pt_index, mlen));
    if (PT_UNLIKELY(!pt_ev_room(nic, md)))
        return PT_E_AGAIN; /* its events would overwrite unread ones: event.c */

    /* Housekeeping: threshold, local offset, max_size (§6.3-§6.5). */
    pt_md_consume(nic, md);
    if (!(md->umd.options & PTL_MD_MANAGE_REMOTE))
        md->local_off = off + mlen;
    if ((md->umd.options & PTL_MD_MAX_SIZE) &&
        pt_md_max_size_exhausted(md->umd.options, md->mem.len, md->local_off, md->umd.max_size)) {
        md->inactive_by_use = 1;
        md->unlink_due = md->unlink_op == PTL_UNLINK;
    }
    nic->sr[PTL_SR_RECV_COUNT]++;
    nic->sr[PTL_SR_RECV_LENGTH] += mlen;

    ptl_event_t ev;
    /* getput: the sender's hdr_data (§6.8 rec.) */
    target_event(&ev, h, mlen, off, h->op == PT_W_GET ? 0 : h->hdr_data);
    PT_TM_STAGE(&nic->tm, t, PT_ST_HOUSEKEEP);

    switch (h->op) {
    case PT_W_PUT:
        pt_ev_post(nic, md, PTL_EVENT_PUT_START, &ev);
        if (!rndv) {
            PT_TM_STAGE(&nic->tm, t, PT_ST_EVENT);
            bool afail = false;
            if (PT_UNLIKELY(atomic)) { /* eager, or copy mode's inline part: combined */
                afail = !pt_atomic_whole(h->tgt_link, mlen);
                if (!afail)
                    pt_atomic_apply(&md->mem, off, pt_wire_payload(h),
                                    mlen < h->inline_len ? mlen : h->inline_len, h->tgt_link);
            } else
                pt_eager_deliver(h, &md->mem, off, mlen);
            PT_TM_STAGE(&nic->tm, t, PT_ST_COPY);
            if (copy && h->rlength > h->inline_len) {
                /* Copy mode: the rest follows as DATA fragments (copy.c). */
                struct pt_copyin *st =
                    pt_copyin_begin(nic, PT_CLS_REQ, peer, h->rlength, h->inline_len);
                st->md = md;
                st->off = off;
                st->mlen = mlen;
                st->atomic = atomic;
                st->afail = afail;
                st->acode = (uint16_t)h->tgt_link;
                st->ev = ev;
                st->owes_end = pt_ev_owe(nic, md, PTL_EVENT_PUT_END);
                if (ack && !(md->umd.options & PTL_MD_ACK_DISABLE)) {
                    st->ack = 1;
                    rsp_init(nic, &st->ack_hdr, PT_W_ACK, h);
                    st->ack_hdr.mlength = mlen;
                    st->ack_hdr.tgt_offset = off;
                } else if (ack) { /* no ACK will come: release the initiator's record */
                    rsp_init(nic, rsp, PT_W_NACK, h);
                    pt_xmit(nic, peer, PT_CLS_RSP, rsp);
                }
                md->pending++;
                return PT_OK;
            }
            if (PT_UNLIKELY(afail))
                ev.ni_fail_type = PTL_NI_FAIL;
            pt_ev_post(nic, md, PTL_EVENT_PUT_END, &ev);
            PT_TM_STAGE(&nic->tm, t, PT_ST_EVENT);
            if (ack && !(md->umd.options & PTL_MD_ACK_DISABLE)) {
                rsp_init(nic, rsp, PT_W_ACK, h);
                rsp->mlength = afail ? 0 : mlen;
                rsp->tgt_offset = off;
                if (PT_UNLIKELY(afail))
                    rsp->flags = PT_WF_FAIL;
                pt_xmit(nic, peer, PT_CLS_RSP, rsp);
            } else if (ack) { /* the MD refuses ACKs: release the initiator's record */
                rsp_init(nic, rsp, PT_W_NACK, h);
                pt_xmit(nic, peer, PT_CLS_RSP, rsp);
            }
            pt_md_check_unlink(nic, md, &ev);
            PT_TM_STAGE(&nic->tm, t, PT_ST_UNLINK);
            return PT_OK;
        }
        {
            struct pt_op *op = pt_op_get(nic);
            if (!op) { /* cannot track the pull: fail it, nothing delivered */
                ev.ni_fail_type = PTL_NI_FAIL;
                pt_ev_post(nic, md, PTL_EVENT_PUT_END, &ev);
                rsp_init(nic, rsp, PT_W_FIN, h);
                rsp->flags = PT_WF_FAIL;
                if (ack && !(md->umd.options & PTL_MD_ACK_DISABLE))
                    rsp->flags |= PT_WF_ACK;
                rsp->tgt_offset = off;
                pt_xmit(nic, peer, PT_CLS_RSP, rsp);
                pt_md_check_unlink(nic, md, &ev);
                return PT_OK;
            }
            op->kind = PT_OP_RNDV_PUT;
            op->md = md;
            pt_rndv_init(&op->rv, h, peer, mlen, off);
            op->ev = ev;
            rsp_init(nic, &op->rsp, PT_W_FIN, h);
            op->rsp.mlength = mlen;
            op->rsp.tgt_offset = off;
            if (ack && !(md->umd.options & PTL_MD_ACK_DISABLE))
                op->rsp.flags |= PT_WF_ACK;
            op->rsp_peer = peer;
            op->post_end = 1;
            op->owes_end = pt_ev_owe(nic, md, PTL_EVENT_PUT_END);
            op->atomic = atomic;
            op->acode = (uint16_t)h->tgt_link;
            if (atomic && !pt_atomic_whole(h->tgt_link, mlen))
                op->failed = 1; /* truncated: nothing is written, END and FIN fail */
            PT_TRACE(nic, PT_TR_XFER_START, PT_TV_XFER(peer, mlen));
            md->pending++;
            if ((h->flags & PT_WF_COOP) && nic->coop_min && mlen >= nic->coop_min && !atomic &&
                pt_nic_push_ok(nic, peer))
                coop_split(nic, op, rsp, h, peer);
            return PT_OK;
        }
    case PT_W_GET: {
        pt_ev_post(nic, md, PTL_EVENT_GET_START, &ev);
        rsp_init(nic, rsp, PT_W_REPLY, h);
        rsp->mlength = mlen;
        rsp->tgt_offset = off;
        enum pt_proto_kind pk = rpk; /* reply_proto, above */
        if (pk == PT_PROTO_EAGER) {
            pt_proto_table[PT_PROTO_EAGER]->pack(rsp, &md->mem, off, mlen);
            pt_xmit(nic, peer, PT_CLS_RSP, rsp);
            pt_ev_post(nic, md, PTL_EVENT_GET_END, &ev); /* the reply has been sent */
            pt_md_check_unlink(nic, md, &ev);
            return PT_OK;
        }
        if (pk == PT_PROTO_COPY) {
            uint64_t first = mlen < pt_slot_room(nic) ? mlen : pt_slot_room(nic);
            pt_proto_table[PT_PROTO_COPY]->pack(rsp, &md->mem, off, first);
            pt_xmit(nic, peer, PT_CLS_RSP, rsp);
            pt_copy_send_start(nic, md, off + first, mlen - first, peer, PT_CLS_RSP,
                               PTL_EVENT_GET_END, &ev);
            return PT_OK;
        }
        /* Rendezvous reply: the initiator pulls from this MD, then sends RFIN.
         * The RFIN echoes this get's event fields (rsp_init copied them; the
         * START link rides in tgt_link), from which pt_rsp_rfin rebuilds the
         * END. A record of the reply waits for it too (rfw_add): the END
         * an initiator that dies first never sends. */
        rsp->tgt_md = pt_md_handle(nic, md);
        rsp->tgt_link = (uint32_t)ev.link;
        pt_proto_table[PT_PROTO_RNDV]->pack(rsp, &md->mem, off, mlen);
        (void)pt_ev_owe(nic, md, PTL_EVENT_GET_END); /* paid at the RFIN */
        md->pending++;
        rfw_add(nic, peer, rsp->tgt_md, &ev);
        pt_xmit(nic, peer, PT_CLS_RSP, rsp);
        return PT_OK;
    }
    case PT_W_GETPUT: {
        /* Atomic swap: nothing else touches this MD between the read and the
         * write, because only the token holder runs the engine (§6.13). */
        pt_ev_post(nic, md, PTL_EVENT_GETPUT_START, &ev);
        rsp_init(nic, rsp, PT_W_REPLY, h);
        rsp->mlength = mlen;
        rsp->tgt_offset = off;
        pt_proto_table[PT_PROTO_EAGER]->pack(rsp, &md->mem, off, mlen);
        pt_eager_deliver(h, &md->mem, off, mlen);
        pt_xmit(nic, peer, PT_CLS_RSP, rsp);
        pt_ev_post(nic, md, PTL_EVENT_GETPUT_END, &ev);
        pt_md_check_unlink(nic, md, &ev);
        return PT_OK;
    }
    default:
        nic->drops_bad_header++;
        drop(nic, h);
        return PT_OK;
    }
}

/* RFIN: the initiator has pulled a rendezvous reply out of our MD. Its
 * GET_END is rebuilt from the RFIN, which echoes the fields of the REPLY it
 * answers (initiator.c, rfin_fill), the way FIN rebuilds SEND_END: the same
 * event GET_START carried, whichever of the gets outstanding on this MD it is. */
int pt_rsp_rfin(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_md *md = pt_md_lookup(nic, h->tgt_md);
    if (!md)
        return PT_OK;
    rfw_answered(nic, peer, h->tgt_md, h->tgt_link, h->tgt_offset);
    if (!md->pending)
        return PT_OK;
    md->pending--;
    ptl_event_t ev;
    target_event(&ev, h, h->mlength, h->tgt_offset, 0 /* as GET_START */);
    ev.link = h->tgt_link;
    if (h->flags & PT_WF_FAIL)
        ev.ni_fail_type = PTL_NI_FAIL; /* the initiator's pull failed */
    pt_ev_post_owed(nic, md, PTL_EVENT_GET_END, &ev, true); /* owed at the GET */
    pt_md_check_unlink(nic, md, &ev);
    return PT_OK;
}

/* ---- multi-step operations ---------------------------------------------- */

void pt_ops_grow(struct pt_nic *nic)
{
    uint32_t end = nic->ops_hwm + PT_LAZY_CHUNK < nic->ops_n ? nic->ops_hwm + PT_LAZY_CHUNK
                                                              : nic->ops_n;
    for (uint32_t i = end; i-- > nic->ops_hwm;) {
        if (pt_wrap_n()) /* PTL_TEST_WRAP: 4 lives before idx + gen wraps */
            nic->ops_pool[i].gen = 0u - 4u * nic->ops_n;
        nic->ops_pool[i].next = nic->ops_free;
        nic->ops_free = &nic->ops_pool[i];
    }
    nic->ops_hwm = end;
}

struct pt_op *pt_op_get(struct pt_nic *nic)
{
    struct pt_op *op = nic->ops_free;
    if (!op)
        return NULL;
    nic->ops_free = op->next;
    if (!nic->ops_free && nic->ops_hwm < nic->ops_n)
        pt_ops_grow(nic);
    uint32_t gen = op->gen + nic->ops_n; /* a new life: old PDONEs miss it */
    memset(op, 0, sizeof *op);
    op->gen = gen;
    op->claim = PT_COOP_NONE;
    op->next = nic->ops;
    nic->ops = op;
    ST_RELAXED(&nic->nops, LD_RELAXED(&nic->nops) + 1);
    return op;
}

void pt_op_put(struct pt_nic *nic, struct pt_op *op)
{
    coop_busy(nic, op);
    if (op->kind == PT_OP_RNDV_REPLY)
        nic->ops_reply--; /* its budget (nic.h ops_promised) */
    for (struct pt_op **pp = &nic->ops; *pp; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    }
    op->next = nic->ops_free;
    nic->ops_free = op;
    ST_RELAXED(&nic->nops, LD_RELAXED(&nic->nops) - 1);
}


/* Once the job has failed, a PDONE from a dead initiator will not come: the
 * transfer fails (op_moved reports PEER_DIED). While the job has failed the
 * op is never idle, so the engine keeps looking (peer_alive asks the kernel
 * at most every 10 ms). */
static bool coop_lost(struct pt_nic *nic, struct pt_op *op)
{
    if (PT_LIKELY(!LD_RELAXED(&nic->failed)))
        return false;
    coop_busy(nic, op);
    if (nic->xo->peer_alive(nic->x, op->rsp_peer))
        return false;
    op->failed = 1;
    coop_settle(nic, op, 0);
    return true;
}

void pt_ops_fail_moved(struct pt_nic *nic, uint32_t peer)
{
    for (struct pt_op *op = nic->ops; op; op = op->next) {
        if (op->rsp_peer != peer || op->kind == PT_OP_COPY_SEND)
            continue; /* (copy-mode streams: fail_peer) */
        op->gone = 1; /* PEER_DIED; nothing more to or from the slot */
        if (op->rsp_pending)
            continue; /* moved already: its END only (op_respond) */
        op->failed = 1;
        if (op->coop_wait)
            coop_settle(nic, op, 0); /* no PDONE of the last owner's will count */
    }
}

/* A transfer whose data has all moved (or failed): its FIN/RFIN is due. */
static void op_moved(struct pt_nic *nic, struct pt_op *op)
{
    if (op->failed)
        op->ev.ni_fail_type = !op->gone && nic->xo->peer_alive(nic->x, op->rsp_peer)
                                  ? PTL_NI_FAIL
                                  : PTL_NI_PEER_DIED;
    op->rsp_pending = 1;
    PT_TRACE(nic, op->failed ? PT_TR_XFER_FAIL : PT_TR_XFER_END,
             PT_TV_XFER(op->rsp_peer, op->rv.done));
}

/* Send the FIN/RFIN, then post PUT_END/REPLY_END: what our application sends
 * on seeing END must not overtake the FIN/RFIN (causal order per peer,
 * xport.h). If the peer's response queue is full, both wait for a later poll;
 * else the op is freed. */
static void op_respond(struct pt_nic *nic, struct pt_op *op)
{
    struct pt_md *md = op->md;
    coop_unclaim(nic, op);
    /* gone: nobody to tell, and a guest slot's next owner must not take the
     * last owner's answer (its requests may have the same indexes) */
    struct pt_wire_hdr *r = op->gone ? NULL : nic->xo->reserve(nic->x, op->rsp_peer, PT_CLS_RSP);
    if (!r) {
        if (!op->gone && nic->xo->peer_alive(nic->x, op->rsp_peer))
            return;
    } else { /* (a dead peer: nobody to tell) */
        pt_wire_copy(r, &op->rsp);
        if (op->kind == PT_OP_PUSH) /* PDONE: what we wrote, from the start */
            r->mlength = op->rv.done;
        else if (op->failed) { /* the peer's END events fail too; its ACK gets what arrived */
            r->flags |= PT_WF_FAIL;
            if (op->kind == PT_OP_RNDV_PUT) /* the prefix that arrived (a
                                             * cooperative one: where our pull stopped) */
                r->mlength = op->rv.done;
        }
        pt_xmit(nic, op->rsp_peer, PT_CLS_RSP, r);
    }
    if (op->kind == PT_OP_PUSH) {
        md->pending--;
        pt_md_check_unlink(nic, md, NULL);
        pt_op_put(nic, op);
        return;
    }
    if (op->post_end)
        pt_ev_post_owed(nic, md,
                        op->kind == PT_OP_RNDV_PUT ? PTL_EVENT_PUT_END : PTL_EVENT_REPLY_END,
                        &op->ev, op->owes_end);
    md->pending--;
    pt_md_check_unlink(nic, md, &op->ev);
    pt_op_put(nic, op);
}

/* The op that just took a step goes behind every other op: the pulls take
 * turns (new ops are pushed at the head, so they get their first step soon). */
static void op_to_tail(struct pt_nic *nic, struct pt_op *op)
{
    if (!op->next)
        return;
    struct pt_op **pp = &nic->ops;
    while (*pp != op)
        pp = &(*pp)->next;
    *pp = op->next;
    struct pt_op *t = op->next;
    while (t->next)
        t = t->next;
    t->next = op;
    op->next = NULL;
}

/* A transport that moves a step by itself (its pull answered -EAGAIN: ofi,
 * whose reads are posted) does not hold the engine for it, so such an op's
 * later steps are long: PT_OPS_ASYNC_SEGS x PTL_RNDV_SEG (fewer round
 * trips of read request and data; the transport splits a step into reads
 * the provider takes). Where the transport says so up front (pull_async:
 * ofi), the first step too: a 4 MiB put over tcp;ofi_rxm on loopback was
 * two reads in a row (1 MiB, then 3 MiB), and in offload mode the NIC
 * thread saw the first one end before it posted the second; as one read,
 * offload 2.13 -> 1.85 ms (medians of 6 alternating runs; host matching
 * 1.83 -> 1.81, within the noise; bench/results-ofi.md, forty-second
 * session). At most PT_OPS_BUSY such steps are asked after per
 * pass (the transport holds at most that many: ofi's OFI_STEPS). */
#define PT_OPS_ASYNC_SEGS 16u
#define PT_OPS_BUSY 8

static long op_step(struct pt_nic *nic, struct pt_op *op, uint64_t seg)
{
    return op->atomic ? atomic_step(nic, op, seg)
                      : pt_rndv_step(&op->rv, nic->xo, nic->x, &op->md->mem, seg,
                                     op->kind == PT_OP_PUSH);
}

/* After a step of op `pull` that returned n: the op's next state. Returns
 * work done. */
static int op_stepped(struct pt_nic *nic, struct pt_op *pull, long n)
{
    int work = 0;
    if (n == -EAGAIN) {
        /* The transport took the step and moves it while we do other work:
         * the same call again next pass (the reads of a reduction's step
         * land in the NI's scratch: no other reduction starts one meanwhile).
         * Nothing moved yet: no work, no turn. */
        pull->xfer_busy = 1;
        pull->xfer_async = 1;
        return 0;
    }
    if (n == -EBUSY)
        return 0; /* the transport holds as many steps as it can: a later pass */
    pull->xfer_busy = 0;
    if (n > 0) {
        work++;
        PT_TRACE(nic, PT_TR_XFER_STEP, PT_TV_XFER(pull->rsp_peer, pull->rv.done));
        if (pull->rv.done < pull->rv.total) {
            op_to_tail(nic, pull);
            return work;
        }
    } else if (n < 0) {
        pull->failed = 1;
        /* The process is gone (the launcher may not have reaped it yet, and
         * peer_alive asks the kernel at most every 10 ms): the peer died. */
        pull->gone = n == -ESRCH;
    }
    work++;
    if (pull->coop_wait && !coop_steal(nic, pull)) {
        coop_idle(nic, pull);
        return work;
    }
    if (pull->kind != PT_OP_PUSH && !pull->failed && pull->tail_from < pull->tail_to)
        return work; /* the part the initiator did not write: next pass */
    op_moved(nic, pull);
    op_respond(nic, pull);
    return work;
}

/* One pass over the in-flight operations. Returns work done. Bounded: at
 * most one rendezvous pull step (PTL_RNDV_SEG bytes) per pass, taken by the
 * pulls in turn. A pass that pulled a segment for every op at once moved up
 * to ops x PTL_RNDV_SEG bytes: a host-mode PtlPut (which polls after its
 * command) then pulled a whole window of incoming 4 MiB puts before its own
 * request left, and the two ranks of a bidirectional stream took turns
 * instead of pulling at the same time (bench/results-notes.md). Copy-mode
 * streams and due responses all progress in every pass. Steps a transport
 * moves by itself (xfer_busy) are asked after in every pass too (at most
 * PT_OPS_BUSY): each such call only looks whether its reads completed. */
int pt_ops_progress(struct pt_nic *nic)
{
    int work = 0;
    struct pt_op *pull = NULL;  /* the first op (from the head) with data to move */
    struct pt_op *pull_na = NULL; /* ... that is no reduction */
    struct pt_op *busy[PT_OPS_BUSY];
    int nbusy = 0;
    bool abusy = false;         /* a reduction's step is in flight (the scratch) */
    bool several = false;       /* another op has data to move too */
    for (struct pt_op *op = nic->ops, *next; op; op = next) {
        /* A guest slot that changed hands: what we move with its last owner
         * fails before its next step (pt_nic_guest_moved), whose list walk
         * may free ops: from the head again (true once per change). Before,
         * a copy-mode stream went on into the new owner's queue (and in host
         * mode waited for ever for its credits). Guests' ops only. */
        if (PT_UNLIKELY(op->rsp_peer >= nic->xi.nranks) && pt_nic_guest_moved(nic, op->rsp_peer)) {
            next = nic->ops;
            continue;
        }
        next = op->next;
        if (op->kind == PT_OP_COPY_SEND) {
            work += pt_copy_send_step(nic, op);
            continue;
        }
        if (!op->rsp_pending) {
            if (op->coop_wait && (op->rv.done >= op->rv.total || op->failed) &&
                !coop_lost(nic, op) && !coop_steal(nic, op)) {
                coop_idle(nic, op); /* our part is done: the initiator's PDONE is due */
                continue;
            }
            if (op->rv.done >= op->rv.total && !op->coop_wait && !op->failed &&
                op->tail_from < op->tail_to) {
                /* the initiator wrote less than we asked: the rest is ours */
                op->rv.done = op->tail_from;
                op->rv.total = op->tail_to;
                op->tail_from = op->tail_to;
            }
            if (op->rv.done < op->rv.total && !op->failed) {
                if (op->xfer_busy) {
                    abusy |= op->atomic;
                    if (nbusy < PT_OPS_BUSY)
                        busy[nbusy++] = op;
                    continue;
                }
                several |= pull != NULL;
                if (!pull)
                    pull = op;
                if (!pull_na && !op->atomic)
                    pull_na = op;
                continue;
            }
            op_moved(nic, op); /* nothing (left) to move */
            work++;
        }
        op_respond(nic, op);
    }
    /* A lone transfer moves in long steps (fewer calls: a ping-pong of 1 MiB
     * is ~6% faster in 1 MiB steps than in 256 KiB ones); with several in
     * flight (a stream, both directions at once) a step is a quarter of
     * that, so the engine turns round sooner (offload bidirectional 4 MiB:
     * 11 GB/s in 1 MiB steps, 16 GB/s in 256 KiB ones; bench/results-notes.md). */
    several |= pull && nbusy;
    uint64_t seg = several && nic->rndv_seg >= 16384 ? nic->rndv_seg / 4 : nic->rndv_seg;
    for (int i = 0; i < nbusy; i++) /* the same call again: its bytes, or -EAGAIN */
        work += op_stepped(nic, busy[i], op_step(nic, busy[i], seg));
    if (abusy)
        pull = pull_na; /* one reduction's step at a time (the scratch) */
    if (!pull)
        return work;
    if (pull->xfer_async || nic->xo->pull_async)
        seg = (uint64_t)nic->rndv_seg * PT_OPS_ASYNC_SEGS;
    return work + op_stepped(nic, pull, op_step(nic, pull, seg));
}
