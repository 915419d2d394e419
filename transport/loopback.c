/*
 * loopback.c - the transport of a job of one: the process talks only to
 * itself, through the same slot queues (one REQ and one RSP ring to self) that
 * the shared-memory transport uses between ranks, so every message travels
 * the full engine path. Memory is private; the doorbell is process-private.
 */
#include "config.h"
#include "xport.h"
#include "spsc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct pt_xport {
    struct spsc_hdr q[PT_CLS_NR];
    void *slots[PT_CLS_NR];
    struct spsc_view v[PT_CLS_NR]; /* consumer's state (spsc.h slot-sequence mode) */
    struct spsc_prod p[PT_CLS_NR]; /* producer's state                            */
    struct pt_waitword bell;
    uint32_t nid, pid;
    bool no_cma; /* process_vm_readv refused: copy directly */
    bool held;   /* defer(): peek returns nothing until unhold_all */
    bool req_waits; /* the head request was deferred (xport.h, "Order") */
};

static inline uint32_t *slot_ord(void *slot)
{
    return (uint32_t *)((char *)slot + PT_XPORT_ORD_OFF);
}

static void *lo_reserve(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    return peer == 0 ? spsc_reserve_seq(&x->q[cls], &x->p[cls]) : NULL;
}

static void lo_commit(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len)
{
    (void)len;
    *slot_ord(spsc_prod_slot(&x->p[cls], x->p[cls].head)) = x->p[0].head + x->p[1].head;
    spsc_commit_seq(&x->q[cls], &x->p[cls], PT_XPORT_SEQ_OFF);
    /* Sender and receiver are the same engine: the token holder will see the
     * message in its own poll, so there is nobody to wake. */
}

/* Commit order across the classes (xport.h, "Order"); both heads are ours,
 * so the earlier one is delivered, unless it is a deferred request. */
static void *lo_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    if (x->held)
        return NULL;
    void *rsp = spsc_peek_seq(&x->q[PT_CLS_RSP], &x->v[PT_CLS_RSP], PT_XPORT_SEQ_OFF);
    void *req = spsc_peek_seq(&x->q[PT_CLS_REQ], &x->v[PT_CLS_REQ], PT_XPORT_SEQ_OFF);
    if (req && rsp && (x->req_waits || (int32_t)(*slot_ord(req) - *slot_ord(rsp)) > 0))
        req = NULL;
    *peer_p = 0;
    *cls_p = req ? PT_CLS_REQ : PT_CLS_RSP;
    return req ? req : rsp;
}

static void lo_defer(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    (void)peer;
    if (cls == PT_CLS_REQ)
        x->req_waits = true;
    x->held = true;
}

static void lo_unhold_all(struct pt_xport *x) { x->held = false; }

static void lo_release(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (cls == PT_CLS_REQ)
        x->req_waits = false;
    spsc_release(&x->q[cls]);
}

static bool lo_rx_pending(struct pt_xport *x)
{
    return spsc_nonempty_seq(&x->q[PT_CLS_REQ], &x->v[PT_CLS_REQ], PT_XPORT_SEQ_OFF) ||
           spsc_nonempty_seq(&x->q[PT_CLS_RSP], &x->v[PT_CLS_RSP], PT_XPORT_SEQ_OFF);
}

/* The park rule (xport.h): our one sender is ourselves; parked, only our
 * responses count. */
static bool lo_rx_pending_beyond(struct pt_xport *x, const uint32_t *parked, uint32_t n)
{
    bool self = false;
    for (uint32_t i = 0; i < n; i++)
        self |= parked[i] == 0;
    return self ? spsc_nonempty_seq(&x->q[PT_CLS_RSP], &x->v[PT_CLS_RSP], PT_XPORT_SEQ_OFF)
                : lo_rx_pending(x);
}

static ssize_t lo_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                       const struct iovec *remote, int nremote, uint64_t desc)
{
    (void)desc;
    /* Same address space, but the addresses come from a message header: read
     * them with process_vm_readv on ourselves, so a bad address is EFAULT and
     * not a crash. Only if the kernel refuses the call (seccomp) do we copy
     * directly; then the header came from our own engine, never from a peer. */
    if (!x->no_cma) {
        ssize_t n = process_vm_readv(getpid(), local, (unsigned long)nlocal, remote,
                                     (unsigned long)nremote, 0);
        if (n >= 0)
            return n;
        if (errno != ENOSYS && errno != EPERM)
            return -errno;
        x->no_cma = true;
    }
    return pt_iov_copy_local(local, nlocal, remote, nremote);
}

static bool lo_peer_alive(struct pt_xport *x, uint32_t peer) { return peer == 0; }
static struct pt_waitword *lo_doorbell(struct pt_xport *x) { return &x->bell; }
static pid_t lo_peer_ospid(struct pt_xport *x, uint32_t peer) { return getpid(); }

static int lo_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    return nid == x->nid && pid == x->pid ? 0 : -1;
}

static void lo_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    *nid_p = x->nid;
    *pid_p = x->pid;
}

static uint32_t lo_job_failed(struct pt_xport *x) { return 0; }
static uint32_t lo_departures(struct pt_xport *x) { (void)x; return 0; }

static void lo_close(struct pt_xport *x)
{
    free(x->slots[PT_CLS_REQ]);
    free(x->slots[PT_CLS_RSP]);
    free(x);
}

static const struct pt_xport_ops g_loopback_ops = {
    .name = "loopback",
    .reserve = lo_reserve,
    .commit = lo_commit,
    .peek = lo_peek,
    .unhold_all = lo_unhold_all,
    .release = lo_release,
    .defer = lo_defer,
    .rx_pending = lo_rx_pending,
    .rx_pending_beyond = lo_rx_pending_beyond,
    .pull = lo_pull,
    .peer_alive = lo_peer_alive,
    .doorbell = lo_doorbell,
    .peer_ospid = lo_peer_ospid,
    .rank_of = lo_rank_of,
    .id_of = lo_id_of,
    .job_failed = lo_job_failed,
    .departures = lo_departures,
    .close = lo_close,
};

int pt_loopback_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid,
                     const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p)
{
    struct pt_xport *x = aligned_alloc(PT_CACHELINE, sizeof *x);
    if (!x)
        return -ENOMEM;
    memset(x, 0, sizeof *x);
    uint32_t nslots[PT_CLS_NR] = {queue_slots, queue_slots};
    for (int c = 0; c < PT_CLS_NR; c++) {
        spsc_init(&x->q[c], nslots[c], slot_size);
        if (pt_wrap_n()) { /* PTL_TEST_WRAP (at least queue_slots: a zero slot is
                            * "published" at index 2^32 - 1 in its first lap) */
            ST_RELAXED(&x->q[c].head, pt_wrap32());
            ST_RELAXED(&x->q[c].tail, pt_wrap32());
        }
        x->slots[c] = aligned_alloc(PT_CACHELINE, (size_t)nslots[c] * slot_size);
        if (!x->slots[c]) {
            free(x->slots[0]);
            free(x);
            return -ENOMEM;
        }
        memset(x->slots[c], 0, (size_t)nslots[c] * slot_size); /* sequence words start at 0 */
        x->v[c] = spsc_view_make(x->slots[c], nslots[c], slot_size);
        x->p[c] = spsc_prod_make(&x->q[c], x->slots[c], nslots[c], slot_size);
    }
    pt_waitword_init(&x->bell, false);
    x->nid = 0;
    x->pid = pid == 0xffffffffu ? (uint32_t)getpid() : pid; /* PTL_PID_ANY: the OS pid */
    *ops_p = &g_loopback_ops;
    *x_p = x;
    memset(info_p, 0, sizeof *info_p);
    info_p->rank = 0;
    info_p->nranks = 1;
    info_p->ranks_here = 1;
    info_p->nprocs = 1;
    info_p->slot_size = slot_size;
    info_p->jid = x->pid;
    info_p->cma_ok = true;
    info_p->cma_why = "same process: memcpy";
    return 0;
}
