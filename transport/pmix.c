/*
 * pmix.c - the job of a process started by a PMIx launcher (Open MPI's
 * mpirun, srun --mpi=pmix) without ptlrun: built when PTL_WITH_PMIX is on
 * (and the ofi transport with it). docs/ofi.md, "PMIx wire-up".
 *
 * There is no job region. This file provides what the ofi transport asks of
 * the region otherwise (ofi.h, struct ofi_sub): identity, liveness, the
 * doorbell, and the address exchange:
 *   - rank and size: PMIx_Init's proc, PMIX_JOB_SIZE;
 *   - Portals ids: nid = the node of the rank (PMIX_NODEID, else a hash of
 *     PMIX_HOSTNAME, as the rank itself sees it, published beside its
 *     endpoint name), pid = the rank (as ptlrun's default map);
 *   - endpoint names: PMIx_Put + PMIx_Commit of our name, a collecting
 *     fence bounded by PTL_PMIX_TIMEOUT_S (a rank that never reaches its
 *     PtlNIInit fails the others' instead of holding them until the launcher
 *     kills the job), then PMIx_Get of every peer's from the data the fence
 *     brought, once, at open (no PMIx call after open but the event handler
 *     and PMIx_Finalize);
 *   - where the ranks are: all on this node (PMIX_LOCAL_SIZE is the job
 *     size) or not; only then may ofi take a loopback address (ofi_open.c,
 *     open_fabric);
 *   - liveness: PMIx events (a process of the job aborted or terminated, the
 *     connection to the local server lost) fail the job for this rank with
 *     PTL_NI_PEER_DIED and wake the engine through an eventfd in ofi's sleep
 *     set (Open MPI 4.1.4 does not deliver them usably); ofi_peer.c's liveness
 *     probe and failed sends find a dead peer and fail the job themselves.
 *
 * Threads: the event handler runs on PMIx's progress thread; it writes only
 * `failed`, `dead[]` (relaxed atomics) and the eventfd. The fence's callback
 * runs there too, on a struct fence_op of its own.
 */
#include "pmix_job.h"

#include "config.h"
#include "log.h"
#include "proc.h"
#include "pt_atomic.h"

#include <p3api/misc.h>

#include <errno.h>
#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define PMIX_EP_KEY "ptl.ofi.ep"
#define PMIX_NID_KEY "ptl.nid"
#define PMIX_BOOT_KEY "ptl.boot" /* the machine's boot id, hashed: mix.c's check */
#define PMIX_WIRE_KEY "ptl.wire" /* "<PTL_TRANSPORT> <provider>": wire_check */

struct pt_xport {
    pmix_proc_t me;
    uint32_t rank, n;
    uint32_t *nids;                /* per rank; written at open, read-only then */
    uint32_t *boots;               /* per rank: its machine's boot id (hashed), 0
                                    * unknown; after the fence, read-only then  */
    unsigned char *names;          /* n * PT_PMIX_NAME_MAX, after the fence      */
    uint16_t *name_len;            /* 0: not known                              */
    _Atomic uint8_t *dead;         /* written by the event handler (relaxed)    */
    _Atomic uint32_t failed;       /* written by the event handler (relaxed)    */
    int evfd;                      /* written by the event handler, read by ofi */
    size_t evh_id;
    bool evh_registered;
    struct pt_waitword bell;       /* process-private: peers never ring it      */
    /* A job without ofi (every rank on this node, mix.c): the bell the
     * engine sleeps on, in the node region; the handler rings it after a
     * death (set before the NI runs, never changed). */
    struct pt_waitword *_Atomic wake;
    char prov[64];                 /* our libfabric provider (pt_pmix_wire_provider) */
};

static bool g_pmix_up;     /* the NI's PMIx_Init done, not finalized (PtlNIInit's thread) */
static bool g_pmix_opened; /* an NI was opened once in this process (never cleared) */
static pid_t g_pmix_pid;   /* ... by this OS process (a child of fork() inherits the flag) */
static pthread_mutex_t g_rt_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_rt_held;     /* the rank runtime's PMIx_Init (api/rt.c), under g_rt_mu */
/* The job the event handler reports to: set before the handler is
 * registered, cleared after it is deregistered (release/acquire). */
static struct pt_xport *_Atomic g_x;

bool pt_pmix_launched(void)
{
    const char *ns = getenv("PMIX_NAMESPACE"), *rk = getenv("PMIX_RANK");
    return ns && *ns && rk && *rk;
}

static void on_event(size_t id, pmix_status_t status, const pmix_proc_t *source,
                     pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                     pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    (void)id;
    (void)status; /* every code registered means a process of the job is gone */
    (void)results;
    (void)nresults;
    struct pt_xport *x = LD_ACQUIRE(&g_x);
    if (x) {
        const pmix_proc_t *who = source;
        /* The process the event is about, when the launcher names it. */
        for (size_t i = 0; i < ninfo; i++)
            if ((PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC)) &&
                info[i].value.type == PMIX_PROC)
                who = info[i].value.data.proc;
        bool ours = who && PMIX_CHECK_NSPACE(who->nspace, x->me.nspace);
        if (ours && who->rank < x->n && who->rank != x->rank)
            ST_RELAXED(&x->dead[who->rank], 1);
        if (!(ours && who->rank == x->rank)) {
            uint32_t z = 0;
            RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
            uint64_t one = 1;
            ssize_t w = write(x->evfd, &one, sizeof one);
            (void)w;
            struct pt_waitword *b = LD_ACQUIRE(&x->wake);
            if (b) {
                FENCE_FULL(); /* `failed` before the ring's seq bump: the woken
                               * sleeper's job_failed sees it */
                pt_wake_all(b);
            }
        }
    }
    if (cbfunc)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

/* ---- the ops ofi asks of its sub-transport (xport.h) ---------------------- */

static bool pj_peer_alive(struct pt_xport *x, uint32_t peer)
{
    if (peer >= x->n)
        return false;
    return peer == x->rank || !LD_RELAXED(&x->dead[peer]);
}

static struct pt_waitword *pj_doorbell(struct pt_xport *x) { return &x->bell; }

static pid_t pj_peer_ospid(struct pt_xport *x, uint32_t peer)
{
    (void)x;
    (void)peer;
    return 0; /* maybe on another host: no pidfd, no CMA */
}

static int pj_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    return pid < x->n && x->nids[pid] == nid ? (int)pid : -1;
}

static void pj_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    if (rank < x->n) {
        *nid_p = x->nids[rank];
        *pid_p = rank;
    } else {
        *nid_p = 0xffffffffu;
        *pid_p = 0xffffffffu;
    }
}

static uint32_t pj_job_failed(struct pt_xport *x) { return LD_RELAXED(&x->failed); }
/* No launcher counts departures here (ofi's liveness probe finds the dead). */
static uint32_t pj_departures(struct pt_xport *x) { (void)x; return 0; }

static void pj_free(struct pt_xport *x)
{
    /* The handler runs on PMIx's progress thread, and the deregistration is
     * served there too: after it, no handler still holds x. */
    ST_RELEASE(&g_x, NULL);
    if (x->evh_registered)
        PMIx_Deregister_event_handler(x->evh_id, NULL, NULL);
    if (g_pmix_up) {
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS)
            pt_log(PT_LOG_WARN, "PMIx_Finalize: %s", PMIx_Error_string(rc));
        g_pmix_up = false;
    }
    if (x->evfd >= 0)
        close(x->evfd);
    free(x->nids);
    free(x->boots);
    free(x->names);
    free(x->name_len);
    free((void *)x->dead);
    free(x);
}

static void pj_close(struct pt_xport *x) { pj_free(x); }

static const struct pt_xport_ops g_pj_ops = {
    .name = "pmix",
    .peer_alive = pj_peer_alive,
    .doorbell = pj_doorbell,
    .peer_ospid = pj_peer_ospid,
    .rank_of = pj_rank_of,
    .id_of = pj_id_of,
    .job_failed = pj_job_failed,
    .departures = pj_departures,
    .close = pj_close,
};

/* ---- the address exchange (ofi.h, struct ofi_addrx) ----------------------- */

static uint32_t hash32(const char *s) { return pt_fnv1a32(s) & 0x7fffffffu; }

static uint32_t node_of(struct pt_xport *x, uint32_t rank)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, x->me.nspace, rank);
    pmix_value_t *v = NULL;
    uint32_t nid = 0;
    if (PMIx_Get(&p, PMIX_NODEID, NULL, 0, &v) == PMIX_SUCCESS && v &&
        v->type == PMIX_UINT32) {
        nid = v->data.uint32;
    } else {
        if (v)
            PMIX_VALUE_RELEASE(v);
        v = NULL;
        if (PMIx_Get(&p, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS && v &&
            v->type == PMIX_STRING && v->data.string)
            nid = hash32(v->data.string);
    }
    if (v)
        PMIX_VALUE_RELEASE(v);
    return nid;
}

/* ---- the wire-up fence, bounded (PTL_PMIX_TIMEOUT_S) -------------------------- */

/* The extra time we give a server that has PMIX_TIMEOUT to answer the fence
 * itself (PMIX_ERR_TIMEOUT) before we stop waiting: it then releases our part
 * of the collective, and no late callback is left. */
#define FENCE_GRACE_S 1

/* One fence in flight, shared by the rank that waits and PMIx's callback. The
 * callback may come after the waiter gave up, or never: whichever of the two
 * lets go last frees it, so a late callback still finds it; one that never
 * comes leaves it allocated (under 2 KiB, once: one fence per process). The
 * proc and the info array live here too: nothing promises that PMIx is done
 * with them before its callback (openpmix packs them within the call). */
struct fence_op {
    pmix_proc_t all;
    pmix_info_t info[2];
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* CLOCK_MONOTONIC */
    bool done;             /* under mu */
    pmix_status_t status;  /* under mu, once done */
    _Atomic uint32_t refs; /* the waiter and the callback */
};

static void fence_op_put(struct fence_op *f)
{
    if (RMW_SUB(&f->refs, 1) != 1)
        return;
    PMIX_INFO_DESTRUCT(&f->info[0]);
    PMIX_INFO_DESTRUCT(&f->info[1]);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static struct fence_op *fence_op_new(const pmix_proc_t *all, int timeout_s)
{
    struct fence_op *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&f->mu, NULL);
    f->refs = 2;
    f->all = *all;
    bool yes = true;
    PMIX_INFO_LOAD(&f->info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&f->info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    return f;
}

/* PMIx's progress thread: the fence ended (or the server gave up on it). The
 * waiter may be gone; the reference this callback holds keeps f valid. */
static void fence_done(pmix_status_t status, void *cbdata)
{
    struct fence_op *f = cbdata;
    pthread_mutex_lock(&f->mu);
    f->done = true;
    f->status = status;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    fence_op_put(f);
}

/* Wait for the fence until timeout_s (+ the grace) from now: true and its
 * status when it ended, false when it did not. */
static bool fence_wait(struct fence_op *f, int timeout_s, pmix_status_t *status_p)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_s + FENCE_GRACE_S;
    pthread_mutex_lock(&f->mu);
    int e = 0;
    while (!f->done && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&f->cv, &f->mu, &dl);
    bool done = f->done;
    *status_p = f->status;
    pthread_mutex_unlock(&f->mu);
    return done;
}

/* Every rank of the job publishes, then all read: a collecting fence. A rank
 * that never reaches its PtlNIInit (stuck or slow before it) would hold every
 * other rank's here until the launcher killed the job: the fence is bounded by
 * PTL_PMIX_TIMEOUT_S, ours and, where the server has PMIX_TIMEOUT, its own.
 * 0, -ENOMEM, or -EIO (message logged). */
static int fence_bounded(struct pt_xport *x)
{
    int timeout_s = (int)pt_config()->pmix_timeout_s;
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, x->me.nspace, PMIX_RANK_WILDCARD);
    struct fence_op *f = fence_op_new(&all, timeout_s);
    if (!f)
        return -ENOMEM;
    pmix_status_t rc = PMIx_Fence_nb(&f->all, 1, f->info, 2, fence_done, f);
    bool done;
    if (rc == PMIX_SUCCESS) {
        done = fence_wait(f, timeout_s, &rc);
    } else {
        /* Completed at once, or refused: no callback will come (its
         * reference goes here). */
        done = true;
        fence_op_put(f);
        if (rc == PMIX_OPERATION_SUCCEEDED)
            rc = PMIX_SUCCESS;
    }
    fence_op_put(f);
    if (!done || rc == PMIX_ERR_TIMEOUT) {
        pt_log(PT_LOG_ERR, "PMIx wire-up: rank %u of %u: the fence of PtlNIInit did not "
                           "complete within PTL_PMIX_TIMEOUT_S (%d s): a rank of the job did "
                           "not reach PtlNIInit (stuck or slow before it, or it left the job "
                           "without calling it, or it runs with another PTL_TRANSPORT: a job "
                           "all on one machine joins no fence without ofi); PtlNIInit fails",
               x->rank, x->n, timeout_s);
        return -EIO;
    }
    if (rc != PMIX_SUCCESS) {
        /* (PMIX_ERR_PARTIAL_SUCCESS: a rank of the job left without it) */
        pt_log(PT_LOG_ERR, "PMIx wire-up: rank %u of %u: the fence of PtlNIInit failed: %s%s",
               x->rank, x->n, PMIx_Error_string(rc),
               rc == PMIX_ERR_PARTIAL_SUCCESS
                   ? " (a rank of the job left without joining it: it failed before, or it "
                     "runs with another PTL_TRANSPORT)"
                   : "");
        return -EIO;
    }
    return 0;
}

/* Rank r's nid and endpoint name, from what the fence brought (info: how to
 * Get them). 0, or -EIO (message logged). */
static int read_rank(struct pt_xport *x, uint32_t r, const pmix_info_t *info)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, x->me.nspace, r);
    pmix_value_t *pv = NULL;
    pmix_status_t rc = PMIx_Get(&p, PMIX_NID_KEY, info, 1, &pv);
    if (rc != PMIX_SUCCESS || !pv || pv->type != PMIX_UINT32) {
        pt_log(PT_LOG_ERR, "PMIx_Get of rank %u's nid: %s", r,
               rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a uint32");
        if (pv)
            PMIX_VALUE_RELEASE(pv);
        return -EIO;
    }
    x->nids[r] = pv->data.uint32;
    PMIX_VALUE_RELEASE(pv);
    pv = NULL;
    if (PMIx_Get(&p, PMIX_BOOT_KEY, info, 1, &pv) == PMIX_SUCCESS && pv &&
        pv->type == PMIX_UINT32)
        x->boots[r] = pv->data.uint32;
    if (pv)
        PMIX_VALUE_RELEASE(pv);
    pv = NULL;
    rc = PMIx_Get(&p, PMIX_EP_KEY, info, 1, &pv);
    if (rc != PMIX_SUCCESS || !pv || pv->type != PMIX_BYTE_OBJECT ||
        pv->data.bo.size == 0 || pv->data.bo.size > PT_PMIX_NAME_MAX) {
        pt_log(PT_LOG_ERR, "PMIx_Get of rank %u's endpoint name: %s", r,
               rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a name");
        if (pv)
            PMIX_VALUE_RELEASE(pv);
        return -EIO;
    }
    memcpy(x->names + (size_t)r * PT_PMIX_NAME_MAX, pv->data.bo.bytes, pv->data.bo.size);
    x->name_len[r] = (uint16_t)pv->data.bo.size;
    PMIX_VALUE_RELEASE(pv);
    return 0;
}

/* This machine's boot id (hashed; 0: unknown): ranks that share a nid must
 * share it too, or the nid does not name their host (mix.c). Network
 * namespaces of one machine share it, and are told apart by their nids. */
static uint32_t boot_hash(void)
{
    char b[64] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return 0;
    if (!fgets(b, sizeof b, f))
        b[0] = 0;
    fclose(f);
    uint32_t h = b[0] ? hash32(b) : 0;
    return h ? h : 1;
}

bool pt_pmix_same_machine(uint32_t a, uint32_t b)
{
    struct pt_xport *x = LD_ACQUIRE(&g_x);
    if (!x || !x->boots || a >= x->n || b >= x->n || !x->boots[a] || !x->boots[b])
        return true; /* unknown: nothing says otherwise */
    return x->boots[a] == x->boots[b];
}

/* PtlNIInit's thread, before pj_publish (ofi_setup). */
void pt_pmix_wire_provider(void *ctx, const char *prov)
{
    struct pt_xport *x = ctx;
    snprintf(x->prov, sizeof x->prov, "%s", prov);
}

static const char *transport_word(void)
{
    int64_t t = pt_config()->transport;
    return t == PT_TRANSPORT_OFI ? "ofi" : t == PT_TRANSPORT_SHM ? "shm" : "auto";
}

/* Every rank that fenced says how it reaches its peers (PMIX_WIRE_KEY). A
 * provider that differs cannot parse the other's names or messages; a rank
 * over ofi alone beside a rank of its machine that uses the node's region
 * never reads that region's rings. Both hung without a word (an adversarial
 * client); now every rank's PtlNIInit fails saying so. A rank of an older
 * library says nothing: not checked. 0 or -EIO (logged). */
static int wire_check(struct pt_xport *x, const pmix_info_t *info, uint32_t myboot)
{
    const char *mine = transport_word();
    for (uint32_t r = 0; r < x->n; r++) {
        if (r == x->rank)
            continue;
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, x->me.nspace, r);
        pmix_value_t *pv = NULL;
        char theirs[96] = "";
        if (PMIx_Get(&p, PMIX_WIRE_KEY, info, 1, &pv) == PMIX_SUCCESS && pv &&
            pv->type == PMIX_STRING && pv->data.string)
            snprintf(theirs, sizeof theirs, "%s", pv->data.string);
        if (pv)
            PMIX_VALUE_RELEASE(pv);
        char *prov = strchr(theirs, ' ');
        if (!prov)
            continue;
        *prov++ = '\0';
        if (strcmp(prov, "-") != 0 && x->prov[0] && strcmp(prov, x->prov) != 0) {
            pt_log(PT_LOG_ERR, "PMIx wire-up: rank %u uses the libfabric provider %s, but rank %u "
                               "uses %s: every rank of a job must use the same PTL_OFI_PROVIDER "
                               "(README, \"Tunables\"); PtlNIInit fails",
                   x->rank, x->prov, r, prov);
            return -EIO;
        }
        bool ofi_here = !strcmp(mine, "ofi"), ofi_there = !strcmp(theirs, "ofi");
        if (ofi_here != ofi_there && myboot && x->boots[r] == myboot) {
            pt_log(PT_LOG_ERR, "PMIx wire-up: rank %u runs with PTL_TRANSPORT=%s, but rank %u on "
                               "the same machine with %s: one of them would send through the "
                               "node's region, which the other never reads; every rank of a job "
                               "must use the same PTL_TRANSPORT (README, \"Tunables\"); PtlNIInit "
                               "fails",
                   x->rank, mine, r, theirs);
            return -EIO;
        }
    }
    return 0;
}

static int pj_publish(void *ctx, const void *name, size_t len)
{
    struct pt_xport *x = ctx;
    if (len > PT_PMIX_NAME_MAX)
        return -ENAMETOOLONG;
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)name;
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, PMIX_EP_KEY, &v);
    /* Our nid, as we see our node: every peer reads the same value (a
     * launcher may answer PMIX_NODEID for local processes only). */
    pmix_value_t nv;
    PMIX_VALUE_CONSTRUCT(&nv);
    nv.type = PMIX_UINT32;
    nv.data.uint32 = node_of(x, x->rank);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Put(PMIX_GLOBAL, PMIX_NID_KEY, &nv);
    pmix_value_t bv;
    PMIX_VALUE_CONSTRUCT(&bv);
    bv.type = PMIX_UINT32;
    bv.data.uint32 = boot_hash();
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Put(PMIX_GLOBAL, PMIX_BOOT_KEY, &bv);
    char wire[96];
    snprintf(wire, sizeof wire, "%s %s", transport_word(), x->prov[0] ? x->prov : "-");
    pmix_value_t wv;
    PMIX_VALUE_CONSTRUCT(&wv);
    wv.type = PMIX_STRING;
    wv.data.string = wire;
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Put(PMIX_GLOBAL, PMIX_WIRE_KEY, &wv);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        pt_log(PT_LOG_ERR, "PMIx_Put/Commit of the endpoint name: %s", PMIx_Error_string(rc));
        return -EIO;
    }
    int ret = fence_bounded(x);
    if (ret)
        return ret;
    /* The fence brought every rank's data here: a Get that did not find it
     * locally would ask the server and wait (for a rank that never put it:
     * for ever), so it is an error at once (PMIX_OPTIONAL). */
    pmix_info_t local;
    bool yes = true;
    PMIX_INFO_LOAD(&local, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    for (uint32_t r = 0; ret == 0 && r < x->n; r++)
        ret = read_rank(x, r, &local);
    if (ret == 0)
        ret = wire_check(x, &local, bv.data.uint32);
    PMIX_INFO_DESTRUCT(&local);
    return ret;
}

static int pj_lookup(void *ctx, uint32_t rank, void *name, size_t *len)
{
    struct pt_xport *x = ctx;
    if (rank >= x->n || !x->name_len[rank])
        return -EAGAIN;
    if (*len < x->name_len[rank])
        return -ENAMETOOLONG;
    memcpy(name, x->names + (size_t)rank * PT_PMIX_NAME_MAX, x->name_len[rank]);
    *len = x->name_len[rank];
    return 0;
}

/* Every rank of the job on this node (pt_pmix_local_size is the job's size):
 * no wire-up fence is needed, every rank's nid is ours. The handler rings
 * `wake` after a death. 0 or -errno. */
int pt_pmix_node_only(struct pt_xport *x, struct pt_waitword *wake)
{
    uint32_t nid = node_of(x, x->rank);
    for (uint32_t r = 0; r < x->n; r++)
        x->nids[r] = nid;
    ST_RELEASE(&x->wake, wake);
    return 0;
}

/* ---- the rank runtime (api/rt.c) ------------------------------------------------ */

static int job_size(const pmix_proc_t *me, uint32_t *size_p)
{
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me->nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &v);
    int ret = 0;
    if (rc != PMIX_SUCCESS || !v || v->type != PMIX_UINT32 || v->data.uint32 == 0 ||
        me->rank >= v->data.uint32) {
        pt_log(PT_LOG_ERR, "PMIx_Get(PMIX_JOB_SIZE): %s",
               rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "no usable size");
        ret = -EIO;
    } else {
        *size_p = v->data.uint32;
    }
    if (v)
        PMIX_VALUE_RELEASE(v);
    return ret;
}

int pt_pmix_rank_size(uint32_t *rank_p, uint32_t *size_p)
{
    pmix_proc_t me;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0); /* counted: one PMIx_Finalize each */
    if (rc != PMIX_SUCCESS) {
        pt_log(PT_LOG_ERR, "PMIx_Init: %s", PMIx_Error_string(rc));
        return -EIO;
    }
    int ret = job_size(&me, size_p);
    if (ret == 0)
        *rank_p = me.rank;
    pthread_mutex_lock(&g_rt_mu);
    bool keep = ret == 0 && !g_rt_held;
    if (keep)
        g_rt_held = true; /* kept until PtlFini: PMIx_Init and _Finalize pair up */
    pthread_mutex_unlock(&g_rt_mu);
    if (!keep)
        (void)PMIx_Finalize(NULL, 0);
    return ret;
}

void pt_pmix_rt_release(void)
{
    pthread_mutex_lock(&g_rt_mu);
    bool held = g_rt_held;
    g_rt_held = false;
    pthread_mutex_unlock(&g_rt_mu);
    if (held)
        (void)PMIx_Finalize(NULL, 0);
}

/* ---- opening ------------------------------------------------------------------ */

static uint32_t g_local_size; /* PMIX_LOCAL_SIZE, 0: unknown (PtlNIInit's thread) */
static char g_job_key[17];

uint32_t pt_pmix_local_size(void) { return g_local_size; }
const char *pt_pmix_job_key(void) { return g_job_key; }

int pt_pmix_open(struct pt_xport_info *info_p, struct pt_pmix_sub *sub_p)
{
    if (g_pmix_opened && g_pmix_pid != getpid()) {
        /* A child of fork() of a rank: no guests in a PMIx job (docs/ofi.md) */
        pt_log(PT_LOG_ERR, "PMIx job: a child of fork() of a rank cannot open an NI of its "
                           "own (processes that join a job are supported under ptlrun "
                           "only: docs/ofi.md)");
        return -ENOTSUP;
    }
    if (g_pmix_opened) {
        /* Its peers know only the first endpoint, and would not join a
         * second fence (as ofi_open.c refuses it in a ptlrun job). */
        pt_log(PT_LOG_ERR, "PMIx job: this process initialises an NI a second time "
                           "(after PtlNIFini): not supported");
        return -ENOTSUP;
    }
    g_pmix_opened = true;
    g_pmix_pid = getpid();
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    x->evfd = -1;
    pmix_status_t rc = PMIx_Init(&x->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        pt_log(PT_LOG_ERR, "PMIx_Init: %s (started by a PMIx launcher?)", PMIx_Error_string(rc));
        free(x);
        return -EIO;
    }
    g_pmix_up = true;
    x->rank = x->me.rank;
    {
        /* Two FNV-1a hashes of the namespace (offset bases apart): the key of
         * the node regions of this job (mix.c) */
        uint32_t a = 2166136261u, b = 0x9747b28cu;
        for (const char *c = x->me.nspace; *c; c++) {
            a = (a ^ (unsigned char)*c) * 16777619u;
            b = (b ^ (unsigned char)*c) * 16777619u;
        }
        snprintf(g_job_key, sizeof g_job_key, "%08x%08x", a, b);
    }
    if (job_size(&x->me, &x->n) != 0) {
        pj_free(x);
        return -EIO;
    }
    x->nids = calloc(x->n, sizeof *x->nids);
    x->boots = calloc(x->n, sizeof *x->boots);
    x->names = calloc(x->n, PT_PMIX_NAME_MAX);
    x->name_len = calloc(x->n, sizeof *x->name_len);
    x->dead = calloc(x->n, sizeof *x->dead);
    x->evfd = pt_fd_above_std(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!x->nids || !x->names || !x->name_len || !x->dead || x->evfd < 0) {
        pj_free(x);
        return -ENOMEM;
    }
    /* Peer deaths: whatever the launcher reports of processes of the job. */
    pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTING,
                             PMIX_ERR_PROC_ABORTED_BY_SIG, PMIX_ERR_PROC_TERM_WO_SYNC,
                             PMIX_ERR_LOST_CONNECTION, PMIX_ERR_UNREACH};
    ST_RELEASE(&g_x, x);
    rc = PMIx_Register_event_handler(codes, sizeof codes / sizeof codes[0], NULL, 0, on_event,
                                     NULL, NULL);
    if (rc < 0) {
        pt_log(PT_LOG_WARN, "PMIx_Register_event_handler: %s (peer deaths then come from "
                            "the provider's errors only)", PMIx_Error_string(rc));
    } else {
        x->evh_id = (size_t)rc;
        x->evh_registered = true;
    }
    /* Are all the ranks on this node? Only then may ofi take a loopback
     * address (ofi_open.c, open_fabric). Unknown: as before, any address. */
    bool all_local = true;
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, x->me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *lv = NULL;
    if (PMIx_Get(&all, PMIX_LOCAL_SIZE, NULL, 0, &lv) == PMIX_SUCCESS && lv &&
        lv->type == PMIX_UINT32) {
        all_local = lv->data.uint32 >= x->n;
        g_local_size = lv->data.uint32;
    }
    else
        pt_log(PT_LOG_INFO, "PMIx: no PMIX_LOCAL_SIZE; taking every rank as on this node");
    if (lv)
        PMIX_VALUE_RELEASE(lv);
    info_p->rank = x->rank;
    info_p->nranks = x->n;
    info_p->nprocs = x->n;
    info_p->ranks_here = 0; /* peers may be on other hosts */
    info_p->local_rank = info_p->rank; /* (no better guess) */
    info_p->jid = hash32(x->me.nspace);
    info_p->cma_ok = false;
    info_p->cma_why = "PMIx job: peers may be on other hosts";
    info_p->trace_area = NULL;
    info_p->trace_bytes = 0;
    sub_p->ops = &g_pj_ops;
    sub_p->x = x;
    sub_p->ax = (struct ofi_addrx){x, pj_publish, pj_lookup};
    sub_p->event_fd = x->evfd;
    sub_p->all_local = all_local;
    return 0;
}

void pt_pmix_describe(FILE *f)
{
    fprintf(f, "  pmix           %s; jobs of a PMIx launcher (mpirun, srun --mpi=pmix): "
               "the node's region for ranks on one host, ofi between hosts (PTL_TRANSPORT)\n",
            PMIx_Get_version());
    fprintf(f, "  pmix launched  %s\n", pt_pmix_launched() ? "yes (PMIX_NAMESPACE, PMIX_RANK)" : "no");
}
