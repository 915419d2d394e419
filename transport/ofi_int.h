/*
 * ofi_int.h - what the files of the libfabric transport share and no one
 * else sees: the wire prefixes, the rank's transport state (struct
 * pt_xport), a few inline helpers, and the functions one file defines for
 * another. The public side is ofi.h; the overview of the transport is at the
 * top of ofi.c.
 *
 *   ofi.c       the data path and the ops table: reserve, commit, peek,
 *               release, defer, rx_pending; the CQ's progress (completions,
 *               arrivals, queued sends, credit messages) and the rendezvous
 *               registrations that commit makes and an answer ends (they run
 *               per message: kept beside their callers, as inlined as before)
 *   ofi_pull.c  the RMA pull: asynchronous steps of fi_read, and giving a
 *               step up when its peer is lost
 *   ofi_peer.c  peer liveness: dead and lost peers, the probes (probe_tick)
 *               and the kernel's check of a late peer's address
 *   ofi_open.c  provider choice, opening (fabric, endpoint, buffers, the
 *               sleep set), connecting (connect_all), pt_ofi_open*, close and
 *               free, pt_ofi_describe
 *
 * Threads: one, the engine-token holder, at a time, for everything here but
 * the fields of struct pt_xport marked "any thread" (see there).
 */
#ifndef PT_OFI_INT_H
#define PT_OFI_INT_H

#include "ofi.h"
#include "ofi_fabric.h"

#include "log.h"
#include "pt_atomic.h"

#include <rdma/fabric.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define OFI_PFX        64u           /* transport prefix before every slot       */
#define OFI_MAGIC      0x4f50u       /* "PO"                                      */
#define OFI_SMAGIC     0x5350u       /* "PS": a short data message (ofi_spfx)      */
#define OFI_K_DATA     1u
#define OFI_K_CREDIT   2u
#define OFI_K_BYE      3u            /* PMIx job: the sender's NI closes (orderly) */
#define OFI_K_PROBE    4u            /* PMIx job: liveness probe, no content       */
/* Host mode's connections (connect_all): none (never probed), the first
 * probe sent, up (the provider wrote a probe to the connection). */
enum { OFI_CONN_NONE = 0, OFI_CONN_ASKED = 1, OFI_CONN_UP = 2 };
#define OFI_CONNECT_MAX 256u /* host mode probes jobs up to this size (a socket per peer) */
#define OFI_PROBE_MAX  64u           /* peers probed per probe period, at most     */
#define OFI_PROBE_LATE 4u            /* periods (ours) a probe may stay uncompleted
                                      * (providers without the kernel's check)    */
#define OFI_PROBE_CHECK 2u           /* periods (ours) before the kernel's check   */
#define OFI_CHECK_SHIFT_MAX 6u       /* checks of a live peer: 2, 4, .. 64 periods apart */
#define OFI_BYE_MS     2000u         /* close: how long byes may take to leave     */
#define OFI_LOST_MS    5000          /* ptlrun job: a failed send's wait for a death */
#define OFI_DRAIN_MS   2000          /* a lost peer's posted reads: the wait for their end */
#define OFI_NRBUF      4u            /* multi-receive buffers posted              */
#define OFI_CQ_BATCH   16
#define OFI_MAX_PENDING_POLLS 2000000u /* pull: polls before giving up on a read  */
#define OFI_FAULT_EAGAIN 1u     /* PTL_OFI_FAULT (tests only, ofi_pull): every fi_read
                                 * answered -FI_EAGAIN, nothing posted              */
#define OFI_FAULT_NOCOMPL 2u    /* ... the reads posted, their completions not counted */
#define OFI_FAULT_SENDERR 3u    /* (try_send) rank 0's 10th data message fails         */
enum { OFI_WHY_SEND = 1, OFI_WHY_REFUSED = 2, OFI_WHY_LATE = 3, OFI_WHY_LAUNCHER = 4 };
#define OFI_IFACE_WAIT_MS 10000 /* open, peers on other hosts: how long to wait
                                 * for a non-loopback address (open_fabric)  */

/* The wire-header fields this transport reads (xport.h, "What the transport
 * reads of the wire header"; the engine asserts these offsets). */
struct ofi_wiov {
    uint64_t addr, len;
};
#define W_U8(h, off)  (((const uint8_t *)(h))[off])
#define W_U16(h, off) (*(const uint16_t *)((const char *)(h) + (off)))
#define W_U32(h, off) (*(const uint32_t *)((const char *)(h) + (off)))
#define W_OP(h)       W_U8(h, PT_XPORT_OP_OFF)
#define W_FLAGS(h)    W_U8(h, PT_XPORT_FLAGS_OFF)
#define W_NIOV(h)     W_U16(h, PT_XPORT_NIOV_OFF)
#define W_IOV(h)      ((const struct ofi_wiov *)((const char *)(h) + PT_XPORT_HDR_BYTES))
#define W_U64(h, off) (*(const uint64_t *)((const char *)(h) + (off)))
/* Descriptors are keyed by pt_xport_desc_id (xport.h). Two replies with the
 * same id describe the same memory: either's key reads it, so the reader may
 * end either one, but both sides must end the same one: the answer names the
 * key the reader forgot (rkey_end, reg_end). */

/* The prefix every message carries (64 bytes, so slots stay 64-aligned). */
struct ofi_pfx {
    uint16_t magic;
    uint16_t kind;      /* OFI_K_*                                              */
    uint16_t cls;       /* data: enum pt_cls                                    */
    uint16_t pad0;
    uint32_t src;       /* sender's rank                                        */
    uint32_t len;       /* data: bytes of the slot that follow                  */
    uint32_t cred[PT_CLS_NR]; /* credits the sender returns to the receiver    */
    uint64_t rkey;      /* data, rendezvous descriptor: key of its memory;     *
                         * FIN, RFIN: the key the reader forgot (reg_end)      */
    uint8_t pad[OFI_PFX - 32];
};
_Static_assert(sizeof(struct ofi_pfx) == OFI_PFX, "the prefix is one cache line");

/* A short data message: the prefix below, then the header words that differ
 * from the last header of the same class sent to the same peer (the
 * sender's and the receiver's base: ofi_short_mask, as the fast boxes do,
 * shm_fbcode.h), then the bytes after the header. Sent when the whole fits
 * the provider's inject size and the prefix's room (short_max): an 8 B put
 * is 44-56 bytes, which tcp;ofi_rxm injects (64 bytes) with no completion
 * and so no signal on the CQ's wait object, where a full message (the
 * 64-byte prefix, the 128-byte header) went with a completion whose signal
 * cost a write, a poll and a read (bench/RESULTS.md, "Twenty-ninth
 * session"). Data messages only, without a registration key (rkey 0). */
struct ofi_spfx {
    uint16_t magic;     /* OFI_SMAGIC                                           */
    uint8_t cls;
    uint8_t nw;         /* header words that follow (bits set in mask)          */
    uint32_t src;
    uint32_t mask;      /* bit j: header word j follows (j = 0 .. 30)          */
    uint32_t ord;       /* header word 31, the order stamp                      */
    uint32_t cred[PT_CLS_NR];
};
_Static_assert(sizeof(struct ofi_spfx) == 24, "the short prefix");
#define OFI_SMASK 0x7fffffffu /* words 0 .. 30: the order stamp travels in ord */

/* Operation contexts: what a completion's op_context points at. */
enum { CTX_SEND = 1, CTX_RECV = 2, CTX_READ = 3 };
struct ofi_ctx {
    struct fi_context fc; /* first: the provider's scratch (FI_CONTEXT mode) */
    uint32_t kind;
    uint32_t idx;
};

struct ofi_sbuf {
    struct ofi_ctx c;
    uint32_t peer;
    uint32_t next;        /* free list                                          */
    uint8_t what;         /* 0 data or credits, 1 probe, 2 bye (PMIx job)        */
    char *mem;            /* OFI_PFX + slot_size bytes                          */
    void *desc;           /* local MR descriptor or NULL                        */
};

struct ofi_rbuf {
    struct ofi_ctx c;
    char *mem;
    size_t size;
    void *desc;
    bool posted;
};

/* One receive ring per (sender, class): messages copied out of the
 * multi-receive buffers, in arrival order. Token holder only. */
struct ofi_inq {
    char *slots;          /* cap * slot_size                                    */
    uint32_t head, tail;  /* counters; head - tail <= cap                        */
    uint32_t ord;         /* order stamp of the message peek returned            */
};

struct ofi_rx_ord {        /* as shm's: per sender */
    uint32_t next;
    uint32_t req_waits;
    uint32_t held;
};

/* A rendezvous registration of ours, ended by the descriptor's answer. */
struct ofi_reg {
    struct fid_mr *mr;
    uint64_t key;         /* fi_mr_key(mr): what the peer's answer names        */
    uint32_t peer;
    uint8_t op;           /* PT_W_PUT (ended by FIN) or PT_W_REPLY (by RFIN)   */
    uint64_t id;          /* pt_xport_desc_id                                   */
};

/* A peer's rendezvous descriptor we may read from, ended by our answer. */
struct ofi_rkey {
    uint64_t lo, hi;      /* the descriptor's address range                     */
    uint64_t key;
    uint32_t peer;
    uint8_t op;
    uint64_t id;
};

#define OFI_MAX_READS 32u /* reads posted per pull step */
#define OFI_STEPS 8u      /* pull steps in flight at once (< 16: ctx idx) */

/* The contexts of one pull step's reads (idx: OFI_RD_IDX of its step). */
struct ofi_rdset {
    struct ofi_rdset *next;
    struct ofi_ctx c[OFI_MAX_READS];
};

/* A pull step in flight (ofi_pull): its reads are posted, the engine asks
 * again with the same arguments until they complete (engine/target.c,
 * xfer_busy). The key (peer, first local and remote address) tells one
 * op's step from another's. gen: the step slot's life; a completion of an
 * earlier life (a step given up on, pull_lost) is not counted. Token
 * holder only. */
struct ofi_step {
    struct ofi_rdset *rd;  /* the contexts of its reads                          */
    uint32_t gen;
    uint32_t pending;      /* reads posted, not completed                        */
    int err;
    bool busy;
    uint32_t peer;
    const void *l0, *r0;
    uint64_t desc;         /* the descriptor's id (the engine's desc)            */
    uint64_t key;          /* the registration its reads use (rkey_end spares it) */
    size_t len;            /* bytes its reads move                               */
    uint32_t turns;        /* -EAGAIN answers: every 4,096 the peer is checked   */
    uint64_t drain_t;      /* the peer was found lost at (pt_now_ns), reads still
                            * posted; 0: not (pull_drain)                          */
};
#define OFI_RD_IDX(slot, gen) ((gen) << 4 | (slot))
_Static_assert(OFI_STEPS < 16, "a read's idx holds its step's slot in 4 bits, 15 none");

/* The rank's transport. ofi_open.c builds it (ofi_setup) before the engine
 * first runs and frees it at close (ofi_free); in between each field is the
 * engine-token holder's, one thread at a time, except those marked "any
 * thread" (queued, backlog, gone, failed, probe_due, byes: read by
 * rx_pending, peer_alive, job_failed and departures from any thread, relaxed;
 * each a count or a flag that only rises until the token holder clears it).
 * Who writes what, besides the opening:
 *   ofi.c       sending, receiving, credits (cred, owe, sent, owe_flag),
 *               sbase/rbase, addr, the registrations (reg, rk), a step's
 *               pending count (its read completions), a probe's completion
 *               (probe_t, conn, chk_*: sbuf_done), gone/failed from a pidfd
 *               (rx_pending, any thread)
 *   ofi_pull.c  the pull steps (st, rd_lost, post_turns)
 *   ofi_peer.c  dead, dead_*, gone, failed, the probes (probe_*, tick,
 *               nsuspect) and the kernel's checks (chk_*, nchk)
 *   ofi_open.c  conn (connect_all), other and connect_later (pt_ofi_serve),
 *               byes_left (close)
 * The comments name the functions one file lends another by their names
 * from before the split: progress() is pt_ofi_progress, ofi_pull pt_ofi_pull,
 * ofi_close pt_ofi_close, probe_tick and mark_dead pt_ofi_probe_tick and
 * pt_ofi_mark_dead. */
struct pt_xport {
    /* the job region underneath (identity, liveness, names, trace) */
    const struct pt_xport_ops *so;
    struct pt_xport *shm;
    uint32_t me, n, slot, qslots;

    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    int cq_fd;            /* the CQ's wait object                                */
    int epfd;             /* epoll: peer pidfds, ev_fd, tfd (wait_fd; cq_fd beside it) */
    int *pidfd;           /* [peer] or -1                                        */
    uint32_t npidfd;
    bool mr_local;        /* FI_MR_LOCAL: our buffers need descriptors           */
    bool mr_virt;         /* FI_MR_VIRT_ADDR: RMA addresses are virtual          */
    size_t max_read;      /* the provider's max_msg_size: longer pieces are read
                           * in several reads                                   */
    bool mr_prov_key;
    size_t inject;        /* the provider's inject size: messages up to it leave by
                           * fi_inject (no completion)                            */
    uint32_t short_max;   /* short messages up to this many bytes; 0 none         */
    uint32_t *sbase;      /* [(peer * 2 + cls) * 32]: the header last sent         */
    uint32_t *rbase;      /* [(sender * 2 + cls) * 32]: the header last received  */

    /* peers */
    fi_addr_t *addr;      /* [peer]: FI_ADDR_NOTAVAIL until inserted             */
    uint32_t *cred;       /* [peer * 2 + c]: credits we hold towards peer         */
    uint32_t *owe;        /* [peer * 2 + c]: credits we owe peer (released)       */
    uint32_t *sent;       /* [peer]: messages committed to peer (order stamps)    */
    uint8_t *dead;        /* [peer]: a send to it failed (token holder)           */
    _Atomic uint32_t *gone; /* [peer]: its pidfd fired while it was attached (any
                           * thread writes, relaxed: a monotonic flag)           */
    _Atomic uint32_t failed; /* PTL_NI_PEER_DIED once a peer was seen gone       */
    bool pmix;               /* the job is a PMIx job (pmix.c), not the region   */
    bool remote_peers;       /* some peer may be on another host (PMIx job)      */
    bool *owe_flag;       /* [peer]: a credit message is due                      */
    uint32_t nowe;
    /* The credit wait (docs/waiting.md, "Stalled on credits", "Over ofi";
     * xport.h stall_*): credits come back only as messages, which reach a
     * sleeper through the CQ's descriptor like any other, so no mark is
     * shared with the receiver. stall_ctr: raised by reserve each time it
     * returns NULL for want of credits (token holder only). cred_epoch:
     * raised by the token holder whenever credits come back or a peer is
     * marked dead (CE-BUMP, store-release). arm: 0, or 1 << 32 | the epoch
     * when reserve first found no credits since stall_clear (CE-ARM; token
     * holder writes, any thread reads: stall_armed, CE-LOOK). */
    uint32_t stall_ctr;
    _Atomic uint32_t cred_epoch;
    _Atomic uint64_t arm;

    /* sending */
    struct ofi_sbuf *sb;
    uint32_t nsb, sfree;  /* free list head (UINT32_MAX: none)                    */
    char *smem;
    struct fid_mr *smr;
    uint32_t *pend;       /* ring of send buffers not yet accepted (EAGAIN), in
                           * commit order; per peer they leave in that order, but
                           * a peer that does not take one holds up no other     */
    uint32_t npend_cap, pend_head, pend_tail;
    uint32_t *npendp;     /* [peer]: its buffers in pend                          */
    uint32_t *blk;        /* [peer]: flush pass in which it answered -FI_EAGAIN   */
    uint32_t flush_pass;

    /* receiving */
    struct ofi_rbuf rb[OFI_NRBUF];
    char *rmem;
    struct fid_mr *rmr;
    struct ofi_inq *in;   /* [s * 2 + c]                                         */
    struct ofi_rx_ord *rxo;
    uint32_t rr[PT_CLS_NR];
    uint32_t *held_list, nheld;
    _Atomic uint32_t queued; /* messages in the rings (any thread reads; rx_pending) */
    bool cq_served;       /* the last CQ read gave peek a message: the next look
                           * with nothing queued skips the read (token holder) */
    /* 1 while sends wait in pend (the provider said -FI_EAGAIN) or credit
     * messages are owed (nowe): work only progress() retries, which the wait
     * descriptor need not announce (nothing may arrive until they leave: the
     * peer waits for them). Written by the token holder (backlog_note),
     * read by any thread in rx_pending, relaxed as `queued`. */
    _Atomic uint32_t backlog;
    char *inmem;
    uint64_t bad_msgs;

    /* rendezvous */
    struct ofi_reg *reg;  /* [reg_cap]: our descriptors' registrations           */
    uint32_t reg_cap;     /* 2 * PTL_REQ_SLOTS + 64 per rank: rendezvous puts we
                           * wait for, and replies we serve                    */
    uint32_t nreg;
    struct ofi_rkey *rk;  /* [reg_cap]: peers' descriptors we may pull from      */
    uint32_t nrk, rk_next;
    uint64_t next_key;    /* requested keys (providers without FI_MR_PROV_KEY)  */
    struct ofi_step st[OFI_STEPS]; /* pull steps in flight                      */
    struct ofi_rdset *rd_lost; /* sets a pull gave up on with reads still posted:
                           * the provider may hold them until close (ofi_free)  */
    uint32_t *post_turns; /* [peer]: refused first reads (the provider's queue
                           * full) since one to it was taken: every 4,096 the
                           * peer is checked                                   */
    uint8_t fault;        /* PTL_OFI_FAULT, tests only: set at open, read by pull
                           * and try_send (OFI_FAULT_*; 0 off)                    */
    uint32_t fault_sends; /* OFI_FAULT_SENDERR: data messages sent so far         */
    uint32_t pend_res;    /* the buffer reserve() handed out and commit() has not
                           * sent yet, or UINT32_MAX                              */

    /* address exchange */
    struct ofi_addrx ax;
    int ev_fd;               /* PMIx job: readable when the launcher reports a death
                              * (pmix.c writes it; rx_pending drains it), or -1 */
    /* liveness in a PMIx job (docs/ofi.md, "Peer death"): token holder only,
     * but probe_due, which rx_pending (any thread) sets from the timer */
    int tfd;                 /* timerfd, every PTL_OFI_PROBE_MS, in the sleep set, or -1 */
    _Atomic uint32_t probe_due; /* the timer fired: peek runs probe_tick   */
    uint64_t probe_ns;       /* the period                                  */
    uint64_t *probe_t;       /* [peer]: when our outstanding probe was sent, 0 none */
    uint32_t *probe_k;       /* [peer]: our tick when it was sent                */
    uint32_t tick;           /* probe_tick runs: periods in which we ran          */
    uint64_t *dead_t;        /* [peer]: when it was marked dead (judged a period later) */
    uint8_t *dead_why;       /* [peer]: OFI_WHY_*, for the log                    */
    int *dead_err;           /* [peer]: the kernel's answer (OFI_WHY_REFUSED)     */
    uint8_t *bye;            /* [peer]: it closed its NI in order (OFI_K_BYE) */
    uint8_t *conn;           /* [peer], host mode (else NULL; offload mode only
                              * until connect_all's end): OFI_CONN_*, the
                              * connection made in PtlNIInit (connect_all) */
    uint8_t *other;          /* [peer]: served by another transport (a mixed job's
                              * node peers, pt_ofi_serve; NULL: none): never
                              * connected, probed or sent a bye by us           */
    bool connect_later;      /* opened for mix.c: connect_all waits for pt_ofi_serve */
    /* PMIx job: BYEs received (token holder writes, any thread reads
     * relaxed): the departures op's count there, where no launcher counts
     * them; a change makes the engine fail what a departed peer owes (an
     * audit: a get or an ACKed put to a rank that had left waited for ever,
     * and puts to it held up every later send of the rank). */
    _Atomic uint32_t byes;
    uint32_t probe_next, nsuspect, byes_left;
    /* the kernel's check (kcheck: the peers' names are the TCP addresses their
     * endpoints listen on): a non-blocking connect() to a peer whose probe is
     * late; refused (or unreachable) is a death, accepted is a live process */
    bool kcheck;
    int *chk_fd;             /* [peer]: the check's socket, or -1              */
    uint32_t *chk_next;      /* [peer]: the tick from which a new check may start */
    uint8_t *chk_shift;      /* [peer]: checks answered "alive" in a row        */
    uint32_t nchk;           /* checks open                                     */
    /* The provider's fi_trywait says "safe to sleep" without looking at the
     * CQ or resetting its wait object (libfabric's xnet core before 1.19:
     * `net` in 1.17, `tcp` in 1.18): the CQ sleeps on ws, which rx_pending
     * resets before it peeks (ofi_rx_pending; set once at open). */
    bool trywait_blind;
    struct fid_wait *ws;     /* trywait_blind: the CQ's wait set (reset there) */
    char prov[64];
};

/* ---- inline helpers the files share ------------------------------------------ */

static inline void log_fi(const char *what, ssize_t rc)
{
    pt_log(PT_LOG_ERR, "ofi: %s: %s", what, pt_fi_strerror((int)-rc));
}

static inline void sbuf_free(struct pt_xport *x, uint32_t i)
{
    x->sb[i].next = x->sfree;
    x->sfree = i;
}

/* A check's socket ends with a reset, never an orderly close: libfabric
 * 1.17's tcp provider reads an end of stream before the connection request
 * as "try again" (a stale errno), and its listener's descriptor then stays
 * readable for ever: the peer's engine would spin in its wait (measured:
 * ~500,000 wake-ups a second). A reset is an error there: it closes that
 * socket at once. */
static inline void chk_abort(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

/* The kernel's check of peer ends (its socket reset). */
static inline void chk_close(struct pt_xport *x, uint32_t peer)
{
    if (x->chk_fd[peer] >= 0) {
        chk_abort(x->chk_fd[peer]);
        x->chk_fd[peer] = -1;
        x->nchk--;
    }
}

/* Nothing more is sent to a peer that is dead to us (rxm answers -FI_EAGAIN
 * for ever once it has dropped the connection) or that closed its NI in
 * order (OFI_K_BYE: nobody receives there; a late send to it, a credit
 * return or an engine's put, stayed queued for ever and held up every later
 * send of this rank, probes included, until its live peers were taken for
 * dead: mp_netns_livefini, mp_liveness finilate). */
static inline bool peer_closed(const struct pt_xport *x, uint32_t peer)
{
    return x->dead[peer] || x->bye[peer];
}

/* A mixed job's node peer (pt_ofi_serve): another transport serves it, and we
 * neither connect to it, probe it nor say bye to it. */
static inline bool peer_other(const struct pt_xport *x, uint32_t peer)
{
    return x->other && x->other[peer];
}

/* ---- shared between the files (ofi_int.h's table above) ------------------- */

/* ofi.c */
const struct pt_xport_ops *pt_ofi_ops(void);
/* Read the CQ once (one batch): completions handled (OFI_CQ_BATCH: read
 * again, more may be there); retries queued sends and owed credits. */
int pt_ofi_progress(struct pt_xport *x);
int pt_ofi_post_rbuf(struct pt_xport *x, uint32_t i);
bool pt_ofi_peer_addr(struct pt_xport *x, uint32_t peer);
bool pt_ofi_send_ctl(struct pt_xport *x, uint32_t peer, uint16_t kind, uint8_t what);

/* ofi_pull.c */
ssize_t pt_ofi_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                    const struct iovec *remote, int nremote, uint64_t desc);

/* ofi_peer.c */
void pt_ofi_mark_dead(struct pt_xport *x, uint32_t peer, uint8_t why);
/* CE-BUMP (token holder): credits came back or a peer died: a send stalled on
 * credits is to be retried (stall_armed answers false from now on). */
static inline void pt_ofi_cred_bump(struct pt_xport *x)
{
    ST_RELEASE(&x->cred_epoch, LD_RELAXED(&x->cred_epoch) + 1);
}
void pt_ofi_probe_tick(struct pt_xport *x);

/* ofi_open.c */
void pt_ofi_close(struct pt_xport *x);

#endif /* PT_OFI_INT_H */
