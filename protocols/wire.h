/*
 * wire.h - the one wire header every message between NIC engines carries.
 *
 * A message occupies one transport slot: this 128-byte header, then `inline_len`
 * bytes of payload (eager), or a list of `niov` remote iovecs describing where
 * the payload sits in the sender's memory (rendezvous; the receiver pulls it).
 * Fields are written by the sending engine before transport commit (release)
 * and read by the receiving engine after transport peek (acquire); a slot is
 * never touched by the sender again until the receiver released it.
 *
 * Messages and who answers them (requests always get at most one response):
 *   PUT     -> ACK (eager, if asked and allowed) | FIN (rendezvous; carries the
 *              ack flag so the initiator posts SEND_END then ACK) | NACK (an
 *              eager put that asked for an ACK and gets none: dropped, or the
 *              MD has PTL_MD_ACK_DISABLE)
 *   GET     -> REPLY (eager data, or rendezvous descriptor) | NACK (dropped)
 *   GETPUT  -> REPLY | NACK
 *   REPLY (rendezvous) -> the initiator pulls, then sends RFIN (a response,
 *              sent only on the response class, which never blocks: see below);
 *              the RFIN echoes the reply's event fields, as FIN does the put's
 * A rendezvous pull that fails (memory of either side that cannot be read or
 * written) still gets its FIN/RFIN, flagged PT_WF_FAIL: the other side's END
 * events (SEND_END and ACK, or GET_END) then carry PTL_NI_FAIL as well.
 * Cooperative rendezvous (a put whose initiator offered PT_WF_COOP): the
 * target pulls the first part itself and answers at once with PUSH, which
 * asks the initiator to write the rest straight into the target's MD
 * (transport push: CMA write); both copies run at the same time, on two
 * cores. The initiator answers PUSH with PDONE (how many bytes it wrote, from
 * the start of the part asked); the target pulls whatever was not written,
 * and sends FIN only when everything has arrived. PUSH and PDONE travel on
 * the response class (they never wait for a request):
 *   PUT (COOP) -> PUSH (target -> initiator: mlength bytes from offset
 *              tgt_offset of the transfer, into the niov iovecs that follow;
 *              tgt_link names the target's transfer) -> PDONE (initiator ->
 *              target: echoes tgt_link; mlength = bytes written) -> FIN
 * NACK is internal: the spec's "dropped, no event" stays true for the user; it
 * only releases the initiator's pending state for the MD (and its record).
 * Every request that waits for an answer (a get, a getput, a rendezvous
 * put, a put asking for an ACK) gets exactly one; it carries the initiator's
 * record of it (`req`, engine/nic.h struct pt_ireq), which the answer echoes.
 */
#ifndef PT_WIRE_H
#define PT_WIRE_H

#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum pt_wire_op {
    PT_W_PUT = 1,
    PT_W_GET = 2,
    PT_W_GETPUT = 3,
    PT_W_ACK = 4,
    PT_W_REPLY = 5,
    PT_W_FIN = 6,
    PT_W_NACK = 7,
    PT_W_RFIN = 8,
    PT_W_DATA = 9,   /* a fragment of a copy-mode transfer (see proto.h) */
    PT_W_PUSH = 10,  /* cooperative rendezvous: write this part for me (above) */
    PT_W_PDONE = 11, /* cooperative rendezvous: this much was written          */
    PT_W_OP_LAST
};

enum pt_wire_flag {
    PT_WF_ACK_REQ = 1u << 0,  /* PUT: initiator wants an ACK                       */
    PT_WF_RNDV = 1u << 1,     /* payload not inline: `niov` remote iovecs follow   */
    PT_WF_ACK = 1u << 2,      /* FIN: an ACK is due after SEND_END                 */
    PT_WF_COPY = 1u << 3,     /* rendezvous in copy mode: DATA fragments follow    */
    PT_WF_DROPPED = 1u << 4,  /* FIN: the target dropped the put                   */
    PT_WF_FAIL = 1u << 5,     /* FIN/RFIN: the pull failed; a FIN's mlength is the
                               * bytes delivered (the ACK's), an RFIN's the echo;
                               * ACK: the reduction put failed at the target       */
    PT_WF_ATOMIC = 1u << 6,   /* PUT: a reduction: the target combines the data
                               * into its MD (eager: the payload; copy mode: each
                               * DATA fragment; rendezvous: pulled into a scratch
                               * buffer, then combined; never cooperative);
                               * tgt_link = type << 8 | op                        */
    PT_WF_COOP = 1u << 7,     /* PUT (rendezvous): the initiator offers to write
                               * part of the data itself (PUSH / PDONE above);
                               * PUSH: the target takes the part back if it is
                               * not claimed in time (the initiator may leave it) */
    /* GET: the initiator has promised its reply an op (engine/initiator.c,
     * ops_promised): the target may answer by rendezvous. Without it the
     * target answers eagerly or in copy mode, whatever its own choice: an
     * initiator whose protocol tunables differ from the target's (PTL_EAGER_MAX,
     * PTL_RNDV, PTL_RNDV_CMA_MIN, PTL_CMA) got rendezvous replies it had
     * promised nothing to, and they waited for room in its replies' budget
     * behind replies the budget was promised to (an adversarial client: a
     * get's engine spun for ever). Bit 7 as PT_WF_COOP: a PUT's only. */
    PT_WF_REPLY_OP = PT_WF_COOP,
};

struct pt_wire_hdr {
    uint32_t xseq;         /* owned by the transport (loopback: the slot's
                            * sequence word, written last by commit and polled
                            * by the receiver; shm: a ring buffer's length, for
                            * the receiver's prefetch, and its sender's head of
                            * the reverse ring, P-HEAD); the engine never reads
                            * or writes it (pt_wire_clear/pt_wire_copy skip it) */
    uint8_t op;            /* enum pt_wire_op                                     */
    uint8_t flags;         /* enum pt_wire_flag                                   */
    uint16_t niov;         /* rendezvous: remote iovecs after the header          */
    uint32_t inline_len;   /* payload bytes after the header (eager)              */
    uint32_t src_nid, src_pid;   /* Portals id of the sender                      */
    uint32_t uid, jid;
    uint32_t pt_index, ac_index;
    uint32_t init_md;      /* initiator MD handle (ack/reply/fin find it by this) */
    uint32_t tgt_md;       /* target MD handle (rendezvous reply: RFIN finds it)  */
    uint32_t link;         /* initiator's START event link, echoed in responses   */
    uint64_t match_bits;
    uint64_t remote_offset;  /* as the initiator asked                            */
    /* ---- second cache line: lengths and rarer fields ---- */
    uint64_t local_offset;   /* initiator's local offset, echoed back             */
    uint64_t rlength;        /* requested length                                  */
    uint64_t mlength;        /* responses: length the target manipulated          */
    uint64_t hdr_data;
    uint64_t tgt_offset;     /* responses: offset used in the target MD           */
    uint32_t src_ospid;      /* rendezvous: OS pid that owns the remote iovecs     */
    uint32_t req;            /* requests: the initiator's record of a request that
                              * waits for its answer (0: none); responses echo it */
    uint64_t t_stamp;        /* instrumentation: sender TSC at send (0 when off)  */
    uint32_t tgt_link;       /* reduction PUT: type << 8 | op (PT_WF_ATOMIC);
                              * rendezvous REPLY: the target's GET_START link;
                              * the RFIN echoes it (with pt_index, match_bits,
                              * rlength, mlength, tgt_offset), so the target
                              * posts GET_END for the get it finishes and keeps
                              * no per-get state while several are outstanding */
    uint32_t xord;           /* owned by the transport: the message's place among
                              * everything its sender sent to this receiver, both
                              * classes (written at commit; see xport.h, "Order") */
};
_Static_assert(sizeof(struct pt_wire_hdr) == 128, "pt_wire_hdr must stay 128 bytes (2 cache lines)");

struct pt_wire_iov {
    uint64_t addr;
    uint64_t len;
};

#define PT_WIRE_HDR_SIZE 128u
#define PT_WIRE_BODY_OFF 4u /* everything after the transport's xseq word */

_Static_assert(__builtin_offsetof(struct pt_wire_hdr, xseq) == 0, "xseq must lead the header");
_Static_assert(__builtin_offsetof(struct pt_wire_hdr, xord) == 124, "xord ends the header");
_Static_assert(__builtin_offsetof(struct pt_wire_hdr, match_bits) == 48,
               "matching fields must stay in the first cache line");

/* Clear / copy a header without touching the transport's sequence word
 * (xord is cleared or copied: the transport rewrites it at commit). */
static inline void pt_wire_clear(struct pt_wire_hdr *h)
{
#if defined(__SSE2__)
    /* Eight 16-byte stores, the first at PT_WIRE_BODY_OFF and overlapping
     * the second: gcc's memset of the 124 unaligned bytes was a loop of
     * 8-byte stores, about 30 instructions of every message sent. */
    _Static_assert(PT_WIRE_HDR_SIZE == 128 && PT_WIRE_BODY_OFF == 4, "pt_wire_clear's stores");
    const __m128i z = _mm_setzero_si128();
    char *p = (char *)h;
    _mm_storeu_si128((__m128i *)(p + PT_WIRE_BODY_OFF), z);
#pragma GCC unroll 8
    for (unsigned o = 16; o < PT_WIRE_HDR_SIZE; o += 16)
        _mm_storeu_si128((__m128i *)(p + o), z);
#else
    __builtin_memset((char *)h + PT_WIRE_BODY_OFF, 0, PT_WIRE_HDR_SIZE - PT_WIRE_BODY_OFF);
#endif
}
static inline void pt_wire_copy(struct pt_wire_hdr *d, const struct pt_wire_hdr *s)
{
    __builtin_memcpy((char *)d + PT_WIRE_BODY_OFF, (const char *)s + PT_WIRE_BODY_OFF,
                     PT_WIRE_HDR_SIZE - PT_WIRE_BODY_OFF);
}

static inline void *pt_wire_payload(struct pt_wire_hdr *h) { return (char *)h + PT_WIRE_HDR_SIZE; }

/* Bytes of its slot a filled message uses: the header, then the inline
 * payload or the rendezvous descriptor. */
static inline uint32_t pt_wire_len(const struct pt_wire_hdr *h)
{
    return PT_WIRE_HDR_SIZE + ((h->flags & PT_WF_RNDV) ? (uint32_t)h->niov * sizeof(struct pt_wire_iov)
                                                       : h->inline_len);
}

#endif
