/*
 * initiator.c - the initiator side: Put/Get/GetPut commands become request
 * messages; ACK, FIN, REPLY and NACK responses become initiator events
 * (§6.6-§6.8). A request that waits for its answer has a record (struct
 * pt_ireq): when its target dies, the answer is made up here, failed.
 * Engine-owned; token holder only.
 */
#include "config.h"
#include "nic.h"
#include "log.h"
#include "pages.h"

#include <stdlib.h>
#include <string.h>

/* Inlined (PT_HOT_INLINE), as cmd_source and peer_gone: every put runs them. */
PT_HOT_INLINE void hdr_init(struct pt_nic *nic, struct pt_wire_hdr *h, uint8_t op,
                            const struct pt_cmd *c)
{
    pt_wire_clear(h);
    h->op = op;
    h->src_nid = nic->id.nid;
    h->src_pid = nic->id.pid;
    h->uid = nic->uid;
    h->jid = nic->jid;
    h->pt_index = c->u.mv.pt_index;
    h->ac_index = c->u.mv.ac_index;
    h->init_md = c->h;
    h->match_bits = c->u.mv.match_bits;
    h->remote_offset = c->u.mv.remote_offset;
    h->local_offset = c->u.mv.local_offset;
    h->rlength = c->u.mv.length;
    h->hdr_data = c->u.mv.hdr_data;
    h->t_stamp = c->t_post;
}

static void send_ev_init(struct pt_nic *nic, ptl_event_t *ev, const struct pt_cmd *c, uint64_t len)
{
    pt_ev_clear(ev);
    ev->initiator = nic->id;
    ev->uid = nic->uid;
    ev->jid = nic->jid;
    ev->pt_index = c->u.mv.pt_index;
    ev->match_bits = c->u.mv.match_bits;
    ev->rlength = len;
    ev->mlength = len;
    ev->offset = c->u.mv.remote_offset;
    ev->hdr_data = c->u.mv.hdr_data;
    ev->ni_fail_type = PTL_NI_OK;
}

/* ---- requests waiting for their answers (struct pt_ireq, nic.h) --------- */

static void ireq_grow(struct pt_nic *nic)
{
    uint32_t end = nic->ireq_hwm + PT_LAZY_CHUNK < nic->ireq_n ? nic->ireq_hwm + PT_LAZY_CHUNK
                                                                : nic->ireq_n;
    for (uint32_t i = end; i-- > nic->ireq_hwm;) {
        nic->ireqs[i].id = i; /* the first life's id is i + n: never 0 */
        if (pt_wrap_n()) /* PTL_TEST_WRAP: 4 lives before the slot's ids wrap */
            nic->ireqs[i].id = i - 4u * nic->ireq_n;
        nic->ireqs[i].next = nic->ireq_free;
        nic->ireq_free = i + 1;
    }
    nic->ireq_hwm = end;
}

int pt_ireq_init(struct pt_nic *nic, uint32_t n)
{
    /* zeroed pages (pages.h); ireq_head: pt_nic_create's peer state */
    nic->ireqs = pt_pages_zalloc(n * sizeof *nic->ireqs);
    if (!nic->ireqs)
        return PT_E_NOSPACE;
    nic->ireq_n = n;
    nic->ireq_free = 0;
    nic->ireq_hwm = 0;
    ireq_grow(nic); /* the rest as they are needed (nic.h, PT_LAZY_CHUNK) */
    return PT_OK;
}

void pt_ireq_fini(struct pt_nic *nic)
{
    pt_pages_free(nic->ireqs, nic->ireq_n * sizeof *nic->ireqs);
    nic->ireqs = NULL;
}

/* A record for command c's request to peer (the caller checked ireq_free). */
static struct pt_ireq *ireq_new(struct pt_nic *nic, enum pt_ireq_kind kind, uint32_t peer,
                                const struct pt_cmd *c)
{
    uint32_t s = nic->ireq_free;
    struct pt_ireq *r = &nic->ireqs[s - 1];
    nic->ireq_free = r->next;
    if (!nic->ireq_free && nic->ireq_hwm < nic->ireq_n)
        ireq_grow(nic);
    uint32_t id = r->id + nic->ireq_n; /* same slot (n divides 2^32), next life */
    r->id = id >= nic->ireq_n ? id : id + nic->ireq_n;
    r->live = 1;
    r->kind = (uint8_t)kind;
    r->send_end = 0;
    r->ack = 0;
    r->peer = peer;
    r->md = c->h;
    r->link = 0;
    r->pt_index = c->u.mv.pt_index;
    r->match_bits = c->u.mv.match_bits;
    r->remote_offset = c->u.mv.remote_offset;
    r->local_offset = c->u.mv.local_offset;
    r->length = c->u.mv.length;
    r->hdr_data = c->u.mv.hdr_data;
    r->prev = 0;
    r->next = nic->ireq_head[peer];
    if (r->next)
        nic->ireqs[r->next - 1].prev = s;
    nic->ireq_head[peer] = s;
    nic->ireq_live++;
    return r;
}

static void ireq_free(struct pt_nic *nic, struct pt_ireq *r)
{
    uint32_t s = (uint32_t)(r - nic->ireqs) + 1;
    if (r->prev)
        nic->ireqs[r->prev - 1].next = r->next;
    else
        nic->ireq_head[r->peer] = r->next;
    if (r->next)
        nic->ireqs[r->next - 1].prev = r->prev;
    if (r->op_held) { /* the reply's op, if it takes one, takes it over */
        r->op_held = 0;
        nic->ops_promised--;
    }
    r->live = 0;
    r->next = nic->ireq_free;
    nic->ireq_free = s;
    nic->ireq_live--;
}

/* The live record of ours that an answer from peer names, or NULL: stale
 * (its request was failed when the peer died) or forged. */
static struct pt_ireq *ireq_of(struct pt_nic *nic, const struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_ireq *r = &nic->ireqs[h->req & (nic->ireq_n - 1)];
    return r->live && r->id == h->req && r->peer == peer && r->md == h->init_md ? r : NULL;
}

/* Is the target of a command known dead, or gone after leaving the job in
 * order? Two relaxed loads while the job has not failed and no peer left. */
PT_HOT_INLINE bool peer_gone(struct pt_nic *nic, int rank)
{
    return PT_UNLIKELY(LD_RELAXED(&nic->failed) || LD_RELAXED(&nic->departed_seen)) &&
           !nic->xo->peer_alive(nic->x, (uint32_t)rank);
}

static void ireq_fail(struct pt_nic *nic, struct pt_ireq *r);

/* A command whose MD died or went inactive after the API validated it, or
 * whose target left the job: nothing is sent (the API already returned). */
static int cmd_dropped(struct pt_nic *nic)
{
    nic->sr[PTL_SR_DROP_COUNT]++;
    return PT_OK;
}

/* The peer index of a command's target, -1 if no process has its id. A
 * rank's id is fixed for the NI's life (xport.h, rank_of), so the last rank
 * resolved here is remembered: a stream to one target goes through the ops
 * table once, not at every command (about 20 instructions, callgrind).
 * Guests are looked up every time: their slots change hands. */
PT_HOT_INLINE int cmd_rank(struct pt_nic *nic, ptl_process_id_t t)
{
    if (t.nid == nic->tx_id.nid && t.pid == nic->tx_id.pid && nic->tx_rank >= 0)
        return nic->tx_rank;
    int r = nic->xo->rank_of(nic->x, t.nid, t.pid);
    if (r >= 0 && (uint32_t)r < nic->xi.nranks) {
        nic->tx_id = t;
        nic->tx_rank = r;
    } else if (r >= 0)
        pt_nic_guest_moved(nic, (uint32_t)r); /* a new owner: the last's requests fail first */
    return r;
}

/* The MD a data command starts from, if still live and active, and the rank
 * of its target; NULL when the command is to be dropped. */
PT_HOT_INLINE struct pt_md *cmd_source(struct pt_nic *nic, const struct pt_cmd *c, uint32_t h,
                                       int *rank_p)
{
    struct pt_md *md = pt_md_lookup(nic, h);
    if (!md || !pt_md_active(md))
        return NULL;
    *rank_p = cmd_rank(nic, c->u.mv.target);
    return *rank_p < 0 ? NULL : md;
}

int pt_cmd_put(struct pt_nic *nic, const struct pt_cmd *c)
{
    int rank;
    struct pt_md *md = cmd_source(nic, c, c->h, &rank);
    if (!md)
        return cmd_dropped(nic);
    uint64_t len = c->u.mv.length;
    bool ack = c->u.mv.ack == PTL_ACK_REQ, gone = peer_gone(nic, rank);
    enum pt_proto_kind pk = pt_nic_choose_md(nic, (uint32_t)rank, len, md, c->u.mv.local_offset);
    if (!gone && pk != PT_PROTO_EAGER && (!pt_ops_avail(nic) || nic->copy_busy[PT_CLS_REQ][rank]))
        return PT_E_AGAIN; /* one stream per peer at a time; op slots exhausted */
    bool waits = ack || pk == PT_PROTO_RNDV || gone; /* for an answer: a record */
    if (waits && !nic->ireq_free)
        return PT_E_AGAIN; /* PTL_REQ_SLOTS requests wait for answers: retry later */
    if (gone) { /* SEND_START, then SEND_END (and the ACK) as a failed FIN would */
        pt_md_consume(nic, md);
        ptl_event_t ev;
        send_ev_init(nic, &ev, c, len);
        pt_ev_post(nic, md, PTL_EVENT_SEND_START, &ev);
        struct pt_ireq *r = ireq_new(nic, PT_IRQ_PUT, (uint32_t)rank, c);
        r->link = (uint32_t)ev.link;
        r->send_end = 1;
        r->ack = ack;
        md->pending++;
        ireq_fail(nic, r);
        return PT_OK;
    }
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN; /* out of credits to that target: retry later */
    hdr_init(nic, h, PT_W_PUT, c);
    if (ack)
        h->flags |= PT_WF_ACK_REQ;
    /* A large CMA put to another process: offer to write part of it (wire.h,
     * PUSH; the target decides). */
    if (pk == PT_PROTO_RNDV && nic->coop_min && len >= nic->coop_min &&
        (uint32_t)rank != nic->xi.rank && c->op != PT_CMD_ATOMIC && pt_nic_push_ok(nic, (uint32_t)rank))
        h->flags |= PT_WF_COOP; /* (a reduction is combined by the target alone) */
    uint64_t first = pk == PT_PROTO_COPY && len > pt_slot_room(nic) ? pt_slot_room(nic) : len;
    if (PT_LIKELY(pk == PT_PROTO_EAGER)) /* the table's entry, without its indirect call */
        pt_eager_pack(h, &md->mem, c->u.mv.local_offset, first);
    else
        pt_proto_table[pk]->pack(h, &md->mem, c->u.mv.local_offset, first);
    if (PT_UNLIKELY(c->op == PT_CMD_ATOMIC)) {
        h->flags |= PT_WF_ATOMIC;
        h->tgt_link = (uint32_t)(c->u.mv.atype << 8 | c->u.mv.aop);
    }

    pt_md_consume(nic, md); /* "send" counts at initiation (§6.4) */
    /* SEND_START is posted once the message has left (below), and its event
     * is built only then: both off the path to the target. Nothing posts in
     * between, so its link is this one. */
    ptl_seq_t link = pt_ev_start_link(nic, md, PTL_EVENT_SEND_START);
    h->link = link;
    if (waits) {
        struct pt_ireq *r = ireq_new(nic, PT_IRQ_PUT, (uint32_t)rank, c);
        r->link = (uint32_t)link;
        r->send_end = pk == PT_PROTO_RNDV;
        r->ack = ack;
        h->req = r->id;
    }
    if (pk == PT_PROTO_RNDV)
        md->pending++; /* the target reads our memory until its FIN */
    pt_xmit_inline(nic, (uint32_t)rank, PT_CLS_REQ, h);
    nic->sr[PTL_SR_SEND_COUNT]++;
    nic->sr[PTL_SR_SEND_LENGTH] += len;
    ptl_event_t ev;
    send_ev_init(nic, &ev, c, len);
    ev.link = link;
    pt_ev_post(nic, md, PTL_EVENT_SEND_START, &ev);
    if (pk == PT_PROTO_COPY && first < len) /* SEND_END when the last fragment left */
        pt_copy_send_start(nic, md, c->u.mv.local_offset + first, len - first, (uint32_t)rank,
                           PT_CLS_REQ, PTL_EVENT_SEND_END, &ev);
    else if (pk != PT_PROTO_RNDV) {
        pt_ev_post(nic, md, PTL_EVENT_SEND_END, &ev); /* the data has left the buffer */
        pt_md_check_unlink(nic, md, &ev);
    }
    return PT_OK;
}

int pt_cmd_get(struct pt_nic *nic, const struct pt_cmd *c)
{
    int rank;
    struct pt_md *md = cmd_source(nic, c, c->h, &rank);
    if (!md)
        return cmd_dropped(nic);
    if (!nic->ireq_free)
        return PT_E_AGAIN;
    if (peer_gone(nic, rank)) { /* REPLY_END as a failed reply would */
        struct pt_ireq *r = ireq_new(nic, PT_IRQ_GET, (uint32_t)rank, c);
        md->pending++;
        ireq_fail(nic, r);
        return PT_OK;
    }
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN;
    /* A reply that may come by rendezvous is promised its op now
     * (ops_promised): with more such gets than PTL_MAX_OPS in flight the
     * later replies failed (an adversarial client: 1,480 of 3,000 64 KiB
     * gets, PTL_NI_FAIL). */
    bool hold = pt_nic_choose(nic, c->u.mv.length) == PT_PROTO_RNDV;
    if (hold && !pt_ops_promise_ok(nic))
        return PT_E_AGAIN; /* replies end without us: retried later */
    hdr_init(nic, h, PT_W_GET, c);
    h->hdr_data = 0;
    if (hold)
        h->flags |= PT_WF_REPLY_OP; /* the target may answer by rendezvous */
    struct pt_ireq *r = ireq_new(nic, PT_IRQ_GET, (uint32_t)rank, c);
    r->op_held = hold;
    nic->ops_promised += hold;
    h->req = r->id;
    /* No event and no threshold count at the call (REF/spec; Cray differs, §8.6).
     * The reply (or an internal NACK) always comes back: until then the MD is
     * busy, so it cannot be unlinked under the reply. */
    md->pending++;
    pt_xmit(nic, (uint32_t)rank, PT_CLS_REQ, h);
    return PT_OK;
}

int pt_cmd_getput(struct pt_nic *nic, const struct pt_cmd *c)
{
    int rank;
    struct pt_md *gmd = cmd_source(nic, c, c->h, &rank);
    struct pt_md *pmd = cmd_source(nic, c, c->u.mv.md2, &rank);
    if (!gmd || !pmd)
        return cmd_dropped(nic);
    if (!nic->ireq_free)
        return PT_E_AGAIN;
    uint64_t len = c->u.mv.length;
    if (peer_gone(nic, rank)) { /* nothing leaves: SEND_END fails, then REPLY_END */
        pt_md_consume(nic, pmd);
        ptl_event_t ev;
        send_ev_init(nic, &ev, c, len);
        pt_ev_post(nic, pmd, PTL_EVENT_SEND_START, &ev);
        struct pt_ireq *r = ireq_new(nic, PT_IRQ_GET, (uint32_t)rank, c);
        gmd->pending++;
        ev.ni_fail_type = PTL_NI_PEER_DIED;
        pt_ev_post(nic, pmd, PTL_EVENT_SEND_END, &ev);
        pt_md_check_unlink(nic, pmd, &ev);
        ireq_fail(nic, r);
        return PT_OK;
    }
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN;
    hdr_init(nic, h, PT_W_GETPUT, c);
    h->rlength = len;
    pt_proto_table[PT_PROTO_EAGER]->pack(h, &pmd->mem, c->u.mv.put_offset, len); /* <= max_getput_md */
    pt_md_consume(nic, pmd);
    ptl_event_t ev;
    send_ev_init(nic, &ev, c, len);
    pt_ev_post(nic, pmd, PTL_EVENT_SEND_START, &ev);
    h->link = ev.link;
    h->req = ireq_new(nic, PT_IRQ_GET, (uint32_t)rank, c)->id;
    gmd->pending++;
    pt_xmit(nic, (uint32_t)rank, PT_CLS_REQ, h);
    pt_ev_post(nic, pmd, PTL_EVENT_SEND_END, &ev);
    pt_md_check_unlink(nic, pmd, &ev);
    return PT_OK;
}

/* ---- responses --------------------------------------------------------- */

static void rsp_ev_init(ptl_event_t *ev, const struct pt_wire_hdr *h)
{
    pt_ev_clear(ev);
    ev->initiator.nid = h->src_nid; /* the target that answered */
    ev->initiator.pid = h->src_pid;
    ev->uid = h->uid;
    ev->jid = h->jid;
    ev->pt_index = h->pt_index;     /* echoed (libportals' recommendation, §6.8) */
    ev->match_bits = h->match_bits;
    ev->ni_fail_type = PTL_NI_OK;
    ev->link = h->link;
}

static void deliver_ack(struct pt_nic *nic, struct pt_md *md, const struct pt_wire_hdr *h,
                        ptl_ni_fail_t fail)
{
    if (!pt_md_active(md))
        return; /* §6.6: an ACK to an inactive MD is discarded (not a dropped request) */
    pt_md_consume(nic, md);
    ptl_event_t ev;
    rsp_ev_init(&ev, h);
    /* rlength = mlength: the one convention OrangeFS's BMI method, Open MPI
     * 1.x's btl/portals and CCI all accept (OrangeFS exits when they differ,
     * and reads mlength 0 as "truncated, get the rest"); README. */
    ev.rlength = h->mlength;
    ev.mlength = h->mlength;
    ev.offset = h->remote_offset;
    ev.ni_fail_type = fail;
    pt_ev_post(nic, md, PTL_EVENT_ACK, &ev);
    pt_md_check_unlink(nic, md, &ev);
}

int pt_rsp_ack(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_ireq *r = ireq_of(nic, h, peer);
    if (!r || r->kind != PT_IRQ_PUT || r->send_end)
        return PT_OK; /* stale: the put already ended (its target died), or forged */
    ireq_free(nic, r);
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (!md)
        return PT_OK; /* §6.2: late ACKs are silently discarded (not counted) */
    deliver_ack(nic, md, h, (h->flags & PT_WF_FAIL) ? PTL_NI_FAIL : PTL_NI_OK);
    return PT_OK;
}

/* A rendezvous put's FIN, or the one its dead target will not send: SEND_END
 * (and the ACK, PT_WF_ACK) with fail. */
static void complete_send(struct pt_nic *nic, struct pt_md *md, const struct pt_wire_hdr *h,
                          ptl_ni_fail_t fail)
{
    md->pending--;
    ptl_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.initiator = nic->id;
    ev.uid = nic->uid;
    ev.jid = nic->jid;
    ev.pt_index = h->pt_index;
    ev.match_bits = h->match_bits;
    ev.rlength = ev.mlength = h->rlength;
    ev.offset = h->remote_offset;
    ev.hdr_data = h->hdr_data;
    ev.link = h->link;
    ev.ni_fail_type = fail;
    pt_ev_post(nic, md, PTL_EVENT_SEND_END, &ev);
    if (h->flags & PT_WF_ACK)
        deliver_ack(nic, md, h, fail);
    pt_md_check_unlink(nic, md, &ev);
}

int pt_rsp_fin(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_ireq *r = ireq_of(nic, h, peer);
    if (!r || !r->send_end)
        return PT_OK; /* stale or forged */
    ireq_free(nic, r);
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (!md || !md->pending)
        return PT_OK;
    /* The target's pull failed: so did the send (its ACK: what arrived). */
    complete_send(nic, md, h, (h->flags & PT_WF_FAIL) ? PTL_NI_FAIL : PTL_NI_OK);
    return PT_OK;
}

int pt_rsp_nack(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_ireq *r = ireq_of(nic, h, peer);
    if (!r || r->send_end)
        return PT_OK; /* stale or forged */
    bool get = r->kind == PT_IRQ_GET;
    ireq_free(nic, r);
    if (!get)
        return PT_OK; /* a put that gets no ACK (dropped, or PTL_MD_ACK_DISABLE) */
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (md && md->pending) {
        md->pending--;
        pt_md_check_unlink(nic, md, NULL);
    }
    return PT_OK;
}

/* A PDONE for the PUSH whose transfer the target named tgt_link. */
static void pdone_init(struct pt_nic *nic, struct pt_wire_hdr *d, uint32_t tgt_link)
{
    pt_wire_clear(d);
    d->op = PT_W_PDONE;
    d->src_nid = nic->id.nid;
    d->src_pid = nic->id.pid;
    d->tgt_link = tgt_link;
}

/* PUSH: the target of our cooperative rendezvous put asks us to write part
 * of it into its MD (wire.h). We claim the part with one CAS on the
 * target's claim word (shm_region.h, "Claim words"), write it in steps
 * (pt_ops_progress, a PT_OP_PUSH) and answer PDONE with the bytes written.
 * A part already taken back needs nothing (no PDONE is owed); one we
 * cannot write (no op free) is claimed and answered PDONE 0: the target
 * pulls it. Only bytes this put offered that peer are ever read: the
 * part is checked against our record of the put (a forged PUSH gets at most
 * what the target could have pulled anyway, written into its own memory). */
int pt_rsp_push(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    struct pt_ireq *r = ireq_of(nic, h, peer);
    struct pt_md *md = r && r->kind == PT_IRQ_PUT && r->send_end ? pt_md_lookup(nic, r->md) : NULL;
    if (!md || !md->pending || !(h->flags & PT_WF_RNDV) || !h->niov || !h->mlength ||
        h->tgt_offset >= r->length || h->mlength > r->length - h->tgt_offset ||
        !nic->xo->coop_word)
        return PT_OK; /* forged or stale: nothing to claim */
    /* A NIC thread on the application's only core leaves the part to a
     * target that takes parts back (PT_WF_COOP on the PUSH) while the
     * application computes: it would take the core from it (the offload
     * overlap of a large send). The target pulls it. */
    if ((h->flags & PT_WF_COOP) && nic->nic_shares_core && nic->has_thread &&
        pthread_equal(pthread_self(), nic->thread) && !pt_wait_api_waiting(&nic->w))
        return PT_OK;
    _Atomic uint32_t *word = nic->xo->coop_word(nic->x, peer, h->tgt_md);
    uint32_t open = (uint32_t)h->hdr_data;
    if (!word || (open & 3u))
        return PT_OK;
    struct pt_wire_hdr *d = NULL;
    if (!pt_ops_avail(nic)) { /* we cannot write it: claim it and say so (PDONE 0),
                           * so that a target that never takes back is not left
                           * waiting; the slot first, the claim cannot be undone */
        d = nic->xo->reserve(nic->x, peer, PT_CLS_RSP);
        if (!d)
            return PT_E_AGAIN;
    }
    if (!RMW_CAS(word, &open, open | 1u))
        return PT_OK; /* taken back: nothing to do, no PDONE (d stays unused) */
    if (d) {
        pdone_init(nic, d, h->tgt_link); /* mlength 0: nothing written */
        pt_xmit(nic, peer, PT_CLS_RSP, d);
        return PT_OK;
    }
    struct pt_op *op = pt_op_get(nic);
    op->kind = PT_OP_PUSH;
    op->md = md;
    ST_RELAXED(&nic->coop_push, LD_RELAXED(&nic->coop_push) + 1);
    md->pending++; /* the MD outlives the push, whatever the FIN does */
    pt_rndv_init(&op->rv, h, peer, h->mlength, r->local_offset + h->tgt_offset);
    pdone_init(nic, &op->rsp, h->tgt_link); /* mlength: set when it is sent */
    op->rsp_peer = peer;
    PT_TRACE(nic, PT_TR_XFER_START, PT_TV_XFER(peer, h->mlength));
    return PT_OK;
}

/* Fill the RFIN that lets the target finish the rendezvous reply h. It echoes
 * the reply's event fields (the target's GET_START link in tgt_link): the
 * target posts GET_END from them (target.c, pt_rsp_rfin), since it may have
 * several replies outstanding on one MD. Our id, uid and jid are the get's. */
static void rfin_fill(struct pt_nic *nic, struct pt_wire_hdr *r, const struct pt_wire_hdr *h)
{
    pt_wire_clear(r);
    r->op = PT_W_RFIN;
    r->src_nid = nic->id.nid;
    r->src_pid = nic->id.pid;
    r->uid = nic->uid;
    r->jid = nic->jid;
    r->pt_index = h->pt_index;
    r->init_md = h->init_md;
    r->tgt_md = h->tgt_md;
    r->link = h->link;
    r->tgt_link = h->tgt_link;
    r->match_bits = h->match_bits;
    r->remote_offset = h->remote_offset;
    r->local_offset = h->local_offset;
    r->rlength = h->rlength;
    r->mlength = h->mlength;
    r->tgt_offset = h->tgt_offset;
}

int pt_rsp_reply(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer)
{
    bool rndv = h->flags & PT_WF_RNDV;
    struct pt_wire_hdr *rfin = NULL;
    struct pt_ireq *rq = ireq_of(nic, h, peer);
    if (rq && rq->kind != PT_IRQ_GET)
        rq = NULL;
    struct pt_md *md = rq ? pt_md_lookup(nic, h->init_md) : NULL;
    bool expected = md && md->pending; /* a get of ours, outstanding */
    if (rndv) {
        /* An expected reply whose op was promised when the get left
         * (ops_promised; ireq_free below gives the promise back, the op takes
         * it over) needs no slot now: the op sends the RFIN once it has
         * pulled, when the peer has room (op_respond). Waiting here for the
         * slot held every later answer from the peer, and with both sides'
         * response queues full of such replies neither moved again (two
         * ranks, 1,500 puts and gets of 32 KiB each way, 1 run in 3; also
         * before the promise). Otherwise the RFIN slot must exist before we
         * commit to anything: for a reply dropped on an inactive MD, for one
         * that found no promise (a target whose eager limit is lower than
         * ours answered by rendezvous a get we thought eager; it waits for
         * room in the replies' budget). A reply we do not expect (late, or
         * forged) is dropped even when the slot is not there: waiting for a
         * sender that never drains its responses would hold that sender's
         * queues for ever. */
        bool promised = expected && rq->op_held && pt_md_active(md);
        if (!promised) {
            rfin = nic->xo->reserve(nic->x, peer, PT_CLS_RSP);
            if (!rfin && expected)
                return PT_E_AGAIN;
            if (expected && !pt_ops_promise_ok(nic))
                return PT_E_AGAIN;
        }
    }
    bool ours = rq != NULL; /* the answer to a get of ours, not a forged one */
    if (rq)
        ireq_free(nic, rq);
    if (expected)
        md->pending--; /* the outstanding get is answered */
    if (!expected || !pt_md_active(md)) {
        nic->sr[PTL_SR_DROP_COUNT]++; /* a reply nobody can take is dropped */
        if (ours && (h->flags & PT_WF_COPY) && h->mlength > h->inline_len) {
            /* Copy mode: the rest follows as DATA fragments, swallowed
             * (copy.c), as for a dropped put (target.c). Without this they
             * found no stream and were each counted as a forged header
             * (a get MD made inactive by an earlier reply, 1 MiB: "bad
             * headers 260" in the dump). */
            pt_copyin_begin(nic, PT_CLS_RSP, peer, h->mlength, h->inline_len);
        }
        if (md)
            pt_md_check_unlink(nic, md, NULL);
        if (rfin) {
            rfin_fill(nic, rfin, h);
            pt_xmit(nic, peer, PT_CLS_RSP, rfin);
        }
        return PT_OK;
    }
    pt_md_consume(nic, md);
    ptl_event_t ev;
    rsp_ev_init(&ev, h);
    ev.rlength = h->mlength; /* what the target replied with */
    uint64_t room = h->local_offset <= md->mem.len ? md->mem.len - h->local_offset : 0;
    ev.mlength = h->mlength < room ? h->mlength : room;
    ev.offset = h->local_offset;
    pt_ev_post(nic, md, PTL_EVENT_REPLY_START, &ev);
    if (!rndv) {
        pt_eager_deliver(h, &md->mem, h->local_offset, ev.mlength);
        if ((h->flags & PT_WF_COPY) && h->mlength > h->inline_len) {
            /* The rest streams in as DATA fragments (copy.c). */
            struct pt_copyin *st =
                pt_copyin_begin(nic, PT_CLS_RSP, peer, h->mlength, h->inline_len);
            st->md = md;
            st->off = h->local_offset;
            st->mlen = ev.mlength;
            st->ev = ev;
            md->pending++;
            return PT_OK;
        }
        pt_ev_post(nic, md, PTL_EVENT_REPLY_END, &ev);
        pt_md_check_unlink(nic, md, &ev);
        return PT_OK;
    }
    /* Never NULL: the replies' budget (a promise, or pt_ops_promise_ok
     * above) keeps an op free for it (nic.h, ops_promised). */
    struct pt_op *op = pt_op_get(nic);
    if (PT_UNLIKELY(!op)) { /* (defensive) fail the reply, release the target */
        pt_log_once(PT_LOG_WARN, "a rendezvous reply found no op: failed (PTL_MAX_OPS)");
        ev.ni_fail_type = PTL_NI_FAIL;
        pt_ev_post(nic, md, PTL_EVENT_REPLY_END, &ev);
        if (rfin || (rfin = nic->xo->reserve(nic->x, peer, PT_CLS_RSP))) {
            rfin_fill(nic, rfin, h);
            rfin->flags = PT_WF_FAIL;
            pt_xmit(nic, peer, PT_CLS_RSP, rfin);
        }
        pt_md_check_unlink(nic, md, &ev);
        return PT_OK;
    }
    op->kind = PT_OP_RNDV_REPLY;
    nic->ops_reply++; /* the promise given back above, now an op (pt_op_put) */
    op->md = md;
    pt_rndv_init(&op->rv, h, peer, ev.mlength, h->local_offset);
    op->ev = ev;
    rfin_fill(nic, &op->rsp, h);
    op->rsp_peer = peer;
    op->post_end = 1;
    PT_TRACE(nic, PT_TR_XFER_START, PT_TV_XFER(peer, ev.mlength));
    md->pending++;
    return PT_OK;
}

/* ---- a target that died: the answers that will not come ----------------- */

/* A get's reply that will not come: REPLY_END (no REPLY_START: no reply
 * began), nothing arrived; threshold and unlink as for a reply. */
static void reply_failed(struct pt_nic *nic, struct pt_md *md, const struct pt_wire_hdr *f)
{
    if (!md->pending)
        return;
    md->pending--;
    if (!pt_md_active(md)) { /* a reply to it would be dropped: so is this one */
        pt_md_check_unlink(nic, md, NULL);
        return;
    }
    pt_md_consume(nic, md);
    ptl_event_t ev;
    rsp_ev_init(&ev, f);
    ev.rlength = f->rlength; /* what was asked for */
    ev.mlength = 0;
    ev.offset = f->local_offset;
    ev.ni_fail_type = PTL_NI_PEER_DIED;
    pt_ev_post(nic, md, PTL_EVENT_REPLY_END, &ev);
    pt_md_check_unlink(nic, md, &ev);
}

/* End request r, whose target died, as its answer would have, failed with
 * PTL_NI_PEER_DIED: the answer is made up as the engine would have read it
 * (from the target, with the job's uid and jid; mlength 0: nothing is known
 * to have arrived), and goes where the answer would have gone. */
static void ireq_fail(struct pt_nic *nic, struct pt_ireq *r)
{
    struct pt_wire_hdr f;
    memset(&f, 0, sizeof f);
    nic->xo->id_of(nic->x, r->peer, &f.src_nid, &f.src_pid);
    f.uid = nic->uid;
    f.jid = nic->jid;
    f.pt_index = r->pt_index;
    f.init_md = r->md;
    f.link = r->link;
    f.match_bits = r->match_bits;
    f.remote_offset = r->remote_offset;
    f.local_offset = r->local_offset;
    f.rlength = r->length;
    f.hdr_data = r->hdr_data;
    if (r->ack)
        f.flags = PT_WF_ACK;
    bool get = r->kind == PT_IRQ_GET, send_end = r->send_end;
    ireq_free(nic, r);
    struct pt_md *md = pt_md_lookup(nic, f.init_md);
    if (!md)
        return; /* an ACK's MD may be gone: a late ACK would be discarded (§6.2) */
    if (get)
        reply_failed(nic, md, &f);
    else if (send_end) {
        if (md->pending) /* held until the FIN */
            complete_send(nic, md, &f, PTL_NI_PEER_DIED);
    } else
        deliver_ack(nic, md, &f, PTL_NI_PEER_DIED);
}

void pt_ireq_fail_peer(struct pt_nic *nic, uint32_t peer)
{
    uint32_t s = nic->ireq_head[peer];
    if (!s)
        return;
    while (nic->ireqs[s - 1].next) /* the list is newest first: end them oldest first */
        s = nic->ireqs[s - 1].next;
    while (s) {
        struct pt_ireq *r = &nic->ireqs[s - 1];
        s = r->prev;
        ireq_fail(nic, r);
    }
}
