/*
 * ofi_open.c - opening and closing the libfabric transport (ofi_int.h): the
 * provider's choice (PTL_OFI_PROVIDER or the default rule), the fabric,
 * endpoint, buffers and sleep set (ofi_setup), the connections made in
 * PtlNIInit (connect_all), pt_ofi_open over the job region and
 * pt_ofi_open_pmix over a PMIx job, the close (byes) and free, and ptl_info's
 * provider list (pt_ofi_describe).
 */
#include "ofi_int.h"

#include "clock.h"
#include "config.h"
#include "log.h"
#include "proc.h"
#include "pt_atomic.h"
#include "shm.h"
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* ---- address exchange on one host: the job region's rank records --------- */

/* ctx: the ofi transport; its region is x->shm. The provider goes into the
 * record before the name (pt_shm_wire_check, after ofi_setup). */
static int region_publish(void *ctx, const void *name, size_t len)
{
    struct pt_xport *x = ctx;
    pt_shm_wire_provider(x->shm, x->prov);
    return pt_shm_ep_publish(x->shm, name, len);
}

static int region_lookup(void *ctx, uint32_t rank, void *name, size_t *len)
{
    uint32_t gen;
    return pt_shm_ep_lookup(((struct pt_xport *)ctx)->shm, rank, name, len, &gen);
}

static void ofi_free(struct pt_xport *x)
{
    for (uint32_t k = 0; k < x->nreg; k++)
        fi_close(&x->reg[k].mr->fid);
    x->nreg = 0;
    if (x->ep)
        fi_close(&x->ep->fid);
    if (x->smr)
        fi_close(&x->smr->fid);
    if (x->rmr)
        fi_close(&x->rmr->fid);
    if (x->av)
        fi_close(&x->av->fid);
    if (x->cq)
        fi_close(&x->cq->fid);
    if (x->ws)
        fi_close(&x->ws->fid);
    if (x->domain)
        fi_close(&x->domain->fid);
    if (x->fabric)
        fi_close(&x->fabric->fid);
    if (x->info)
        pt_fi_freeinfo(x->info);
    if (x->epfd >= 0)
        close(x->epfd);
    if (x->tfd >= 0)
        close(x->tfd);
    for (uint32_t k = 0; k < OFI_STEPS; k++)
        free(x->st[k].rd); /* the endpoint is closed: no read holds a context now */
    free(x->post_turns);
    while (x->rd_lost) {
        struct ofi_rdset *n = x->rd_lost->next;
        free(x->rd_lost);
        x->rd_lost = n;
    }
    if (x->chk_fd)
        for (uint32_t p = 0; p < x->n; p++)
            if (x->chk_fd[p] >= 0)
                chk_abort(x->chk_fd[p]);
    free(x->chk_fd);
    free(x->chk_next);
    free(x->chk_shift);
    free(x->probe_t);
    free(x->probe_k);
    free(x->dead_t);
    free(x->dead_why);
    free(x->dead_err);
    free(x->bye);
    free(x->conn);
    free(x->other);
    free(x->npendp);
    free(x->blk);
    if (x->pidfd)
        for (uint32_t p = 0; p < x->n; p++)
            if (x->pidfd[p] >= 0)
                close(x->pidfd[p]);
    free(x->pidfd);
    free(x->addr);
    free(x->cred);
    free(x->owe);
    free(x->sent);
    free(x->sbase);
    free(x->rbase);
    free(x->dead);
    free((void *)x->gone);
    free(x->owe_flag);
    free(x->sb);
    free(x->smem);
    free(x->pend);
    free(x->rmem);
    free(x->in);
    free(x->rxo);
    free(x->held_list);
    free(x->inmem);
    free(x->reg);
    free(x->rk);
    free(x);
}

/* ofi_close, waiting for byes to leave: progress, or wait up to 1 ms for the
 * CQ (connection setup included: rxm's CM events wake it) rather than spin. */
static void close_wait(struct pt_xport *x)
{
    if (pt_ofi_progress(x))
        return;
    struct fid *f = &x->cq->fid;
    if (fi_trywait(x->fabric, &f, 1) == FI_SUCCESS) {
        struct pollfd pf = {.fd = x->cq_fd, .events = POLLIN};
        (void)poll(&pf, 1, 1);
    }
}

void pt_ofi_close(struct pt_xport *x)
{
    if (pt_wrap_n()) /* PTL_TEST_WRAP: where the counters ended */
        for (uint32_t p = 0; p < x->n; p++)
            if (p != x->me)
                pt_log(PT_LOG_INFO,
                       "PTL_TEST_WRAP: ofi to %u: stamps sent %u; from %u: next stamp %u, "
                       "rings %u %u; credit epoch %u, flush pass %u",
                       p, x->sent[p], p, x->rxo[p].next, x->in[p * 2].tail, x->in[p * 2 + 1].tail,
                       LD_RELAXED(&x->cred_epoch), x->flush_pass);
    /* Sends still queued or in flight: give them a moment to leave (an answer
     * the peer waits for), then tear down; the region records the detach. */
    for (int i = 0; i < 1000 && (x->pend_head != x->pend_tail || (x->nsb && x->sfree == UINT32_MAX)); i++)
        pt_ofi_progress(x);
    if (x->pmix) {
        /* PMIx job, either mode: a bye to every peer that has not closed (its
         * probes to us would fail once our endpoint is gone: not a death;
         * what it still waits for from us fails at once: ofi_departures,
         * ofi_peer_alive; host mode too since the node-region audit, where
         * a get to a rank that had left waited for ever), for at most
         * OFI_BYE_MS; a peer that misses it judges us dead. Each peer's bye
         * waits only behind that peer's sends (a new connection needs the
         * peer's engine to run: a busy machine may take a while). */
        const uint64_t bye_ns = (uint64_t)OFI_BYE_MS * 1000000u;
        while (pt_ofi_progress(x) == OFI_CQ_BATCH)
            ;
        uint64_t t0 = pt_now_ns();
        for (uint32_t p = 0; p < x->n; p++) {
            if (p == x->me || peer_closed(x, p) || peer_other(x, p))
                continue; /* (a node peer: the region tells it we left) */
            while (!pt_ofi_send_ctl(x, p, OFI_K_BYE, 2) && !x->dead[p] && pt_ofi_peer_addr(x, p) &&
                   pt_now_ns() - t0 < bye_ns)
                close_wait(x); /* no free buffer: completions return them */
        }
        while ((x->byes_left || x->pend_head != x->pend_tail) && pt_now_ns() - t0 < bye_ns)
            close_wait(x);
        if (x->byes_left)
            pt_log(PT_LOG_INFO, "ofi: %u byes not sent within %u ms: those peers will take "
                                "this rank's exit for a death", x->byes_left, OFI_BYE_MS);
    }
    struct pt_xport *shm = x->shm;
    const struct pt_xport_ops *so = x->so;
    if (!x->pmix) {
        /* the region says we left before our endpoint goes: a peer whose
         * send fails meanwhile takes it for our exit, not a lost
         * connection (lost_peer) */
        so->close(shm);
        ofi_free(x);
        return;
    }
    ofi_free(x);
    so->close(shm);
}

/* ---- opening ------------------------------------------------------------------ */

static struct fi_info *make_hints(const char *prov)
{
    struct fi_info *h = pt_fi_dupinfo(NULL);
    if (!h)
        return NULL;
    h->caps = FI_MSG | FI_MULTI_RECV | FI_RMA | FI_READ | FI_REMOTE_READ;
    h->mode = FI_CONTEXT;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    h->domain_attr->threading = FI_THREAD_SAFE; /* rx_pending's fi_trywait: any thread */
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    if (prov && *prov)
        h->fabric_attr->prov_name = strdup(prov);
    return h;
}

/* The default provider: reliable across hosts, best first. Providers that
 * reach only this host (shm) or are unreliable underneath (udp;ofi_rxd) are
 * taken only when named. */
static const char *const g_pref[] = {"verbs;ofi_rxm", "psm2", "tcp;ofi_rxm", "net"};
/* (sockets, udp;ofi_rxd and shm cannot give a completion queue a wait
 * descriptor, FI_WAIT_FD with FI_GETWAIT, on which the engine sleeps: named,
 * PtlNIInit refuses them saying so, and ptl_info marks them unusable.) */

bool pt_ofi_trywait_blind(const char *prov, uint32_t prov_version)
{
    if (!prov)
        return false;
    size_t core = strcspn(prov, ";"); /* "tcp;ofi_rxm": the core under rxm */
    uint32_t major = prov_version >> 16;
    if (core == 3 && !strncmp(prov, "net", 3))
        return major < 119; /* 0: a provider that did not say; peek anyway */
    if (core == 3 && !strncmp(prov, "tcp", 3))
        return major >= 118 && major < 119;
    return false;
}

/* Does this fabric address name the loopback interface (127/8, ::1)? */
static bool is_loopback(const struct fi_info *i)
{
    const struct sockaddr *sa = i->src_addr;
    if (!sa || (i->addr_format != FI_SOCKADDR && i->addr_format != FI_SOCKADDR_IN &&
                i->addr_format != FI_SOCKADDR_IN6))
        return false;
    if (sa->sa_family == AF_INET && i->src_addrlen >= sizeof(struct sockaddr_in))
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6 && i->src_addrlen >= sizeof(struct sockaddr_in6))
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

/* The first entry of `list` that suits: the named provider, else the best of
 * g_pref; with `no_loopback`, never one bound to the loopback interface. */
static struct fi_info *pick(struct fi_info *list, const char *want, bool no_loopback)
{
    if (want && *want) {
        for (struct fi_info *i = list; i; i = i->next)
            if (!no_loopback || !is_loopback(i))
                return i;
        return NULL;
    }
    for (size_t k = 0; k < sizeof g_pref / sizeof g_pref[0]; k++)
        for (struct fi_info *i = list; i; i = i->next)
            if (!strcmp(i->fabric_attr->prov_name, g_pref[k]) && (!no_loopback || !is_loopback(i)))
                return i;
    return NULL;
}

/* rxm's eager buffers. ofi_rxm (tcp;ofi_rxm, verbs;ofi_rxm) gives every
 * endpoint a receive and a send pool of 1,024 buffers of FI_OFI_RXM_BUFFER_SIZE
 * bytes (16 KiB by default) and writes zeros over each pool when it fills it
 * (the receive pool at fi_enable, the send pool at the first send that is no
 * inject): 2 x 17 MB written per process, half the CPU time of a small job
 * (perf: a 2-rank ring's 1.34 s of CPU, 0.70 s with 4 KiB buffers). Our
 * largest message is OFI_PFX + a slot (4,224 bytes by default), so unless
 * the user has set it, the variable is set to that around the process's
 * first fi_getinfo (libfabric initialises its providers there and reads
 * their variables then) and removed again, so that programs this one starts
 * do not inherit it. A process that had used libfabric before its first NI
 * keeps what it had. docs/ofi.md, "rxm's buffers". */
static bool rxm_buffer_size_set(size_t msg_max)
{
    static bool done; /* PtlNIInit runs one at a time (api/ni.c) */
    if (done || !msg_max)
        return false;
    done = true;
    if (getenv("FI_OFI_RXM_BUFFER_SIZE"))
        return false;
    char v[24];
    snprintf(v, sizeof v, "%zu", msg_max);
    return setenv("FI_OFI_RXM_BUFFER_SIZE", v, 0) == 0;
}

/* msg_max: the largest message this process will send (0: not known, ptl_info) */
static int get_info(struct fi_info **all_p, struct fi_info **chosen_p, bool no_loopback,
                    size_t msg_max)
{
    int rc = pt_fi_load(); /* the first call opens libfabric (ofi_fabric.h) */
    if (rc) {
        *all_p = NULL;
        *chosen_p = NULL;
        return rc;
    }
    const char *want = pt_config()->ofi_provider;
    struct fi_info *hints = make_hints(want);
    if (!hints)
        return -ENOMEM;
    struct fi_info *all = NULL;
    bool set = rxm_buffer_size_set(msg_max);
    rc = pt_fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &all);
    if (set)
        unsetenv("FI_OFI_RXM_BUFFER_SIZE");
    pt_fi_freeinfo(hints);
    if (rc) {
        *all_p = NULL;
        *chosen_p = NULL;
        return rc;
    }
    *all_p = all;
    *chosen_p = pick(all, want, no_loopback);
    return 0;
}

/* Can provider i give a completion queue the wait descriptor the engine
 * sleeps on (FI_WAIT_FD, then FI_GETWAIT)? 0, or the failure and, in *what,
 * the call that failed. Opens and closes a fabric, domain and CQ: ptl_info. */
static int wait_fd_probe(const struct fi_info *i, const char **what)
{
    struct fid_fabric *fab = NULL;
    struct fid_domain *dom = NULL;
    struct fid_cq *cq = NULL;
    int fd = -1, rc = pt_fi_fabric(i->fabric_attr, &fab, NULL);
    *what = "fi_fabric";
    if (!rc) {
        *what = "fi_domain";
        rc = fi_domain(fab, (struct fi_info *)i, &dom, NULL);
    }
    if (!rc) {
        struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD, .size = 64};
        *what = "fi_cq_open with FI_WAIT_FD";
        rc = fi_cq_open(dom, &cqa, &cq, NULL);
    }
    if (!rc) {
        *what = "FI_GETWAIT";
        rc = fi_control(&cq->fid, FI_GETWAIT, &fd);
    }
    if (cq)
        fi_close(&cq->fid);
    if (dom)
        fi_close(&dom->fid);
    if (fab)
        fi_close(&fab->fid);
    return rc;
}

void pt_ofi_describe(FILE *f)
{
    struct fi_info *all = NULL, *ch = NULL;
    int rc = get_info(&all, &ch, false, 0);
    const char *want = pt_config()->ofi_provider;
    if (rc) {
        fprintf(f, "  no provider offers FI_EP_RDM with messages, multi-receive and RMA read%s%s: "
                   "%s\n", *want ? " under PTL_OFI_PROVIDER=" : "", want, pt_fi_strerror(-rc));
        return;
    }
    char seen[1024] = "";
    for (struct fi_info *i = all; i; i = i->next) {
        const char *p = i->fabric_attr->prov_name;
        if (strstr(seen, p) && strstr(seen, p)[strlen(p)] == ',')
            continue;
        if (strlen(seen) + strlen(p) + 2 < sizeof seen) {
            strcat(seen, p);
            strcat(seen, ",");
        }
        fprintf(f, "  provider %-16s (first domain %s, fabric %s)\n", p,
                i->domain_attr->name ? i->domain_attr->name : "?",
                i->fabric_attr->name ? i->fabric_attr->name : "?");
    }
    const char *what = NULL;
    int wrc = ch ? wait_fd_probe(ch, &what) : 0;
    if (ch && wrc)
        fprintf(f, "  PTL_TRANSPORT=ofi would use: %s, domain %s%s, which is UNUSABLE: %s: %s "
                   "(the engine sleeps on its completion queue's wait descriptor); PtlNIInit "
                   "will refuse it: name another with PTL_OFI_PROVIDER\n",
                ch->fabric_attr->prov_name, ch->domain_attr->name ? ch->domain_attr->name : "?",
                *want ? " (PTL_OFI_PROVIDER)" : "", what, pt_fi_strerror(-wrc));
    else if (ch)
        fprintf(f, "  PTL_TRANSPORT=ofi uses: %s, domain %s%s\n", ch->fabric_attr->prov_name,
                ch->domain_attr->name ? ch->domain_attr->name : "?",
                *want ? " (PTL_OFI_PROVIDER)" : " (default rule: verbs;ofi_rxm, psm2, "
                                                "tcp;ofi_rxm, net)");
    else
        fprintf(f, "  PTL_TRANSPORT=ofi: none of the default providers is present; set "
                   "PTL_OFI_PROVIDER\n");
    pt_fi_freeinfo(all);
}

/* The provider cannot give what the engine sleeps on: say so, and what to do. */
static int no_wait_fd(const struct pt_xport *x, const char *what, const char *call, int rc)
{
    pt_log(PT_LOG_ERR, "ofi: provider %s cannot give %s (%s: %s), on which libportals' engine "
                       "sleeps (docs/ofi.md): name another with PTL_OFI_PROVIDER (ptl_info lists "
                       "those found and says which is usable)",
           x->prov, what, call, pt_fi_strerror(-rc));
    return rc;
}

static int open_fabric(struct pt_xport *x)
{
    struct fi_info *all = NULL, *ch = NULL;
    /* Peers on other hosts cannot reach a loopback address, and a socket
     * bound to one cannot connect to them (connect() from 127.0.0.1 to
     * another interface's address fails with EINVAL: the "fi_send ...
     * Invalid argument" of the two-namespace job). Socket providers (tcp,
     * net, sockets) offer only loopback while no other interface is UP and
     * RUNNING, and an interface's RUNNING flag follows its "up" by up to a
     * second, later under load (the kernel's link watch): a rank started
     * just after its interface came up would bind to 127.0.0.1 and publish
     * that name. So a job with peers on other hosts never takes a loopback
     * address: it looks again for a while (OFI_IFACE_WAIT_MS), then fails
     * saying why. */
    int rc = get_info(&all, &ch, x->remote_peers, OFI_PFX + (size_t)x->slot);
    for (int waited = 0; !rc && !ch && all && x->remote_peers && waited < OFI_IFACE_WAIT_MS;
         waited += 100) {
        pt_fi_freeinfo(all);
        all = NULL;
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        rc = get_info(&all, &ch, true, OFI_PFX + (size_t)x->slot);
    }
    if (!rc && !ch && all && x->remote_peers) {
        const char *want = pt_config()->ofi_provider;
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: the job has ranks on other hosts, but "
                           "libfabric%s%s offers only loopback addresses here after %d s (is the "
                           "network interface up and running? FI_TCP_IFACE / FI_SOCKETS_IFACE "
                           "name it)", *want ? " provider " : "", want, OFI_IFACE_WAIT_MS / 1000);
        pt_fi_freeinfo(all);
        return -ENETDOWN;
    }
    if (rc || !ch) {
        const char *want = pt_config()->ofi_provider;
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: no libfabric provider%s%s offers a reliable "
                           "datagram endpoint with messages, multi-receive and RMA read%s%s "
                           "(ptl_info lists the providers)",
               *want ? " " : "", want, rc ? ": " : "", rc ? pt_fi_strerror(-rc) : "");
        if (all)
            pt_fi_freeinfo(all);
        return rc ? rc : -ENODEV;
    }
    x->info = pt_fi_dupinfo(ch);
    pt_fi_freeinfo(all);
    if (!x->info)
        return -ENOMEM;
    snprintf(x->prov, sizeof x->prov, "%s", x->info->fabric_attr->prov_name);
    x->trywait_blind = pt_ofi_trywait_blind(x->prov, x->info->fabric_attr->prov_version);
    x->mr_virt = x->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
    x->max_read = x->info->ep_attr && x->info->ep_attr->max_msg_size
                      ? (size_t)x->info->ep_attr->max_msg_size
                      : SIZE_MAX;
    x->mr_prov_key = x->info->domain_attr->mr_mode & FI_MR_PROV_KEY;
#define TRY(call, what)                  \
    do {                                 \
        rc = (call);                     \
        if (rc) {                        \
            log_fi(what, rc);            \
            return rc;                   \
        }                                \
    } while (0)
    TRY(pt_fi_fabric(x->info->fabric_attr, &x->fabric, NULL), "fi_fabric");
    TRY(fi_domain(x->fabric, x->info, &x->domain, NULL), "fi_domain");
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD,
                             .size = 4096};
    if (x->trywait_blind) {
        /* Its CQ's wait object is signalled at every completion and only a
         * trywait resets it, which this provider's does not: a sleeper's
         * descriptor stayed readable and the offload NIC thread spun through
         * poll() beside its application thread (ofi_rx_pending). A wait set
         * of our own can be reset (fi_wait with no timeout). */
        struct fi_wait_attr wa = {.wait_obj = FI_WAIT_FD};
        TRY(fi_wait_open(x->fabric, &wa, &x->ws), "fi_wait_open");
        cqa.wait_obj = FI_WAIT_SET;
        cqa.wait_set = x->ws;
    }
    rc = fi_cq_open(x->domain, &cqa, &x->cq, NULL);
    if (rc == -FI_ENOSYS || rc == -FI_EINVAL || rc == -FI_EOPNOTSUPP)
        return no_wait_fd(x, "a completion queue a wait descriptor", "fi_cq_open with FI_WAIT_FD",
                          rc);
    TRY(rc, "fi_cq_open");
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = x->n};
    TRY(fi_av_open(x->domain, &ava, &x->av, NULL), "fi_av_open");
    TRY(fi_endpoint(x->domain, x->info, &x->ep, NULL), "fi_endpoint");
    TRY(fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    TRY(fi_ep_bind(x->ep, &x->av->fid, 0), "fi_ep_bind(av)");
    size_t minmr = OFI_PFX + x->slot;
    TRY(fi_setopt(&x->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &minmr, sizeof minmr),
        "FI_OPT_MIN_MULTI_RECV");
    TRY(fi_enable(x->ep), "fi_enable");
    rc = fi_control(x->ws ? &x->ws->fid : &x->cq->fid, FI_GETWAIT, &x->cq_fd);
    if (rc)
        return no_wait_fd(x, "its completion queue's wait descriptor", "FI_GETWAIT", rc);
#undef TRY
    return 0;
}

/* PMIx job (x->conn; offload mode too since the thirty-fifth session, see
 * ofi_setup): a connection to every peer before PtlNIInit
 * returns, made while every rank runs its engine here (after the wire-up
 * fence, every name known): a probe to each, then progress until the
 * provider has written each one (its completion: the connection is up) or
 * PTL_PMIX_TIMEOUT_S has passed. On a connection that is up a probe
 * completes whether or not the peer's engine runs, and so does a bye: the
 * host-mode probe (probe_tick) then tells a rank that computes alive and a
 * rank that left in order gone, as in offload mode. A peer whose connection
 * is not up is not probed (its probe may still complete later: then it is);
 * its death is found by a failed send, as before. The connections are up
 * before the first rank returns: rxm makes one per pair, so once our probe
 * to a peer completed its probes to us need none of our engine. */
static void connect_all(struct pt_xport *x)
{
    uint64_t t0 = pt_now_ns(), idle_since = 0;
    uint64_t bound = (uint64_t)pt_config()->pmix_timeout_s * 1000000000u;
    uint32_t next = 0, up = 0, asked = 0;
    for (;;) {
        for (; next < x->n; next++) { /* ask each peer once, as buffers allow */
            uint32_t p = next;
            if (p == x->me || x->dead[p] || LD_RELAXED(&x->gone[p]) || peer_other(x, p) ||
                !pt_ofi_peer_addr(x, p))
                continue;
            x->probe_t[p] = pt_now_ns();
            x->probe_k[p] = x->tick;
            x->conn[p] = OFI_CONN_ASKED;
            if (!pt_ofi_send_ctl(x, p, OFI_K_PROBE, 1)) {
                x->probe_t[p] = 0;
                x->conn[p] = OFI_CONN_NONE;
                break; /* no buffer: after some completions */
            }
        }
        asked = up = 0;
        for (uint32_t p = 0; p < x->n; p++) {
            asked += x->conn[p] == OFI_CONN_ASKED;
            up += x->conn[p] == OFI_CONN_UP;
        }
        if (next == x->n && !asked)
            break;
        uint64_t now = pt_now_ns();
        if (now - t0 >= bound || LD_RELAXED(&x->failed))
            break; /* (a death the launcher reported: PMIx's event) */
        if (pt_ofi_progress(x)) {
            idle_since = 0;
            continue;
        }
        /* Nothing yet: the peers' engines run here too (more ranks than
         * cores: give them the core; after 10 ms, sleep a little). */
        if (!idle_since)
            idle_since = now;
        if (now - idle_since < 10000000u)
            sched_yield();
        else
            usleep(200);
    }
    uint32_t peers = x->n - 1;
    for (uint32_t p = 0; p < x->n; p++)
        peers -= peer_other(x, p);
    bool offload = pt_config()->offload;
    if (up == peers)
        pt_log(PT_LOG_INFO, "ofi: %s mode: connected to the %u peers in %.1f ms (the liveness probe)",
               offload ? "offload" : "host", peers, (double)(pt_now_ns() - t0) / 1e6);
    else if (offload)
        pt_log(PT_LOG_WARN, "ofi: offload mode: %u of %u peers connected in %.1f s; the others "
                            "connect at their first message or probe",
               up, peers, (double)(pt_now_ns() - t0) / 1e9);
    else
        pt_log(PT_LOG_WARN, "ofi: host mode: %u of %u peers connected in %.1f s; the others are "
                            "not probed until their connection is up (a death among them is "
                            "found by a failed send)",
               up, peers, (double)(pt_now_ns() - t0) / 1e9);
    if (offload) {
        /* the NIC thread probes every peer, connected now or not (probe_tick) */
        free(x->conn);
        x->conn = NULL;
    }
}

static int ofi_setup(struct pt_xport *x)
{
    uint32_t n = x->n;
    x->epfd = -1;
    x->tfd = -1;
    x->fault = (uint8_t)pt_config()->ofi_fault;
    x->probe_t = calloc(n, sizeof *x->probe_t);
    x->probe_k = calloc(n, sizeof *x->probe_k);
    x->post_turns = calloc(n, sizeof *x->post_turns);
    bool rd_ok = x->post_turns != NULL;
    for (uint32_t k = 0; k < OFI_STEPS; k++)
        rd_ok &= (x->st[k].rd = calloc(1, sizeof *x->st[k].rd)) != NULL;
    x->dead_t = calloc(n, sizeof *x->dead_t);
    x->dead_why = calloc(n, 1);
    x->dead_err = calloc(n, sizeof *x->dead_err);
    x->bye = calloc(n, 1);
    x->npendp = calloc(n, sizeof *x->npendp);
    x->blk = calloc(n, sizeof *x->blk);
    x->chk_fd = malloc(n * sizeof *x->chk_fd);
    x->chk_next = calloc(n, sizeof *x->chk_next);
    x->chk_shift = calloc(n, 1);
    if (!x->probe_t || !x->probe_k || !rd_ok || !x->dead_t || !x->dead_why || !x->dead_err ||
        !x->bye || !x->npendp || !x->blk || !x->chk_fd || !x->chk_next || !x->chk_shift)
        return -ENOMEM;
    for (uint32_t p = 0; p < n; p++)
        x->chk_fd[p] = -1;
    x->addr = malloc(n * sizeof *x->addr);
    x->cred = calloc((size_t)n * 2, sizeof *x->cred);
    x->owe = calloc((size_t)n * 2, sizeof *x->owe);
    x->sent = calloc(n, sizeof *x->sent);
    x->sbase = calloc((size_t)n * 2 * 32, sizeof *x->sbase);
    x->rbase = calloc((size_t)n * 2 * 32, sizeof *x->rbase);
    x->dead = calloc(n, 1);
    x->gone = calloc(n, sizeof *x->gone);
    x->owe_flag = calloc(n, sizeof *x->owe_flag);
    x->pidfd = malloc(n * sizeof *x->pidfd);
    if (x->pidfd)
        for (uint32_t p = 0; p < n; p++)
            x->pidfd[p] = -1;
    x->in = calloc((size_t)n * 2, sizeof *x->in);
    x->rxo = calloc(n, sizeof *x->rxo);
    x->held_list = calloc(n, sizeof *x->held_list);
    uint64_t want_sb = (uint64_t)n * 2 * x->qslots + n;
    x->nsb = want_sb > 1024 ? 1024 : (uint32_t)want_sb;
    x->sb = calloc(x->nsb, sizeof *x->sb);
    x->npend_cap = x->nsb;
    x->pend = calloc(x->npend_cap, sizeof *x->pend);
    size_t sbytes = OFI_PFX + x->slot;
    x->smem = aligned_alloc(64, (size_t)x->nsb * sbytes);
    size_t rsize = 64 * sbytes > (256u << 10) ? 64 * sbytes : (256u << 10);
    x->rmem = aligned_alloc(64, OFI_NRBUF * rsize);
    x->inmem = aligned_alloc(64, (size_t)n * 2 * x->qslots * x->slot);
    x->reg_cap = 2 * (uint32_t)pt_config()->req_slots + 64 * n;
    x->reg = calloc(x->reg_cap, sizeof *x->reg);
    x->rk = calloc(x->reg_cap, sizeof *x->rk);
    if (!x->addr || !x->cred || !x->owe || !x->sent || !x->sbase || !x->rbase || !x->dead ||
        !x->gone || !x->owe_flag || !x->pidfd || !x->in || !x->rxo || !x->held_list || !x->sb ||
        !x->pend || !x->smem || !x->rmem || !x->inmem || !x->reg || !x->rk)
        return -ENOMEM;
    for (uint32_t p = 0; p < n; p++) {
        x->addr[p] = FI_ADDR_NOTAVAIL;
        x->cred[p * 2] = x->cred[p * 2 + 1] = x->qslots;
        x->pidfd[p] = -1;
        for (int c = 0; c < 2; c++)
            x->in[p * 2 + c].slots = x->inmem + ((size_t)p * 2 + c) * x->qslots * x->slot;
        if (pt_wrap_n()) { /* PTL_TEST_WRAP: order stamps (both sides), inbound rings */
            x->sent[p] = x->rxo[p].next = pt_wrap32();
            for (int c = 0; c < 2; c++)
                x->in[p * 2 + c].head = x->in[p * 2 + c].tail = pt_wrap32();
        }
    }
    if (pt_wrap_n()) {
        ST_RELAXED(&x->cred_epoch, pt_wrap32());
        x->flush_pass = pt_wrap32();
        for (uint32_t k = 0; k < OFI_STEPS; k++)
            x->st[k].gen = (1u << 28) - 4u; /* OFI_RD_IDX keeps 28 bits of it */
    }
    x->rr[0] = x->rr[1] = n - 1;
    x->sfree = UINT32_MAX;
    x->pend_res = UINT32_MAX;
    for (uint32_t i = x->nsb; i-- > 0;) {
        x->sb[i].c.kind = CTX_SEND;
        x->sb[i].mem = x->smem + (size_t)i * sbytes;
        sbuf_free(x, i);
    }
    int rc = open_fabric(x);
    if (rc)
        return rc;
    x->inject = pt_config()->ofi_short ? x->info->tx_attr->inject_size : 0;
    /* short messages are built below the slot, in the prefix's 64 bytes */
    x->short_max = (uint32_t)(x->inject < OFI_PFX ? x->inject : OFI_PFX);
    if (x->short_max < sizeof(struct ofi_spfx) + 4)
        x->short_max = 0; /* room for no changed word */
    for (uint32_t i = 0; i < OFI_NRBUF; i++) {
        x->rb[i].c.kind = CTX_RECV;
        x->rb[i].mem = x->rmem + (size_t)i * rsize;
        x->rb[i].size = rsize;
        rc = pt_ofi_post_rbuf(x, i);
        if (rc)
            return rc;
    }
    /* The sleep set: every peer's pidfd, the PMIx launcher's event and the
     * probe's timer. Not the CQ's wait object: the sleepers poll it beside
     * the set (cq_fd), since a descriptor inside an epoll set runs the set's
     * callback at each of its wake-ups, and the CQ's wakes at every
     * completion (xport.h). */
    x->epfd = pt_fd_above_std(epoll_create1(EPOLL_CLOEXEC));
    if (x->epfd < 0)
        return -errno;
    if (x->ev_fd >= 0) {
        struct epoll_event e2 = {.events = EPOLLIN, .data.u32 = UINT32_MAX - 1};
        if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->ev_fd, &e2) != 0)
            return -errno;
    }
    int64_t probe_ms = pt_config()->ofi_probe_ms;
    bool host_probe = !pt_config()->offload && n <= OFI_CONNECT_MAX;
    if (x->pmix && probe_ms > 0 && n > 1 && (pt_config()->offload || host_probe)) {
        /* PMIx job: the liveness probe's timer (probe_tick). A probe
         * completes once the provider has connected to the peer, which needs
         * the peer's engine to run: in host mode a rank that makes no Portals
         * call for a few seconds was taken for dead (mp_pmix_liveness_busy_host,
         * docs/ofi.md), and a rank that left in order before its first
         * contact with a host-mode peer that computes could not say bye, so
         * it was taken for dead once its endpoint refused the kernel's check
         * (an audit of the host-mode probe, 2026-11-30: 6 of 6 runs). So in
         * host mode the connections are made in PtlNIInit, while every rank
         * runs its engine there (connect_all, after the wire-up fence), and
         * only peers connected then are probed; jobs above OFI_CONNECT_MAX
         * ranks are not (a connection to every peer).
         * Offload mode makes them there too (up to OFI_CONNECT_MAX ranks) and
         * then probes every peer as before (conn freed, connect_all): the
         * first probe of each rank was its first send that is no inject,
         * and rxm then zeroes its 17 MB pool of send buffers (1,024 x
         * 16 KiB, util_buf.c) on the spot. At the first probe period, mid
         * run, that took 90 ms of the NIC thread while it held the engine:
         * once per run an 8 B ping-pong across the two namespaces waited
         * ~100 ms (bench/results-ofi.md, "Thirty-fifth session"). With it,
         * the connections' set-up leaves the application's first messages
         * too. */
        if (n <= OFI_CONNECT_MAX) { /* (host mode is here only below it) */
            x->conn = calloc(n, 1);
            if (!x->conn)
                return -ENOMEM;
        }
        x->tfd = pt_fd_above_std(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
        if (x->tfd < 0)
            return -errno;
        x->probe_ns = (uint64_t)probe_ms * 1000000u;
        struct itimerspec its = {
            .it_interval = {probe_ms / 1000, (probe_ms % 1000) * 1000000},
            .it_value = {probe_ms / 1000, (probe_ms % 1000) * 1000000}};
        struct epoll_event e3 = {.events = EPOLLIN, .data.u32 = UINT32_MAX - 2};
        if (timerfd_settime(x->tfd, 0, &its, NULL) != 0 ||
            epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->tfd, &e3) != 0)
            return -errno;
        /* The kernel's check: the tcp provider (alone or under rxm) names an
         * endpoint by the IPv4/IPv6 address its listening socket is bound to.
         * (verbs' names are IP addresses too, but of the RDMA CM, which no TCP
         * connect reaches: those keep the time window.) */
        const char *pn = x->info->fabric_attr->prov_name;
        uint32_t af = x->info->addr_format;
        x->kcheck = !strncmp(pn, "tcp", 3) && (pn[3] == '\0' || pn[3] == ';') &&
                    (af == FI_SOCKADDR || af == FI_SOCKADDR_IN || af == FI_SOCKADDR_IN6);
        pt_log(PT_LOG_INFO, "ofi: liveness probe every %lld ms; a late probe is judged %s",
               (long long)probe_ms, x->kcheck ? "by the kernel's answer at the peer's address"
                                               : "after 4 periods");
    }
    for (uint32_t p = 0; p < n; p++) {
        pid_t pid = p == x->me ? 0 : x->so->peer_ospid(x->shm, p);
        if (pid <= 0)
            continue;
        int fd = pt_fd_above_std((int)syscall(SYS_pidfd_open, pid, 0));
        if (fd < 0)
            continue; /* gone already, or an old kernel: the launcher's flag still works */
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = p};
        if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            continue;
        }
        x->pidfd[p] = fd;
        x->npidfd++;
    }
    /* Our name, for the peers. */
    char name[256];
    size_t len = sizeof name;
    rc = fi_getname(&x->ep->fid, name, &len);
    if (rc) {
        log_fi("fi_getname", rc);
        return rc;
    }
#ifdef PTL_WITH_PMIX
    if (x->pmix)
        pt_pmix_wire_provider(x->ax.ctx, x->prov); /* (the region's: region_publish) */
#endif
    rc = x->ax.publish(x->ax.ctx, name, len);
    if (rc && rc != -EIO) /* -EIO: the exchange said why (the PMIx fence, its timeout) */
        pt_log(PT_LOG_ERR, "ofi: cannot publish the endpoint name (%zu bytes): %s", len,
               strerror(-rc));
    else if (x->conn && !x->connect_later)
        connect_all(x);
    return rc;
}

int pt_ofi_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                struct pt_xport_info *info_p)
{
    const struct pt_xport_ops *so;
    struct pt_xport *shm;
    int rc = pt_shm_open(slot_size, queue_slots, pid_hint, &so, &shm, info_p);
    if (rc)
        return rc;
    if (info_p->rank >= info_p->nranks) {
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: a process that joins a running job (a guest) "
                           "needs PTL_TRANSPORT=shm (docs/ofi.md)");
        so->close(shm);
        return -ENOTSUP;
    }
    /* A rank that published a name before (PtlNIFini, then PtlNIInit again)
     * would get a new endpoint that its peers do not know: their address
     * vectors, credits and order stamps describe the old one. Refused until
     * re-attaching is done (docs/ofi.md), rather than left to hang. */
    char old[PT_SHM_EP_NAME_MAX];
    size_t oldlen = sizeof old;
    uint32_t gen;
    if (pt_shm_ep_lookup(shm, info_p->rank, old, &oldlen, &gen) == 0) {
        pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: rank %u initialises an NI a second time in this "
                           "job (after PtlNIFini): not supported over libfabric yet",
               info_p->rank);
        so->close(shm);
        return -ENOTSUP;
    }
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x) {
        so->close(shm);
        return -ENOMEM;
    }
    x->so = so;
    x->shm = shm;
    x->me = info_p->rank;
    x->n = info_p->nranks;
    info_p->nprocs = info_p->nranks; /* no guests over ofi (ofi_rank_of) */
    info_p->ranks_here = 0;            /* a network transport: not told */
    x->slot = info_p->slot_size;
    x->qslots = pt_shm_queue_depth(shm);
    x->ax = (struct ofi_addrx){x, region_publish, region_lookup};
    x->ev_fd = -1;
    rc = ofi_setup(x);
    if (rc == 0 && pt_shm_wire_check(shm) != 0)
        rc = -EPROTO; /* another provider's names: refused, not left to hang */
    if (rc) {
        ofi_free(x);
        so->close(shm);
        return rc < 0 ? rc : -EIO;
    }
    *ops_p = pt_ofi_ops();
    *x_p = x;
    info_p->cma_ok = true;
    info_p->cma_why = "ofi: the puller reads with fi_read (RMA)";
    info_p->rndv_iov_max = 1; /* reg_desc */
    pt_log(PT_LOG_INFO, "ofi: rank %u of %u on provider %s", x->me, x->n, x->prov);
    return 0;
}

#ifdef PTL_WITH_PMIX
/* Mixed job (mix.c): which peers another transport serves, then host mode's
 * connections. Before, ofi made a connection to every rank of the job, its
 * node peers included (the probe in offload mode, connect_all in host mode,
 * the byes at close): a full node of N ranks held N x (N - 1) TCP connections
 * that never carried a message. Token holder (PtlNIInit's). */
int pt_ofi_serve(struct pt_xport *x, const uint8_t *others)
{
    if (others) {
        x->other = malloc(x->n);
        if (!x->other)
            return -ENOMEM;
        memcpy(x->other, others, x->n);
        x->other[x->me] = 0;
    }
    x->connect_later = false;
    if (x->conn)
        connect_all(x);
    return 0;
}

/* A process started by a PMIx launcher: every peer over libfabric, identity,
 * liveness and the name exchange from PMIx (pmix.c). */
int pt_ofi_open_pmix(uint32_t slot_size, uint32_t queue_slots, const struct pt_xport_ops **ops_p,
                     struct pt_xport **x_p, struct pt_xport_info *info_p)
{
    struct pt_pmix_sub sub;
    int rc = pt_pmix_open(info_p, &sub);
    if (rc)
        return rc;
    return pt_ofi_open_pmix_sub(&sub, slot_size, queue_slots, false, ops_p, x_p, info_p);
}

int pt_ofi_open_pmix_sub(const struct pt_pmix_sub *subp, uint32_t slot_size, uint32_t queue_slots,
                         bool connect_later, const struct pt_xport_ops **ops_p,
                         struct pt_xport **x_p, struct pt_xport_info *info_p)
{
    struct pt_pmix_sub sub = *subp;
    int rc;
    info_p->slot_size = slot_size;
    struct pt_xport *x = calloc(1, sizeof *x);
    if (!x) {
        sub.ops->close(sub.x);
        return -ENOMEM;
    }
    x->so = sub.ops;
    x->shm = sub.x;
    x->pmix = true;
    x->remote_peers = !sub.all_local;
    x->me = info_p->rank;
    x->n = info_p->nranks;
    x->slot = slot_size;
    x->qslots = pt_queue_slots_for(queue_slots);
    x->ax = sub.ax;
    x->ev_fd = sub.event_fd;
    x->connect_later = connect_later;
    rc = ofi_setup(x);
    if (rc) {
        ofi_free(x);
        sub.ops->close(sub.x);
        return rc < 0 ? rc : -EIO;
    }
    *ops_p = pt_ofi_ops();
    *x_p = x;
    info_p->cma_ok = true;
    info_p->cma_why = "ofi: the puller reads with fi_read (RMA)";
    info_p->rndv_iov_max = 1; /* reg_desc */
    pt_log(PT_LOG_INFO, "ofi: rank %u of %u on provider %s (PMIx job)", x->me, x->n, x->prov);
    return 0;
}
#endif
