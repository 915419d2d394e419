/*
 * trace.h - the flight recorder: a ring of small records per NI, written at
 * the engine's decision points, readable by another process (ptlrun's dump)
 * while the rank runs, after it was stopped, and after it died.
 *
 * Where it lives. In a job the trace area of rank r is part of the job
 * region (transport/shm_region.h: off_trace + r * PT_TRACE_AREA_BYTES), so
 * ptlrun, which maps the region until the job ends, reads it whatever the
 * rank did; it disappears with the region. A loopback NI (a job of one) gets
 * a private area: nobody outside can read it, but the in-process tests can.
 *
 * Layout of one area (PT_TRACE_AREA_BYTES, all offsets fixed):
 *   0                 struct pt_trace (header, one page)
 *   PT_TRACE_REC_OFF  struct pt_trace_rec[PT_TRACE_NREC]   the engine ring
 *   PT_TRACE_WREC_OFF struct pt_trace_rec[PT_TRACE_NWREC]  the wait ring
 *
 * Two rings, because two kinds of writer exist:
 *   engine ring  written only by the thread that holds the engine token (the
 *                token's CAS/release orders successive holders), with plain
 *                relaxed stores: command taken, message dequeued, matched,
 *                dropped, event posted, message sent, credits exhausted,
 *                transfer steps, token taken and given. A few stores each.
 *   wait ring    written by any thread of the rank outside the token (sleep,
 *                wake, arming, polling leases, parking): slots are claimed
 *                with an RMW on `whead`; every such site is next to a futex
 *                call or an RMW of the waiting protocol anyway.
 * The reader merges both by timestamp.
 *
 * Record. 32 bytes: seq (record number + 1; 0 = invalid), ts (pt_tsc()
 * ticks), val (a site-specific value, see the site table) and meta (site in
 * bits 0-15, repeat count - 1 in bits 16-31, writer's tid in bits 32-63; the
 * engine ring stores the tid only in TOKEN records). A record is a seqlock
 * of its own: the writer stores seq = 0, FENCE_RELEASE, the fields, then
 * ST_RELEASE(seq, n + 1); the reader loads seq (acquire), copies the fields,
 * FENCE_ACQUIRE, loads seq again and keeps the record only when both loads
 * equal and the value fits the ring position. Nothing the reader finds in
 * shared memory is trusted: ring sizes are constants, heads are never used
 * as indices, every slot is validated on its own.
 *
 * Compression (engine ring only, so that a stuck engine that retries the
 * same thing every poll does not wash the history away): a record equal
 * (site and value) to the previous one bumps that record's repeat count
 * instead (saturating at 65535) and moves its time to the latest one; a TOKEN_TAKE by the thread whose TOKEN_GIVE is the last record
 * removes that GIVE (the hold simply continues).
 *
 * Cost and switches: see README/bench RESULTS ("Tracing"). Compiled out with
 * -DPTL_TRACE=OFF (PTL_NO_TRACE: every PT_TRACE* is empty); at run time
 * PTL_TRACE=0/1 (util/config.c) leaves the NI's pointer NULL or sets it.
 */
#ifndef PT_TRACE_H
#define PT_TRACE_H

#include "clock.h"
#include "pt_atomic.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_TRACE_MAGIC    0x314352544c54507fULL   /* "\x7fPTLTRC1" */
#define PT_TRACE_VERSION  1u
#define PT_TRACE_NREC     2048u                   /* engine ring (power of two) */
#define PT_TRACE_NWREC    512u                    /* wait ring (power of two)   */
#define PT_TRACE_HDR_BYTES 4096u
#define PT_TRACE_REC_OFF  PT_TRACE_HDR_BYTES
#define PT_TRACE_WREC_OFF (PT_TRACE_REC_OFF + PT_TRACE_NREC * 32u)
#define PT_TRACE_AREA_BYTES (PT_TRACE_WREC_OFF + PT_TRACE_NWREC * 32u)

/* Sites. Keep pt_trace_sites[] (trace.c) in the same order. E: engine ring
 * (token holder), W: wait ring (any thread). */
enum pt_trace_site {
    PT_TR_NONE = 0,
    PT_TR_TOKEN_TAKE,   /* E val: tid of the new holder                          */
    PT_TR_TOKEN_GIVE,   /* E val: tid of the holder                              */
    PT_TR_CMD,          /* E val: PT_TV_CMD(op, ring): a command taken and done  */
    PT_TR_RX,           /* E val: PT_TV_MSG(peer, cls, wire op): dequeued        */
    PT_TR_RX_DEFER,     /* E val: PT_TV_MSG: cannot be handled yet, stays queued */
    PT_TR_MATCH,        /* E val: PT_TV_PTL(pt index, mlength): accepted         */
    PT_TR_DROP,         /* E val: PT_TV_PTL(pt index, rlength): no match / denied */
    PT_TR_EVENT,        /* E val: event kind | ni_fail_type << 8                  */
    PT_TR_SEND,         /* E val: PT_TV_MSG(peer, cls, wire op): committed        */
    PT_TR_NOCREDIT,     /* E val: PT_TV_MSG(peer, cls, 0): reserve found no slot  */
    PT_TR_XFER_START,   /* E val: PT_TV_XFER(peer, bytes): a transfer in flight   */
    PT_TR_XFER_STEP,    /* E val: PT_TV_XFER(peer, bytes done so far)            */
    PT_TR_XFER_END,     /* E val: PT_TV_XFER(peer, bytes done)                   */
    PT_TR_XFER_FAIL,    /* E val: PT_TV_XFER(peer, bytes done): failed           */
    PT_TR_JOB_FAIL,     /* E val: the job's PTL_NI_* failure code                */
    PT_TR_NIC_SLEEP,    /* W val: bell seq: into futex_wait [S3] (an arm [S2] that
                         * finds work records nothing: a NIC thread with work it
                         * cannot do re-arms every PTL_NIC_SPIN_US)             */
    PT_TR_NIC_WAKE,     /* W val: 1 rung, 0 backstop                             */
    PT_TR_LEASE,        /* W val: bell.polled after: a waiter polls (no ring)     */
    PT_TR_LEASE_END,    /* W val: bell.polled after                               */
    PT_TR_LEASE_LEFT,   /* W val: 1: a waiter left its polled count as the lease [L1] */
    PT_TR_LEASE_TAKEN,  /* W val: 1: a waiter adopted the lease; 2: the NIC thread
                         * ended it [L2]                                          */
    PT_TR_PARK,         /* W val: event-word seq: a waiter sleeps [W3]            */
    PT_TR_UNPARK,       /* W val: 1 rung, 0 timeout or backstop                   */
    PT_TR_KICK,         /* W val: 1: rang the bell for a sleeper left with work [D3]
                         * (a kick that drains the work itself records nothing);
                         * 2: the descriptor hand-over (D5); 3: a command posted
                         * for a sleeping NIC thread (PTL_CMD_INLINE 0); 4: a
                         * request parked for a match, for the sleepers to
                         * bound their sleep by its wait (PK) */
    PT_TR_MISSED,       /* W val: backstop found work nobody rang for (a fault)   */
    PT_TR_LATE,         /* W val: ... its producer still runnable: done, no fault */
    PT_TR_NSITES
};

/* Value packing (decoded by the dump). */
#define PT_TV_MSG(peer, cls, op) \
    (((uint64_t)(uint32_t)(peer) << 16) | ((uint64_t)((cls) & 0xff) << 8) | ((uint64_t)(op) & 0xff))
#define PT_TV_CMD(op, ring)   (((uint64_t)(uint32_t)(ring) << 16) | ((uint64_t)(op) & 0xffff))
#define PT_TV_PTL(pti, len)   (((uint64_t)((pti) & 0xffff) << 48) | ((uint64_t)(len) & 0xffffffffffffULL))
#define PT_TV_XFER(peer, len) (((uint64_t)((peer) & 0xffff) << 48) | ((uint64_t)(len) & 0xffffffffffffULL))

/* How the dump prints a site's value. */
enum pt_trace_vfmt { PT_VF_NUM, PT_VF_TID, PT_VF_CMD, PT_VF_MSG, PT_VF_PTL, PT_VF_EVENT,
                     PT_VF_XFER, PT_VF_NONE };
struct pt_trace_site_info {
    const char *name;
    enum pt_trace_vfmt vf;
    bool wait_ring;
};
extern const struct pt_trace_site_info pt_trace_sites[PT_TR_NSITES];

struct pt_trace_rec {
    _Atomic uint64_t seq;
    _Atomic uint64_t ts;
    _Atomic uint64_t val;
    _Atomic uint64_t meta;
};
_Static_assert(sizeof(struct pt_trace_rec) == 32, "a trace record is 32 bytes");

/*
 * The area's header. Lines 0-1: identity, written by the rank when it
 * attaches (pt_trace_attach), `magic` last with ST_RELEASE; the reader
 * LD_ACQUIREs magic first and checks version and sizes. Line 2: the engine
 * ring's writer state (token holder only: relaxed loads and stores). Line 3:
 * the wait ring's claim counter (RMW by any thread of the rank).
 */
struct pt_trace {
    _Atomic uint64_t magic;
    uint32_t version, hdr_bytes;
    uint32_t nrec, nwrec;
    int32_t ospid;            /* the writing process                              */
    uint32_t rank;
    double ns_per_tick;       /* pt_tsc() ticks -> ns; 0: the reader derives it     */
    uint64_t tsc0, ns0;       /* a (tick, CLOCK_MONOTONIC ns) pair at attach         */
    /* The engine's state for a dump by process_vm_readv (engine/nic_sig.h):
     * address of the rank's struct pt_nic and a signature of the layouts the
     * reader must share to interpret it. 0 when none. ST_RELAXED by the rank. */
    _Atomic uint64_t owner_addr;
    _Atomic uint64_t owner_sig;
    _Atomic int32_t nic_tid;  /* the NIC thread's tid (0: none), ST_RELAXED          */
    _Atomic uint32_t enabled; /* 1 while records are written                         */

    PT_ALIGNED _Atomic uint64_t head;   /* engine ring: records written              */

    PT_ALIGNED _Atomic uint64_t whead;  /* wait ring: slots claimed (RMW)            */
    uint8_t pad_[PT_TRACE_HDR_BYTES - 4 * PT_CACHELINE];
};
_Static_assert(sizeof(struct pt_trace) == PT_TRACE_HDR_BYTES, "trace header is one page");

static inline struct pt_trace_rec *pt_trace_ering(struct pt_trace *t)
{
    return (struct pt_trace_rec *)((char *)t + PT_TRACE_REC_OFF);
}
static inline struct pt_trace_rec *pt_trace_wring(struct pt_trace *t)
{
    return (struct pt_trace_rec *)((char *)t + PT_TRACE_WREC_OFF);
}

/* Prepare an area (area == NULL: a private one is allocated) for this
 * process's rank. Records of an earlier NI of the same process in the same
 * area are kept. Returns the header, or NULL (no memory). */
struct pt_trace *pt_trace_attach(void *area, uint64_t bytes, uint32_t rank);
/* An area from pt_trace_attach(NULL, ...) is freed; a region's is left. */
void pt_trace_detach(struct pt_trace *t, bool private_area);
/* Is tracing on for NIs opened now (PTL_TRACE and the build)? */
bool pt_trace_wanted(void);
/* The calling thread's tid (cached). */
int32_t pt_trace_tid(void);

/* ---- writers ----------------------------------------------------------- */

static inline void pt_trace_store(struct pt_trace_rec *r, uint64_t n, uint64_t ts, uint64_t val,
                                  uint64_t meta)
{
    ST_RELAXED(&r->seq, 0);
    FENCE_RELEASE(); /* T1: seq = 0 before the fields; pairs with the reader's T2 */
    ST_RELAXED(&r->ts, ts);
    ST_RELAXED(&r->val, val);
    ST_RELAXED(&r->meta, meta);
    ST_RELEASE(&r->seq, n + 1); /* T3 pairs with the reader's A-seq */
}

/* Engine ring: token holder only. The previous record is read back from the
 * ring itself (the compression above): no other writer state. */
static inline void pt_trace_e(struct pt_trace *t, unsigned site, uint64_t val, uint64_t meta_hi)
{
    uint64_t n = LD_RELAXED(&t->head);
    struct pt_trace_rec *ring = pt_trace_ering(t);
    if (PT_LIKELY(n)) {
        struct pt_trace_rec *r = &ring[(n - 1) & (PT_TRACE_NREC - 1)];
        uint64_t m = LD_RELAXED(&r->meta);
        if ((m & 0xffff) == site && (m >> 32) == meta_hi && LD_RELAXED(&r->val) == val) {
            /* one more of the same: count it (saturating), time of the last */
            if (((m >> 16) & 0xffff) != 0xffff)
                ST_RELAXED(&r->meta, m + (1u << 16));
            ST_RELAXED(&r->ts, pt_tsc());
            return;
        }
    }
    pt_trace_store(&ring[n & (PT_TRACE_NREC - 1)], n, pt_tsc(), val, site | (meta_hi << 32));
    ST_RELAXED(&t->head, n + 1);
}

/* A TOKEN_TAKE: elides the previous GIVE when it was ours and the last thing. */
void pt_trace_take(struct pt_trace *t);
/* Wait ring: any thread. */
void pt_trace_w(struct pt_trace *t, unsigned site, uint64_t val);

#if defined(PTL_NO_TRACE)
#define PT_TRACE_T(t, site, val)   ((void)0)
#define PT_TRACE_TAKE_T(t)         ((void)0)
#define PT_TRACE_GIVE_T(t)         ((void)0)
#define PT_TRACE_WAIT_T(t, site, val) ((void)0)
#else
#define PT_TRACE_T(t, site, val) \
    do { struct pt_trace *t_ = (t); if (t_) pt_trace_e(t_, (site), (val), 0); } while (0)
#define PT_TRACE_TAKE_T(t) \
    do { struct pt_trace *t_ = (t); if (t_) pt_trace_take(t_); } while (0)
#define PT_TRACE_GIVE_T(t) \
    do { struct pt_trace *t_ = (t); if (t_) { uint64_t id_ = (uint64_t)pt_trace_tid(); \
         pt_trace_e(t_, PT_TR_TOKEN_GIVE, id_, id_); } } while (0)
#define PT_TRACE_WAIT_T(t, site, val) \
    do { struct pt_trace *t_ = (t); if (t_) pt_trace_w(t_, (site), (val)); } while (0)
#endif

/* ---- reader (another process, or a saved copy) --------------------------- */

struct pt_trace_out {
    uint64_t seq;       /* record number + 1 within its ring                   */
    uint64_t ts;        /* ticks                                               */
    uint64_t val;
    uint16_t site;      /* < PT_TR_NSITES (others are dropped)                 */
    uint32_t reps;      /* times it happened (1 + repeats; 65536: at least)    */
    uint8_t ring;       /* 0 engine, 1 wait                                    */
    int32_t tid;
};

/* Copy the valid records of both rings of an area (bytes long, e.g. a copy
 * or the live mapping) into out[max], oldest first (merged by timestamp).
 * Returns the number copied; 0 if the area has no valid header. */
size_t pt_trace_read(const void *area, uint64_t bytes, struct pt_trace_out *out, size_t max);

#endif
