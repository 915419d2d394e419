/*
 * mix.c - a PMIx job's transport, chosen per peer (issue 17 item 2,
 * docs/ofi.md "One job across hosts"): the ranks on this host talk through
 * a job region of the node's own (the shared-memory transport, shm.h:
 * pt_shm_open_node), every other rank through libfabric (ofi.c). The ofi
 * transport still owns the job's identity, liveness and wire-up (PMIx,
 * pmix.c); the region carries the data between the node's ranks.
 *
 * Peer indexes. The engine sees the job's ranks (0 .. n-1, PMIx ranks).
 * The node region knows the node's ranks by their order in the job (slot
 * k is the k-th local rank): loc[] maps a rank to its slot (or NOT_HERE),
 * glob[] back. Each peer uses exactly one transport for the whole job, so
 * the per-pair order of xport.h ("Order") is each transport's own.
 *
 * Sleeping (docs/waiting.md, "Two transports"). The engine's bell is this
 * rank's bell in the node region (node peers ring it as in any region);
 * engine sleepers poll() ofi's descriptor (wait_fd: CQ, PMIx events, the
 * probe timer) and, beside it, the region's ring socket (ring_fd): every
 * ring of a node peer also sends the sleeper's socket a byte after the seq
 * bump, the role this process's own eventfd plays for its rings.
 *
 * Threading: as xport.h (every op by the engine-token holder unless it says
 * any thread). The tables are written once at open.
 */
#include "xport.h"

#include "log.h"
#include "pt_atomic.h"
#include "ofi.h"
#include "pmix_job.h"
#include "shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOT_HERE UINT32_MAX

struct pt_xport {
    const struct pt_xport_ops *so, *oo; /* the node region's, libfabric's */
    struct pt_xport *sx, *ox;
    uint32_t me, n;       /* this rank, the job's ranks                   */
    uint32_t nloc;        /* ranks on this node (we are one)             */
    uint32_t *loc;        /* [rank]: its slot in the node region, or NOT_HERE */
    uint32_t *glob;       /* [slot]: its rank                            */
    uint32_t turn;        /* peek: which transport is asked first (alternates) */
    bool ofi;             /* peers beyond the node: oo/ox are libfabric's; else
                           * they are PMIx's (pmix.c: identity, deaths) and the
                           * region carries everything (node-only)          */
    uint32_t ofi_idle;    /* peek: ofi peeks in a row that found nothing  */
    uint32_t ofi_wait;    /* peek: peeks left before ofi is asked again    */
    /* The credit wait (xport.h stall_*): each transport arms its own stalls
     * (the region's marks, ofi's epoch); the engine sees one counter, nstall,
     * raised when a reserve of either returned NULL and moved that
     * transport's counter (sctr/octr, last seen sseen/oseen; token holder
     * only). sides: MIX_ARM_* of the transports that armed since
     * stall_clear (token holder writes, release; any thread reads,
     * acquire: mix_stall_armed asks those). */
    uint32_t nstall, sseen, oseen;
    const uint32_t *sctr, *octr;
    _Atomic uint32_t sides;
};

#define MIX_ARM_SHM 1u
#define MIX_ARM_OFI 2u

/* ofi's peek is a provider progress call (fi_cq_read: the tcp provider's
 * epoll_wait and locks, about a microsecond), the region's a few loads. A
 * node-region ping-pong whose every second peek asked ofi took 3.8 us (8 B,
 * offload) against 0.43 us under ptlrun (bench/results-ofi.md, "The node
 * region"). So after MIX_OFI_IDLE empty ofi peeks in a row ofi is asked
 * every MIX_OFI_EVERY peeks only, until it answers or we send to a peer
 * over it (its sends move in its progress too: tx_needs_peek). A remote
 * message then waits at most MIX_OFI_EVERY - 1 region peeks; before any
 * sleep the engine's recheck asks ofi anyway (rx_pending, its trywait). */
#define MIX_OFI_IDLE 16u
#define MIX_OFI_EVERY 32u

static inline bool here(const struct pt_xport *x, uint32_t peer)
{
    return peer < x->n && x->loc[peer] != NOT_HERE;
}

/* ---- sending and receiving: by the peer's transport ------------------------- */

/* A reserve of the transport `side` returned NULL: if it armed a stall (its
 * counter moved), the engine's counter moves too. Cold path. */
static void mix_stalled(struct pt_xport *x, uint32_t side)
{
    const uint32_t *c = side == MIX_ARM_SHM ? x->sctr : x->octr;
    uint32_t *seen = side == MIX_ARM_SHM ? &x->sseen : &x->oseen;
    if (!c || *c == *seen)
        return;
    *seen = *c;
    ST_RELEASE(&x->sides, LD_RELAXED(&x->sides) | side); /* before the engine's record */
    x->nstall++;
}

static void *mix_reserve(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    void *p;
    if (here(x, peer)) {
        p = x->so->reserve(x->sx, x->loc[peer], cls);
        if (PT_UNLIKELY(!p))
            mix_stalled(x, MIX_ARM_SHM);
    } else {
        p = x->oo->reserve(x->ox, peer, cls);
        if (PT_UNLIKELY(!p))
            mix_stalled(x, MIX_ARM_OFI);
    }
    return p;
}

static void mix_commit(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len)
{
    if (here(x, peer)) {
        x->so->commit(x->sx, x->loc[peer], cls, len);
    } else {
        x->oo->commit(x->ox, peer, cls, len);
        x->ofi_idle = 0; /* its progress moves the send: ask at the next peek */
        x->ofi_wait = 0;
    }
}

static void *peek_shm(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    uint32_t s;
    void *m = x->so->peek(x->sx, &s, cls_p);
    if (m && PT_UNLIKELY(s >= x->nloc)) {
        /* a node region has no guest slots (pt_shm_open_node): never */
        x->so->release(x->sx, s, *cls_p);
        return NULL;
    }
    if (m)
        *peer_p = x->glob[s];
    return m;
}

/* Both transports in turn while ofi has traffic (its peek also moves its
 * sends: tx_needs_peek), so it runs at least every second call however busy
 * the region is; ofi idle, every MIX_OFI_EVERY calls (above). */
static void *mix_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    void *m;
    if (!x->ofi)
        return peek_shm(x, peer_p, cls_p);
    if (x->ofi_wait) {
        x->ofi_wait--;
        return peek_shm(x, peer_p, cls_p);
    }
    if ((x->turn ^= 1) && (m = peek_shm(x, peer_p, cls_p)))
        return m;
    if ((m = x->oo->peek(x->ox, peer_p, cls_p))) {
        x->ofi_idle = 0;
        return m;
    }
    if (++x->ofi_idle >= MIX_OFI_IDLE)
        x->ofi_wait = MIX_OFI_EVERY - 1;
    return x->turn ? NULL : peek_shm(x, peer_p, cls_p);
}

static void mix_release(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (here(x, peer))
        x->so->release(x->sx, x->loc[peer], cls);
    else
        x->oo->release(x->ox, peer, cls);
}

static void mix_defer(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (here(x, peer))
        x->so->defer(x->sx, x->loc[peer], cls);
    else
        x->oo->defer(x->ox, peer, cls);
}

static void mix_unhold_all(struct pt_xport *x)
{
    x->so->unhold_all(x->sx);
    if (x->ofi)
        x->oo->unhold_all(x->ox);
}

/* Any thread. The region first; ofi's is its trywait (a false answer arms
 * its descriptor), so it must be the last look before a sleep. */
static bool mix_rx_pending(struct pt_xport *x)
{
    return x->so->rx_pending(x->sx) || (x->ofi && x->oo->rx_pending(x->ox));
}

/* The park rule (xport.h): the region leaves out the parked senders of this
 * node; one on another host keeps everything pending (ofi has no such op),
 * and ofi's trywait stays the last look. */
static bool mix_rx_pending_beyond(struct pt_xport *x, const uint32_t *parked, uint32_t n)
{
    uint32_t loc[PT_XPORT_PARK_MAX];
    if (!x->so->rx_pending_beyond || n > PT_XPORT_PARK_MAX)
        return mix_rx_pending(x);
    for (uint32_t i = 0; i < n; i++) {
        if (!here(x, parked[i]))
            return mix_rx_pending(x);
        loc[i] = x->loc[parked[i]];
    }
    return x->so->rx_pending_beyond(x->sx, loc, n) || (x->ofi && x->oo->rx_pending(x->ox));
}

static void mix_rx_describe(struct pt_xport *x, char *buf, size_t len)
{
    if (len)
        buf[0] = 0;
    if (x->so->rx_describe)
        x->so->rx_describe(x->sx, buf, len);
}

static uint32_t mix_rx_pending_from(struct pt_xport *x, uint32_t *peers, uint32_t max)
{
    if (!x->so->rx_pending_from)
        return 0;
    uint32_t k = x->so->rx_pending_from(x->sx, peers, max), j = 0;
    for (uint32_t i = 0; i < k; i++)
        if (peers[i] < x->nloc)
            peers[j++] = x->glob[peers[i]];
    return j;
}

static ssize_t mix_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote, uint64_t desc)
{
    return here(x, peer) ? x->so->pull(x->sx, x->loc[peer], local, nlocal, remote, nremote, desc)
                         : x->oo->pull(x->ox, peer, local, nlocal, remote, nremote, desc);
}

/* The cooperative rendezvous (xport.h push, coop_word): towards node peers
 * only; peer_caps tells the engine which (it offers and accepts a push from
 * those alone). */
static ssize_t mix_push(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote)
{
    if (!here(x, peer) || !x->so->push)
        return -ENOSYS;
    return x->so->push(x->sx, x->loc[peer], local, nlocal, remote, nremote);
}

static _Atomic uint32_t *mix_coop_word(struct pt_xport *x, uint32_t owner, uint32_t k)
{
    if (!here(x, owner) || !x->so->coop_word)
        return NULL;
    return x->so->coop_word(x->sx, x->loc[owner], k);
}

/* A node peer that closed its NI in order (the region says); not known
 * towards another host, where no flag slot is shared. */
static bool mix_peer_left(struct pt_xport *x, uint32_t peer)
{
    return here(x, peer) && x->so->peer_left && x->so->peer_left(x->sx, x->loc[peer]);
}

/* Flag slots: a node peer's (shm's), none towards another host. */
static struct pt_flagslot *mix_flag_lines(struct pt_xport *x, uint32_t owner)
{
    if (!here(x, owner) || !x->so->flag_lines)
        return NULL;
    return x->so->flag_lines(x->sx, x->loc[owner]);
}

/* Node peers: CMA reads any iovec and writes (push), with a peer that takes
 * part in CMA (the node region's record); others: ofi's one registration
 * per descriptor, no push. */
static uint32_t mix_peer_caps(struct pt_xport *x, uint32_t peer)
{
    if (here(x, peer)) {
        uint32_t c = x->so->push && x->so->coop_word ? PT_XPEER_PUSH : 0;
        if (x->so->peer_caps && (x->so->peer_caps(x->sx, x->loc[peer]) & PT_XPEER_NOCMA))
            c = PT_XPEER_NOCMA;
        return c;
    }
    return PT_XPEER_IOV1;
}

/* ---- identity, liveness, sleeping ------------------------------------------- */

static bool mix_peer_alive(struct pt_xport *x, uint32_t peer)
{
    if (!x->oo->peer_alive(x->ox, peer))
        return false; /* PMIx's report, ofi's probe or a failed send */
    return !here(x, peer) || x->so->peer_alive(x->sx, x->loc[peer]);
}

static struct pt_waitword *mix_doorbell(struct pt_xport *x) { return x->so->doorbell(x->sx); }
static bool mix_af_offer(struct pt_xport *x, bool on)
{
    return x->so->af_offer ? x->so->af_offer(x->sx, on) : false;
}

static pid_t mix_peer_ospid(struct pt_xport *x, uint32_t peer)
{
    return here(x, peer) ? x->so->peer_ospid(x->sx, x->loc[peer]) : 0;
}

static int mix_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    return x->oo->rank_of(x->ox, nid, pid);
}

static void mix_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    x->oo->id_of(x->ox, rank, nid_p, pid_p);
}

static uint32_t mix_job_failed(struct pt_xport *x)
{
    uint32_t f = x->oo->job_failed(x->ox);
    return f ? f : x->so->job_failed(x->sx);
}

static uint32_t mix_departures(struct pt_xport *x)
{
    return x->so->departures(x->sx) + x->oo->departures(x->ox);
}

static int mix_wait_fd(struct pt_xport *x) { return x->ofi ? x->oo->wait_fd(x->ox) : -1; }
static int mix_cq_fd(struct pt_xport *x) { return x->ofi ? x->oo->cq_fd(x->ox) : -1; }
static int mix_ring_fd(struct pt_xport *x) { return x->so->ring_fd(x->sx); }

/* The credit wait: the region's marks for node peers, ofi's epoch for the
 * others (docs/waiting.md, "Over ofi"); once at open, by the engine. */
static const uint32_t *mix_stall_counter(struct pt_xport *x)
{
    x->sctr = x->so->stall_counter(x->sx);
    x->sseen = *x->sctr;
    if (x->ofi && x->oo->stall_counter) {
        x->octr = x->oo->stall_counter(x->ox);
        x->oseen = *x->octr;
    }
    return &x->nstall;
}
static void mix_stall_clear(struct pt_xport *x)
{
    x->so->stall_clear(x->sx);
    if (x->octr)
        x->oo->stall_clear(x->ox);
    ST_RELAXED(&x->sides, 0);
}
/* Any thread, after its full fence: something was armed since stall_clear,
 * and every transport that armed still holds its stalls (each one's own
 * C-RECHECK). */
static bool mix_stall_armed(struct pt_xport *x)
{
    uint32_t s = LD_ACQUIRE(&x->sides); /* pairs with mix_stalled's release */
    return s && (!(s & MIX_ARM_SHM) || x->so->stall_armed(x->sx)) &&
           (!(s & MIX_ARM_OFI) || x->oo->stall_armed(x->ox));
}
/* ofi returns credits by message (it has no rx_done) */
static void mix_rx_done(struct pt_xport *x, bool fenced) { x->so->rx_done(x->sx, fenced); }
/* Batched doorbells: the node region's peers only (ofi sends need none). */
static void mix_tx_hold(struct pt_xport *x) { x->so->tx_hold(x->sx); }
static void mix_tx_flush(struct pt_xport *x, bool fenced) { x->so->tx_flush(x->sx, fenced); }

static void mix_free(struct pt_xport *x)
{
    free(x->loc);
    free(x->glob);
    free(x);
}

/* The region first (detached in order: node peers see a departure, not a
 * death), then libfabric (its goodbyes, PMIx). */
static void mix_close(struct pt_xport *x)
{
    pt_shm_job_fail(x->sx, x->oo->job_failed(x->ox)); /* (0: none) */
    x->so->close(x->sx);
    x->oo->close(x->ox);
    mix_free(x);
}

static const struct pt_xport_ops g_mix_ops = {
    .name = "mix",
    .tx_needs_peek = true, /* ofi's sends move in its peek */
    .reserve = mix_reserve,
    .commit = mix_commit,
    .peek = mix_peek,
    .release = mix_release,
    .defer = mix_defer,
    .unhold_all = mix_unhold_all,
    .rx_pending = mix_rx_pending,
    .rx_pending_beyond = mix_rx_pending_beyond,
    .rx_pending_from = mix_rx_pending_from,
    .rx_describe = mix_rx_describe,
    .pull = mix_pull,
    .push = mix_push,
    .coop_word = mix_coop_word,
    .flag_lines = mix_flag_lines,
    .peer_left = mix_peer_left,
    .peer_caps = mix_peer_caps,
    .peer_alive = mix_peer_alive,
    .doorbell = mix_doorbell,
    .af_offer = mix_af_offer,
    .peer_ospid = mix_peer_ospid,
    .rank_of = mix_rank_of,
    .id_of = mix_id_of,
    .job_failed = mix_job_failed,
    .departures = mix_departures,
    .close = mix_close,
    .wait_fd = mix_wait_fd,
    .cq_fd = mix_cq_fd,
    .ring_fd = mix_ring_fd,
    .stall_counter = mix_stall_counter,
    .stall_clear = mix_stall_clear,
    .stall_armed = mix_stall_armed,
    .rx_done = mix_rx_done,
    .tx_hold = mix_tx_hold,
    .tx_flush = mix_tx_flush,
};

/* ---- opening ------------------------------------------------------------------ */

/* "n0:n1:..." of count numbers: f(k) for k < count. NULL on no memory. */
static char *map_str(uint32_t count, uint32_t (*f)(const struct pt_xport *, uint32_t),
                     const struct pt_xport *x)
{
    size_t len = (size_t)count * 11 + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (uint32_t k = 0; k < count; k++)
        p += snprintf(p, len - (size_t)(p - s), k ? ":%u" : "%u", f(x, k));
    *p = 0;
    return s;
}

static uint32_t node_pid(const struct pt_xport *x, uint32_t k)
{
    uint32_t nid, pid;
    x->oo->id_of(x->ox, x->glob[k], &nid, &pid);
    return pid;
}

static uint32_t node_nid(const struct pt_xport *x, uint32_t k)
{
    uint32_t nid, pid;
    x->oo->id_of(x->ox, x->glob[k], &nid, &pid);
    return nid;
}

/* The node region: the node's ranks (loc/glob set), this rank's slot. */
static int open_node(struct pt_xport *x, uint32_t my_slot, uint32_t my_nid, uint32_t slot_size,
                     uint32_t queue_slots, uint32_t pid_hint, struct pt_xport_info *info_p)
{
    char job[48], prefix[96];
    snprintf(job, sizeof job, "px%s.%08x", pt_pmix_job_key(), my_nid);
    snprintf(prefix, sizeof prefix, "libportals.%u.%s.", (unsigned)getuid(), job);
    char *nidmap = map_str(x->nloc, node_nid, x), *pidmap = map_str(x->nloc, node_pid, x);
    if (!nidmap || !pidmap) {
        free(nidmap);
        free(pidmap);
        return -ENOMEM;
    }
    /* The ring socket only where engines sleep on ofi's descriptor. */
    struct pt_shm_node nd = {job, x->nloc, my_slot, info_p->jid, nidmap, pidmap,
                             x->ofi ? prefix : NULL};
    struct pt_xport_info si;
    int rc = pt_shm_open_node(&nd, slot_size, queue_slots, pid_hint, &x->so, &x->sx, &si);
    free(nidmap);
    free(pidmap);
    if (rc)
        return rc;
    if (si.rank != my_slot || si.nranks != x->nloc) {
        /* another job's region under our name (a hash collision), or a
         * process of ours holds the slot: never share it */
        pt_log(PT_LOG_ERR, "PMIx job: the node region %s gave slot %u of %u, not %u of %u",
               job, si.rank, si.nranks, my_slot, x->nloc);
        x->so->close(x->sx);
        return -EPROTO;
    }
    /* The launcher's part for the node's ranks (shm_watch.c): a node peer
     * that ends still attached fails this node's ranks' job at once, in
     * either mode (ofi's probe runs in offload mode only, in seconds). */
    rc = pt_shm_watch_start(x->sx);
    if (rc) {
        x->so->close(x->sx);
        return rc;
    }
    info_p->ranks_here = x->nloc;
    info_p->local_rank = my_slot;
    info_p->cma_ok = si.cma_ok;
    info_p->cma_why = si.cma_why;
    info_p->trace_area = si.trace_area;
    info_p->trace_bytes = si.trace_bytes;
    pt_log(PT_LOG_INFO, "PMIx job: rank %u: %u peers on this host through the node region "
                        "%s, %u beyond it through ofi", x->me, x->nloc - 1, job, x->n - x->nloc);
    return 0;
}

/* Every rank on this node (PMIX_LOCAL_SIZE is the job's size): no libfabric
 * at all. The region carries everything, the engine sleeps on its futex as
 * in a ptlrun job, PMIx gives identity and reports deaths (its handler rings
 * the bell), and a watch thread does the launcher's part (shm_watch.c). */
static struct pt_xport_ops g_mix_node_ops;
static pthread_once_t g_node_ops_once = PTHREAD_ONCE_INIT;
static void node_ops_init(void)
{
    g_mix_node_ops = g_mix_ops;
    g_mix_node_ops.name = "node";
    g_mix_node_ops.tx_needs_peek = false;
    g_mix_node_ops.wait_fd = NULL;
    g_mix_node_ops.cq_fd = NULL;
    g_mix_node_ops.ring_fd = NULL;
}

static int open_node_only(struct pt_xport *x, const struct pt_pmix_sub *sub, uint32_t slot_size,
                          uint32_t queue_slots, uint32_t pid_hint,
                          const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                          struct pt_xport_info *info_p)
{
    x->oo = sub->ops;
    x->ox = sub->x;
    int rc = pt_pmix_node_only(sub->x, NULL);
    for (uint32_t r = 0; r < x->n; r++) {
        x->loc[r] = r;
        x->glob[r] = r;
    }
    x->nloc = x->n;
    uint32_t nid, pid;
    x->oo->id_of(x->ox, x->me, &nid, &pid);
    if (!rc)
        rc = open_node(x, x->me, nid, slot_size, queue_slots, pid_hint, info_p);
    if (rc)
        return rc;
    rc = pt_pmix_node_only(sub->x, x->so->doorbell(x->sx));
    if (rc) {
        x->so->close(x->sx);
        return rc;
    }
    info_p->slot_size = slot_size;
    info_p->rndv_iov_max = 0; /* CMA reads any iovec */
    pthread_once(&g_node_ops_once, node_ops_init);
    *ops_p = &g_mix_node_ops;
    *x_p = x;
    return 0;
}

int pt_mix_open_pmix(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint, bool shm_only,
                     const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p)
{
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    struct pt_pmix_sub sub;
    int rc = pt_pmix_open(info_p, &sub);
    if (rc) {
        free(x);
        return rc;
    }
    x->me = info_p->rank;
    x->n = info_p->nranks;
    x->loc = malloc((size_t)x->n * sizeof *x->loc);
    x->glob = malloc((size_t)x->n * sizeof *x->glob);
    if (!x->loc || !x->glob) {
        sub.ops->close(sub.x);
        mix_free(x);
        return -ENOMEM;
    }
    if (sub.all_local && pt_pmix_local_size() >= x->n) {
        rc = open_node_only(x, &sub, slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
        if (rc) {
            sub.ops->close(sub.x);
            mix_free(x);
        }
        return rc;
    }
    const struct pt_xport_ops *oo;
    struct pt_xport *ox;
    rc = pt_ofi_open_pmix_sub(&sub, slot_size, queue_slots, true, &oo, &ox, info_p);
    if (rc) {
        mix_free(x);
        return rc; /* (the sub is closed) */
    }
    x->ofi = true;
    x->oo = oo;
    x->ox = ox;
    /* The node's ranks: those whose nid (the host, as every rank published
     * it in the wire-up fence) is ours. */
    uint32_t my_nid, my_pid, my_slot = 0;
    oo->id_of(ox, x->me, &my_nid, &my_pid);
    for (uint32_t r = 0; r < x->n; r++) {
        uint32_t nid, pid;
        oo->id_of(ox, r, &nid, &pid);
        x->loc[r] = NOT_HERE;
        if (nid != my_nid)
            continue;
        if (r == x->me)
            my_slot = x->nloc;
        x->loc[r] = x->nloc;
        x->glob[x->nloc++] = r;
    }
    /* Hosts that share a nid (no PMIX_NODEID, one hostname on two
     * machines): a region sized for ranks that cannot all reach it would
     * wait for them. Ranks of one nid must have booted one machine.
     * (PMIX_LOCAL_SIZE cannot tell: Open MPI 4.1's mpirun answers its own
     * host's count on every host, an audit found with 3+2 ranks.) */
    bool split = false;
    for (uint32_t k = 0; k < x->nloc; k++)
        if (!pt_pmix_same_machine(x->me, x->glob[k]))
            split = true;
    if (split) {
        uint32_t nloc = x->nloc;
        mix_free(x);
        if (shm_only) {
            pt_log(PT_LOG_ERR, "PTL_TRANSPORT=shm: cannot tell which ranks of this PMIx job "
                               "share this host: use PTL_TRANSPORT=auto (the default) or ofi");
            oo->close(ox);
            return -EHOSTUNREACH;
        }
        pt_log(PT_LOG_WARN, "PMIx: %u ranks share this rank's nid %u but not all its "
                            "machine: libfabric for every peer", nloc, my_nid);
        rc = pt_ofi_serve(ox, NULL);
        if (rc) {
            oo->close(ox);
            return rc;
        }
        *ops_p = oo;
        *x_p = ox;
        return 0;
    }
    if (shm_only && x->nloc != x->n) {
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=shm: %u of this PMIx job's %u ranks are on other "
                           "hosts, which the shared-memory transport cannot reach: use "
                           "PTL_TRANSPORT=auto (the default) or ofi", x->n - x->nloc, x->n);
        mix_free(x);
        oo->close(ox);
        return -EHOSTUNREACH;
    }
    rc = open_node(x, my_slot, my_nid, slot_size, queue_slots, pid_hint, info_p);
    if (rc) {
        mix_free(x);
        oo->close(ox);
        return rc;
    }
    /* ofi serves the peers beyond the node only: no connection, probe or bye
     * of its own to a node peer (the region tells their deaths and exits) */
    uint8_t *others = calloc(x->n, 1);
    if (!others) {
        mix_close(x);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < x->n; r++)
        others[r] = here(x, r);
    rc = pt_ofi_serve(ox, others);
    free(others);
    if (rc) {
        mix_close(x);
        return rc;
    }
    info_p->rndv_iov_max = 1; /* ofi's (reg_desc); per peer: mix_peer_caps */
    *ops_p = &g_mix_ops;
    *x_p = x;
    return 0;
}
