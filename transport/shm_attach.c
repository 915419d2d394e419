/* shm_attach.c - the rank's side of opening the job (shm.h, "How a rank
 * finds its job"): find or create the region, check it, claim a rank or a
 * guest slot, and build the transport state that shm.c runs on. */
#include "shm_int.h"

#include "config.h"
#include "membar.h"
#include "cpu.h"
#include "log.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Process-wide: the job's fd stays open (FD_CLOEXEC) so that a later PtlNIInit
 * after PtlNIFini can re-attach; the attach counter counts a process once.
 * Guarded by g_lock (opens are rare and serialised by the API anyway). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static bool g_named;
static bool g_counted;
static char g_name[80];

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

/* The job's description comes from the environment (shm.h), or, for a
 * node's region of a PMIx job (pt_shm_open_node), from the caller: then
 * these names are read from g_over alone (under g_lock), never from the
 * environment, which describes no region of ours. */
struct env_over {
    const char *name, *value;
};
static const struct env_over *g_over; /* under g_lock */

/* How messages name the region: the user's PTL_JOB, or a node region
 * (whose name the user never set). */
static const char *jpfx(void) { return g_over ? "node region " : "PTL_JOB="; }

static const char *jenv(const char *name)
{
    if (!g_over)
        return getenv(name);
    for (const struct env_over *o = g_over; o->name; o++)
        if (!strcmp(o->name, name))
            return o->value;
    return NULL;
}

static bool env_u32(const char *name, uint32_t *v)
{
    uint64_t x;
    if (!parse_u64(jenv(name), &x) || x > 0xffffffffu)
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
        pt_log(PT_LOG_ERR, "%s%s: no such job (no named region, and no process %s of "
                           "this user holding one: ptlrun's pid or a rank's joins a running "
                           "job) and PTL_NRANKS (1..%u) is not set to create it",
               jpfx(), job, job, PT_SHM_MAX_RANKS);
        return -EINVAL;
    }
    uint32_t *nids = calloc(n, sizeof *nids), *pids = calloc(n, sizeof *pids);
    if (!nids || !pids) {
        free(nids);
        free(pids);
        return -ENOMEM;
    }
    int rc = 0;
    const char *nm = jenv("PTL_NIDMAP"), *pm = jenv("PTL_PIDMAP");
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
        /* a node region (g_over) has no guests: its slots are the job's ranks */
        struct pt_shm_spec spec = {n, g_over ? 0 : pt_shm_guests(), slot_size, qslots, jid,
                                   nids, pids,
                                   (uint32_t)cfg->pool_req, (uint32_t)cfg->pool_rsp};
        rc = pt_shm_create(&spec, job, reg);
        if (rc && rc != -EEXIST)
            pt_log(PT_LOG_ERR, "%s%s: cannot create the job region: %s", jpfx(), job,
                   strerror(-rc));
    }
    free(nids);
    free(pids);
    return rc;
}

/* PTL_JOB=<pid>, for a process started outside ptlrun: the region that
 * process (ptlrun, or a rank of the job) holds open, a memfd job's or a named
 * one's whose name is already unlinked (the last rank to attach unlinks it),
 * opened through /proc/<pid>/fd (the same user's). Before, such a process
 * could join only while the name existed, and a memfd job not at all (an
 * audit: "the job does not exist yet", and with PTL_NRANKS set as that
 * message suggested, a second unrelated region of the same name). The fd,
 * or -ENOENT. */
static int open_by_pid(const char *job, struct stat *st)
{
    uint64_t pid;
    if (!parse_u64(job, &pid) || pid == 0 || pid > 0x7fffffff)
        return -ENOENT;
    char dir[48];
    snprintf(dir, sizeof dir, "/proc/%llu/fd", (unsigned long long)pid);
    DIR *d = opendir(dir);
    if (!d)
        return -ENOENT;
    int fd = -ENOENT;
    struct dirent *e;
    while (fd < 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[320], to[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, to, sizeof to - 1);
        if (n <= 0)
            continue;
        to[n] = '\0';
        if (strncmp(to, "/memfd:ptl-job", 14) && strncmp(to, SHM_DIR "/ptl-", strlen(SHM_DIR) + 5))
            continue;
        int f = open(path, O_RDWR | O_CLOEXEC); /* (a /proc magic link: no O_NOFOLLOW) */
        if (f < 0)
            continue;
        if (fstat(f, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
            (uint64_t)st->st_size < sizeof(struct pt_shm_hdr)) {
            close(f);
            continue;
        }
        fd = f;
    }
    closedir(d);
    return fd;
}

/* Map fd, check that it is a job region in use: 0 (mapped), or an error. */
static int adopt_region(int fd, const struct stat *st, const char *job, void **base_p,
                        uint64_t *size_p)
{
    struct pt_shm_layout l;
    struct pt_shm_hdr id;
    const char *why = "";
    *size_p = (uint64_t)st->st_size;
    int rc = pt_shm_map_fd(fd, *size_p, base_p);
    if (rc) {
        pt_log(PT_LOG_ERR, "%s%s: mmap: %s", jpfx(), job, strerror(-rc));
        return rc;
    }
    rc = pt_shm_region_check(*base_p, *size_p, &id, &l, &why);
    if (!rc && !pt_shm_region_in_use(*base_p, *size_p, fd)) {
        why = "the job has ended";
        rc = -ENOENT;
    }
    if (rc) {
        munmap(*base_p, *size_p);
        pt_log(PT_LOG_ERR, "%s%s: %s", jpfx(), job, why);
    }
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
        return pt_shm_map_fd(g_fd, *size_p, base_p);
    }
    const char *fds = jenv("PTL_JOB_FD");
    if (fds && *fds) {
        uint64_t fd, want = 0;
        if (!parse_u64(fds, &fd) || fd > 1000000) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s is not a file descriptor number", fds);
            return -EINVAL;
        }
        const char *ss = jenv("PTL_JOB_SIZE");
        if (ss && *ss && !parse_u64(ss, &want)) {
            pt_log(PT_LOG_ERR, "PTL_JOB_SIZE=%s is not a number", ss);
            return -EINVAL;
        }
        if (fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: not an open job region. A rank's region is "
                               "not inherited across exec (a program a rank runs with exec, "
                               "system() or popen() sees its variables but not the region): "
                               "to join the job from such a program, start it with PTL_MY_RID, "
                               "PTL_JOB_FD and PTL_JOB_SIZE removed and PTL_JOB=<ptlrun's pid> "
                               "(README, \"Behaviour worth knowing\"); else start it with "
                               "ptlrun", fds);
            return -EBADF;
        }
        if (want && (uint64_t)st.st_size != want) {
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: region is %lld bytes, PTL_JOB_SIZE says %s", fds,
                   (long long)st.st_size, ss);
            return -EPROTO;
        }
        *fd_p = (int)fd;
        *size_p = (uint64_t)st.st_size;
        int rc = pt_shm_map_fd((int)fd, *size_p, base_p);
        if (rc)
            pt_log(PT_LOG_ERR, "PTL_JOB_FD=%s: mmap: %s", fds, strerror(-rc));
        return rc;
    }

    const char *job = jenv("PTL_JOB");
    int rc = pt_shm_name(g_name, sizeof g_name, job);
    if (rc) {
        pt_log(PT_LOG_ERR, "%s%s: a job name is 1-40 characters of [A-Za-z0-9._-]", jpfx(),
               job ? job : "");
        return rc;
    }
    for (int tries = 0; tries < 8; tries++) {
        int fd = pt_shm_open_nb(g_name, O_RDWR, &st);
        if (fd >= 0) {
            const char *why = "";
            char buf[96];
            const char *no = pt_shm_file_refusal(&st, buf, sizeof buf);
            if (no) {
                close(fd);
                pt_log(PT_LOG_ERR, "%s%s: " SHM_DIR "%s is %s: refused", jpfx(), job, g_name, no);
                return S_ISREG(st.st_mode) ? -EACCES : -EPROTO;
            }
            if ((uint64_t)st.st_size < sizeof(struct pt_shm_hdr)) {
                close(fd);
                pt_log(PT_LOG_ERR, "%s%s: %s is not a job region", jpfx(), job, g_name);
                return -EPROTO;
            }
            struct pt_shm_layout l;
            struct pt_shm_hdr id;
            *size_p = (uint64_t)st.st_size;
            rc = pt_shm_map_fd(fd, *size_p, base_p);
            if (rc) {
                close(fd);
                pt_log(PT_LOG_ERR, "%s%s: mmap: %s", jpfx(), job, strerror(-rc));
                return rc;
            }
            rc = pt_shm_region_check(*base_p, *size_p, &id, &l, &why);
            if (!rc && pt_shm_region_in_use(*base_p, *size_p, fd)) {
                *fd_p = fd;
                g_named = true;
                return 0;
            }
            munmap(*base_p, *size_p);
            close(fd);
            if (rc) {
                pt_log(PT_LOG_ERR, "%s%s: %s: %s", jpfx(), job, g_name, why);
                return rc;
            }
            /* valid, but nobody who could use it is alive: a dead job's leftover */
            pt_log(PT_LOG_INFO, "%s%s: removing stale %s", jpfx(), job, g_name);
            shm_unlink(g_name);
            continue;
        }
        if (fd != -ENOENT) {
            rc = fd;
            pt_log(PT_LOG_ERR, "%s%s: open " SHM_DIR "%s: %s", jpfx(), job, g_name,
                   rc == -ELOOP ? "a symbolic link: refused" : strerror(-rc));
            return rc;
        }
        if (!jenv("PTL_NRANKS")) { /* joining, not creating: PTL_JOB may be a pid */
            int pfd = open_by_pid(job, &st);
            if (pfd >= 0) {
                rc = adopt_region(pfd, &st, job, base_p, size_p);
                if (rc) {
                    close(pfd);
                    return rc;
                }
                *fd_p = pfd;
                return 0;
            }
        }
        const char *lp = jenv("PTL_LAUNCHER_PID");
        if (lp && *lp && jenv("PTL_NRANKS")) {
            /* ptlrun --named made the region before it started us: gone, it
             * was removed under the job. A region of our own would hold this
             * rank alone, waiting for peers that are in the old one, until
             * the launcher's timeout (an adversarial environment: 8 of 8). */
            pt_log(PT_LOG_ERR, "%s%s: " SHM_DIR "%s is gone: the launcher (pid %s) created it "
                               "before it started this rank, and something removed it (another "
                               "ptlrun --named in another PID namespace that took it for stale, "
                               "systemd-logind's RemoveIPC, a /dev/shm cleaner): this rank "
                               "cannot join its job",
                   jpfx(), job, g_name, lp);
            return -ENOENT;
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
    pt_log(PT_LOG_ERR, "%s%s: cannot open or create %s", jpfx(), job, g_name);
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
        const char *s = jenv(var[k]), *p = s;
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

/* Is p this process's parent, grandparent, ...? (ptlrun records the pid it
 * forked, which may be a wrapper that runs the rank's program.) */
static bool is_ancestor(pid_t p)
{
    pid_t q = getppid();
    for (int i = 0; i < 32 && q > 1; i++, q = pt_proc_parent(q))
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
    return o == self || o <= 0 || !pt_shm_pid_alive(o) || (st == PT_SHM_R_NONE && is_ancestor(o));
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
            LD_RELAXED(&rec->pid) == pid && LD_RELAXED(&rec->nid) == nid && pt_shm_pid_alive(o))
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
        if ((o == 0 || o == self || !pt_shm_pid_alive(o)) &&
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
    /* G-GEN: a new owner (the slot is ours since G-CLAIM), before CLAIMING's
     * release below; peers that still wait for the last owner's answers
     * find it moved (shm_peer_moved). */
    ST_RELAXED(&rec->gen, LD_RELAXED(&rec->gen) + 1);
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
/* fresh: our rank's record was never attached (PT_SHM_R_NONE since the
 * region was made), so nobody has written the rings from us nor their heads
 * (the receivers move them only past what we sent): our tails and their
 * heads are 0 without a look. A 256-rank job's start-up spent a third of its
 * time in those two loads per peer and class, each in another process's
 * part of the region (a page fault per peer: 369k faults; bench/RESULTS.md,
 * thirty-seventh session). A re-attach (PtlNIFini, PtlNIInit) reads them. */
static void rx_tx_setup(struct pt_xport *x, bool guest, bool fresh, uint16_t *maps,
                        uint8_t *used)
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
            if (fresh) {
                t->tail = t->rec = pt_wrap32(); /* PTL_TEST_WRAP: the region's start */
                /* P-HEAD (shm.c, pig_note): every message of p's ring to us
                 * that we have not consumed may carry a head */
                t->pig = t->rec;
                t->pig_from = in->head;
                t->want_at = t->tail;
                /* the stamps a fresh sender starts at: both tails (+ its box's 0) */
                x->rxo[p].next = 2u * pt_wrap32();
                continue;
            }
            t->tail = LD_RELAXED(&t->ring->tail); /* written by this slot only */
            uint32_t h = LD_ACQUIRE(t->hd);       /* A-HEAD */
            if (t->tail - h > D)
                h = t->tail - D; /* not a head the receiver wrote: all in flight */
            t->rec = h;
            /* P-HEAD: a message p sent after this tail's read carries a head
             * at least h (A-HEAD came first; R-HEAD precedes p's later
             * R-TAILs), one sent before may carry less: not read for it. */
            t->pig = h;
            t->pig_from = LD_ACQUIRE(&in->ring->tail); /* A-TAIL */
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
    /* Fast boxes (shm_region.h): ours as a receiver are listed by the first
     * peek (fb_seen 0); as a sender, only ranks claim, towards ranks, and a
     * rank that claimed before (an earlier NI of this slot) resumes its
     * boxes. */
    x->fbdir = pt_shm_fbdir(x->base, l, me);
    x->fb_seen = 0;
    x->fb_looked = 0;
    const bool claim = !guest && pt_config()->shm_fbox != 0; /* PTL_SHM_FBOX */
    x->fb_streak = pt_config()->shm_fbox_streak ? (uint32_t)pt_config()->shm_fbox_streak
                                                : UINT32_MAX;
    for (uint32_t p = 0; p < x->np; p++)
        x->fbtx[p].state = (claim && p < x->n && p != me) ? 0 : 2;
    /* (Resumed even with PTL_SHM_FBOX=0 now: the box's message count is
     * part of the pair's order stamps; the setting only stops new claims.) */
    if (!guest && LD_RELAXED(&x->ranks[me].fb_claims)) {
        for (uint32_t r = 0; r < x->n; r++) {
            if (r == me)
                continue;
            struct pt_shm_fbdir *d = pt_shm_fbdir(x->base, l, r);
            for (uint32_t k = 0; k < PT_SHM_FBOXES; k++)
                if (LD_ACQUIRE(&d->owner[k]) == me + 1) {
                    pt_shm_fb_tx_resume(x, r, k);
                    break;
                }
        }
    }
    /* Senders whose bit is set were listed by this slot's last owner (their
     * summary bit may be clear): list them now. */
    for (uint32_t wi = 0; wi < l->nwords; wi++) {
        uint64_t wv = LD_ACQUIRE(&x->words[wi]);
        while (wv) {
            uint32_t b = (uint32_t)__builtin_ctzll(wv);
            wv &= wv - 1;
            pt_shm_rx_list(x, wi * 64 + b);
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
    if (!have_rank && jenv("PTL_MY_RID")) {
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
    rc = pt_shm_region_check(base, size, &id, &l, &why);
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
    /* A warning (it was an info line): a user who sets PTL_QUEUE_SLOTS or
     * PTL_EAGER_MAX for one rank learns that the job's apply (an adversarial
     * client took the silence for the value in force). */
    if (slot_size != id.slot_size || queue_slots != id.qslots)
        pt_log_once(PT_LOG_WARN, "job region: slots of %u bytes x %u per queue, as the job "
                                 "was created (this process's PTL_EAGER_MAX and "
                                 "PTL_QUEUE_SLOTS ask for %u x %u); the job's apply",
                    id.slot_size, id.qslots, slot_size, queue_slots);

    /* Everything that can fail before we announce ourselves. */
    rc = -ENOMEM;
    x = calloc(1, sizeof *x);
    if (!x)
        goto fail;
    x->rsock = -1;
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
        (size_t)np * sizeof(uint32_t),                    /* gen         */
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
        (size_t)PT_SHM_FBOXES * sizeof(struct shm_fbrx),  /* fast boxes: ours    */
        (size_t)np * sizeof(uint16_t),                    /* fbrx_of     */
        (size_t)np * sizeof(struct shm_fbtx),             /* fbtx        */
        (size_t)np * sizeof(uint32_t), (size_t)np,        /* txdue, txdue_f (tx_hold) */
    };
    enum { A_IN, A_OUT, A_MAP, A_ALIVE, A_GEN, A_RXO, A_HELD, A_HOLDERS, A_ACT, A_HOLDING,
           A_LISTED, A_IDS, A_FREE, A_USED, A_ARMED, A_ADV, A_FBRX, A_FBRX_OF, A_FBTX, A_TXDUE,
           A_TXDUE_F, A_NR };
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
    x->gen = (uint32_t *)(pm + at[A_GEN]);
    x->rxo = (struct shm_rx_ord *)(pm + at[A_RXO]);
    x->held_list = (uint32_t *)(pm + at[A_HELD]);
    x->holders = (uint32_t *)(pm + at[A_HOLDERS]);
    x->act = (uint32_t *)(pm + at[A_ACT]);
    x->holding = (uint8_t *)(pm + at[A_HOLDING]);
    x->armed = (_Atomic uint32_t *)(pm + at[A_ARMED]);
    x->advl = (uint32_t *)(pm + at[A_ADV]);
    x->listed = (uint8_t *)(pm + at[A_LISTED]);
    x->fbrx = (struct shm_fbrx *)(pm + at[A_FBRX]);
    x->fbrx_of = (uint16_t *)(pm + at[A_FBRX_OF]);
    x->fbtx = (struct shm_fbtx *)(pm + at[A_FBTX]);
    x->txdue = (uint32_t *)(pm + at[A_TXDUE]);
    x->txdue_f = (uint8_t *)(pm + at[A_TXDUE_F]);
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
    x->cma_tid = calloc(np, sizeof *x->cma_tid); /* NULL: no retarget (shm_cma) */
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
        if (have_rank) {
            snprintf(why, sizeof why, "rank %u is held by process %d", me,
                     (int)LD_RELAXED(&ranks[me].ospid));
            /* The launcher started us as another rank (it wrote our pid in
             * that rank's record at the fork) and PTL_MY_RID was changed
             * after it: that rank will never attach, and what is sent to
             * it waits for our process to end. A fork child re-initialising
             * (the intended guest) is in no record: its pid is new. */
            for (uint32_t p = 0; p < n; p++)
                if (p != me && LD_RELAXED(&ranks[p].ospid) == (int32_t)self)
                    pt_log(PT_LOG_WARN, "PTL_MY_RID=%u, but the launcher started this process "
                                        "as rank %u: joining as a guest, and rank %u will never "
                                        "attach (PTL_MY_RID is the launcher's to set)", me, p, p);
        } else
            snprintf(why, sizeof why, "no PTL_MY_RID");
        rc = guest_claim(x, pt_xport_guest_pid(), why);
        if (rc)
            goto fail;
        me = x->me;
    }
    /* The guest slots' owners as we find them now (shm_peer_moved): one that
     * claims a slot after this read is new to us at its first message or
     * our first send to it, with nothing in flight to fail. */
    for (uint32_t g = n; g < np; g++)
        x->gen[g] = LD_RELAXED(&ranks[g].gen);
    struct pt_shm_rank *rec = &ranks[me];
    /* (claimed: nobody else attaches this record before our R-ATT below) */
    bool never = !guest && LD_ACQUIRE(&rec->state) == PT_SHM_R_NONE;
    rx_tx_setup(x, guest, never, (uint16_t *)(pm + at[A_MAP]), (uint8_t *)(pm + at[A_USED]));

    /* Let siblings read our memory (Yama ptrace_scope 1) before announcing
     * ourselves: a peer that sees ATTACHED may probe us at once. EINVAL
     * without Yama: nothing to allow. */
    pt_cma_allow_readers(true);
    ST_RELAXED(&rec->probe_addr, pt_cma_probe_addr());
    ST_RELAXED(&rec->cma, x->cma_allowed ? 1u : 0u); /* peers: shm_peer_caps */
    /* AF: registered before any skipped F-SND (the receivers' AF-M must
     * reach us); our own offer comes from the engine (shm_af_offer) */
    x->af_reg = pt_config()->asym_fsnd != 0 && pt_membar_global_register();
    ST_RELAXED(&rec->af, 0);
    ST_RELAXED(&rec->wire, pt_config()->transport == PT_TRANSPORT_OFI ? PT_SHM_WIRE_OFI
                                                                      : PT_SHM_WIRE_SHM);
    ST_RELAXED(&rec->prov_hash, 0); /* an earlier holder's (a guest slot's) */
    memset(rec->prov, 0, sizeof rec->prov);
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
    if (!cma_ok)
        ST_RELAXED(&rec->cma, 0); /* peers copy to and from us (shm_peer_caps) */
    if (!cma_ok && x->cma_allowed)
        pt_log_once(PT_LOG_WARN, "CMA unavailable (%s): rendezvous copies through the job "
                                 "region", cma_why);

    if (fresh) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* programs we exec do not inherit it */
        if (g_named)
            (void)flock(fd, LOCK_SH); /* in use while we live (pt_shm_region_held) */
        g_fd = fd;
    }
    *ops_p = pt_shm_ops();
    *x_p = x;
    memset(info_p, 0, sizeof *info_p);
    info_p->rank = me;
    info_p->nranks = n;
    info_p->ranks_here = n; /* one host: every rank */
    info_p->local_rank = info_p->rank;
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
        pt_shm_xport_free(x); /* nothing claimed yet: every failure comes before the claim */
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

bool pt_shm_named_ident(char *name, size_t len, dev_t *dev_p, ino_t *ino_p)
{
    struct stat st;
    pthread_mutex_lock(&g_lock);
    bool ok = g_named && g_fd >= 0 && fstat(g_fd, &st) == 0;
    if (ok) {
        snprintf(name, len, "%s", g_name);
        *dev_p = st.st_dev;
        *ino_p = st.st_ino;
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

/* The name of a named region (a PMIx job's node region) goes when the last
 * rank attaches. A rank that comes only after every other process of the
 * region has left (slower to start than its peers' whole lives: CI's
 * mp_pmix_join_forkrace under load, or any rank started 1 s late) finds the
 * region unused, takes it for a dead job's leftover and makes one of its
 * own, which no other rank joins; the first region's name then stayed in
 * /dev/shm for good, and so did the second's. So the last process to leave
 * a region that not every rank attached removes its name. After our
 * DETACHED store and a full fence, as every leaver: of two leaving at once,
 * at least one sees the other gone (both may: the second unlink fails). */
void pt_shm_leave_name(struct pt_xport *x)
{
    char name[80];
    dev_t dev;
    ino_t ino;
    if (LD_RELAXED(&x->hdr->nattached) >= x->n || !pt_shm_named_ident(name, sizeof name, &dev, &ino))
        return;
    FENCE_FULL(); /* our DETACHED (shm_close) before the others' states */
    for (uint32_t i = 0; i < x->np; i++)
        if (i != x->me && LD_ACQUIRE(&x->ranks[i].state) == PT_SHM_R_ATTACHED &&
            pt_shm_pid_alive(LD_RELAXED(&x->ranks[i].ospid)))
            return; /* the last one to leave does it */
    pt_shm_unlink_same(name, dev, ino, "the last process in it left before every rank attached");
}

void pt_shm_unlink_same(const char *name, dev_t dev, ino_t ino, const char *why)
{
    char path[96];
    struct stat st;
    snprintf(path, sizeof path, SHM_DIR "%s", name);
    if (stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino && shm_unlink(name) == 0)
        pt_log(PT_LOG_INFO, "job region: %s removed (%s)", name, why);
}

/* ---- the same transport on every rank (shm.h) ----------------------------- */

static const char *wire_name(uint32_t w)
{
    return w == PT_SHM_WIRE_OFI ? "libfabric (PTL_TRANSPORT=ofi)"
                                : "the job region (PTL_TRANSPORT=shm or auto)";
}

void pt_shm_wire_provider(struct pt_xport *x, const char *prov)
{
    struct pt_shm_rank *rec = &x->ranks[x->me];
    uint32_t h = pt_fnv1a32(prov);
    snprintf(rec->prov, sizeof rec->prov, "%s", prov);
    ST_RELAXED(&rec->prov_hash, h ? h : 1u); /* before R-EP (the caller's publish) */
}

int pt_shm_wire_check(struct pt_xport *x)
{
    const struct pt_shm_rank *me = &x->ranks[x->me];
    /* W-FENCE: our R-ATT (and R-EP) before the peers' words: of two processes
     * that attach at once, at least one sees the other's (store buffering). */
    FENCE_FULL();
    uint32_t w = LD_RELAXED(&me->wire), ph = LD_RELAXED(&me->prov_hash);
    for (uint32_t p = 0; p < x->np; p++) {
        struct pt_shm_rank *rec = &x->ranks[p];
        uint32_t st = p == x->me ? PT_SHM_R_NONE : LD_ACQUIRE(&rec->state); /* A-ATT */
        /* Detached peers too: a rank that sent its messages and left before
         * we came (ofi's start-up is slow) sent them where we do not look. */
        if (st != PT_SHM_R_ATTACHED && st != PT_SHM_R_DETACHED)
            continue;
        uint32_t pw = LD_RELAXED(&rec->wire);
        if (pw != PT_SHM_WIRE_NONE && pw != w) {
            pt_log(PT_LOG_ERR, "this process (%s %u) reaches its peers over %s, but %s %u "
                               "over %s: every process of a job must use the same "
                               "PTL_TRANSPORT (README, \"Tunables\")",
                   x->me < x->n ? "rank" : "guest", x->me, wire_name(w),
                   p < x->n ? "rank" : "guest", p, wire_name(pw));
            return -EPROTO;
        }
        if (w != PT_SHM_WIRE_OFI || ph == 0 || LD_ACQUIRE(&rec->ep_len) == 0) /* A-EP */
            continue;
        uint32_t q = LD_RELAXED(&rec->prov_hash);
        if (q != 0 && q != ph) {
            char theirs[PT_SHM_PROV_BYTES];
            memcpy(theirs, rec->prov, sizeof theirs);
            theirs[sizeof theirs - 1] = '\0';
            pt_log(PT_LOG_ERR, "this process (rank %u) uses the libfabric provider %s, but "
                               "rank %u uses %s%s: every rank of a job must use the same "
                               "PTL_OFI_PROVIDER (README, \"Tunables\")",
                   x->me, me->prov, p, theirs,
                   strlen(theirs) == sizeof theirs - 1 ? "..." : "");
            return -EPROTO;
        }
    }
    return 0;
}

/* After an open: rc, or -EPROTO with the transport closed when this process
 * reaches its peers differently from one of them (pt_shm_wire_check). */
static int wire_checked(int rc, const struct pt_xport_ops **ops_p, struct pt_xport **x_p)
{
    if (rc == 0 && pt_shm_wire_check(*x_p) != 0) {
        (*ops_p)->close(*x_p);
        *x_p = NULL;
        return -EPROTO;
    }
    return rc;
}

int pt_shm_open_node(const struct pt_shm_node *nd, uint32_t slot_size, uint32_t queue_slots,
                     uint32_t pid_hint, const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                     struct pt_xport_info *info_p)
{
    char nr[16], rid[16], jid[16];
    snprintf(nr, sizeof nr, "%u", nd->nranks);
    snprintf(rid, sizeof rid, "%u", nd->my_rid);
    snprintf(jid, sizeof jid, "%u", nd->jid);
    const struct env_over o[] = {{"PTL_JOB", nd->job},       {"PTL_NRANKS", nr},
                                 {"PTL_MY_RID", rid},        {"PTL_JID", jid},
                                 {"PTL_NIDMAP", nd->nidmap}, {"PTL_PIDMAP", nd->pidmap},
                                 {NULL, NULL}};
    pthread_mutex_lock(&g_lock);
    g_over = o;
    int rc = open_locked(slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
    g_over = NULL;
    pthread_mutex_unlock(&g_lock);
    rc = wire_checked(rc, ops_p, x_p);
    if (rc == 0 && nd->ring_prefix) {
        int e = pt_shm_ring_socket(*x_p, nd->ring_prefix);
        if (e) {
            pt_log(PT_LOG_ERR, "job region %s: cannot bind the ring socket: %s", nd->job,
                   strerror(-e));
            (*ops_p)->close(*x_p);
            *x_p = NULL;
            rc = e;
        }
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
    return wire_checked(rc, ops_p, x_p);
}
