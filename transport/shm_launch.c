/* shm_launch.c - the launcher's side of the job region (ptlrun, ptl_info):
 * child pids, deaths, job failure, guests, stale segment cleanup. */
#include "shm_int.h"
#include "config.h"
#include "perturb.h"

#include <p3api/misc.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- launcher side -------------------------------------------------------- */

static void wake_all_bells(struct pt_shm_region *r)
{
    for (uint32_t i = 0; i < r->l.nprocs; i++)
        pt_wake_all(&pt_shm_rankrec(r->base, &r->l, i)->bell);
}

/* The same for engines that announced sleep only (D1's peer half); the
 * caller fenced after what they must see. */
static void wake_sleeping_bells(struct pt_shm_region *r)
{
    for (uint32_t i = 0; i < r->l.nprocs; i++)
        pt_wake_if_sleeping_fenced(&pt_shm_rankrec(r->base, &r->l, i)->bell);
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
    } else {
        /* Gone in order: not a failure, but nothing sent to it now will be
         * answered (a get to a rank that finished waited for ever). Its
         * process has ended (we reaped it), so peer_alive says so. */
        struct pt_shm_hdr *h = r->base;
        RMW_ADD(&h->departed, 1);
        FENCE_FULL(); /* the count before the sleepers' loads (D1's pairing) */
        if (PT_UNLIKELY(pt_config()->depart_ring_ms)) /* tests: a launcher preempted here */
            pt_yield_for_ns((uint64_t)pt_config()->depart_ring_ms * 1000000u);
        wake_sleeping_bells(r);
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
            LD_RELAXED(&rec->dead) || pt_shm_pid_alive(o))
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
                    pid <= INT32_MAX && !pt_shm_pid_alive((pid_t)pid);
        } else {
            int fd = pt_shm_open_nb(name, O_RDONLY, &st);
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
                        stale = !pt_shm_region_in_use(p, want, fd);
                    else
                        stale = old && !pt_shm_pid_alive(h->owner_pid);
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
