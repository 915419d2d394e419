/*
 * proc.h - what the kernel says about a process's threads (Linux /proc).
 * Cold paths only: each call reads a directory and a file per thread.
 */
#ifndef PT_PROC_H
#define PT_PROC_H
#include <sys/types.h>

/* Whether a thread of process `pid` other than `except` (a thread id, or 0)
 * is on a CPU or waiting for one (state R), or in an uninterruptible wait
 * (D: a page fault, a disk read): a thread that has not blocked, and may be
 * between two stores of a protocol. 1 yes, 0 no (every thread is asleep or
 * stopped), -1 unknown (no such process, /proc not readable). */
int pt_proc_thread_runnable(pid_t pid, pid_t except);

/* A thread of process pid that has not exited (not a zombie), other than
 * `except` (a thread id, or 0), or 0 if none (gone, /proc not readable).
 * For naming the process to the kernel once its leader has exited (main
 * called pthread_exit) while other threads run. */
pid_t pt_proc_live_thread(pid_t pid, pid_t except);

/* The parent of process pid, or 0 (gone, or /proc not readable). */
pid_t pt_proc_parent(pid_t pid);

/* The calling thread's id (gettid). */
pid_t pt_proc_tid(void);

/* fd itself, or (fd 0, 1 or 2) a close-on-exec duplicate of it at 3 or
 * above, fd closed: -1 with errno set as the call that made fd. Every
 * descriptor the library keeps goes through it. An application that closed
 * its standard descriptors before PtlInit would otherwise find ours there:
 * its printf into the job region's memfd, or, with the launcher's pidfd and
 * eventfd on 1 and 2, an 8-byte write to stderr raising the watch thread's
 * eventfd, which then polled for ever at full CPU (an adversarial client). */
int pt_fd_above_std(int fd);

#endif
