/*
 * ptl_dump.h - the job dump: what every rank of a job is doing, for a user
 * whose job hangs. One module for ptlrun (which takes dumps) and ptl_info
 * (which decodes saved ones): collect -> (save) -> print.
 *
 * What a dump holds, per rank (struct ptd_rank):
 *   - from the job region (readable whatever the rank did, even dead): its
 *     attach state and dead flag, its doorbell words (seq, sleepers,
 *     polled), every queue towards and from it that holds messages (heads,
 *     tails: credits), and its flight recorder (util/trace.h);
 *   - from /proc: whether the process runs, sleeps, is STOPPED, a zombie or
 *     gone;
 *   - from the rank's memory (process_vm_readv, when it exists, is not a
 *     zombie, and published an engine of the same layout, engine/nic_sig.h):
 *     the waiting protocol's words (token, want, NIC thread state, event
 *     sleepers, polling leases), its counters, commands queued per thread,
 *     transfers in flight and EQ fill levels and drops.
 * Nothing read from shared or foreign memory is trusted: counts are capped,
 * pointers are only ever read through process_vm_readv (a bad one fails the
 * read), queue positions are reported, never used as indices.
 *
 * Saved dumps: a binary file ("PTLDUMP1" header, then per rank its struct,
 * its queues and its records), written by ptlrun (--dump-file / PTL_DUMP_FILE)
 * and decoded by `ptl_info --trace FILE`. Same build only: the header
 * carries the struct sizes, and a file of another layout is refused.
 */
#ifndef PTL_DUMP_H
#define PTL_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct ptd_snap;

/* Take a dump of the job whose region is mapped at base (size bytes).
 * pids[r]: the OS pid rank r is known to have while alive (ptlrun: 0 once
 * reaped), or NULL to trust the region's record. why: a line for the header.
 * NULL if the region is not a job region (errno-style message in err). */
struct ptd_snap *ptd_collect(void *base, uint64_t size, const pid_t *pids, const char *why,
                             char *err, size_t errlen);
/* Print it: last = records per rank (0: all). */
void ptd_print(const struct ptd_snap *s, FILE *f, unsigned last);
/* Save to / load from a file. 0 or -errno; load explains in err. */
int ptd_save(const struct ptd_snap *s, const char *path);
struct ptd_snap *ptd_load(const char *path, char *err, size_t errlen);
void ptd_free(struct ptd_snap *s);

#endif
