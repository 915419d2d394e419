/*
 * proto.h - protocols: how a payload gets from the initiator's MD to the
 * target's MD, chosen by size through an ops table.
 *
 *   PT_PROTO_EAGER  payload inline in the queue slot (<= eager_max bytes)
 *   PT_PROTO_RNDV   the slot carries the initiator's iovecs; the receiving
 *                   engine pulls the data (transport pull: CMA, or memcpy in
 *                   a job of one) in segments of PTL_RNDV_SEG bytes
 *
 * MD memory is described by struct pt_mem (contiguous, or an iovec list for
 * PTL_MD_IOVEC); every copy is bounded by the MD: offsets and lengths are
 * clamped here, whatever a header claims.
 *
 * Caller: the engine-token holder.
 */
#ifndef PT_PROTO_H
#define PT_PROTO_H

#include "wire.h"
#include "xport.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define PT_MAX_IOV 64   /* largest iovec list an MD may have (max_md_iovecs) */

struct pt_mem {
    const struct iovec *iov; /* niov entries; for a contiguous MD, &one         */
    uint32_t niov;
    uint64_t len;            /* total bytes                                     */
    struct iovec one;        /* storage for the contiguous case                 */
};

void pt_mem_contig(struct pt_mem *m, void *start, uint64_t len);
void pt_mem_iovec(struct pt_mem *m, const struct iovec *iov, uint32_t niov);

/* Copy n bytes between MD memory at offset off and a flat buffer (clamped to
 * the MD). Return bytes copied. The walks (proto.c) do every case; a
 * contiguous MD's range (every eager message of a plain client) is copied
 * inline, without the walk's call and set-up (~30 instructions a copy,
 * callgrind). Empty copies take the walk, which never calls memcpy (a
 * zero-length MD may have no buffer). */
size_t pt_mem_write_walk(const struct pt_mem *m, uint64_t off, const void *src, size_t n);
size_t pt_mem_read_walk(const struct pt_mem *m, uint64_t off, void *dst, size_t n);
static inline bool pt_mem_one_piece(const struct pt_mem *m, uint64_t off, size_t n)
{
    return m->niov == 1 && n && off <= m->len && n <= m->len - off;
}
/* 8 to 16 bytes (an 8 B message's payload) as two overlapping words, both
 * loaded before either is stored; memcpy's call and dispatch cost every such
 * copy about 14 instructions (callgrind). */
static inline void pt_mem_copy(void *dst, const void *src, size_t n)
{
    if (n - 8 <= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, (const char *)src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy((char *)dst + n - 8, &b, 8);
        return;
    }
    memcpy(dst, src, n);
}
static inline size_t pt_mem_write(const struct pt_mem *m, uint64_t off, const void *src, size_t n)
{
    if (!pt_mem_one_piece(m, off, n))
        return pt_mem_write_walk(m, off, src, n);
    pt_mem_copy((char *)m->iov[0].iov_base + off, src, n);
    return n;
}
static inline size_t pt_mem_read(const struct pt_mem *m, uint64_t off, void *dst, size_t n)
{
    if (!pt_mem_one_piece(m, off, n))
        return pt_mem_read_walk(m, off, dst, n);
    pt_mem_copy(dst, (const char *)m->iov[0].iov_base + off, n);
    return n;
}
/* Describe [off, off+n) of MD memory as at most max iovecs; returns count. */
int pt_mem_slice(const struct pt_mem *m, uint64_t off, uint64_t n, struct iovec *out, int max);

enum pt_proto_kind { PT_PROTO_EAGER = 0, PT_PROTO_RNDV = 1, PT_PROTO_COPY = 2, PT_PROTO_NR };

struct pt_proto_ops {
    const char *name;
    /* Fill the payload part of a request/reply slot with [off, off+len) of src
     * (copy: the first slot-full; the rest follows as PT_W_DATA fragments). */
    void (*pack)(struct pt_wire_hdr *h, const struct pt_mem *src, uint64_t off, uint64_t len);
};

extern const struct pt_proto_ops *const pt_proto_table[PT_PROTO_NR];
/* The eager protocol's pack (its table entry's body): inline for a sender
 * that knows it chose eager, without the table's indirect call. */
static inline void pt_eager_pack(struct pt_wire_hdr *h, const struct pt_mem *src, uint64_t off,
                                 uint64_t len)
{
    h->inline_len = (uint32_t)pt_mem_read(src, off, pt_wire_payload(h), (size_t)len);
    h->niov = 0;
}

/* Which protocol carries a payload of len bytes.
 *   eager  len <= eager_max: inline in one slot
 *   rndv   the receiver pulls with CMA (single copy): chosen when CMA works and
 *          mode is CMA, or mode is auto and len >= cma_min
 *   copy   the sender streams DATA fragments through the queues (two copies,
 *          pipelined): the fallback when CMA is refused, and auto's choice
 *          below cma_min (measured faster on small VMs, bench/RESULTS.md) */
enum pt_rndv_choice { PT_CHOOSE_AUTO = 0, PT_CHOOSE_CMA = 1, PT_CHOOSE_COPY = 2 };
static inline enum pt_proto_kind pt_proto_choose(uint64_t len, uint64_t eager_max, int mode,
                                                 bool cma_ok, uint64_t cma_min)
{
    if (len <= eager_max)
        return PT_PROTO_EAGER;
    if (!cma_ok || mode == PT_CHOOSE_COPY)
        return PT_PROTO_COPY;
    if (mode == PT_CHOOSE_CMA || len >= cma_min)
        return PT_PROTO_RNDV;
    return PT_PROTO_COPY;
}

/* Rendezvous transfer state: the remote iovecs copied out of the message
 * (so its slot can be released), and the part [done, total) of the transfer
 * still to move between them and the local MD (from dst_off). A pull reads
 * the remote side into the MD; a push (the cooperative rendezvous, wire.h)
 * writes the MD into the remote side. Byte k of the transfer is byte k of
 * the remote iovecs and byte dst_off + k of the MD. */
struct pt_rndv {
    struct pt_wire_iov riov[PT_MAX_IOV + 1];
    uint32_t nriov;
    uint32_t peer;
    uint64_t total;   /* end of the part to move                  */
    uint64_t done;    /* moved up to here                         */
    uint64_t dst_off; /* where in the local MD the transfer starts */
    uint64_t desc;    /* the descriptor's id (pt_xport_desc_id): pull's desc */
};

/* Start a rendezvous receive of mlength bytes described by header h. */
void pt_rndv_init(struct pt_rndv *r, const struct pt_wire_hdr *h, uint32_t peer,
                  uint64_t mlength, uint64_t dst_off);
/* Move up to seg bytes: pull (push false) or push them. Returns bytes moved
 * (>0), 0 when complete, -errno on failure (the transfer is then finished
 * with a failure status). */
long pt_rndv_step(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                  const struct pt_mem *local, uint64_t seg, bool push);
/* The same, pulling into a flat buffer of n bytes (a reduction put's
 * scratch: engine/target.c) instead of the MD. */
long pt_rndv_pull_flat(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                       void *buf, uint64_t n);

/* Deliver an eager payload into MD memory: mlength bytes at dst_off. */
static inline void pt_eager_deliver(struct pt_wire_hdr *h, const struct pt_mem *dst,
                                    uint64_t dst_off, uint64_t mlength)
{
    if (mlength > h->inline_len)
        mlength = h->inline_len; /* never read past what the slot holds */
    pt_mem_write(dst, dst_off, pt_wire_payload(h), (size_t)mlength);
}

#endif
