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
 *   Sleeping. wait_fd() is an epoll set of the CQ's wait object (FI_WAIT_FD)
 *   and one pidfd per peer rank on this host; rx_pending() is "a message is
 *   queued, or fi_trywait() says completions are pending". The waiting
 *   protocol (engine/wait.c) sleeps in poll() on it beside its own eventfd.
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
 */
#include "ofi.h"
#include "ofi_fabric.h"
#include "shm_fbcode.h"

#include "clock.h"
#include "config.h"
#include "log.h"
#include "shm.h"
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif

#include <p3api/misc.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

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

/* Which header words of h differ from base (words 0 .. 30). */
static inline uint32_t ofi_short_mask(const void *h, const uint32_t *base)
{
    uint32_t w0, b0 = base[0];
    memcpy(&w0, h, 4);
    return pt_fb_diff(h, base) | (uint32_t)(w0 != b0);
}

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
    int epfd;             /* epoll: cq_fd + peer pidfds (wait_fd)                */
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
    char prov[64];
};

/* ---- address exchange on one host: the job region's rank records --------- */

static int region_publish(void *ctx, const void *name, size_t len)
{
    return pt_shm_ep_publish(ctx, name, len);
}

static int region_lookup(void *ctx, uint32_t rank, void *name, size_t *len)
{
    uint32_t gen;
    return pt_shm_ep_lookup(ctx, rank, name, len, &gen);
}

/* ---- helpers --------------------------------------------------------------- */

static inline char *inq_slot(struct pt_xport *x, struct ofi_inq *q, uint32_t i)
{
    return q->slots + (size_t)(i & (x->qslots - 1)) * x->slot;
}

static inline uint32_t *slot_ord(void *slot) { return (uint32_t *)((char *)slot + PT_XPORT_ORD_OFF); }

static void log_fi(const char *what, ssize_t rc)
{
    pt_log(PT_LOG_ERR, "ofi: %s: %s", what, pt_fi_strerror((int)-rc));
}

/* Post multi-receive buffer i. */
static int post_rbuf(struct pt_xport *x, uint32_t i)
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
static bool peer_addr(struct pt_xport *x, uint32_t peer)
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

static void sbuf_free(struct pt_xport *x, uint32_t i)
{
    x->sb[i].next = x->sfree;
    x->sfree = i;
}

static uint32_t sbuf_get(struct pt_xport *x)
{
    uint32_t i = x->sfree;
    if (i != UINT32_MAX)
        x->sfree = x->sb[i].next;
    return i;
}

/* Evidence that peer is gone (why: OFI_WHY_*): a send to it failed, the
 * kernel refused a connection to its endpoint, or (providers without that
 * check) its probe stayed uncompleted for OFI_PROBE_LATE of our periods: it
 * is dead to us. In a PMIx job the job fails with it (as the region's
 * launcher rule fails a ptlrun job), unless it said bye: judged one probe
 * period later (probe_tick), so that a bye that arrives behind the
 * connection's error is still seen. */
static void lost_peer(struct pt_xport *x, uint32_t peer);

static void mark_dead(struct pt_xport *x, uint32_t peer, uint8_t why)
{
    if (x->dead[peer])
        return;
    x->dead[peer] = 1;
    if (!x->pmix) {
        lost_peer(x, peer);
        return;
    }
    if (x->bye[peer])
        return;
    if (x->tfd < 0) {
        ST_RELAXED(&x->gone[peer], 1);
        uint32_t z = 0;
        RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
        return;
    }
    x->dead_t[peer] = pt_now_ns();
    x->dead_why[peer] = why;
    x->nsuspect++;
}

/* A ptlrun job: the region tells deaths (the launcher, pidfds), and a send
 * or read that failed towards a peer is either a death the region does not
 * show yet, or a connection lost to a live peer. What that connection
 * carried is lost, and later messages would take their class out of order:
 * this rank cannot go on with that peer. Once (the peer is dead to us from
 * now on), the engine waits up to OFI_LOST_MS for the peer's process to
 * end: ended while attached, it died (PTL_NI_PEER_DIED, as the pidfd's
 * wake-up would say); alive and attached, our NI fails (PTL_NI_FAIL) so
 * that nothing waits for ever for what was lost (an audit: a ptlrun job
 * over ofi whose connections were reset slept in PtlCollWait until the
 * launcher's timeout, "job not failed", nothing in flight); detached (it
 * left in order: ofi_close detaches before it closes its endpoint), no
 * failure. */
static void lost_peer(struct pt_xport *x, uint32_t peer)
{
    if (peer == x->me || peer >= x->n)
        return;
    /* Looked at every 50 ms: a process killed on a starved machine closes
     * its sockets long before it is a zombie (an audit: with a 1 s wait, 2
     * of 7 kills under load were reported as lost connections) */
    int fd = x->pidfd ? x->pidfd[peer] : -1;
    bool ended = false;
    uint64_t t0 = pt_now_ns();
    for (;;) {
        if (!pt_shm_rank_attached(x->shm, peer))
            return; /* it left in order: what we still send it goes nowhere */
        if (!x->so->peer_alive(x->shm, peer)) {
            ended = true; /* the launcher or the kernel says so */
            break;
        }
        if (pt_now_ns() - t0 >= (uint64_t)OFI_LOST_MS * 1000000u)
            break;
        if (fd >= 0) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, 50) > 0) {
                ended = true;
                break;
            }
        } else {
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
        }
    }
    uint32_t z = 0;
    if (ended) {
        ST_RELAXED(&x->gone[peer], 1);
        RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
        return;
    }
    pt_log(PT_LOG_ERR, "ofi: the connection to rank %u was lost while that rank lives (what it "
                       "carried is gone): this rank's NI fails (PTL_NI_FAIL)", peer);
    RMW_CAS(&x->failed, &z, PTL_NI_FAIL);
}

/* A check's socket ends with a reset, never an orderly close: libfabric
 * 1.17's tcp provider reads an end of stream before the connection request
 * as "try again" (a stale errno), and its listener's descriptor then stays
 * readable for ever: the peer's engine would spin in its wait (measured:
 * ~500,000 wake-ups a second). A reset is an error there: it closes that
 * socket at once. */
static void chk_abort(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

/* The kernel's check of peer ends (its socket reset). */
static void chk_close(struct pt_xport *x, uint32_t peer)
{
    if (x->chk_fd[peer] >= 0) {
        chk_abort(x->chk_fd[peer]);
        x->chk_fd[peer] = -1;
        x->nchk--;
    }
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
    mark_dead(x, peer, OFI_WHY_SEND);
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
    if (!peer_addr(x, peer))
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

static int progress(struct pt_xport *x)
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
            (void)post_rbuf(x, i);
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
    if (PT_UNLIKELY(x->cred[peer * 2 + cls] == 0)) {
        progress(x); /* credit returns may be waiting in the CQ */
        if (x->cred[peer * 2 + cls] == 0)
            return NULL;
    }
    if (PT_UNLIKELY(!peer_addr(x, peer) || x->dead[peer]))
        return NULL;
    /* A reservation the engine did not commit (it may reserve, then decide
     * otherwise) is handed out again: one outstanding at a time (xport.h). */
    uint32_t i = x->pend_res;
    if (i == UINT32_MAX) {
        if (PT_UNLIKELY(x->sfree == UINT32_MAX)) {
            progress(x); /* send completions return buffers */
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
static bool send_ctl(struct pt_xport *x, uint32_t peer, uint16_t kind, uint8_t what)
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

/* The kernel's check (kcheck): what answers at peer's published address,
 * the TCP address its endpoint listens on? Started when its probe is late.
 * Accepted: a process holds the endpoint open, alive whether it runs, starves
 * or is stopped (its probe is late because rxm's connection setup needs the
 * peer's engine to run): checked again 2, 4, .. 64 of our periods later while
 * the probe stays late. Refused (the kernel's reset), or unreachable: the
 * endpoint is gone, the peer is dead unless it said bye. No answer yet: the
 * kernel retries (its own connect timeout, minutes, is an answer). Anything
 * else (our own resources, a filter) says nothing about the peer. */
static void chk_answer(struct pt_xport *x, uint32_t peer, int err)
{
    switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ETIMEDOUT:
        x->dead_err[peer] = err;
        mark_dead(x, peer, OFI_WHY_REFUSED);
        return;
    case 0:
        pt_log(PT_LOG_DEBUG, "ofi: rank %u: its probe is late, but its endpoint accepts "
                             "connections: alive", peer);
        break;
    default:
        pt_log_once(PT_LOG_WARN, "ofi: checking rank %u's endpoint: %s (no verdict)", peer,
                    strerror(err));
        break;
    }
    if (x->chk_shift[peer] < OFI_CHECK_SHIFT_MAX)
        x->chk_shift[peer]++;
    x->chk_next[peer] = x->tick + (1u << x->chk_shift[peer]);
}

static void chk_start(struct pt_xport *x, uint32_t peer)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        char raw[256];
    } a;
    size_t len = sizeof a;
    if (x->ax.lookup(x->ax.ctx, peer, &a, &len) != 0)
        return;
    socklen_t sl = a.sa.sa_family == AF_INET ? sizeof a.in : sizeof a.in6;
    if ((a.sa.sa_family != AF_INET && a.sa.sa_family != AF_INET6) || len < sl) {
        chk_answer(x, peer, EAFNOSUPPORT);
        return;
    }
    int fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        chk_answer(x, peer, errno);
        return;
    }
    int err = connect(fd, &a.sa, sl) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
        x->chk_fd[peer] = fd;
        x->nchk++;
        return;
    }
    chk_abort(fd);
    chk_answer(x, peer, err);
}

/* The answers that came to the checks open (no wait). */
static void chk_poll(struct pt_xport *x)
{
    for (uint32_t p = 0; p < x->n && x->nchk; p++) {
        if (x->chk_fd[p] < 0)
            continue;
        struct pollfd pf = {.fd = x->chk_fd[p], .events = POLLOUT};
        if (poll(&pf, 1, 0) <= 0)
            continue;
        int err = 0;
        socklen_t l = sizeof err;
        if (getsockopt(x->chk_fd[p], SOL_SOCKET, SO_ERROR, &err, &l) != 0)
            err = errno;
        chk_close(x, p);
        chk_answer(x, p, err);
    }
}

/* PMIx job, once per probe period (the timer in the sleep set; peek runs it
 * when rx_pending saw it fire; a starved engine that missed periods counts
 * one): judge the peers marked dead a period ago (dead unless they said bye
 * meanwhile: the job fails), read the kernel's checks, start one for a peer
 * whose probe has been outstanding for OFI_PROBE_CHECK of our periods (without
 * kcheck: make it dead after OFI_PROBE_LATE of our periods), and send a new
 * probe to up to OFI_PROBE_MAX peers (round robin). A probe to a live peer
 * completes once the provider has written it to the connection, whether or
 * not that peer's engine runs (a new connection needs it to, though); to a
 * dead one it fails or stays queued (rxm's -FI_EAGAIN, reconnecting). The
 * periods are counted in our runs, not in time: a machine so loaded that the
 * observer misses periods does not age the probes. */
static void probe_tick(struct pt_xport *x)
{
    ST_RELAXED(&x->probe_due, 0);
    x->tick++;
    while (progress(x) == OFI_CQ_BATCH)
        ; /* completions, and byes, first */
    if (x->nchk)
        chk_poll(x);
    uint64_t now = pt_now_ns();
    if (x->nsuspect) {
        x->nsuspect = 0;
        for (uint32_t p = 0; p < x->n; p++) {
            if (!x->dead_t[p] || LD_RELAXED(&x->gone[p]))
                continue;
            if (x->bye[p]) {
                x->dead_t[p] = 0;
            } else if (now - x->dead_t[p] >= x->probe_ns) {
                char why[96];
                switch (x->dead_why[p]) {
                case OFI_WHY_REFUSED:
                    snprintf(why, sizeof why, "its endpoint's address answers: %s",
                             strerror(x->dead_err[p]));
                    break;
                case OFI_WHY_LATE:
                    snprintf(why, sizeof why, "a probe to it was not completed in %u periods",
                             OFI_PROBE_LATE);
                    break;
                case OFI_WHY_LAUNCHER:
                    snprintf(why, sizeof why, "the launcher reported it");
                    break;
                default:
                    snprintf(why, sizeof why, "a send to it failed");
                    break;
                }
                pt_log(PT_LOG_WARN, "ofi: rank %u is dead (%s): the job fails", p, why);
                ST_RELAXED(&x->gone[p], 1);
                uint32_t z = 0;
                RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
            } else {
                x->nsuspect++;
            }
        }
    }
    uint32_t todo = x->n < OFI_PROBE_MAX ? x->n : OFI_PROBE_MAX;
    for (uint32_t k = 0; k < todo; k++) {
        uint32_t p = x->probe_next;
        x->probe_next = p + 1 < x->n ? p + 1 : 0;
        if (p == x->me || peer_closed(x, p) || peer_other(x, p))
            continue;
        if (x->conn && x->conn[p] != OFI_CONN_UP)
            continue; /* host mode: no connection made at start (connect_all) */
        if (x->probe_t[p]) {
            uint32_t waited = x->tick - x->probe_k[p];
            if (x->kcheck) {
                if (waited >= OFI_PROBE_CHECK && x->chk_fd[p] < 0 &&
                    (int32_t)(x->tick - x->chk_next[p]) >= 0)
                    chk_start(x, p);
            } else if (waited >= OFI_PROBE_LATE &&
                       now - x->probe_t[p] >= OFI_PROBE_LATE * x->probe_ns) {
                mark_dead(x, p, OFI_WHY_LATE);
            }
            continue;
        }
        x->probe_t[p] = now;
        x->probe_k[p] = x->tick;
        if (!send_ctl(x, p, OFI_K_PROBE, 1)) {
            x->probe_t[p] = 0;
            if (x->dead[p])
                continue;
            break; /* no buffer: the next period */
        }
    }
}

static void *ofi_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    if (PT_UNLIKELY(LD_RELAXED(&x->probe_due)))
        probe_tick(x);
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
    int n = progress(x);
    if (!n)
        return NULL;
    while (n == OFI_CQ_BATCH)
        n = progress(x);
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
            if (ev[i].data.u32 == UINT32_MAX)
                continue; /* the CQ: fi_trywait below decides */
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
    struct fid *f = &x->cq->fid;
    return fi_trywait(x->fabric, &f, 1) != FI_SUCCESS;
}

static int ofi_wait_fd(struct pt_xport *x) { return x->epfd; }

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
static bool pull_peer_lost(struct pt_xport *x, uint32_t peer)
{
    if (x->tfd >= 0) {
        uint64_t v;
        if (read(x->tfd, &v, sizeof v) == (ssize_t)sizeof v)
            probe_tick(x);
    }
    if (x->dead[peer] || LD_RELAXED(&x->gone[peer]))
        return true;
    if (!x->so->peer_alive(x->shm, peer)) {
        mark_dead(x, peer, OFI_WHY_LAUNCHER);
        return true;
    }
    return false;
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
 * engine asks again next pass. Every 4,096 answers: is the peer still there? */
static ssize_t pull_again(struct pt_xport *x, struct ofi_step *t, uint32_t peer)
{
    uint32_t n = t ? ++t->turns : ++x->post_turns[peer];
    if (x->dead[peer] || LD_RELAXED(&x->gone[peer]) || ((n & 0xfff) == 0 && pull_peer_lost(x, peer)))
        return pull_drain(x, t, peer);
    return -EAGAIN;
}

/* The step in flight: its bytes once every read completed, its error if one
 * failed, else -EAGAIN. */
static ssize_t pull_collect(struct pt_xport *x, struct ofi_step *t)
{
    if (t->pending) {
        progress(x);
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
static ssize_t ofi_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
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
        progress(x);
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
    if (!rk || x->dead[peer] || !peer_addr(x, peer))
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
                progress(x); /* the provider's queue is full: no step taken */
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

static void ofi_free(struct pt_xport *x)
{
    for (uint32_t k = 0; k < x->nreg; k++)
        fi_close(&x->reg[k].mr->fid);
    x->nreg = 0;
    if (x->ep)
        fi_close(&x->ep->fid);
    if (x->smr)
        fi_close(&x->smr->fid);
    if (x->rmr)
        fi_close(&x->rmr->fid);
    if (x->av)
        fi_close(&x->av->fid);
    if (x->cq)
        fi_close(&x->cq->fid);
    if (x->domain)
        fi_close(&x->domain->fid);
    if (x->fabric)
        fi_close(&x->fabric->fid);
    if (x->info)
        pt_fi_freeinfo(x->info);
    if (x->epfd >= 0)
        close(x->epfd);
    if (x->tfd >= 0)
        close(x->tfd);
    for (uint32_t k = 0; k < OFI_STEPS; k++)
        free(x->st[k].rd); /* the endpoint is closed: no read holds a context now */
    free(x->post_turns);
    while (x->rd_lost) {
        struct ofi_rdset *n = x->rd_lost->next;
        free(x->rd_lost);
        x->rd_lost = n;
    }
    if (x->chk_fd)
        for (uint32_t p = 0; p < x->n; p++)
            if (x->chk_fd[p] >= 0)
                chk_abort(x->chk_fd[p]);
    free(x->chk_fd);
    free(x->chk_next);
    free(x->chk_shift);
    free(x->probe_t);
    free(x->probe_k);
    free(x->dead_t);
    free(x->dead_why);
    free(x->dead_err);
    free(x->bye);
    free(x->conn);
    free(x->other);
    free(x->npendp);
    free(x->blk);
    if (x->pidfd)
        for (uint32_t p = 0; p < x->n; p++)
            if (x->pidfd[p] >= 0)
                close(x->pidfd[p]);
    free(x->pidfd);
    free(x->addr);
    free(x->cred);
    free(x->owe);
    free(x->sent);
    free(x->sbase);
    free(x->rbase);
    free(x->dead);
    free((void *)x->gone);
    free(x->owe_flag);
    free(x->sb);
    free(x->smem);
    free(x->pend);
    free(x->rmem);
    free(x->in);
    free(x->rxo);
    free(x->held_list);
    free(x->inmem);
    free(x->reg);
    free(x->rk);
    free(x);
}

/* ofi_close, waiting for byes to leave: progress, or wait up to 1 ms for the
 * CQ (connection setup included: rxm's CM events wake it) rather than spin. */
static void close_wait(struct pt_xport *x)
{
    if (progress(x))
        return;
    struct fid *f = &x->cq->fid;
    if (fi_trywait(x->fabric, &f, 1) == FI_SUCCESS) {
        struct pollfd pf = {.fd = x->cq_fd, .events = POLLIN};
        (void)poll(&pf, 1, 1);
    }
}

static void ofi_close(struct pt_xport *x)
{
    /* Sends still queued or in flight: give them a moment to leave (an answer
     * the peer waits for), then tear down; the region records the detach. */
    for (int i = 0; i < 1000 && (x->pend_head != x->pend_tail || (x->nsb && x->sfree == UINT32_MAX)); i++)
        progress(x);
    if (x->pmix) {
        /* PMIx job, either mode: a bye to every peer that has not closed (its
         * probes to us would fail once our endpoint is gone: not a death;
         * what it still waits for from us fails at once: ofi_departures,
         * ofi_peer_alive; host mode too since the node-region audit, where
         * a get to a rank that had left waited for ever), for at most
         * OFI_BYE_MS; a peer that misses it judges us dead. Each peer's bye
         * waits only behind that peer's sends (a new connection needs the
         * peer's engine to run: a busy machine may take a while). */
        const uint64_t bye_ns = (uint64_t)OFI_BYE_MS * 1000000u;
        while (progress(x) == OFI_CQ_BATCH)
            ;
        uint64_t t0 = pt_now_ns();
        for (uint32_t p = 0; p < x->n; p++) {
            if (p == x->me || peer_closed(x, p) || peer_other(x, p))
                continue; /* (a node peer: the region tells it we left) */
            while (!send_ctl(x, p, OFI_K_BYE, 2) && !x->dead[p] && peer_addr(x, p) &&
                   pt_now_ns() - t0 < bye_ns)
                close_wait(x); /* no free buffer: completions return them */
        }
        while ((x->byes_left || x->pend_head != x->pend_tail) && pt_now_ns() - t0 < bye_ns)
            close_wait(x);
        if (x->byes_left)
            pt_log(PT_LOG_INFO, "ofi: %u byes not sent within %u ms: those peers will take "
                                "this rank's exit for a death", x->byes_left, OFI_BYE_MS);
    }
    struct pt_xport *shm = x->shm;
    const struct pt_xport_ops *so = x->so;
    if (!x->pmix) {
        /* the region says we left before our endpoint goes: a peer whose
         * send fails meanwhile takes it for our exit, not a lost
         * connection (lost_peer) */
        so->close(shm);
        ofi_free(x);
        return;
    }
    ofi_free(x);
    so->close(shm);
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
    .pull = ofi_pull,
    .peer_alive = ofi_peer_alive,
    .doorbell = ofi_doorbell,
    .peer_ospid = ofi_peer_ospid,
    .rank_of = ofi_rank_of,
    .id_of = ofi_id_of,
    .job_failed = ofi_job_failed,
    .departures = ofi_departures,
    .close = ofi_close,
    .wait_fd = ofi_wait_fd,
};

/* ---- opening ------------------------------------------------------------------ */

static struct fi_info *make_hints(const char *prov)
{
    struct fi_info *h = pt_fi_dupinfo(NULL);
    if (!h)
        return NULL;
    h->caps = FI_MSG | FI_MULTI_RECV | FI_RMA | FI_READ | FI_REMOTE_READ;
    h->mode = FI_CONTEXT;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    h->domain_attr->threading = FI_THREAD_SAFE; /* rx_pending's fi_trywait: any thread */
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    if (prov && *prov)
        h->fabric_attr->prov_name = strdup(prov);
    return h;
}

/* The default provider: reliable across hosts, best first. Providers that
 * reach only this host (shm) or are unreliable underneath (udp;ofi_rxd) are
 * taken only when named. */
static const char *const g_pref[] = {"verbs;ofi_rxm", "psm2", "tcp;ofi_rxm", "net"};
/* (sockets, udp;ofi_rxd and shm cannot give a completion queue a wait
 * descriptor, FI_WAIT_FD with FI_GETWAIT, on which the engine sleeps: named,
 * PtlNIInit refuses them saying so, and ptl_info marks them unusable.) */

/* Does this fabric address name the loopback interface (127/8, ::1)? */
static bool is_loopback(const struct fi_info *i)
{
    const struct sockaddr *sa = i->src_addr;
    if (!sa || (i->addr_format != FI_SOCKADDR && i->addr_format != FI_SOCKADDR_IN &&
                i->addr_format != FI_SOCKADDR_IN6))
        return false;
    if (sa->sa_family == AF_INET && i->src_addrlen >= sizeof(struct sockaddr_in))
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6 && i->src_addrlen >= sizeof(struct sockaddr_in6))
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

/* The first entry of `list` that suits: the named provider, else the best of
 * g_pref; with `no_loopback`, never one bound to the loopback interface. */
static struct fi_info *pick(struct fi_info *list, const char *want, bool no_loopback)
{
    if (want && *want) {
        for (struct fi_info *i = list; i; i = i->next)
            if (!no_loopback || !is_loopback(i))
                return i;
        return NULL;
    }
    for (size_t k = 0; k < sizeof g_pref / sizeof g_pref[0]; k++)
        for (struct fi_info *i = list; i; i = i->next)
            if (!strcmp(i->fabric_attr->prov_name, g_pref[k]) && (!no_loopback || !is_loopback(i)))
                return i;
    return NULL;
}

/* rxm's eager buffers. ofi_rxm (tcp;ofi_rxm, verbs;ofi_rxm) gives every
 * endpoint a receive and a send pool of 1,024 buffers of FI_OFI_RXM_BUFFER_SIZE
 * bytes (16 KiB by default) and writes zeros over each pool when it fills it
 * (the receive pool at fi_enable, the send pool at the first send that is no
 * inject): 2 x 17 MB written per process, half the CPU time of a small job
 * (perf: a 2-rank ring's 1.34 s of CPU, 0.70 s with 4 KiB buffers). Our
 * largest message is OFI_PFX + a slot (4,224 bytes by default), so unless
 * the user has set it, the variable is set to that around the process's
 * first fi_getinfo (libfabric initialises its providers there and reads
 * their variables then) and removed again, so that programs this one starts
 * do not inherit it. A process that had used libfabric before its first NI
 * keeps what it had. docs/ofi.md, "rxm's buffers". */
static bool rxm_buffer_size_set(size_t msg_max)
{
    static bool done; /* PtlNIInit runs one at a time (api/ni.c) */
    if (done || !msg_max)
        return false;
    done = true;
    if (getenv("FI_OFI_RXM_BUFFER_SIZE"))
        return false;
    char v[24];
    snprintf(v, sizeof v, "%zu", msg_max);
    return setenv("FI_OFI_RXM_BUFFER_SIZE", v, 0) == 0;
}

/* msg_max: the largest message this process will send (0: not known, ptl_info) */
static int get_info(struct fi_info **all_p, struct fi_info **chosen_p, bool no_loopback,
                    size_t msg_max)
{
    int rc = pt_fi_load(); /* the first call opens libfabric (ofi_fabric.h) */
    if (rc) {
        *all_p = NULL;
        *chosen_p = NULL;
        return rc;
    }
    const char *want = pt_config()->ofi_provider;
    struct fi_info *hints = make_hints(want);
    if (!hints)
        return -ENOMEM;
    struct fi_info *all = NULL;
    bool set = rxm_buffer_size_set(msg_max);
    rc = pt_fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &all);
    if (set)
        unsetenv("FI_OFI_RXM_BUFFER_SIZE");
    pt_fi_freeinfo(hints);
    if (rc) {
        *all_p = NULL;
        *chosen_p = NULL;
        return rc;
    }
    *all_p = all;
    *chosen_p = pick(all, want, no_loopback);
    return 0;
}

/* Can provider i give a completion queue the wait descriptor the engine
 * sleeps on (FI_WAIT_FD, then FI_GETWAIT)? 0, or the failure and, in *what,
 * the call that failed. Opens and closes a fabric, domain and CQ: ptl_info. */
static int wait_fd_probe(const struct fi_info *i, const char **what)
{
    struct fid_fabric *fab = NULL;
    struct fid_domain *dom = NULL;
    struct fid_cq *cq = NULL;
    int fd = -1, rc = pt_fi_fabric(i->fabric_attr, &fab, NULL);
    *what = "fi_fabric";
    if (!rc) {
        *what = "fi_domain";
        rc = fi_domain(fab, (struct fi_info *)i, &dom, NULL);
    }
    if (!rc) {
        struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD, .size = 64};
        *what = "fi_cq_open with FI_WAIT_FD";
        rc = fi_cq_open(dom, &cqa, &cq, NULL);
    }
    if (!rc) {
        *what = "FI_GETWAIT";
        rc = fi_control(&cq->fid, FI_GETWAIT, &fd);
    }
    if (cq)
        fi_close(&cq->fid);
    if (dom)
        fi_close(&dom->fid);
    if (fab)
        fi_close(&fab->fid);
    return rc;
}

void pt_ofi_describe(FILE *f)
{
    struct fi_info *all = NULL, *ch = NULL;
    int rc = get_info(&all, &ch, false, 0);
    const char *want = pt_config()->ofi_provider;
    if (rc) {
        fprintf(f, "  no provider offers FI_EP_RDM with messages, multi-receive and RMA read%s%s: "
                   "%s\n", *want ? " under PTL_OFI_PROVIDER=" : "", want, pt_fi_strerror(-rc));
        return;
    }
    char seen[1024] = "";
    for (struct fi_info *i = all; i; i = i->next) {
        const char *p = i->fabric_attr->prov_name;
        if (strstr(seen, p) && strstr(seen, p)[strlen(p)] == ',')
            continue;
        if (strlen(seen) + strlen(p) + 2 < sizeof seen) {
            strcat(seen, p);
            strcat(seen, ",");
        }
        fprintf(f, "  provider %-16s (first domain %s, fabric %s)\n", p,
                i->domain_attr->name ? i->domain_attr->name : "?",
                i->fabric_attr->name ? i->fabric_attr->name : "?");
    }
    const char *what = NULL;
    int wrc = ch ? wait_fd_probe(ch, &what) : 0;
    if (ch && wrc)
        fprintf(f, "  PTL_TRANSPORT=ofi would use: %s, domain %s%s, which is UNUSABLE: %s: %s "
                   "(the engine sleeps on its completion queue's wait descriptor); PtlNIInit "
                   "will refuse it: name another with PTL_OFI_PROVIDER\n",
                ch->fabric_attr->prov_name, ch->domain_attr->name ? ch->domain_attr->name : "?",
                *want ? " (PTL_OFI_PROVIDER)" : "", what, pt_fi_strerror(-wrc));
    else if (ch)
        fprintf(f, "  PTL_TRANSPORT=ofi uses: %s, domain %s%s\n", ch->fabric_attr->prov_name,
                ch->domain_attr->name ? ch->domain_attr->name : "?",
                *want ? " (PTL_OFI_PROVIDER)" : " (default rule: verbs;ofi_rxm, psm2, "
                                                "tcp;ofi_rxm, net)");
    else
        fprintf(f, "  PTL_TRANSPORT=ofi: none of the default providers is present; set "
                   "PTL_OFI_PROVIDER\n");
    pt_fi_freeinfo(all);
}

/* The provider cannot give what the engine sleeps on: say so, and what to do. */
static int no_wait_fd(const struct pt_xport *x, const char *what, const char *call, int rc)
{
    pt_log(PT_LOG_ERR, "ofi: provider %s cannot give %s (%s: %s), on which libportals' engine "
                       "sleeps (docs/ofi.md): name another with PTL_OFI_PROVIDER (ptl_info lists "
                       "those found and says which is usable)",
           x->prov, what, call, pt_fi_strerror(-rc));
    return rc;
}

static int open_fabric(struct pt_xport *x)
{
    struct fi_info *all = NULL, *ch = NULL;
    /* Peers on other hosts cannot reach a loopback address, and a socket
     * bound to one cannot connect to them (connect() from 127.0.0.1 to
     * another interface's address fails with EINVAL: the "fi_send ...
     * Invalid argument" of the two-namespace job). Socket providers (tcp,
     * net, sockets) offer only loopback while no other interface is UP and
     * RUNNING, and an interface's RUNNING flag follows its "up" by up to a
     * second, later under load (the kernel's link watch): a rank started
     * just after its interface came up would bind to 127.0.0.1 and publish
     * that name. So a job with peers on other hosts never takes a loopback
     * address: it looks again for a while (OFI_IFACE_WAIT_MS), then fails
     * saying why. */
    int rc = get_info(&all, &ch, x->remote_peers, OFI_PFX + (size_t)x->slot);
    for (int waited = 0; !rc && !ch && all && x->remote_peers && waited < OFI_IFACE_WAIT_MS;
         waited += 100) {
        pt_fi_freeinfo(all);
        all = NULL;
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        rc = get_info(&all, &ch, true, OFI_PFX + (size_t)x->slot);
    }
    if (!rc && !ch && all && x->remote_peers) {
        const char *want = pt_config()->ofi_provider;
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: the job has ranks on other hosts, but "
                           "libfabric%s%s offers only loopback addresses here after %d s (is the "
                           "network interface up and running? FI_TCP_IFACE / FI_SOCKETS_IFACE "
                           "name it)", *want ? " provider " : "", want, OFI_IFACE_WAIT_MS / 1000);
        pt_fi_freeinfo(all);
        return -ENETDOWN;
    }
    if (rc || !ch) {
        const char *want = pt_config()->ofi_provider;
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: no libfabric provider%s%s offers a reliable "
                           "datagram endpoint with messages, multi-receive and RMA read%s%s "
                           "(ptl_info lists the providers)",
               *want ? " " : "", want, rc ? ": " : "", rc ? pt_fi_strerror(-rc) : "");
        if (all)
            pt_fi_freeinfo(all);
        return rc ? rc : -ENODEV;
    }
    x->info = pt_fi_dupinfo(ch);
    pt_fi_freeinfo(all);
    if (!x->info)
        return -ENOMEM;
    snprintf(x->prov, sizeof x->prov, "%s", x->info->fabric_attr->prov_name);
    x->mr_virt = x->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
    x->max_read = x->info->ep_attr && x->info->ep_attr->max_msg_size
                      ? (size_t)x->info->ep_attr->max_msg_size
                      : SIZE_MAX;
    x->mr_prov_key = x->info->domain_attr->mr_mode & FI_MR_PROV_KEY;
#define TRY(call, what)                  \
    do {                                 \
        rc = (call);                     \
        if (rc) {                        \
            log_fi(what, rc);            \
            return rc;                   \
        }                                \
    } while (0)
    TRY(pt_fi_fabric(x->info->fabric_attr, &x->fabric, NULL), "fi_fabric");
    TRY(fi_domain(x->fabric, x->info, &x->domain, NULL), "fi_domain");
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD,
                             .size = 4096};
    rc = fi_cq_open(x->domain, &cqa, &x->cq, NULL);
    if (rc == -FI_ENOSYS || rc == -FI_EINVAL || rc == -FI_EOPNOTSUPP)
        return no_wait_fd(x, "a completion queue a wait descriptor", "fi_cq_open with FI_WAIT_FD",
                          rc);
    TRY(rc, "fi_cq_open");
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = x->n};
    TRY(fi_av_open(x->domain, &ava, &x->av, NULL), "fi_av_open");
    TRY(fi_endpoint(x->domain, x->info, &x->ep, NULL), "fi_endpoint");
    TRY(fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    TRY(fi_ep_bind(x->ep, &x->av->fid, 0), "fi_ep_bind(av)");
    size_t minmr = OFI_PFX + x->slot;
    TRY(fi_setopt(&x->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minmr, sizeof minmr),
        "FI_OPT_MIN_MULTI_RECV");
    TRY(fi_enable(x->ep), "fi_enable");
    rc = fi_control(&x->cq->fid, FI_GETWAIT, &x->cq_fd);
    if (rc)
        return no_wait_fd(x, "its completion queue's wait descriptor", "FI_GETWAIT", rc);
#undef TRY
    return 0;
}

/* PMIx job (x->conn; offload mode too since the thirty-fifth session, see
 * ofi_setup): a connection to every peer before PtlNIInit
 * returns, made while every rank runs its engine here (after the wire-up
 * fence, every name known): a probe to each, then progress until the
 * provider has written each one (its completion: the connection is up) or
 * PTL_PMIX_TIMEOUT_S has passed. On a connection that is up a probe
 * completes whether or not the peer's engine runs, and so does a bye: the
 * host-mode probe (probe_tick) then tells a rank that computes alive and a
 * rank that left in order gone, as in offload mode. A peer whose connection
 * is not up is not probed (its probe may still complete later: then it is);
 * its death is found by a failed send, as before. The connections are up
 * before the first rank returns: rxm makes one per pair, so once our probe
 * to a peer completed its probes to us need none of our engine. */
static void connect_all(struct pt_xport *x)
{
    uint64_t t0 = pt_now_ns(), idle_since = 0;
    uint64_t bound = (uint64_t)pt_config()->pmix_timeout_s * 1000000000u;
    uint32_t next = 0, up = 0, asked = 0;
    for (;;) {
        for (; next < x->n; next++) { /* ask each peer once, as buffers allow */
            uint32_t p = next;
            if (p == x->me || x->dead[p] || LD_RELAXED(&x->gone[p]) || peer_other(x, p) ||
                !peer_addr(x, p))
                continue;
            x->probe_t[p] = pt_now_ns();
            x->probe_k[p] = x->tick;
            x->conn[p] = OFI_CONN_ASKED;
            if (!send_ctl(x, p, OFI_K_PROBE, 1)) {
                x->probe_t[p] = 0;
                x->conn[p] = OFI_CONN_NONE;
                break; /* no buffer: after some completions */
            }
        }
        asked = up = 0;
        for (uint32_t p = 0; p < x->n; p++) {
            asked += x->conn[p] == OFI_CONN_ASKED;
            up += x->conn[p] == OFI_CONN_UP;
        }
        if (next == x->n && !asked)
            break;
        uint64_t now = pt_now_ns();
        if (now - t0 >= bound || LD_RELAXED(&x->failed))
            break; /* (a death the launcher reported: PMIx's event) */
        if (progress(x)) {
            idle_since = 0;
            continue;
        }
        /* Nothing yet: the peers' engines run here too (more ranks than
         * cores: give them the core; after 10 ms, sleep a little). */
        if (!idle_since)
            idle_since = now;
        if (now - idle_since < 10000000u)
            sched_yield();
        else
            usleep(200);
    }
    uint32_t peers = x->n - 1;
    for (uint32_t p = 0; p < x->n; p++)
        peers -= peer_other(x, p);
    bool offload = pt_config()->offload;
    if (up == peers)
        pt_log(PT_LOG_INFO, "ofi: %s mode: connected to the %u peers in %.1f ms (the liveness probe)",
               offload ? "offload" : "host", peers, (double)(pt_now_ns() - t0) / 1e6);
    else if (offload)
        pt_log(PT_LOG_WARN, "ofi: offload mode: %u of %u peers connected in %.1f s; the others "
                            "connect at their first message or probe",
               up, peers, (double)(pt_now_ns() - t0) / 1e9);
    else
        pt_log(PT_LOG_WARN, "ofi: host mode: %u of %u peers connected in %.1f s; the others are "
                            "not probed until their connection is up (a death among them is "
                            "found by a failed send)",
               up, peers, (double)(pt_now_ns() - t0) / 1e9);
    if (offload) {
        /* the NIC thread probes every peer, connected now or not (probe_tick) */
        free(x->conn);
        x->conn = NULL;
    }
}

static int ofi_setup(struct pt_xport *x)
{
    uint32_t n = x->n;
    x->epfd = -1;
    x->tfd = -1;
    x->fault = (uint8_t)pt_config()->ofi_fault;
    x->probe_t = calloc(n, sizeof *x->probe_t);
    x->probe_k = calloc(n, sizeof *x->probe_k);
    x->post_turns = calloc(n, sizeof *x->post_turns);
    bool rd_ok = x->post_turns != NULL;
    for (uint32_t k = 0; k < OFI_STEPS; k++)
        rd_ok &= (x->st[k].rd = calloc(1, sizeof *x->st[k].rd)) != NULL;
    x->dead_t = calloc(n, sizeof *x->dead_t);
    x->dead_why = calloc(n, 1);
    x->dead_err = calloc(n, sizeof *x->dead_err);
    x->bye = calloc(n, 1);
    x->npendp = calloc(n, sizeof *x->npendp);
    x->blk = calloc(n, sizeof *x->blk);
    x->chk_fd = malloc(n * sizeof *x->chk_fd);
    x->chk_next = calloc(n, sizeof *x->chk_next);
    x->chk_shift = calloc(n, 1);
    if (!x->probe_t || !x->probe_k || !rd_ok || !x->dead_t || !x->dead_why || !x->dead_err ||
        !x->bye || !x->npendp || !x->blk || !x->chk_fd || !x->chk_next || !x->chk_shift)
        return -ENOMEM;
    for (uint32_t p = 0; p < n; p++)
        x->chk_fd[p] = -1;
    x->addr = malloc(n * sizeof *x->addr);
    x->cred = calloc((size_t)n * 2, sizeof *x->cred);
    x->owe = calloc((size_t)n * 2, sizeof *x->owe);
    x->sent = calloc(n, sizeof *x->sent);
    x->sbase = calloc((size_t)n * 2 * 32, sizeof *x->sbase);
    x->rbase = calloc((size_t)n * 2 * 32, sizeof *x->rbase);
    x->dead = calloc(n, 1);
    x->gone = calloc(n, sizeof *x->gone);
    x->owe_flag = calloc(n, sizeof *x->owe_flag);
    x->pidfd = malloc(n * sizeof *x->pidfd);
    if (x->pidfd)
        for (uint32_t p = 0; p < n; p++)
            x->pidfd[p] = -1;
    x->in = calloc((size_t)n * 2, sizeof *x->in);
    x->rxo = calloc(n, sizeof *x->rxo);
    x->held_list = calloc(n, sizeof *x->held_list);
    uint64_t want_sb = (uint64_t)n * 2 * x->qslots + n;
    x->nsb = want_sb > 1024 ? 1024 : (uint32_t)want_sb;
    x->sb = calloc(x->nsb, sizeof *x->sb);
    x->npend_cap = x->nsb;
    x->pend = calloc(x->npend_cap, sizeof *x->pend);
    size_t sbytes = OFI_PFX + x->slot;
    x->smem = aligned_alloc(64, (size_t)x->nsb * sbytes);
    size_t rsize = 64 * sbytes > (256u << 10) ? 64 * sbytes : (256u << 10);
    x->rmem = aligned_alloc(64, OFI_NRBUF * rsize);
    x->inmem = aligned_alloc(64, (size_t)n * 2 * x->qslots * x->slot);
    x->reg_cap = 2 * (uint32_t)pt_config()->req_slots + 64 * n;
    x->reg = calloc(x->reg_cap, sizeof *x->reg);
    x->rk = calloc(x->reg_cap, sizeof *x->rk);
    if (!x->addr || !x->cred || !x->owe || !x->sent || !x->sbase || !x->rbase || !x->dead ||
        !x->gone || !x->owe_flag || !x->pidfd || !x->in || !x->rxo || !x->held_list || !x->sb ||
        !x->pend || !x->smem || !x->rmem || !x->inmem || !x->reg || !x->rk)
        return -ENOMEM;
    for (uint32_t p = 0; p < n; p++) {
        x->addr[p] = FI_ADDR_NOTAVAIL;
        x->cred[p * 2] = x->cred[p * 2 + 1] = x->qslots;
        x->pidfd[p] = -1;
        for (int c = 0; c < 2; c++)
            x->in[p * 2 + c].slots = x->inmem + ((size_t)p * 2 + c) * x->qslots * x->slot;
    }
    x->rr[0] = x->rr[1] = n - 1;
    x->sfree = UINT32_MAX;
    x->pend_res = UINT32_MAX;
    for (uint32_t i = x->nsb; i-- > 0;) {
        x->sb[i].c.kind = CTX_SEND;
        x->sb[i].mem = x->smem + (size_t)i * sbytes;
        sbuf_free(x, i);
    }
    int rc = open_fabric(x);
    if (rc)
        return rc;
    x->inject = pt_config()->ofi_short ? x->info->tx_attr->inject_size : 0;
    /* short messages are built below the slot, in the prefix's 64 bytes */
    x->short_max = (uint32_t)(x->inject < OFI_PFX ? x->inject : OFI_PFX);
    if (x->short_max < sizeof(struct ofi_spfx) + 4)
        x->short_max = 0; /* room for no changed word */
    for (uint32_t i = 0; i < OFI_NRBUF; i++) {
        x->rb[i].c.kind = CTX_RECV;
        x->rb[i].mem = x->rmem + (size_t)i * rsize;
        x->rb[i].size = rsize;
        rc = post_rbuf(x, i);
        if (rc)
            return rc;
    }
    /* The sleep set: the CQ's wait object and every peer's pidfd. */
    x->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (x->epfd < 0)
        return -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->cq_fd, &ev) != 0)
        return -errno;
    if (x->ev_fd >= 0) {
        struct epoll_event e2 = {.events = EPOLLIN, .data.u32 = UINT32_MAX - 1};
        if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->ev_fd, &e2) != 0)
            return -errno;
    }
    int64_t probe_ms = pt_config()->ofi_probe_ms;
    bool host_probe = !pt_config()->offload && n <= OFI_CONNECT_MAX;
    if (x->pmix && probe_ms > 0 && n > 1 && (pt_config()->offload || host_probe)) {
        /* PMIx job: the liveness probe's timer (probe_tick). A probe
         * completes once the provider has connected to the peer, which needs
         * the peer's engine to run: in host mode a rank that makes no Portals
         * call for a few seconds was taken for dead (mp_pmix_liveness_busy_host,
         * docs/ofi.md), and a rank that left in order before its first
         * contact with a host-mode peer that computes could not say bye, so
         * it was taken for dead once its endpoint refused the kernel's check
         * (an audit of the host-mode probe, 2026-11-30: 6 of 6 runs). So in
         * host mode the connections are made in PtlNIInit, while every rank
         * runs its engine there (connect_all, after the wire-up fence), and
         * only peers connected then are probed; jobs above OFI_CONNECT_MAX
         * ranks are not (a connection to every peer).
         * Offload mode makes them there too (up to OFI_CONNECT_MAX ranks) and
         * then probes every peer as before (conn freed, connect_all): the
         * first probe of each rank was its first send that is no inject,
         * and rxm then zeroes its 17 MB pool of send buffers (1,024 x
         * 16 KiB, util_buf.c) on the spot. At the first probe period, mid
         * run, that took 90 ms of the NIC thread while it held the engine:
         * once per run an 8 B ping-pong across the two namespaces waited
         * ~100 ms (bench/results-ofi.md, "Thirty-fifth session"). With it,
         * the connections' set-up leaves the application's first messages
         * too. */
        if (n <= OFI_CONNECT_MAX) { /* (host mode is here only below it) */
            x->conn = calloc(n, 1);
            if (!x->conn)
                return -ENOMEM;
        }
        x->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (x->tfd < 0)
            return -errno;
        x->probe_ns = (uint64_t)probe_ms * 1000000u;
        struct itimerspec its = {
            .it_interval = {probe_ms / 1000, (probe_ms % 1000) * 1000000},
            .it_value = {probe_ms / 1000, (probe_ms % 1000) * 1000000}};
        struct epoll_event e3 = {.events = EPOLLIN, .data.u32 = UINT32_MAX - 2};
        if (timerfd_settime(x->tfd, 0, &its, NULL) != 0 ||
            epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->tfd, &e3) != 0)
            return -errno;
        /* The kernel's check: the tcp provider (alone or under rxm) names an
         * endpoint by the IPv4/IPv6 address its listening socket is bound to.
         * (verbs' names are IP addresses too, but of the RDMA CM, which no TCP
         * connect reaches: those keep the time window.) */
        const char *pn = x->info->fabric_attr->prov_name;
        uint32_t af = x->info->addr_format;
        x->kcheck = !strncmp(pn, "tcp", 3) && (pn[3] == '\0' || pn[3] == ';') &&
                    (af == FI_SOCKADDR || af == FI_SOCKADDR_IN || af == FI_SOCKADDR_IN6);
        pt_log(PT_LOG_INFO, "ofi: liveness probe every %lld ms; a late probe is judged %s",
               (long long)probe_ms, x->kcheck ? "by the kernel's answer at the peer's address"
                                               : "after 4 periods");
    }
    for (uint32_t p = 0; p < n; p++) {
        pid_t pid = p == x->me ? 0 : x->so->peer_ospid(x->shm, p);
        if (pid <= 0)
            continue;
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
            continue; /* gone already, or an old kernel: the launcher's flag still works */
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        ev.data.u32 = p;
        if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            continue;
        }
        x->pidfd[p] = fd;
        x->npidfd++;
    }
    /* Our name, for the peers. */
    char name[256];
    size_t len = sizeof name;
    rc = fi_getname(&x->ep->fid, name, &len);
    if (rc) {
        log_fi("fi_getname", rc);
        return rc;
    }
    rc = x->ax.publish(x->ax.ctx, name, len);
    if (rc && rc != -EIO) /* -EIO: the exchange said why (the PMIx fence, its timeout) */
        pt_log(PT_LOG_ERR, "ofi: cannot publish the endpoint name (%zu bytes): %s", len,
               strerror(-rc));
    else if (x->conn && !x->connect_later)
        connect_all(x);
    return rc;
}

int pt_ofi_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                struct pt_xport_info *info_p)
{
    const struct pt_xport_ops *so;
    struct pt_xport *shm;
    int rc = pt_shm_open(slot_size, queue_slots, pid_hint, &so, &shm, info_p);
    if (rc)
        return rc;
    if (info_p->rank >= info_p->nranks) {
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: a process that joins a running job (a guest) "
                           "needs PTL_TRANSPORT=shm (docs/ofi.md)");
        so->close(shm);
        return -ENOTSUP;
    }
    /* A rank that published a name before (PtlNIFini, then PtlNIInit again)
     * would get a new endpoint that its peers do not know: their address
     * vectors, credits and order stamps describe the old one. Refused until
     * re-attaching is done (docs/ofi.md), rather than left to hang. */
    char old[PT_SHM_EP_NAME_MAX];
    size_t oldlen = sizeof old;
    uint32_t gen;
    if (pt_shm_ep_lookup(shm, info_p->rank, old, &oldlen, &gen) == 0) {
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: rank %u initialises an NI a second time in this "
                           "job (after PtlNIFini): not supported over libfabric yet",
               info_p->rank);
        so->close(shm);
        return -ENOTSUP;
    }
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x) {
        so->close(shm);
        return -ENOMEM;
    }
    x->so = so;
    x->shm = shm;
    x->me = info_p->rank;
    x->n = info_p->nranks;
    info_p->nprocs = info_p->nranks; /* no guests over ofi (ofi_rank_of) */
    info_p->ranks_here = 0;            /* a network transport: not told */
    x->slot = info_p->slot_size;
    x->qslots = pt_shm_queue_depth(shm);
    x->ax = (struct ofi_addrx){shm, region_publish, region_lookup};
    x->ev_fd = -1;
    rc = ofi_setup(x);
    if (rc) {
        ofi_free(x);
        so->close(shm);
        return rc < 0 ? rc : -EIO;
    }
    *ops_p = &g_ofi_ops;
    *x_p = x;
    info_p->cma_ok = true;
    info_p->cma_why = "ofi: the puller reads with fi_read (RMA)";
    info_p->rndv_iov_max = 1; /* reg_desc */
    pt_log(PT_LOG_INFO, "ofi: rank %u of %u on provider %s", x->me, x->n, x->prov);
    return 0;
}

#ifdef PTL_WITH_PMIX
/* Mixed job (mix.c): which peers another transport serves, then host mode's
 * connections. Before, ofi made a connection to every rank of the job, its
 * node peers included (the probe in offload mode, connect_all in host mode,
 * the byes at close): a full node of N ranks held N x (N - 1) TCP connections
 * that never carried a message. Token holder (PtlNIInit's). */
int pt_ofi_serve(struct pt_xport *x, const uint8_t *others)
{
    if (others) {
        x->other = malloc(x->n);
        if (!x->other)
            return -ENOMEM;
        memcpy(x->other, others, x->n);
        x->other[x->me] = 0;
    }
    x->connect_later = false;
    if (x->conn)
        connect_all(x);
    return 0;
}

/* A process started by a PMIx launcher: every peer over libfabric, identity,
 * liveness and the name exchange from PMIx (pmix.c). */
int pt_ofi_open_pmix(uint32_t slot_size, uint32_t queue_slots, const struct pt_xport_ops **ops_p,
                     struct pt_xport **x_p, struct pt_xport_info *info_p)
{
    struct pt_pmix_sub sub;
    int rc = pt_pmix_open(info_p, &sub);
    if (rc)
        return rc;
    return pt_ofi_open_pmix_sub(&sub, slot_size, queue_slots, false, ops_p, x_p, info_p);
}

int pt_ofi_open_pmix_sub(const struct pt_pmix_sub *subp, uint32_t slot_size, uint32_t queue_slots,
                         bool connect_later, const struct pt_xport_ops **ops_p,
                         struct pt_xport **x_p, struct pt_xport_info *info_p)
{
    struct pt_pmix_sub sub = *subp;
    int rc;
    info_p->slot_size = slot_size;
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x) {
        sub.ops->close(sub.x);
        return -ENOMEM;
    }
    x->so = sub.ops;
    x->shm = sub.x;
    x->pmix = true;
    x->remote_peers = !sub.all_local;
    x->me = info_p->rank;
    x->n = info_p->nranks;
    x->slot = slot_size;
    x->qslots = pt_queue_slots_for(queue_slots);
    x->ax = sub.ax;
    x->ev_fd = sub.event_fd;
    x->connect_later = connect_later;
    rc = ofi_setup(x);
    if (rc) {
        ofi_free(x);
        sub.ops->close(sub.x);
        return rc < 0 ? rc : -EIO;
    }
    *ops_p = &g_ofi_ops;
    *x_p = x;
    info_p->cma_ok = true;
    info_p->cma_why = "ofi: the puller reads with fi_read (RMA)";
    info_p->rndv_iov_max = 1; /* reg_desc */
    pt_log(PT_LOG_INFO, "ofi: rank %u of %u on provider %s (PMIx job)", x->me, x->n, x->prov);
    return 0;
}
#endif
