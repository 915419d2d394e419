/*
 * ofi_floor.c - the floor under a libportals ping-pong over libfabric: two
 * processes, each pinned to a cpu of its own, that ping-pong SIZE bytes
 * through a reliable datagram endpoint (FI_EP_RDM) of the provider that
 * PTL_TRANSPORT=ofi uses, as libfabric's own fi_pingpong does: one receive
 * posted ahead, fi_inject when the provider's inject size allows (else
 * fi_send and its completion), the completion queue read in a spin. No
 * libportals: what the provider alone costs.
 *
 * The one thing varied is the completion queue's wait object:
 *   none  FI_WAIT_NONE, as fi_pingpong opens it: nothing can sleep on it;
 *   fd    FI_WAIT_FD with FI_GETWAIT, as the ofi transport opens it so that
 *         its engine can sleep in poll() (docs/ofi.md, "Threads and
 *         sleeping"). The probe never sleeps on it: the difference between
 *         the two lines is what the descriptor's existence costs a message;
 *   nest  the same descriptor also added to an epoll set of the probe's own,
 *         as the ofi transport's sleep set held it until the fifty-second
 *         session (every wake-up of a descriptor in an epoll set runs the
 *         set's callback too).
 *
 *   usage: ptl_ofifloor [-p PROV] [-s SIZE] [-n ITERS] [--wait none|fd|nest|all]
 *                       [cpuA cpuB]
 *     -p PROV   provider, as PTL_OFI_PROVIDER (default tcp;ofi_rxm)
 *     -s SIZE   message size in bytes (default 8)
 *     -n ITERS  timed round trips per wait object (default 20000; a tenth
 *               more before them warm up)
 * Output: one line per wait object, "wait SIZE iters p50 mean" (half round
 * trip, us). Speed only; compare with fi_pingpong and ptl_pingpong -V put
 * over the same provider in the same minutes (bench/ofi-bench; the socket
 * providers also need FI_TCP_IFACE=lo or FI_NET_IFACE=lo to stay on
 * loopback). Exit status 1 when the provider cannot be opened or a message
 * arrives with the wrong contents.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "probe.h"

#define NAME_MAX_LEN 256

struct side {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *desc;
    fi_addr_t peer;
    char *buf; /* [0, size): what we send; [size, 2 size): the receive */
    size_t size;
    bool inject;
    int epfd; /* nest: the set that holds the CQ's descriptor, else -1 */
};

static const char *g_prov = "tcp;ofi_rxm";

static int die(const char *what, long rc)
{
    fprintf(stderr, "ptl_ofifloor: %s: %s\n", what, fi_strerror((int)-rc));
    return 1;
}

/* Everything up to an enabled endpoint with its name written to fd. */
static int open_side(struct side *s, enum fi_wait_obj wait, bool nest, int fd)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return die("fi_allocinfo", -FI_ENOMEM);
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_MSG;
    h->mode = FI_CONTEXT;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_SAFE; /* as the ofi transport asks */
    h->fabric_attr->prov_name = strdup(g_prov);
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &s->info);
    fi_freeinfo(h);
    if (rc)
        return die("fi_getinfo", rc);
    s->inject = s->size <= s->info->tx_attr->inject_size;
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = wait, .size = 64};
    if ((rc = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)))
        return die("fi_fabric", rc);
    if ((rc = fi_domain(s->fabric, s->info, &s->domain, NULL)))
        return die("fi_domain", rc);
    if ((rc = fi_av_open(s->domain, &ava, &s->av, NULL)))
        return die("fi_av_open", rc);
    if ((rc = fi_cq_open(s->domain, &cqa, &s->cq, NULL)))
        return die("fi_cq_open", rc);
    if (wait == FI_WAIT_FD) {
        int wfd = -1;
        if ((rc = fi_control(&s->cq->fid, FI_GETWAIT, &wfd)) || wfd < 0)
            return die("FI_GETWAIT", rc ? rc : -FI_EINVAL);
        struct epoll_event ev = {.events = EPOLLIN};
        if (nest && ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
                     epoll_ctl(s->epfd, EPOLL_CTL_ADD, wfd, &ev) != 0))
            return die("epoll set", -FI_EIO);
    }
    if ((rc = fi_endpoint(s->domain, s->info, &s->ep, NULL)))
        return die("fi_endpoint", rc);
    if ((rc = fi_ep_bind(s->ep, &s->av->fid, 0)) ||
        (rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_enable(s->ep)))
        return die("endpoint set-up", rc);
    s->buf = calloc(2, s->size ? s->size : 1);
    if (!s->buf)
        return die("calloc", -FI_ENOMEM);
    if (s->info->domain_attr->mr_mode & FI_MR_LOCAL) {
        if ((rc = fi_mr_reg(s->domain, s->buf, 2 * (s->size ? s->size : 1),
                            FI_SEND | FI_RECV, 0, 0, 0, &s->mr, NULL)))
            return die("fi_mr_reg", rc);
        s->desc = fi_mr_desc(s->mr);
    }
    char name[NAME_MAX_LEN];
    size_t len = sizeof name;
    if ((rc = fi_getname(&s->ep->fid, name, &len)))
        return die("fi_getname", rc);
    if (write(fd, &len, sizeof len) != (ssize_t)sizeof len || write(fd, name, len) != (ssize_t)len)
        return die("write of the name", -FI_EIO);
    return 0;
}

static int learn_peer(struct side *s, int fd)
{
    char name[NAME_MAX_LEN];
    size_t len;
    if (read(fd, &len, sizeof len) != (ssize_t)sizeof len || len > sizeof name ||
        read(fd, name, len) != (ssize_t)len)
        return die("read of the peer's name", -FI_EIO);
    if (fi_av_insert(s->av, name, 1, &s->peer, 0, NULL) != 1)
        return die("fi_av_insert", -FI_EINVAL);
    return 0;
}

static void close_side(struct side *s)
{
    if (s->ep)
        fi_close(&s->ep->fid);
    if (s->mr)
        fi_close(&s->mr->fid);
    if (s->cq)
        fi_close(&s->cq->fid);
    if (s->av)
        fi_close(&s->av->fid);
    if (s->domain)
        fi_close(&s->domain->fid);
    if (s->fabric)
        fi_close(&s->fabric->fid);
    if (s->info)
        fi_freeinfo(s->info);
    free(s->buf);
    if (s->epfd >= 0)
        close(s->epfd);
}

static struct fi_context g_rx_ctx, g_tx_ctx;

static int post_recv(struct side *s)
{
    ssize_t rc;
    while ((rc = fi_recv(s->ep, s->buf + s->size, s->size, s->desc, FI_ADDR_UNSPEC,
                         &g_rx_ctx)) == -FI_EAGAIN)
        (void)fi_cq_read(s->cq, NULL, 0);
    return rc ? die("fi_recv", rc) : 0;
}

/* Spin on the CQ until the completion with context ctx. */
static int wait_for(struct side *s, void *ctx)
{
    for (;;) {
        struct fi_cq_entry e;
        ssize_t n = fi_cq_read(s->cq, &e, 1);
        if (n == 1) {
            if (e.op_context == ctx)
                return 0;
            continue; /* a send's completion while waiting for a receive */
        }
        if (n == -FI_EAGAIN)
            continue;
        struct fi_cq_err_entry err = {0};
        (void)fi_cq_readerr(s->cq, &err, 0);
        return die("fi_cq_read", err.err ? -err.err : n);
    }
}

static int send_one(struct side *s, uint64_t it)
{
    if (s->size >= sizeof it)
        memcpy(s->buf, &it, sizeof it);
    ssize_t rc;
    if (s->inject) {
        while ((rc = fi_inject(s->ep, s->buf, s->size, s->peer)) == -FI_EAGAIN)
            (void)fi_cq_read(s->cq, NULL, 0);
        return rc ? die("fi_inject", rc) : 0;
    }
    while ((rc = fi_send(s->ep, s->buf, s->size, s->desc, s->peer, &g_tx_ctx)) == -FI_EAGAIN)
        (void)fi_cq_read(s->cq, NULL, 0);
    if (rc)
        return die("fi_send", rc);
    return wait_for(s, &g_tx_ctx);
}

static int check_recv(struct side *s, uint64_t it)
{
    uint64_t got;
    if (s->size < sizeof got)
        return 0;
    memcpy(&got, s->buf + s->size, sizeof got);
    if (got != it) {
        fprintf(stderr, "ptl_ofifloor: message %llu carried %llu\n", (unsigned long long)it,
                (unsigned long long)got);
        return 1;
    }
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One side of one measurement; rank 0 times and prints. */
static int run_side(int rank, enum fi_wait_obj wait, bool nest, size_t size, long iters, int cpu,
                    int fd)
{
    probe_pin(cpu);
    struct side s = {.size = size, .epfd = -1};
    int rc = open_side(&s, wait, nest, fd);
    if (!rc)
        rc = learn_peer(&s, fd);
    if (!rc)
        rc = post_recv(&s);
    char go = 1;
    if (!rc && (write(fd, &go, 1) != 1 || read(fd, &go, 1) != 1)) /* both receives posted */
        rc = die("the start", -FI_EIO);
    long warm = iters / 10, total = warm + iters;
    double *t = rank == 0 ? malloc(sizeof *t * (size_t)iters) : NULL;
    if (rank == 0 && !t)
        rc = die("malloc", -FI_ENOMEM);
    for (long i = 0; !rc && i < total; i++) {
        double t0 = rank == 0 ? probe_now_ns() : 0;
        if (rank == 0 && (rc = send_one(&s, (uint64_t)i)))
            break;
        if ((rc = wait_for(&s, &g_rx_ctx)) || (rc = check_recv(&s, (uint64_t)i)) ||
            (rc = post_recv(&s)))
            break;
        if (rank == 1 && (rc = send_one(&s, (uint64_t)i)))
            break;
        if (rank == 0 && i >= warm)
            t[i - warm] = (probe_now_ns() - t0) / 2e3;
    }
    if (!rc && rank == 0) {
        double sum = 0;
        for (long i = 0; i < iters; i++)
            sum += t[i];
        qsort(t, (size_t)iters, sizeof *t, cmp_d);
        printf("%-5s %8zu %8ld %10.3f %10.3f\n", nest ? "nest" : wait == FI_WAIT_FD ? "fd" : "none",
               size, iters,
               t[iters / 2], sum / (double)iters);
        fflush(stdout);
    }
    /* Neither side closes before the other's last message left. */
    if (write(fd, &go, 1) != 1 || read(fd, &go, 1) != 1)
        rc = rc ? rc : die("the end", -FI_EIO);
    free(t);
    close_side(&s);
    return rc;
}

static int measure(enum fi_wait_obj wait, bool nest, size_t size, long iters, const int cpus[2])
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("ptl_ofifloor: socketpair");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("ptl_ofifloor: fork");
        return 1;
    }
    if (pid == 0) {
        close(sv[0]);
        _exit(run_side(1, wait, nest, size, iters, cpus[1], sv[1]));
    }
    close(sv[1]);
    int rc = run_side(0, wait, nest, size, iters, cpus[0], sv[0]);
    close(sv[0]);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        rc = 1;
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: ptl_ofifloor [-p PROV] [-s SIZE] [-n ITERS] [--wait none|fd|nest|all] "
                    "[cpuA cpuB]\n");
}

int main(int argc, char **argv)
{
    size_t size = 8;
    long iters = 20000;
    int cpus[2] = {0, 1}, ncpu = 0, want = 7; /* bits: none, fd, nest */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            g_prov = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            size = strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
            const char *w = argv[++i];
            want = !strcmp(w, "none")   ? 1
                   : !strcmp(w, "fd")   ? 2
                   : !strcmp(w, "nest") ? 4
                   : !strcmp(w, "all")  ? 7
                                        : 0;
        } else if (argv[i][0] >= '0' && argv[i][0] <= '9' && ncpu < 2)
            cpus[ncpu++] = atoi(argv[i]);
        else {
            usage();
            return 2;
        }
    }
    if (!want || iters < 1 || ncpu == 1 || size > (1u << 20)) {
        usage();
        return 2;
    }
    printf("# provider %s; half round trip in us\n# wait  size    iters        p50       mean\n",
           g_prov);
    fflush(stdout);
    int rc = 0;
    if (want & 1)
        rc |= measure(FI_WAIT_NONE, false, size, iters, cpus);
    if (want & 2)
        rc |= measure(FI_WAIT_FD, false, size, iters, cpus);
    if (want & 4)
        rc |= measure(FI_WAIT_FD, true, size, iters, cpus);
    return rc ? 1 : 0;
}
