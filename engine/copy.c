/*
 * copy.c - the copy-through-the-queues protocol (PT_PROTO_COPY): the sender's
 * engine streams the payload as PT_W_DATA fragments behind the request (or
 * reply) header in the same per-pair queue; the receiver's engine assembles
 * them into the matched MD. Two copies, pipelined, no CMA: the fallback when
 * process_vm_readv is refused, and auto mode's choice for mid sizes.
 *
 * Ordering: fragments of one transfer follow their header in one SPSC queue;
 * a sender starts at most one stream per (class, receiver) (copy_busy), so the
 * receiver keys its assembly state by (class, sender). Other messages may
 * interleave; they are not DATA, so they do not disturb the stream.
 */
#include "nic.h"

#include <string.h>

enum pt_proto_kind pt_nic_choose(struct pt_nic *nic, uint64_t len)
{
    return pt_proto_choose(len, nic->eager_max, nic->rndv_mode, nic->cma_ok, nic->cma_min);
}

/* Pieces of m that [off, off + len) touches (empty pieces not counted). */
static uint32_t mem_pieces(const struct pt_mem *m, uint64_t off, uint64_t len)
{
    uint32_t k = 0;
    uint64_t at = 0, end = off + len;
    for (uint32_t i = 0; i < m->niov && at < end; i++) {
        uint64_t l = m->iov[i].iov_len;
        if (l && at + l > off)
            k++;
        at += l;
    }
    return k;
}

enum pt_proto_kind pt_nic_choose_md(struct pt_nic *nic, uint32_t peer, uint64_t len,
                                    const struct pt_md *md, uint64_t off)
{
    enum pt_proto_kind pk = pt_nic_choose(nic, len);
    if (pk != PT_PROTO_RNDV)
        return pk;
    uint32_t lim = nic->rndv_iov_max;
    if (nic->xo->peer_caps) { /* per peer (shm: CMA; a PMIx job's node peers and others) */
        uint32_t caps = nic->xo->peer_caps(nic->x, peer);
        if (caps & PT_XPEER_NOCMA)
            return PT_PROTO_COPY; /* the peer's PTL_CMA=0, or its probe failed */
        lim = caps & PT_XPEER_IOV1 ? 1 : 0;
    }
    if (md->mem.niov < 2)
        return pk;
    if (lim && md->mem.niov > lim && mem_pieces(&md->mem, off, len) > lim)
        pk = PT_PROTO_COPY; /* (an audit: ofi registered the first piece only) */
    return pk;
}

bool pt_nic_push_ok(struct pt_nic *nic, uint32_t peer)
{
    return !nic->xo->peer_caps || (nic->xo->peer_caps(nic->x, peer) & PT_XPEER_PUSH);
}

int pt_copy_send_start(struct pt_nic *nic, struct pt_md *md, uint64_t src_off, uint64_t left,
                       uint32_t peer, enum pt_cls cls, ptl_event_kind_t end_kind,
                       const ptl_event_t *ev)
{
    struct pt_op *op = pt_op_get(nic);
    if (!op)
        return PT_E_AGAIN;
    op->kind = PT_OP_COPY_SEND;
    op->md = md;
    op->src_off = src_off;
    op->left = left;
    op->rsp_peer = peer;
    op->cls = (uint8_t)cls;
    op->end_kind = end_kind;
    op->ev = *ev;
    /* a reply's END is the target's request's (room-checked); SEND_END is ours */
    op->owes_end = end_kind == PTL_EVENT_GET_END && pt_ev_owe(nic, md, end_kind);
    md->pending++;
    nic->copy_busy[cls][peer] = 1;
    PT_TRACE(nic, PT_TR_XFER_START, PT_TV_XFER(peer, left));
    return PT_OK;
}

/* The credit wait (docs/waiting.md), for a stream as for a command: a stream
 * out of credits whose reserve armed a mark (the transport's stall counter
 * moved) is no local work while every mark still holds (pt_nic_local_work,
 * C-RECHECK): the receiver that frees room clears its mark and rings us. So
 * the sender's NIC thread sleeps instead of polling a full ring beside the
 * receiver (mp_sizes 16777216 without CMA, 1 KiB slots, two unpinned ranks,
 * offload: 7.5 s before, 3.2-4.3 s after; docs/waiting.md). */
static void copy_cstall(struct pt_nic *nic, struct pt_op *op, uint8_t on)
{
    if (op->cstall == on)
        return;
    op->cstall = on;
    ST_RELAXED(&nic->nops_cstall, LD_RELAXED(&nic->nops_cstall) + (on ? 1u : (uint32_t)-1));
    if (on)
        nic->cstall = true; /* marks cleared and re-armed at the next pass (drain_cmds) */
}

/* Send as many fragments as credits allow (bounded). Returns work done;
 * completes and frees the op when everything has left. */
int pt_copy_send_step(struct pt_nic *nic, struct pt_op *op)
{
    int work = 0;
    uint32_t room = pt_slot_room(nic);
    for (int b = 0; b < 16 && op->left; b++) {
        uint32_t arms = *nic->stall_ctr;
        struct pt_wire_hdr *h = nic->xo->reserve(nic->x, op->rsp_peer, (enum pt_cls)op->cls);
        if (!h) {
            if (!nic->xo->peer_alive(nic->x, op->rsp_peer)) {
                op->failed = 1;
                PT_TRACE(nic, PT_TR_XFER_FAIL, PT_TV_XFER(op->rsp_peer, op->left));
                op->left = 0;
            } else if (*nic->stall_ctr != arms) {
                copy_cstall(nic, op, 1); /* the receiver rings us when it frees room */
            }
            break;
        }
        copy_cstall(nic, op, 0);
        uint64_t n = op->left < room ? op->left : room;
        pt_wire_clear(h);
        h->op = PT_W_DATA;
        h->src_nid = nic->id.nid;
        h->src_pid = nic->id.pid;
        h->inline_len = (uint32_t)pt_mem_read(&op->md->mem, op->src_off, pt_wire_payload(h), n);
        if (h->inline_len < n) { /* the MD shrank under us (MDUpdate is refused while busy) */
            memset((char *)pt_wire_payload(h) + h->inline_len, 0, n - h->inline_len);
            h->inline_len = (uint32_t)n;
        }
        pt_xmit(nic, op->rsp_peer, (enum pt_cls)op->cls, h);
        op->src_off += n;
        op->left -= n;
        work++;
    }
    if (op->left)
        return work;
    copy_cstall(nic, op, 0);
    struct pt_md *md = op->md;
    if (op->failed)
        op->ev.ni_fail_type = PTL_NI_PEER_DIED; /* only a dead peer stops a stream */
    pt_ev_post_owed(nic, md, op->end_kind, &op->ev, op->owes_end);
    nic->copy_busy[op->cls][op->rsp_peer] = 0;
    md->pending--;
    pt_md_check_unlink(nic, md, &op->ev);
    pt_op_put(nic, op);
    return work + 1;
}

/* A DATA fragment of the stream from `peer` in class `cls`. */
int pt_rx_data(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer, enum pt_cls cls)
{
    struct pt_copyin *st = &nic->cin[cls][peer];
    if (!st->active || h->inline_len > pt_slot_room(nic)) {
        nic->drops_bad_header++;
        return PT_OK;
    }
    uint64_t n = h->inline_len;
    bool last = st->got + n >= st->rlen;
    struct pt_wire_hdr *ack = NULL;
    if (last && st->ack && st->md) {
        ack = nic->xo->reserve(nic->x, peer, PT_CLS_RSP);
        if (!ack)
            return PT_E_AGAIN; /* before any side effect */
    }
    if (st->md && st->got < st->mlen && !st->afail) {
        uint64_t take = st->mlen - st->got < n ? st->mlen - st->got : n;
        if (PT_UNLIKELY(st->atomic)) {
            /* A reduction put: every fragment but the last is a whole slot
             * room (a multiple of 64 bytes, pt_slot_size_for), so each
             * starts on an element; mlen is whole elements (checked). */
            if (!pt_atomic_whole(st->acode, st->got | take))
                st->afail = 1; /* a fragment no initiator of ours cuts */
            else
                pt_atomic_apply(&st->md->mem, st->off + st->got, pt_wire_payload(h), take,
                                st->acode);
        } else
            pt_mem_write(&st->md->mem, st->off + st->got, pt_wire_payload(h), (size_t)take);
    }
    st->got += n;
    if (!last)
        return PT_OK;
    st->active = 0;
    nic->cin_live--;
    struct pt_md *md = st->md;
    if (!md)
        return PT_OK; /* a dropped put's data, swallowed */
    if (PT_UNLIKELY(st->afail)) { /* a reduction whose length is no whole element count */
        st->ev.ni_fail_type = PTL_NI_FAIL;
        st->ack_hdr.flags |= PT_WF_FAIL;
        st->ack_hdr.mlength = 0;
    }
    pt_ev_post_owed(nic, md, st->is_reply ? PTL_EVENT_REPLY_END : PTL_EVENT_PUT_END, &st->ev,
                    st->owes_end);
    if (ack) {
        pt_wire_copy(ack, &st->ack_hdr);
        pt_xmit(nic, peer, PT_CLS_RSP, ack);
    }
    md->pending--;
    pt_md_check_unlink(nic, md, &st->ev);
    return PT_OK;
}
