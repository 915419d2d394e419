/* proc.c - see proc.h. */
#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

pid_t pt_proc_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* The state letter of /proc/<pid>/task/<tid>/stat, or 0: it follows the
 * command name, which is in parentheses and may itself hold spaces and
 * parentheses, so the last ')' ends it. */
static char task_state(int dfd, int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "%d/stat", tid);
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

int pt_proc_thread_runnable(pid_t pid, pid_t except)
{
    if (pid <= 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int seen = 0, busy = 0;
    struct dirent *e;
    while (!busy && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int tid = atoi(e->d_name);
        if (except > 0 && tid == (int)except)
            continue;
        char s = task_state(dirfd(d), tid);
        if (!s)
            continue; /* ended meanwhile */
        seen++;
        busy = s == 'R' || s == 'D';
    }
    closedir(d);
    return busy ? 1 : seen || except > 0 ? 0 : -1;
}
