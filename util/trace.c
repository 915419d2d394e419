/* trace.c - the flight recorder's slow parts: attach, the wait ring, the
 * reader. The engine ring's writer is inline in trace.h. */
#include "trace.h"

#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const struct pt_trace_site_info pt_trace_sites[PT_TR_NSITES] = {
    [PT_TR_NONE] = {"none", PT_VF_NONE, false},
    [PT_TR_TOKEN_TAKE] = {"token.take", PT_VF_TID, false},
    [PT_TR_TOKEN_GIVE] = {"token.give", PT_VF_TID, false},
    [PT_TR_CMD] = {"cmd", PT_VF_CMD, false},
    [PT_TR_RX] = {"rx", PT_VF_MSG, false},
    [PT_TR_RX_DEFER] = {"rx.defer", PT_VF_MSG, false},
    [PT_TR_MATCH] = {"match", PT_VF_PTL, false},
    [PT_TR_DROP] = {"drop", PT_VF_PTL, false},
    [PT_TR_EVENT] = {"event", PT_VF_EVENT, false},
    [PT_TR_SEND] = {"send", PT_VF_MSG, false},
    [PT_TR_NOCREDIT] = {"no-credit", PT_VF_MSG, false},
    [PT_TR_XFER_START] = {"xfer.start", PT_VF_XFER, false},
    [PT_TR_XFER_STEP] = {"xfer.step", PT_VF_XFER, false},
    [PT_TR_XFER_END] = {"xfer.end", PT_VF_XFER, false},
    [PT_TR_XFER_FAIL] = {"xfer.FAIL", PT_VF_XFER, false},
    [PT_TR_JOB_FAIL] = {"job.FAILED", PT_VF_NUM, false},
    [PT_TR_NIC_SLEEP] = {"nic.sleep", PT_VF_NUM, true},
    [PT_TR_NIC_WAKE] = {"nic.wake", PT_VF_NUM, true},
    [PT_TR_LEASE] = {"lease", PT_VF_NUM, true},
    [PT_TR_LEASE_END] = {"lease.end", PT_VF_NUM, true},
    [PT_TR_LEASE_LEFT] = {"lease.left", PT_VF_NUM, true},
    [PT_TR_LEASE_TAKEN] = {"lease.taken", PT_VF_NUM, true},
    [PT_TR_PARK] = {"park", PT_VF_NUM, true},
    [PT_TR_UNPARK] = {"unpark", PT_VF_NUM, true},
    [PT_TR_KICK] = {"kick", PT_VF_NUM, true},
    [PT_TR_MISSED] = {"MISSED-WAKE", PT_VF_NUM, true},
    [PT_TR_LATE] = {"late-ring", PT_VF_NUM, true},
};

static _Thread_local int32_t tls_tid;
static pthread_once_t g_tid_once = PTHREAD_ONCE_INIT;

/* fork(): the child's one thread is a copy of the forking thread, cache and
 * all; without this, a child that joins the job as a guest would record its
 * parent's thread id (the handler runs in the child, in that thread). */
static void tid_forget(void) { tls_tid = 0; }
static void tid_once(void) { (void)pthread_atfork(NULL, NULL, tid_forget); }

int32_t pt_trace_tid(void)
{
    if (PT_UNLIKELY(!tls_tid)) {
        pthread_once(&g_tid_once, tid_once);
        tls_tid = (int32_t)syscall(SYS_gettid);
    }
    return tls_tid;
}

bool pt_trace_wanted(void)
{
#if defined(PTL_NO_TRACE)
    return false;
#else
    return pt_config()->trace != 0;
#endif
}

struct pt_trace *pt_trace_attach(void *area, uint64_t bytes, uint32_t rank)
{
    if (!area) {
        area = aligned_alloc(PT_TRACE_HDR_BYTES, PT_TRACE_AREA_BYTES);
        if (!area)
            return NULL;
        memset(area, 0, PT_TRACE_AREA_BYTES);
    } else if (bytes < PT_TRACE_AREA_BYTES) {
        return NULL;
    }
    struct pt_trace *t = area;
    bool keep = LD_RELAXED(&t->magic) == PT_TRACE_MAGIC && t->version == PT_TRACE_VERSION &&
                t->ospid == (int32_t)getpid() && t->rank == rank;
    if (!keep) {
        ST_RELAXED(&t->magic, 0);
        memset((char *)area + sizeof(uint64_t), 0, PT_TRACE_AREA_BYTES - sizeof(uint64_t));
    }
    t->version = PT_TRACE_VERSION;
    t->hdr_bytes = PT_TRACE_HDR_BYTES;
    t->nrec = PT_TRACE_NREC;
    t->nwrec = PT_TRACE_NWREC;
    t->ospid = (int32_t)getpid();
    t->rank = rank;
    /* No calibration here: a reader derives the rate from this pair and one
     * of its own (ptl_dump: a baseline as long as the rank has lived). The
     * calibration's 2 ms busy loop at every NI's start cost a 256-rank job
     * on 2 cores 0.5 s of CPU (16% of the senders' core in an incast). */
    t->ns_per_tick = 0;
    t->ns0 = pt_now_ns();
    t->tsc0 = pt_tsc();
    ST_RELAXED(&t->enabled, 1);
    ST_RELEASE(&t->magic, PT_TRACE_MAGIC); /* R-TRC pairs with the reader's A-TRC */
    return t;
}

void pt_trace_detach(struct pt_trace *t, bool private_area)
{
    if (!t)
        return;
    ST_RELAXED(&t->enabled, 0);
    ST_RELAXED(&t->owner_addr, 0);
    ST_RELAXED(&t->nic_tid, 0);
    if (private_area)
        free(t);
}

void pt_trace_take(struct pt_trace *t)
{
    uint64_t tid = (uint64_t)(uint32_t)pt_trace_tid();
    uint64_t n = LD_RELAXED(&t->head);
    if (n) {
        struct pt_trace_rec *r = &pt_trace_ering(t)[(n - 1) & (PT_TRACE_NREC - 1)];
        uint64_t m = LD_RELAXED(&r->meta);
        if ((m & 0xffffffffu) == PT_TR_TOKEN_GIVE && (m >> 32) == tid) {
            /* our own give was the last thing: the hold continues */
            ST_RELAXED(&r->seq, 0);
            ST_RELAXED(&t->head, n - 1);
            return;
        }
    }
    pt_trace_e(t, PT_TR_TOKEN_TAKE, tid, tid);
}

void pt_trace_w(struct pt_trace *t, unsigned site, uint64_t val)
{
    uint64_t n = RMW_ADD(&t->whead, 1);
    uint64_t tid = (uint64_t)(uint32_t)pt_trace_tid();
    pt_trace_store(&pt_trace_wring(t)[n & (PT_TRACE_NWREC - 1)], n, pt_tsc(), val,
                   site | (tid << 32));
}

/* ---- reader ---------------------------------------------------------------- */

static size_t read_ring(struct pt_trace_rec *ring, uint32_t nrec, uint8_t which,
                        struct pt_trace_out *out)
{
    size_t k = 0;
    for (uint32_t i = 0; i < nrec; i++) {
        struct pt_trace_rec *r = &ring[i];
        uint64_t s1 = LD_ACQUIRE(&r->seq); /* A-seq pairs with T3 */
        if (!s1 || ((s1 - 1) & (nrec - 1)) != i)
            continue;
        uint64_t ts = LD_RELAXED(&r->ts), val = LD_RELAXED(&r->val), m = LD_RELAXED(&r->meta);
        FENCE_ACQUIRE(); /* T2: the fields before the second look; pairs with T1 */
        if (LD_RELAXED(&r->seq) != s1)
            continue; /* torn: the writer was on this slot */
        uint16_t site = (uint16_t)(m & 0xffff);
        if (site == PT_TR_NONE || site >= PT_TR_NSITES)
            continue;
        out[k++] = (struct pt_trace_out){s1, ts, val, site, (uint32_t)(((m >> 16) & 0xffff) + 1),
                                         which, (int32_t)(m >> 32)};
    }
    return k;
}

static int by_seq(const void *a, const void *b)
{
    const struct pt_trace_out *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t pt_trace_read(const void *area, uint64_t bytes, struct pt_trace_out *out, size_t max)
{
    if (!area || bytes < PT_TRACE_AREA_BYTES || !max)
        return 0;
    struct pt_trace *t = (struct pt_trace *)(uintptr_t)area;
    if (LD_ACQUIRE(&t->magic) != PT_TRACE_MAGIC || t->version != PT_TRACE_VERSION ||
        t->nrec != PT_TRACE_NREC || t->nwrec != PT_TRACE_NWREC) /* A-TRC pairs with R-TRC */
        return 0;
    struct pt_trace_out *e = malloc(sizeof *e * PT_TRACE_NREC);
    struct pt_trace_out *w = malloc(sizeof *w * PT_TRACE_NWREC);
    size_t k = 0;
    if (e && w) {
        size_t ne = read_ring(pt_trace_ering(t), PT_TRACE_NREC, 0, e);
        size_t nw = read_ring(pt_trace_wring(t), PT_TRACE_NWREC, 1, w);
        qsort(e, ne, sizeof *e, by_seq);
        qsort(w, nw, sizeof *w, by_seq);
        /* Merge by time, newest last; keep the newest `max`. */
        size_t total = ne + nw, skip = total > max ? total - max : 0, i = 0, j = 0;
        for (size_t n = 0; n < total; n++) {
            struct pt_trace_out *p;
            if (j >= nw || (i < ne && e[i].ts <= w[j].ts))
                p = &e[i++];
            else
                p = &w[j++];
            if (n >= skip)
                out[k++] = *p;
        }
    }
    free(e);
    free(w);
    return k;
}
