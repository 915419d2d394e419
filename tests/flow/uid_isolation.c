/*
 * uid_isolation.c - a process of another uid cannot attach to a job's region
 * (issue 6). Run under ptlrun with 2 ranks, once with the default memfd region
 * and once with --named. Rank 0 attaches, then forks a child that drops to
 * uid/gid 65534 (nobody) and tries to reach the region:
 *   named: shm_open("/ptl-<uid>-<job>", O_RDWR) must fail with EACCES
 *          (rank 1 attaches only afterwards, so the name still exists);
 *   memfd: opening /proc/<rank 0>/fd/<PTL_JOB_FD> must fail with EACCES.
 * Exit 77 (skipped, with a message) when not root or the uid cannot change.
 */
#include "mp_util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int as_nobody(const char *what, const char *path, bool shm)
{
    pid_t c = fork();
    if (c == 0) {
        if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
            fprintf(stderr, "uid_isolation: cannot become nobody (%s): skipped\n", strerror(errno));
            _exit(77);
        }
        int fd = shm ? shm_open(path, O_RDWR, 0) : open(path, O_RDWR);
        if (fd >= 0) {
            fprintf(stderr, "uid_isolation: uid 65534 opened the %s %s\n", what, path);
            _exit(1);
        }
        if (errno != EACCES && errno != EPERM) {
            fprintf(stderr, "uid_isolation: %s %s: %s (wanted EACCES)\n", what, path, strerror(errno));
            _exit(1);
        }
        fprintf(stderr, "uid_isolation: uid 65534 refused the %s (%s)\n", what, strerror(errno));
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "uid_isolation: needs root to switch uid: skipped\n");
        return 77;
    }
    const char *rid = getenv("PTL_MY_RID"), *job = getenv("PTL_JOB"), *fd = getenv("PTL_JOB_FD");
    const char *flag_base = getenv("UIDTEST_FLAG");
    if (!rid || !flag_base)
        mp_die("run me under ptlrun with UIDTEST_FLAG set");
    /* The flag is this job's (both ranks are ptlrun's children): one left by
     * an earlier job (a killed run, ctest --repeat) must not let rank 1
     * attach before rank 0's check. */
    char flag[512];
    snprintf(flag, sizeof flag, "%s.%d", flag_base, (int)getppid());
    if (atoi(rid) == 1) {
        /* Attach only after rank 0's check, so a named segment still exists. */
        for (int i = 0; i < 3000 && access(flag, F_OK) != 0; i++)
            usleep(10000);
    }
    struct mp m;
    mp_init(&m, 2);
    int rc = 0;
    if (m.rank == 0) {
        char path[256];
        if (job) {
            snprintf(path, sizeof path, "/ptl-%u-%s", (unsigned)getuid(), job);
            rc = as_nobody("named job region", path, true);
        } else if (fd) {
            snprintf(path, sizeof path, "/proc/%d/fd/%s", (int)getpid(), fd);
            rc = as_nobody("memfd job region", path, false);
        } else {
            mp_die("no job region in the environment");
        }
        FILE *f = fopen(flag, "w");
        if (f)
            fclose(f);
    }
    mp_fini(&m);
    if (m.rank == 0)
        (void)unlink(flag); /* rank 1 saw it before it attached */
    return rc;
}
