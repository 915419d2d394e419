/* proc.c - see proc.h. */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

pid_t pt_proc_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* The fields of a stat file (/proc/<pid>/stat or .../task/<tid>/stat,
 * relative to dfd) after the command name, into buf: "S ppid ...". The name
 * is in parentheses and may itself hold spaces and parentheses, so the last
 * ')' ends it. NULL if the file cannot be read (the task ended). */
static const char *stat_fields(int dfd, const char *path, char *buf, size_t len)
{
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

pid_t pt_proc_parent(pid_t pid)
{
    char path[32], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    const char *f = stat_fields(AT_FDCWD, path, buf, sizeof buf);
    int ppid = 0;
    if (!f || sscanf(f, "%*c %d", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

/* The state letter of task tid (relative to /proc/<pid>/task), or 0. */
static char task_state(int dfd, int tid)
{
    char path[32], buf[512];
    snprintf(path, sizeof path, "%d/stat", tid);
    const char *f = stat_fields(dfd, path, buf, sizeof buf);
    return f ? f[0] : 0;
}

/* The first thread of process pid, other than `except` (or 0), that has not
 * ended and whose state letter `want` accepts; 0 if none. *seen: how many
 * were looked at. -1: no such process, or /proc not readable. */
static pid_t tasks_find(pid_t pid, pid_t except, bool (*want)(char), int *seen)
{
    *seen = 0;
    if (pid <= 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    pid_t found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int tid = atoi(e->d_name);
        if (except > 0 && tid == (int)except)
            continue;
        char s = task_state(dirfd(d), tid);
        if (!s)
            continue; /* ended meanwhile */
        (*seen)++;
        if (want(s))
            found = (pid_t)tid;
    }
    closedir(d);
    return found;
}

static bool runnable(char s) { return s == 'R' || s == 'D'; }
static bool alive(char s) { return s != 'Z' && s != 'X'; }

int pt_proc_thread_runnable(pid_t pid, pid_t except)
{
    int seen;
    pid_t t = tasks_find(pid, except, runnable, &seen);
    if (t < 0)
        return -1;
    return t ? 1 : seen || except > 0 ? 0 : -1;
}

pid_t pt_proc_live_thread(pid_t pid, pid_t except)
{
    int seen;
    pid_t t = tasks_find(pid, except, alive, &seen);
    return t > 0 ? t : 0;
}

int pt_fd_above_std(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return hi;
}
