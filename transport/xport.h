/*
 * xport.h - the transport ops table: how fixed-size message slots move between
 * the NIC engines of the ranks of one job, and how bulk data is pulled.
 *
 * Model. Every ordered pair (sender s, receiver r) has two single-producer
 * single-consumer queues of slots, owned by r's engine on the consuming side
 * and by s's engine on the producing side:
 *   PT_CLS_REQ  requests (put, get, getput; data: a copy-mode put's
 *               fragments)
 *   PT_CLS_RSP  responses (ack, reply, fin, nack, rfin, and the cooperative
 *               rendezvous's push and pdone; data: a copy-mode reply's
 *               fragments; protocols/wire.h); a response never
 *               waits for a request, so responses can drain and the
 *               request/response dependency cannot deadlock (see "Order").
 * A queue's free room is the sender's credits towards that receiver: a
 * receiver that stops draining stalls only the senders that target it. (The
 * shm transport builds each queue from a one-line descriptor ring and
 * buffers from the sender's own pool, so a pool running dry can also make
 * reserve return NULL: shm_region.h.)
 * Messages of one class between one pair are delivered in order.
 *
 * Threading: every op is called by the engine-token holder of the calling
 * rank (one thread at a time per rank), except where noted.
 *
 * Sending: slot = reserve(x, peer, cls); fill header+payload; commit(x, peer,
 * cls, len) publishes and rings the peer's doorbell if (and only if) it announced
 * sleep and nobody polls it. reserve returns NULL when out of credits.
 *
 * Receiving: slot = peek(x, &peer, &cls) returns the next message from some
 * sender (round-robin over senders, responses first; shm with many senders
 * listed: at least every 16th peek, and whenever no request waits);
 * release(x, peer, cls)
 * frees it, or defer(x, peer, cls) leaves it queued for a later peek. One
 * message is outstanding at a time.
 *
 * Order (issue 12 item 16). What one sender sent to one receiver is delivered
 * in the order it was committed, across both classes: a peer's FIN, ACK or
 * REPLY is handled before a request it sent later (the put its application
 * sent on seeing the END event the response completed), and its request
 * before a response it sent later. Commit stamps each message with its place
 * in the pair's sequence (the wire header's xord: the sum of the pair's two
 * producer heads, so it resumes with them); peek, when a head's stamp is not
 * the one due next from that sender, compares it with the head of the other
 * class and returns the earlier. One exception keeps two peers from waiting
 * on each other's credits: a request the engine deferred (it needs a
 * response slot towards that sender, or resources, that are not free) lets
 * the same sender's later responses pass it until it is released. A deferred
 * response holds everything behind it.
 */
#ifndef PT_XPORT_H
#define PT_XPORT_H

#include "flagline.h"
#include "futex.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <string.h>
#include <sys/uio.h>

enum pt_cls { PT_CLS_REQ = 0, PT_CLS_RSP = 1, PT_CLS_NR = 2 };

/* peer_caps bits */
#define PT_XPEER_PUSH 1u /* push and coop_word work towards it          */
#define PT_XPEER_IOV1 2u /* its pulls read rendezvous descriptors of one piece */
#define PT_XPEER_NOCMA 4u /* it takes no part in CMA (its PTL_CMA=0, or its probe
                           * failed): a rendezvous it would pull, or whose
                           * memory it would serve, copies through the queues */

struct pt_xport;   /* opaque per-transport state */

#define PT_XPORT_PARK_MAX 8 /* rx_pending_beyond's senders at most */

struct pt_xport_info {
    uint32_t rank;        /* this process's rank in the job                  */
    uint32_t nranks;      /* ranks in the job                                */
    uint32_t nprocs;      /* peer indexes: the ranks, then the guest slots
                           * (processes that joined the running job); `rank`
                           * is this process's index, >= nranks for a guest */
    uint32_t slot_size;   /* bytes per slot (header + inline payload)        */
    uint32_t ranks_here;  /* ranks of the job on this host, which share its
                           * cores (the engine's oversubscription test,
                           * engine/wait.c); 0: unknown (peers may be on
                           * other hosts)                                    */
    uint32_t local_rank;  /* this process's index among the job's processes
                           * on this host (spreads the NIC threads over the
                           * cores: engine/nic.c); a transport that cannot
                           * tell gives the rank                             */
    uint32_t jid;         /* job id                                          */
    bool cma_ok;          /* process_vm_readv to peers works (probed)        */
    uint32_t rndv_iov_max; /* most pieces of memory one rendezvous descriptor
                           * may describe for the peer's pull (ofi: one, a
                           * registration per descriptor); more: the engine
                           * streams through the queues. 0: any            */
    const char *cma_why;  /* if not, why (static string)                     */
    void *trace_area;     /* this rank's flight-recorder area where others can
                           * read it (the job region), or NULL (util/trace.h) */
    uint64_t trace_bytes;
};

struct pt_xport_ops {
    const char *name;
    /* Sends move only while peek runs (a provider's progress: ofi): the
     * engine's run after a command must not leave out the receive side
     * (pt_nic_poll_send), or a message queued by commit waits for the next
     * wait, and a process that exits after its SEND_END loses it. */
    bool tx_needs_peek;
    /* Every pull is posted and moves by itself (ofi: its reads): the first
     * step of an op may be as long as its later ones (engine/target.c,
     * PT_OPS_ASYNC_SEGS). False: the engine learns it from the first step's
     * -EAGAIN (the node region's mix, whose local peers' pulls are copies). */
    bool pull_async;
    /* Sending (token holder). */
    void *(*reserve)(struct pt_xport *x, uint32_t peer, enum pt_cls cls);
    /* len: the bytes of the slot the message uses (a hint: small messages
     * and slot-filling fragments are paced differently). */
    void (*commit)(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len);
    /* Batched doorbells (token holder; NULL: every commit rings). After
     * tx_hold, commits publish their messages but neither fence nor ring
     * until tx_flush(fenced), which fences once (unless the caller's full
     * fence already follows every such commit) and then does, for each peer
     * sent to, what commit does after its fence (the sender's bit, D1). The
     * engine holds only across one pass over its command rings, which never
     * waits for a peer (docs/waiting.md, "D1 after a batch"). */
    void (*tx_hold)(struct pt_xport *x);
    void (*tx_flush)(struct pt_xport *x, bool fenced);
    /* Receiving (token holder). */
    void *(*peek)(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p);
    void (*release)(struct pt_xport *x, uint32_t peer, enum pt_cls cls);
    /* The message peek returned cannot be handled yet (a response slot it
     * needs is full): it stays queued (see "Order" above for what may pass it
     * later), and peek returns nothing more from that peer, in either class,
     * until unhold_all: its order is kept, the other peers go on. */
    void (*defer)(struct pt_xport *x, uint32_t peer, enum pt_cls cls);
    void (*unhold_all)(struct pt_xport *x);
    /* Any thread: is a message waiting for this rank? (sleep rechecks) */
    bool (*rx_pending)(struct pt_xport *x);
    /* Any thread, after its full fence, as rx_pending (the park rule:
     * docs/waiting.md, "Parked for a match"; model/park.pml): a message
     * waiting for this rank other than the requests of the n (at most
     * PT_XPORT_PARK_MAX) senders in parked[], each of whose oldest request
     * waits for a match with the rest of its requests behind it; their
     * responses count. NULL: the engine takes parked requests for work. */
    bool (*rx_pending_beyond)(struct pt_xport *x, const uint32_t *parked, uint32_t n);
    /* Cold path, any thread (the engine's backstop, engine/wait.c): up to
     * max ranks whose messages rx_pending sees; returns how many it wrote.
     * NULL where the transport cannot tell. */
    uint32_t (*rx_pending_from)(struct pt_xport *x, uint32_t *peers, uint32_t max);
    /* Cold path, any thread (the backstop's verdict): rx_pending's sources
     * in words, into buf (always terminated). NULL: nothing to add. */
    void (*rx_describe)(struct pt_xport *x, char *buf, size_t len);
    /* Bulk: copy from the peer's address space into local iovecs (CMA or a
     * same-process memcpy). Returns bytes copied or -errno (-EPERM/-ENOSYS:
     * CMA refused; the caller falls back to copying through the queues).
     * A transport that moves the bytes by itself (ofi's RMA reads) may take
     * the step and answer -EAGAIN: the engine makes the same call again
     * (same peer, desc and first addresses; the length may differ) until it
     * answers the bytes moved from the start, or an error; -EBUSY: no step
     * taken (as many in flight as it holds, or the provider's queue full),
     * ask again later. desc: the descriptor's id (pt_xport_desc_id of the
     * rendezvous header the transfer came with), so that a transport that
     * registered memory per descriptor reads with that descriptor's own key. */
    ssize_t (*pull)(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                    const struct iovec *remote, int nremote, uint64_t desc);
    /* Bulk, the other way: copy local iovecs into the peer's address space
     * (CMA write), for the cooperative rendezvous (wire.h, PUSH). Optional:
     * NULL when the transport cannot (ofi); the engine then never offers to
     * push. Same returns as pull. */
    ssize_t (*push)(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                    const struct iovec *remote, int nremote);
    /* The claim word k (< PT_XPORT_COOP_WORDS) of process `owner` (this one
     * or a peer), in memory both share, or NULL (k out of range; a transport
     * without push has none). The cooperative rendezvous decides with one
     * CAS on it who writes the part a PUSH asks for (shm_region.h, "Claim
     * words"). Any thread. */
    _Atomic uint32_t *(*coop_word)(struct pt_xport *x, uint32_t owner, uint32_t k);
    /* The PT_FLAG_SLOTS flag slots of process `owner` (this one or a peer;
     * util/flagline.h) in memory both share, or NULL (no such memory towards
     * it: the op unset, another host). Written by their owner only; the
     * collective library's flag path (coll/flag.c) uses them. Any thread. */
    struct pt_flagslot *(*flag_lines)(struct pt_xport *x, uint32_t owner);
    /* Any thread, one acquire load: process `peer` (sharing flag_lines'
     * memory) closed its NI in order (PtlNIFini) and has not attached again:
     * what it published before (its flag slots' seqs) is visible after a
     * true answer (the close's release). NULL or false: not known. The
     * collective flag path's waits fail on such a member (coll/flag.c). */
    bool (*peer_left)(struct pt_xport *x, uint32_t peer);
    /* Liveness: false once the peer is known dead (its NI must fail ops). */
    bool (*peer_alive)(struct pt_xport *x, uint32_t peer);
    /* The engine (token holder): process slot `peer` (a guest's) changed
     * hands since the engine last asked: the owner it dealt with left and
     * another took the slot, so nothing of what is in flight with `peer`
     * will be answered (the new owner drops it). True once per change.
     * NULL: slots never change hands (no guests). */
    bool (*peer_moved)(struct pt_xport *x, uint32_t peer);
    /* The doorbell this rank's NIC thread sleeps on (lives where peers reach it). */
    struct pt_waitword *(*doorbell)(struct pt_xport *x);
    /* AF (engine/wait.h): on: this rank's engine runs AF-M after every
     * announcement on the doorbell from now on (pt_wait_set_af came first),
     * so peers may publish to it without F-SND; off: withdraw. True when
     * peers were told (the transport has such a fence to skip and this
     * process could register for the global membarrier). Optional (NULL:
     * never). Setup and teardown only. */
    bool (*af_offer)(struct pt_xport *x, bool on);
    /* Peer's OS pid (for CMA) and the Portals nid/pid of a rank. */
    pid_t (*peer_ospid)(struct pt_xport *x, uint32_t peer);
    /* Map a Portals process id to a peer index (< nprocs); -1 if no process
     * of the job has it now (guests are looked up in the region each time).
     * A rank's id (index < nranks) never changes while the transport is
     * open: the engine and each API thread remember the last one they
     * resolved (initiator.c, api/move.c). */
    int (*rank_of)(struct pt_xport *x, uint32_t nid, uint32_t pid);
    void (*id_of)(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p);
    /* Any thread, cheap (one relaxed load): non-zero once some rank of the
     * job died or the launcher declared the job failed; the value is the
     * PTL_NI_* failure code to report (PTL_NI_PEER_DIED). */
    uint32_t (*job_failed)(struct pt_xport *x);
    /* Any thread, cheap (one relaxed load): how many of the job's processes
     * have left it in order and ended (the launcher counts them; 0 where no
     * launcher does). A change means: ask peer_alive about the peers still
     * owing us something. */
    uint32_t (*departures)(struct pt_xport *x);
    /* Mark this rank as finished (orderly PtlNIFini) and detach. */
    void (*close)(struct pt_xport *x);
    /* Sleeping (engine/wait.c). A transport whose arrivals do not ring the
     * doorbell (ofi: they come through the provider) returns a descriptor
     * that becomes readable when something may have arrived or a peer may
     * have died; engine sleepers poll() it beside their own eventfd (the
     * offload NIC thread only while nobody holds the engine: the holder
     * reads the CQ and hands the descriptor back, D5 in engine/wait.h). Its
     * rx_pending is then also the "trywait": false means nothing is pending
     * and any later arrival makes the descriptor readable. NULL or -1: peers
     * ring the doorbell (shm, loopback). Any thread. */
    int (*wait_fd)(struct pt_xport *x);
    /* Beside wait_fd, with the same contract: a descriptor the sleepers poll
     * directly instead of through wait_fd's epoll set (ofi: the CQ's wait
     * object). Every wake-up of a descriptor inside an epoll set also runs
     * the set's callback, and this one wakes at every completion: on the
     * message path, whether or not anybody sleeps (0.1-0.2 us per 8 B half
     * round trip over tcp;ofi_rxm, bench/ptl_ofifloor --wait nest). NULL or
     * -1: none. Any thread. */
    int (*cq_fd)(struct pt_xport *x);
    /* Beside wait_fd: a descriptor that peers of this host make readable
     * when they ring the bell (after the seq bump; transport/shm.c,
     * ring_sock), drained by the sleepers (recv until empty) before they
     * look at seq; or NULL / -1. Any thread. */
    int (*ring_fd)(struct pt_xport *x);
    /* Optional, cold path (a rendezvous of a many-piece MD; a large put's
     * offer to have part of it pushed): what the transport can do towards
     * one peer, where that differs by peer (mix.c: the node's region or
     * ofi). PT_XPEER_* bits. NULL: the same for every peer (the NI's
     * rndv_iov_max; push when push and coop_word are set). Token holder. */
    uint32_t (*peer_caps)(struct pt_xport *x, uint32_t peer);
    /* The credit wait (docs/waiting.md, "Stalled on credits"; model
     * model/credit.pml). Optional: the first three together or none;
     * without them a command stalled on credits stays work for the
     * sleepers' rechecks (the engine polls until it goes through), as
     * before. rx_done may be NULL with them: a transport whose receivers
     * return room by message (ofi) has nobody to ring.
     * stall_counter: once at open: the address of a counter (token holder
     * only, plain reads) that reserve raises each time it returns NULL
     * after arming a mark that the peer which frees the room will see
     * (C-ARM, C-FENCE, C-HEAD found no room).
     * stall_clear: token holder: forget the marks armed so far (the engine
     * calls it before it retries its stalled commands).
     * (ofi: credits come back by message, so the "mark" is an epoch the
     * token holder raises as they arrive: docs/waiting.md, "Over ofi".)
     * stall_armed: any thread, after its full fence (the sleepers' S2/W2
     * and D3/D4 rechecks): a mark was armed since stall_clear and every
     * mark armed since is still set, so no peer has freed room since
     * (C-RECHECK). A racing token holder may make it answer false: work, a
     * spurious run at worst.
     * rx_done: token holder, after a receive pass that released messages:
     * ring the senders that wait for the room freed (R-FENCE .. R-RING);
     * fenced: the caller executed a full fence after its last release
     * (then R-FENCE is that one). */
    const uint32_t *(*stall_counter)(struct pt_xport *x);
    void (*stall_clear)(struct pt_xport *x);
    bool (*stall_armed)(struct pt_xport *x);
    void (*rx_done)(struct pt_xport *x, bool fenced);
};

/* Open the transport for this process: the shared job region when the
 * environment names one (PTL_JOB_FD / PTL_JOB set by ptlrun), otherwise a
 * loopback job of one. Returns 0 or -errno (message logged). */
int pt_xport_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                  const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                  struct pt_xport_info *info_p);

/* PtlNIInit, before the transport opens: the Portals pid this process asks
 * for should it join the job as a guest (an explicit PtlNIInit pid, or its
 * entry in the pid map the application set with PtlSetRank + PtlSetPIDMap),
 * or PTL_PID_ANY (0xffffffff). Read by pt_shm_open (under its lock). */
void pt_xport_set_guest_pid(uint32_t pid);
uint32_t pt_xport_guest_pid(void);

/* A rank started by ptlrun (PTL_LAUNCHER_PID) ends when ptlrun is gone,
 * even behind a wrapper process (launcher.c). Idempotent. */
void pt_launcher_watch(void);
/* The last NI closed: end the watch (a process with no thread left exits). */
void pt_launcher_unwatch(void);
/* The launcher this process's watch follows (PTL_LAUNCHER_PID: ptlrun, also
 * behind a wrapper), or 0 (no watch started in this process). Cold path. */
pid_t pt_launcher_pid(void);
/* fork() (api/fork.c): wait, until deadline_ns (pt_now_ns) at most, for a
 * watch thread this process started to be past its start-up (where ASan's
 * runtime allocates); after it, it only sleeps. False on timeout. */
bool pt_launcher_fork_settle(uint64_t deadline_ns);

/* Slot geometry, computed in one place for the engine (pt_nic_create) and the
 * launcher (ptlrun), which must agree before any rank starts:
 *   slot = round_up_64(128 + max(max(eager_max, PT_XPORT_GETPUT_MAX),
 *                                PT_XPORT_RNDV_DESC))
 * 128 is the wire header (protocols/wire.h); PT_XPORT_GETPUT_MAX is the
 * largest PtlGetPut payload (always inline, limits.max_getput_md);
 * PT_XPORT_RNDV_DESC is the largest rendezvous descriptor, (PT_MAX_IOV + 1)
 * struct pt_wire_iov of 16 bytes (protocols/proto.h). The engine should
 * static_assert that its constants equal these. */
#define PT_XPORT_HDR_BYTES   128u
#define PT_XPORT_SEQ_OFF     0u    /* the transport's word (wire header's xseq): loopback's slot sequence, shm's ring buffer length and P-HEAD */
#define PT_XPORT_ORD_OFF     124u  /* the message's order stamp (wire header's xord) */
#define PT_XPORT_GETPUT_MAX  64u
#define PT_XPORT_COOP_WORDS  64u   /* claim words per process (shm_region.h) */
#define PT_XPORT_RNDV_DESC   (65u * 16u)
#define PT_XPORT_MIN_SLOT    ((PT_XPORT_HDR_BYTES + PT_XPORT_RNDV_DESC + 63u) & ~63u)

/* What the transport reads of the wire header (protocols/wire.h, a layer
 * above: the engine static_asserts that these match). The ofi transport
 * registers a rendezvous descriptor's memory for remote reads when it
 * sends it, tells the puller the key, and ends the registration when the
 * descriptor's answer passes: FIN (echoes the put's req) or RFIN (echoes the
 * reply's tgt_md, tgt_offset, mlength and tgt_link). It reads nothing else
 * of the header but the order stamp it writes. */
#define PT_XPORT_OP_OFF       4u    /* uint8_t op                               */
#define PT_XPORT_FLAGS_OFF    5u    /* uint8_t flags                            */
#define PT_XPORT_NIOV_OFF     6u    /* uint16_t niov                            */
#define PT_XPORT_REQ_OFF      108u  /* uint32_t req                             */
#define PT_XPORT_TGT_LINK_OFF 120u  /* uint32_t tgt_link                        */
#define PT_XPORT_TGT_MD_OFF   40u   /* uint32_t tgt_md                          */
#define PT_XPORT_MLENGTH_OFF  80u   /* uint64_t mlength                         */
#define PT_XPORT_TGT_OFFSET_OFF 96u /* uint64_t tgt_offset                      */
#define PT_XPORT_W_PUT        1u
#define PT_XPORT_W_REPLY      5u
#define PT_XPORT_W_FIN        6u
#define PT_XPORT_W_RFIN       8u
#define PT_XPORT_F_RNDV       2u    /* the payload is (addr, len) pairs         */

/* What a rendezvous descriptor and the answer that ends its life both
 * carry: a put's req (unique while it waits), or a reply's target MD,
 * offset, length and GET_START link (the link alone is 0 when start events
 * are off). Two replies with the same id describe the same memory. The
 * engine hands it to pull (desc); ofi keys its registrations by it. */
static inline uint64_t pt_xport_desc_id(const void *h)
{
    const char *b = (const char *)h;
    uint8_t op = (uint8_t)b[PT_XPORT_OP_OFF];
    uint32_t u;
    if (op == PT_XPORT_W_PUT || op == PT_XPORT_W_FIN) {
        memcpy(&u, b + PT_XPORT_REQ_OFF, sizeof u);
        return u;
    }
    uint32_t md, link;
    uint64_t off, mlen;
    memcpy(&md, b + PT_XPORT_TGT_MD_OFF, sizeof md);
    memcpy(&link, b + PT_XPORT_TGT_LINK_OFF, sizeof link);
    memcpy(&off, b + PT_XPORT_TGT_OFFSET_OFF, sizeof off);
    memcpy(&mlen, b + PT_XPORT_MLENGTH_OFF, sizeof mlen);
    uint64_t v = md | (uint64_t)link << 32;
    v ^= off * 0x9e3779b97f4a7c15ull;
    v ^= mlen * 0xc2b2ae3d27d4eb4full;
    return v;
}
#define PT_XPORT_IOV_MAX      65u   /* PT_MAX_IOV + 1                            */
uint32_t pt_slot_size_for(uint32_t eager_max);

/* FNV-1a of a string: names turned into words that processes compare (a
 * PMIx namespace's job id, a boot id, a libfabric provider's name). */
static inline uint32_t pt_fnv1a32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}
/* Queue depth from PTL_QUEUE_SLOTS: the next power of two, at least 4. */
uint32_t pt_queue_slots_for(uint32_t want);

/* Scatter/gather copy within this address space (a transfer to or from
 * ourselves). Returns the bytes copied. */
ssize_t pt_iov_copy_local(const struct iovec *local, int nlocal, const struct iovec *remote,
                          int nremote);

/* The loopback transport (a job of one, private memory). */
int pt_loopback_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid,
                     const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p);

#endif
