/*
 * nic.h - the engine: one per network interface (NI).
 *
 * Ownership. Everything below marked [E] is owned by the engine: it is read
 * and written only by the thread that holds the engine token (the NIC thread
 * in offload mode, or an API thread that took the token while waiting or in
 * host-matching mode). Nothing [E] is ever locked. Fields marked [A] are read
 * by API threads without the token, through the ordering named at the field.
 *
 * Who holds the token, who sleeps and who wakes whom is the waiting protocol
 * (`w`, engine/wait.h): no other file touches its words.
 */
#ifndef PT_NIC_H
#define PT_NIC_H

#include "eq.h"
#include "futex.h"
#include "handle.h"
#include "life.h"
#include "perr.h"
#include "proto.h"
#include "pt_atomic.h"
#include "spsc.h"
#include "wait.h"
#include "xport.h"

#include <portals3.h>
#include <pthread.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define PT_MAX_CMDQ 128        /* command rings per NI: PT_MAX_CMDQ - 1 threads
                                * have their own, the rest share the last one  */
#define PT_CMD_BATCH 16        /* commands taken per ring per poll            */
#define PT_RX_BATCH 32         /* messages handled per poll                   */
#define PT_PARK_MAX PT_XPORT_PARK_MAX /* senders a sleeper can tell parked */
#define PT_MAX_AC 64           /* ACL entries (max_ac_index + 1)              */

struct pt_nic;
struct pt_md;

/* ---- objects ([E] unless noted) ---------------------------------------- */

struct pt_me {
    _Atomic uint32_t tag;         /* [A] gen<<1|live; see handle.h           */
    uint32_t idx;
    uint32_t pt_index;
    uint8_t unlink;               /* PTL_UNLINK / PTL_RETAIN                 */
    ptl_process_id_t match_id;
    uint64_t match_bits, ignore_bits;
    struct pt_me *prev, *next;    /* portal match list                       */
    struct pt_md *md;             /* at most one                             */
    uint32_t next_free;
};

struct pt_md {
    _Atomic uint32_t tag;         /* [A] gen<<1|live                         */
    uint32_t idx;
    ptl_md_t umd;                 /* user's description; threshold is live   */
    _Atomic uint64_t api_len;     /* [A] total length, for API range checks
                                   * (ST_RELAXED by the engine on attach/update) */
    struct pt_mem mem;            /* the memory it exposes                   */
    struct iovec *iov;            /* owned copy for PTL_MD_IOVEC             */
    uint64_t local_off;           /* locally managed offset                  */
    uint32_t pending;             /* operations whose data is still moving   */
    uint8_t unlink_op;            /* PTL_UNLINK / PTL_RETAIN                 */
    uint8_t unlink_due;           /* inactive by use + PTL_UNLINK: unlink when
                                   * pending reaches 0                       */
    uint8_t inactive_by_use;      /* max_size rule made it inactive          */
    struct pt_me *me;             /* NULL for a bound (free-floating) MD     */
    struct pt_eq *eq;             /* resolved umd.eq_handle, or NULL         */
    ptl_event_t unlink_ev;        /* template of the event that caused the unlink */
    uint32_t ct_h;                /* PtlMDBindCT: the CT it counts into (0: none) */
    uint8_t ct_opts;              /* PTL_CT_* kinds it counts                */
    uint16_t ev_kinds;            /* event kinds it posts: bit k for kind k
                                   * (pt_md_ev_kinds of umd; 0: no EQ)       */
    uint32_t next_free;
};

struct pt_eqo {
    _Atomic uint32_t tag;         /* [A] gen<<1|live; q valid while live     */
    uint32_t idx;
    struct pt_eq *q;              /* [A] written before tag (R1); a reader that
                                   * saw the tag live reads it until it leaves
                                   * its call: the slot is not reused (and q not
                                   * rewritten) before then (eqobj.c)        */
    uint32_t next_free;           /* free queue, or the retired list          */
    /* [E] engine only (event.c, pt_ev_room): the readers' read_count as
     * last read; since when a request has waited for room (0: none); the
     * read_count at which the engine last stopped waiting (UINT64_MAX:
     * never). Set when the EQ is made. */
    uint64_t rd_cached, room_since, rd_gave_up;
    /* [E] END events of requests accepted here whose post comes later (a
     * rendezvous pull, copy-mode data, a reply's pull: pt_ev_owe): the room
     * check counts them as if posted, or 63 accepted 4 KiB puts overran a
     * 512-entry EQ whose reader kept up (mp_scale incast, offload). */
    uint32_t owed;
    /* D6's filter (docs/waiting.md, "Whom D6 wakes"): API threads asleep
     * (W2) waiting for this EQ. Written by those waiters (RMW, before W2's
     * announcement), read by the engine after D6's fence. Never reset: a
     * slot is reused only after its waiters left (eqobj.c). */
    _Atomic uint32_t watchers;
};

/* A counting event (portals3_ext.h; ct.c). [E] except the values. */
struct pt_ct {
    _Atomic uint32_t tag;         /* [A] gen<<1|live                         */
    uint32_t idx;
    /* [A] the value: written only by the engine (ST_RELEASE), read by any
     * API thread (LD_ACQUIRE: PtlCTGet, PtlCTWait). A reader may see a
     * success and a failure of two different instants; each is exact. */
    _Atomic uint64_t success, failure;
    uint32_t armed, armed_tail;   /* triggered ops armed on it, by threshold then
                                   * arming order: trig slot + 1 (0: none)   */
    uint32_t narmed;
    uint32_t next_free;
};

/* Free slots of one table, oldest first: index + 1 (0 = none), linked
 * through next_free. */
struct pt_freeq {
    uint32_t head, tail, len;
};

struct pt_portal {
    struct pt_me *head, *tail;
    uint32_t len;
    uint8_t used;                 /* ever held an ME (PtlMEAttachAny)        */
};

struct pt_acl {
    ptl_process_id_t id;
    ptl_uid_t uid;
    ptl_jid_t jid;
    ptl_pt_index_t pt_index;
};

/* An operation in flight across several polls (rendezvous data movement).
 * PT_OP_RNDV_PUT: the target of a rendezvous put pulls its data; in a
 * cooperative one (wire.h, PUSH) it pulls [0, push_at) and the initiator
 * writes [push_at, push_at + push_len) until its PDONE (coop_wait); then the
 * target pulls what the initiator did not write ([tail_from, tail_to)).
 * PT_OP_PUSH: the initiator's side of it: writes rv's part of its MD into the
 * target's iovecs, then answers PDONE (rsp). */
#define PT_COOP_NONE 0xffffffffu
enum pt_op_kind { PT_OP_RNDV_PUT, PT_OP_RNDV_REPLY, PT_OP_COPY_SEND, PT_OP_PUSH };
struct pt_op {
    enum pt_op_kind kind;
    struct pt_md *md;
    struct pt_rndv rv;
    struct pt_wire_hdr rsp;       /* the response to send when done          */
    uint32_t rsp_peer;
    ptl_event_t ev;               /* END event template                      */
    uint8_t post_end, rsp_pending, failed;
    uint8_t owes_end;             /* its END was counted by pt_ev_owe          */
    uint8_t gone;                 /* failed: the peer's process no longer exists
                                   * (a CMA step said ESRCH), or its guest slot
                                   * has another owner: PEER_DIED, and no
                                   * FIN/RFIN/PDONE to the slot (op_respond) */
    /* cooperative rendezvous, target side */
    uint8_t coop_wait;            /* the initiator's PDONE has not come        */
    uint8_t idle;                 /* nothing to do but wait for it (nops_idle) */
    uint8_t xfer_busy;            /* the transport holds a step of ours in flight
                                   * (its pull said -EAGAIN): the same call again
                                   * every pass until it answers (pt_ops_progress) */
    uint8_t xfer_async;           /* ... it did once: our steps may be long    */
    uint8_t cstall;               /* PT_OP_COPY_SEND: out of credits with a mark
                                   * armed (nops_cstall; copy.c)              */
    uint64_t push_at, push_len;   /* the part asked of the initiator           */
    uint64_t tail_from, tail_to;  /* what it did not write: ours to pull       */
    uint32_t claim, claim_open;   /* our claim word (PT_COOP_NONE: none) and its
                                   * OPEN value (shm_region.h, "Claim words") */
    /* PT_OP_COPY_SEND: stream [src_off, src_off + left) as DATA fragments */
    uint64_t src_off, left;
    uint8_t cls;
    /* PT_OP_RNDV_PUT of a reduction put: pulled into the NI's scratch and
     * combined into the MD (target.c, atomic_step); acode = type << 8 | op */
    uint8_t atomic;
    uint16_t acode;
    ptl_event_kind_t end_kind;
    struct pt_op *next;
    uint32_t gen;                 /* lives of this slot (kept by pt_op_get):
                                   * a PUSH names the op by index and gen   */
};

/* Receiving side of a copy-mode transfer: one per (class, sender), since a
 * sender streams at most one transfer per class to a receiver at a time. */
struct pt_copyin {
    uint8_t active;
    uint8_t is_reply;            /* REPLY data (RSP class) vs PUT data (REQ)  */
    uint8_t ack;                 /* PUT: an ACK is due at the end             */
    uint8_t atomic;              /* a reduction put: fragments are combined into
                                  * the MD (acode = type << 8 | op), not written */
    uint8_t afail;               /* ... whose matched length is no whole number
                                  * of elements: nothing is written, END fails */
    uint8_t owes_end;            /* PUT: its END was counted by pt_ev_owe     */
    uint16_t acode;
    struct pt_md *md;            /* NULL: the put was dropped; swallow data   */
    uint64_t off, mlen, rlen, got;
    ptl_event_t ev;
    struct pt_wire_hdr ack_hdr;
};

/* An initiator request that waits for its answer (wire.h): a GET or GETPUT
 * for its REPLY or NACK, a rendezvous PUT for its FIN, a PUT asking for an
 * ACK for its ACK or NACK. If its target dies first, the record says what to
 * post instead (pt_ireq_fail_peer): REPLY_END, SEND_END, ACK with
 * PTL_NI_PEER_DIED. One per request from a fixed table (PTL_REQ_SLOTS):
 * taken when the request is sent, threaded on its target's list, freed by
 * the answer, which finds it by the id the request carried (wire `req`), in
 * O(1); only the death path walks a list. An answer whose id names no live
 * record of its sender (the request was failed when its sender died) is
 * stale and dropped. [E] */
enum pt_ireq_kind { PT_IRQ_GET, PT_IRQ_PUT };
struct pt_ireq {
    uint32_t id;                 /* slot + k * table size; issued ids are > size */
    uint32_t peer;               /* the target's rank                            */
    uint32_t md;                 /* initiator MD handle (GET: the get MD)       */
    uint32_t link;               /* PUT: SEND_START's link                      */
    uint8_t live;
    uint8_t kind;                /* enum pt_ireq_kind                           */
    uint8_t send_end;            /* PUT: SEND_END waits for the FIN (rendezvous) */
    uint8_t ack;                 /* PUT: an ACK was asked for                   */
    uint8_t op_held;             /* GET: an op is promised to its reply           */
    uint32_t pt_index;
    uint32_t prev, next;         /* the peer's list (slot + 1; 0: none); free: next */
    uint64_t match_bits, remote_offset, local_offset, length, hdr_data;
};

/* A rendezvous GET reply whose RFIN has not come (target.c, "Replies
 * awaiting their RFIN"): what the target needs to post its GET_END, failed,
 * if the initiator dies before it pulled. Per peer, a list like the ireqs'. */
struct pt_rfw {
    uint32_t md;                 /* the MD's handle (its `pending` counts this) */
    uint32_t peer;               /* the initiator's rank                        */
    uint32_t prev, next;         /* the peer's list (slot + 1; 0: none); free: next */
    ptl_event_t ev;              /* GET_START's event, the END's template      */
};

/* ---- command ring (API thread -> engine) --------------------------------- */

enum pt_cmd_op {
    PT_CMD_PUT = 0,
    PT_CMD_GET,
    PT_CMD_GETPUT,
    PT_CMD_ME_ATTACH,    /* MEAttach, MEAttachAny, MEInsert               */
    PT_CMD_ME_UNLINK,
    PT_CMD_MD_ATTACH,    /* MDAttach and MDBind                           */
    PT_CMD_MD_UNLINK,
    PT_CMD_MD_UPDATE,
    PT_CMD_EQ_ALLOC,
    PT_CMD_EQ_FREE,
    PT_CMD_AC_ENTRY,
    PT_CMD_STATUS,
    PT_CMD_MEMD_POST,    /* MEInsert/Attach + MDAttach (+ MDUpdate test)  */
    PT_CMD_DUMP,
    PT_CMD_ATOMIC,       /* PtlAtomicPut: a put the target combines (mv) */
    PT_CMD_CT_ALLOC,
    PT_CMD_CT_FREE,
    PT_CMD_CT_OP,        /* PtlCTSet / PtlCTInc (and their triggered twins) */
    PT_CMD_MD_CT,        /* PtlMDBindCT                                   */
    PT_CMD_LAST
};

/* pt_cmd.flags */
#define PT_CF_TRIG 0x1u  /* arm the command on trig_ct at trig_thr instead of
                          * running it (the API reserved a slot: trig_used) */
#define PT_CF_SEQ 0x2u   /* seq is set: posted while the NI had several rings
                          * (pt_nic_submit; drain_cmds takes the rings' heads
                          * in seq order) */

/* Completion of a synchronous command: the engine fills rc and the outputs,
 * then ST_RELEASE(done, 1) (R-DONE); the caller LD_ACQUIREs done (A-DONE). */
struct pt_done {
    _Atomic uint32_t done;
    int rc;
    uint32_t h1, h2;
    uint32_t u32;
    uint64_t u64;
};

struct pt_cmd_me {
    uint32_t base_me;            /* MEInsert base, or 0                     */
    ptl_pt_index_t pt_index;
    int any;                     /* MEAttachAny                             */
    ptl_process_id_t match_id;
    ptl_match_bits_t match_bits, ignore_bits;
    ptl_unlink_t unlink;
    ptl_ins_pos_t pos;
};

struct pt_cmd_md {
    uint32_t me;                 /* MDAttach: the ME; MDBind: 0             */
    const ptl_md_t *md;          /* caller's description                    */
    ptl_unlink_t unlink_op;
};

struct pt_cmd {
    uint16_t op;                 /* enum pt_cmd_op                          */
    uint16_t flags;
    uint32_t h;                  /* the command's main handle               */
    struct pt_done *done;        /* NULL for asynchronous commands          */
    uint64_t t_post;             /* instrumentation                         */
    uint32_t trig_ct;            /* PT_CF_TRIG: the CT it is armed on        */
    uint32_t seq;                /* PT_CF_SEQ: its place in the NI's order   */
    uint64_t trig_thr;           /* PT_CF_TRIG: its success threshold        */
    union {
        struct {                 /* PUT / GET / GETPUT (by value: async)    */
            uint32_t md2;        /* GETPUT: the put MD                      */
            uint32_t ack;
            ptl_process_id_t target;
            uint32_t pt_index, ac_index;
            uint64_t match_bits, remote_offset, local_offset, length, hdr_data;
            uint64_t put_offset; /* GETPUT: offset in the put MD */
            uint8_t aop, atype;  /* ATOMIC: ptl_op_t, ptl_datatype_t */
        } mv;
        struct {                 /* CT_OP                                   */
            uint32_t ct;
            uint32_t set;        /* 1: PtlCTSet, 0: PtlCTInc                */
            uint64_t success, failure;
        } ct;
        struct {                 /* MD_CT (h: the MD)                       */
            uint32_t ct;
            uint32_t opts;
        } mdct;
        struct pt_cmd_me me;
        struct pt_cmd_md md;
        struct {
            const ptl_md_t *newmd;
            ptl_md_t *oldmd;
            uint32_t test_eq;
        } upd;
        struct {
            struct pt_eq *q;   /* made by the API thread (pt_eq_prepare)   */
        } eqa;
        struct {
            uint32_t index;
            struct pt_acl e;
        } ac;
        struct {
            struct pt_cmd_me me;
            struct pt_cmd_md md;
            uint32_t test_eq;
        } post;
        uint32_t sr;
        int dump_what;
    } u;
};
_Static_assert(sizeof(struct pt_cmd) <= 128, "a command must fit one 128-byte ring slot");
#define PT_CMD_SLOT 128

/* A triggered operation (ct.c): the command it performs, armed on a CT
 * until that CT's success count reaches thr, then queued ready and run by
 * the engine's poll. [E] */
struct pt_trig {
    struct pt_cmd cmd;           /* PUT / GET / ATOMIC / CT_OP, PT_CF_TRIG cleared */
    uint64_t thr;
    uint32_t next;               /* its CT's armed list, the ready FIFO or the
                                  * free list: slot + 1 (0: end)               */
};

struct pt_cmdq {
    struct spsc_hdr ring;         /* producer: owning API thread; consumer: [E] */
    _Atomic uint32_t owner;       /* 0 free, 1 claimed by a thread (CAS)         */
    uint32_t index;
    struct pt_nic *nic;
    void *slots;
    /* The credit wait (docs/waiting.md, "Stalled on credits"): 1 + the
     * consumer index of the command that returned PT_E_AGAIN after the
     * transport armed a credit mark for it, or 0. Written by the engine
     * holder (drain_cmds, ST_RELAXED), read by any thread (has_work's
     * C-RECHECK, LD_RELAXED after its fence): a ring whose head is that
     * command is no work while the marks stay set. */
    _Atomic uint64_t stall_at; /* 64 bits: 1 + 0xffffffff is not "none" */
    /* The room wait (wait.h RW): the producer asleep on its full ring, the
     * engine holder that takes half of it rings (drain_cmds). */
    struct pt_roomwait room;
    /* The shared ring (index PT_MAX_CMDQ - 1, made for the first thread past
     * the private rings): its producers take turns under plock, for a whole
     * post (room wait, stamp and commit), so the ring still has one producer
     * at a time and its stamps rise in FIFO order (drain_merged relies on
     * both). Never handed back (owner stays 1). Set before publication. */
    bool shared;
    pthread_mutex_t plock;
};

/* RW-DUE's condition, any thread: half the ring free (the consumer index
 * is ours or was read after the caller's fence; head by acquire). */
static inline bool pt_cmdq_half_free(struct pt_cmdq *q)
{
    uint32_t used = LD_ACQUIRE(&q->ring.head) - LD_RELAXED(&q->ring.tail);
    return used <= (q->ring.mask + 1) / 2;
}

/* ---- per-stage timing (PTL_TIMING=1) -------------------------------------- */
#include "timing.h"

/* ---- the NIC -------------------------------------------------------------- */

struct pt_nic {
    struct pt_wait w;                     /* the waiting protocol (wait.h)             */
    _Atomic uint32_t failed;              /* [A] PTL_NI_* code once the job failed: the
                                           * engine ST_RELEASEs it after it failed what
                                           * depended on the dead peers (R-FAIL), so a
                                           * waiter that LD_ACQUIREs it finds their
                                           * END events posted (A-FAIL, wait.c)         */
    _Atomic uint64_t settle_until;        /* [A] the job failed with transfers to dead
                                           * peers still held by the transport (an ofi
                                           * pull's reads posted: ofi_pull.c, pull_drain
                                           * ends them, bounded): until this time
                                           * (pt_now_ns) waiters look for their failed
                                           * END events before they report PTL_FAIL;
                                           * 0: none. The token holder ST_RELEASEs it
                                           * before R-FAIL (pt_nic_fail) and clears it
                                           * once none is left (poll_work); any thread
                                           * reads it (pt_nic_settling)                 */
    /* [E] written by the token holder, read by any thread (has_work): the
     * transport's count of peers that left the job in order and ended
     * (xport op departures) as the engine last acted on it (poll_once). */
    _Atomic uint32_t departed_seen;
    _Atomic uint32_t dead;                /* [A] PtlNIFini began: ST_RELEASE 1 by it, before
                                           * its wake-up; waiters read it after theirs */

    PT_ALIGNED uint32_t ni_index;
    uint32_t h_seed;                      /* first generation of every object slot
                                           * (pt_h_seed of the NI's generation)     */
    _Atomic uint32_t tag;                 /* [A] NI handle generation<<1|live          */
    _Atomic uint32_t fork_park;           /* fork (pt_nic_fork_prepare): non-zero (the
                                           * fork's generation) while the forking thread
                                           * wants the NIC thread parked; read at every
                                           * poll by the NIC thread                    */
    ptl_interface_t iface;
    ptl_process_id_t id;                  /* [A] immutable after init                  */
    ptl_uid_t uid;
    ptl_jid_t jid;
    ptl_ni_limits_t limits;               /* [A] immutable after init                  */
    bool offload;
    int nic_cpu;
    uint32_t eager_max, slot_size, rndv_seg;

    /* transport */
    const struct pt_xport_ops *xo;
    struct pt_xport *x;
    struct pt_xport_info xi;

    /* command rings */
    struct pt_cmdq *_Atomic cmdq[PT_MAX_CMDQ]; /* [A] published with ST_RELEASE        */
    _Atomic uint32_t ncmdq;
    /* The order of commands posted by several threads (§6.15: two operations
     * one process initiates on another start there in initiation order, also
     * when two threads initiate them one after the other): each command
     * posted while the NI has more than one ring takes the next value, a
     * relaxed RMW. Two posts ordered by happens-before take increasing
     * values (their RMWs are in that order in the counter's modification
     * order); concurrent ones take some order. Written by posting threads
     * only; its own line. */
    PT_ALIGNED _Atomic uint32_t cmd_seq;
    PT_ALIGNED uint32_t cmdq_slots;
    /* The credit wait: the transport's counter of armed reserve failures
     * (xport.h stall_counter; a constant 0 without the ops), and whether
     * the last drain_cmds recorded a stall [E]. */
    const uint32_t *stall_ctr;
    bool cstall;
    /* Passes in a row that left a single ring's stalled head alone because
     * every mark armed for it was still set (drain_cmds, C-SKIP) [E]. */
    uint8_t stall_skips;
    /* Dispatches that ended stalled on credits with a mark armed (the first
     * of a stall and every retry C-SKIP did not spare): written by the
     * holder, read relaxed by the job dump and tests (mp_creditwait). */
    _Atomic uint64_t cstall_fails;
    void (*rx_done)(struct pt_xport *x, bool fenced); /* xport rx_done, or NULL */
    /* Batched doorbells (PTL_SHM_RING_BATCH and a transport with tx_hold):
     * a pass over the command rings that finds two or more commands rings
     * each receiver once, after them (drain_cmds; docs/waiting.md, "D1
     * after a batch"). tx_held: this pass holds [E]. */
    bool tx_batch, tx_held;
    uint32_t send_polls;                  /* pt_nic_poll_send's count [E]        */
    bool rx_self;                         /* sent to ourselves since the last
                                           * look at the receive side [E]       */
    bool rx_released;                     /* drain_rx released: rx_done due [E]  */

    /* objects [E] */
    struct pt_me *mes;
    struct pt_md *mds;
    struct pt_eqo *eqs;
    struct pt_freeq me_fq, md_fq, eq_fq;  /* FIFO free lists (obj.c)                 */
    uint32_t me_hwm, md_hwm, eq_hwm;      /* slots ever used                          */
    uint32_t me_cnt, md_cnt, eq_cnt;
    /* Freed EQs whose ring a thread may still read (eqobj.c): `eq_retired`
     * since the grace period `eq_grace` began, `eq_waiting` before it; slot
     * index + 1 lists through next_free. */
    uint32_t eq_retired, eq_waiting;
    struct pt_life_snap eq_grace;
    /* Rings past their grace period, to be freed outside the engine (a big
     * ring's free took seconds under TSan, with every other call waiting):
     * pushed by the token holder (CAS), taken whole by API threads (XCHG) in
     * PtlEQAlloc, PtlEQFree and teardown (eqobj.c, pt_eq_trash_drain). */
    _Atomic(struct pt_eq *) eq_trash;
    uint32_t me_slots, md_slots, eq_slots; /* table sizes: limit + PT_H_FREE_DEPTH    */
    struct pt_portal *portals;
    uint32_t npt;
    struct pt_acl acl[PT_MAX_AC];

    /* status registers [E], read by PT_CMD_STATUS */
    uint64_t sr[PTL_SR_NAL_REGS_START];
    uint64_t drops_bad_header;            /* malformed or forged headers dropped      */

    /* copy-mode transfers [E] */
    struct pt_copyin *cin[PT_CLS_NR];     /* [class][sender]                          */
    uint8_t *copy_busy[PT_CLS_NR];        /* [class][receiver]: a stream is going out */
    int rndv_mode;                        /* PTL_RNDV_MODE                            */
    uint32_t rndv_iov_max;                /* xport info's: 0, or the pieces a pull reads */
    bool cma_ok;
    uint64_t cma_min;

    /* in-flight operations [E] */
    struct pt_op *ops, *ops_free;
    uint32_t ops_hwm;                     /* ops_pool[0, hwm) threaded (PT_LAZY_CHUNK)  */
    struct pt_op *ops_pool;               /* the one allocation behind both lists:
                                           * ops_n (PTL_MAX_OPS, a power of two) ops    */
    uint32_t ops_n;
    /* Two budgets in the one pool. The replies to our gets that may come by
     * rendezvous pull with an op, and a reply cannot wait for one (later
     * answers from that peer would queue behind it, a cooperative put's
     * PDONE among them, which an op waits for): a get promises itself one
     * of ops_n / 2 when it leaves (pt_ops_promise; ireq_free gives the
     * promise back, the reply's op takes it over until pt_op_put). Everything
     * else (a rendezvous put's pull at its target, copy streams, pushes)
     * takes the other half, and what finds it spent waits (AGAIN): those ops
     * end on their own, and a put that waits at its target holds only its
     * sender's later requests. One budget for both deadlocked: each side's
     * ops promised to gets whose requests queued behind a put the other side
     * could not start (mp_opsfull). */
    uint32_t ops_promised;                /* [E] gets whose reply has not come   */
    uint32_t ops_reply;                   /* [E] ops pulling a reply now         */
    _Atomic uint32_t nops;                /* [E] written; read by any thread (has_work) */
    _Atomic uint32_t nops_idle;           /* [E] of those, ops waiting only for a peer's
                                           * message (coop PDONE): not local work      */
    _Atomic uint32_t nops_cstall;         /* [E] of those, copy streams stalled on
                                           * credits with a mark armed: not local work
                                           * while the marks hold (C-RECHECK)          */
    uint64_t coop_min;                    /* PTL_RNDV_COOP_MIN (0: never split)         */
    bool coop_takeback;                   /* PTL_RNDV_COOP_TAKEBACK                     */
    bool nic_shares_core;                 /* the NIC thread is pinned to the one core the
                                           * application may run on (a PUSH is then
                                           * claimed only while the application waits) */
    /* [E] written (relaxed); read by any thread: diagnostics (dump, tests) */
    _Atomic uint32_t coop_split;          /* puts we split (PUSH sent)                  */
    _Atomic uint32_t coop_push;           /* PUSHes we served (wrote for a target)      */
    _Atomic uint32_t coop_short;          /* PDONEs that wrote less than asked          */
    _Atomic uint32_t coop_stolen;         /* parts we took back (the initiator had not
                                           * claimed them when our own part was done)   */
    uint64_t coop_free;                   /* [E] our free claim words (bit k: free)     */
    uint32_t coop_gen[PT_XPORT_COOP_WORDS]; /* [E] lives of each claim word            */
    bool ev_posted_last;                  /* the last pt_ev_wake had something to wake
                                           * for (a holding waiter's look, wait.c LK) */
    bool events_posted;                   /* D6 due at the end of poll, waking every
                                           * event sleeper (counters, completions, frees) */
    uint8_t ev_neqs;                      /* [E] D6 due for these EQs' events only: */
    _Atomic uint32_t *ev_watch[PT_WAIT_WATCH]; /* their watchers (see pt_eqo)         */
    uint32_t ev_eq_h;                     /* [E] event.c's EQ lookup cache: handle, */
    struct pt_eqo *ev_eq;                 /* and its live EQ (cleared at retire)     */
    ptl_process_id_t tx_id;               /* [E] initiator.c's target cache: the id */
    int32_t tx_rank;                      /* of the last rank it resolved (-1: none) */
    uint64_t eq_room_ns;                  /* PTL_EQ_ROOM_WAIT_US (event.c, pt_ev_room) */
    uint64_t nomatch_ns;                  /* PTL_NOMATCH_WAIT_US (target.c)            */
    uint64_t nomatch_idle_ns;             /* PTL_NOMATCH_IDLE_US (target.c)            */
    uint64_t *nomatch_cpu0;               /* [sender]: the application's CPU time when
                                           * its request's wait began (target.c)   */
    uint64_t *nomatch_since;              /* [sender]: since when its first request
                                           * waits for a match entry (0: none)        */
    /* Parked for a match (docs/waiting.md, "Parked for a match"; model
     * model/park.pml). [E] written by the token holder (relaxed), read by
     * any engine sleeper after its full fence (S2, W2, D3/D4), like the
     * other work sources. match_gen moves with every command that can
     * change what a request matches (ME/MD/ACL/EQ commands, pt_cmd_dispatch);
     * the park (peers whose oldest request drain_rx left unmatched, the
     * earliest end of their waits, match_gen then) is written at the end
     * of every receive pass. A torn read by a sleeper racing a holder is
     * harmless: the holder's release looks for the sleeper's work (D3). */
    _Atomic uint32_t match_gen;
    _Atomic uint32_t park_n;              /* parked senders; 0 none; > PT_PARK_MAX: too
                                           * many to name (their requests are work)   */
    _Atomic uint32_t park_gen;            /* match_gen when recorded                  */
    _Atomic uint64_t park_until;          /* pt_now_ns: the first of their waits ends */
    _Atomic uint32_t park_peer[PT_PARK_MAX];
    uint32_t park_pass_n;                 /* [E] drain_rx's count in the pass          */
    uint64_t park_pass_until;             /* [E] and its earliest end                  */

    /* requests waiting for their answers [E] (struct pt_ireq) */
    struct pt_ireq *ireqs;                /* [ireq_n], ireq_n a power of two          */
    uint32_t ireq_n, ireq_free;           /* free list: slot + 1 (0: none)            */
    uint32_t ireq_hwm;                    /* ireqs[0, hwm) threaded (PT_LAZY_CHUNK)     */
    uint32_t *ireq_head;                  /* [nprocs]: each target's list (slot + 1)  */
    struct pt_rfw *rfws;                  /* [rfw_n]: replies awaiting their RFIN      */
    uint32_t rfw_n, rfw_free, rfw_hwm;    /* as ireqs: free list, threaded lazily     */
    uint32_t *rfw_head;                   /* [nprocs]: each initiator's list           */
    uint32_t ireq_live;
    uint32_t rfw_live;                    /* records in use (on some rfw_head)         */
    uint32_t cin_live;                    /* incoming copy-mode streams active (cin)   */

    /* counting events and triggered operations [E] (ct.c) */
    struct pt_ct *cts;
    struct pt_freeq ct_fq;
    uint32_t ct_hwm, ct_cnt, ct_slots, max_cts;
    struct pt_trig *trigs;                /* [trig_n]                                 */
    unsigned char *ascratch;              /* [PT_ATOMIC_SCRATCH]: a rendezvous reduction
                                           * put's data, pulled before it is combined
                                           * (target.c; allocated with the trigs)    */
    uint32_t trig_n, trig_free;           /* free list: slot + 1                      */
    uint32_t trig_hwm;                    /* trigs[0, hwm) threaded (PT_LAZY_CHUNK)     */
    uint32_t trig_rhead, trig_rtail;      /* fired, to be run (FIFO; slot + 1)       */
    _Atomic uint32_t trig_nready;         /* [E] written; read by any thread (local work) */
    PT_ALIGNED _Atomic uint32_t trig_used;/* [A] slots reserved: an API thread RMW_ADDs
                                           * before posting an arm command (PTL_NO_SPACE
                                           * past trig_n), the engine RMW_SUBs when it
                                           * frees a slot                              */

    PT_ALIGNED pthread_t thread;
    bool has_thread;
    /* fork(): the NIC thread parked at a safe point (pt_nic_fork_prepare) and
     * the private word both sides sleep on (cold). */
    _Atomic uint32_t fork_parked;         /* the generation it parked for last    */
    uint32_t fork_gen;                    /* the forker's (under g_pt_ni_lock)     */
    struct pt_waitword fork_ww;

    struct pt_timing tm;                  /* [E] NIC-side stage timing                */
};

/* ---- the command rings, as the engine and the API walk them ---------------- */

/* Rings registered so far. A thread that finds every private ring taken
 * raises ncmdq for a moment before it takes the claim back (ring_claim), so
 * the count is clamped: cmdq[] has PT_MAX_CMDQ entries. */
static inline uint32_t pt_cmdq_count(struct pt_nic *nic)
{
    uint32_t n = LD_ACQUIRE(&nic->ncmdq); /* pairs with the RMW that registered a ring */
    return n < PT_MAX_CMDQ ? n : PT_MAX_CMDQ;
}

/* Ring i (< pt_cmdq_count), or NULL while its registration is not published. */
static inline struct pt_cmdq *pt_cmdq_at(struct pt_nic *nic, uint32_t i)
{
    return LD_ACQUIRE(&nic->cmdq[i]); /* A-Q pairs with R-Q (progress.c ring_claim) */
}

/* for each published ring q (index i): PT_CMDQ_EACH(nic, i, q) { ... };
 * break and continue act on the walk. */
#define PT_CMDQ_EACH(nic, i, q)                                                     \
    for (uint32_t i = 0, i##_n = pt_cmdq_count(nic); i < i##_n; i++)                 \
        if (!((q) = pt_cmdq_at((nic), i))) {                                         \
        } else

/* ---- engine API ------------------------------------------------------------ */

/* Create/destroy (API thread). Destroy after pt_nic_quiesce: no other API
 * thread is inside a call on the NI. */
int pt_nic_create(ptl_interface_t iface, ptl_pid_t pid, const ptl_ni_limits_t *desired,
                  uint32_t ni_index, uint32_t gen, struct pt_nic **nic_p);
void pt_nic_destroy(struct pt_nic *nic);   /* flushes posted commands first */
/* PtlNIFini, after the NI was unpublished: mark it dead, wake every waiter,
 * wait (bounded by PTL_PEER_TIMEOUT_MS) until no thread is inside a call on
 * it. False: one stayed; the NI must then be leaked, not destroyed. */
bool pt_nic_quiesce(struct pt_nic *nic);
void pt_nic_stop_thread(struct pt_nic *nic); /* join the NIC thread (idempotent) */

/* One pass over every work source, bounded. Returns the amount of work done.
 * Caller holds the token. */
int pt_nic_poll_once(struct pt_nic *nic);
/* pt_nic_poll_once after a command: the receive side only every
 * PT_NIC_SEND_RX_EVERY calls (wait.h, pt_wait_progress_cmd), always on a
 * transport whose sends move in peek (tx_needs_peek: ofi), or when the
 * command sent a message to ourselves: a put to self is received before the
 * call returns, as it always was (what the process does next, such as
 * binding a counter to the target MD, comes after it). */
#define PT_NIC_SEND_RX_EVERY 16
int pt_nic_poll_send(struct pt_nic *nic);
/* The same after a command that ran directly (pt_nic_submit): a whole
 * pass only when that pass has something a command can leave behind
 * (fired triggered operations, operations in flight, a message to
 * ourselves, the receive side's turn as above, an EQ to reclaim); else D6
 * alone, for the events the command posted. The command queues are not
 * looked at (the direct dispatch ran ours with our ring empty and the NI's
 * only ring; another thread's that appears meanwhile is D3's, at the
 * release), nor the job's failure and departures (the next whole pass: at
 * most PT_NIC_SEND_RX_EVERY commands later). */
int pt_nic_poll_after(struct pt_nic *nic);
/* Poll until a pass finds nothing to do, at most max passes (token holder). */
void pt_nic_drain(struct pt_nic *nic, int max);
/* Is there anything for the engine to do? Any thread. */
bool pt_nic_has_work(struct pt_nic *nic);
/* Any thread: how long until the first parked request's wait for a match
 * ends (it is then work: dropped, its initiator answered), in ns; -1 when
 * nothing is parked. An engine sleeper sleeps no longer. */
int64_t pt_nic_park_left_ns(struct pt_nic *nic);
uint64_t pt_nic_park_until(struct pt_nic *nic); /* when the first parked wait ends */
/* drain_rx's handlers (target.c): the request from `peer` is parked until
 * `until` (pt_now_ns) for a match. Token holder. */
void pt_nic_park_note(struct pt_nic *nic, uint32_t peer, uint64_t until);

/* Commands or in-flight transfers waiting (any thread; no remote lines read). */
bool pt_nic_local_work(struct pt_nic *nic);
void pt_nic_local_work_describe(struct pt_nic *nic, char *buf, size_t len);
/* Any thread: a command ring's head is recorded as stalled on credits (the
 * credit wait; cheap, for a sleeper's backstop: it retries then). */
bool pt_nic_credit_stalled(struct pt_nic *nic);

/* API side: post commands and wait (progress.c). */
int pt_nic_submit(struct pt_nic *nic, const struct pt_cmd *cmd);   /* async */
int pt_nic_call(struct pt_nic *nic, struct pt_cmd *cmd);           /* sync: returns done->rc */
/* Wait for an event on any of n EQs, given by handles of this NI (PtlEQPoll
 * semantics), inside a call (life.h). timeout_ms: 0 = one pass,
 * PTL_TIME_FOREVER = no limit. Returns PT_EQ_OK/DROPPED/EMPTY, PT_E_BADEQ (an
 * EQ is not, or no longer, valid; or the NI is being finalized), or PT_E_FAIL
 * (the job failed). With an event, *q_p is its ring (valid until the caller
 * leaves its call). */
int pt_nic_eq_wait(struct pt_nic *nic, const uint32_t *hs, int n, ptl_time_t timeout_ms,
                   ptl_event_t *ev, int *which, struct pt_eq **q_p);
int pt_nic_call_out(struct pt_nic *nic, struct pt_cmd *cmd, struct pt_done *out);
/* The NI is (not) alive for thread-exit ring hand-back (progress.c). */
void pt_nic_register_live(struct pt_nic *nic, bool live);
const char *pt_cmd_name(int op);
void pt_nic_dump(struct pt_nic *nic, int what, FILE *f);
/* Progress without waiting (PtlProgress, data-plane calls in host mode). */
void pt_nic_progress(struct pt_nic *nic);
/* The NIC thread's start: pinning (nic.c; called by wait.c). */
void pt_nic_thread_start(struct pt_nic *nic);
/* fork() (api/fork.c, the forking thread, g_pt_ni_lock held): park the NIC
 * thread at a safe point, where it holds no lock a child could need and is
 * not inside malloc or free, waiting until deadline_ns (pt_now_ns) at most;
 * false if it did not park by then (it still parks when it gets there).
 * Every prepare is followed by a resume (the parent's handler). No-ops for
 * an NI without a NIC thread. */
bool pt_nic_fork_prepare(struct pt_nic *nic, uint64_t deadline_ns);
void pt_nic_fork_resume(struct pt_nic *nic);
/* ... and the lock of the threads' exit handler, held across the fork
 * (lock true: take it, after g_pt_ni_lock; false: release it, in the parent
 * and in the child). */
void pt_nic_life_fork_lock(bool lock);

/* The job failed (a peer died): fail what depends on dead peers, wake waiters. */
void pt_nic_fail(struct pt_nic *nic, uint32_t code);
/* Token holder: guest slot p changed hands since the engine last looked
 * (xport.h, peer_moved): everything in flight with its last owner fails
 * (PTL_NI_PEER_DIED) before anything of the new owner's is sent or taken.
 * Cold (guests only). */
bool pt_nic_guest_moved(struct pt_nic *nic, uint32_t p); /* true: it had moved */

/* Engine internals shared between engine files. */
int pt_cmd_dispatch(struct pt_nic *nic, const struct pt_cmd *cmd);
int pt_cmd_put(struct pt_nic *nic, const struct pt_cmd *c); /* initiator.c */
/* pt_cmd_dispatch, with the commonest command, a plain put (not triggered,
 * no completion to fill, not one that changes matching), run without the
 * table's indirect call: about 25 instructions of every put (callgrind).
 * The same result as the table's: PT_E_AGAIN, else PT_OK. */
static inline int pt_cmd_run(struct pt_nic *nic, const struct pt_cmd *cmd)
{
    if (PT_LIKELY(cmd->op == PT_CMD_PUT && !(cmd->flags & PT_CF_TRIG) && !cmd->done))
        return pt_cmd_put(nic, cmd) == PT_E_AGAIN ? PT_E_AGAIN : PT_OK;
    return pt_cmd_dispatch(nic, cmd);
}
int pt_rx_dispatch(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer, enum pt_cls cls);
int pt_ops_progress(struct pt_nic *nic);

/* objects (obj.c) */
int pt_obj_tables_init(struct pt_nic *nic);
void pt_obj_tables_fini(struct pt_nic *nic);
struct pt_me *pt_me_alloc(struct pt_nic *nic);
void pt_me_release(struct pt_nic *nic, struct pt_me *me);
struct pt_md *pt_md_alloc(struct pt_nic *nic);
void pt_md_release(struct pt_nic *nic, struct pt_md *md);
struct pt_eqo *pt_eqo_alloc(struct pt_nic *nic);
void pt_md_unalloc(struct pt_nic *nic, struct pt_md *md);
void pt_eqo_retire(struct pt_nic *nic, struct pt_eqo *e);
void pt_eqo_enqueue(struct pt_nic *nic, struct pt_eqo *e);
struct pt_ct *pt_ct_alloc(struct pt_nic *nic);
void pt_ct_release(struct pt_nic *nic, struct pt_ct *ct);
uint32_t pt_ct_handle(struct pt_nic *nic, struct pt_ct *ct);

/* counting events and triggered operations (ct.c) */
int pt_ct_init(struct pt_nic *nic, uint32_t max_cts, uint32_t trig_slots); /* PT_E_NOSPACE */
void pt_ct_fini(struct pt_nic *nic);
/* An operation on an MD bound to a CT completed (event.c): count it. */
void pt_ct_count(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind, bool failed);
/* Run fired triggered operations (the poll loop), bounded; returns work. */
int pt_trig_run(struct pt_nic *nic);
int pt_trig_arm(struct pt_nic *nic, const struct pt_cmd *c);
int pt_ct_cmd_alloc(struct pt_nic *nic, uint32_t *h_p);
int pt_ct_cmd_free(struct pt_nic *nic, uint32_t h);
int pt_ct_cmd_op(struct pt_nic *nic, const struct pt_cmd *c);
int pt_md_cmd_ct(struct pt_nic *nic, uint32_t md_h, uint32_t ct_h, uint32_t opts);
/* Reductions: element size of a ptl_datatype_t (0: none) and whether op
 * applies to it; the reduction itself is util/reduce.h's. */
#define PT_ATOMIC_SCRATCH 65536u /* bytes of a rendezvous reduction put pulled per step */
size_t pt_atomic_size(unsigned type);
/* n bytes are a whole number of elements of a reduction put's acode (type
 * << 8 | op): a matched length that is not (truncated) fails, nothing is
 * written; so does a fragment or pulled part that is not. */
static inline bool pt_atomic_whole(unsigned acode, uint64_t n)
{
    return n % pt_atomic_size(acode >> 8) == 0;
}
/* dst[off, off + n) = dst OP src, acode = type << 8 | op (target.c). */
void pt_atomic_apply(const struct pt_mem *dst, uint64_t off, const void *src, uint64_t n,
                     unsigned acode);
bool pt_atomic_valid(unsigned op, unsigned type);
/* PtlEQAlloc's ring, made and (on failure) freed by the API thread, outside
 * the engine (eqobj.c). NULL: count above 2^24 or no memory. */
struct pt_eq *pt_eq_prepare(uint64_t count, ptl_eq_handler_t handler);
void pt_eq_discard(struct pt_eq *q);
/* API thread, outside the engine: free the rings the engine set aside. */
void pt_eq_trash_drain(struct pt_nic *nic);
/* Free the rings of freed EQs that no thread can still read (token holder,
 * or teardown: `all` frees every one). */
void pt_eq_reclaim(struct pt_nic *nic, bool all);
/* Make a filled object visible to handle validation (R1 pairs with A1). */
static inline void pt_obj_publish(_Atomic uint32_t *tag)
{
    uint32_t g = LD_RELAXED(tag) >> 1;
    ST_RELEASE(tag, ((g ? g : 1u) << 1) | 1u); /* R1 pairs with A1 */
}
static inline bool pt_obj_live(_Atomic uint32_t *tag, uint32_t h)
{
    return LD_ACQUIRE(tag) == ((pt_h_gen(h) << 1) | 1u); /* A1 pairs with R1 (handle.h) */
}

/* Handle to object, NULL unless the handle names a live object of that type
 * on this NI. Lookups may run on API threads (validation): the tables are
 * allocated in full at NI init (never-used slots have tag 0, never live), so
 * the bound is immutable and the tag check (A1) alone decides liveness.
 * Inline: every put, event and EQ look resolves one or two handles. */
static inline bool pt_obj_idx(const struct pt_nic *nic, uint32_t h, uint32_t type,
                              uint32_t slots, uint32_t *i)
{
    *i = pt_h_idx(h);
    return pt_h_type(h) == type && pt_h_ni(h) == nic->ni_index && *i < slots;
}
static inline struct pt_me *pt_me_lookup(struct pt_nic *nic, uint32_t h)
{
    uint32_t i;
    return pt_obj_idx(nic, h, PT_H_ME, nic->me_slots, &i) && pt_obj_live(&nic->mes[i].tag, h)
               ? &nic->mes[i] : NULL;
}
static inline struct pt_md *pt_md_lookup(struct pt_nic *nic, uint32_t h)
{
    uint32_t i;
    return pt_obj_idx(nic, h, PT_H_MD, nic->md_slots, &i) && pt_obj_live(&nic->mds[i].tag, h)
               ? &nic->mds[i] : NULL;
}
static inline struct pt_eqo *pt_eqo_lookup(struct pt_nic *nic, uint32_t h)
{
    uint32_t i;
    return pt_obj_idx(nic, h, PT_H_EQ, nic->eq_slots, &i) && pt_obj_live(&nic->eqs[i].tag, h)
               ? &nic->eqs[i] : NULL;
}
/* An API thread takes the oldest event of q (PtlEQGet/Wait/Poll): as the
 * process's only API thread in a solo section (life.h, SO), without the
 * claim's locked instruction. */
static inline enum pt_eq_rc pt_eq_take(struct pt_eq *q, ptl_event_t *ev)
{
    if (pt_life_solo_open()) {
        enum pt_eq_rc rc = pt_eq_get_sole(q, ev);
        pt_life_solo_close(); /* SO-R */
        return rc;
    }
    return pt_eq_get(q, ev);
}
/* Object to handle (its current generation); inline as the lookups. */
static inline uint32_t pt_me_handle(struct pt_nic *nic, struct pt_me *me)
{
    return pt_h_make(PT_H_ME, nic->ni_index, LD_RELAXED(&me->tag) >> 1, me->idx);
}
static inline uint32_t pt_md_handle(struct pt_nic *nic, struct pt_md *md)
{
    return pt_h_make(PT_H_MD, nic->ni_index, LD_RELAXED(&md->tag) >> 1, md->idx);
}
static inline uint32_t pt_eqo_handle(struct pt_nic *nic, struct pt_eqo *e)
{
    return pt_h_make(PT_H_EQ, nic->ni_index, LD_RELAXED(&e->tag) >> 1, e->idx);
}
/* The MD as an event reports it (ptl_event_t.md). */
static inline void pt_md_snapshot(const struct pt_md *md, ptl_md_t *out) { *out = md->umd; }
static inline struct pt_ct *pt_ct_lookup(struct pt_nic *nic, uint32_t h)
{
    uint32_t i;
    return pt_obj_idx(nic, h, PT_H_CT, nic->ct_slots, &i) && pt_obj_live(&nic->cts[i].tag, h)
               ? &nic->cts[i] : NULL;
}

/* ME/MD bookkeeping (me.c, md.c) */
void pt_me_unlink_list(struct pt_nic *nic, struct pt_me *me);
void pt_md_destroy(struct pt_nic *nic, struct pt_md *md);
/* Accepts operations: threshold left and not inactive by use. */
static inline bool pt_md_active(const struct pt_md *md)
{
    return md->umd.threshold != 0 && !md->inactive_by_use;
}
/* One operation counted against the threshold; the last one makes an
 * MD with PTL_UNLINK due to unlink. */
static inline void pt_md_consume(struct pt_nic *nic, struct pt_md *md)
{
    if (md->umd.threshold > 0 && --md->umd.threshold == 0)
        md->unlink_due = md->unlink_op == PTL_UNLINK;
}
void pt_md_unlink_due(struct pt_nic *nic, struct pt_md *md, const ptl_event_t *cause);
/* After an operation's last event on md: unlink it if that made it due
 * (cause: the event whose contents its UNLINK event takes). The test is
 * inline, the rare unlink a call (md.c). */
static inline void pt_md_check_unlink(struct pt_nic *nic, struct pt_md *md,
                                      const ptl_event_t *cause)
{
    if (PT_UNLIKELY(md->unlink_due))
        pt_md_unlink_due(nic, md, cause);
}
int pt_md_build(struct pt_nic *nic, struct pt_md *md, const ptl_md_t *umd, ptl_unlink_t op);

/* A command queued but not yet taken names MD handle h as its source or
 * destination (nic.c): the MD is in use (unlink, update). Token holder. */
bool pt_cmdq_names_md(struct pt_nic *nic, uint32_t h);

/* events (event.c) */
/* The event kinds an MD described by umd posts (bit k: kind k), from its EQ
 * and its START/END disable options; set with umd (md.c, PtlMDUpdate). */
uint16_t pt_md_ev_kinds(const ptl_md_t *umd);
/* Zero an event the engine is about to fill, all but its md member (48 of
 * its 144 bytes): pt_ev_post writes md, md_handle and type before any event
 * leaves the engine (templates kept for later, unlink_ev and the copy-in's,
 * are posted through it too). The padding words are zeroed with the rest.
 * The whole-event memset was the largest line of the receive path (37 of
 * ~600 instructions per 8 B put, callgrind). */
static inline void pt_ev_clear(ptl_event_t *ev)
{
    memset(ev, 0, offsetof(ptl_event_t, md));
    memset((char *)ev + offsetof(ptl_event_t, hdr_data), 0,
           sizeof *ev - offsetof(ptl_event_t, hdr_data));
}
_Static_assert(offsetof(ptl_event_t, hdr_data) == offsetof(ptl_event_t, md) + sizeof(ptl_md_t),
               "pt_ev_clear: md is the only member it leaves");
void pt_ev_deliver(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind, ptl_event_t *ev);
/* Post an event of this kind on md: counted (PtlMDBindCT) and written to the
 * MD's EQ unless the kind is disabled there (md->ev_kinds). The test is
 * inline: a disabled START cost each side about 12 instructions per message
 * as a call (callgrind). */
static inline void pt_ev_post(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind,
                              ptl_event_t *ev)
{
    if (md->ct_opts || ((unsigned)md->ev_kinds >> (unsigned)kind & 1))
        pt_ev_deliver(nic, md, kind, ev);
}
/* The link a START event of this kind on md, posted next, will carry (its
 * EQ's sequence; 0 when it would not be posted): for a sender that posts
 * SEND_START after its message left, with no other post in between. */
ptl_seq_t pt_ev_start_link(struct pt_nic *nic, const struct pt_md *md, ptl_event_kind_t kind);

/* An event went into EQ e: D6 is due at the end of the poll, for e's
 * watchers (more EQs than PT_WAIT_WATCH in one poll: for everyone). [E] */
static inline void pt_ev_note(struct pt_nic *nic, struct pt_eqo *e)
{
    for (unsigned i = 0; i < nic->ev_neqs; i++)
        if (nic->ev_watch[i] == &e->watchers)
            return;
    if (nic->ev_neqs < PT_WAIT_WATCH)
        nic->ev_watch[nic->ev_neqs++] = &e->watchers;
    else
        nic->events_posted = true;
}

/* The NI has failed (its own failure, or its job's: a rank died, seen in the
 * region or by the transport before the engine's next poll records it).
 * Any thread; relaxed reads of monotonic words. */
static inline bool pt_nic_down(struct pt_nic *nic)
{
    return LD_RELAXED(&nic->failed) || nic->xo->job_failed(nic->x);
}

/* The job failed but transfers with dead peers have not ended yet (their
 * failed END events are still to come): a waiter reports PTL_FAIL only
 * after them, or once settle_until has passed. Any thread. */
static inline bool pt_nic_settling(struct pt_nic *nic)
{
    uint64_t u = LD_ACQUIRE(&nic->settle_until); /* pairs with its ST_RELEASEs (nic.c) */
    return PT_UNLIKELY(u != 0) && pt_now_ns() < u;
}

/* D6 for what this poll posted, if anything (docs/waiting.md, "Whom D6
 * wakes"): true if it ran a full fence (D6's, or a ring's RMW; a solo holder
 * skips D6's: SO). [E] */
static inline bool pt_ev_wake(struct pt_nic *nic)
{
    nic->ev_posted_last = nic->events_posted || nic->ev_neqs;
    if (!nic->ev_posted_last)
        return false;
    bool fenced = pt_wait_events_posted(&nic->w, nic->events_posted, nic->ev_watch, nic->ev_neqs);
    nic->events_posted = false;
    nic->ev_neqs = 0;
    return fenced;
}
/* Room in md's EQ for the START and END events of one request (target
 * side), or a reason not to wait for it; false: defer the request. */
bool pt_ev_room(struct pt_nic *nic, struct pt_md *md);
/* A request accepted on md will post its END event (kind) later: hold its
 * place in the EQ's room (pt_eqo.owed). True if it was counted (the END is
 * enabled and the EQ exists): the caller keeps that and hands it to
 * pt_ev_post_owed with the END. */
bool pt_ev_owe(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind);
/* pt_ev_post for an END that pt_ev_owe counted (owed true) or not. */
void pt_ev_post_owed(struct pt_nic *nic, struct pt_md *md, ptl_event_kind_t kind,
                     ptl_event_t *ev, bool owed);

/* copy mode (copy.c) */
enum pt_proto_kind pt_nic_choose(struct pt_nic *nic, uint64_t len);
/* As pt_nic_choose for len bytes of md from off, which peer would pull: a
 * rendezvous over more pieces than the transport's pull can read
 * (rndv_iov_max, or per peer: xport.h peer_caps) streams through the queues
 * instead. */
enum pt_proto_kind pt_nic_choose_md(struct pt_nic *nic, uint32_t peer, uint64_t len,
                                    const struct pt_md *md, uint64_t off);
/* The cooperative rendezvous with peer: the NI has it (coop_min) and the
 * transport can push towards that peer (xport.h peer_caps). Cold path. */
bool pt_nic_push_ok(struct pt_nic *nic, uint32_t peer);
int pt_copy_send_start(struct pt_nic *nic, struct pt_md *md, uint64_t src_off, uint64_t left,
                       uint32_t peer, enum pt_cls cls, ptl_event_kind_t end_kind,
                       const ptl_event_t *ev);
int pt_copy_send_step(struct pt_nic *nic, struct pt_op *op);
/* An incoming copy-mode stream from peer in class cls begins: rlen bytes in
 * all, got of them inline in its header; the caller sets where it lands
 * (md, off, mlen, ...), or leaves md NULL to swallow the fragments of a
 * dropped message. A stream in the response class is a reply's. */
static inline struct pt_copyin *pt_copyin_begin(struct pt_nic *nic, enum pt_cls cls, uint32_t peer,
                                                uint64_t rlen, uint64_t got)
{
    struct pt_copyin *st = &nic->cin[cls][peer];
    nic->cin_live += !st->active; /* one per (class, sender); a forged head
                                   * over an active one counts it once */
    memset(st, 0, sizeof *st);
    st->active = 1;
    st->is_reply = cls == PT_CLS_RSP;
    st->rlen = rlen;
    st->got = got;
    return st;
}
int pt_rx_data(struct pt_nic *nic, struct pt_wire_hdr *h, uint32_t peer, enum pt_cls cls);
static inline uint32_t pt_slot_room(const struct pt_nic *nic) { return nic->slot_size - PT_WIRE_HDR_SIZE; }

/* Publish a message filled in the slot reserved for it (xport commit).
 * pt_xmit_inline for a put's request (initiator.c), where the call cost
 * about 10 instructions of every message (callgrind); gcc keeps pt_xmit's
 * other 20 callers calling one copy (inlined everywhere: 5 KB of code). */
PT_HOT_INLINE void pt_xmit_inline(struct pt_nic *nic, uint32_t peer, enum pt_cls cls,
                                  const struct pt_wire_hdr *h)
{
    PT_TRACE(nic, PT_TR_SEND, PT_TV_MSG(peer, cls, h->op));
    nic->xo->commit(nic->x, peer, cls, pt_wire_len(h));
    if (peer == nic->xi.rank)
        nic->rx_self = true; /* pt_nic_poll_send receives it in the same poll */
}
static inline void pt_xmit(struct pt_nic *nic, uint32_t peer, enum pt_cls cls,
                           const struct pt_wire_hdr *h)
{
    pt_xmit_inline(nic, peer, cls, h);
}

/* The free lists of the NI's fixed tables (ops, initiator records,
 * triggered operations; zeroed pages, pages.h) are threaded a chunk at a
 * time, when the list runs dry: a new NI touches only the entries it uses.
 * Threading all of them at PtlNIInit touched ~1.7 MB per NI, a third of a
 * 256-rank job's start-up in page faults (bench/RESULTS.md, thirty-seventh
 * session). A list is empty only when the whole table is in use. */
#define PT_LAZY_CHUNK 64u
void pt_ops_grow(struct pt_nic *nic);

/* in-flight ops */
struct pt_op *pt_op_get(struct pt_nic *nic);
/* Engine holder: an op of the general budget is free (ops_promised). */
static inline bool pt_ops_avail(struct pt_nic *nic)
{
    return LD_RELAXED(&nic->nops) - nic->ops_reply < nic->ops_n - nic->ops_n / 2;
}

/* Engine holder: a get may promise its reply an op (ops_promised). */
static inline bool pt_ops_promise_ok(struct pt_nic *nic)
{
    return nic->ops_promised + nic->ops_reply < nic->ops_n / 2;
}
/* Close the claim word of a cooperative transfer we are the target of, if it
 * is still open (shm_region.h, "Claim words"): true when we closed it, and
 * the part is ours to pull; false when there is none or the initiator holds it. */
bool pt_coop_close(struct pt_nic *nic, struct pt_op *op);
void pt_op_put(struct pt_nic *nic, struct pt_op *op);

/* requests waiting for answers (initiator.c) */
int pt_ireq_init(struct pt_nic *nic, uint32_t n);  /* n: power of two; PT_E_NOSPACE */
void pt_ireq_fini(struct pt_nic *nic);
/* The requests to a dead peer end now: REPLY_END, SEND_END and ACK with
 * PTL_NI_PEER_DIED, oldest first (nic.c, fail_dead_peers, on the death path). */
void pt_ireq_fail_peer(struct pt_nic *nic, uint32_t peer);
/* Replies awaiting their RFIN (target.c): the table, and the failure of a
 * dead initiator's (GET_END with PTL_NI_PEER_DIED, the MD no longer busy). */
int pt_rfw_init(struct pt_nic *nic, uint32_t n);
void pt_rfw_fini(struct pt_nic *nic);
void pt_rfw_fail_peer(struct pt_nic *nic, uint32_t peer);
/* Guest slot `peer` changed hands (pt_nic_guest_moved): our rendezvous pulls
 * and pushes with its last owner fail (PTL_NI_PEER_DIED), no step or answer
 * of theirs reaching the new owner (target.c). */
void pt_ops_fail_moved(struct pt_nic *nic, uint32_t peer);

#endif
