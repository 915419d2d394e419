/*
 * mp_driver - run a command (usually ptlrun) and check how it ended.
 *
 *   mp_driver [checks] -- command [args...]
 *
 *   --exit N          the exit status must be N (default 0)
 *   --nonzero         the exit status must be non-zero
 *   --within S        it must finish within S seconds (default 100); if not,
 *                     it is killed and the check fails
 *   --stderr-has STR  its stderr must contain STR
 *   --stdout-has STR  its stdout must contain STR
 *   --stderr-lacks STR  its stderr must not contain STR (e.g. "exited with
 *                     status": ptlrun's line for a rank that exited non-zero,
 *                     which a job whose status is another rank's death does
 *                     not show in its own exit status)
 *   --stdout-lacks STR  its stdout must not contain STR
 *   --no-residue      afterwards no /dev/shm/ptl-<uid>-<pid>* entry may exist
 *                     (pid: the command's, which is ptlrun's job id) and no
 *                     process it started may be left (mp_driver is a child
 *                     subreaper: orphans would become its children)
 *   --no-px-residue   afterwards no /dev/shm/ptl-<uid>-px* entry that was not
 *                     there before (a PMIx job's node region, whose name comes
 *                     from the launcher's namespace). Only for PMIx jobs, which
 *                     run one at a time (RESOURCE_LOCK mpirun): another PMIx
 *                     job's region would count
 *   --skip N          if the command (every copy) exits N, the test is
 *                     skipped: the other checks but --no-residue are waived
 *                     and mp_driver exits 77 (CTest's SKIP_RETURN_CODE)
 *   --settle S        processes of the job still exiting when the command
 *                     ended (mpirun returns before it has reaped ranks it
 *                     terminated) get up to S seconds to end by themselves
 *                     before they count as left behind (default 0)
 *   --fault-ok        the engine's wake-up backstop may fire (a test that
 *                     forges a doorbell); without it, "a wake-up did not
 *                     come" on stderr fails the check: the backstop
 *                     (PTL_WAKE_BACKSTOP_MS) would otherwise hide a lost
 *                     wake-up of the waiting protocol from every test
 *   --spawn N         run N copies of the command as one job WITHOUT ptlrun:
 *                     PTL_JOB=mpd<pid>, PTL_NRANKS=N, PTL_MY_RID=r and the
 *                     maps PTL_NIDMAP=0:..., PTL_PIDMAP=0:1:... (the ranks
 *                     create and join the named region themselves);
 *                     each copy must exit with the expected status, and the
 *                     /dev/shm check uses that job name
 *
 * The command's output is captured and echoed (stdout, then stderr), so CTest
 * logs show it. Exit status: 0 if every check passed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPAWN 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    if (n < 0)
        n = 0;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    ssize_t got = pread(fd, s, (size_t)n, 0);
    s[got > 0 ? got : 0] = '\0';
    return s;
}

static int status_code(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return -1;
}

static bool have_children(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    int pid = 0;
    bool any = f && fscanf(f, "%d", &pid) == 1;
    if (f)
        fclose(f);
    return any;
}

/* Where a process left behind is stuck, before it is killed: per thread its
 * name, state, kernel wait channel and blocking syscall (number and
 * arguments: a futex address shows which word it sleeps on). A rare hang in
 * CI then leaves more than "left behind" to go on. */
static void describe_stuck(int pid)
{
    char path[320], buf[256];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char comm[64] = "?", wchan[64] = "?", sc[160] = "?", state = '?';
        const char *what[] = {"comm", "wchan", "syscall", "stat"};
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "/proc/%d/task/%.32s/%s", pid, e->d_name, what[i]);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            if (fgets(buf, sizeof buf, f)) {
                buf[strcspn(buf, "\n")] = 0;
                if (i == 0)
                    snprintf(comm, sizeof comm, "%.63s", buf);
                else if (i == 1)
                    snprintf(wchan, sizeof wchan, "%.63s", buf);
                else if (i == 2)
                    snprintf(sc, sizeof sc, "%.159s", buf);
                else {
                    const char *rp = strrchr(buf, ')');
                    if (rp && rp[1] == ' ')
                        state = rp[2];
                }
            }
            fclose(f);
        }
        fprintf(stderr, "mp_driver:   thread %s (%s): state %c, wchan %s, syscall %s\n",
                e->d_name, comm, state, wchan, sc);
    }
    closedir(d);
}

/* Kill and reap every child we still have (orphans reparented to us), after
 * up to settle_s seconds in which they may end by themselves. */
static int reap_leftovers(double settle_s)
{
    for (double t0 = now_s(); settle_s > 0;) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        if (!have_children() || now_s() - t0 > settle_s)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int left = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    if (f) {
        int pid;
        while (fscanf(f, "%d", &pid) == 1) {
            fprintf(stderr, "mp_driver: process %d was left behind: killing it\n", pid);
            describe_stuck(pid);
            kill(pid, SIGKILL);
            left++;
        }
        fclose(f);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0 || (left && waitpid(-1, NULL, 0) > 0))
        ;
    return left;
}

/* Calls fn for every /dev/shm entry whose name starts with prefix; returns
 * how many fn counted. */
static int shm_walk(const char *prefix, int (*fn)(const char *name, size_t plen, void *arg),
                    void *arg)
{
    size_t plen = strlen(prefix);
    int found = 0;
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, plen) == 0)
            found += fn(e->d_name, plen, arg);
    closedir(d);
    return found;
}

static int job_left(const char *name, size_t plen, void *arg)
{
    (void)arg;
    char c = name[plen]; /* '~': a creator's private name (transport/shm.c) */
    if (c != '\0' && c != '-' && c != '.' && c != '~')
        return 0;
    fprintf(stderr, "mp_driver: /dev/shm/%s was left behind\n", name);
    return 1;
}

static int shm_residue(const char *job)
{
    char prefix[96];
    snprintf(prefix, sizeof prefix, "ptl-%u-%s", (unsigned)getuid(), job);
    return shm_walk(prefix, job_left, NULL);
}

/* A PMIx job's node region names (ptl-<uid>-px...): before the command runs,
 * remember them; afterwards, report new ones (--no-px-residue). */
#define PX_MAX 64
static char px_seen[PX_MAX][NAME_MAX + 1];
static int px_n;

static int px_one(const char *name, size_t plen, void *arg)
{
    (void)plen;
    if (!*(bool *)arg) {
        if (px_n < PX_MAX)
            snprintf(px_seen[px_n++], sizeof px_seen[0], "%s", name);
        return 0;
    }
    for (int k = 0; k < px_n; k++)
        if (!strcmp(px_seen[k], name))
            return 0;
    fprintf(stderr, "mp_driver: /dev/shm/%s (a PMIx job's node region) was left behind\n", name);
    return 1;
}

static int px_scan(bool after)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "ptl-%u-px", (unsigned)getuid());
    return shm_walk(prefix, px_one, &after);
}

int main(int argc, char **argv)
{
    int want_exit = 0, spawn = 0, skip_code = -1;
    bool nonzero = false, residue = false, px_residue = false, fault_ok = false;
    double settle = 0;
    double within = 100;
    const char *err_has = NULL, *out_has = NULL, *err_lacks = NULL, *out_lacks = NULL;
    int i;
    for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--exit") && i + 1 < argc)
            want_exit = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nonzero"))
            nonzero = true;
        else if (!strcmp(argv[i], "--within") && i + 1 < argc)
            within = atof(argv[++i]);
        else if (!strcmp(argv[i], "--stderr-has") && i + 1 < argc)
            err_has = argv[++i];
        else if (!strcmp(argv[i], "--stdout-has") && i + 1 < argc)
            out_has = argv[++i];
        else if (!strcmp(argv[i], "--stderr-lacks") && i + 1 < argc)
            err_lacks = argv[++i];
        else if (!strcmp(argv[i], "--stdout-lacks") && i + 1 < argc)
            out_lacks = argv[++i];
        else if (!strcmp(argv[i], "--no-residue"))
            residue = true;
        else if (!strcmp(argv[i], "--no-px-residue"))
            px_residue = true;
        else if (!strcmp(argv[i], "--settle") && i + 1 < argc)
            settle = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fault-ok"))
            fault_ok = true;
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            skip_code = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--spawn") && i + 1 < argc)
            spawn = atoi(argv[++i]);
        else {
            fprintf(stderr, "mp_driver: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (i + 1 >= argc || spawn < 0 || spawn > MAX_SPAWN) {
        fprintf(stderr, "usage: mp_driver [checks] -- command [args...]\n");
        return 2;
    }
    char **cmd = &argv[i + 1];

    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    int out = memfd_create("mp_driver.out", MFD_CLOEXEC);
    int err = memfd_create("mp_driver.err", MFD_CLOEXEC);
    if (out < 0 || err < 0) {
        perror("mp_driver: memfd_create");
        return 1;
    }
    /* O_APPEND: the command and its ranks share these files, and a memfd's
     * file position is not updated atomically (no FMODE_ATOMIC_POS): two
     * processes writing at once could overwrite each other's lines (ptlrun's
     * own message was lost that way under ctest -j2). */
    fcntl(out, F_SETFL, fcntl(out, F_GETFL) | O_APPEND);
    fcntl(err, F_SETFL, fcntl(err, F_GETFL) | O_APPEND);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);

    if (px_residue)
        px_scan(false);
    char job[32];
    snprintf(job, sizeof job, "mpd%d", (int)getpid());
    int n = spawn ? spawn : 1;
    pid_t pids[MAX_SPAWN];
    int codes[MAX_SPAWN];
    double t0 = now_s();
    fflush(NULL);
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            perror("mp_driver: fork");
            return 1;
        }
        if (p == 0) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            dup2(out, 1);
            dup2(err, 2);
            if (spawn) {
                char buf[32];
                setenv("PTL_JOB", job, 1);
                snprintf(buf, sizeof buf, "%d", spawn);
                setenv("PTL_NRANKS", buf, 1);
                snprintf(buf, sizeof buf, "%d", r);
                setenv("PTL_MY_RID", buf, 1);
                unsetenv("PTL_JOB_FD");
                unsetenv("PTL_JOB_SIZE");
                char map[MAX_SPAWN * 4], *pm = map;
                for (int k = 0; k < spawn; k++)
                    pm += sprintf(pm, "%s0", k ? ":" : "");
                setenv("PTL_NIDMAP", map, 1);
                pm = map;
                for (int k = 0; k < spawn; k++)
                    pm += sprintf(pm, "%s%d", k ? ":" : "", k);
                setenv("PTL_PIDMAP", map, 1);
            }
            execvp(cmd[0], cmd);
            fprintf(stderr, "mp_driver: exec %s: %s\n", cmd[0], strerror(errno));
            _exit(127);
        }
        pids[r] = p;
        codes[r] = -1;
    }

    /* Wait for our children with a deadline: SIGCHLD through sigtimedwait. */
    int running = n;
    bool timed_out = false;
    while (running > 0) {
        for (int r = 0; r < n; r++) {
            int ws;
            if (codes[r] == -1 && waitpid(pids[r], &ws, WNOHANG) == pids[r]) {
                codes[r] = status_code(ws);
                running--;
            }
        }
        if (!running)
            break;
        double left = t0 + within - now_s();
        if (left <= 0) {
            timed_out = true;
            fprintf(stderr, "mp_driver: still running after %g s: killing\n", within);
            for (int r = 0; r < n; r++)
                if (codes[r] == -1)
                    kill(pids[r], SIGKILL);
            within += 30; /* then wait for them to go */
            continue;
        }
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        sigtimedwait(&chld, NULL, &ts);
    }
    double took = now_s() - t0;

    char *o = slurp(out), *e = slurp(err);
    fputs(o ? o : "", stdout);
    fputs(e ? e : "", stderr);
    fflush(NULL);

    bool skipped = skip_code >= 0 && !timed_out;
    for (int r = 0; r < n; r++)
        skipped = skipped && codes[r] == skip_code;
    int bad = 0;
    if (timed_out)
        bad++;
    for (int r = 0; r < n && !skipped; r++) {
        bool ok = nonzero ? codes[r] != 0 : codes[r] == want_exit;
        if (!ok) {
            fprintf(stderr, "mp_driver: %s%d exited with %d, expected %s%d\n",
                    spawn ? "copy " : "command ", r, codes[r], nonzero ? "non-zero, not " : "",
                    nonzero ? 0 : want_exit);
            bad++;
        }
    }
    if (!fault_ok && e && strstr(e, "a wake-up did not come")) {
        fprintf(stderr, "mp_driver: the engine's backstop found work nobody woke it for: a "
                        "lost wake-up\n");
        bad++;
    }
    if (!skipped && err_has && (!e || !strstr(e, err_has))) {
        fprintf(stderr, "mp_driver: stderr does not contain \"%s\"\n", err_has);
        bad++;
    }
    if (!skipped && out_has && (!o || !strstr(o, out_has))) {
        fprintf(stderr, "mp_driver: stdout does not contain \"%s\"\n", out_has);
        bad++;
    }
    if (!skipped && err_lacks && e && strstr(e, err_lacks)) {
        fprintf(stderr, "mp_driver: stderr contains \"%s\"\n", err_lacks);
        bad++;
    }
    if (!skipped && out_lacks && o && strstr(o, out_lacks)) {
        fprintf(stderr, "mp_driver: stdout contains \"%s\"\n", out_lacks);
        bad++;
    }
    if (residue) {
        char pidjob[32];
        snprintf(pidjob, sizeof pidjob, "%d", (int)pids[0]);
        bad += shm_residue(spawn ? job : pidjob);
        bad += reap_leftovers(settle);
    }
    if (px_residue)
        bad += px_scan(true);
    fprintf(stderr, "mp_driver: finished in %.2f s: %s\n", took,
            bad ? "FAILED" : skipped ? "skipped" : "ok");
    free(o);
    free(e);
    return bad ? 1 : skipped ? 77 : 0;
}
