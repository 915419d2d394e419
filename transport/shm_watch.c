/*
 * shm_watch.c - a region's liveness without a launcher (the node region of
 * a PMIx job: transport/mix.c, docs/ofi.md "One job across hosts"). ptlrun
 * reaps its ranks and fails the job when one ends still
 * attached (shm_launch.c, pt_shm_rank_exited); here every rank runs a
 * thread that does the same for the ranks it watches: it sleeps in poll()
 * on their pidfds (at most PT_SHM_WATCH_MAX, its successors in slot order,
 * so every rank is watched by as many as the job has, up to that bound)
 * and on an eventfd that stops it. A watched process that ends:
 *   - still attached (no orderly PtlNIFini): dead, as the launcher judges
 *     it: its record's `dead`, the job's `first_dead` and `job_failed`
 *     (PTL_NI_PEER_DIED), then every bell of the region rung (and its ring
 *     socket, for engines asleep on ofi's descriptor too), so every
 *     sleeper rechecks and fails its waits (the same words and order as
 *     fail_job in shm_launch.c);
 *   - detached: it left in order; `departed` is raised (engines then ask
 *     peer_alive about the peers that still owe them something).
 * Ranks not attached yet are looked for every 100 ms until each has a
 * pidfd. One still not attached twice PTL_PMIX_TIMEOUT_S after the watch started
 * is judged lost (lost_unattached): it may have died before its PtlNIInit,
 * and nothing tells its pid (Open MPI 4.1's PMIx answers PMIX_PROC_PID
 * with "not found"), so without a bound the others waited for it for ever
 * and the region's name, which the last rank to attach removes, stayed in
 * /dev/shm (an audit: 8 of 8 runs under mpirun --enable-recovery). The
 * bound a job across hosts gives a rank that does not reach its PtlNIInit
 * (the wire-up fence, pmix.c), doubled: such a rank once made its
 * connections (ofi_open.c, connect_all) before it attached; it attaches first
 * now (mix.c, pt_ofi_serve), and the bound stays. No CPU is used while nothing
 * happens. Cold path only.
 */
#include "shm_int.h"

#include "clock.h"
#include "config.h"
#include "log.h"
#include "proc.h"
#include "thread.h"

#include <p3api/misc.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define PT_SHM_WATCH_MAX 256u

struct pt_shm_watch {
    struct pt_xport *x;
    pthread_t th;
    int stop_fd;                 /* eventfd: written once by pt_shm_watch_stop */
    uint32_t n;                  /* ranks watched                               */
    uint32_t *slot;              /* [i]: the slot of watched rank i             */
    int *pfd;                    /* [i]: its pidfd, -1 not yet (or done)        */
    bool *done;                  /* [i]: ended and judged                       */
    uint64_t t0;                 /* the watch's start (ns): the attach bound    */
    bool named;                  /* the region was opened by name:              */
    char name[80];               /* ... this one, which names the file dev/ino  */
    dev_t dev;                   /* while nobody else replaced it              */
    ino_t ino;
    /* 1 until the thread is past its start-up (its allocations and the
     * sanitizer runtime's: a fork() right after PtlNIInit must not copy an
     * allocator lock it holds, api/fork.c): written by the thread (release,
     * then the wake), read by pt_shm_watch_start, which waits for it. */
    _Atomic uint32_t starting;
    struct pt_waitword up_ww;
};

/* The job has failed (code), by the death of the rank in slot `dead` (-1:
 * none known): its record's `dead`, the job's `first_dead` and `job_failed`
 * (the first failure names the job's), then every bell of the region rung,
 * futex and ring socket (sleepers may poll ofi's fd): the words and order of
 * fail_job in shm_launch.c, from a rank instead of the launcher. */
static void fail_region(struct pt_xport *x, uint32_t code, int32_t dead)
{
    if (dead >= 0) {
        ST_RELAXED(&x->ranks[dead].dead, 1); /* before job_failed */
        int32_t none = -1;
        RMW_CAS(&x->hdr->first_dead, &none, dead);
    }
    uint32_t zero = 0;
    RMW_CAS(&x->hdr->job_failed, &zero, code);
    pt_shm_ring_everyone(x);
}

static void judge(struct pt_shm_watch *w, uint32_t i)
{
    struct pt_xport *x = w->x;
    uint32_t s = w->slot[i];
    struct pt_shm_rank *rec = &x->ranks[s];
    /* Ended, if not yet reaped: peer_alive must not take the zombie's
     * answer to kill(pid, 0) for life (it is asked once per departure). */
    ST_RELAXED(&x->exited[s], 1);
    FENCE_FULL(); /* before the counts below, which send engines to peer_alive */
    if (LD_ACQUIRE(&rec->state) == PT_SHM_R_ATTACHED) { /* A-ATT */
        fail_region(x, PTL_NI_PEER_DIED, (int32_t)s);
        pt_log(PT_LOG_WARN, "job region: rank in slot %u (pid %d) ended without PtlNIFini: "
                            "the job has failed", s, (int)LD_RELAXED(&rec->ospid));
    } else {
        RMW_ADD(&x->hdr->departed, 1);
        pt_shm_ring_everyone(x);
    }
}

/* How long a watched rank may take to attach: twice PTL_PMIX_TIMEOUT_S, the
 * wire-up fence's bound (doubled when a rank of a job across hosts made its
 * connections before it attached; since pt_ofi_serve it attaches first). */
static uint64_t attach_bound_ns(void)
{
    return 2u * (uint64_t)pt_config()->pmix_timeout_s * 1000000000u;
}

/* The region's name, which the last rank to attach removes, when not every
 * rank will: removed only while it still names our region's file (a later
 * job may have made one of the same name). */
static void drop_name(const struct pt_shm_watch *w, const char *why)
{
    if (w->named)
        pt_shm_unlink_same(w->name, w->dev, w->ino, why);
}

/* Watched rank i has not attached within the bound: dead to this rank's job,
 * as one that ended attached (judge), and the region's name goes (nobody
 * else will remove it: the last rank to attach does that). The name is
 * removed only while it still names our region's file. */
static void lost_unattached(struct pt_shm_watch *w, uint32_t i)
{
    struct pt_xport *x = w->x;
    uint32_t s = w->slot[i];
    ST_RELAXED(&x->exited[s], 1);
    fail_region(x, PTL_NI_PEER_DIED, (int32_t)s);
    pt_log(PT_LOG_WARN, "job region: the rank in slot %u has not attached within %llu s "
                        "(twice PTL_PMIX_TIMEOUT_S; it may have died before its PtlNIInit): "
                        "taken for dead, the job has failed",
           s, (unsigned long long)(attach_bound_ns() / 1000000000u));
    drop_name(w, "a rank will not attach");
}

static void *watch_main(void *arg)
{
    struct pt_shm_watch *w = arg;
    struct pt_xport *x = w->x;
    struct pollfd *p = calloc(w->n + 1, sizeof *p);
    uint32_t *idx = calloc(w->n + 1, sizeof *idx);
    pt_flag_clear(&w->starting, &w->up_ww); /* pt_shm_watch_start waits for it */
    if (!p || !idx) {
        free(p);
        free(idx);
        pt_thread_end();
        return NULL;
    }
    for (;;) {
        /* pidfds for ranks that attached since the last look */
        bool missing = false;
        uint32_t k = 0;
        for (uint32_t i = 0; i < w->n; i++) {
            if (w->done[i])
                continue;
            if (w->pfd[i] < 0) {
                struct pt_shm_rank *rec = &x->ranks[w->slot[i]];
                pid_t pid = LD_RELAXED(&rec->ospid);
                uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT */
                if (pid <= 0 || st == PT_SHM_R_NONE) {
                    missing = true;
                    continue;
                }
                w->pfd[i] = pt_fd_above_std((int)syscall(SYS_pidfd_open, pid, 0));
                if (w->pfd[i] < 0) {
                    if (errno == ESRCH) { /* gone already */
                        w->done[i] = true;
                        judge(w, i);
                    }
                    continue; /* ENOSYS and the like: not watched */
                }
            }
            p[k].fd = w->pfd[i];
            p[k].events = POLLIN;
            idx[k++] = i;
        }
        if (missing && pt_now_ns() - w->t0 >= attach_bound_ns()) {
            for (uint32_t i = 0; i < w->n; i++) {
                if (w->done[i] || w->pfd[i] >= 0)
                    continue;
                struct pt_shm_rank *rec = &x->ranks[w->slot[i]];
                if (LD_ACQUIRE(&rec->state) != PT_SHM_R_NONE) /* A-ATT */
                    continue; /* attached meanwhile: its pidfd next look */
                w->done[i] = true;
                lost_unattached(w, i);
            }
        }
        p[k].fd = w->stop_fd;
        p[k].events = POLLIN;
        int r = poll(p, k + 1, missing ? 100 : -1);
        if (r < 0 && errno != EINTR)
            break;
        if (p[k].revents)
            break; /* stop */
        for (uint32_t j = 0; r > 0 && j < k; j++) {
            if (!p[j].revents)
                continue;
            uint32_t i = idx[j];
            close(w->pfd[i]);
            w->pfd[i] = -1;
            w->done[i] = true;
            judge(w, i);
        }
    }
    free(p);
    free(idx);
    pt_thread_end();
    return NULL;
}

int pt_shm_watch_start(struct pt_xport *x)
{
    if (x->watch || x->n < 2 || x->me >= x->n)
        return 0;
    struct pt_shm_watch *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->x = x;
    w->n = x->n - 1 < PT_SHM_WATCH_MAX ? x->n - 1 : PT_SHM_WATCH_MAX;
    w->slot = calloc(w->n, sizeof *w->slot);
    w->pfd = calloc(w->n, sizeof *w->pfd);
    w->done = calloc(w->n, sizeof *w->done);
    w->stop_fd = pt_fd_above_std(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    x->exited = calloc(x->np, sizeof *x->exited);
    int rc = 0;
    if (!w->slot || !w->pfd || !w->done || w->stop_fd < 0 || !x->exited) {
        rc = w->stop_fd < 0 ? -errno : -ENOMEM;
        goto fail;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        w->slot[i] = (x->me + 1 + i) % x->n;
        w->pfd[i] = -1;
    }
    w->t0 = pt_now_ns();
    w->named = pt_shm_named_ident(w->name, sizeof w->name, &w->dev, &w->ino);
    pt_waitword_init(&w->up_ww, false);
    ST_RELAXED(&w->starting, 1);
    rc = -pt_thread_create(&w->th, NULL, watch_main, w);
    if (rc)
        goto fail;
    /* until it is past its start-up; bounded (a thread the scheduler does
     * not run for a second: the fork hazard stays, nothing else does) */
    (void)pt_flag_wait_clear(&w->starting, &w->up_ww, pt_now_ns() + 1000000000u);
    x->watch = w;
    return 0;
fail:
    free((void *)x->exited);
    x->exited = NULL;
    if (w->stop_fd >= 0)
        close(w->stop_fd);
    free(w->slot);
    free(w->pfd);
    free(w->done);
    free(w);
    return rc;
}

void pt_shm_job_fail(struct pt_xport *x, uint32_t code)
{
    if (code != 0 && LD_RELAXED(&x->hdr->job_failed) == 0)
        fail_region(x, code, -1);
}

void pt_shm_watch_stop(struct pt_xport *x)
{
    struct pt_shm_watch *w = x->watch;
    if (!w)
        return;
    uint64_t one = 1;
    (void)!write(w->stop_fd, &one, sizeof one);
    pthread_join(w->th, NULL);
    /* Leaving a failed job that not every rank joined: the name goes now, or
     * it stays in /dev/shm (the watch's bound may not have come: a death the
     * launcher reported, pt_shm_job_fail, ended the job sooner; a CI run,
     * mp_pmix_noinit_node). A rank still on its way then makes a region of
     * its own and its watch fails it within the bound. */
    if (LD_RELAXED(&x->hdr->job_failed) != 0 && LD_RELAXED(&x->hdr->nattached) < x->n)
        drop_name(w, "the job failed before every rank attached");
    for (uint32_t i = 0; i < w->n; i++)
        if (w->pfd[i] >= 0)
            close(w->pfd[i]);
    close(w->stop_fd);
    free(w->slot);
    free(w->pfd);
    free(w->done);
    free(w);
    x->watch = NULL;
    free((void *)x->exited);
    x->exited = NULL;
}
