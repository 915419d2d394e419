/* shm_region.c - the job region (shm_region.h): its layout, its creation
 * (memfd or named), the checks a rank makes before it trusts one another
 * process built, and whether a pid or a region is still alive. */
#include "shm_int.h"

#include "config.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- layout --------------------------------------------------------------- */

uint64_t pt_shm_region_bytes(uint32_t nranks, uint32_t nguests, uint32_t slot_size,
                             uint32_t qslots, uint32_t pool_req, uint32_t pool_rsp)
{
    struct pt_shm_layout l;
    return pt_shm_layout(nranks, nguests, slot_size, qslots, pool_req, pool_rsp, &l) ? 0
                                                                                     : l.total;
}

uint32_t pt_shm_guests(void)
{
    int64_t g = pt_config()->job_guests;
    if (g < 0) /* default: 4, a smaller job too (a server started alone, its clients
                * joining: fifty-seventh session; a slot is address space until used) */
        g = 4;
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
    uint32_t wb = pt_wrap32(); /* PTL_TEST_WRAP: tails, heads, lane positions */
    if (wb) {
        for (uint32_t p = 0; p < l->nprocs; p++) {
            for (uint32_t q = 0; q < l->nprocs; q++)
                for (uint32_t c = 0; c < PT_CLS_NR; c++) {
                    ST_RELAXED(&pt_shm_ring(base, l, q, p, c)->tail, wb);
                    ST_RELAXED(&pt_shm_ring(base, l, q, p, c)->want_at, wb);
                    ST_RELAXED(pt_shm_rxhead(base, l, q, p, c), wb);
                }
            for (uint32_t k = 0; k < PT_SHM_FBOXES; k++)
                for (uint32_t c = 0; c < PT_CLS_NR; c++) {
                    struct pt_shm_fbox *b = pt_shm_fbox(base, l, p, k);
                    ST_RELAXED(&b->tx_tail[c], wb);
                    ST_RELAXED(&b->rx_head[c], wb);
                }
        }
    }
    ST_RELEASE(&h->ready, 1); /* R-READY pairs with A-READY in pt_shm_region_check() */
}

int pt_shm_map_fd(int fd, uint64_t size, void **base_p)
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
int pt_shm_open_nb(const char *name, int flags, struct stat *st)
{
    char path[sizeof SHM_DIR + 128];
    int w = snprintf(path, sizeof path, SHM_DIR "%s", name);
    if (w < 0 || (size_t)w >= sizeof path)
        return -ENAMETOOLONG;
    int fd = pt_fd_above_std(open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
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
const char *pt_shm_file_refusal(const struct stat *st, char *buf, size_t len)
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
        fd = pt_fd_above_std(memfd_create("ptl-job", MFD_CLOEXEC));
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
        fd = pt_fd_above_std(fd);
        if (fd < 0) {
            rc = -errno;
            goto fail;
        }
        /* 0600 whatever the umask: under 0277 every rank's open was refused
         * (an adversarial environment; the memfd's fchmod is above) */
        if (fchmod(fd, 0600) != 0) {
            rc = -errno;
            goto fail;
        }
    }
    if (ftruncate(fd, (off_t)r->l.total) != 0) {
        rc = -errno;
        goto fail;
    }
    if (job) {
        /* The file is sparse: a /dev/shm without room for it let ptlrun
         * start the job, and ranks died of SIGBUS mid-run at the first page
         * tmpfs could not give (an adversarial environment). Refused here
         * (-ENOSPC: the callers print it with the region's size); room taken
         * by others later is still theirs to take. */
        struct statvfs v;
        if (fstatvfs(fd, &v) == 0 && v.f_frsize &&
            (uint64_t)v.f_bavail * v.f_frsize < r->l.total) {
            rc = -ENOSPC;
            goto fail;
        }
    }
    rc = pt_shm_map_fd(fd, r->l.total, &r->base);
    if (rc)
        goto fail;
    r->size = r->l.total;
    r->fd = fd;
    r->nranks = spec->nranks;
    region_init(r->base, &r->l, spec, job ? PT_SHM_F_NAMED : 0);
    if (job) {
        /* held while we live, before the name exists (pt_shm_region_held) */
        (void)flock(fd, LOCK_SH);
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
int pt_shm_region_check(void *base, uint64_t size, struct pt_shm_hdr *id,
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
bool pt_shm_pid_alive(pid_t p)
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
bool pt_shm_region_held(int fd)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        (void)flock(fd, LOCK_UN);
        return false;
    }
    return errno == EWOULDBLOCK;
}

bool pt_shm_region_in_use(void *base, uint64_t size, int fd)
{
    struct pt_shm_hdr *h = base;
    if (fd >= 0 && pt_shm_region_held(fd))
        return true;
    if (pt_shm_pid_alive(h->owner_pid))
        return true;
    /* read once: the bound below must hold for the loop */
    uint32_t nr = h->nranks, ng = h->nguests, n = nr + ng;
    if (h->magic != PT_SHM_MAGIC || h->off_ranks != sizeof *h || nr > PT_SHM_MAX_RANKS ||
        ng > PT_SHM_MAX_GUESTS ||
        sizeof *h + (uint64_t)n * sizeof(struct pt_shm_rank) > size)
        return false;
    struct pt_shm_rank *rec = (struct pt_shm_rank *)((char *)base + sizeof *h);
    for (uint32_t r = 0; r < n; r++)
        if (pt_shm_pid_alive(LD_RELAXED(&rec[r].ospid)))
            return true;
    return false;
}
