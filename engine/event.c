/*
 * event.c - posting events to an MD's EQ, honouring the START/END disable
 * options (§6.9): START_DISABLE drops *_START, END_DISABLE drops *_END; ACK
 * and UNLINK are dropped only when both are set (REF). Threshold accounting
 * and unlinking never depend on whether an event was posted.
 */
#include "nic.h"

/* Event kinds as bits (the kinds are 0..11, types.h). */
#define KIND_BIT(k) (1u << (k))
static const unsigned start_kinds = KIND_BIT(PTL_EVENT_GET_START) | KIND_BIT(PTL_EVENT_PUT_START) |
                                    KIND_BIT(PTL_EVENT_GETPUT_START) |
                                    KIND_BIT(PTL_EVENT_REPLY_START) | KIND_BIT(PTL_EVENT_SEND_START);
static const unsigned end_kinds = KIND_BIT(PTL_EVENT_GET_END) | KIND_BIT(PTL_EVENT_PUT_END) |
                                  KIND_BIT(PTL_EVENT_GETPUT_END) | KIND_BIT(PTL_EVENT_REPLY_END) |
                                  KIND_BIT(PTL_EVENT_SEND_END);
_Static_assert(PTL_EVENT_UNLINK < 32, "event kinds fit the masks");

static bool is_start(ptl_event_kind_t k) { return (unsigned)k < 32 && (start_kinds >> k & 1); }

uint16_t pt_md_ev_kinds(const ptl_md_t *umd)
{
    if (umd->eq_handle == PTL_EQ_NONE)
        return 0;
    unsigned opt = umd->options, all = (1u << (PTL_EVENT_UNLINK + 1)) - 1;
    bool sd = opt & PTL_MD_EVENT_START_DISABLE, ed = opt & PTL_MD_EVENT_END_DISABLE;
    if (sd && ed)
        return 0; /* ACK and UNLINK too (REF) */
    return (uint16_t)(all & ~(sd ? start_kinds : 0) & ~(ed ? end_kinds : 0));
}
_Static_assert(PTL_EVENT_UNLINK < 16, "the kinds fit pt_md.ev_kinds");

/* The EQ an MD names is looked up at every post (an EQ freed under an MD is a
 * user error the spec allows: its events are then lost, memory is not
 * corrupted). The engine (token holder) remembers the last handle it
 * resolved; retiring that EQ, also done by the engine, clears it (obj.c). */
static inline struct pt_eqo *ev_eqo(struct pt_nic *nic, uint32_t h)
{
    if (h == nic->ev_eq_h)
        return nic->ev_eq;
    struct pt_eqo *e = pt_eqo_lookup(nic, h);
    if (e) {
        nic->ev_eq_h = h;
        nic->ev_eq = e;
    }
    return e;
}

/* The EQ an event of this kind on md goes to, or NULL: none, or disabled
 * (md->ev_kinds, one test). */
static inline struct pt_eqo *ev_dest(struct pt_nic *nic, const struct pt_md *md,
                                     ptl_event_kind_t kind)
{
    if (!((unsigned)md->ev_kinds >> (unsigned)kind & 1))
        return NULL;
    return ev_eqo(nic, md->umd.eq_handle);
}

ptl_seq_t pt_ev_start_link(struct pt_nic *nic, const struct pt_md *md, ptl_event_kind_t kind)
{
    struct pt_eqo *e = ev_dest(nic, md, kind);
    return e ? (ptl_seq_t)LD_RELAXED(&e->q->write_count) : 0;
}

/* pt_ev_post's body (nic.h: it calls this only when there is something to
 * do). */
void pt_ev_deliver(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind, ptl_event_t *ev)
{
    if (PT_UNLIKELY(md->ct_opts)) /* PtlMDBindCT: counted whether or not an event is posted */
        pt_ct_count(nic, md, kind, ev->ni_fail_type != PTL_NI_OK);
    struct pt_eqo *e = ev_dest(nic, md, kind);
    if (!e)
        return;
    ev->type = kind;
    ev->md_handle = pt_md_handle(nic, md);
    pt_md_snapshot(md, &ev->md);
    if (is_start(kind)) /* START's link is its own sequence; its END carries the same */
        ev->link = (ptl_seq_t)LD_RELAXED(&e->q->write_count);
    pt_eq_post(e->q, ev);
    PT_TRACE(nic, PT_TR_EVENT, (uint64_t)kind | (uint64_t)ev->ni_fail_type << 8);
    pt_ev_note(nic, e);
}

/* Every END owed has an end, a dead peer's included (a live application's
 * PtlMDUpdate with this EQ as its test EQ waits for it, cmd.c): a rendezvous
 * put's at its pull (failed: the pull fails, or coop_lost), a copy-mode
 * put's at its last fragment or fail_dead_peers (the stream), a copy-mode
 * reply's when its stream has left or failed (pt_copy_send_step), a
 * rendezvous reply's at its RFIN or pt_rfw_fail_peer (every such reply has
 * a record: target.c, rfw_add). An EQ freed meanwhile takes its count with
 * it (its handle no longer resolves). */
bool pt_ev_owe(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind)
{
    struct pt_eqo *e = ev_dest(nic, md, kind);
    if (!e)
        return false;
    e->owed++;
    return true;
}

/* The MD's EQ handle and event kinds cannot change while the request is
 * pending (PtlMDUpdate is refused then), so this finds the EQ pt_ev_owe
 * counted on, unless it was freed meanwhile (its handle no longer resolves;
 * a new EQ in its slot starts at 0). */
void pt_ev_post_owed(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind,
                     ptl_event_t *ev, bool owed)
{
    if (owed) {
        struct pt_eqo *e = ev_dest(nic, md, kind);
        if (e && e->owed)
            e->owed--;
    }
    pt_ev_post(nic, md, kind, ev);
}

/*
 * A full EQ. Portals lets the oldest event be overwritten (the reader then
 * gets PTL_EQ_DROPPED), but clients size EQs for the events that arrive
 * between two of their reads (REF's put_bw: 5 events, one message in flight)
 * and count on the engine not outrunning them by itself. It did: a reader
 * that ran the engine inside PtlEQWait handled up to PT_RX_BATCH messages in
 * one poll while their sender, ACKed each time, kept sending, and the NIC
 * thread did the same while its application waited for the core. So a
 * request whose START and END events do not fit is deferred (the engine's
 * AGAIN: it stays queued, its sender held for the rest of the poll) until
 * the reader has made room, for at most PTL_EQ_ROOM_WAIT_US per EQ (20 ms:
 * on two cores shared by four ranks' eight threads a woken reader was seen
 * to wait more than 2 ms for a core); after that, and until the reader
 * reads again, requests are delivered and the oldest events overwritten, as
 * before (a reader that never reads, or that waits on another EQ for a
 * message queued behind this one, costs that delay once, not per request).
 * The NIC thread yields its core while it defers: the reader may be waiting
 * for it. Not for an EQ smaller than the request's events. The hot path
 * pays an EQ lookup and one compare with the cached read count (about 70
 * instructions per request, callgrind). Responses (ACK, REPLY, SEND_END)
 * are never deferred. The ENDs still owed to the EQ (pt_ev_owe: requests
 * accepted whose END comes after a pull or the last fragment) count as
 * posted: without them 16 rendezvous puts were all accepted against an empty
 * 4-entry EQ and 12 of their ENDs overwrote unread ones (mp_eqroom owed).
 */
bool pt_ev_room(struct pt_nic *nic, struct pt_md *md)
{
    unsigned opt = md->umd.options;
    uint64_t need = (uint64_t)!(opt & PTL_MD_EVENT_START_DISABLE) +
                    !(opt & PTL_MD_EVENT_END_DISABLE);
    if (!need || md->umd.eq_handle == PTL_EQ_NONE)
        return true;
    struct pt_eqo *e = ev_eqo(nic, md->umd.eq_handle);
    if (!e || need > e->q->size)
        return true;
    struct pt_eq *q = e->q;
    uint64_t w = LD_RELAXED(&q->write_count) + e->owed; /* as if posted */
    if (PT_LIKELY(w - e->rd_cached + need <= q->size) || !nic->eq_room_ns)
        return true;
    e->rd_cached = LD_ACQUIRE(&q->read_count); /* pairs with the readers' CAS (eq.h) */
    if (w - e->rd_cached + need <= q->size || e->rd_gave_up == e->rd_cached) {
        e->room_since = 0;
        return true;
    }
    if (pt_wait_on_nic_thread())
        pt_ev_wake(nic); /* a reader asleep must hear of them now (D6) */
    if (!pt_wait_patience(&e->room_since, nic->eq_room_ns))
        return false;
    e->rd_gave_up = e->rd_cached;
    return true;
}
