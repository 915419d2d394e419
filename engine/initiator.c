/*
 * initiator.c - the initiator side: Put/Get/GetPut commands become request
 * messages; ACK, FIN, REPLY and NACK responses become initiator events
 * (§6.6-§6.8). Engine-owned; token holder only.
 */
#include "nic.h"

#include <string.h>

static void hdr_init(struct pt_nic *nic, struct pt_wire_hdr *h, uint8_t op,
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
    memset(ev, 0, sizeof *ev);
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

/* A command whose MD died or went inactive after the API validated it, or
 * whose target left the job: nothing is sent (the API already returned). */
static int cmd_dropped(struct pt_nic *nic)
{
    nic->sr[PTL_SR_DROP_COUNT]++;
    return PT_OK;
}

/* The MD a data command starts from, if still live and active, and the rank
 * of its target; NULL when the command is to be dropped. */
static struct pt_md *cmd_source(struct pt_nic *nic, const struct pt_cmd *c, uint32_t h, int *rank_p)
{
    struct pt_md *md = pt_md_lookup(nic, h);
    if (!md || !pt_md_active(md))
        return NULL;
    *rank_p = nic->xo->rank_of(nic->x, c->u.mv.target.nid, c->u.mv.target.pid);
    return *rank_p < 0 ? NULL : md;
}

int pt_cmd_put(struct pt_nic *nic, struct pt_cmd *c)
{
    int rank;
    struct pt_md *md = cmd_source(nic, c, c->h, &rank);
    if (!md)
        return cmd_dropped(nic);
    uint64_t len = c->u.mv.length;
    enum pt_proto_kind pk = pt_nic_choose(nic, len);
    if (pk != PT_PROTO_EAGER && (!nic->ops_free || nic->copy_busy[PT_CLS_REQ][rank]))
        return PT_E_AGAIN; /* one stream per peer at a time; op slots exhausted */
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN; /* out of credits to that target: retry later */
    hdr_init(nic, h, PT_W_PUT, c);
    if (c->u.mv.ack == PTL_ACK_REQ)
        h->flags |= PT_WF_ACK_REQ;
    uint64_t first = pk == PT_PROTO_COPY && len > pt_slot_room(nic) ? pt_slot_room(nic) : len;
    pt_proto_table[pk]->pack(h, &md->mem, c->u.mv.local_offset, first);

    pt_md_consume(nic, md); /* "send" counts at initiation (§6.4) */
    ptl_event_t ev;
    send_ev_init(nic, &ev, c, len);
    pt_ev_post(nic, md, PTL_EVENT_SEND_START, &ev);
    h->link = ev.link;
    if (pk == PT_PROTO_RNDV)
        md->pending++; /* the target reads our memory until its FIN */
    nic->sr[PTL_SR_SEND_COUNT]++;
    nic->sr[PTL_SR_SEND_LENGTH] += len;
    pt_xmit(nic, (uint32_t)rank, PT_CLS_REQ, h);
    if (pk == PT_PROTO_COPY && first < len) /* SEND_END when the last fragment left */
        pt_copy_send_start(nic, md, c->u.mv.local_offset + first, len - first, (uint32_t)rank,
                           PT_CLS_REQ, PTL_EVENT_SEND_END, &ev);
    else if (pk != PT_PROTO_RNDV) {
        pt_ev_post(nic, md, PTL_EVENT_SEND_END, &ev); /* the data has left the buffer */
        pt_md_check_unlink(nic, md, &ev);
    }
    return PT_OK;
}

int pt_cmd_get(struct pt_nic *nic, struct pt_cmd *c)
{
    int rank;
    struct pt_md *md = cmd_source(nic, c, c->h, &rank);
    if (!md)
        return cmd_dropped(nic);
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN;
    hdr_init(nic, h, PT_W_GET, c);
    h->hdr_data = 0;
    /* No event and no threshold count at the call (REF/spec; Cray differs, §8.6).
     * The reply (or an internal NACK) always comes back: until then the MD is
     * busy, so it cannot be unlinked under the reply. */
    md->pending++;
    pt_xmit(nic, (uint32_t)rank, PT_CLS_REQ, h);
    return PT_OK;
}

int pt_cmd_getput(struct pt_nic *nic, struct pt_cmd *c)
{
    int rank;
    struct pt_md *gmd = cmd_source(nic, c, c->h, &rank);
    struct pt_md *pmd = cmd_source(nic, c, c->u.mv.md2, &rank);
    if (!gmd || !pmd)
        return cmd_dropped(nic);
    struct pt_wire_hdr *h = nic->xo->reserve(nic->x, (uint32_t)rank, PT_CLS_REQ);
    if (PT_UNLIKELY(!h)) PT_TRACE(nic, PT_TR_NOCREDIT, PT_TV_MSG(rank, PT_CLS_REQ, 0));
    if (!h)
        return PT_E_AGAIN;
    uint64_t len = c->u.mv.length;
    hdr_init(nic, h, PT_W_GETPUT, c);
    h->rlength = len;
    pt_proto_table[PT_PROTO_EAGER]->pack(h, &pmd->mem, c->u.mv.put_offset, len); /* <= max_getput_md */
    pt_md_consume(nic, pmd);
    ptl_event_t ev;
    send_ev_init(nic, &ev, c, len);
    pt_ev_post(nic, pmd, PTL_EVENT_SEND_START, &ev);
    h->link = ev.link;
    gmd->pending++;
    pt_xmit(nic, (uint32_t)rank, PT_CLS_REQ, h);
    pt_ev_post(nic, pmd, PTL_EVENT_SEND_END, &ev);
    pt_md_check_unlink(nic, pmd, &ev);
    return PT_OK;
}

/* ---- responses --------------------------------------------------------- */

static void rsp_ev_init(ptl_event_t *ev, const struct pt_wire_hdr *h)
{
    memset(ev, 0, sizeof *ev);
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

int pt_rsp_ack(struct pt_nic *nic, struct pt_wire_hdr *h)
{
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (!md)
        return PT_OK; /* §6.2: late ACKs are silently discarded (not counted) */
    deliver_ack(nic, md, h, PTL_NI_OK);
    return PT_OK;
}

int pt_rsp_fin(struct pt_nic *nic, struct pt_wire_hdr *h)
{
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (!md || !md->pending)
        return PT_OK;
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
    /* The target's pull failed: so did the send (its ACK: what arrived). */
    ev.ni_fail_type = (h->flags & PT_WF_FAIL) ? PTL_NI_FAIL : PTL_NI_OK;
    pt_ev_post(nic, md, PTL_EVENT_SEND_END, &ev);
    if (h->flags & PT_WF_ACK)
        deliver_ack(nic, md, h, ev.ni_fail_type);
    pt_md_check_unlink(nic, md, &ev);
    return PT_OK;
}

int pt_rsp_nack(struct pt_nic *nic, struct pt_wire_hdr *h)
{
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    if (md && md->pending) {
        md->pending--;
        pt_md_check_unlink(nic, md, NULL);
    }
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
    struct pt_md *md = pt_md_lookup(nic, h->init_md);
    bool expected = md && md->pending; /* an MD of ours with a get outstanding */
    if (rndv) {
        /* The RFIN slot must exist before we commit to anything. A reply we
         * do not expect (late, or forged) is dropped even when the slot is
         * not there: waiting for a sender that never drains its responses
         * would hold that sender's queues for ever. */
        rfin = nic->xo->reserve(nic->x, peer, PT_CLS_RSP);
        if (!rfin && expected)
            return PT_E_AGAIN;
    }
    if (expected)
        md->pending--; /* the outstanding get is answered */
    if (!expected || !pt_md_active(md)) {
        nic->sr[PTL_SR_DROP_COUNT]++; /* a reply nobody can take is dropped */
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
            struct pt_copyin *st = &nic->cin[PT_CLS_RSP][peer];
            memset(st, 0, sizeof *st);
            st->active = 1;
            st->is_reply = 1;
            st->md = md;
            st->off = h->local_offset;
            st->mlen = ev.mlength;
            st->rlen = h->mlength;
            st->got = h->inline_len;
            st->ev = ev;
            md->pending++;
            return PT_OK;
        }
        pt_ev_post(nic, md, PTL_EVENT_REPLY_END, &ev);
        pt_md_check_unlink(nic, md, &ev);
        return PT_OK;
    }
    struct pt_op *op = pt_op_get(nic);
    if (!op) { /* cannot track it: fail the reply, release the target */
        ev.ni_fail_type = PTL_NI_FAIL;
        pt_ev_post(nic, md, PTL_EVENT_REPLY_END, &ev);
        rfin_fill(nic, rfin, h);
        rfin->flags = PT_WF_FAIL;
        pt_xmit(nic, peer, PT_CLS_RSP, rfin);
        pt_md_check_unlink(nic, md, &ev);
        return PT_OK;
    }
    op->kind = PT_OP_RNDV_REPLY;
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
