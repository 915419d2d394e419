/*
 * ofi_peer.c - the libfabric transport's peer liveness (ofi_int.h): evidence
 * that a peer is gone (a failed send, a late probe, the kernel's refusal at
 * its address, the launcher's word) makes it dead to us (pt_ofi_mark_dead);
 * in a PMIx job the probe timer's period (pt_ofi_probe_tick) sends the probes
 * and judges the suspects, in a ptlrun job the region judges (lost_peer).
 * docs/ofi.md, "Peer death in a PMIx job". Token holder only.
 */
#include "ofi_int.h"

#include "clock.h"
#include "log.h"
#include "proc.h"
#include "pt_atomic.h"
#include "shm.h"

#include <p3api/misc.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Evidence that peer is gone (why: OFI_WHY_*): a send to it failed, the
 * kernel refused a connection to its endpoint, or (providers without that
 * check) its probe stayed uncompleted for OFI_PROBE_LATE of our periods: it
 * is dead to us. In a PMIx job the job fails with it (as the region's
 * launcher rule fails a ptlrun job), unless it said bye: judged one probe
 * period later (probe_tick), so that a bye that arrives behind the
 * connection's error is still seen. */
static void lost_peer(struct pt_xport *x, uint32_t peer);

void pt_ofi_mark_dead(struct pt_xport *x, uint32_t peer, uint8_t why)
{
    if (x->dead[peer])
        return;
    x->dead[peer] = 1;
    pt_ofi_cred_bump(x); /* a send stalled towards it must fail now, not sleep */
    if (!x->pmix) {
        lost_peer(x, peer);
        return;
    }
    if (x->bye[peer])
        return;
    if (x->tfd < 0) {
        ST_RELAXED(&x->gone[peer], 1);
        uint32_t z = 0;
        RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
        return;
    }
    x->dead_t[peer] = pt_now_ns();
    x->dead_why[peer] = why;
    x->nsuspect++;
}

/* A ptlrun job: the region tells deaths (the launcher, pidfds), and a send
 * or read that failed towards a peer is either a death the region does not
 * show yet, or a connection lost to a live peer. What that connection
 * carried is lost, and later messages would take their class out of order:
 * this rank cannot go on with that peer. Once (the peer is dead to us from
 * now on), the engine waits up to OFI_LOST_MS for the peer's process to
 * end: ended while attached, it died (PTL_NI_PEER_DIED, as the pidfd's
 * wake-up would say); alive and attached, our NI fails (PTL_NI_FAIL) so
 * that nothing waits for ever for what was lost (an audit: a ptlrun job
 * over ofi whose connections were reset slept in PtlCollWait until the
 * launcher's timeout, "job not failed", nothing in flight); detached (it
 * left in order: ofi_close detaches before it closes its endpoint), no
 * failure. */
static void lost_peer(struct pt_xport *x, uint32_t peer)
{
    if (peer == x->me || peer >= x->n)
        return;
    /* Looked at every 50 ms: a process killed on a starved machine closes
     * its sockets long before it is a zombie (an audit: with a 1 s wait, 2
     * of 7 kills under load were reported as lost connections) */
    int fd = x->pidfd ? x->pidfd[peer] : -1;
    bool ended = false;
    uint64_t t0 = pt_now_ns();
    for (;;) {
        if (!pt_shm_rank_attached(x->shm, peer))
            return; /* it left in order: what we still send it goes nowhere */
        if (!x->so->peer_alive(x->shm, peer)) {
            ended = true; /* the launcher or the kernel says so */
            break;
        }
        if (pt_now_ns() - t0 >= (uint64_t)OFI_LOST_MS * 1000000u)
            break;
        if (fd >= 0) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, 50) > 0) {
                ended = true;
                break;
            }
        } else {
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
        }
    }
    uint32_t z = 0;
    if (ended) {
        ST_RELAXED(&x->gone[peer], 1);
        RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
        return;
    }
    pt_log(PT_LOG_ERR, "ofi: the connection to rank %u was lost while that rank lives (what it "
                       "carried is gone): this rank's NI fails (PTL_NI_FAIL)", peer);
    RMW_CAS(&x->failed, &z, PTL_NI_FAIL);
}

/* The kernel's check (kcheck): what answers at peer's published address,
 * the TCP address its endpoint listens on? Started when its probe is late.
 * Accepted: a process holds the endpoint open, alive whether it runs, starves
 * or is stopped (its probe is late because rxm's connection setup needs the
 * peer's engine to run): checked again 2, 4, .. 64 of our periods later while
 * the probe stays late. Refused (the kernel's reset), or unreachable: the
 * endpoint is gone, the peer is dead unless it said bye. No answer yet: the
 * kernel retries (its own connect timeout, minutes, is an answer). Anything
 * else (our own resources, a filter) says nothing about the peer. */
static void chk_answer(struct pt_xport *x, uint32_t peer, int err)
{
    switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ETIMEDOUT:
        x->dead_err[peer] = err;
        pt_ofi_mark_dead(x, peer, OFI_WHY_REFUSED);
        return;
    case 0:
        pt_log(PT_LOG_DEBUG, "ofi: rank %u: its probe is late, but its endpoint accepts "
                             "connections: alive", peer);
        break;
    default:
        pt_log_once(PT_LOG_WARN, "ofi: checking rank %u's endpoint: %s (no verdict)", peer,
                    strerror(err));
        break;
    }
    if (x->chk_shift[peer] < OFI_CHECK_SHIFT_MAX)
        x->chk_shift[peer]++;
    x->chk_next[peer] = x->tick + (1u << x->chk_shift[peer]);
}

static void chk_start(struct pt_xport *x, uint32_t peer)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
        char raw[256];
    } a;
    size_t len = sizeof a;
    if (x->ax.lookup(x->ax.ctx, peer, &a, &len) != 0)
        return;
    socklen_t sl = a.sa.sa_family == AF_INET ? sizeof a.in : sizeof a.in6;
    if ((a.sa.sa_family != AF_INET && a.sa.sa_family != AF_INET6) || len < sl) {
        chk_answer(x, peer, EAFNOSUPPORT);
        return;
    }
    int fd = pt_fd_above_std(socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0) {
        chk_answer(x, peer, errno);
        return;
    }
    int err = connect(fd, &a.sa, sl) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
        x->chk_fd[peer] = fd;
        x->nchk++;
        return;
    }
    chk_abort(fd);
    chk_answer(x, peer, err);
}

/* The answers that came to the checks open (no wait). */
static void chk_poll(struct pt_xport *x)
{
    for (uint32_t p = 0; p < x->n && x->nchk; p++) {
        if (x->chk_fd[p] < 0)
            continue;
        struct pollfd pf = {.fd = x->chk_fd[p], .events = POLLOUT};
        if (poll(&pf, 1, 0) <= 0)
            continue;
        int err = 0;
        socklen_t l = sizeof err;
        if (getsockopt(x->chk_fd[p], SOL_SOCKET, SO_ERROR, &err, &l) != 0)
            err = errno;
        chk_close(x, p);
        chk_answer(x, p, err);
    }
}

/* PMIx job, once per probe period (the timer in the sleep set; peek runs it
 * when rx_pending saw it fire; a starved engine that missed periods counts
 * one): judge the peers marked dead a period ago (dead unless they said bye
 * meanwhile: the job fails), read the kernel's checks, start one for a peer
 * whose probe has been outstanding for OFI_PROBE_CHECK of our periods (without
 * kcheck: make it dead after OFI_PROBE_LATE of our periods), and send a new
 * probe to up to OFI_PROBE_MAX peers (round robin). A probe to a live peer
 * completes once the provider has written it to the connection, whether or
 * not that peer's engine runs (a new connection needs it to, though); to a
 * dead one it fails or stays queued (rxm's -FI_EAGAIN, reconnecting). The
 * periods are counted in our runs, not in time: a machine so loaded that the
 * observer misses periods does not age the probes. */
void pt_ofi_probe_tick(struct pt_xport *x)
{
    ST_RELAXED(&x->probe_due, 0);
    x->tick++;
    while (pt_ofi_progress(x) == OFI_CQ_BATCH)
        ; /* completions, and byes, first */
    if (x->nchk)
        chk_poll(x);
    uint64_t now = pt_now_ns();
    if (x->nsuspect) {
        x->nsuspect = 0;
        for (uint32_t p = 0; p < x->n; p++) {
            if (!x->dead_t[p] || LD_RELAXED(&x->gone[p]))
                continue;
            if (x->bye[p]) {
                x->dead_t[p] = 0;
            } else if (now - x->dead_t[p] >= x->probe_ns) {
                char why[96];
                switch (x->dead_why[p]) {
                case OFI_WHY_REFUSED:
                    snprintf(why, sizeof why, "its endpoint's address answers: %s",
                             strerror(x->dead_err[p]));
                    break;
                case OFI_WHY_LATE:
                    snprintf(why, sizeof why, "a probe to it was not completed in %u periods",
                             OFI_PROBE_LATE);
                    break;
                case OFI_WHY_LAUNCHER:
                    snprintf(why, sizeof why, "the launcher reported it");
                    break;
                default:
                    snprintf(why, sizeof why, "a send to it failed");
                    break;
                }
                pt_log(PT_LOG_WARN, "ofi: rank %u is dead (%s): the job fails", p, why);
                ST_RELAXED(&x->gone[p], 1);
                uint32_t z = 0;
                RMW_CAS(&x->failed, &z, PTL_NI_PEER_DIED);
            } else {
                x->nsuspect++;
            }
        }
    }
    uint32_t todo = x->n < OFI_PROBE_MAX ? x->n : OFI_PROBE_MAX;
    for (uint32_t k = 0; k < todo; k++) {
        uint32_t p = x->probe_next;
        x->probe_next = p + 1 < x->n ? p + 1 : 0;
        if (p == x->me || peer_closed(x, p) || peer_other(x, p))
            continue;
        if (x->conn && x->conn[p] != OFI_CONN_UP)
            continue; /* host mode: no connection made at start (connect_all) */
        if (x->probe_t[p]) {
            uint32_t waited = x->tick - x->probe_k[p];
            if (x->kcheck) {
                if (waited >= OFI_PROBE_CHECK && x->chk_fd[p] < 0 &&
                    (int32_t)(x->tick - x->chk_next[p]) >= 0)
                    chk_start(x, p);
            } else if (waited >= OFI_PROBE_LATE &&
                       now - x->probe_t[p] >= OFI_PROBE_LATE * x->probe_ns) {
                pt_ofi_mark_dead(x, p, OFI_WHY_LATE);
            }
            continue;
        }
        x->probe_t[p] = now;
        x->probe_k[p] = x->tick;
        if (!pt_ofi_send_ctl(x, p, OFI_K_PROBE, 1)) {
            x->probe_t[p] = 0;
            if (x->dead[p])
                continue;
            break; /* no buffer: the next period */
        }
    }
}
