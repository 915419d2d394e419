/*
 * shm.c - the shared-memory transport: the processes of a job on one host
 * talk through the job region (shm_region.h): a message is written into a
 * buffer of the sender's pool and its index is published on the (sender,
 * receiver, class) descriptor ring; receivers poll only the senders their
 * "senders with work" bitmap named. Bulk data is pulled with
 * process_vm_readv (CMA).
 *
 * Three parts:
 *   - the region: layout, creation (memfd or named), validation;
 *   - the launcher's side (ptlrun): child pids, deaths, job failure, stale
 *     segment cleanup;
 *   - the rank's side: pt_shm_open() and the xport ops.
 *
 * Hot path (reserve/commit/peek/release): no malloc, no syscalls, no logging,
 * except the futex wake in commit when the receiver announced sleep, and the
 * one error logged when a sender's ring is found corrupt (rx_faulty).
 */
#include "shm.h"

#include "clock.h"
#include "config.h"
#include "cpu.h"
#include "log.h"
#include "perturb.h"
#include "trace.h"

#include <p3api/misc.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif

#define SHM_DIR "/dev/shm"          /* where glibc's shm_open() keeps names       */
#define SHM_STALE_AGE_S 60          /* headerless segments older than this: stale */
#define PT_SHM_TMP_SEP '~'          /* a creator's private name: <name>~<pid>; no
                                     * job name has it (pt_shm_name)            */
#define PT_SHM_ALIVE_NS 10000000ull /* peer_alive: re-ask the kernel after 10 ms  */

/* ---- layout --------------------------------------------------------------- */



uint64_t pt_shm_region_bytes(uint32_t nranks, uint32_t nguests, uint32_t slot_size,
                             uint32_t qslots, uint32_t pool_req, uint32_t pool_rsp)
{
    struct pt_shm_layout l;
    return pt_shm_layout(nranks, nguests, slot_size, qslots, pool_req, pool_rsp, &l) ? 0
                                                                                     : l.total;
}

uint32_t pt_shm_guests_for(uint32_t nranks)
{
    int64_t g = pt_config()->job_guests;
    if (g < 0) /* default: 4, or fewer in a smaller job */
        g = nranks < 4 ? nranks : 4;
    return g > (int64_t)PT_SHM_MAX_GUESTS ? PT_SHM_MAX_GUESTS : (uint32_t)g;
}

int pt_shm_name(char *buf, size_t len, const char *job)
{
    size_t n = job ? strlen(job) : 0;
    if (n == 0 || n > 40)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = job[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || (c == '.' && i > 0)))
            return -EINVAL;
    }
    int w = snprintf(buf, len, "/ptl-%u-%s", (unsigned)getuid(), job);
    return w > 0 && (size_t)w < len ? 0 : -ENAMETOOLONG;
}

/* ---- CMA probe ------------------------------------------------------------ */

/* Probe target for peers: its address goes into the region (rank records,
 * owner_probe_addr); peers read it with process_vm_readv. */
static const uint64_t g_probe_word = PT_SHM_MAGIC;

uint64_t pt_cma_probe_addr(void) { return (uint64_t)(uintptr_t)&g_probe_word; }

void pt_cma_allow_readers(bool any)
{
    (void)prctl(PR_SET_PTRACER, any ? PR_SET_PTRACER_ANY : 0, 0, 0, 0);
}

int pt_cma_probe(pid_t pid, uint64_t addr, const char **why)
{
    uint64_t v = 0;
    struct iovec lv = {&v, sizeof v};
    struct iovec rv = {(void *)(uintptr_t)addr, sizeof v};
    ssize_t n = process_vm_readv(pid, &lv, 1, &rv, 1, 0);
    if (n == (ssize_t)sizeof v) {
        *why = v == PT_SHM_MAGIC ? "process_vm_readv works"
                                 : "process_vm_readv works (probe word differs)";
        return 0;
    }
    int e = n < 0 ? errno : EIO;
    switch (e) {
    case EPERM:
        *why = "process_vm_readv refused (EPERM): Yama ptrace_scope or a non-dumpable peer";
        break;
    case ENOSYS:
        *why = "process_vm_readv unavailable (ENOSYS): kernel without CMA or a seccomp filter";
        break;
    case ESRCH:
        *why = "probe target gone (ESRCH)";
        break;
    case EFAULT:
        *why = "probe address not mapped in the target (EFAULT); the call itself works";
        break;
    default:
        *why = "process_vm_readv failed";
        break;
    }
    return -e;
}

/* ---- region creation ------------------------------------------------------ */

static void region_init(void *base, const struct pt_shm_layout *l, const struct pt_shm_spec *s,
                        uint32_t flags)
{
    struct pt_shm_hdr *h = base;
    /* The memory is fresh (zero-filled). owner_pid first: stale-segment
     * cleanup judges a region that never became ready by it. */
    h->owner_pid = (int32_t)getpid();
    h->magic = PT_SHM_MAGIC;
    h->version = PT_SHM_VERSION;
    h->hdr_size = sizeof *h;
    h->total_size = l->total;
    h->nranks = s->nranks;
    h->nguests = s->nguests;
    h->slot_size = s->slot_size;
    h->qslots = s->qslots;
    h->pool_req = s->pool_req;
    h->pool_rsp = s->pool_rsp;
    h->jid = s->jid;
    h->flags = flags;
    h->off_ranks = l->off_ranks;
    h->off_procs = l->off_procs;
    h->proc_bytes = l->proc_bytes;
    h->pool_off = l->pool_off;
    h->ring_bytes = l->ring_bytes;
    h->off_trace = l->off_trace;
    h->trace_bytes = l->trace_bytes;
    h->owner_probe_addr = pt_cma_probe_addr();
    ST_RELAXED(&h->job_failed, 0);
    ST_RELAXED(&h->first_dead, -1);
    ST_RELAXED(&h->nattached, 0);
    ST_RELAXED(&h->guests_hwm, 0);
    for (uint32_t r = 0; r < l->nprocs; r++) {
        struct pt_shm_rank *rec = pt_shm_rankrec(base, l, r);
        bool rank = r < s->nranks;
        pt_waitword_init(&rec->bell, true);
        ST_RELAXED(&rec->ospid, 0);
        ST_RELAXED(&rec->nid, rank && s->nids ? s->nids[r] : 0);
        ST_RELAXED(&rec->pid, !rank ? 0xffffffffu : s->pids ? s->pids[r] : r);
        ST_RELAXED(&rec->state, PT_SHM_R_NONE);
        ST_RELAXED(&rec->dead, 0);
        ST_RELAXED(&rec->wstatus, 0);
        ST_RELAXED(&rec->probe_addr, 0);
        ST_RELAXED(&rec->ep_len, 0);
        ST_RELAXED(&rec->ep_gen, 0);
    }
    /* Rings, heads and bitmaps start zeroed (fresh memory): nothing to touch,
     * so creating a large job writes only the header and the records. */
    ST_RELEASE(&h->ready, 1); /* R-READY pairs with A-READY in region_check() */
}

static int map_fd(int fd, uint64_t size, void **base_p)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    *base_p = p;
    return 0;
}

/* Open the POSIX shm name `name` ("/ptl-...") as a file: no link followed,
 * and never blocking (O_NONBLOCK: a FIFO squatting the name would block an
 * open forever). The fd (FD_CLOEXEC) and its fstat, or -errno. */
static int shm_open_nb(const char *name, int flags, struct stat *st)
{
    char path[sizeof SHM_DIR + 128];
    int w = snprintf(path, sizeof path, SHM_DIR "%s", name);
    if (w < 0 || (size_t)w >= sizeof path)
        return -ENAMETOOLONG;
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Why a named region's file cannot be a job region of ours, or NULL: it must
 * be a regular file, owned by this uid (the one in its name), that no other
 * user may open (group and other bits clear; we create it 0600). */
static const char *shm_file_refusal(const struct stat *st, char *buf, size_t len)
{
    if (!S_ISREG(st->st_mode)) {
        const char *t = S_ISFIFO(st->st_mode)  ? "a FIFO"
                        : S_ISDIR(st->st_mode) ? "a directory"
                        : S_ISSOCK(st->st_mode) ? "a socket"
                                                : "a device or other special file";
        snprintf(buf, len, "not a regular file (%s)", t);
    } else if (st->st_uid != getuid()) {
        snprintf(buf, len, "owned by uid %u, not by this job's uid %u", (unsigned)st->st_uid,
                 (unsigned)getuid());
    } else if (st->st_mode & 077) {
        snprintf(buf, len, "open to other users (mode %04o; a job region is 0600)",
                 (unsigned)(st->st_mode & 07777));
    } else {
        return NULL;
    }
    return buf;
}

int pt_shm_create(const struct pt_shm_spec *spec, const char *job, struct pt_shm_region *r)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    int rc = pt_shm_layout(spec->nranks, spec->nguests, spec->slot_size, spec->qslots,
                           spec->pool_req, spec->pool_rsp, &r->l);
    if (rc)
        return rc;
    char tmp[sizeof r->name + 16] = "";
    int fd;
    if (!job) {
        fd = memfd_create("ptl-job", MFD_CLOEXEC);
        if (fd < 0)
            return -errno;
        (void)fchmod(fd, 0600); /* best effort: memfds are not reachable by name anyway */
    } else {
        rc = pt_shm_name(r->name, sizeof r->name, job);
        if (rc)
            return rc;
        /* Build under a private name, then link(2) it into place: nobody ever
         * opens a half-built region, and of racing creators exactly one wins. */
        snprintf(tmp, sizeof tmp, "%s%c%ld", r->name, PT_SHM_TMP_SEP, (long)getpid());
        fd = shm_open(tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return -errno;
        r->named = true;
    }
    if (ftruncate(fd, (off_t)r->l.total) != 0) {
        rc = -errno;
        goto fail;
    }
    rc = map_fd(fd, r->l.total, &r->base);
    if (rc)
        goto fail;
    r->size = r->l.total;
    r->fd = fd;
    r->nranks = spec->nranks;
    region_init(r->base, &r->l, spec, job ? PT_SHM_F_NAMED : 0);
    if (job) {
        char from[sizeof tmp + sizeof SHM_DIR], to[sizeof r->name + sizeof SHM_DIR];
        snprintf(from, sizeof from, SHM_DIR "%s", tmp);
        snprintf(to, sizeof to, SHM_DIR "%s", r->name);
        if (link(from, to) != 0) {
            rc = -errno; /* -EEXIST: another creator won, or the name is in use */
            munmap(r->base, r->size);
            r->base = NULL;
            goto fail;
        }
        shm_unlink(tmp);
    }
    return 0;
fail:
    close(fd);
    if (tmp[0])
        shm_unlink(tmp);
    r->fd = -1;
    r->named = false;
    return rc;
}

void pt_shm_region_close(struct pt_shm_region *r, bool unlink_name)
{
    if (r->base)
        munmap(r->base, r->size);
    if (r->fd >= 0)
        close(r->fd);
    if (r->named && unlink_name)
        shm_unlink(r->name); /* ENOENT: the last rank to attach did it already */
    r->base = NULL;
    r->fd = -1;
}

/* ---- region validation ---------------------------------------------------- */

/* A region another process built: ready, ours, consistent. Checks a private
 * copy of the header's immutable lines, *id, which the caller uses from then
 * on: any process of the job can rewrite the shared header later. 0 or
 * -errno with *why set. Fills *id and *l. */
static int region_check(void *base, uint64_t size, struct pt_shm_hdr *id,
                        struct pt_shm_layout *l, const char **why)
{
    if (size < sizeof *id) {
        *why = "smaller than a region header";
        return -EPROTO;
    }
    if (!LD_ACQUIRE(&((struct pt_shm_hdr *)base)->ready)) { /* A-READY pairs with R-READY */
        *why = "not ready (its creator did not finish)";
        return -EPROTO;
    }
    memcpy(id, base, offsetof(struct pt_shm_hdr, ready)); /* lines 0-1: immutable */
    if (id->magic != PT_SHM_MAGIC) {
        *why = "bad magic: not a libportals job region";
        return -EPROTO;
    }
    if (id->version != PT_SHM_VERSION || id->hdr_size != sizeof *id) {
        *why = "region version differs from this library's";
        return -EPROTO;
    }
    if (id->total_size != size) {
        *why = "region size differs from its header";
        return -EPROTO;
    }
    if (pt_shm_layout(id->nranks, id->nguests, id->slot_size, id->qslots, id->pool_req,
                      id->pool_rsp, l) != 0 ||
        l->total != size ||
        l->off_ranks != id->off_ranks || l->off_procs != id->off_procs ||
        l->proc_bytes != id->proc_bytes || l->pool_off != id->pool_off ||
        l->ring_bytes != id->ring_bytes || l->off_trace != id->off_trace ||
        l->trace_bytes != id->trace_bytes) {
        *why = "region layout differs from this library's";
        return -EPROTO;
    }
    return 0;
}

/* Can process p still run? kill(p, 0) says whether it exists; a zombie
 * (exited, not reaped yet: its parent died or does not wait for it) exists
 * but will never run again, so /proc/<p>/stat is asked as well. Control path
 * only (several syscalls). */
static bool pid_alive(pid_t p)
{
    if (p <= 0 || (kill(p, 0) != 0 && errno == ESRCH))
        return false;
    char path[32], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true; /* no /proc: trust kill() */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may contain anything */
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* Can any process still use this region? (the owner or any rank alive) */
static bool region_in_use(void *base, uint64_t size)
{
    struct pt_shm_hdr *h = base;
    if (pid_alive(h->owner_pid))
        return true;
    /* read once: the bound below must hold for the loop */
    uint32_t nr = h->nranks, ng = h->nguests, n = nr + ng;
    if (h->magic != PT_SHM_MAGIC || h->off_ranks != sizeof *h || nr > PT_SHM_MAX_RANKS ||
        ng > PT_SHM_MAX_GUESTS ||
        sizeof *h + (uint64_t)n * sizeof(struct pt_shm_rank) > size)
        return false;
    struct pt_shm_rank *rec = (struct pt_shm_rank *)((char *)base + sizeof *h);
    for (uint32_t r = 0; r < n; r++)
        if (pid_alive(LD_RELAXED(&rec[r].ospid)))
            return true;
    return false;
}

/* ---- launcher side -------------------------------------------------------- */

static void wake_all_bells(struct pt_shm_region *r)
{
    for (uint32_t i = 0; i < r->l.nprocs; i++)
        pt_wake_all(&pt_shm_rankrec(r->base, &r->l, i)->bell);
}

void pt_shm_set_ospid(struct pt_shm_region *r, uint32_t rank, pid_t pid)
{
    if (rank < r->nranks)
        ST_RELAXED(&pt_shm_rankrec(r->base, &r->l, rank)->ospid, (int32_t)pid);
}

uint32_t pt_shm_rank_state(const struct pt_shm_region *r, uint32_t rank)
{
    if (rank >= r->nranks)
        return PT_SHM_R_NONE;
    return LD_ACQUIRE(&pt_shm_rankrec(r->base, &r->l, rank)->state); /* A-ATT */
}

static void fail_job(struct pt_shm_region *r, uint32_t code, int32_t rank)
{
    struct pt_shm_hdr *h = r->base;
    if (rank >= 0) {
        int32_t none = -1;
        RMW_CAS(&h->first_dead, &none, rank);
    }
    uint32_t zero = 0;
    RMW_CAS(&h->job_failed, &zero, code); /* the first failure names the job's */
    wake_all_bells(r); /* pt_wake_all: every sleeper rechecks and sees the failure */
}

bool pt_shm_rank_exited(struct pt_shm_region *r, uint32_t rank, int wstatus)
{
    if (rank >= r->nranks)
        return false;
    struct pt_shm_rank *rec = pt_shm_rankrec(r->base, &r->l, rank);
    ST_RELAXED(&rec->wstatus, wstatus);
    /* A rank that ends still attached (exit without PtlNIFini) is dead to
     * its peers like one that crashed: what they sent it, or wait for from
     * it, will never be answered. */
    bool failed = !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) ||
                  LD_ACQUIRE(&rec->state) == PT_SHM_R_ATTACHED; /* A-ATT */
    if (failed) {
        ST_RELAXED(&rec->dead, 1); /* before the RMW in fail_job: a rank that sees
                                    * job_failed and then asks peer_alive finds it */
        fail_job(r, PTL_NI_PEER_DIED, (int32_t)rank);
    }
    return failed;
}

void pt_shm_fail_job(struct pt_shm_region *r, uint32_t code)
{
    fail_job(r, code, -1);
}

int pt_shm_guests_reap(struct pt_shm_region *r, uint32_t *guest_p, pid_t *ospid_p,
                       uint32_t *pid_p)
{
    int found = 0;
    for (uint32_t g = r->nranks; g < r->l.nprocs; g++) {
        struct pt_shm_rank *rec = pt_shm_rankrec(r->base, &r->l, g);
        uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT */
        pid_t o = LD_RELAXED(&rec->ospid);
        if ((st != PT_SHM_R_ATTACHED && st != PT_SHM_R_CLAIMING) || o <= 0 ||
            LD_RELAXED(&rec->dead) || pid_alive(o))
            continue;
        /* Gone while attached (a crash, or an exit without PtlNIFini): dead
         * to its peers like a rank that failed. A clean PtlNIFini first
         * stores DETACHED, then ospid 0, so a reader that sees o and st
         * together from a live guest never gets here (pid_alive). */
        if (LD_RELAXED(&rec->ospid) != o)
            continue; /* claimed again meanwhile */
        ST_RELAXED(&rec->dead, 1);
        if (!found++) {
            *guest_p = g - r->nranks;
            *ospid_p = o;
            *pid_p = LD_RELAXED(&rec->pid);
        }
        fail_job(r, PTL_NI_PEER_DIED, (int32_t)g);
    }
    return found;
}

int pt_shm_clean_stale(bool verbose)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "ptl-%u-", (unsigned)getuid());
    size_t plen = strlen(prefix);
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) > 100)
            continue;
        /* Only regular files of ours, looked at without following a link. */
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != getuid()) {
            if (verbose)
                fprintf(stderr, "ptlrun: left alone " SHM_DIR "/%s: %s\n", e->d_name,
                        !S_ISREG(st.st_mode) ? "not a regular file" : "another uid's");
            continue;
        }
        char name[sizeof e->d_name + 1];
        snprintf(name, sizeof name, "/%s", e->d_name);
        bool stale = false;
        const char *tmp = strchr(e->d_name + plen, PT_SHM_TMP_SEP);
        if (tmp) {
            /* A creator's private name "<job>~<pid>" (no job name has a '~'):
             * stale once its creator is gone. Anything else with a '~' is
             * not a name we make: left alone. */
            char *end;
            errno = 0;
            long pid = strtol(tmp + 1, &end, 10);
            stale = tmp[1] >= '0' && tmp[1] <= '9' && *end == '\0' && errno == 0 && pid > 0 &&
                    pid <= INT32_MAX && !pid_alive((pid_t)pid);
        } else {
            int fd = shm_open_nb(name, O_RDONLY, &st);
            if (fd < 0)
                continue;
            if (st.st_uid != getuid() || !S_ISREG(st.st_mode)) { /* changed since fstatat */
                close(fd);
                continue;
            }
            bool old = time(NULL) - st.st_mtime > SHM_STALE_AGE_S;
            if ((uint64_t)st.st_size < sizeof(struct pt_shm_hdr)) {
                stale = old;
            } else {
                uint64_t want = (uint64_t)st.st_size;
                if (want > sizeof(struct pt_shm_hdr) +
                               PT_SHM_MAX_PROCS * (uint64_t)sizeof(struct pt_shm_rank))
                    want = sizeof(struct pt_shm_hdr) +
                           PT_SHM_MAX_PROCS * (uint64_t)sizeof(struct pt_shm_rank);
                void *p = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
                if (p != MAP_FAILED) {
                    const struct pt_shm_hdr *h = p;
                    if (h->magic == PT_SHM_MAGIC)
                        stale = !region_in_use(p, want);
                    else
                        stale = old && !pid_alive(h->owner_pid);
                    munmap(p, want);
                }
            }
            close(fd);
        }
        if (stale && shm_unlink(name) == 0) {
            removed++;
            if (verbose)
                fprintf(stderr, "ptlrun: removed stale job segment " SHM_DIR "%s\n", name);
        }
    }
    closedir(d);
    return removed;
}

/* ---- the rank's transport ------------------------------------------------- */

#define SHM_NOBUF 0xffffu  /* a ring position whose buffer we do not take back */
/* rx_drop's hysteresis: idle senders are unlisted after this many empty
 * peeks in a row, or at every empty peek while more than DROP_LISTED are
 * listed (a long active list costs every peek). */
#define PT_SHM_DROP_PEEKS  64
#define PT_SHM_DROP_LISTED 8

/* Receiving, per (sender s, class c): private to the token holder. */
struct shm_rx {
    struct pt_shm_ring *ring;     /* s's ring to us (shared; s writes)             */
    _Atomic uint32_t *hd;         /* our consumer head of it (shared; we write)    */
    char *pool;                   /* s's pool of class c                           */
    uint32_t head;                /* next position to consume                      */
    uint32_t ctail;               /* the tail last read (A-TAIL), checked          */
    uint32_t ord;                 /* the order stamp of the message peek returned
                                   * (xport.h, "Order")                          */
    uint32_t adv;                 /* on the advanced list (release; rx_done)       */
};

/* Sending, per (receiver r, class c): private to the token holder. */
struct shm_tx {
    struct pt_shm_ring *ring;     /* our ring to r (shared; we write)              */
    _Atomic uint32_t *hd;         /* r's consumer head of it (shared; r writes)    */
    uint16_t *map;                /* [pos & mask]: the buffer we put there         */
    uint32_t tail;                /* next position to fill                         */
    uint32_t rec;                 /* positions before it: buffers taken back       */
    /* Pacing hint: messages sent since the peer last sent us one (a stream);
     * see shm_commit. */
    uint32_t streak;
    uint32_t armed;               /* on the armed list (tx_arm; stall_clear)       */
    uint32_t want_at;             /* the threshold we last stored (tx_arm)          */
};

/* Per sender, receiving: the stamp due next in order (the one after the last
 * message released), and whether its head request was deferred. */
struct shm_rx_ord {
    uint32_t next;
    uint32_t req_waits;
    uint32_t held;                /* defer: peek skips the sender until unhold_all  */
    _Atomic uint32_t bad;         /* its ring held a value no sender writes: never
                                   * read again (token holder writes once; any
                                   * thread reads, rx_pending)                   */
};

struct pt_xport {
    struct pt_shm_layout l;       /* our checked copy of the region's geometry      */
    struct shm_rx *in;            /* [s * 2 + c]: ring s -> me (we consume)        */
    struct shm_tx *out;           /* [r * 2 + c]: ring me -> r (we produce)        */
    struct pt_shm_rank *ranks;    /* the region's process records (ranks, guests)  */
    struct pt_shm_hdr *hdr;
    uint32_t me, n;               /* my process slot; the job's ranks              */
    uint32_t np;                  /* process slots: ranks + guests                 */
    uint32_t mask, slot_size;     /* ring entries - 1; buffer bytes                */
    pid_t ospid;                  /* the process that attached (fork: not us)     */
    /* Our pools: free buffers, a private stack per class (no atomics). */
    char *pool[PT_CLS_NR];
    uint16_t *freel[PT_CLS_NR];
    uint32_t nfree[PT_CLS_NR];
    /* Receivers that may still hold buffers of ours (positions not taken
     * back): the only peers a pool refill looks at. */
    uint32_t *holders, nholders;
    uint8_t *holding;             /* [r]: r is in holders                          */
    /* The credit wait (docs/waiting.md, "Stalled on credits"). Sending: the
     * rings (r * 2 + c) whose mark we set since stall_clear; written by the
     * token holder, read by any thread (stall_armed: the count first, then
     * entries below it, each a valid ring index whatever the race). */
    _Atomic uint32_t *armed, narmed;
    uint32_t stall_ctr;           /* reserve failures that armed (token holder)    */
    /* Receiving: the rings (s * 2 + c) whose head we moved since rx_done. */
    uint32_t *advl, nadv;
    /* Senders with work: our bitmap (shared), our bit in everyone's. */
    _Atomic uint64_t *words, *sum;
    uint64_t my_bit, my_sbit;     /* our bit in a receiver's word, and its summary */
    uint32_t my_word, my_sword;
    /* The active list: senders peek polls (round robin from rr, per class). */
    uint32_t *act, nact;
    uint8_t *listed;              /* [s]: s is in act                              */
    uint32_t idle_peeks;          /* peeks in a row that found nothing (rx_drop)   */
    uint32_t rr[PT_CLS_NR];       /* peek: the act index served last, per class     */
    uint32_t *held_list, nheld;   /* senders with rxo[s].held set, to clear them     */
    struct shm_rx_ord *rxo;       /* [s]: order state of sender s's two rings        */
    uint32_t *nids, *pids;        /* private copy of the ranks' (immutable) ids     */
    uint64_t *alive_until;        /* peer_alive: last "alive" answer valid until    */
    void *peer_mem;               /* the mapping that holds the per-peer arrays     */
    size_t peer_bytes;
    bool cma_allowed;             /* PTL_CMA != 0                                   */
    uint32_t qslots;              /* the region's queue depth                       */
    void *base;
    uint64_t size;
};

/* Process-wide: the job's fd stays open (FD_CLOEXEC) so that a later PtlNIInit
 * after PtlNIFini can re-attach; the attach counter counts a process once.
 * Guarded by g_lock (opens are rare and serialised by the API anyway). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static bool g_named;
static bool g_counted;
static char g_name[80];

#define PT_XPORT_PF_BYTES (3u * PT_CACHELINE) /* "small": what the prefetch covers */

/* Take back the buffers receiver r has moved past on ring t of class c (A-HEAD
 * pairs with r's R-HEAD: r is done reading them). A head outside
 * [rec, tail] is not one r wrote: no progress. */
static void tx_reclaim(struct pt_xport *x, struct shm_tx *t, uint32_t c)
{
    uint32_t h = LD_ACQUIRE(t->hd); /* A-HEAD */
    if (h - t->rec > t->tail - t->rec)
        return;
    for (; t->rec != h; t->rec++) {
        uint16_t b = t->map[t->rec & x->mask];
        if (b != SHM_NOBUF && x->nfree[c] < x->l.pool_n[c])
            x->freel[c][x->nfree[c]++] = b;
    }
}

/* A pool ran dry: take back what every receiver that holds buffers of ours
 * has consumed (only those: the holders list, never all peers). */
static void tx_reclaim_all(struct pt_xport *x)
{
    for (uint32_t i = 0; i < x->nholders;) {
        uint32_t r = x->holders[i];
        struct shm_tx *t = &x->out[r * 2];
        tx_reclaim(x, t, PT_CLS_REQ);
        tx_reclaim(x, t + 1, PT_CLS_RSP);
        if (t->rec == t->tail && t[1].rec == t[1].tail) {
            x->holding[r] = 0;
            x->holders[i] = x->holders[--x->nholders];
        } else {
            i++;
        }
    }
}

/* C-ARM (model/credit.pml): set ring t's mark, where its receiver looks
 * after it moves the head, and list it for stall_armed. The receiver rings
 * once it has consumed half of what we have outstanding there (at least one
 * message; model: HALF): a wake-up per D/2 messages, not one per message,
 * when it frees a slot per pass (incast). Cold path. */
static void tx_arm(struct pt_xport *x, struct shm_tx *t)
{
    uint32_t out = t->tail - t->rec, at = t->rec + (out + 1) / 2;
    /* A poll retrying the stall finds its mark set as it left it: no store
     * to the line the receiver reads its entries from (model: C-ARM is
     * skipped when want and want_at already hold these values). */
    if (t->want_at != at || !LD_RELAXED(&t->ring->want)) {
        t->want_at = at;
        ST_RELAXED(&t->ring->want_at, at); /* C-ARM: the threshold ... */
        ST_RELEASE(&t->ring->want, 1);     /* ... then the mark */
    }
    if (!t->armed) {
        t->armed = 1;
        uint32_t n = LD_RELAXED(&x->narmed);
        ST_RELAXED(&x->armed[n], (uint32_t)(t - x->out));
        ST_RELEASE(&x->narmed, n + 1); /* the entry before the count (stall_armed) */
    }
}

/* The ring to `peer` is full: arm its mark, then look again (C-FENCE,
 * C-HEAD). True if room appeared (the mark stays: a ring more at worst). */
static bool tx_arm_ring(struct pt_xport *x, struct shm_tx *t, uint32_t cls)
{
    tx_arm(x, t);
    FENCE_FULL(); /* C-FENCE: C-ARM before the head's reload (MUT_CFENCE) */
    tx_reclaim(x, t, cls); /* C-HEAD: A-HEAD again (MUT_NORELOAD leaves it out) */
    return t->tail - t->rec <= x->mask;
}

/* Our pool of class cls is empty: arm every ring of that class that still
 * holds buffers of ours (the holders list), then take back what they have
 * consumed (C-FENCE, C-HEAD). True if a buffer came back. */
static bool tx_arm_pool(struct pt_xport *x, uint32_t cls)
{
    for (uint32_t i = 0; i < x->nholders; i++) {
        struct shm_tx *t = &x->out[x->holders[i] * 2 + cls];
        if (t->rec != t->tail)
            tx_arm(x, t);
    }
    FENCE_FULL(); /* C-FENCE */
    tx_reclaim_all(x); /* C-HEAD of every holder */
    return x->nfree[cls] != 0;
}

static void *shm_reserve(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (PT_UNLIKELY(peer >= x->np))
        return NULL;
    struct shm_tx *t = &x->out[peer * 2 + cls];
    if (t->tail - t->rec > x->mask) { /* the ring looks full: ask where r is */
        tx_reclaim(x, t, cls);
        if (t->tail - t->rec > x->mask && !tx_arm_ring(x, t, cls)) {
            x->stall_ctr++; /* armed: r rings us when it frees room */
            return NULL;
        }
    }
    if (PT_UNLIKELY(!x->nfree[cls])) {
        tx_reclaim_all(x);
        if (!x->nfree[cls] && !tx_arm_pool(x, cls)) {
            x->stall_ctr++;
            return NULL;
        }
    }
    /* The buffer at the top of the free stack; commit takes it. A reserve
     * that is not committed leaves nothing behind. */
    return x->pool[cls] + (size_t)x->freel[cls][x->nfree[cls] - 1] * x->slot_size;
}

static inline uint32_t *slot_ord(void *slot)
{
    return (uint32_t *)((char *)slot + PT_XPORT_ORD_OFF);
}

/* pt_wake_if_sleeping without its fence, for a caller that has just executed
 * FENCE_FULL (or a seq_cst RMW) after its publish. */
static inline void wake_if_sleeping_fenced(struct pt_waitword *w)
{
    if (LD_RELAXED(&w->sleepers)) {
        uint32_t p = LD_RELAXED(&w->polled);
        if (p == 0 || p > PT_POLLED_MAX)
            pt_wake_all(w);
    }
}

static void shm_commit(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len)
{
    struct shm_tx *t = &x->out[peer * 2 + cls];
    uint16_t b = x->freel[cls][--x->nfree[cls]]; /* the buffer reserve returned */
    char *buf = x->pool[cls] + (size_t)b * x->slot_size;
    /* Order stamp: messages committed to this peer so far, both classes (the
     * two tails resume together after a re-attach). R-TAIL publishes it. */
    *slot_ord(buf) = x->out[peer * 2].tail + x->out[peer * 2 + 1].tail;
    uint32_t pos = t->tail;
    t->map[pos & x->mask] = b;
    ST_RELAXED(&t->ring->ent[pos & x->mask], b);
    t->tail = pos + 1;
    ST_RELEASE(&t->ring->tail, pos + 1); /* R-TAIL pairs with A-TAIL */
    if (PT_UNLIKELY(!x->holding[peer])) {
        x->holding[peer] = 1;
        x->holders[x->nholders++] = peer;
    }
    if (++t->streak >= 2 && len <= PT_XPORT_PF_BYTES && x->nfree[cls]) {
        /* Streaming small messages: own the next buffer's first lines before
         * we fill it (the receiver read it last). */
        char *next = x->pool[cls] + (size_t)x->freel[cls][x->nfree[cls] - 1] * x->slot_size;
        PREFETCH_W(next);
        PREFETCH_W(next + 64);
    }
    /* F-SND: R-TAIL before the load of our bit (D-BIT, shm_region.h) and,
     * the doorbell's D1 (engine/wait.h), before the load of its sleepers
     * (model/region.pml commit(); MUT_FSND removes it). */
    PT_PERTURB();
    FENCE_FULL();
    char *rb = (char *)x->base + x->l.off_procs + (uint64_t)peer * x->l.proc_bytes;
    _Atomic uint64_t *w = (_Atomic uint64_t *)(rb + x->l.words_off) + x->my_word;
    if (PT_UNLIKELY(!(LD_RELAXED(w) & x->my_bit))) {
        RMW_OR(w, x->my_bit); /* B-SET: an RMW, a full fence before the summary load (MUT_BSET) */
        _Atomic uint64_t *sm = (_Atomic uint64_t *)(rb + x->l.sum_off) + x->my_sword;
        if (!(LD_RELAXED(sm) & x->my_sbit))
            RMW_OR(sm, x->my_sbit); /* S-SET (D-SUM; MUT_SSET leaves it out) */
    }
    wake_if_sleeping_fenced(&x->ranks[peer].bell); /* D1: after F-SND or B-SET/S-SET */
}

/* Sender s wrote a value into its ring to us that no correct sender writes
 * (or a third process forged it): never read s again. Rare; logs once. */
static void rx_faulty(struct pt_xport *x, uint32_t s, const char *what)
{
    if (!LD_RELAXED(&x->rxo[s].bad)) {
        ST_RELAXED(&x->rxo[s].bad, 1);
        pt_log(PT_LOG_ERR, "job region: the ring from process %u to process %u has %s: "
                           "messages from it are ignored from now on", s, x->me, what);
    }
}

/* The message at the head of ring (s, c), or NULL. Checks every value read
 * from the ring (shm_region.h, "What r trusts"). */
static void *rx_look(struct pt_xport *x, uint32_t s, uint32_t c)
{
    struct shm_rx *q = &x->in[s * 2 + c];
    if (q->head == q->ctail) {
        uint32_t t = LD_ACQUIRE(&q->ring->tail); /* A-TAIL pairs with R-TAIL */
        if (t == q->head)
            return NULL;
        if (PT_UNLIKELY(t - q->head > x->mask + 1)) {
            rx_faulty(x, s, "a tail more than a ring ahead of our head");
            return NULL;
        }
        q->ctail = t;
    }
    uint32_t b = LD_RELAXED(&q->ring->ent[q->head & x->mask]);
    if (PT_UNLIKELY(b >= x->l.pool_n[c])) {
        rx_faulty(x, s, "a buffer index beyond its pool");
        return NULL;
    }
    return q->pool + (size_t)b * x->slot_size;
}

/* Sender s's head in class c has stamp `ord`, not the one due next: its
 * other ring may hold an earlier message, visible since A-TAIL of this one
 * (the sender committed it first). Returns the class to deliver from. */
static int order_pick(struct pt_xport *x, uint32_t s, int c, uint32_t ord, void **slot_p)
{
    int o = c ^ 1;
    if (o == PT_CLS_REQ && x->rxo[s].req_waits)
        return c; /* a deferred request lets later responses pass */
    void *other = rx_look(x, s, (uint32_t)o);
    if (!other || (int32_t)(*slot_ord(other) - ord) > 0)
        return c;
    *slot_p = other;
    return o;
}

/* The `listed` check keeps a sender in act once: a listed sender's bit stays
 * set, and another sender's pickup sees it again (model/region.pml: MUT_LIST). */
static void rx_list(struct pt_xport *x, uint32_t s)
{
    if (s < x->np && !x->listed[s] && !LD_RELAXED(&x->rxo[s].bad)) {
        x->listed[s] = 1;
        x->act[x->nact++] = s;
    }
}

/* Senders that set their bit since we last looked (D-SUM): into the active
 * list. One relaxed load per summary word when nothing is new. Returns how
 * many were added. */
static uint32_t rx_pickup(struct pt_xport *x)
{
    uint32_t added = x->nact;
    for (uint32_t k = 0; k < x->l.nsum; k++) {
        uint64_t sv = LD_RELAXED(&x->sum[k]);
        while (PT_UNLIKELY(sv)) {
            uint32_t j = (uint32_t)__builtin_ctzll(sv);
            sv &= sv - 1;
            uint32_t wi = k * 64 + j;
            /* S-CLR (D-SUM, receiver side): an RMW, so a full fence before
             * the word's load (model/region.pml: MUT_SWAP loads it first) */
            RMW_AND(&x->sum[k], ~(1ull << j));
            if (wi >= x->l.nwords)
                continue; /* forged summary bit */
            uint64_t wv = LD_ACQUIRE(&x->words[wi]);
            while (wv) {
                uint32_t b = (uint32_t)__builtin_ctzll(wv);
                wv &= wv - 1;
                rx_list(x, wi * 64 + b);
            }
        }
    }
    return x->nact - added;
}

/* A poll found nothing: unlist the senders whose two rings are empty
 * (B-CLR, D-BIT in shm_region.h). Held senders stay: their message waits. */
static void rx_drop(struct pt_xport *x)
{
    for (uint32_t i = 0; i < x->nact;) {
        uint32_t s = x->act[i];
        struct shm_rx *q = &x->in[s * 2];
        bool bad = LD_RELAXED(&x->rxo[s].bad);
        if (!bad && (x->rxo[s].held || q[0].head != q[0].ctail || q[1].head != q[1].ctail)) {
            i++;
            continue;
        }
        if (!bad) {
            _Atomic uint64_t *w = &x->words[s / 64];
            uint64_t bit = 1ull << (s % 64);
            RMW_AND(w, ~bit); /* B-CLR (model/region.pml rx_drop) */
            FENCE_FULL();     /* B-CLR before the reload (MUT_BCLR); the reload: MUT_RELOAD */
            if (LD_ACQUIRE(&q[0].ring->tail) != q[0].head || /* A-TAIL */
                LD_ACQUIRE(&q[1].ring->tail) != q[1].head) {
                RMW_OR(w, bit); /* it committed meanwhile: listed, bit set again */
                i++;
                continue;
            }
        }
        x->listed[s] = 0;
        x->act[i] = x->act[--x->nact];
    }
}

static void *shm_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            rx_pickup(x);
        const uint32_t n = x->nact;
        /* Responses first, then requests; within a class, round-robin over
         * the active senders from the one after the one served last, so a
         * busy sender cannot starve the others. Per sender, commit order
         * across the classes (xport.h, "Order"). */
        for (int c0 = PT_CLS_RSP; c0 >= PT_CLS_REQ; c0--) {
            uint32_t i = x->rr[c0];
            for (uint32_t k = 0; k < n; k++) {
                if (++i >= n)
                    i = 0;
                uint32_t s = x->act[i];
                if (PT_UNLIKELY(x->nheld) && x->rxo[s].held)
                    continue;
                int c = c0;
                void *slot = rx_look(x, s, (uint32_t)c);
                if (!slot)
                    continue;
                /* Fetch the rest of the header (the order stamp is there)
                 * and the first payload line in parallel. */
                __builtin_prefetch((char *)slot + 64);
                __builtin_prefetch((char *)slot + 128);
                uint32_t ord = *slot_ord(slot);
                if (PT_UNLIKELY(ord != x->rxo[s].next)) {
                    c = order_pick(x, s, c, ord, &slot);
                    ord = *slot_ord(slot);
                }
                struct shm_rx *q = &x->in[s * 2 + c];
                q->ord = ord;
                if (q->ctail - q->head > 1) {
                    /* Streaming: the next message's buffer while the engine
                     * handles this one (checked again when it is peeked). */
                    uint32_t nb = LD_RELAXED(&q->ring->ent[(q->head + 1) & x->mask]);
                    if (nb < x->l.pool_n[c])
                        __builtin_prefetch(q->pool + (size_t)nb * x->slot_size);
                }
                x->rr[c0] = i;
                x->idle_peeks = 0;
                x->out[s * 2].streak = x->out[s * 2 + 1].streak = 0;
                *peer_p = s;
                *cls_p = (enum pt_cls)c;
                return slot;
            }
        }
        /* Unlist idle senders only after a streak of empty peeks (or at
         * once when many are listed): a sender that stays listed keeps its
         * bit set and commits with a load of it, while one dropped and
         * listed again costs an RMW on each side per message (a ping-pong
         * would pay that on every message). */
        if (x->nact > PT_SHM_DROP_LISTED || ++x->idle_peeks >= PT_SHM_DROP_PEEKS) {
            x->idle_peeks = 0;
            rx_drop(x);
        }
        if (!rx_pickup(x)) /* senders that came while we looked: once more */
            break;
    }
    return NULL;
}

static void shm_unhold_all(struct pt_xport *x)
{
    while (x->nheld)
        x->rxo[x->held_list[--x->nheld]].held = 0;
}

static void shm_release(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    struct shm_rx *q = &x->in[peer * 2 + cls];
    x->rxo[peer].next = q->ord + 1;
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 0;
    q->head++;
    ST_RELEASE(q->hd, q->head); /* R-HEAD pairs with the sender's A-HEAD */
    if (!q->adv) { /* for rx_done: its mark is looked at once per pass */
        q->adv = 1;
        x->advl[x->nadv++] = peer * 2 + cls;
    }
}

/* End of a receive pass (model/credit.pml, the receiver): the senders of
 * the rings we moved that wait for room (their mark set) are rung. One
 * fence per poll that released something (none of our own when the engine
 * posted events: D6's fence comes after the releases); the mark shares the
 * line we read the ring's entries from. */
static void shm_rx_done(struct pt_xport *x, bool fenced)
{
    if (!x->nadv)
        return;
    if (!fenced)
        FENCE_FULL(); /* R-FENCE: every R-HEAD of the pass before the marks' loads
                       * (MUT_RFENCE); or the caller's (the engine's D6) */
    for (uint32_t i = 0; i < x->nadv; i++) {
        uint32_t k = x->advl[i];
        struct shm_rx *q = &x->in[k];
        q->adv = 0;
        if (PT_LIKELY(!LD_ACQUIRE(&q->ring->want))) /* R-WANT */
            continue;
        /* Short of the sender's threshold: the mark stays set; we consume
         * on up to it (it is at most the tail) unless we stop draining. */
        if ((int32_t)(q->head - LD_RELAXED(&q->ring->want_at)) < 0)
            continue;
        if (RMW_XCHG(&q->ring->want, 0)) { /* R-CLR: a full fence before sleepers' load */
            struct pt_waitword *b = &x->ranks[k / 2].bell;
            if (LD_RELAXED(&b->sleepers)) /* R-RING (polled is not looked at: C-RECHECK
                                           * is every sleeper's and D4's) */
                pt_wake_all(b);
        }
    }
    x->nadv = 0;
}

static const uint32_t *shm_stall_counter(struct pt_xport *x) { return &x->stall_ctr; }

/* Token holder: a new round of stalls begins; the marks stay set (their
 * receivers clear them). */
static void shm_stall_clear(struct pt_xport *x)
{
    uint32_t n = LD_RELAXED(&x->narmed);
    for (uint32_t i = 0; i < n; i++)
        x->out[LD_RELAXED(&x->armed[i])].armed = 0;
    ST_RELAXED(&x->narmed, 0);
}

/* Any thread, after its full fence (C-RECHECK): armed since stall_clear,
 * and no mark cleared since. */
static bool shm_stall_armed(struct pt_xport *x)
{
    uint32_t n = LD_ACQUIRE(&x->narmed);
    if (!n)
        return false;
    for (uint32_t i = 0; i < n && i < x->np * PT_CLS_NR; i++) {
        uint32_t k = LD_RELAXED(&x->armed[i]);
        if (k >= x->np * PT_CLS_NR || !LD_RELAXED(&x->out[k].ring->want))
            return false;
    }
    return true;
}

static void shm_defer(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 1;
    if (!x->rxo[peer].held) {
        x->rxo[peer].held = 1;
        x->held_list[x->nheld++] = peer;
    }
}

static bool shm_rx_pending(struct pt_xport *x)
{
    /* Any thread (the sleep recheck, S2/W2/D3 after their fence): only
     * shared words are read. Outside a drop, every sender with a message we
     * have not consumed and that did not see the sleeper has its bit set
     * (shm_region.h, "Doorbell"): the bits and tails decide; the summary is
     * an early answer (docs/waiting.md, model/region.pml MUT_PENDSUM). */
    for (uint32_t k = 0; k < x->l.nsum; k++)
        if (LD_ACQUIRE(&x->sum[k]))
            return true;
    for (uint32_t wi = 0; wi < x->l.nwords; wi++) {
        uint64_t wv = LD_ACQUIRE(&x->words[wi]);
        while (wv) {
            uint32_t s = wi * 64 + (uint32_t)__builtin_ctzll(wv);
            wv &= wv - 1;
            if (s >= x->np || LD_RELAXED(&x->rxo[s].bad))
                continue;
            for (uint32_t c = 0; c < PT_CLS_NR; c++) {
                struct shm_rx *q = &x->in[s * 2 + c];
                if (LD_ACQUIRE(&q->ring->tail) != LD_RELAXED(q->hd)) /* A-TAIL */
                    return true;
            }
        }
    }
    return false;
}

/* CMA between this process and a peer: read its memory into local iovecs
 * (pull) or write local iovecs into its memory (push, the cooperative
 * rendezvous: wire.h). */
static ssize_t shm_cma(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                       const struct iovec *remote, int nremote, bool write)
{
    if (peer >= x->np)
        return -EINVAL;
    if (peer == x->me) /* own memory: no CMA */
        return write ? pt_iov_copy_local(remote, nremote, local, nlocal)
                     : pt_iov_copy_local(local, nlocal, remote, nremote);
    if (!x->cma_allowed) {
        pt_log_once(PT_LOG_WARN, "CMA disabled by PTL_CMA=0: rendezvous data is copied "
                                 "through the job region");
        return -EPERM;
    }
    pid_t pid = LD_RELAXED(&x->ranks[peer].ospid);
    if (pid <= 0)
        return -ESRCH;
    ssize_t n = write ? process_vm_writev(pid, local, (unsigned long)nlocal, remote,
                                          (unsigned long)nremote, 0)
                      : process_vm_readv(pid, local, (unsigned long)nlocal, remote,
                                         (unsigned long)nremote, 0);
    if (n >= 0)
        return n;
    int e = errno;
    if (e == EPERM)
        pt_log_once(PT_LOG_WARN, "CMA refused (EPERM: Yama ptrace_scope or a non-dumpable "
                                 "peer, rank %u pid %d): copying through the job region",
                    peer, (int)pid);
    else if (e == ENOSYS)
        pt_log_once(PT_LOG_WARN, "CMA unavailable (ENOSYS: kernel or seccomp): copying "
                                 "through the job region");
    return -e;
}

static ssize_t shm_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote)
{
    return shm_cma(x, peer, local, nlocal, remote, nremote, false);
}

static ssize_t shm_push(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote)
{
    return shm_cma(x, peer, local, nlocal, remote, nremote, true);
}

_Static_assert(PT_SHM_COOP_WORDS == PT_XPORT_COOP_WORDS, "claim words: the region and xport.h agree");

static _Atomic uint32_t *shm_coop_word(struct pt_xport *x, uint32_t owner, uint32_t k)
{
    if (owner >= x->np || k >= PT_SHM_COOP_WORDS)
        return NULL;
    return pt_shm_coop(x->base, &x->l, owner) + k;
}

static bool shm_peer_alive(struct pt_xport *x, uint32_t peer)
{
    if (peer >= x->np)
        return false;
    struct pt_shm_rank *rec = &x->ranks[peer];
    if (LD_RELAXED(&rec->dead)) /* set by the launcher when it reaped a failure */
        return false;
    pid_t p = LD_RELAXED(&rec->ospid);
    if (p <= 0 || peer == x->me)
        return true; /* not started or not attached yet: nothing says it died */
    /* The engine asks on every poll while a queue to the peer is full: ask
     * the kernel at most every PT_SHM_ALIVE_NS per peer while it lives. */
    uint64_t now = pt_now_ns();
    if (now < x->alive_until[peer])
        return true;
    if (!pid_alive(p))
        return false;
    x->alive_until[peer] = now + PT_SHM_ALIVE_NS;
    return true;
}

static struct pt_waitword *shm_doorbell(struct pt_xport *x) { return &x->ranks[x->me].bell; }

static pid_t shm_peer_ospid(struct pt_xport *x, uint32_t peer)
{
    return peer < x->np ? LD_RELAXED(&x->ranks[peer].ospid) : 0;
}

static int shm_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    if (pid < x->n && x->pids[pid] == pid && x->nids[pid] == nid)
        return (int)pid; /* the usual map: pid of rank r is r */
    for (uint32_t r = 0; r < x->n; r++)
        if (x->pids[r] == pid && x->nids[r] == nid)
            return (int)r;
    /* Not a rank: a guest, which may have joined after we attached. Its
     * record is live (claimed and freed at run time): read it every time.
     * A guest that left (PtlNIFini) keeps its id until its slot is claimed
     * again, as a rank that left keeps its own: what is sent to it waits in
     * its queues (and is dropped by the next claimer), no error. */
    for (uint32_t g = x->n; g < x->np; g++) {
        struct pt_shm_rank *rec = &x->ranks[g];
        uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT pairs with R-ATT */
        if ((st == PT_SHM_R_ATTACHED || st == PT_SHM_R_DETACHED) &&
            LD_RELAXED(&rec->pid) == pid && LD_RELAXED(&rec->nid) == nid)
            return (int)g;
    }
    return -1;
}

static void shm_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    if (rank < x->n) {
        *nid_p = x->nids[rank];
        *pid_p = x->pids[rank];
    } else if (rank < x->np) { /* a guest slot: whoever holds it now */
        *nid_p = LD_RELAXED(&x->ranks[rank].nid);
        *pid_p = LD_RELAXED(&x->ranks[rank].pid);
    } else {
        *nid_p = 0xffffffffu;
        *pid_p = 0xffffffffu;
    }
}

static uint32_t shm_job_failed(struct pt_xport *x)
{
    return LD_RELAXED(&x->hdr->job_failed); /* monotonic flag; see shm_region.h */
}

static void xport_free(struct pt_xport *x)
{
    if (x->peer_bytes)
        munmap(x->peer_mem, x->peer_bytes);
    free(x);
}

static void shm_close(struct pt_xport *x)
{
    /* Orderly finish: detached, not dead. The launcher judges the exit status.
     * Only by the process that attached: a child of fork() that closes its
     * parent's NI must not detach the parent (api/ni.c never does). */
    struct pt_shm_rank *rec = &x->ranks[x->me];
    if (x->ospid == getpid() && LD_RELAXED(&rec->ospid) == x->ospid) {
        ST_RELEASE(&rec->state, PT_SHM_R_DETACHED); /* R-ATT's partner for readers */
        if (x->me >= x->n)
            ST_RELEASE(&rec->ospid, 0); /* a guest slot is free again (G-CLAIM) */
    }
    munmap(x->base, x->size);
    xport_free(x);
}

static const struct pt_xport_ops g_shm_ops = {
    .name = "shm",
    .reserve = shm_reserve,
    .commit = shm_commit,
    .peek = shm_peek,
    .unhold_all = shm_unhold_all,
    .release = shm_release,
    .defer = shm_defer,
    .rx_pending = shm_rx_pending,
    .pull = shm_pull,
    .push = shm_push,
    .coop_word = shm_coop_word,
    .peer_alive = shm_peer_alive,
    .doorbell = shm_doorbell,
    .peer_ospid = shm_peer_ospid,
    .rank_of = shm_rank_of,
    .id_of = shm_id_of,
    .job_failed = shm_job_failed,
    .close = shm_close,
    .stall_counter = shm_stall_counter,
    .stall_clear = shm_stall_clear,
    .stall_armed = shm_stall_armed,
    .rx_done = shm_rx_done,
};

const struct pt_xport_ops *pt_shm_ops(void) { return &g_shm_ops; }

uint32_t pt_shm_queue_depth(struct pt_xport *x) { return x->qslots; }

bool pt_shm_rank_attached(struct pt_xport *x, uint32_t rank)
{
    return rank < x->n && LD_ACQUIRE(&x->ranks[rank].state) == PT_SHM_R_ATTACHED; /* A-ATT */
}

_Static_assert(PT_SHM_EP_NAME_MAX == sizeof(((struct pt_shm_rank *)0)->ep_name),
               "PT_SHM_EP_NAME_MAX is the rank record's name field");

int pt_shm_ep_publish(struct pt_xport *x, const void *name, size_t len)
{
    if (len == 0 || len > PT_SHM_EP_NAME_MAX)
        return -E2BIG;
    struct pt_shm_rank *rec = &x->ranks[x->me];
    ST_RELEASE(&rec->ep_len, 0);
    memcpy(rec->ep_name, name, len);
    RMW_ADD(&rec->ep_gen, 1);
    ST_RELEASE(&rec->ep_len, (uint32_t)len); /* R-EP pairs with A-EP */
    return 0;
}

int pt_shm_ep_lookup(struct pt_xport *x, uint32_t rank, void *name, size_t *len, uint32_t *gen)
{
    if (rank >= x->n)
        return -EINVAL;
    struct pt_shm_rank *rec = &x->ranks[rank];
    uint32_t n = LD_ACQUIRE(&rec->ep_len); /* A-EP pairs with R-EP */
    if (n == 0 || n > PT_SHM_EP_NAME_MAX)
        return -EAGAIN;
    if (n > *len)
        return -ENOBUFS;
    memcpy(name, rec->ep_name, n);
    *gen = LD_RELAXED(&rec->ep_gen);
    FENCE_FULL(); /* the copy before the second look */
    if (LD_ACQUIRE(&rec->ep_len) != n)
        return -EAGAIN;
    *len = n;
    return 0;
}

/* ---- opening ---------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

static bool env_u32(const char *name, uint32_t *v)
{
    uint64_t x;
    if (!parse_u64(getenv(name), &x) || x > 0xffffffffu)
        return false;
    *v = (uint32_t)x;
    return true;
}

/* A colon-separated map of exactly n numbers into out[n]. */
static bool parse_map(const char *s, uint32_t *out, uint32_t n)
{
    uint32_t i = 0;
    while (s && *s && i < n) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 0);
        if (errno || end == s || v > 0xffffffffu || (*end && *end != ':'))
            return false;
        out[i++] = (uint32_t)v;
        s = *end ? end + 1 : end;
    }
    return i == n && (!s || !*s);
}

/* Named mode without a launcher: build the region this rank's environment
 * describes. -EEXIST when another rank won the race (caller opens theirs). */
static int create_named(const char *job, uint32_t slot_size, uint32_t qslots,
                        struct pt_shm_region *reg)
{
    uint32_t n;
    if (!env_u32("PTL_NRANKS", &n) || n < 1 || n > PT_SHM_MAX_RANKS) {
        pt_log(PT_LOG_ERR, "PTL_JOB=%s: the job does not exist yet and PTL_NRANKS (1..%u) "
                           "is not set to create it", job, PT_SHM_MAX_RANKS);
        return -EINVAL;
    }
    uint32_t *nids = calloc(n, sizeof *nids), *pids = calloc(n, sizeof *pids);
    if (!nids || !pids) {
        free(nids);
        free(pids);
        return -ENOMEM;
    }
    int rc = 0;
    const char *nm = getenv("PTL_NIDMAP"), *pm = getenv("PTL_PIDMAP");
    if ((nm && *nm && !parse_map(nm, nids, n)) || (pm && *pm && !parse_map(pm, pids, n))) {
        pt_log(PT_LOG_ERR, "PTL_NIDMAP/PTL_PIDMAP must list %u colon-separated numbers", n);
        rc = -EINVAL;
    }
    if (!rc) {
        for (uint32_t r = 0; r < n; r++)
            if (!(pm && *pm))
                pids[r] = r;
        uint32_t jid;
        if (!env_u32("PTL_JID", &jid))
            jid = (uint32_t)getpid();
        const struct pt_config *cfg = pt_config();
        struct pt_shm_spec spec = {n, pt_shm_guests_for(n), slot_size, qslots, jid, nids, pids,
                                   (uint32_t)cfg->pool_req, (uint32_t)cfg->pool_rsp};
        rc = pt_shm_create(&spec, job, reg);
        if (rc && rc != -EEXIST)
            pt_log(PT_LOG_ERR, "PTL_JOB=%s: cannot create the job region: %s", job,
                   strerror(-rc));
    }
    free(nids);
    free(pids);
    return rc;
}

/* Find (or create) the region the environment names; map it. */
static int find_region(uint32_t slot_size, uint32_t qslots, int *fd_p, void **base_p,
                       uint64_t *size_p)
{
    struct stat st;
    if (g_fd >= 0) { /* re-attach after PtlNIFini: the fd we kept */
        if (fstat(g_fd, &st) != 0)
            return -errno;
        *fd_p = g_fd;
        *size_p = (uint64_t)st.st_size;
        return map_fd(g_fd, *size_p, base_p);
    }
    const char *fds = getenv("PTL_JOB_FD");
    if (fds && *fds) {
        uint64_t fd, want = 0;
        if (!parse_u64(fds, &fd) || fd > 1000000) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s is not a file descriptor number", fds);
            return -EINVAL;
        }
        const char *ss = getenv("PTL_JOB_SIZE");
        if (ss && *ss && !parse_u64(ss, &want)) {
            pt_log(PT_LOG_ERR, "PTL_JOB_SIZE=%s is not a number", ss);
            return -EINVAL;
        }
        if (fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: not an open job region (was this process "
                               "started by ptlrun?)", fds);
            return -EBADF;
        }
        if (want && (uint64_t)st.st_size != want) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: region is %lld bytes, PTL_JOB_SIZE says %s", fds,
                   (long long)st.st_size, ss);
            return -EPROTO;
        }
        *fd_p = (int)fd;
        *size_p = (uint64_t)st.st_size;
        int rc = map_fd((int)fd, *size_p, base_p);
        if (rc)
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: mmap: %s", fds, strerror(-rc));
        return rc;
    }

    const char *job = getenv("PTL_JOB");
    int rc = pt_shm_name(g_name, sizeof g_name, job);
    if (rc) {
        pt_log(PT_LOG_ERR, "PTL_JOB=%s: a job name is 1-40 characters of [A-Za-z0-9._-]",
               job ? job : "");
        return rc;
    }
    for (int tries = 0; tries < 8; tries++) {
        int fd = shm_open_nb(g_name, O_RDWR, &st);
        if (fd >= 0) {
            const char *why = "";
            char buf[96];
            const char *no = shm_file_refusal(&st, buf, sizeof buf);
            if (no) {
                close(fd);
                pt_log(PT_LOG_ERR, "PTL_JOB=%s: " SHM_DIR "%s is %s: refused", job, g_name, no);
                return S_ISREG(st.st_mode) ? -EACCES : -EPROTO;
            }
            if ((uint64_t)st.st_size < sizeof(struct pt_shm_hdr)) {
                close(fd);
                pt_log(PT_LOG_ERR, "PTL_JOB=%s: %s is not a job region", job, g_name);
                return -EPROTO;
            }
            struct pt_shm_layout l;
            struct pt_shm_hdr id;
            *size_p = (uint64_t)st.st_size;
            rc = map_fd(fd, *size_p, base_p);
            if (rc) {
                close(fd);
                pt_log(PT_LOG_ERR, "PTL_JOB=%s: mmap: %s", job, strerror(-rc));
                return rc;
            }
            rc = region_check(*base_p, *size_p, &id, &l, &why);
            if (!rc && region_in_use(*base_p, *size_p)) {
                *fd_p = fd;
                g_named = true;
                return 0;
            }
            munmap(*base_p, *size_p);
            close(fd);
            if (rc) {
                pt_log(PT_LOG_ERR, "PTL_JOB=%s: %s: %s", job, g_name, why);
                return rc;
            }
            /* valid, but nobody who could use it is alive: a dead job's leftover */
            pt_log(PT_LOG_INFO, "PTL_JOB=%s: removing stale %s", job, g_name);
            shm_unlink(g_name);
            continue;
        }
        if (fd != -ENOENT) {
            rc = fd;
            pt_log(PT_LOG_ERR, "PTL_JOB=%s: open " SHM_DIR "%s: %s", job, g_name,
                   rc == -ELOOP ? "a symbolic link: refused" : strerror(-rc));
            return rc;
        }
        struct pt_shm_region reg;
        rc = create_named(job, slot_size, qslots, &reg);
        if (rc == -EEXIST)
            continue; /* another rank won: open theirs */
        if (rc)
            return rc;
        *fd_p = reg.fd;
        *base_p = reg.base;
        *size_p = reg.size;
        g_named = true;
        return 0;
    }
    pt_log(PT_LOG_ERR, "PTL_JOB=%s: cannot open or create %s", job, g_name);
    return -EAGAIN;
}

static const char *cma_check(struct pt_xport *x, bool *ok)
{
    const char *why;
    if (!x->cma_allowed) {
        *ok = false;
        return "disabled by PTL_CMA=0";
    }
    /* Probe, in order: a peer that attached already (exactly what a transfer
     * does), the launcher (refused under Yama scope 1 exactly when siblings
     * would be, since both call PR_SET_PTRACER), or ourselves (catches only
     * ENOSYS: a job of one never pulls from another process). */
    for (uint32_t i = 1; i < x->n; i++) {
        uint32_t p = (x->me + i) % x->n;
        struct pt_shm_rank *rec = &x->ranks[p];
        if (LD_ACQUIRE(&rec->state) != PT_SHM_R_ATTACHED) /* A-ATT pairs with R-ATT */
            continue;
        int rc = pt_cma_probe(LD_RELAXED(&rec->ospid), LD_RELAXED(&rec->probe_addr), &why);
        if (rc == 0 || rc == -EFAULT) {
            *ok = true;
            return "process_vm_readv to a peer rank works";
        }
        if (rc != -ESRCH) {
            *ok = false;
            return why;
        }
    }
    pid_t owner = x->hdr->owner_pid;
    if (owner > 0 && owner != getpid()) {
        int rc = pt_cma_probe(owner, x->hdr->owner_probe_addr, &why);
        if (rc == 0 || rc == -EFAULT) {
            *ok = true;
            return "process_vm_readv to the launcher works";
        }
        if (rc != -ESRCH) {
            *ok = false;
            return why;
        }
    }
    int rc = pt_cma_probe(getpid(), pt_cma_probe_addr(), &why);
    *ok = rc == 0 || rc == -EFAULT;
    return *ok ? "process_vm_readv works (probed this process only)" : why;
}

/* PTL_NIDMAP / PTL_PIDMAP, when set, must be the job region's map: the
 * region's wins, and a process told otherwise would address the wrong ranks
 * (p3rt reads these variables). 0, or -EINVAL with one error logged. */
static int env_map_check(const struct pt_shm_rank *ranks, uint32_t n)
{
    static const char *const var[2] = {"PTL_NIDMAP", "PTL_PIDMAP"};
    for (int k = 0; k < 2; k++) {
        const char *s = getenv(var[k]), *p = s;
        if (!s || !*s)
            continue;
        uint32_t r = 0;
        bool whole = false; /* n numbers, colon-separated, nothing else */
        while (r < n && *p >= '0' && *p <= '9') {
            char *end;
            errno = 0;
            unsigned long v = strtoul(p, &end, 0);
            if (errno || (*end && *end != ':'))
                break;
            uint32_t want = k ? ranks[r].pid : ranks[r].nid;
            if (v != want) {
                pt_log(PT_LOG_ERR, "%s=%s contradicts the job region, where rank %u has %s "
                                   "%u, not %lu: PtlNIInit fails (unset %s or give the job's map)",
                       var[k], s, r, k ? "pid" : "nid", want, v, var[k]);
                return -EINVAL;
            }
            r++;
            if (!*end) {
                whole = r == n;
                break;
            }
            p = end + 1;
        }
        if (!whole) {
            pt_log(PT_LOG_ERR, "%s=%s does not list the %u ranks of the job region: "
                               "PtlNIInit fails (unset %s or give the job's map)",
                   var[k], s, n, var[k]);
            return -EINVAL;
        }
    }
    return 0;
}

/* The parent of process p (/proc/<p>/stat), or 0. */
static pid_t parent_of(pid_t p)
{
    char path[32], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* "pid (comm) S ppid ..." */
    int ppid = 0;
    if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

/* Is p this process's parent, grandparent, ...? (ptlrun records the pid it
 * forked, which may be a wrapper that runs the rank's program.) */
static bool is_ancestor(pid_t p)
{
    pid_t q = getppid();
    for (int i = 0; i < 32 && q > 1; i++, q = parent_of(q))
        if (q == p)
            return true;
    return false;
}

/* May this process attach as the rank of record rec? Yes when the record
 * names us, nobody (0), a process that no longer runs, or, before the rank
 * ever attached, the process ptlrun forked for it when that is our ancestor
 * (a wrapper). Never when another live process attached as that rank: a
 * child of fork() that inherited PTL_MY_RID joins as a guest instead. *o_p:
 * the ospid judged, for the claim's CAS. */
static bool rank_available(struct pt_shm_rank *rec, pid_t self, int32_t *o_p)
{
    uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT pairs with R-ATT */
    int32_t o = LD_RELAXED(&rec->ospid);
    *o_p = o;
    return o == self || o <= 0 || !pid_alive(o) || (st == PT_SHM_R_NONE && is_ancestor(o));
}

/* Is Portals id (nid, pid) free for guest slot `self`: no rank's, and no
 * other live guest's (claiming or attached)? */
static bool guest_pid_free(struct pt_xport *x, uint32_t self, uint32_t nid, uint32_t pid)
{
    for (uint32_t r = 0; r < x->n; r++)
        if (x->pids[r] == pid && x->nids[r] == nid)
            return false;
    for (uint32_t g = x->n; g < x->np; g++) {
        if (g == self)
            continue;
        struct pt_shm_rank *rec = &x->ranks[g];
        uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT: its pid below */
        int32_t o = LD_RELAXED(&rec->ospid);
        if ((st == PT_SHM_R_CLAIMING || st == PT_SHM_R_ATTACHED) && o > 0 &&
            LD_RELAXED(&rec->pid) == pid && LD_RELAXED(&rec->nid) == nid && pid_alive(o))
            return false;
    }
    return true;
}

/* Join the job as a guest (shm_region.h, G-CLAIM): claim a free guest slot,
 * take Portals pid `want` (PTL_PID_ANY: one nobody uses) and mark the slot
 * CLAIMING. 0 with x->me set, -EADDRINUSE (pid taken) or -ENOSPC (no free
 * slot), logged. The caller publishes ATTACHED. */
static int guest_claim(struct pt_xport *x, uint32_t want, const char *why)
{
    const pid_t self = getpid();
    const uint32_t ng = x->np - x->n, nid = x->nids[0]; /* one host: the ranks' nid */
    uint32_t g = x->n;
    for (; g < x->np; g++) {
        int32_t o = LD_RELAXED(&x->ranks[g].ospid);
        if ((o == 0 || o == self || !pid_alive(o)) &&
            RMW_CAS(&x->ranks[g].ospid, &o, (int32_t)self)) /* G-CLAIM */
            break;
    }
    if (g == x->np) {
        pt_log(PT_LOG_ERR, "%s: all %u guest slots of the job are in use (PTL_JOB_GUESTS, read "
                           "when the job was started, sets their number)", why, ng);
        return -ENOSPC;
    }
    struct pt_shm_rank *rec = &x->ranks[g];
    ST_RELAXED(&rec->dead, 0);
    /* Candidates for PTL_PID_ANY: above every rank's pid, in this slot's own
     * residue class, so two guests choosing at once never pick the same. */
    uint32_t base = 0;
    for (uint32_t r = 0; r < x->n; r++)
        if (x->pids[r] >= base && x->pids[r] < 0xfffffff0u - PT_SHM_MAX_PROCS * 64u)
            base = x->pids[r] + 1;
    uint32_t pid = want != 0xffffffffu ? want : base + (g - x->n);
    for (int k = 0;; k++) {
        ST_RELAXED(&rec->nid, nid);
        ST_RELAXED(&rec->pid, pid);
        ST_RELEASE(&rec->state, PT_SHM_R_CLAIMING);
        FENCE_FULL(); /* our pid before their pids: of two claimers of one pid,
                       * at least one sees the other */
        if (guest_pid_free(x, g, nid, pid))
            break;
        if (want != 0xffffffffu || k == 64) {
            pt_log(PT_LOG_ERR, "%s: Portals pid %u is taken by a process of the job", why, pid);
            ST_RELEASE(&rec->state, PT_SHM_R_DETACHED);
            ST_RELEASE(&rec->ospid, 0);
            return -EADDRINUSE;
        }
        pid += ng;
    }
    uint32_t hwm = LD_RELAXED(&x->hdr->guests_hwm), mine = g - x->n + 1;
    while (hwm < mine && !RMW_CAS(&x->hdr->guests_hwm, &hwm, mine))
        ;
    x->me = g;
    pt_log(PT_LOG_INFO, "%s: joined the job as guest %u, Portals pid %u", why, g - x->n, pid);
    return 0;
}

/* Attach: our rings, heads, pools and bitmap. Geometry from our checked copy
 * of the header (x->l), never from the region. We resume where this process
 * slot's last owner (an earlier NI of ours, or a guest before us) stopped:
 * tails and heads are in the region, written only by their owner. */
static void rx_tx_setup(struct pt_xport *x, bool guest, uint16_t *maps, uint8_t *used)
{
    const struct pt_shm_layout *l = &x->l;
    const uint32_t me = x->me, D = x->mask + 1;
    x->words = pt_shm_words(x->base, l, me);
    x->sum = pt_shm_sum(x->base, l, me);
    x->my_word = me / 64;
    x->my_bit = 1ull << (me % 64);
    x->my_sword = x->my_word / 64;
    x->my_sbit = 1ull << (x->my_word % 64);
    for (uint32_t c = 0; c < PT_CLS_NR; c++)
        x->pool[c] = pt_shm_pool(x->base, l, me, c);
    for (uint32_t p = 0; p < x->np; p++) {
        for (uint32_t c = 0; c < PT_CLS_NR; c++) {
            struct shm_rx *in = &x->in[p * 2 + c];
            in->ring = pt_shm_ring(x->base, l, p, me, c);
            in->hd = pt_shm_rxhead(x->base, l, p, me, c);
            in->pool = pt_shm_pool(x->base, l, p, c);
            in->head = LD_RELAXED(in->hd); /* written by this slot only */
            if (guest) {
                /* A guest slot's rings may hold what was sent to its last
                 * owner: not ours. Consumed at once (the senders take their
                 * buffers back). */
                in->head = LD_ACQUIRE(&in->ring->tail); /* A-TAIL */
                ST_RELEASE(in->hd, in->head);           /* R-HEAD */
            }
            in->ctail = in->head;

            struct shm_tx *t = &x->out[p * 2 + c];
            t->ring = pt_shm_ring(x->base, l, me, p, c);
            t->hd = pt_shm_rxhead(x->base, l, me, p, c);
            t->map = maps + ((size_t)p * 2 + c) * D;
            t->tail = LD_RELAXED(&t->ring->tail); /* written by this slot only */
            uint32_t h = LD_ACQUIRE(t->hd);       /* A-HEAD */
            if (t->tail - h > D)
                h = t->tail - D; /* not a head the receiver wrote: all in flight */
            t->rec = h;
            /* Buffers still in the receiver's hands are not free; an entry
             * that is out of range or named twice (forged) is never taken
             * back by position. */
            for (uint32_t pos = h; pos != t->tail; pos++) {
                uint32_t b = LD_RELAXED(&t->ring->ent[pos & x->mask]);
                uint32_t u = b + (c ? l->pool_n[0] : 0);
                if (b >= l->pool_n[c] || used[u]) {
                    t->map[pos & x->mask] = SHM_NOBUF;
                } else {
                    used[u] = 1;
                    t->map[pos & x->mask] = (uint16_t)b;
                }
            }
        }
        struct shm_tx *t = &x->out[p * 2];
        if (t[0].rec != t[0].tail || t[1].rec != t[1].tail) {
            x->holding[p] = 1;
            x->holders[x->nholders++] = p;
        }
    }
    /* Free stacks: the highest index at the bottom, so buffer 0 goes first. */
    for (uint32_t c = 0; c < PT_CLS_NR; c++)
        for (uint32_t b = l->pool_n[c]; b-- > 0;)
            if (!used[b + (c ? l->pool_n[0] : 0)])
                x->freel[c][x->nfree[c]++] = (uint16_t)b;
    /* Senders whose bit is set were listed by this slot's last owner (their
     * summary bit may be clear): list them now. */
    for (uint32_t wi = 0; wi < l->nwords; wi++) {
        uint64_t wv = LD_ACQUIRE(&x->words[wi]);
        while (wv) {
            uint32_t b = (uint32_t)__builtin_ctzll(wv);
            wv &= wv - 1;
            rx_list(x, wi * 64 + b);
        }
    }
}

static int open_locked(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                       const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                       struct pt_xport_info *info_p)
{
    uint32_t me = 0;
    /* Without a rank (a process started outside ptlrun that names the job)
     * the process joins as a guest. */
    bool have_rank = env_u32("PTL_MY_RID", &me);
    if (!have_rank && getenv("PTL_MY_RID")) {
        pt_log(PT_LOG_ERR, "PTL_MY_RID (this process's rank) is not a number");
        return -EINVAL;
    }
    int fd = -1;
    void *base = NULL;
    uint64_t size = 0;
    int rc = find_region(slot_size, queue_slots, &fd, &base, &size);
    if (rc)
        return rc;
    bool fresh = fd != g_fd; /* first open in this process: fd not kept yet */
    struct pt_shm_layout l;
    struct pt_shm_hdr id; /* our copy of the header's identity: the region's may change */
    const char *why = "";
    struct pt_shm_hdr *h = base;
    struct pt_xport *x = NULL;
    rc = region_check(base, size, &id, &l, &why);
    if (rc) {
        pt_log(PT_LOG_ERR, "job region: %s", why);
        goto fail;
    }
    uint32_t n = id.nranks, np = l.nprocs, want_n;
    const pid_t self = getpid();
    if (have_rank && me >= n) {
        pt_log(PT_LOG_ERR, "PTL_MY_RID=%u but the job has %u ranks", me, n);
        rc = -EINVAL;
        goto fail;
    }
    if (env_u32("PTL_NRANKS", &want_n) && want_n != n) {
        pt_log(PT_LOG_ERR, "PTL_NRANKS=%u but the job region has %u ranks", want_n, n);
        rc = -EINVAL;
        goto fail;
    }
    struct pt_shm_rank *ranks = pt_shm_rankrec(base, &l, 0);
    rc = env_map_check(ranks, n);
    if (rc)
        goto fail;
    /* Rank or guest? The rank when its record is ours to take; a process
     * whose rank another live process holds (a child of fork(): it inherited
     * PTL_MY_RID) and one without a rank join as guests. */
    int32_t judged = 0;
    bool guest = !have_rank || !rank_available(&ranks[me], self, &judged);
    if (!guest && pid_hint != 0xffffffffu && pid_hint != ranks[me].pid) {
        pt_log(PT_LOG_INFO, "PtlNIInit pid %u: rank %u of this job has pid %u", pid_hint, me,
               (unsigned)ranks[me].pid);
        rc = -EADDRINUSE;
        goto fail;
    }
    if (slot_size != id.slot_size || queue_slots != id.qslots)
        pt_log(PT_LOG_INFO, "job region: slot %u bytes x %u (this process wanted %u x %u); "
                            "the region's apply", id.slot_size, id.qslots, slot_size, queue_slots);

    /* Everything that can fail before we announce ourselves. */
    rc = -ENOMEM;
    x = calloc(1, sizeof *x);
    if (!x)
        goto fail;
    /* The per-peer state (sized by process slots) in one anonymous mapping
     * rather than on the heap: the application's heap stays as it was
     * before guests existed (REF's forktest writes 6000 bytes of zeros 22 KB
     * past the end of a heap buffer, and only passes when that lands on idle
     * memory). Every array 8-byte aligned. */
    const uint32_t D = id.qslots, npool = l.pool_n[0] + l.pool_n[1];
    size_t sz[] = {
        (size_t)np * PT_CLS_NR * sizeof(struct shm_rx),   /* in          */
        (size_t)np * PT_CLS_NR * sizeof(struct shm_tx),   /* out         */
        (size_t)np * PT_CLS_NR * D * sizeof(uint16_t),    /* ring maps   */
        (size_t)np * sizeof(uint64_t),                    /* alive_until */
        (size_t)np * sizeof(struct shm_rx_ord),           /* rxo         */
        (size_t)np * sizeof(uint32_t),                    /* held_list   */
        (size_t)np * sizeof(uint32_t),                    /* holders     */
        (size_t)np * sizeof(uint32_t),                    /* act         */
        (size_t)np, (size_t)np,                           /* holding, listed */
        (size_t)2 * n * sizeof(uint32_t),                 /* nids, pids  */
        (size_t)npool * sizeof(uint16_t),                 /* free lists  */
        (size_t)npool,                                    /* attach: buffers in flight */
        (size_t)np * PT_CLS_NR * sizeof(uint32_t),        /* armed (credit wait) */
        (size_t)np * PT_CLS_NR * sizeof(uint32_t),        /* advl (credit wait)  */
    };
    enum { A_IN, A_OUT, A_MAP, A_ALIVE, A_RXO, A_HELD, A_HOLDERS, A_ACT, A_HOLDING, A_LISTED,
           A_IDS, A_FREE, A_USED, A_ARMED, A_ADV, A_NR };
    size_t at[A_NR];
    x->peer_bytes = 0;
    for (int i = 0; i < A_NR; i++) {
        at[i] = x->peer_bytes;
        x->peer_bytes += (sz[i] + 7) & ~(size_t)7;
    }
    char *pm = mmap(NULL, x->peer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
    if (pm == MAP_FAILED) {
        x->peer_bytes = 0;
        goto fail;
    }
    x->peer_mem = pm;
    x->in = (struct shm_rx *)(pm + at[A_IN]);
    x->out = (struct shm_tx *)(pm + at[A_OUT]);
    x->alive_until = (uint64_t *)(pm + at[A_ALIVE]);
    x->rxo = (struct shm_rx_ord *)(pm + at[A_RXO]);
    x->held_list = (uint32_t *)(pm + at[A_HELD]);
    x->holders = (uint32_t *)(pm + at[A_HOLDERS]);
    x->act = (uint32_t *)(pm + at[A_ACT]);
    x->holding = (uint8_t *)(pm + at[A_HOLDING]);
    x->armed = (_Atomic uint32_t *)(pm + at[A_ARMED]);
    x->advl = (uint32_t *)(pm + at[A_ADV]);
    x->listed = (uint8_t *)(pm + at[A_LISTED]);
    x->nids = (uint32_t *)(pm + at[A_IDS]);
    x->pids = x->nids + n;
    x->freel[PT_CLS_REQ] = (uint16_t *)(pm + at[A_FREE]);
    x->freel[PT_CLS_RSP] = x->freel[PT_CLS_REQ] + l.pool_n[PT_CLS_REQ];
    x->l = l;
    x->mask = D - 1;
    x->slot_size = id.slot_size;
    x->base = base;
    x->size = size;
    x->hdr = h;
    x->ranks = ranks;
    x->n = n;
    x->np = np;
    x->ospid = self;
    x->qslots = id.qslots;
    x->cma_allowed = pt_config()->cma != 0;
    for (uint32_t p = 0; p < n; p++) {
        x->nids[p] = LD_RELAXED(&ranks[p].nid);
        x->pids[p] = LD_RELAXED(&ranks[p].pid);
    }
    if (!guest) {
        /* Claim the rank's record: exactly one of two processes that judged
         * it free at once gets it; the other joins as a guest. */
        if (RMW_CAS(&ranks[me].ospid, &judged, (int32_t)self) ||
            judged == (int32_t)self) /* the launcher wrote our pid between the
                                      * judgement and the claim: ours anyway */
            x->me = me;
        else
            guest = true;
    }
    if (guest) {
        char why[64];
        if (have_rank)
            snprintf(why, sizeof why, "rank %u is held by process %d", me,
                     (int)LD_RELAXED(&ranks[me].ospid));
        else
            snprintf(why, sizeof why, "no PTL_MY_RID");
        rc = guest_claim(x, pt_xport_guest_pid(), why);
        if (rc)
            goto fail;
        me = x->me;
    }
    struct pt_shm_rank *rec = &ranks[me];
    rx_tx_setup(x, guest, (uint16_t *)(pm + at[A_MAP]), (uint8_t *)(pm + at[A_USED]));

    /* Let siblings read our memory (Yama ptrace_scope 1) before announcing
     * ourselves: a peer that sees ATTACHED may probe us at once. EINVAL
     * without Yama: nothing to allow. */
    pt_cma_allow_readers(true);
    ST_RELAXED(&rec->probe_addr, pt_cma_probe_addr());
    ST_RELEASE(&rec->state, PT_SHM_R_ATTACHED); /* R-ATT pairs with A-ATT */
    if (!guest && !g_counted) {
        g_counted = true;
        uint32_t k = RMW_ADD(&h->nattached, 1) + 1;
        if (g_named && k >= n)
            shm_unlink(g_name); /* every rank is in: the name has done its job */
    }

    /* Our receive slots on our NUMA node (best effort; pages senders already
     * touched stay where they are). */
    const struct pt_config *cfg = pt_config();
    int cpu = cfg->nic_cpu >= 0 ? (int)cfg->nic_cpu : sched_getcpu();
    if (cpu >= 0)
        pt_numa_bind(pt_shm_proc(base, &l, me), l.proc_bytes,
                     pt_cpu_node(cpu));

    bool cma_ok;
    const char *cma_why = cma_check(x, &cma_ok);
    if (!cma_ok && x->cma_allowed)
        pt_log_once(PT_LOG_WARN, "CMA unavailable (%s): rendezvous copies through the job "
                                 "region", cma_why);

    if (fresh) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* programs we exec do not inherit it */
        g_fd = fd;
    }
    *ops_p = &g_shm_ops;
    *x_p = x;
    memset(info_p, 0, sizeof *info_p);
    info_p->rank = me;
    info_p->nranks = n;
    info_p->nprocs = np;
    info_p->slot_size = id.slot_size;
    info_p->jid = id.jid;
    info_p->cma_ok = cma_ok;
    info_p->cma_why = cma_why;
    info_p->trace_area = pt_shm_trace_area(base, &l, me);
    info_p->trace_bytes = l.trace_bytes;
    return 0;

fail:
    if (x)
        xport_free(x); /* nothing claimed yet: every failure comes before the claim */
    munmap(base, size);
    if (fresh) {
        /* Keep an inherited memfd (its number is in our environment); close a
         * named one we opened: the next attempt opens it again. */
        if (g_named)
            close(fd);
        g_named = false;
    }
    return rc;
}

int pt_shm_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                struct pt_xport_info *info_p)
{
    pthread_mutex_lock(&g_lock);
    int rc = open_locked(slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
    pthread_mutex_unlock(&g_lock);
    return rc;
}
