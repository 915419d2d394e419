/* proto.c - eager and rendezvous data movement; see proto.h. */
#include "proto.h"

#include <errno.h>
#include <string.h>

void pt_mem_contig(struct pt_mem *m, void *start, uint64_t len)
{
    m->one.iov_base = start;
    m->one.iov_len = len;
    m->iov = &m->one;
    m->niov = 1;
    m->len = len;
}

void pt_mem_iovec(struct pt_mem *m, const struct iovec *iov, uint32_t niov)
{
    m->iov = iov;
    m->niov = niov;
    m->len = 0;
    for (uint32_t i = 0; i < niov; i++)
        m->len += iov[i].iov_len;
}

/* Walk MD memory from `off`, calling fn on each contiguous piece. */
#define MEM_WALK(m, off, n, piece_stmt)                                            \
    do {                                                                           \
        uint64_t off_ = (off), left_ = (n);                                        \
        if (off_ >= (m)->len) { left_ = 0; }                                       \
        else if (left_ > (m)->len - off_) { left_ = (m)->len - off_; }             \
        for (uint32_t i_ = 0; i_ < (m)->niov && left_; i_++) {                     \
            uint64_t l_ = (m)->iov[i_].iov_len;                                    \
            if (off_ >= l_) { off_ -= l_; continue; }                              \
            uint64_t take = l_ - off_ < left_ ? l_ - off_ : left_;                 \
            char *p = (char *)(m)->iov[i_].iov_base + off_;                        \
            piece_stmt;                                                            \
            left_ -= take;                                                         \
            off_ = 0;                                                              \
        }                                                                          \
    } while (0)

/* The walks: any range of any MD (the one-piece case is inline, proto.h). */
size_t pt_mem_write_walk(const struct pt_mem *m, uint64_t off, const void *src, size_t n)
{
    size_t done = 0;
    MEM_WALK(m, off, n, { memcpy(p, (const char *)src + done, take); done += take; });
    return done;
}

size_t pt_mem_read_walk(const struct pt_mem *m, uint64_t off, void *dst, size_t n)
{
    size_t done = 0;
    MEM_WALK(m, off, n, { memcpy((char *)dst + done, p, take); done += take; });
    return done;
}

int pt_mem_slice(const struct pt_mem *m, uint64_t off, uint64_t n, struct iovec *out, int max)
{
    int k = 0;
    MEM_WALK(m, off, n, {
        if (k < max) {
            out[k].iov_base = p;
            out[k].iov_len = take;
            k++;
        }
    });
    return k;
}

static void eager_pack(struct pt_wire_hdr *h, const struct pt_mem *src, uint64_t off,
                       uint64_t len)
{
    pt_eager_pack(h, src, off, len);
}

static void rndv_pack(struct pt_wire_hdr *h, const struct pt_mem *src, uint64_t off,
                      uint64_t len)
{
    struct iovec v[PT_MAX_IOV + 1];
    int n = pt_mem_slice(src, off, len, v, PT_MAX_IOV + 1);
    struct pt_wire_iov *w = pt_wire_payload(h);
    for (int i = 0; i < n; i++) {
        w[i].addr = (uint64_t)(uintptr_t)v[i].iov_base;
        w[i].len = v[i].iov_len;
    }
    h->niov = (uint16_t)n;
    h->inline_len = 0;
    h->flags |= PT_WF_RNDV;
}

static void copy_pack(struct pt_wire_hdr *h, const struct pt_mem *src, uint64_t off, uint64_t len)
{
    /* The caller bounded len to the slot's payload room for this first piece. */
    h->inline_len = (uint32_t)pt_mem_read(src, off, pt_wire_payload(h), (size_t)len);
    h->niov = 0;
    h->flags |= PT_WF_COPY;
}

static const struct pt_proto_ops g_eager = {.name = "eager", .pack = eager_pack};
static const struct pt_proto_ops g_rndv = {.name = "rendezvous (CMA pull)", .pack = rndv_pack};
static const struct pt_proto_ops g_copy = {.name = "rendezvous (copy through queues)", .pack = copy_pack};
const struct pt_proto_ops *const pt_proto_table[PT_PROTO_NR] = {
    [PT_PROTO_EAGER] = &g_eager,
    [PT_PROTO_RNDV] = &g_rndv,
    [PT_PROTO_COPY] = &g_copy,
};

void pt_rndv_init(struct pt_rndv *r, const struct pt_wire_hdr *h, uint32_t peer,
                  uint64_t mlength, uint64_t dst_off)
{
    const struct pt_wire_iov *w = (const struct pt_wire_iov *)((const char *)h + PT_WIRE_HDR_SIZE);
    uint32_t n = h->niov <= PT_MAX_IOV + 1 ? h->niov : PT_MAX_IOV + 1;
    memcpy(r->riov, w, n * sizeof *w);
    r->nriov = n;
    r->peer = peer;
    r->total = mlength;
    r->done = 0;
    r->dst_off = dst_off;
    r->desc = pt_xport_desc_id(h);
}

/* Move the next at most seg bytes of the transfer between the remote iovecs
 * and local memory at offset loff. */
static long rndv_move(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                      const struct pt_mem *local, uint64_t loff, uint64_t seg, bool push);

long pt_rndv_step(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                  const struct pt_mem *local, uint64_t seg, bool push)
{
    return rndv_move(r, xo, x, local, r->dst_off + r->done, seg, push);
}

long pt_rndv_pull_flat(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                       void *buf, uint64_t n)
{
    struct pt_mem m;
    pt_mem_contig(&m, buf, n);
    return rndv_move(r, xo, x, &m, 0, n, false);
}

static long rndv_move(struct pt_rndv *r, const struct pt_xport_ops *xo, struct pt_xport *x,
                      const struct pt_mem *local, uint64_t loff, uint64_t seg, bool push)
{
    if (r->done >= r->total)
        return 0;
    uint64_t n = r->total - r->done;
    if (n > seg)
        n = seg;
    /* Remote side: skip r->done bytes into the remote iovecs. */
    struct iovec rv[PT_MAX_IOV + 1];
    int nr = 0;
    uint64_t skip = r->done, want = n;
    for (uint32_t i = 0; i < r->nriov && want; i++) {
        uint64_t l = r->riov[i].len;
        if (skip >= l) { skip -= l; continue; }
        uint64_t take = l - skip < want ? l - skip : want;
        rv[nr].iov_base = (void *)(uintptr_t)(r->riov[i].addr + skip);
        rv[nr].iov_len = take;
        nr++;
        want -= take;
        skip = 0;
    }
    n -= want; /* the remote side may describe less than asked: never over-read */
    if (n == 0)
        return -EFAULT;
    struct iovec lv[PT_MAX_IOV + 1];
    int nl = pt_mem_slice(local, loff, n, lv, PT_MAX_IOV + 1);
    if (nl == 0)
        return -EFAULT; /* the MD ends before the transfer does */
    ssize_t got = push ? (xo->push ? xo->push(x, r->peer, lv, nl, rv, nr) : -ENOSYS)
                       : xo->pull(x, r->peer, lv, nl, rv, nr, r->desc);
    if (got <= 0)
        return got < 0 ? (long)got : -EIO;
    r->done += (uint64_t)got;
    return (long)got;
}
