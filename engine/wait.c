/*
 * wait.c - the waiting protocol: the NIC thread's loop, the API waiter, token
 * release and kicks. See wait.h for the words and rules, docs/waiting.md for
 * the diagrams, model/wait.pml for the SPIN model; [Sx], [Wx] and [Dx] in the
 * comments are the model's labels.
 */
#include "wait.h"
#include "membar.h"

#include "config.h"
#include "log.h"
#include "nic.h"
#include "perturb.h"
#include "proc.h"
#include "thread.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The process-wide copy for pt_wait_polled_empty (no NI there): the last NI
 * set up decides. A hint: a data race would only change when a poll yields. */
static _Atomic uint64_t g_yield_ns = PT_WAIT_YIELD_NS;

/* The cores this host's ranks share: ptlrun --cpus (pinned ranks), else our
 * affinity mask; 0 if unknown. */
static uint64_t job_cpus(void)
{
    uint64_t cpus = (uint64_t)pt_config()->job_cpus;
    cpu_set_t set;
    if (!cpus && sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = (uint64_t)CPU_COUNT(&set);
    return cpus;
}

/* How long a waiter looks before it yields (PTL_WAIT_YIELD_US; -1: 0 when
 * more ranks share this host than the cores we may run on, else
 * PT_WAIT_YIELD_NS). */
static uint64_t yield_ns_for(uint64_t threads, uint64_t cpus)
{
    int64_t us = pt_config()->wait_yield_us;
    uint64_t ns = PT_WAIT_YIELD_NS;
    if (us >= 0) {
        ns = (uint64_t)us * 1000u;
    } else if (threads) {
        /* Oversubscribed (Open MPI's yield_when_idle): a thread that waits is
         * waiting for one that cannot run until it yields. */
        if (cpus && threads > cpus)
            ns = 0;
    }
    return ns;
}

/* A NIC thread's idle spin (PTL_NIC_SPIN_US) is what one core may spend on
 * nothing. When more ranks than cores share this host, their NIC threads'
 * spins take turns on the same cores, and each turn holds up the ranks that
 * have work: the host spends PTL_NIC_SPIN_US x cores between them, each NIC
 * thread's share the cores over the ranks. Not a host-mode waiter's spin
 * while its command is stalled on credits (also PTL_NIC_SPIN_US): there the
 * receiver, the bottleneck, would pay a wake-up for every sender that slept
 * sooner (host incast of 64 ranks: 2.3-3.2 M messages/s with its share,
 * 2.8-3.2 M without). 255 offload senders into one receiver on 2 cores
 * (mp_scale incast): 0.53 M messages/s at 50 us each, 1.33 M at 2, 1.52 M at
 * 0; 64 ranks 1.15 M at 50 us, 3.3 M at 2. With a few ranks over the cores
 * a spin still pays: 8 ranks' 8 B allreduce 83-105 us at 50 us, 103-149 at 0
 * (bench/RESULTS.md, forty-first session). */
static uint64_t spin_share(uint64_t spin_ns, uint64_t ranks_here, uint64_t cpus)
{
    return cpus && ranks_here > cpus ? spin_ns * cpus / ranks_here : spin_ns;
}

void pt_wait_init(struct pt_wait *w, struct pt_waitword *bell, bool nic_thread, bool yield,
                  uint64_t nic_spin_ns, uint64_t wait_spin_ns, uint32_t ranks_here)
{
    memset(w, 0, sizeof *w);
    w->bell = bell;
    w->nic_thread = nic_thread;
    w->yield = yield;
    w->cmd_inline = true; /* pt_wait_set_cmd_inline */
    w->nic_spin_ns = nic_spin_ns;
    uint64_t cpus = ranks_here ? job_cpus() : 0; /* once: a system call */
    w->nic_idle_ns = spin_share(nic_spin_ns, ranks_here, cpus);
    w->wait_spin_ns = wait_spin_ns;
    pt_waitword_init(&w->evw, false);
    w->ev = nic_thread ? &w->evw : bell;
    ST_RELAXED(&w->nic_state, nic_thread ? PT_NIC_IDLE : PT_NIC_STOP);
    ST_RELAXED(&w->backstop_ns, (uint64_t)pt_config()->wake_backstop_ms * 1000000u);
    w->xfd = -1;
    w->cfd = -1;
    w->efd = -1;
    w->rfd = -1;
    w->yield_ns = yield_ns_for(ranks_here, cpus);
    ST_RELAXED(&g_yield_ns, w->yield_ns);
    /* Leases need a NIC thread, and pay where each rank has a core: with more
     * ranks than cores (yield_ns 0) the NIC threads' timed wake-ups would
     * compete with every waiting rank for the cores. */
    w->lease_ns = nic_thread && w->yield_ns ? (uint64_t)pt_config()->wait_lease_us * 1000u : 0;
    w->lease_max_ns = (uint64_t)pt_config()->wait_lease_max_us * 1000u;
    if (w->lease_max_ns < w->lease_ns)
        w->lease_max_ns = w->lease_ns;
}

/* ---- NB: the NIC thread's scheduling class (wait.h; docs/waiting.md) -------- */

/* Per NI index, beside struct pt_wait (wait.h, cls_slot). Every field under
 * lock: taken by a sleeper before W3 and after it, by D6's ringer while the
 * NIC thread is urgent, and by the NIC thread once at its start. */
static struct nic_cls {
    pthread_mutex_t lock;
    uint32_t sleepers; /* API threads in W3                              */
    int tid;           /* the NIC thread's id; 0 before it runs          */
    int now;           /* the class last set; -1 none                    */
    bool refused;      /* a change failed: no more                       */
    uint32_t gen;      /* NIs of this index so far: a sleeper of an NI
                        * finalized (and made again) while it slept does
                        * not count out of its successor's sleepers     */
} g_cls[PT_MAX_NI];

static struct nic_cls *cls_of(const struct pt_wait *w) { return &g_cls[w->cls_slot]; }

/* Batch at once, and for good, where the job's ranks outnumber the cores
 * (yield_ns 0, pt_wait_init; the leases' condition): there a rank asleep in
 * a wait leaves its core to another rank of the job, which a normal NIC
 * thread's wake-ups would preempt (4 ranks on 2 cores, 8 B allreduce:
 * 15.0-17.7 us per call batch, 15.0-28.0 urgent). */
static bool cls_urgent_ok(const struct pt_wait *w) { return w->nic_batch && w->yield_ns; }

void pt_wait_set_batch(struct pt_wait *w, bool on, uint32_t slot)
{
    w->nic_batch = on && w->nic_thread && slot < PT_MAX_NI;
    if (!w->nic_batch)
        return;
    w->cls_slot = (uint8_t)slot;
    /* A new NI of this index (the last one's NIC thread was joined), or the
     * copy a fork left: fresh, the lock included. */
    pthread_mutex_init(&g_cls[slot].lock, NULL);
    g_cls[slot].sleepers = 0;
    g_cls[slot].tid = 0;
    g_cls[slot].now = -1;
    g_cls[slot].refused = false;
    if (++g_cls[slot].gen == 0)
        g_cls[slot].gen = 1; /* 0 is cls_asleep's "nothing" */
    ST_RELAXED(&w->cls_urgent, 0);
}

/* Under the lock: set the NIC thread's class if it differs (one system call).
 * A refusal (a seccomp filter, say) ends the changes: the NIC thread keeps
 * what it has. */
static void cls_set(struct pt_wait *w, int cls)
{
    struct nic_cls *c = cls_of(w);
    if (c->refused || !c->tid || cls == c->now)
        return;
    struct sched_param sp = {0};
    if (sched_setscheduler(c->tid, cls, &sp) == 0) {
        c->now = cls;
        ST_RELAXED(&w->cls_urgent, cls == SCHED_OTHER);
        return;
    }
    pt_log(PT_LOG_INFO, "NIC thread: cannot change its scheduling class (%s)", strerror(errno));
    c->refused = true;
    ST_RELAXED(&w->cls_urgent, 0);
}

/* An API thread about to sleep in W3: the NIC thread urgent. Returns what
 * cls_awake takes (0: nothing to undo). */
static uint32_t cls_asleep(struct pt_wait *w)
{
    if (!cls_urgent_ok(w))
        return 0;
    struct nic_cls *c = cls_of(w);
    pthread_mutex_lock(&c->lock);
    uint32_t gen = c->gen;
    c->sleepers++;
    cls_set(w, SCHED_OTHER);
    pthread_mutex_unlock(&c->lock);
    return gen;
}

/* ... and awake again: batch when no sleeper is left. */
static void cls_awake(struct pt_wait *w, uint32_t gen)
{
    if (!gen)
        return;
    struct nic_cls *c = cls_of(w);
    pthread_mutex_lock(&c->lock);
    if (gen == c->gen && c->sleepers) {
        c->sleepers--;
        cls_set(w, c->sleepers ? SCHED_OTHER : SCHED_BATCH);
    }
    pthread_mutex_unlock(&c->lock);
}

/* D6 rang the event sleepers while the NIC thread was urgent: batch again at
 * once (the sleeper woken wants the core; left urgent until it ran, the NIC
 * thread competed with it: 8 B offload message rate -3%). A sleeper that
 * D6's filter left asleep makes it urgent again at the next W3 or wake. */
void pt_wait_cls_calm(struct pt_wait *w)
{
    struct nic_cls *c = cls_of(w);
    pthread_mutex_lock(&c->lock);
    cls_set(w, SCHED_BATCH);
    pthread_mutex_unlock(&c->lock);
}

/* The NIC thread at its start: batch unless a waiter already sleeps. */
static void cls_start(struct pt_wait *w)
{
    if (!w->nic_batch)
        return;
    struct nic_cls *c = cls_of(w);
    pthread_mutex_lock(&c->lock);
    c->tid = (int)gettid();
    cls_set(w, c->sleepers ? SCHED_OTHER : SCHED_BATCH);
    pthread_mutex_unlock(&c->lock);
}

void pt_wait_set_crowded(struct pt_wait *w, bool crowded) { w->nic_crowded = crowded; }

void pt_wait_set_lease_poll(struct pt_wait *w, bool on) { w->lease_poll = on && w->lease_ns; }

void pt_wait_set_cmd_inline(struct pt_wait *w, bool on) { w->cmd_inline = on || !w->nic_thread; }

void pt_wait_set_af(struct pt_wait *w, bool on) { w->af = on && !w->nic_thread; }

int pt_wait_set_fd(struct pt_wait *w, int xfd, int cfd, int rfd)
{
    if (xfd < 0)
        return 0;
    int e = pt_fd_above_std(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (e < 0)
        return -errno;
    w->efd = e;
    w->xfd = xfd;
    w->cfd = cfd;
    w->rfd = rfd;
    /* No lease on a descriptor: its arrivals never ring (there is no ring
     * to save), and with leases a mixed job (shm peers on this host, ofi
     * beyond it) stalled: mp_netns_coll_large_offload, 2026-11-29, not yet
     * understood; docs/waiting.md "The poll lease". Its periods serve D5T
     * instead (a spinner beside the NIC thread: docs/waiting.md, "A spinner
     * on a descriptor"). */
    w->fd_spin_ns = w->lease_ns; /* lease_max_ns stays: D5T's longest period */
    w->lease_ns = 0;
    return 0;
}

void pt_wait_fini(struct pt_wait *w)
{
    if (w->efd >= 0)
        close(w->efd);
    w->efd = -1;
    w->xfd = -1;
    w->cfd = -1;
    w->rfd = -1; /* the transport's: it closes it */
}

/* ---- sleeping on a descriptor (docs/waiting.md) ----------------------------- */

static void efd_post(struct pt_wait *w)
{
    uint64_t one = 1;
    (void)!write(w->efd, &one, sizeof one);
}

void pt_wait_ring(struct pt_wait *w, struct pt_waitword *ww)
{
    pt_wake_all(ww); /* seq bump first: a sleeper that read seq before does not block */
    if (ww == w->bell && w->efd >= 0)
        efd_post(w);
}

/* The bell's wait when the transport has a descriptor: as pt_futex_wait (the
 * seq bump of a ring ends it), but asleep in poll() on the transport's
 * descriptor (arrivals; the caller's recheck ran the transport's trywait in
 * rx_pending), our eventfd (rings by this process: pt_wait_ring) and, where
 * the transport has one, its ring socket (rings by peers of this host:
 * transport/shm.c, ring_sock, after their seq bump, as efd_post after ours).
 * Both are drained before seq is looked at, so a ring after the look leaves
 * one readable.
 *
 * One poller at a time [P1]. A drained ring is gone for every other thread
 * that polls the same descriptors: a second poller that had read seq before
 * a ring, woken by it, finds nothing readable once the first has drained it,
 * and poll() puts it back to sleep (the kernel re-polls before it returns).
 * The first cannot tell whether to pass the ring on (it read seq after the
 * ring: for it nothing moved). Seen: host mode, two threads waiting in
 * PtlEQWait over ofi, the wake-up backstop off: HANG within 12 runs
 * (mp_netns_pat_here_threads2_eqwait_host, and the same over
 * PTL_TRANSPORT=ofi); the backstop had turned it into 100 ms stalls. So the
 * first sleeper takes the poller role (CAS 0 -> 1); the others sleep on the
 * futex, which compares seq in the kernel and loses nothing. The poller
 * leaving [P2] gives the role back (an RMW, a full fence) and, if other
 * sleepers are announced, bumps seq (pt_wake_all): one of them must take
 * the descriptors over, and whoever announced before its load of the role
 * read seq before that bump (its futex wait returns at once). Returns false
 * on timeout. */
static bool rfd_drain(int fd)
{
    char b[64];
    bool any = false;
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) > 0)
        any = true;
    return any;
}

static bool fd_poll(struct pt_wait *w, struct pt_waitword *ww, uint32_t seq, int64_t timeout_ns,
                    bool xport)
{
    uint64_t v;
    (void)!read(w->efd, &v, sizeof v);
    if (w->rfd >= 0)
        (void)rfd_drain(w->rfd);
    if (LD_ACQUIRE(&ww->seq) != seq)
        return true;
    /* !xport: the eventfd and ring socket alone (poll ignores a negative fd) */
    struct pollfd p[4] = {{.fd = xport ? w->xfd : -1, .events = POLLIN},
                          {.fd = xport ? w->cfd : -1, .events = POLLIN},
                          {.fd = w->efd, .events = POLLIN},
                          {.fd = w->rfd, .events = POLLIN}};
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    int n = ppoll(p, 4, tp, NULL);
    if (n != 0)
        return true; /* readable, or a signal: the caller rechecks either way */
    return LD_ACQUIRE(&ww->seq) != seq;
}

static bool fd_wait(struct pt_wait *w, struct pt_waitword *ww, uint32_t seq, int64_t timeout_ns,
                    bool xport)
{
    uint32_t free_ = 0;
    if (!RMW_CAS(&w->fd_poller, &free_, 1)) /* [P1] a full fence either way */
        return pt_futex_wait(ww, seq, timeout_ns);
    bool r = fd_poll(w, ww, seq, timeout_ns, xport);
    RMW_XCHG(&w->fd_poller, 0); /* [P2] a full fence before the load of sleepers */
    if (LD_RELAXED(&ww->sleepers) > 1)
        pt_wake_all(ww);
    return r;
}

/* Every engine sleeper's wait on the bell (the event sleepers' own word is
 * a plain futex). */
static bool bell_wait(struct pt_wait *w, struct pt_waitword *ww, uint32_t seq, int64_t timeout_ns)
{
    if (ww == w->bell && w->xfd >= 0)
        return fd_wait(w, ww, seq, timeout_ns, true);
    return pt_futex_wait(ww, seq, timeout_ns);
}

/* [S3b] The NIC thread's wait while another thread holds the engine (the
 * transport has a descriptor): the eventfd alone. The holder reads the CQ,
 * whose descriptor stays readable until a successful fi_trywait, which only
 * a thread that runs the engine next may call: polling it now would return
 * at once, again and again. The holder hands the descriptor back when it
 * leaves (D5 in kick). Returns false on timeout. */
static bool bell_wait_fdless(struct pt_wait *w, uint32_t seq, int64_t timeout_ns)
{
    return fd_wait(w, w->bell, seq, timeout_ns, false);
}

/* ---- the hostile-peer backstop (wait.h; not part of the protocol) ---------- */

/* Before an engine sleeper sleeps: a bell->polled above our own pollers'
 * count was written by another process; put it right, or peers keep
 * skipping the ring. Only a CAS from the value seen: a waiter's own RMW in
 * between wins, and we look again next time. */
static void repair_bell(struct pt_wait *w)
{
    uint32_t seen = LD_RELAXED(&w->bell->polled), mine = LD_RELAXED(&w->polled_mine);
    if (PT_LIKELY(seen <= mine))
        return;
    if (RMW_CAS(&w->bell->polled, &seen, mine)) {
        RMW_ADD(&w->st.bell_repairs, 1);
        pt_log_once(PT_LOG_WARN, "doorbell word `polled` read %u with %u waiters polling: "
                                 "written by another process of the job; put right",
                    seen, mine);
    }
}

/* An engine sleeper's bounded sleep: the backstop (0: none). */
static int64_t backstop(const struct pt_wait *w)
{
    uint64_t b = LD_RELAXED(&w->backstop_ns);
    return b ? (int64_t)b : -1;
}

/* After a sleep that ended by the backstop: work that nobody rang for means
 * a forged bell (the protocol itself never leaves work unannounced). */
/* Work that nobody announced to a sleeper: the engine free, none of our API
 * threads polling (they take the engine at their next try; peers rightly
 * skip the ring for them), and work pending. */
static bool unannounced_work(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    return LD_RELAXED(&w->token) == 0 && LD_RELAXED(&w->polled_mine) == 0 &&
           pt_nic_has_work(nic);
}

/* Rank r's process, its threads but this one: 1 one runnable, 0 none, -1
 * gone or unreadable (pt_proc_thread_runnable). */
static int rank_state(struct pt_nic *nic, uint32_t r, pid_t self, pid_t me)
{
    pid_t p = nic->xo->peer_ospid(nic->x, r);
    return p > 0 ? pt_proc_thread_runnable(p, p == self ? me : 0) : -1;
}

static bool rank_runnable(struct pt_nic *nic, uint32_t r, pid_t self, pid_t me)
{
    return rank_state(nic, r, self, me) == 1;
}

/* After two backstop periods with work still unannounced: may its producer
 * still be on its way to the ring? A thread preempted between its publish
 * and its ring is runnable (state R); on 2 cores with 256 ranks it can stay
 * so for seconds. A producer that finished its steps without ringing has
 * gone on: to sleep (a waiter, most often), or to other work. So a runnable
 * producer proves nothing either way; a sleeping one convicts. Local work
 * comes from another thread of this process, arrivals from the ranks the
 * transport names, departures from the launcher or our own watch thread.
 * Cold path: reads /proc (util/proc.h). */
static bool producer_may_be_late(struct pt_nic *nic)
{
    pid_t self = getpid(), me = pt_proc_tid();
    bool local = pt_nic_local_work(nic);
    if (local && pt_proc_thread_runnable(self, me) == 1)
        return true;
    /* Work that was stalled on credits is rung for by the peer that freed the
     * room (C-RECHECK: it clears our mark, then R-RING in rx_done), which
     * need not have an arrival pending with us: one preempted between the
     * two read as a lost wake-up (three ranks of mp_coll_lists_offload at
     * once, perturbation build, 2026-12-01, after the departure fix below).
     * The marks do not name that peer, so any runnable rank of the job may be
     * it (a diagnosis only: late or missed, the caller does the work). */
    if (local && pt_nic_credit_stalled(nic))
        for (uint32_t r = 0; r < nic->xi.nranks; r++)
            if (rank_runnable(nic, r, self, me))
                return true;
    /* A departure is counted and rung for by no rank: by the launcher that
     * reaped the rank (ptlrun: shm_launch.c) or by our own region watch (a
     * PMIx job: shm_watch.c). Not judged by them, a ptlrun
     * preempted between its count and its ring read as a lost wake-up
     * (mp_coll_lists_offload in the perturbation build, 2026-12-01;
     * PTL_DEPART_RING_MS makes that window, mp_departed_latering_*). */
    if (nic->xo->departures(nic->x) != LD_RELAXED(&nic->departed_seen)) {
        pid_t launcher = pt_launcher_pid();
        if (pt_proc_thread_runnable(self, me) == 1 ||
            (launcher > 0 && pt_proc_thread_runnable(launcher, 0) == 1))
            return true;
    }
    if (!nic->xo->rx_pending_from)
        return false;
    uint32_t peers[PT_WAIT_LATE_PEERS]; /* none when nothing is pending */
    uint32_t n = nic->xo->rx_pending_from(nic->x, peers, PT_WAIT_LATE_PEERS);
    for (uint32_t i = 0; i < n; i++)
        if (rank_runnable(nic, peers[i], self, me))
            return true;
    return false;
}

static __thread bool tls_nic_thread;        /* set by pt_wait_nic_thread  */
static __thread const char *tls_s2_why = "?"; /* the NIC thread's last S2: why it slept */

/* For the verdict's message: what was pending, and the state of each rank
 * it could have come from (R runnable, S asleep, ? gone or unreadable), so
 * that a report says which producer did not ring. Cold path. */
static void describe_pending(struct pt_nic *nic, const char *seen, char *buf, size_t len)
{
    struct pt_wait *w = &nic->w;
    size_t o = 0;
#define PUT(...)                                                        \
    do {                                                                \
        if (o < len) {                                                  \
            int k_ = snprintf(buf + o, len - o, __VA_ARGS__);           \
            o += k_ > 0 ? (size_t)k_ : 0;                               \
        }                                                               \
    } while (0)
    pid_t self = getpid(), me = pt_proc_tid();
    char lw[200];
    pt_nic_local_work_describe(nic, lw, sizeof lw);
    PUT("at the check: %s; now: ", seen);
    if (nic->xo->rx_describe) {
        char rx[160];
        nic->xo->rx_describe(nic->x, rx, sizeof rx);
        PUT("arrivals pending %d (%s), ", (int)nic->xo->rx_pending(nic->x), rx);
    }
    PUT("local work %d (credit-stalled %d: %s), departures %u seen %u",
        (int)pt_nic_local_work(nic), (int)pt_nic_credit_stalled(nic), lw,
        (unsigned)nic->xo->departures(nic->x), (unsigned)LD_RELAXED(&nic->departed_seen));
    if (nic->xo->rx_pending_from) {
        uint32_t peers[PT_WAIT_LATE_PEERS];
        uint32_t n = nic->xo->rx_pending_from(nic->x, peers, PT_WAIT_LATE_PEERS);
        PUT(", arrivals from %u rank(s):", n);
        for (uint32_t i = 0; i < n; i++) {
            int st = rank_state(nic, peers[i], self, me);
            PUT(" %u%s", peers[i], st == 1 ? "(R)" : st == 0 ? "(S)" : "(?)");
        }
    }
    PUT("; bell sleepers %u polled %u (ours %u), token %u",
        (unsigned)LD_RELAXED(&w->bell->sleepers), (unsigned)LD_RELAXED(&w->bell->polled),
        (unsigned)LD_RELAXED(&w->polled_mine), (unsigned)LD_RELAXED(&w->token));
#undef PUT
}

/* Has anyone held the engine since `holds` was read, or holds it now? */
static bool engine_ran(struct pt_wait *w, uint32_t holds)
{
    return LD_RELAXED(&w->holds) != holds || LD_RELAXED(&w->token) != 0;
}

/* After a sleep that the backstop ended, still announced (sleepers counts
 * us): work nobody rang for may be a producer between its publish and its
 * ring (preempted there on a loaded machine), so it gets one more backstop
 * period, on the same seq, to ring. Work still there with no ring: if a
 * producer may still be on its way (producer_may_be_late), the caller does
 * the work (counted as late, no verdict); else it is a forged bell (the
 * protocol never leaves work unannounced): count it, log once, repair, and
 * sleep at most 1 ms from then on. Returns true when the caller should go
 * to work (late or missed), false if rung meanwhile or nothing is pending
 * (the caller decides). *rung_p: a ring came during the extra period. */
static bool check_missed(struct pt_nic *nic, struct pt_waitword *ww, uint32_t seq, bool *rung_p)
{
    struct pt_wait *w = &nic->w;
    *rung_p = false;
    uint32_t holds = LD_RELAXED(&w->holds); /* before the first look */
    /* A request parked for a match becomes work when its wait ends, and
     * nobody rings for that (the park rule): the caller runs the engine,
     * which drops it; no verdict while one is parked (its end can fall
     * between our looks: mp_nomatch_offload under ctest -j2). */
    if (PT_UNLIKELY(pt_nic_park_left_ns(nic) >= 0))
        return unannounced_work(nic);
    if (!unannounced_work(nic))
        return false;
    if (bell_wait(w, ww, seq, backstop(w))) {
        *rung_p = true; /* the ringer was on its way */
        return false;
    }
    if (!unannounced_work(nic))
        return false;
    /* Which source it was, read again at once (the verdict's first words:
     * what follows is read later, after /proc, and may have moved). */
    char seen[320], lw[200];
    pt_nic_local_work_describe(nic, lw, sizeof lw);
    snprintf(seen, sizeof seen, "arrivals %d, local %d (%s), departures %d, want %u, slept %s",
             (int)nic->xo->rx_pending(nic->x), (int)pt_nic_local_work(nic), lw,
             (int)(nic->xo->departures(nic->x) != LD_RELAXED(&nic->departed_seen)),
             (unsigned)LD_RELAXED(&w->want), tls_nic_thread ? tls_s2_why : "as a waiter");
    /* Pending at both looks, but the same work only if nobody ran the engine
     * in between, nor after the second look while we read /proc: each
     * holder's release looks for a sleeper's work (D3), so work that
     * outlived a hold was rung for, and work seen after one may be new, its
     * producer between its publish and its ring or its own take (D2). A
     * command committed and run by its poster while we judged looked
     * unannounced and then gone (mp_coll_lists_offload's reports in the
     * perturbation stage: 'commands queued 1', token 1, no producer runnable
     * by then; 2026-12-01). Late, then, not missed. */
    if (engine_ran(w, holds) || producer_may_be_late(nic) || engine_ran(w, holds)) {
        RMW_ADD(&w->st.late_wakes, 1);
        PT_TRACE_WAIT(nic, PT_TR_LATE, seq);
        return true;
    }
    RMW_ADD(&w->st.missed_wakes, 1);
    PT_TRACE_WAIT(nic, PT_TR_MISSED, seq);
    if (LD_RELAXED(&w->backstop_ns) > 1000000u)
        ST_RELAXED(&w->backstop_ns, 1000000u);
    char what[1024];
    describe_pending(nic, seen, what, sizeof what);
    pt_log_once(PT_LOG_WARN, "a wake-up did not come: work was pending for two %lld ms "
                             "backstop periods without a ring, and no thread that could "
                             "still ring was running (a process of the job wrote this "
                             "rank's doorbell); sleeping at most 1 ms from now on [%s%s]",
                (long long)pt_config()->wake_backstop_ms, what,
                tls_nic_thread ? ", NIC thread" : ", API thread");
    repair_bell(w);
    return true;
}

const char *pt_nic_state_name(uint32_t s)
{
    static const char *const names[] = {"RUN", "IDLE", "ARM", "SLEEP", "STOP"};
    return s < sizeof names / sizeof names[0] ? names[s] : "?";
}

static inline void set_state(struct pt_wait *w, enum pt_nic_state s)
{
    ST_RELAXED(&w->nic_state, (uint32_t)s);
}


/* The predicate of D3/D4, after the caller's full fence: an engine sleeper
 * is asleep (or arming) and nobody holds the engine. kick then asks whether
 * work waits (pt_nic_has_work). */
static inline bool sleeper_left(struct pt_wait *w)
{
    /* acquire: a sleepers++ of the NIC thread's S2 seen here brings its F1
     * mark (stored before that RMW) with it, for D5's load after ours */
    return LD_ACQUIRE(&w->bell->sleepers) && LD_RELAXED(&w->token) == 0;
}

/* How long a request parked for a match bounds an engine sleeper's sleep,
 * in ns; -1: not at all (nothing parked, or its wait is over while another
 * holds the engine: that holder's release finds the request as work, D3).
 * The NIC thread's S3 and a host-mode waiter's W3 (the park rule). */
static int64_t park_bound_ns(struct pt_nic *nic, bool held)
{
    int64_t pl = pt_nic_park_left_ns(nic);
    return pl == 0 && held ? -1 : pl;
}

/* PK: no work for a sleeper, but a request parked for a match (the park
 * rule: no work until its wait ends). An engine sleeper that went to sleep
 * before the park existed sleeps without its bound, and nobody rings for
 * the wait's end: the drop, and every message of that sender behind it,
 * waited for the backstop (an adversarial client: 100 ms per unmatched put
 * where PTL_NOMATCH_WAIT_US is 20; mp_nomatch_rounds). Ring the sleepers once
 * per park: each wakes, finds no work (S2, W2), and sleeps again no longer
 * than the park (pt_nic_park_left_ns). A sleeper that announces after our
 * fence reads the park itself (the park's stores come before the holder's
 * release and D3's fence; the sleeper's fence before its read). */
static void park_kick(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    if (PT_LIKELY(pt_nic_park_left_ns(nic) < 0))
        return;
    uint64_t pu = pt_nic_park_until(nic);
    if (LD_RELAXED(&w->park_rung) == pu)
        return;
    ST_RELAXED(&w->park_rung, pu);
    RMW_ADD(&w->st.kicks_rung, 1);
    PT_TRACE_WAIT(nic, PT_TR_KICK, 4);
    pt_wait_ring(w, w->bell);
}

/* D3/D4 action, after the fence: drain the work ourselves (a few bounded
 * rounds; each ends with a release and the same check), else ring. Draining
 * spares a sleeping NIC thread a wake-up that on a shared core costs the
 * application a context switch per wait. */
static void kick(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    for (int round = 0;; round++) {
        if (!sleeper_left(w))
            return;
        uint32_t f = w->xfd >= 0 ? LD_RELAXED(&w->fdless) : 0;
        if (f) {
            /* D5: the NIC thread sleeps on the eventfd alone (F1: it found
             * the engine held) and would see neither the descriptor nor the
             * work we could look for: ring it, it comes back to S2, runs its
             * own fi_trywait and polls the descriptor, or finds the work.
             * Asleep on the descriptor, it keeps its mark too: rung once, it
             * rechecks at S2 as well, and we spare ourselves the look.
             * Whether work waits changes nothing here, so the releaser does
             * not look (rx_pending's fi_trywait armed the CQ's wait object,
             * and every later completion then wrote its signal: two system
             * calls each, on the application's path). Once per such sleep:
             * a bell whose seq moved since the mark's was rung after the
             * NIC thread's look, and its wait returns (fd_poll compares
             * seq after its drain). The releaser that left the application
             * to poll would otherwise ring at every release, PtlPut's and
             * the wait's, while the NIC thread waits for the core
             * (docs/waiting.md, "The CQ belongs to the engine holder"). */
            if (PT_FDLESS(LD_RELAXED(&w->bell->seq)) == (f & ~PT_FDLESS_TIMED)) {
                if (f & PT_FDLESS_TIMED) {
                    /* D5T: a sleep beside a spinner ends by its timeout,
                     * and the spinner reads the CQ meanwhile: no ring. */
                    RMW_ADD(&w->st.fd_handovers_timed, 1);
                    return;
                }
                RMW_ADD(&w->st.fd_handovers, 1);
                PT_TRACE_WAIT(nic, PT_TR_KICK, 2);
                pt_wait_ring(w, w->bell);
            } else {
                RMW_ADD(&w->st.fd_handovers_owed, 1);
            }
            return;
        }
        /* KL: a lease out (read after the caller's D3/D4 fence): inbound
         * work waits for its end, as every arrival while a lease is out
         * does (peers do not ring; docs/waiting.md, "The poll lease"): the
         * next waiter adopts it and polls, or the NIC thread, asleep with a
         * timeout while a lease is out (T1), ends it (L2) and looks (S2).
         * Only local work (commands, transfers) is ours to hand over. The
         * look at every sender's rings and lanes cost an offload waiter
         * ~300 instructions at each leave, on the path to its event
         * (callgrind, 8 B ping-pong; model/wait.pml kick, MUT_KL). */
        if (LD_RELAXED(&w->lease) ? !pt_nic_local_work(nic) : !pt_nic_has_work(nic)) {
            park_kick(nic);
            return;
        }
        if (round == PT_WAIT_KICK_ROUNDS || !pt_wait_try_take(w)) {
            /* Not taken: whoever took it releases through D3 in turn. Ringing
             * anyway costs a spurious wake at most. */
            RMW_ADD(&w->st.kicks_rung, 1);
            PT_TRACE_WAIT(nic, PT_TR_KICK, 1);
            pt_wait_ring(w, w->bell);
            return;
        }
        RMW_ADD(&w->st.kicks_drained, 1);
        pt_nic_drain(nic, PT_WAIT_KICK_POLLS);
        PT_PERTURB();
        pt_wait_give_d3(w); /* D3: the release before the next check (SO: none) */
    }
}

void pt_wait_release(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    PT_PERTURB();
    pt_wait_give_d3(w); /* R-TOK, D3 (a solo holder: none, SO) */
    PT_PERTURB();
    if (PT_UNLIKELY(LD_RELAXED(&w->bell->sleepers)))
        kick(nic);
}

/* ---- running the engine from API threads ---------------------------------- */

/* Poll until quiet (bounded), so that leaving does not find work it must
 * hand to a sleeper. A poll that did at most one thing (typically: sent our
 * message) has nothing to follow up; a loopback send is received in the same
 * poll (commands first, then the transport) and makes two. */
static void poll_quiet(struct pt_nic *nic)
{
    for (int i = 0; i < PT_WAIT_QUIET_POLLS && pt_nic_poll_once(nic) > 1; i++)
        ;
}

void pt_wait_progress(struct pt_nic *nic)
{
    if (pt_wait_try_take(&nic->w)) { /* D2: the caller's commit and fence came first */
        poll_quiet(nic);
        pt_wait_release(nic);
    }
}

void pt_wait_cmd_done(struct pt_nic *nic)
{
    if (pt_nic_poll_after(nic) > 1)
        poll_quiet(nic);
    pt_wait_release(nic);
}

void pt_wait_progress_cmd(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    if (!w->cmd_inline) {
        /* NI (a core of its own): the NIC thread sends it. D2 came first:
         * a NIC thread that announced its sleep before our commit is rung
         * here; one that announces later finds the command at S2's recheck;
         * a holder finds it at its next poll or its release (D3). */
        if (sleeper_left(w)) {
            RMW_ADD(&w->st.kicks_rung, 1);
            PT_TRACE_WAIT(nic, PT_TR_KICK, 3);
            pt_wait_ring(w, w->bell);
        }
        return;
    }
    if (pt_wait_try_take(w)) { /* D2: the caller's commit and fence came first */
        if (pt_nic_poll_send(nic) > 1)
            poll_quiet(nic);
        pt_wait_release(nic);
    }
}

void pt_wait_progress_host(struct pt_nic *nic, bool (*mine_pending)(void *), void *arg)
{
    for (int i = 0;; i++) {
        if (pt_wait_try_take(&nic->w)) {
            poll_quiet(nic);
            pt_wait_release(nic);
            return;
        }
        /* The holder polls every ring; once ours was taken we are done. */
        if (!mine_pending(arg))
            return;
        if (i > PT_HOST_SPIN_YIELD)
            sched_yield();
        else
            CPU_RELAX();
    }
}


bool pt_wait_on_nic_thread(void) { return tls_nic_thread; }

bool pt_wait_patience(uint64_t *since, uint64_t limit_ns)
{
    uint64_t now = pt_now_ns();
    if (!*since) {
        *since = now;
    } else if (now - *since >= limit_ns) {
        *since = 0;
        return true;
    }
    if (tls_nic_thread)
        sched_yield();
    return false;
}

static __thread uint32_t tls_empty_polls;   /* consecutive empty polls      */
static __thread uint64_t tls_empty_since;   /* clock at the first of them    */
static __thread uint64_t tls_nap_at;        /* clock at the last nap         */

/* A client that spins on PtlEQGet (or PtlEQPoll with timeout 0) yields the
 * core once it has found nothing for the yield time. A yield is not enough
 * when it spins long: sched_yield lets the threads of its own scheduling
 * group run (its session's autogroup), not another process's, and a
 * process that shares the core can then stay runnable but unscheduled for
 * seconds. Seen on this VM's kernel (6.18, EEVDF): two ranks on one core
 * (Open MPI bound both "hosts'" rank to core 0 in the two-namespace test),
 * the spinner of one ran while every thread of the other stayed R with its
 * run time frozen (/proc/<pid>/task/<tid>/schedstat) for 5 to 40 s. So once
 * the spinner has looked for PT_WAIT_NAP_NS in vain it naps, a real sleep
 * that takes it off the run queue, once per PT_WAIT_NAP_NS: a message that
 * arrives during the nap waits for its end (about 55 us), at most once per
 * millisecond of idle spinning.
 * Before it naps, the spinner also reads the transport's slow sources
 * (rx_pending: over ofi the liveness probe's timer, the launcher's notice of
 * a death, a peer's exit), which otherwise only a thread about to sleep
 * reads: in host mode a rank whose only waits were PtlEQGet spins never
 * learned that a peer had died (mp_liveness killspin), and spun for ever. */
void pt_wait_polled_empty(struct pt_nic *nic, bool empty)
{
    if (!empty) {
        tls_empty_polls = 0;
        return;
    }
    uint32_t n = tls_empty_polls++;
    if (n == 0) {
        tls_empty_since = pt_now_ns();
        return;
    }
    if (n % PT_WAIT_CLOCK_EVERY)
        return;
    uint64_t now = pt_now_ns();
    if (now - tls_empty_since < LD_RELAXED(&g_yield_ns))
        return;
    if (now - tls_empty_since >= PT_WAIT_NAP_NS && now - tls_nap_at >= PT_WAIT_NAP_NS) {
        tls_nap_at = now;
        (void)nic->xo->rx_pending(nic->x); /* for its side effects: the engine's next pass acts */
        struct timespec ts = {0, PT_WAIT_NAP_SLEEP_NS};
        nanosleep(&ts, NULL);
        return;
    }
    /* SY: a yield serves a thread of ours that needs this core: our NIC
     * thread while it is awake (offload; a batch thread never preempts the
     * spinner, and it may hold the engine), another API thread, or a rank
     * of the job where ranks outnumber the cores (yield_ns 0). A rank of
     * one API thread within its cores whose NIC thread sleeps, or that has
     * none (host mode), has none of these: the spinner runs the engine
     * itself at every look, and beside another program's busy loop a yield
     * only hands that loop the core for a whole slice (EEVDF) while the
     * peer's message waits (8 B ping-pong spinning on PtlEQGet beside two
     * loops, host matching: 2.2-13.4 us mean before, 0.70-1.60 after;
     * bench/RESULTS.md, sixty-sixth session). A NIC thread woken but not
     * yet run still reads SLEEP: it runs at the tick, its work done by the
     * spinner's looks meanwhile. The nap above still takes the spinner off
     * the run queue. */
    if (pt_wait_yield_serves(nic->w.nic_thread, LD_RELAXED(&nic->w.nic_state),
                             LD_RELAXED(&g_yield_ns), pt_life_threads()))
        sched_yield();
}

bool pt_wait_yield_serves(bool nic_thread, uint32_t nic_state, uint64_t yield_ns,
                          uint32_t api_threads)
{
    return yield_ns == 0 || api_threads > 1 || (nic_thread && nic_state < PT_NIC_SLEEP);
}

/* ---- the poll lease (L1, L2, T1; docs/waiting.md "The poll lease") --------- */

/* The next timed sleep of T1 and of D5T: twice the last, at most lease_max_ns
 * (each timed wake takes the core of a spinner that shares it). */
static inline uint64_t period_doubled(const struct pt_wait *w, uint64_t period)
{
    return period * 2 < w->lease_max_ns ? period * 2 : w->lease_max_ns;
}

/* The lease's count down, by whoever ended it (L2): as D4, a full fence
 * (bell first, then polled_mine: polled_mine >= the legitimate bell). */
static void lease_count_down(struct pt_wait *w)
{
    RMW_SUB(&w->bell->polled, 1); /* peers ring again from here */
    RMW_SUB(&w->polled_mine, 1);
}

/* L2 by the NIC thread, after a timed sleep [T1]: a lease it saw at the
 * last timed wake-up too (same stamp) has outlived a period; take it and its
 * count in bell.polled down, as D4 would. The caller rechecks at S2. */
static bool lease_expire(struct pt_nic *nic, uint32_t *seen)
{
    struct pt_wait *w = &nic->w;
    uint32_t v = LD_RELAXED(&w->lease);
    if (!v || v != *seen) {
        *seen = v; /* none, or younger than a period */
        return false;
    }
    *seen = 0;
    if (!RMW_CAS(&w->lease, &v, 0))
        return false; /* a waiter adopted it meanwhile */
    lease_count_down(w);
    RMW_ADD(&w->st.leases_ended, 1);
    PT_TRACE_WAIT(nic, PT_TR_LEASE_TAKEN, 2);
    return true;
}

/* T1's hint: have waiters left leases since the last look? (A client that
 * waits and comes back, or spins on PtlEQGet: pt_wait_look.) */
static bool leases_moved(struct pt_wait *w, uint64_t *seen)
{
    uint64_t n = LD_RELAXED(&w->st.leases_left);
    bool moved = n != *seen;
    *seen = n;
    return moved;
}

/* L2: take the lease out, whatever its stamp; its count in bell.polled is
 * then the caller's. false: none out. */
static bool lease_take(struct pt_wait *w)
{
    uint32_t v = LD_RELAXED(&w->lease);
    return v && RMW_CAS(&w->lease, &v, 0);
}

/* L2 by a waiter entering W1: adopt the lease (it lowers the count with D4,
 * or leaves it as the next lease). false: none out. */
static bool lease_adopt(struct pt_nic *nic)
{
    if (!lease_take(&nic->w))
        return false;
    PT_TRACE_WAIT(nic, PT_TR_LEASE_TAKEN, 1);
    return true;
}

/* L1: a waiter leaves with what it waited for and offers its count in
 * bell.polled as the lease. true: the count is the lease's now (or, taken
 * back too late, whoever adopted or ended it holds it); false: it is still
 * the caller's to lower (D4): a lease is out already, or the NIC thread may
 * be asleep without a timeout (T1), and nobody would end this one. */
static bool lease_leave(struct pt_nic *nic)
{
    /* changes at every lease this thread leaves; threads start apart (LP
     * takes an unchanged stamp for an application that went away) */
    static __thread uint32_t stamp;
    struct pt_wait *w = &nic->w;
    uint32_t z = 0;
    if (PT_UNLIKELY(!stamp))
        stamp = (uint32_t)pt_proc_tid() * 2654435761u; /* once: a system call */
    stamp += 2;
    if (LD_RELAXED(&w->lease) || !RMW_CAS(&w->lease, &z, stamp | 1)) /* L1: full fence */
        return false;
    PT_PERTURB();
    if (LD_RELAXED(&w->untimed)) { /* L1: pairs with T1 (the store before S2's fence) */
        uint32_t v = stamp | 1;
        if (RMW_CAS(&w->lease, &v, 0)) {
            ST_RELAXED(&w->lease_wanted, 1); /* a hint for T1: time your sleeps */
            return false;
        }
    }
    ST_RELAXED(&w->st.leases_left, LD_RELAXED(&w->st.leases_left) + 1); /* a hint */
    PT_TRACE_WAIT(nic, PT_TR_LEASE_LEFT, 1);
    return true;
}

/* LP (a core of our own, w->lease_poll): while a lease is out nobody rings
 * us and the application may be computing for a long time, so the work that
 * arrives meanwhile (a collective's next step, a get to answer) would wait
 * for the lease's end: poll it instead (S1 again, no announcement). Not a
 * lease younger than one period (lease_ns): a client in a loop of short
 * waits leaves a new one every few microseconds, and a NIC thread that took
 * the engine at each would hand it back at the client's next wait (polling
 * at once: 8-rank barrier on 16 cores 5 -> 7.5-12.5 us; after a quarter
 * period: 8 B rate 3.0-5.0 -> 2.8-4.0 M/s, 8-rank barrier 3.3-4.5 ->
 * 4.4-5.4 us); S2 sleeps one period (T1) instead, without doubling.
 * A lease seen unchanged for lease_max_ns is ended here (L2, as
 * lease_expire), and S2 follows as after a timed wake. Staying awake is
 * always safe for the protocol (model/wait.pml, POLLEASE). */
struct lp_watch {
    uint32_t stamp; /* the lease last seen (0: none) */
    uint64_t since; /* when it was first seen        */
    bool polling;   /* counted in nic_lease_polls    */
};

static bool lease_polling(struct pt_nic *nic, struct lp_watch *lp)
{
    struct pt_wait *w = &nic->w;
    uint32_t v = LD_RELAXED(&w->lease);
    if (!v) {
        lp->stamp = 0;
        return false;
    }
    uint64_t now = pt_now_ns();
    if (v != lp->stamp) { /* a new lease: the client may be back soon */
        lp->stamp = v;
        lp->since = now;
        lp->polling = false;
        return false; /* S2 sleeps a period (T1) */
    }
    uint64_t age = now - lp->since;
    if (age < w->lease_ns)
        return false;
    if (age < w->lease_max_ns) {
        if (!lp->polling) {
            lp->polling = true;
            ST_RELAXED(&w->st.nic_lease_polls, LD_RELAXED(&w->st.nic_lease_polls) + 1); /* ours */
        }
        return true;
    }
    lp->stamp = 0;
    if (RMW_CAS(&w->lease, &v, 0)) { /* L2 */
        lease_count_down(w);
        RMW_ADD(&w->st.leases_ended, 1);
        PT_TRACE_WAIT(nic, PT_TR_LEASE_TAKEN, 3);
    }
    return false;
}

/* LP's sleep on: true while the client is active (a lease renewed since the
 * last look, or none out and leases moving); false for a lease unchanged
 * since the last look (lease_polling then polls for it: seen a period ago)
 * or none and quiet. */
static bool lp_renewed(struct pt_wait *w, struct lp_watch *lp, uint64_t *left_seen)
{
    uint32_t v = LD_RELAXED(&w->lease);
    bool moved = leases_moved(w, left_seen);
    if (v && v == lp->stamp)
        return false;
    if (v) {
        lp->stamp = v;
        lp->since = pt_now_ns();
        lp->polling = false;
        return true;
    }
    return moved;
}

/* ---- the NIC thread --------------------------------------------------------- */

/* How long RUN polls idle before it gives up the engine: PTL_NIC_SPIN_US;
 * but while an API thread of ours sleeps in a wait (it spun its
 * PTL_WAIT_SPIN_US and nothing came) and nobody has rung the event sleepers
 * since this RUN began (seq0), as long as that thread would have spun,
 * PTL_WAIT_SPIN_US: the core is idle then, and a message that comes finds a
 * polling engine instead of a sleeping NIC thread to wake (1 MiB offload
 * PtlGet against a target asleep in PtlEQWait: 82-110 -> 70-73 us; docs/
 * waiting.md, "The NIC thread"). Once a ring went out, a woken waiter may
 * want this core: without the seq test it waited up to the whole 1 ms for
 * it (8 B ping-pongs whose waiters sleep: single iterations of 1.1-1.5 ms).
 * Not when the job has more ranks than cores (yield_ns 0): there a spinning
 * thread takes the core from another rank. Nor when another NIC thread
 * shares this core (nic_crowded: PTL_NIC_CPU=1 for two ranks): each one's
 * 1 ms turn held the other's work up, a copy-mode 8 MiB put 0.94 -> 12.7 ms
 * (bench/RESULTS.md, thirty-seventh session). */
static bool nic_may_spin_long(const struct pt_wait *w)
{
    return w->yield_ns && !w->nic_crowded && w->wait_spin_ns > w->nic_idle_ns;
}

static uint64_t nic_spin(struct pt_wait *w, uint32_t seq0)
{
    if (nic_may_spin_long(w) && LD_RELAXED(&w->ev->sleepers) &&
        LD_RELAXED(&w->ev->seq) == seq0)
        return w->wait_spin_ns;
    return w->nic_idle_ns;
}

/* RUN: hold the token and poll until idle for nic_spin() ns, stopped, or
 * (yield) an API thread wants the engine. */
static void nic_run(struct pt_nic *nic)
{
    struct pt_wait *w = &nic->w;
    set_state(w, PT_NIC_RUN);
    uint64_t idle_since = 0;
    uint32_t seq0 = LD_RELAXED(&w->ev->seq); /* nic_spin: no ring since */
    for (;;) {
        int n = pt_nic_poll_once(nic);
        if (LD_RELAXED(&w->stop))
            break;
        /* An API thread waits: let it run the engine itself, busy or not
         * (beside a busy NIC thread on a shared core it would only spin). */
        if (w->yield && LD_RELAXED(&w->want))
            break;
        if (n) {
            idle_since = 0;
            continue;
        }
        uint64_t now = pt_now_ns();
        if (!idle_since)
            idle_since = now;
        else if (now - idle_since >= nic_spin(w, seq0))
            break;
        /* Not sched_yield when ranks outnumber cores: with S2W it took a
         * 1 MiB allreduce of 8 ranks on 2 cores from 17-20 to 6 ms, but the
         * 256-rank incast from a median of 246 k to 69-112 k messages/s (the
         * hot receiver's NIC thread gave its core to senders between
         * bursts), also when it yielded only after 20 us idle
         * (docs/waiting.md, "The NIC thread"). */
        CPU_RELAX();
    }
    /* Plain R-TOK: the only engine sleeper of an offload NI is this thread,
     * so D3's check would find nobody; S2 below rechecks for ourselves. */
    pt_wait_give(w);
}

void *pt_wait_nic_thread(void *arg)
{
    struct pt_nic *nic = arg;
    struct pt_wait *w = &nic->w;
    struct pt_waitword *b = w->bell;
    pt_nic_thread_start(nic); /* pinning */
    cls_start(w);              /* NB */
    tls_nic_thread = true;
    bool handed = false; /* woken from [S3b] or by T1's timeout: straight to [S2] */
    uint32_t seen = 0;   /* the lease at the last timed wake-up (lease_expire) */
    uint32_t active = PT_WAIT_LEASE_ACTIVE; /* timed sleeps left (T1)            */
    uint64_t fd_period = w->fd_spin_ns; /* D5T: the next timed sleep's length      */
    uint64_t left_seen = 0;  /* st.leases_left at the last look (T1)             */
    struct lp_watch lp = {0, 0, false}; /* LP                                           */
    while (!LD_ACQUIRE(&w->stop)) {
        /* [S1] take the engine if free and run it. Not after [S3b]: that
         * wake is (mostly) the hand-over of the descriptor (D5), for which
         * S2's recheck is enough; running the engine for PTL_NIC_SPIN_US
         * would take the core from the application thread that just left
         * it (S2 comes back here if it finds work). */
        if (!handed && pt_wait_try_take(w))
            nic_run(nic);
        handed = false;
        set_state(w, PT_NIC_IDLE);
        if (LD_RELAXED(&w->stop))
            break;
        /* [LP] a core of our own and a lease out: poll for it. Not while
         * an API thread holds the engine (a command it posts): S2 sleeps
         * and its release (D3) looks for us; spinning on the token would
         * take the core from it where the core is shared after all. */
        if (w->lease_poll && !LD_RELAXED(&w->token) && lease_polling(nic, &lp)) {
            CPU_RELAX();
            continue; /* [S1] */
        }
        /* [S2] announce, then recheck: D1/D3's other half */
        uint32_t seq = LD_ACQUIRE(&b->seq);
        set_state(w, PT_NIC_ARM);
        /* D5T: an API thread of ours spins on looks (PtlEQGet): sleep on the
         * eventfd alone with a timeout, marked so, and let releasers skip
         * the hand-over. The spinner runs the engine at every look; rung at
         * every release, we woke on its core once per message (8 B offload
         * ping-pong over tcp;ofi_rxm with ACKs: p50 60 us, host matching 24). */
        bool fdtimed = false;
        if (w->xfd >= 0) {
            fdtimed = w->fd_spin_ns &&
                      pt_now_ns() - LD_RELAXED(&w->spin_look) < w->lease_max_ns;
            ST_RELAXED(&w->fdless, PT_FDLESS(seq) | (fdtimed ? PT_FDLESS_TIMED : 0u)); /* F1 (D5) */
        }
        if (w->lease_ns)
            ST_RELAXED(&w->untimed, 1); /* T1: before the announcement's fence (L1) */
        pt_announce(b); /* S2: D1R's clear, then sleepers++ (full fence); pairs with D1, D3, D4, L1 */
        PT_PERTURB();
        bool held = LD_RELAXED(&w->token) != 0;
        /* S2W (ranks outnumber cores; shared memory, so no descriptor and no
         * lease): an API thread of ours that wants the engine (`want`, read
         * after the fence) does the work itself and kicks us when it leaves
         * (want_drop, then D4/D3: an RMW before its load of sleepers).
         * Without it, the NIC thread took the engine back at S1 while that
         * thread waited for a core, RUN gave it up at once for `want`, and S2
         * found the work again: 30,428 cancelled arms on rank 0 for 20 1 MiB
         * allreduces of 8 ranks on 2 cores (1,182 with S2W). Model: DEFER,
         * configurations offload-*-defer, mutant MUT_S2W (the load before
         * the fence). */
        bool defer = !w->yield_ns && w->xfd < 0 && LD_RELAXED(&w->want) != 0;
        if (LD_RELAXED(&w->stop) || (!held && !defer && pt_nic_has_work(nic))) {
            RMW_SUB(&b->sleepers, 1);
            RMW_ADD(&w->st.nic_armed_work, 1);
            ST_RELAXED(&w->untimed, 0); /* awake: S2 comes again before any sleep */
            continue; /* [S1] */
        }
        tls_s2_why = held ? "engine held" : defer ? "deferring (want)" : "no work";
        /* T1: while leases are in use (the lease is read after the fence:
         * L1's other half), sleep at most a lease period, so that a lease
         * always has an end. */
        int64_t tmo = backstop(w);
        bool timed = false;
        if (w->lease_ns) {
            /* A lease out, leases left since the last look, or a waiter that
             * could not leave one because we might sleep untimed (L1):
             * timed for PT_WAIT_LEASE_ACTIVE more sleeps; without leases
             * that long: untimed. Not merely because we were rung: beside
             * a client that leaves no lease and is rung for (it looks only
             * now and then), every timed wake-up whose S2 found work would
             * run the engine for PTL_NIC_SPIN_US on its core (measured
             * with the PtlEQGet spinner before it left leases: 8 B offload
             * mean 1.6 -> 3-5 us). */
            if (LD_RELAXED(&w->lease) || leases_moved(w, &left_seen) ||
                LD_RELAXED(&w->lease_wanted)) {
                active = PT_WAIT_LEASE_ACTIVE;
                ST_RELAXED(&w->lease_wanted, 0);
            }
            timed = active > 0;
            if (timed) {
                ST_RELAXED(&w->untimed, 0);
                tmo = (int64_t)w->lease_ns;
                RMW_ADD(&w->st.nic_timed_sleeps, 1);
            }
        }
        if (fdtimed) {
            tmo = tmo < 0 || (int64_t)fd_period < tmo ? (int64_t)fd_period : tmo;
            RMW_ADD(&w->st.nic_spin_sleeps, 1);
        } else {
            fd_period = w->fd_spin_ns;
        }
        /* A request parked for a match is no work until its wait ends
         * (the park rule, pt_nic_has_work): sleep no longer, then run the
         * engine, which drops it and answers its initiator. Also while the
         * engine is held: its holder's release (D3) finds no work while
         * the wait lasts, and a holder that leaves before its end (an
         * offload waiter's spin, W1) rings nobody for it, so the drop and
         * every message behind it waited for the backstop (an adversarial
         * client: 100 ms per drop where 20 were due; mp_nomatch_rounds).
         * A wait already over while held: no timeout, the release finds
         * the request as work (rx_work) and rings or drains. */
        bool parkwait = false;
        int64_t pl = park_bound_ns(nic, held);
        if (pl >= 0 && (tmo < 0 || pl < tmo)) {
            tmo = pl;
            parkwait = true;
        }
        /* [S3] sleep until rung: peers (D1), token releasers (D3/D4), stop.
         * If the token is held, its holder checks for us when it releases.
         * On a descriptor: the token free, our has_work ran fi_trywait and
         * we poll the descriptor; held, the holder reads the CQ and we sleep
         * on the eventfd alone [S3b] until it hands the descriptor back (D5). */
        set_state(w, PT_NIC_SLEEP);
        RMW_ADD(&w->st.nic_sleeps, 1);
        repair_bell(w);
        PT_TRACE_WAIT(nic, PT_TR_NIC_SLEEP, seq);
        bool rung;
        if (w->xfd >= 0 && (held || fdtimed)) {
            RMW_ADD(&w->st.nic_fdless_sleeps, 1);
            rung = bell_wait_fdless(w, seq, tmo); /* [S3b] */
            handed = true;
            /* D5T: the spinner still looking at our next S2 (a timeout,
             * not a ring) sleeps us twice as long, up to lease_max_ns:
             * each timed wake takes the spinner's core. */
            if (fdtimed && !rung)
                fd_period = period_doubled(w, fd_period);
        } else {
            /* On the descriptor, after our own fi_trywait. The mark stays
             * (D5 for this sleep too): a releaser rings it once instead of
             * looking for work at every release. That look was fi_trywait,
             * which drained and armed the wait object again, so every
             * completion wrote its signal: 7 system calls per message while
             * an application thread polled beside this sleep (1 message in
             * 10 of an 8 B offload ping-pong, bench/results-ofi.md). */
            rung = bell_wait(w, b, seq, tmo);
            /* T1's timeout with nothing to end while a lease is out or
             * waiters keep leaving them: sleep on, still announced on the same seq (a
             * ring meanwhile makes the wait return at once), without S2's
             * RMWs on the shared bell and its work scan, and above all
             * without S1: beside an application that yields the core, S1
             * ran the engine for PTL_NIC_SPIN_US at every period. */
            /* LP: sleep on (a period at a time, no doubling) while the
             * lease is renewed; one unchanged since the last wake is polled
             * for at the top */
            while (timed && !parkwait && !rung &&
                   (w->lease_poll ? lp_renewed(w, &lp, &left_seen)
                                  : !lease_expire(nic, &seen) &&
                                        (LD_RELAXED(&w->lease) || leases_moved(w, &left_seen)))) {
                /* The lease renewed (or leases moved) since the last wake:
                 * in use; sleep twice as long, up to lease_max_ns (not LP:
                 * its core is its own). Each wake takes the core from a
                 * spinner that shares it (8 B PtlEQGet spinner p99 20-40 us
                 * at a fixed 50 us). */
                if (!w->lease_poll)
                    tmo = (int64_t)period_doubled(w, (uint64_t)tmo);
                rung = bell_wait(w, b, seq, tmo);
            }
        }
        /* check_missed may sleep a backstop period more: still untimed then,
         * so that a waiter's L1 meanwhile takes its lease back (cleared
         * before it, a lease left in that period had no end for up to the
         * whole period: nobody rang, peers skipped their rings). */
        if (PT_UNLIKELY(!rung) && !timed && !parkwait && !fdtimed)
            check_missed(nic, b, seq, &rung); /* still announced */
        ST_RELAXED(&w->untimed, 0);
        PT_TRACE_WAIT(nic, PT_TR_NIC_WAKE, rung);
        RMW_SUB(&b->sleepers, 1);
        if (parkwait && !rung) {
            RMW_ADD(&w->st.park_wakes, 1);
            continue; /* [S1]: the wait ended, the engine drops what is unmatched */
        }
        if (timed && !rung) {
            /* T1's timeout: a lease ended (L2, above), or none out and none
             * left since the last look: S2 again, not S1: nothing rang, and running the
             * engine for PTL_NIC_SPIN_US would take the core from an
             * application that computes beside us (S2's recheck comes back
             * to S1 with work). */
            active--;
            handed = true;
        }
    }
    set_state(w, PT_NIC_STOP);
    pt_thread_end();
    return NULL;
}

/* ---- the room wait (RW; docs/waiting.md "A full command ring") -------------- */

bool pt_wait_room(struct pt_wait *w, struct pt_roomwait *rw, bool (*room)(void *), void *arg,
                  int64_t timeout_ns)
{
    uint32_t seq = LD_ACQUIRE(&rw->ww.seq); /* before the mark: a ring after it moves seq */
    ST_RELAXED(&rw->want, 1);               /* RW-ARM */
    RMW_ADD(&rw->ww.sleepers, 1);           /* RW-FENCE: full fence; pairs with the fence
                                             * before an engine sleeper's recheck (S2, W2, D3) */
    PT_PERTURB();
    bool ok = room(arg); /* RW-ROOM: reloads the consumer index (A2) */
    if (!ok) {
        RMW_ADD(&w->st.room_sleeps, 1);
        pt_futex_wait(&rw->ww, seq, timeout_ns);
        ok = room(arg);
    }
    RMW_SUB(&rw->ww.sleepers, 1);
    return ok;
}

void pt_wait_stop(struct pt_wait *w)
{
    /* A lease left by the last wait: its count down, as its end would (the
     * NI goes; a successor of this rank must find the bell as before). */
    if (lease_take(w))
        lease_count_down(w);
    ST_RELEASE(&w->stop, 1);
    pt_wait_ring(w, w->bell); /* the seq bump: a sleeper that read seq before it never blocks */
}

void pt_wait_wake_everyone(struct pt_wait *w)
{
    pt_wait_ring(w, w->bell);
    if (w->ev != w->bell)
        pt_wake_all(w->ev);
}

/* ---- the API waiter ------------------------------------------------------------ */

/* A waiter's view of itself (model: the app process's locals). */
struct waiter {
    bool holding;   /* holds the token                                  */
    bool wanted;    /* counted in `want`                                */
    bool polling;   /* counted in bell.polled (offload only)            */
};

static void want_drop(struct pt_wait *w, struct waiter *me)
{
    if (me->wanted) {
        RMW_SUB(&w->want, 1);
        me->wanted = false;
    }
}

/* W1 in offload mode: count ourselves in bell.polled, so that peers need
 * not ring while we poll: adopt the lease's count (L2), else raise one. */
static void waiter_poll(struct pt_nic *nic, struct waiter *me)
{
    struct pt_wait *w = &nic->w;
    if (!lease_adopt(nic)) {
        RMW_ADD(&w->polled_mine, 1);  /* first: polled_mine >= bell->polled (wait.h) */
        RMW_ADD(&w->bell->polled, 1); /* peers need not ring while we poll */
        PT_TRACE_WAIT(nic, PT_TR_LEASE, LD_RELAXED(&w->bell->polled));
    }
    me->polling = true;
}

/* Stop running the engine: D4 (or, lease true, L1) then D3. After this the
 * waiter owes nothing: every work source that arrived while it polled is
 * either seen by the check inside, or announced to a sleeper that is rung,
 * or (a lease left) owed by whoever ends the lease (L2). */
static void waiter_leave(struct pt_nic *nic, struct waiter *me, bool lease)
{
    struct pt_wait *w = &nic->w;
    want_drop(w, me);
    if (me->polling && lease && w->lease_ns && lease_leave(nic))
        me->polling = false; /* L1: the count stays up as the lease */
    if (me->polling) {
        RMW_SUB(&w->bell->polled, 1); /* D4: full fence; peers ring again from here */
        PT_TRACE_WAIT(nic, PT_TR_LEASE_END, LD_RELAXED(&w->bell->polled));
        RMW_SUB(&w->polled_mine, 1);
        me->polling = false;
        PT_PERTURB();
        if (!me->holding && LD_RELAXED(&w->bell->sleepers))
            kick(nic); /* D4: what peers did not ring for */
    }
    if (me->holding) {
        me->holding = false;
        pt_wait_release(nic); /* D3 */
    }
}

/* A look without waiting (PtlEQGet, PtlEQPoll with timeout 0). A caller
 * that looks again within PT_WAIT_SPINNER_NS of its last empty look spins on
 * such calls (the reference implementation's handshake, locktest, the
 * clients of issue 11): with leases on, each look is a W1 of one round that
 * leaves with a lease, empty or not (L2 at entry, L1 at the end), so that
 * peers need not ring its sleeping NIC thread for every message and the
 * spinner runs the engine itself, as a blocking waiter does. Rung instead,
 * the NIC thread woke on the spinner's core for every message and held the
 * token there (8 B offload mean 3-30 us against 0.55 us in host mode). A
 * caller that looks now and then leaves no lease: what arrives between its
 * looks is the NIC thread's at once, not after a lease period. */
static __thread uint64_t tls_last_look; /* this thread's last empty look, ns */

bool pt_wait_look(struct pt_nic *nic, pt_ready_fn ready, void *arg)
{
    struct pt_wait *w = &nic->w;
    bool spinner = false;
    if (w->lease_ns || w->fd_spin_ns) {
        uint64_t now = pt_now_ns();
        spinner = now - tls_last_look < PT_WAIT_SPINNER_NS;
        tls_last_look = now;
        if (spinner && !w->lease_ns) {
            /* On a descriptor (no lease): the hint of D5T, then the look
             * as a caller that looks now and then makes it. */
            ST_RELAXED(&w->spin_look, now);
            spinner = false;
        }
    }
    if (!spinner || PT_UNLIKELY(pt_nic_down(nic))) {
        pt_wait_progress(nic);
        return ready(arg);
    }
    struct waiter me = {false, false, false};
    waiter_poll(nic, &me);
    if (pt_wait_try_take(w)) {
        me.holding = true;
        poll_quiet(nic);
    }
    bool ok = ready(arg);
    waiter_leave(nic, &me, true); /* L1 (or D4), then D3 */
    return ok;
}

/* The job failed: what live peers sent before may still be queued, and what
 * depended on the dead peers ends with failed END events once the engine
 * sees the failure (pt_nic_fail). Take the engine (bounded) and poll until
 * quiet so that both are delivered; while another holds it, wait until it
 * has seen the failure (A-FAIL pairs with R-FAIL, nic.c), so that those
 * events come before PTL_FAIL. Then let the caller decide. */
static bool waiter_failed(struct pt_nic *nic, struct waiter *me, pt_ready_fn ready, void *arg,
                          uint64_t deadline)
{
    struct pt_wait *w = &nic->w;
    for (uint64_t t0 = pt_now_ns(); !me->holding;) {
        if (pt_wait_try_take(w)) {
            me->holding = true;
            break;
        }
        uint64_t t = pt_now_ns() - t0;
        if (t >= PT_WAIT_FAIL_TAKE_NS && (LD_ACQUIRE(&nic->failed) || t >= PT_WAIT_FAIL_SEEN_NS))
            break; /* A-FAIL */
        if (t < w->yield_ns)
            CPU_RELAX();
        else
            sched_yield(); /* the holder may want this core to get there */
    }
    if (me->holding)
        pt_nic_drain(nic, PT_WAIT_FAIL_POLLS);
    /* Transfers with dead peers that the transport still holds end later
     * (settle_until, nic.h): their failed END events come before PTL_FAIL
     * (README; mp_kill late over ofi saw PTL_FAIL first). Run the engine
     * when it is free, else let its holder run it; until the caller's
     * deadline (UINT64_MAX: none) or the settling's own bound. */
    for (;;) {
        if (ready(arg))
            return true;
        /* Settled: the last failed END was posted before settle_until's
         * clear, which pt_nic_settling's acquire saw; look once more (it
         * may have come after the look above). */
        if (!pt_nic_settling(nic))
            return ready(arg);
        if (pt_now_ns() >= deadline)
            return false;
        if (me->holding || pt_wait_try_take(w)) {
            me->holding = true;
            if (pt_nic_poll_once(nic))
                continue;
        }
        struct timespec nap = {0, PT_WAIT_FAIL_NAP_NS};
        nanosleep(&nap, NULL); /* a failed job's last transfers: rare, not hot */
    }
}

/* W2W: count ourselves a watcher of our EQs (d = 1), or no longer (-1). */
static void watch_count(struct pt_wait *w, const struct pt_watch *watch, int d)
{
    if (!watch)
        return;
    RMW_ADD(&w->eq_sleepers, (uint32_t)d);
    if (watch->all)
        RMW_ADD(&w->watch_all, (uint32_t)d);
    else
        for (unsigned i = 0; i < watch->n; i++)
            RMW_ADD(watch->w[i], (uint32_t)d);
}

bool pt_wait_until(struct pt_nic *nic, pt_ready_fn ready, void *arg, int64_t timeout_ns)
{
    return pt_wait_until_watch(nic, ready, arg, timeout_ns, NULL);
}

bool pt_wait_until_watch(struct pt_nic *nic, pt_ready_fn ready, void *arg, int64_t timeout_ns,
                         const struct pt_watch *watch)
{
    if (ready(arg))
        return true; /* fast path: touch no shared line */
    struct pt_wait *w = &nic->w;
    struct waiter me = {false, false, false};
    uint64_t start = pt_now_ns(), spin_start = start;
    bool ok = false, failed = false;

    /* LK: look (ready) at every iteration, except while we hold the engine
     * and our own last poll did no work and posted nothing: then nobody
     * can have posted what we wait for (events, counts and completions come
     * from the engine's holder only), and the look, about a quarter of an
     * empty iteration (95 of ~415 instructions, callgrind), would find what
     * it found before. Every PT_WAIT_CLOCK_EVERY-th iteration looks anyway
     * (what another thread does without the engine: PtlNIFini's `dead`),
     * and W2's recheck before any sleep always looks. A message that lands
     * just after a look waits for the rest of the iteration: half of one
     * on average (bench/results-notes.md, sixty-ninth session). */
    bool look = true;
    for (uint32_t it = 0;; it++) {
        bool stalled = false; /* idle on a credit stall: the shorter spin */
        /* [W1] spin: run the engine when we can take it */
        if (w->nic_thread && !me.polling)
            waiter_poll(nic, &me);
        if ((look || !me.holding || (it % PT_WAIT_CLOCK_EVERY) == 0) && ready(arg)) {
            ok = true;
            break;
        }
        if (PT_UNLIKELY(pt_nic_down(nic))) {
            ok = waiter_failed(nic, &me, ready, arg,
                               timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns);
            failed = true;
            break;
        }
        bool was_holding = me.holding;
        if (me.holding || pt_wait_try_take(w)) {
            me.holding = true;
            want_drop(w, &me);
            int work = pt_nic_poll_once(nic);
            look = work || nic->ev_posted_last || !was_holding; /* LK */
            if (work)
                continue;
            /* Idle with a command stalled on credits (the credit wait): spin
             * no longer than a NIC thread would (PTL_NIC_SPIN_US), the peer
             * that frees room rings the bell. */
            stalled = PT_UNLIKELY(nic->cstall);
        } else if (!me.wanted && w->nic_thread) {
            RMW_ADD(&w->want, 1); /* ask a polling NIC thread to hand over */
            me.wanted = true;
        }
        if ((it % PT_WAIT_CLOCK_EVERY) != PT_WAIT_CLOCK_EVERY - 1) {
            CPU_RELAX();
            continue;
        }
        uint64_t now = pt_now_ns();
        if (timeout_ns >= 0 && now - start >= (uint64_t)timeout_ns)
            break;
        uint64_t spin_ns = stalled && w->nic_spin_ns < w->wait_spin_ns ? w->nic_spin_ns
                                                                       : w->wait_spin_ns;
        if (now - spin_start < spin_ns) {
            /* Spinning for a while without what we wait for: if more threads
             * want the cores than there are (4 ranks' threads on 2 cores),
             * the thread that would produce it may be waiting for ours; give
             * the core away instead of burning a 4 ms scheduler tick. When
             * the job has more ranks than cores (yield_ns 0), the engine's
             * holder too (it keeps the token: nobody else of this process
             * needs the engine while it polls for us): a holder that spun
             * its whole PTL_WAIT_SPIN_US made a 4-rank barrier on 2 cores
             * take 1.2-2 ms (bench/results-notes.md, "Oversubscribed
             * waiting"). With a core per rank the holder keeps polling: its
             * yields gave the core to its own NIC thread spinning beside it
             * (1 MiB offload ping-pong 42 -> 44 us). */
            if (now - spin_start >= w->yield_ns && (!me.holding || w->yield_ns == 0))
                sched_yield();
            continue;
        }

        /* [W2] spun long enough: leave the engine (D4, D3), announce on `ev`,
         * recheck, sleep. */
        waiter_leave(nic, &me, false);
        struct pt_waitword *ev = w->ev;
        uint32_t seq = LD_ACQUIRE(&ev->seq);
        watch_count(w, watch, 1); /* W2W: before W2's fence, which orders it before the recheck */
        pt_announce(ev); /* W2: full fence; pairs with D6 (and D1/D3 in host mode) */
        if (w->af) {
            /* AF-M (wait.h AF): our peers publish fast-box messages to us
             * without F-SND; this barrier on every CPU that runs one lands
             * each publish still in a store buffer before the recheck, and
             * a sender past it loads our announcement (D1). A failure: our
             * sleeps are bounded from here on (1 ms), and we say so. */
            RMW_ADD(&w->st.af_membars, 1);
            if (PT_UNLIKELY(!pt_membar_global()))
                ST_RELAXED(&w->af_bound, true);
        }
        PT_PERTURB();
        /* The recheck may consume what we wait for (eq_ready dequeues): keep it. */
        bool got = ready(arg);
        bool skip = got || pt_nic_down(nic) ||
                    (!w->nic_thread && LD_RELAXED(&w->token) == 0 && pt_nic_has_work(nic));
        if (!skip) {
            RMW_ADD(&w->st.waiter_sleeps, 1);
            bool engine_sleeper = !w->nic_thread; /* host mode: ev is the bell */
            uint32_t cls = 0; /* NB */
            if (engine_sleeper)
                repair_bell(w);
            else
                cls = cls_asleep(w); /* NB: the NIC thread wakes us, promptly */
            for (;;) {
                int64_t left = -1;
                if (timeout_ns >= 0) {
                    int64_t rem = timeout_ns - (int64_t)(pt_now_ns() - start);
                    left = rem > 0 ? rem : 0;
                }
                int64_t bs = engine_sleeper ? backstop(w) : -1;
                bool by_backstop = bs >= 0 && (left < 0 || left > bs);
                if (by_backstop)
                    left = bs;
                /* A request parked for a match: sleep no longer than its
                 * wait (the park rule; the NIC thread's S3 does the same),
                 * then run the engine (W1), which drops it. */
                int64_t pl = engine_sleeper ? park_bound_ns(nic, LD_RELAXED(&w->token) != 0)
                                            : -1;
                if (PT_UNLIKELY(LD_RELAXED(&w->af_bound)) && engine_sleeper)
                    pl = pl >= 0 && pl < 1000000 ? pl : 1000000; /* AF-M failed: a bounded miss */
                if (pl >= 0 && (left < 0 || pl < left)) {
                    left = pl;
                    by_backstop = false;
                }
                /* Asleep, the caller holds the NIC but no EQ ring: ready()
                 * resolves its handles again after the wake (life.h). Not a
                 * word of this protocol. */
                PT_TRACE_WAIT(nic, PT_TR_PARK, seq);
                pt_life_park(nic->ni_index);
                bool rung = bell_wait(w, ev, seq, left); /* [W3] */
                bool missed = false;
                if (!rung && by_backstop) /* nobody rang (seq unchanged) */
                    missed = check_missed(nic, ev, seq, &rung);
                pt_life_unpark();
                PT_TRACE_WAIT(nic, PT_TR_UNPARK, rung);
                if (rung || !by_backstop || missed)
                    break;
                /* A command stalled on credits: retry it once per backstop
                 * period (a mark set by another process of the job would
                 * otherwise keep us asleep; docs/waiting.md). */
                if (engine_sleeper && pt_nic_credit_stalled(nic))
                    break;
                /* nothing pending: sleep on */
            }
            cls_awake(w, cls);
        }
        RMW_SUB(&ev->sleepers, 1);
        watch_count(w, watch, -1);
        if (got) {
            ok = true;
            break;
        }
        spin_start = pt_now_ns();
    }
    /* A lease only when leaving a blocking wait with what we waited for (a
     * client's next wait comes at once), the NI alive. A wait with timeout 0
     * leaves none: PtlEQGet and PtlEQPoll(0) look through pt_wait_look,
     * which leaves leases only for a spinner. */
    waiter_leave(nic, &me, ok && !failed && timeout_ns != 0);
    return ok;
}

void pt_wait_dump(const struct pt_wait *w, void *file)
{
    FILE *f = file;
    fprintf(f, "  wait: NIC thread %s, token %u, want %u, bell sleepers %u polled %u, "
               "event sleepers %u\n",
            w->nic_thread ? pt_nic_state_name(LD_RELAXED(&w->nic_state)) : "none",
            LD_RELAXED(&w->token), LD_RELAXED(&w->want), LD_RELAXED(&w->bell->sleepers),
            LD_RELAXED(&w->bell->polled), LD_RELAXED(&w->ev->sleepers));
    fprintf(f, "  wait: one API thread (SO: plain token and event claims): %s\n",
            LD_RELAXED(&g_pt_solo) ? "yes" : "no");
    fprintf(f, "  wait: peers skip F-SND to us (AF): %s%s, global membarriers %llu\n",
            w->af ? "yes" : "no",
            LD_RELAXED(&w->af_bound) ? " (membarrier failed: sleeps bounded)" : "",
            (unsigned long long)LD_RELAXED(&w->st.af_membars));
    fprintf(f, "  wait: waiters spin %llu us, yield after %llu us%s\n",
            (unsigned long long)(w->wait_spin_ns / 1000), (unsigned long long)(w->yield_ns / 1000),
            w->yield_ns ? "" : " (oversubscribed)");
    if (w->nic_thread) {
        if (nic_may_spin_long(w)) /* nic_spin */
            fprintf(f, "  wait: NIC thread spins %llu us when idle, %llu us while the "
                       "application sleeps\n",
                    (unsigned long long)(w->nic_idle_ns / 1000),
                    (unsigned long long)(w->wait_spin_ns / 1000));
        else
            fprintf(f, "  wait: NIC thread spins %.2f us when idle%s\n",
                    (double)w->nic_idle_ns / 1000,
                    w->nic_crowded ? " (another NIC thread shares its core)"
                    : !w->yield_ns ? " (ranks outnumber cores)" : "");
    }
    if (LD_RELAXED(&w->st.late_wakes))
        fprintf(f, "  wait: backstop wake-ups that found work whose producer was still "
                   "runnable %llu\n",
                (unsigned long long)LD_RELAXED(&w->st.late_wakes));
    if (LD_RELAXED(&w->st.park_wakes))
        fprintf(f, "  wait: NIC sleeps ended by a request parked for a match %llu\n",
                (unsigned long long)LD_RELAXED(&w->st.park_wakes));
    if (LD_RELAXED(&w->st.missed_wakes) || LD_RELAXED(&w->st.bell_repairs))
        fprintf(f, "  wait: FAULT: backstop wake-ups that found work %llu, doorbell repairs %llu\n",
                (unsigned long long)LD_RELAXED(&w->st.missed_wakes),
                (unsigned long long)LD_RELAXED(&w->st.bell_repairs));
    fprintf(f, "  wait: NIC sleeps %llu (arms cancelled %llu), waiter sleeps %llu (D6 rang %llu), "
               "kicks drained %llu rung %llu\n",
            (unsigned long long)LD_RELAXED(&w->st.nic_sleeps),
            (unsigned long long)LD_RELAXED(&w->st.nic_armed_work),
            (unsigned long long)LD_RELAXED(&w->st.waiter_sleeps),
            (unsigned long long)LD_RELAXED(&w->st.ev_rings),
            (unsigned long long)LD_RELAXED(&w->st.kicks_drained),
            (unsigned long long)LD_RELAXED(&w->st.kicks_rung));
    if (w->lease_ns)
        fprintf(f, "  wait: poll leases left %llu, ended by the NIC thread %llu; "
                   "NIC sleeps with the lease timeout %llu\n",
                (unsigned long long)LD_RELAXED(&w->st.leases_left),
                (unsigned long long)LD_RELAXED(&w->st.leases_ended),
                (unsigned long long)LD_RELAXED(&w->st.nic_timed_sleeps));
    if (w->lease_poll)
        fprintf(f, "  wait: leases the NIC thread polled for (a core of its own) %llu%s\n",
                (unsigned long long)LD_RELAXED(&w->st.nic_lease_polls),
                LD_RELAXED(&w->st.nic_lease_polls) ? " (LP polled)" : "");
    if (LD_RELAXED(&w->st.room_sleeps))
        fprintf(f, "  wait: API threads asleep on a full command ring %llu\n",
                (unsigned long long)LD_RELAXED(&w->st.room_sleeps));
    if (w->xfd >= 0)
        fprintf(f, "  wait: NIC sleeps on the eventfd alone %llu (%llu timed beside a spinner), "
                   "descriptor hand-overs %llu (and %llu found it rung already, %llu timed)\n",
                (unsigned long long)LD_RELAXED(&w->st.nic_fdless_sleeps),
                (unsigned long long)LD_RELAXED(&w->st.nic_spin_sleeps),
                (unsigned long long)LD_RELAXED(&w->st.fd_handovers),
                (unsigned long long)LD_RELAXED(&w->st.fd_handovers_owed),
                (unsigned long long)LD_RELAXED(&w->st.fd_handovers_timed));
}
