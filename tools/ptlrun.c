/*
 * ptlrun - start the ranks of a libportals job on this host.
 *
 * ptlrun creates the job region (transport/shm_region.h) before it forks the
 * ranks: by default an anonymous memfd whose number the ranks inherit
 * (PTL_JOB_FD), so nothing ever appears in /dev/shm and the kernel frees the
 * region with the last process; with --named, a POSIX shm segment that the
 * last rank to attach unlinks. It then waits for the ranks with a signalfd and
 * waitpid: no polling. A rank that fails (non-zero exit or a signal) is marked
 * dead in the region, the job is failed (PTL_NI_PEER_DIED) and every rank's
 * doorbell rung; the survivors get --grace seconds, then SIGTERM, then
 * SIGKILL one second later. See usage() for the interface.
 */
#include "config.h"
#include "proc.h"
#include "ptl_dump.h"
#include "shm.h"
#include "xport.h"

#include <p3api/misc.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define MAX_CPUS 4096
#define GUEST_POLL_MS 50   /* how often ptlrun looks for guests that died */

static const char *g_prog = "ptlrun";

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n N [options] [--] program [args...]\n"
"\n"
"Start N ranks of a libportals job on this host, each running program with\n"
"args, and wait for them.\n"
"\n"
"options:\n"
"  -n, --np N         number of ranks, 1..%u\n"
"  --cpus LIST        pin rank r to the r-th cpu of LIST (cpus[r %% len]); LIST\n"
"                     is comma-separated cpus and ranges, e.g. 0,2 or 0-3. When\n"
"                     LIST has at least 2N cpus, rank r's NIC thread gets cpu\n"
"                     cpus[N + r] (PTL_NIC_CPU); otherwise the NIC thread runs\n"
"                     on the rank's cpu (or where PTL_NIC_CPU says).\n"
"  --host-matching    run every rank with PTL_OFFLOAD=0 (no NIC thread)\n"
"  --timeout S        fail the job after S seconds: SIGTERM, SIGKILL 1 s later,\n"
"                     exit status 124\n"
"  --grace S          after a rank fails, give the others S seconds (default 2)\n"
"                     before SIGTERM (and SIGKILL 1 s later)\n"
"  --named            use a named POSIX shm segment /ptl-<uid>-<jobid> (unlinked\n"
"                     once every rank attached) instead of an inherited memfd\n"
"  --dump-on-fail     print a dump of every rank when the job failed (after the\n"
"                     last rank ended: region and trace only)\n"
"  --dump-file FILE   also save each dump (binary) to FILE, for ptl_info --trace\n"
"  --dump-records N   trace records printed per rank (default 40; 0: all)\n"
"  --dump JOB         do not start anything: print a dump of the running job\n"
"                     JOB (the pid of its ptlrun or of one of its ranks, or the\n"
"                     name of a named job) and exit\n"
"\n"
"Dumps (\"My job hangs\" in README.md): ptlrun prints one per rank on stderr\n"
"when --timeout strikes, when ranks are still running --grace seconds after a\n"
"failure, and whenever it receives SIGUSR1. Set PTL_TRACE=1 for the ranks'\n"
"flight recorders (the last things each engine did).\n"
"  -v, --verbose      report the job region and each rank's exit\n"
"  -h, --help         this text\n"
"\n"
"environment of rank r (besides ptlrun's own):\n"
"  PTL_MY_RID=r                  the rank\n"
"  PTL_NRANKS=N                  ranks in the job\n"
"  PTL_NIDMAP=0:0:...            Portals nid of every rank (always 0: one host)\n"
"  PTL_PIDMAP=0:1:...:N-1        Portals pid of every rank (rank r has pid r)\n"
"  PTL_JID=<ptlrun's pid>        the Portals job id\n"
"  PTL_LAUNCHER_PID=<ptlrun's pid>  the library ends the rank (SIGKILL) when\n"
"                                ptlrun is gone, also behind a wrapper\n"
"  PTL_JOB_FD=<fd>               the job region, an inherited memfd, and\n"
"  PTL_JOB_SIZE=<bytes>          its size; or, with --named,\n"
"  PTL_JOB=<jobid>               the job, segment /ptl-<uid>-<jobid>\n"
"  PTL_OFFLOAD=0                 with --host-matching\n"
"  PTL_NIC_CPU=c                 with --cpus of at least 2N cpus\n"
"  PTL_JOB_CPUS=k                with --cpus: the cores the ranks are pinned to\n"
"  PTL_NIC_OWN_CPU=1             with --cpus of at least 2N cpus, when PTL_NIC_CPU is a\n"
"                                core no rank and no other NIC thread uses\n"
"The region's slot size and queue depth come from ptlrun's PTL_EAGER_MAX and\n"
"PTL_QUEUE_SLOTS (see ptl_info); ranks adopt them.\n"
"\n"
"exit status: 0 if every rank exited 0; else the first failure's status\n"
"(128+signal for a rank killed by a signal); 124 on --timeout; 128+signal\n"
"when ptlrun itself is stopped by SIGINT/SIGTERM/SIGHUP/SIGQUIT (forwarded to\n"
"the ranks; SIGKILL 1 s or --grace later); 2 for bad usage (nothing is\n"
"started). If ptlrun is killed outright, the kernel kills its ranks\n"
"(PR_SET_PDEATHSIG) and frees the memfd region.\n"
"Processes the ranks started and left running (in the background, or\n"
"detached with setsid) are terminated when the last rank has ended: SIGTERM,\n"
"then SIGKILL 1 s later (ptlrun is their subreaper); they do not change the\n"
"exit status.\n"
"At start ptlrun removes stale /dev/shm/ptl-<uid>-* segments of dead jobs.\n",
            PT_SHM_MAX_RANKS);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", g_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(ptlrun --help for usage)\n");
    exit(EXIT_USAGE);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double parse_seconds(const char *opt, const char *s, bool allow_zero)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || (!allow_zero && v == 0) ||
        v > 1e7)
        die_usage("%s: '%s' is not a number of seconds%s", opt, s,
                  allow_zero ? " (>= 0)" : " (> 0)");
    return v;
}

static unsigned parse_ranks(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        die_usage("-n: '%s' is not a number", s);
    if (v < 1 || v > (long)PT_SHM_MAX_RANKS)
        die_usage("-n %ld: the number of ranks must be 1..%u", v, PT_SHM_MAX_RANKS);
    return (unsigned)v;
}

/* "0,2,4-7" -> cpus[]; every cpu must be one we may run on. */
static int parse_cpus(const char *s, int *cpus)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        CPU_ZERO(&allowed);
    int n = 0;
    const char *p = s;
    if (!*p)
        die_usage("--cpus: empty list");
    for (;;) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b;
        if (errno || end == p || a < 0 || *p == '-' || *p == '+')
            die_usage("--cpus '%s': expected a cpu number at '%s'", s, p);
        b = a;
        p = end;
        if (*p == '-') {
            const char *q = p + 1;
            errno = 0;
            b = strtol(q, &end, 10);
            if (errno || end == q || *q == '-' || *q == '+' || b < a)
                die_usage("--cpus '%s': bad range at '%s'", s, p);
            p = end;
        }
        for (long c = a; c <= b; c++) {
            if (c >= CPU_SETSIZE || !CPU_ISSET((int)c, &allowed))
                die_usage("--cpus '%s': cpu %ld is not available to this process", s, c);
            if (n == MAX_CPUS)
                die_usage("--cpus '%s': more than %d cpus", s, MAX_CPUS);
            cpus[n++] = (int)c;
        }
        if (*p == '\0')
            break;
        if (*p != ',')
            die_usage("--cpus '%s': unexpected '%c'", s, *p);
        p++;
    }
    return n;
}

/* The program to exec, resolved now so that a typo fails before anything starts. */
static char *resolve_program(const char *prog)
{
    struct stat st;
    if (strchr(prog, '/')) {
        if (stat(prog, &st) != 0)
            die_usage("%s: %s", prog, strerror(errno));
        if (!S_ISREG(st.st_mode) || access(prog, X_OK) != 0)
            die_usage("%s: not an executable file", prog);
        return strdup(prog);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    bool found_noexec = false;
    while (*path) {
        size_t len = strcspn(path, ":");
        char buf[PATH_MAX];
        int w = snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len ? path : ".", prog);
        if (w > 0 && (size_t)w < sizeof buf && stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(buf, X_OK) == 0)
                return strdup(buf);
            found_noexec = true;
        }
        path += len;
        if (*path == ':')
            path++;
    }
    die_usage("%s: %s", prog, found_noexec ? "not executable" : "command not found in PATH");
}

/* ---- the job ----------------------------------------------------------------- */

struct rank {
    pid_t pid;      /* 0 once reaped */
    int wstatus;
};

static struct pt_shm_region g_reg;
static struct rank *g_ranks;
static unsigned g_n;
static bool g_verbose;
static const char *g_dump_file;
static unsigned g_dump_records = 40;

/* Print (and save) a dump of the job; why: a line for its header. */
/* Our stderr may be a pipe nobody drains (a stalled log reader): a write
 * would block, and with it the loop that ends the job, --timeout included
 * (an adversarial environment: ranks of a 3 s timeout ran 20 s). So what the
 * wait loop does between two polls is bounded (STUCK_S): past it, fd 2
 * becomes /dev/null, the blocked write returns (EINTR: no SA_RESTART), and
 * the rest of our words are lost, not the job's end. The ranks hold their
 * own descriptions of the pipe: theirs are not touched. */
#define STUCK_S 5
static void on_stderr_stuck(int sig)
{
    (void)sig;
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC); /* async-signal-safe, as dup2 */
    if (fd >= 0 && fd != 2) {
        dup2(fd, 2);
        close(fd);
    }
}

static void stuck_bound(bool on)
{
    struct itimerval it = {{0, 0}, {on ? STUCK_S : 0, 0}};
    (void)setitimer(ITIMER_REAL, &it, NULL);
}

static void job_dump(const char *why)
{
    pid_t *pids = calloc(g_n, sizeof *pids);
    char err[128];
    for (unsigned r = 0; pids && r < g_n; r++)
        pids[r] = g_ranks[r].pid;
    struct ptd_snap *s = pids ? ptd_collect(g_reg.base, g_reg.size, pids, why, err, sizeof err)
                              : NULL;
    free(pids);
    if (!s) {
        fprintf(stderr, "%s: no dump: %s\n", g_prog, pids ? err : "out of memory");
        return;
    }
    fflush(stdout);
    ptd_print(s, stderr, g_dump_records);
    if (g_dump_file) {
        int rc = ptd_save(s, g_dump_file);
        if (rc)
            fprintf(stderr, "%s: cannot save the dump to %s: %s\n", g_prog, g_dump_file,
                    strerror(-rc));
        else
            fprintf(stderr, "%s: dump saved to %s (ptl_info --trace %s)\n", g_prog, g_dump_file,
                    g_dump_file);
    }
    ptd_free(s);
}

/* Map a running job's region read-only: `job` is a pid (ptlrun's or a
 * rank's: the region is one of its open files) or a named job's name. */
static int map_job(const char *job, void **base_p, uint64_t *size_p)
{
    int fd = -1;
    char *end;
    long pid = strtol(job, &end, 10);
    if (*job && !*end && pid > 0) {
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *d = opendir(dir);
        if (!d)
            return -errno;
        struct dirent *e;
        char pfx[64];
        snprintf(pfx, sizeof pfx, "/dev/shm/ptl-%u-", (unsigned)getuid());
        while (fd < 0 && (e = readdir(d))) {
            char path[PATH_MAX], link[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            ssize_t n = readlink(path, link, sizeof link - 1);
            if (n <= 0)
                continue;
            link[n] = '\0';
            if (strncmp(link, "/memfd:ptl-job", 14) && strncmp(link, pfx, strlen(pfx)))
                continue;
            fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        closedir(d);
        if (fd < 0)
            return -ENOENT;
    } else {
        char name[96];
        int rc = pt_shm_name(name, sizeof name, job);
        if (rc)
            return rc;
        fd = shm_open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_uid != getuid()) {
        close(fd);
        return -EACCES;
    }
    void *b = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (b == MAP_FAILED)
        return -errno;
    *base_p = b;
    *size_p = (uint64_t)st.st_size;
    return 0;
}

static int dump_running_job(const char *job)
{
    void *base = NULL; /* (gcc 12 thinks map_job may leave them unset) */
    uint64_t size = 0;
    int rc = map_job(job, &base, &size);
    if (rc) {
        fprintf(stderr, "%s: --dump %s: no job region found (%s)\n", g_prog, job, strerror(-rc));
        return 1;
    }
    char err[128], why[96];
    snprintf(why, sizeof why, "ptlrun --dump %s", job);
    struct ptd_snap *s = ptd_collect(base, size, NULL, why, err, sizeof err);
    if (!s) {
        fprintf(stderr, "%s: --dump %s: %s\n", g_prog, job, err);
        munmap(base, size);
        return 1;
    }
    ptd_print(s, stdout, g_dump_records);
    if (g_dump_file && ptd_save(s, g_dump_file) != 0)
        fprintf(stderr, "%s: cannot save the dump to %s\n", g_prog, g_dump_file);
    ptd_free(s);
    munmap(base, size);
    return 0;
}

static int status_code(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return 1;
}

static void signal_all(int sig)
{
    for (unsigned r = 0; r < g_n; r++)
        if (g_ranks[r].pid > 0)
            kill(g_ranks[r].pid, sig);
}

static unsigned alive_count(void)
{
    unsigned k = 0;
    for (unsigned r = 0; r < g_n; r++)
        k += g_ranks[r].pid > 0;
    return k;
}

static char *join_map(unsigned n, bool pids)
{
    size_t cap = (size_t)n * 11 + 1;
    char *s = malloc(cap), *p = s;
    if (!s)
        return NULL;
    for (unsigned r = 0; r < n; r++)
        p += snprintf(p, cap - (size_t)(p - s), "%s%u", r ? ":" : "", pids ? r : 0u);
    return s;
}

/* In the child, between fork and exec: environment, placement, exec. */
static void child(unsigned r, const char *path, char **argv, const sigset_t *oldmask,
                  pid_t parent, const char *jobname, const int *cpus, int ncpus,
                  bool host_matching, const char *nidmap, const char *pidmap)
{
    char buf[64];
    /* If ptlrun dies (even by SIGKILL) the ranks must not run on alone. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent)
        _exit(127);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    /* Our pid in our rank's record before the program runs (the parent
     * writes it too, after fork returns: maybe after our PtlNIInit), so
     * that the attach can tell a rank whose PTL_MY_RID was changed from a
     * fork child joining as a guest (shm_attach.c). */
    pt_shm_set_ospid(&g_reg, r, getpid());

    snprintf(buf, sizeof buf, "%u", r);
    setenv("PTL_MY_RID", buf, 1);
    snprintf(buf, sizeof buf, "%u", g_n);
    setenv("PTL_NRANKS", buf, 1);
    setenv("PTL_NIDMAP", nidmap, 1);
    setenv("PTL_PIDMAP", pidmap, 1);
    snprintf(buf, sizeof buf, "%u", (unsigned)parent);
    setenv("PTL_JID", buf, 1);
    setenv("PTL_LAUNCHER_PID", buf, 1); /* ranks behind a wrapper watch us too */
    if (jobname) {
        setenv("PTL_JOB", jobname, 1);
        unsetenv("PTL_JOB_FD");
        unsetenv("PTL_JOB_SIZE");
    } else {
        fcntl(g_reg.fd, F_SETFD, 0); /* clear FD_CLOEXEC: the rank inherits the memfd */
        snprintf(buf, sizeof buf, "%d", g_reg.fd);
        setenv("PTL_JOB_FD", buf, 1);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)g_reg.size);
        setenv("PTL_JOB_SIZE", buf, 1);
        unsetenv("PTL_JOB");
    }
    if (host_matching)
        setenv("PTL_OFFLOAD", "0", 1);
    if (ncpus) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[r % (unsigned)ncpus], &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            fprintf(stderr, "%s: rank %u: cannot pin to cpu %d: %s\n", g_prog, r,
                    cpus[r % (unsigned)ncpus], strerror(errno));
        /* The cores the ranks share (each is pinned to one): whether the job
         * is oversubscribed, which one rank's affinity cannot tell. */
        unsigned used = 0;
        cpu_set_t all;
        CPU_ZERO(&all);
        for (unsigned i = 0; i < g_n && i < (unsigned)ncpus; i++)
            if (!CPU_ISSET(cpus[i], &all)) {
                CPU_SET(cpus[i], &all);
                used++;
            }
        snprintf(buf, sizeof buf, "%u", used);
        setenv("PTL_JOB_CPUS", buf, 1);
        unsetenv("PTL_NIC_OWN_CPU");
        if ((unsigned)ncpus >= 2 * g_n) {
            int nc = cpus[g_n + r];
            snprintf(buf, sizeof buf, "%d", nc);
            setenv("PTL_NIC_CPU", buf, 1);
            /* A core of its own: no rank and no other NIC thread on it (a
             * list such as 0,1,1,0 gives none). */
            bool own = !CPU_ISSET(nc, &all);
            for (unsigned i = g_n; own && i < 2 * g_n; i++)
                own = i == g_n + r || cpus[i] != nc;
            if (own)
                setenv("PTL_NIC_OWN_CPU", "1", 1);
        }
    } else {
        unsetenv("PTL_JOB_CPUS");
        unsetenv("PTL_NIC_OWN_CPU");
    }
    execv(path, argv);
    fprintf(stderr, "%s: rank %u: exec %s: %s\n", g_prog, r, path, strerror(errno));
    _exit(127);
}

/* Up to max children of ours (ptlrun is a subreaper: every orphan of a rank
 * becomes one), from /proc; how many were found. */
static unsigned children(pid_t self, pid_t *out, unsigned max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    unsigned k = 0;
    struct dirent *e;
    while (k < max && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (pt_proc_parent((pid_t)pid) == self) /* util/proc.c's stat reader */
            out[k++] = (pid_t)pid;
    }
    closedir(d);
    return k;
}

/* Every rank has ended: end what they left running (background jobs,
 * daemons that called setsid: orphans come to us, PR_SET_CHILD_SUBREAPER).
 * Rounds of SIGTERM, a second's grace, SIGKILL: a process whose parent
 * dies in one round is ours in the next. Bounded. */
static void end_leftovers(pid_t self)
{
    enum { MAX_KIDS = 1024, ROUNDS = 8 };
    pid_t *kid = malloc(MAX_KIDS * sizeof *kid);
    if (!kid)
        return;
    unsigned total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ; /* orphans that have ended */
        unsigned k = children(self, kid, MAX_KIDS);
        if (!k)
            break;
        if (!total) {
            fprintf(stderr, "%s: processes the ranks started were still running when the last "
                            "rank ended: terminating them (pid", g_prog);
            for (unsigned i = 0; i < k && i < 8; i++)
                fprintf(stderr, " %d", (int)kid[i]);
            fprintf(stderr, "%s)\n", k > 8 ? " ..." : "");
        }
        total += k;
        for (unsigned i = 0; i < k; i++)
            kill(kid[i], SIGTERM);
        /* a listed pid stays ours (alive or a zombie) until we reap it: never
         * signal one we reaped (its number may be another process's now) */
        uint64_t until = now_ns() + 1000000000ull;
        unsigned left = k;
        while (left && now_ns() < until) {
            for (unsigned i = 0; i < k; i++)
                if (kid[i] > 0 && waitpid(kid[i], NULL, WNOHANG) == kid[i]) {
                    kid[i] = 0;
                    left--;
                }
            struct timespec ts = {0, 10000000};
            if (left)
                nanosleep(&ts, NULL);
        }
        for (unsigned i = 0; i < k; i++)
            if (kid[i] > 0) {
                kill(kid[i], SIGKILL);
                waitpid(kid[i], NULL, 0);
            }
    }
    free(kid);
}

static void report_exit(unsigned r, int ws, bool expected)
{
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
        if (g_verbose)
            fprintf(stderr, "%s: rank %u exited 0\n", g_prog, r);
        return;
    }
    if (expected && !g_verbose)
        return;
    if (WIFSIGNALED(ws))
        fprintf(stderr, "%s: rank %u (pid %d) killed by signal %d (%s)%s\n", g_prog, r,
                (int)g_ranks[r].pid, WTERMSIG(ws), strsignal(WTERMSIG(ws)),
                WCOREDUMP(ws) ? ", core dumped" : "");
    else
        fprintf(stderr, "%s: rank %u (pid %d) exited with status %d\n", g_prog, r,
                (int)g_ranks[r].pid, status_code(ws));
}

/* Started with a standard descriptor closed (`ptlrun ... >&-`): /dev/null
 * takes its place, so that neither the job region nor any descriptor a rank's
 * library opens becomes a rank's stdin, stdout or stderr. */
static void std_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int nfd = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
            if (nfd >= 0 && nfd != fd) /* not the lowest free: leave it */
                close(nfd);
        }
}

int main(int argc, char **argv)
{
    std_fds_open();
    unsigned n = 0;
    bool host_matching = false, named = false;
    double timeout_s = 0, grace_s = 2.0;
    static int cpus[MAX_CPUS];
    int ncpus = 0;
    const char *cpu_arg = NULL;

    enum { O_CPUS = 256, O_HOST, O_TIMEOUT, O_GRACE, O_NAMED, O_DUMP, O_DUMP_FAIL, O_DUMP_FILE,
           O_DUMP_RECS };
    const char *dump_job = NULL;
    bool dump_on_fail = false;
    static const struct option opts[] = {
        {"np", required_argument, NULL, 'n'},
        {"cpus", required_argument, NULL, O_CPUS},
        {"host-matching", no_argument, NULL, O_HOST},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"grace", required_argument, NULL, O_GRACE},
        {"named", no_argument, NULL, O_NAMED},
        {"dump", required_argument, NULL, O_DUMP},
        {"dump-on-fail", no_argument, NULL, O_DUMP_FAIL},
        {"dump-file", required_argument, NULL, O_DUMP_FILE},
        {"dump-records", required_argument, NULL, O_DUMP_RECS},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:n:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'n': n = parse_ranks(optarg); break;
        case O_CPUS: cpu_arg = optarg; break;
        case O_HOST: host_matching = true; break;
        case O_TIMEOUT: timeout_s = parse_seconds("--timeout", optarg, false); break;
        case O_GRACE: grace_s = parse_seconds("--grace", optarg, true); break;
        case O_NAMED: named = true; break;
        case O_DUMP: dump_job = optarg; break;
        case O_DUMP_FAIL: dump_on_fail = true; break;
        case O_DUMP_FILE: g_dump_file = optarg; break;
        case O_DUMP_RECS: {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0 || v > 1000000)
                die_usage("--dump-records: '%s' is not a count", optarg);
            g_dump_records = (unsigned)v;
            break;
        }
        case 'v': g_verbose = true; break;
        case 'h': usage(stdout); return 0;
        case ':':
            die_usage("option '%s' needs an argument", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                die_usage("unknown option '-%c'", optopt);
            die_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (dump_job) {
        if (n || optind < argc)
            die_usage("--dump JOB starts nothing: no -n and no program");
        return dump_running_job(dump_job);
    }
    if (n == 0)
        die_usage("the number of ranks is required (-n N)");
    if (optind >= argc)
        die_usage("no program to run");
    if (cpu_arg)
        ncpus = parse_cpus(cpu_arg, cpus);
    char *path = resolve_program(argv[optind]);
    char **rank_argv = &argv[optind];

    /* The region's geometry, from the same tunables the engine reads. */
    const struct pt_config *cfg = pt_config();
    uint32_t slot = pt_slot_size_for((uint32_t)cfg->eager_max);
    uint32_t qslots = pt_queue_slots_for((uint32_t)cfg->queue_slots);
    uint32_t nguests = pt_shm_guests();
    uint32_t preq = (uint32_t)cfg->pool_req, prsp = (uint32_t)cfg->pool_rsp;
    if (!pt_shm_region_bytes(n, nguests, slot, qslots, preq, prsp))
        die_usage("a job of %u ranks with %u-byte slots, pools of %u + %u and rings of %u is "
                  "too large (lower PTL_POOL_REQ, PTL_POOL_RSP, PTL_QUEUE_SLOTS or "
                  "PTL_EAGER_MAX)", n, slot, preq, prsp, qslots);

    g_n = n;
    g_ranks = calloc(n, sizeof *g_ranks);
    char *nidmap = join_map(n, false), *pidmap = join_map(n, true);
    if (!g_ranks || !nidmap || !pidmap) {
        fprintf(stderr, "%s: out of memory\n", g_prog);
        free(path);
        free(nidmap);
        free(pidmap);
        free(g_ranks);
        return 1;
    }

    pt_shm_clean_stale(g_verbose);

    /* Ranks probe CMA against us when no sibling has attached yet. */
    pt_cma_allow_readers(true);

    pid_t self = getpid();
    struct pt_shm_spec spec = {n, nguests, slot, qslots, (uint32_t)self, NULL, NULL, preq, prsp};
    char jobname[32] = "";
    int rc;
    if (named) {
        rc = -EEXIST;
        for (int k = 0; k < 10 && rc == -EEXIST; k++) {
            if (k)
                snprintf(jobname, sizeof jobname, "%d-%d", (int)self, k);
            else
                snprintf(jobname, sizeof jobname, "%d", (int)self);
            rc = pt_shm_create(&spec, jobname, &g_reg);
        }
    } else {
        rc = pt_shm_create(&spec, NULL, &g_reg);
    }
    if (rc) {
        fprintf(stderr, "%s: cannot create the job region (%u ranks, %llu bytes): %s\n",
                g_prog, n, (unsigned long long)pt_shm_region_bytes(n, nguests, slot, qslots, preq, prsp),
                strerror(-rc));
        free(path); /* (LeakSanitizer: the refused --named job of mp_env_ns) */
        free(nidmap);
        free(pidmap);
        free(g_ranks);
        return 1;
    }
    if (g_verbose)
        fprintf(stderr, "%s: job %d: %u ranks, %u guest slots, region %llu bytes (%s%s), "
                        "slot %u, rings of %u\n",
                g_prog, (int)self, n, nguests, (unsigned long long)g_reg.size,
                named ? "named " : "memfd", named ? g_reg.name : "", slot, qslots);

    /* Signals arrive through a signalfd; the ranks get the old mask back. */
    sigset_t mask, oldmask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGUSR1); /* a dump on demand */
    sigprocmask(SIG_BLOCK, &mask, &oldmask);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        fprintf(stderr, "%s: signalfd: %s\n", g_prog, strerror(errno));
        pt_shm_region_close(&g_reg, true);
        return 1;
    }

    /* Orphans of the ranks come to us: end_leftovers ends them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    fflush(NULL);
    for (unsigned r = 0; r < n; r++) {
        /* A Ctrl-C (or TERM, HUP, QUIT) while the ranks start: start no more
         * (the wait below takes the signal and ends the ones started). An
         * 8,000-rank start-up went on for 30 s after a SIGINT. */
        sigset_t pend;
        if ((r & 15) == 15 && sigpending(&pend) == 0 &&
            (sigismember(&pend, SIGINT) == 1 || sigismember(&pend, SIGTERM) == 1 ||
             sigismember(&pend, SIGHUP) == 1 || sigismember(&pend, SIGQUIT) == 1))
            break;
        pid_t p = fork();
        if (p == 0)
            child(r, path, rank_argv, &oldmask, self, named ? jobname : NULL, cpus, ncpus,
                  host_matching, nidmap, pidmap);
        if (p < 0) {
            fprintf(stderr, "%s: fork rank %u: %s\n", g_prog, r, strerror(errno));
            pt_shm_fail_job(&g_reg, PTL_NI_FAIL);
            signal_all(SIGKILL);
            for (unsigned k = 0; k < r; k++)
                waitpid(g_ranks[k].pid, NULL, 0);
            pt_shm_region_close(&g_reg, true);
            return 1;
        }
        g_ranks[r].pid = p;
        pt_shm_set_ospid(&g_reg, r, p);
    }

    struct sigaction sa_stuck = {.sa_handler = on_stderr_stuck}; /* no SA_RESTART */
    sigemptyset(&sa_stuck.sa_mask);
    sigaction(SIGALRM, &sa_stuck, NULL);

    /* Wait. Phases: running -> (failure) grace -> term -> kill. */
    enum { RUNNING, GRACE, TERM, KILL } phase = RUNNING;
    uint64_t t0 = now_ns();
    uint64_t t_timeout = timeout_s > 0 ? t0 + (uint64_t)(timeout_s * 1e9) : 0;
    uint64_t t_phase = 0;  /* when the current phase ends (0: never) */
    int first_code = 0, ext_sig = 0, undetached_code = 0;
    bool timed_out = false;

    while (alive_count() > 0) {
        uint64_t now = now_ns(), next = 0;
        if (t_timeout && phase <= GRACE)
            next = t_timeout;
        if (t_phase && (!next || t_phase < next))
            next = t_phase;
        int ms = -1;
        if (next)
            ms = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
        if (nguests && (ms < 0 || ms > GUEST_POLL_MS))
            ms = GUEST_POLL_MS; /* guests are not our children: look at them */
        struct pollfd pfd = {sfd, POLLIN, 0};
        stuck_bound(false);
        int prc = poll(&pfd, 1, ms);
        stuck_bound(true); /* until the next poll (on_stderr_stuck) */
        if (prc < 0 && errno != EINTR) {
            fprintf(stderr, "%s: poll: %s\n", g_prog, strerror(errno));
            break;
        }
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (sig == SIGCHLD)
                continue;
            if (sig == SIGUSR1) {
                char why[64];
                snprintf(why, sizeof why, "SIGUSR1 from pid %u", (unsigned)si.ssi_pid);
                job_dump(why);
                continue;
            }
            if (ext_sig) {
                signal_all(SIGKILL); /* second signal: no more patience */
                phase = KILL;
                t_phase = 0;
                continue;
            }
            ext_sig = sig;
            fprintf(stderr, "%s: %s: forwarding to %u ranks\n", g_prog, strsignal(sig),
                    alive_count());
            pt_shm_fail_job(&g_reg, PTL_NI_FAIL);
            signal_all(sig);
            if (phase < TERM) {
                phase = TERM;
                t_phase = now_ns() + (uint64_t)((grace_s > 1 ? grace_s : 1) * 1e9);
            }
        }
        int ws;
        pid_t p;
        while ((p = waitpid(-1, &ws, WNOHANG)) > 0) {
            unsigned r;
            for (r = 0; r < n && g_ranks[r].pid != p; r++)
                ;
            if (r == n)
                continue;
            g_ranks[r].wstatus = ws;
            bool attached = pt_shm_rank_state(&g_reg, r) == PT_SHM_R_ATTACHED;
            bool failed = pt_shm_rank_exited(&g_reg, r, ws);
            report_exit(r, ws, phase >= TERM);
            bool undetached = attached && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
            if (undetached && phase == RUNNING && n == 1) {
                /* A job of one has no peer to fail: the reference
                 * implementation's own selftest ends this way. */
                if (g_verbose)
                    fprintf(stderr, "%s: rank 0 (pid %d) exited 0 without PtlNIFini (a job "
                                    "of one: not a failure)\n",
                            g_prog, (int)g_ranks[r].pid);
            } else if (!attached && !failed && phase == RUNNING && n > 1 &&
                       pt_shm_rank_state(&g_reg, r) == PT_SHM_R_NONE) {
                /* Legitimate (a rank with nothing to say), but its peers
                 * would otherwise wonder why their operations with it fail. */
                fprintf(stderr, "%s: rank %u (pid %d) exited 0 without opening an NI: its "
                                "peers' operations with it fail (PTL_NI_PEER_DIED)\n",
                        g_prog, r, (int)g_ranks[r].pid);
            } else if (undetached && phase == RUNNING) {
                /* exit without PtlNIFini: a failure of the job (as mpirun
                 * treats an exit without MPI_Finalize) */
                fprintf(stderr, "%s: rank %u (pid %d) exited 0 without PtlNIFini: its peers' "
                                "operations with it fail (PTL_NI_PEER_DIED)\n",
                        g_prog, r, (int)g_ranks[r].pid);
                undetached_code = 1;
            }
            g_ranks[r].pid = 0;
            if (!failed)
                continue;
            /* A survivor that leaves undetached after a peer died is not the
             * cause: the job's status is the first real failure's. */
            if (!first_code && phase < TERM && !undetached)
                first_code = status_code(ws);
            if (phase == RUNNING) {
                phase = GRACE;
                t_phase = now_ns() + (uint64_t)(grace_s * 1e9);
            }
        }
        /* A guest (a process that joined the job) gone while attached: its
         * peers' operations with it fail, as with a rank that failed. */
        uint32_t gi, gpid;
        pid_t gos;
        if (nguests && pt_shm_guests_reap(&g_reg, &gi, &gos, &gpid)) {
            fprintf(stderr, "%s: guest %u (pid %d, Portals pid %u) ended without PtlNIFini: "
                            "its peers' operations with it fail (PTL_NI_PEER_DIED)\n",
                    g_prog, gi, (int)gos, gpid);
            if (!first_code && phase < TERM)
                first_code = 1;
            if (phase == RUNNING) {
                phase = GRACE;
                t_phase = now_ns() + (uint64_t)(grace_s * 1e9);
            }
        }
        now = now_ns();
        if (t_timeout && phase <= GRACE && now >= t_timeout && alive_count()) {
            timed_out = true;
            fprintf(stderr, "%s: timeout after %g s: terminating %u ranks\n", g_prog,
                    timeout_s, alive_count());
            char why[64];
            snprintf(why, sizeof why, "--timeout %g s", timeout_s);
            job_dump(why);
            pt_shm_fail_job(&g_reg, PTL_NI_FAIL);
            signal_all(SIGTERM);
            phase = TERM;
            t_phase = now + 1000000000ull;
        } else if (t_phase && now >= t_phase && alive_count()) {
            if (phase == GRACE) {
                fprintf(stderr, "%s: %u ranks still running %g s after the failure: "
                                "terminating\n", g_prog, alive_count(), grace_s);
                job_dump("ranks stuck after a failure");
                signal_all(SIGTERM);
                phase = TERM;
                t_phase = now + 1000000000ull;
            } else if (phase == TERM) {
                if (g_verbose)
                    fprintf(stderr, "%s: killing %u ranks\n", g_prog, alive_count());
                signal_all(SIGKILL);
                phase = KILL;
                t_phase = 0;
            }
        }
    }

    stuck_bound(false);
    close(sfd);
    end_leftovers(self);
    if (dump_on_fail && (first_code || undetached_code || timed_out))
        job_dump("--dump-on-fail: the job failed; every rank has ended");
    pt_shm_region_close(&g_reg, true);
    free(path);
    free(nidmap);
    free(pidmap);
    free(g_ranks);
    if (first_code) /* a rank failed before the timeout or a signal struck */
        return first_code;
    if (undetached_code) /* the only failure: a rank left without PtlNIFini */
        return undetached_code;
    if (timed_out)
        return EXIT_TIMEOUT;
    if (ext_sig)
        return 128 + ext_sig;
    return 0;
}
