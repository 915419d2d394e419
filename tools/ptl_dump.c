/* ptl_dump.c - collect, save, load and print job dumps (ptl_dump.h). */
#include "ptl_dump.h"

#include "clock.h"
#include "eq.h"
#include "nic.h"
#include "nic_sig.h"
#include "shm.h"
#include "trace.h"
#include "wire.h"

#include <p3api/misc.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PTD_MAGIC     "PTLDUMP1"
#define PTD_MAX_CMDQ  32     /* command rings listed per rank               */
#define PTD_MAX_OPS   16     /* transfers listed per rank                   */
#define PTD_MAX_EQS   16     /* EQs listed per rank                         */
#define PTD_EQ_SCAN   4096   /* EQ table slots looked at                    */
#define PTD_MAX_Q     4096   /* non-empty queues kept per rank (in + out)   */

struct ptd_op {
    uint32_t kind, peer, failed, rsp_pending;
    uint64_t total, done;
};
struct ptd_eq {
    uint32_t idx, pad;
    uint64_t size, written, read;
};
struct ptd_q {
    uint32_t sender, receiver, cls, pad;
    uint32_t head, tail;
};

struct ptd_rank {
    uint32_t rank, attach, dead, pad0;
    int32_t ospid, wstatus;
    char proc_state;               /* R S D T t Z X, '-' gone, '?' unknown    */
    char pad1[7];
    uint32_t bell_seq, bell_sleepers, bell_polled;
    uint32_t trace_ok;             /* the area has a valid header             */
    int32_t nic_tid;
    uint32_t trace_enabled;
    uint64_t trace_head, trace_whead;
    double ns_per_tick;
    /* from the rank's memory */
    uint32_t eng_ok;
    char eng_why[84];
    uint32_t token, want, nic_state, nic_thread, polled_mine, ev_sleepers, failed, ni_dead;
    uint64_t stats[8]; /* pt_wait_stats, in the order printed */
    uint32_t ncmdq, ncmdq_listed;
    uint32_t cmdq_pend[PTD_MAX_CMDQ];
    uint32_t nops, nops_listed;
    struct ptd_op ops[PTD_MAX_OPS];
    uint32_t neq_listed, eq_live;
    struct ptd_eq eqs[PTD_MAX_EQS];
    uint64_t drops, drops_bad;
    /* variable parts that follow in a file */
    uint32_t nq, nrec;
    struct ptd_q *q;
    struct pt_trace_out *rec;
};

struct ptd_hdr {
    char magic[8];
    uint32_t sz_hdr, sz_rank, sz_q, sz_rec;
    uint32_t nranks, slot_size, qslots, jid;
    uint32_t job_failed;
    int32_t first_dead;
    uint32_t nguests;              /* the last nguests of nranks are guest slots */
    uint32_t pad;
    uint64_t tsc_now, ns_now;
    double ns_per_tick;
    char why[128];
};

struct ptd_snap {
    struct ptd_hdr h;
    struct ptd_rank *r;
};

/* ---- collecting ------------------------------------------------------------ */

static bool rd(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    if (pid <= 0 || !addr)
        return false;
    struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

static char proc_state(pid_t pid)
{
    if (pid <= 0)
        return '-';
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '-';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything */
    return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static void eng_fail(struct ptd_rank *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->eng_why, sizeof k->eng_why, fmt, ap);
    va_end(ap);
}

/* Rank k's ticks -> ns: what its writer recorded, else (writers since
 * 2026-12-04 record 0) from its attach pair (tsc0, ns0) and ours, taken now on
 * the same machine (a constant-rate counter): a baseline as long as the rank
 * has lived. A rank attached under 1 ms ago, or a pair that makes no sense,
 * gets our own calibration. */
static double trace_rate(const struct pt_trace *t, const struct ptd_hdr *h)
{
    if (t->ns_per_tick > 0 && t->ns_per_tick < 1e3)
        return t->ns_per_tick;
    if (h->tsc_now > t->tsc0 && h->ns_now >= t->ns0 + 1000000) {
        double r = (double)(h->ns_now - t->ns0) / (double)(h->tsc_now - t->tsc0);
        if (r > 0 && r < 1e3)
            return r;
    }
    return h->ns_per_tick;
}

/* The engine's state, read from the rank's memory. */
static void collect_engine(struct ptd_rank *k, const struct pt_trace *t, pid_t pid)
{
    uint64_t addr = LD_RELAXED(&((struct pt_trace *)(uintptr_t)t)->owner_addr);
    uint64_t sig = LD_RELAXED(&((struct pt_trace *)(uintptr_t)t)->owner_sig);
    if (k->proc_state == '-' || k->proc_state == 'Z' || k->proc_state == 'X') {
        eng_fail(k, "the process is gone: only the region and its trace remain");
        return;
    }
    if (!addr) {
        eng_fail(k, "no NI open (or tracing off: PTL_TRACE=0)");
        return;
    }
    if (sig != pt_nic_layout_sig()) {
        eng_fail(k, "the rank's library is another build: engine state not read");
        return;
    }
    struct pt_nic *nic = malloc(sizeof *nic);
    if (!nic)
        return;
    if (!rd(pid, addr, nic, sizeof *nic)) {
        eng_fail(k, "cannot read the rank's memory (%s)", strerror(errno));
        free(nic);
        return;
    }
    k->eng_ok = 1;
    k->token = nic->w.token;
    k->want = nic->w.want;
    k->nic_state = nic->w.nic_state;
    k->nic_thread = nic->w.nic_thread;
    k->polled_mine = nic->w.polled_mine;
    k->failed = nic->failed;
    k->ni_dead = nic->dead;
    const struct pt_wait_stats *st = &nic->w.st;
    const uint64_t stats[] = {st->nic_sleeps, st->nic_armed_work, st->waiter_sleeps,
                              st->kicks_drained, st->kicks_rung, st->missed_wakes,
                              st->bell_repairs, st->late_wakes};
    _Static_assert(sizeof stats == sizeof k->stats, "ptl_dump: the wait counters it prints");
    memcpy(k->stats, stats, sizeof stats);
    if (nic->w.ev && nic->w.nic_thread) {
        struct pt_waitword ev;
        if (rd(pid, (uint64_t)(uintptr_t)nic->w.ev, &ev, sizeof ev))
            k->ev_sleepers = ev.sleepers;
    } else {
        k->ev_sleepers = k->bell_sleepers;
    }
    k->drops = nic->sr[PTL_SR_DROP_COUNT];
    k->drops_bad = nic->drops_bad_header;
    /* commands queued, per thread's ring */
    uint32_t n = nic->ncmdq;
    k->ncmdq = n;
    if (n > PT_MAX_CMDQ)
        n = PT_MAX_CMDQ;
    for (uint32_t i = 0; i < n && k->ncmdq_listed < PTD_MAX_CMDQ; i++) {
        struct pt_cmdq q;
        struct pt_cmdq *qp = nic->cmdq[i];
        if (!qp || !rd(pid, (uint64_t)(uintptr_t)qp, &q, sizeof q))
            continue;
        k->cmdq_pend[k->ncmdq_listed++] = (uint32_t)(q.ring.head - q.ring.tail);
    }
    /* transfers in flight */
    k->nops = nic->nops;
    struct pt_op *opp = nic->ops;
    for (int guard = 0; opp && guard < 1024 && k->nops_listed < PTD_MAX_OPS; guard++) {
        struct pt_op op;
        if (!rd(pid, (uint64_t)(uintptr_t)opp, &op, sizeof op))
            break;
        struct ptd_op *o = &k->ops[k->nops_listed++];
        o->kind = (uint32_t)op.kind;
        o->peer = op.rsp_peer;
        o->failed = op.failed;
        o->rsp_pending = op.rsp_pending;
        o->total = op.kind == PT_OP_COPY_SEND ? op.src_off + op.left : op.rv.total;
        o->done = op.kind == PT_OP_COPY_SEND ? op.src_off : op.rv.done;
        opp = op.next;
    }
    /* EQs */
    uint32_t hwm = nic->eq_hwm < PTD_EQ_SCAN ? nic->eq_hwm : PTD_EQ_SCAN;
    for (uint32_t i = 0; i < hwm && nic->eqs; i++) {
        struct pt_eqo e;
        struct pt_eq q;
        if (!rd(pid, (uint64_t)(uintptr_t)&nic->eqs[i], &e, sizeof e) || !(e.tag & 1u))
            continue;
        k->eq_live++;
        if (k->neq_listed >= PTD_MAX_EQS || !rd(pid, (uint64_t)(uintptr_t)e.q, &q, sizeof q))
            continue;
        k->eqs[k->neq_listed++] = (struct ptd_eq){i, 0, q.size, q.write_count, q.read_count};
    }
    free(nic);
}

struct ptd_snap *ptd_collect(void *base, uint64_t size, const pid_t *pids, const char *why,
                             char *err, size_t errlen)
{
    struct pt_shm_hdr *h = base;
    struct pt_shm_layout l;
    if (size < sizeof *h || h->magic != PT_SHM_MAGIC || h->version != PT_SHM_VERSION ||
        h->hdr_size != sizeof *h || h->total_size != size ||
        pt_shm_layout(h->nranks, h->nguests, h->slot_size, h->qslots, h->pool_req,
                      h->pool_rsp, &l) != 0 ||
        l.total != size ||
        l.off_trace != h->off_trace || l.trace_bytes != h->trace_bytes) {
        snprintf(err, errlen, "not a job region of this libportals version");
        return NULL;
    }
    struct ptd_snap *s = calloc(1, sizeof *s);
    uint32_t n = l.nprocs; /* the ranks, then the guest slots */
    if (!s || !(s->r = calloc(n, sizeof *s->r))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(s->h.magic, PTD_MAGIC, 8);
    s->h.sz_hdr = sizeof s->h;
    s->h.sz_rank = sizeof(struct ptd_rank);
    s->h.sz_q = sizeof(struct ptd_q);
    s->h.sz_rec = sizeof(struct pt_trace_out);
    s->h.nranks = n;
    s->h.nguests = h->nguests <= n ? h->nguests : 0;
    s->h.slot_size = h->slot_size;
    s->h.qslots = h->qslots;
    s->h.jid = h->jid;
    s->h.job_failed = LD_RELAXED(&h->job_failed);
    s->h.first_dead = LD_RELAXED(&h->first_dead);
    s->h.ns_per_tick = pt_tsc_ns_per_tick();
    s->h.tsc_now = pt_tsc();
    s->h.ns_now = pt_now_ns();
    snprintf(s->h.why, sizeof s->h.why, "%s", why ? why : "");
    for (uint32_t r = 0; r < n; r++) {
        struct ptd_rank *k = &s->r[r];
        struct pt_shm_rank *rec = pt_shm_rankrec(base, &l, r);
        k->rank = r;
        k->attach = LD_ACQUIRE(&rec->state);
        k->dead = LD_RELAXED(&rec->dead);
        k->ospid = LD_RELAXED(&rec->ospid);
        k->wstatus = LD_RELAXED(&rec->wstatus);
        k->bell_seq = LD_RELAXED(&rec->bell.seq);
        k->bell_sleepers = LD_RELAXED(&rec->bell.sleepers);
        k->bell_polled = LD_RELAXED(&rec->bell.polled);
        pid_t pid = pids && r < h->nranks ? pids[r] : k->ospid;
        if (pids && pid && pid != k->ospid)
            pid = 0; /* the rank's record names another process: trust neither */
        k->proc_state = proc_state(pid);
        /* rings that hold messages, both directions: head = the sender's
         * tail (committed), tail = the receiver's head (consumed) */
        k->q = calloc(PTD_MAX_Q, sizeof *k->q);
        for (uint32_t p = 0; k->q && p < n; p++)
            for (uint32_t c = 0; c < PT_CLS_NR; c++)
                for (int dir = 0; dir < 2; dir++) {
                    uint32_t snd = dir ? r : p, rcv = dir ? p : r;
                    if (dir && p == r)
                        continue; /* the self queue is listed once */
                    uint32_t hd = LD_RELAXED(&pt_shm_ring(base, &l, snd, rcv, c)->tail);
                    uint32_t tl = LD_RELAXED(pt_shm_rxhead(base, &l, snd, rcv, c));
                    if (hd != tl && k->nq < PTD_MAX_Q)
                        k->q[k->nq++] = (struct ptd_q){snd, rcv, c, 0, hd, tl};
                }
        /* the flight recorder */
        const struct pt_trace *t = pt_shm_trace_area(base, &l, r);
        k->rec = calloc(PT_TRACE_NREC + PT_TRACE_NWREC, sizeof *k->rec);
        if (k->rec)
            k->nrec = (uint32_t)pt_trace_read(t, l.trace_bytes, k->rec,
                                              PT_TRACE_NREC + PT_TRACE_NWREC);
        struct pt_trace *tm = (struct pt_trace *)(uintptr_t)t;
        k->trace_ok = LD_ACQUIRE(&tm->magic) == PT_TRACE_MAGIC;
        if (k->trace_ok) {
            k->nic_tid = LD_RELAXED(&tm->nic_tid);
            k->trace_enabled = LD_RELAXED(&tm->enabled);
            k->trace_head = LD_RELAXED(&tm->head);
            k->trace_whead = LD_RELAXED(&tm->whead);
            k->ns_per_tick = trace_rate(tm, &s->h);
            collect_engine(k, t, pid);
        } else {
            k->ns_per_tick = s->h.ns_per_tick;
            eng_fail(k, "no flight recorder (the rank never opened an NI, or PTL_TRACE=0)");
        }
    }
    return s;
}

/* ---- files ------------------------------------------------------------------- */

int ptd_save(const struct ptd_snap *s, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    bool ok = fwrite(&s->h, sizeof s->h, 1, f) == 1;
    for (uint32_t r = 0; ok && r < s->h.nranks; r++) {
        const struct ptd_rank *k = &s->r[r];
        ok = fwrite(k, sizeof *k, 1, f) == 1 &&
             (!k->nq || fwrite(k->q, sizeof *k->q, k->nq, f) == k->nq) &&
             (!k->nrec || fwrite(k->rec, sizeof *k->rec, k->nrec, f) == k->nrec);
    }
    if (fclose(f) != 0)
        ok = false;
    return ok ? 0 : -EIO;
}

struct ptd_snap *ptd_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct ptd_snap *s = calloc(1, sizeof *s);
    const char *bad = NULL;
    if (!s || fread(&s->h, sizeof s->h, 1, f) != 1 || memcmp(s->h.magic, PTD_MAGIC, 8))
        bad = "not a libportals dump";
    else if (s->h.sz_hdr != sizeof s->h || s->h.sz_rank != sizeof(struct ptd_rank) ||
             s->h.sz_q != sizeof(struct ptd_q) || s->h.sz_rec != sizeof(struct pt_trace_out))
        bad = "a dump of another libportals build (structure sizes differ)";
    else if (s->h.nranks == 0 || s->h.nranks > PT_SHM_MAX_PROCS)
        bad = "bad number of ranks";
    else if (s->h.nguests >= s->h.nranks)
        bad = "bad number of guest slots";
    else if (!(s->r = calloc(s->h.nranks, sizeof *s->r)))
        bad = "out of memory";
    for (uint32_t r = 0; !bad && r < s->h.nranks; r++) {
        struct ptd_rank *k = &s->r[r];
        if (fread(k, sizeof *k, 1, f) != 1) {
            bad = "truncated";
            k->nq = k->nrec = 0;
            break;
        }
        k->q = NULL;
        k->rec = NULL;
        if (k->nq > PTD_MAX_Q || k->nrec > PT_TRACE_NREC + PT_TRACE_NWREC ||
            k->ncmdq_listed > PTD_MAX_CMDQ || k->nops_listed > PTD_MAX_OPS ||
            k->neq_listed > PTD_MAX_EQS) {
            bad = "corrupt rank record";
            k->nq = k->nrec = 0;
            break;
        }
        k->q = calloc(k->nq + 1, sizeof *k->q);
        k->rec = calloc(k->nrec + 1, sizeof *k->rec);
        if (!k->q || !k->rec ||
            (k->nq && fread(k->q, sizeof *k->q, k->nq, f) != k->nq) ||
            (k->nrec && fread(k->rec, sizeof *k->rec, k->nrec, f) != k->nrec)) {
            bad = "truncated";
            break;
        }
        for (uint32_t i = 0; i < k->nrec; i++)
            if (k->rec[i].site >= PT_TR_NSITES)
                k->rec[i].site = PT_TR_NONE;
        k->eng_why[sizeof k->eng_why - 1] = '\0';
    }
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path, bad);
        ptd_free(s);
        return NULL;
    }
    s->h.why[sizeof s->h.why - 1] = '\0';
    return s;
}

void ptd_free(struct ptd_snap *s)
{
    if (!s)
        return;
    for (uint32_t r = 0; s->r && r < s->h.nranks; r++) {
        free(s->r[r].q);
        free(s->r[r].rec);
    }
    free(s->r);
    free(s);
}

/* ---- printing ------------------------------------------------------------------ */

static const char *wire_op(unsigned op)
{
    static const char *const n[] = {"?", "put", "get", "getput", "ack", "reply",
                                    "fin", "nack", "rfin", "data"};
    return op < sizeof n / sizeof n[0] ? n[op] : "?";
}

static const char *cls_name(unsigned c) { return c == PT_CLS_REQ ? "req" : c == PT_CLS_RSP ? "rsp" : "?"; }

static const char *proc_desc(char c)
{
    switch (c) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "in uninterruptible sleep";
    case 'T': return "STOPPED (SIGSTOP or job control)";
    case 't': return "STOPPED (traced)";
    case 'Z': return "DEAD (zombie, not reaped yet)";
    case 'X': case '-': return "GONE";
    default: return "state unknown";
    }
}

static void who(const struct ptd_rank *k, int32_t tid, char *buf, size_t len)
{
    if (tid && tid == k->nic_tid)
        snprintf(buf, len, "NIC thread");
    else if (tid && tid == k->ospid)
        snprintf(buf, len, "main thread");
    else
        snprintf(buf, len, "thread %d", (int)tid);
}

static void value(const struct pt_trace_out *o, const struct ptd_rank *k, char *b, size_t len)
{
    uint64_t v = o->val;
    char w[32];
    switch (pt_trace_sites[o->site].vf) {
    case PT_VF_TID: who(k, (int32_t)v, w, sizeof w); snprintf(b, len, "%s", w); break;
    case PT_VF_CMD:
        snprintf(b, len, "%s (ring %u)", pt_cmd_name((int)(v & 0xffff)), (unsigned)(v >> 16));
        break;
    case PT_VF_MSG:
        snprintf(b, len, "%s %s peer %u", cls_name((unsigned)(v >> 8) & 0xff),
                 (v & 0xff) ? wire_op((unsigned)(v & 0xff)) : "-", (unsigned)(v >> 16));
        break;
    case PT_VF_PTL:
        snprintf(b, len, "portal %u, %llu bytes", (unsigned)(v >> 48),
                 (unsigned long long)(v & 0xffffffffffffULL));
        break;
    case PT_VF_EVENT:
        snprintf(b, len, "%s%s", PtlEventKindStr((ptl_event_kind_t)(v & 0xff)),
                 (v >> 8) ? (v >> 8) == PTL_NI_PEER_DIED ? " PEER_DIED" : " FAILED" : "");
        break;
    case PT_VF_XFER:
        snprintf(b, len, "peer %u, %llu bytes", (unsigned)(v >> 48),
                 (unsigned long long)(v & 0xffffffffffffULL));
        break;
    case PT_VF_NONE: b[0] = '\0'; break;
    default: snprintf(b, len, "%llu", (unsigned long long)v); break;
    }
}

static const char *op_kind(uint32_t k)
{
    return k == PT_OP_RNDV_PUT ? "rendezvous put (pulling from)"
         : k == PT_OP_RNDV_REPLY ? "rendezvous get reply (pulling from)"
         : k == PT_OP_COPY_SEND ? "copy stream (sending to)" : "?";
}

/* Who holds the engine: the last token record of the engine ring. */
static int32_t holder(const struct ptd_rank *k)
{
    for (uint32_t i = k->nrec; i-- > 0;) {
        const struct pt_trace_out *o = &k->rec[i];
        if (o->ring)
            continue;
        if (o->site == PT_TR_TOKEN_GIVE)
            return 0;
        if (o->site == PT_TR_TOKEN_TAKE)
            return (int32_t)o->val;
    }
    return -1;
}

/* Process p of the region by name: "rank 3", or "guest 0" for a slot of a
 * process that joined (PTL_JOB) past the launcher's ranks. */
static const char *pname(const struct ptd_snap *s, uint32_t p, char *buf, size_t len)
{
    uint32_t nr = s->h.nranks - s->h.nguests;
    if (p < nr)
        snprintf(buf, len, "rank %u", p);
    else
        snprintf(buf, len, "guest %u", p - nr);
    return buf;
}

/* A guest slot no process ever took: nothing to say about it. */
static bool unused_slot(const struct ptd_snap *s, uint32_t p)
{
    const struct ptd_rank *k = &s->r[p];
    return p >= s->h.nranks - s->h.nguests && k->attach == PT_SHM_R_NONE && k->ospid == 0;
}

void ptd_print(const struct ptd_snap *s, FILE *f, unsigned last)
{
    uint32_t n = s->h.nranks, qs = s->h.qslots, ng = s->h.nguests, gused = 0;
    char nm[32], nm2[32];
    for (uint32_t r = n - ng; r < n; r++)
        gused += !unused_slot(s, r);
    fprintf(f, "==== libportals job dump (%s) ====\n", s->h.why[0] ? s->h.why : "on demand");
    fprintf(f, "job %u: %u ranks", s->h.jid, n - ng);
    if (ng)
        fprintf(f, " and %u guest slots (%u taken)", ng, gused);
    fprintf(f, ", rings of %u entries, buffers of %u B", qs, s->h.slot_size);
    if (s->h.job_failed)
        fprintf(f, "; job FAILED (%s), first dead rank %d\n", s->h.job_failed == PTL_NI_PEER_DIED ? "PTL_NI_PEER_DIED" : "PTL_NI_FAIL",
                (int)s->h.first_dead);
    else
        fprintf(f, "; job not failed\n");
    /* The summary a user reads first: who cannot move, and why. */
    fprintf(f, "summary:\n");
    bool any = false;
    for (uint32_t r = 0; r < n; r++) {
        const struct ptd_rank *k = &s->r[r];
        char c = k->proc_state;
        if (unused_slot(s, r))
            continue;
        pname(s, r, nm, sizeof nm);
        if (c == 'T' || c == 't' || c == 'Z' || c == 'X' || c == '-' || k->dead) {
            fprintf(f, "  %s (pid %d) is %s%s\n", nm, (int)k->ospid, proc_desc(c),
                    k->dead ? ", marked dead in the job" : "");
            any = true;
        }
        for (uint32_t i = 0; i < k->nq; i++) {
            const struct ptd_q *q = &k->q[i];
            uint32_t used = q->head - q->tail;
            if (q->receiver == r && used >= qs) {
                pname(s, q->sender, nm2, sizeof nm2);
                fprintf(f, "  %s -> %s %s queue full: %s has 0 credits towards %s (%u "
                           "messages not taken)\n",
                        nm2, nm, cls_name(q->cls), nm2, nm, used);
                any = true;
            }
        }
        for (uint32_t i = 0; i < k->nrec; i++)
            if (k->rec[i].site == PT_TR_XFER_FAIL || k->rec[i].site == PT_TR_MISSED) {
                char v[96];
                value(&k->rec[i], k, v, sizeof v);
                fprintf(f, "  %s: %s %s\n", nm, pt_trace_sites[k->rec[i].site].name, v);
                any = true;
            }
    }
    if (!any)
        fprintf(f, "  nothing stopped, dead or out of credits\n");

    for (uint32_t r = 0; r < n; r++) {
        const struct ptd_rank *k = &s->r[r];
        if (unused_slot(s, r))
            continue;
        fprintf(f, "---- %s (pid %d): %s; %s%s\n", pname(s, r, nm, sizeof nm), (int)k->ospid,
                proc_desc(k->proc_state),
                k->attach == PT_SHM_R_ATTACHED ? "attached" :
                k->attach == PT_SHM_R_DETACHED ? "detached (PtlNIFini done)" : "never attached",
                k->dead ? ", DEAD" : "");
        fprintf(f, "  doorbell: seq %u, engine sleepers %u, polling leases %u\n", k->bell_seq,
                k->bell_sleepers, k->bell_polled);
        if (k->eng_ok) {
            int32_t hd = holder(k);
            char hb[32] = "?";
            if (hd > 0)
                who(k, hd, hb, sizeof hb);
            fprintf(f, "  engine: token %s%s%s; NIC thread %s; want %u; own polling waiters %u; "
                       "event sleepers %u%s%s\n",
                    k->token ? "HELD" : "free", k->token && hd > 0 ? " by " : "",
                    k->token && hd > 0 ? hb : "",
                    k->nic_thread ? pt_nic_state_name(k->nic_state) : "none (host matching)",
                    k->want, k->polled_mine, k->ev_sleepers,
                    k->failed ? "; NI FAILED" : "", k->ni_dead ? "; in PtlNIFini" : "");
            fprintf(f, "  counters: NIC sleeps %llu, arms that found work %llu, waiter sleeps "
                       "%llu, kicks drained %llu / rung %llu, MISSED WAKES %llu, bell repairs "
                       "%llu, late rings %llu; drops %llu (bad headers %llu)\n",
                    (unsigned long long)k->stats[0], (unsigned long long)k->stats[1],
                    (unsigned long long)k->stats[2], (unsigned long long)k->stats[3],
                    (unsigned long long)k->stats[4], (unsigned long long)k->stats[5],
                    (unsigned long long)k->stats[6], (unsigned long long)k->stats[7],
                    (unsigned long long)k->drops,
                    (unsigned long long)k->drops_bad);
            fprintf(f, "  commands queued per thread ring (%u rings):", k->ncmdq);
            for (uint32_t i = 0; i < k->ncmdq_listed; i++)
                fprintf(f, " %u", k->cmdq_pend[i]);
            fprintf(f, "\n  transfers in flight: %u\n", k->nops);
            for (uint32_t i = 0; i < k->nops_listed; i++) {
                const struct ptd_op *o = &k->ops[i];
                fprintf(f, "    %s rank %u: %llu of %llu bytes%s%s\n", op_kind(o->kind), o->peer,
                        (unsigned long long)o->done, (unsigned long long)o->total,
                        o->failed ? ", FAILED" : "",
                        o->rsp_pending ? ", waiting for a response slot" : "");
            }
            fprintf(f, "  EQs: %u live\n", k->eq_live);
            for (uint32_t i = 0; i < k->neq_listed; i++) {
                const struct ptd_eq *e = &k->eqs[i];
                uint64_t unread = e->written - e->read;
                if (unread > e->size)
                    fprintf(f, "    EQ %u: OVERFLOWED: %llu events written, %llu read, size %llu "
                               "(%llu lost)\n", e->idx, (unsigned long long)e->written,
                            (unsigned long long)e->read, (unsigned long long)e->size,
                            (unsigned long long)(unread - e->size));
                else
                    fprintf(f, "    EQ %u: %llu of %llu slots unread (%llu events so far)\n",
                            e->idx, (unsigned long long)unread, (unsigned long long)e->size,
                            (unsigned long long)e->written);
            }
        } else {
            fprintf(f, "  engine: not read: %s\n", k->eng_why);
        }
        fprintf(f, "  queues holding messages (sender -> receiver class: queued/slots, the "
                   "sender's credits):\n");
        uint32_t shown = 0;
        for (uint32_t i = 0; i < k->nq; i++) {
            const struct ptd_q *q = &k->q[i];
            uint32_t used = q->head - q->tail;
            fprintf(f, "    %u -> %u %s: head %u tail %u: %u/%u, credits %d%s\n", q->sender,
                    q->receiver, cls_name(q->cls), q->head, q->tail, used, qs,
                    used <= qs ? (int)(qs - used) : -1,
                    used > qs ? " (IMPOSSIBLE: forged header)" : used == qs ? " (FULL)" : "");
            shown++;
        }
        if (!shown)
            fprintf(f, "    none: every queue from and to this rank is empty\n");
        if (!k->trace_ok) {
            fprintf(f, "  trace: none\n");
            continue;
        }
        uint32_t from = last && k->nrec > last ? k->nrec - last : 0;
        fprintf(f, "  trace: last %u of %u records (engine ring: %llu written, wait ring: %llu)%s\n",
                k->nrec - from, k->nrec, (unsigned long long)k->trace_head,
                (unsigned long long)k->trace_whead,
                k->trace_enabled ? "" : " [recorder stopped: NI closed]");
        fprintf(f, "    %12s %10s  %-12s %-12s %s\n", "time (us)", "delta", "thread", "site",
                "value");
        uint64_t prev = 0;
        for (uint32_t i = from; i < k->nrec; i++) {
            const struct pt_trace_out *o = &k->rec[i];
            double t_us = ((double)(int64_t)(o->ts - s->h.tsc_now)) * k->ns_per_tick / 1000.0;
            double d_us = prev ? ((double)(int64_t)(o->ts - prev)) * k->ns_per_tick / 1000.0 : 0;
            prev = o->ts;
            char th[32] = "engine", v[96];
            if (o->ring || o->site == PT_TR_TOKEN_TAKE || o->site == PT_TR_TOKEN_GIVE)
                who(k, o->tid, th, sizeof th);
            value(o, k, v, sizeof v);
            fprintf(f, "    %12.3f %+10.3f  %-12s %-12s %s", t_us, d_us, th,
                    pt_trace_sites[o->site].name, v);
            if (o->reps > 0xffff)
                fprintf(f, "  (x65536 or more; time of the last)");
            else if (o->reps > 1)
                fprintf(f, "  (x%u; time of the last)", o->reps);
            fputc('\n', f);
        }
    }
    fprintf(f, "==== end of dump ====\n");
    fflush(f);
}
