/*
 * membar.h - asymmetric store->load fences: a hot side that costs a compiler
 * barrier, paired with a rare side that makes every running thread of this
 * process execute a full barrier (membarrier(2), MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED). liburcu's urcu-memb flavour and Seastar's reactor pair their
 * fences so (../shared/docs/waiting-anchors.md, "the sleeper pays").
 *
 * Why it holds on x86-TSO (and C11 with the kernel's barriers): a store->load
 * pair goes wrong only while the hot side's store sits in its CPU's store
 * buffer and its later load has already read. membarrier interrupts every
 * CPU that runs a thread of the process, at an instruction boundary, and
 * executes a full barrier there before it returns: a store retired before the
 * boundary is then visible to the rare side's loads after the call, and a
 * load after the boundary sees what the rare side stored before the call. A
 * thread not running passed through the scheduler's full barrier. So
 * "hot: store; COMPILER_BARRIER(); load" against "rare: store;
 * pt_membar_heavy(); load" orders as two FENCE_FULLs would, between threads
 * of one process only. Where g_pt_membar is off, the hot side keeps its
 * FENCE_FULL or RMW (engine/life.h, pt_life_in: the one hot side so far).
 *
 * Decided once, at the process's first Portals call (pt_membar_decide, life.c):
 * on when the kernel has the command and registration succeeds, PTL_ASYM_FENCE
 * is not 0, and the build is not under ThreadSanitizer (which cannot see the
 * system call's barriers). Off, both sides are FENCE_FULL. The decision never
 * changes while threads run: a hot side that skipped its fence needs the
 * rare side's system call.
 */
#ifndef PT_MEMBAR_H
#define PT_MEMBAR_H

#include "pt_atomic.h"

#include <stdbool.h>

/* Written once by pt_membar_decide (before any hot side reads it, through
 * the pthread_once of the first call), then read relaxed. */
extern _Atomic bool g_pt_membar;

/* Query and register; sets g_pt_membar. Idempotent; the caller runs it once
 * per process, before any hot side. want: PTL_ASYM_FENCE. */
void pt_membar_decide(bool want);

/* The rare side's fence: membarrier where g_pt_membar, else FENCE_FULL.
 * A lost registration (a child of fork() on a kernel that does not carry it
 * over) is made again, a transient failure (ENOMEM) retried for about 10 s; a
 * process that can do neither cannot keep its hot sides' promises: it aborts,
 * with a message. */
void pt_membar_heavy(void);

/*
 * Across processes (AF: transport/shm.c's F-SND, docs/waiting.md "D1 without
 * the sender's fence"): MEMBARRIER_CMD_GLOBAL_EXPEDITED makes every running
 * thread of every process that registered (MEMBARRIER_CMD_REGISTER_GLOBAL_
 * EXPEDITED) execute a full barrier; the same argument as above, with the
 * hot side in another process. The hot side must have registered before it
 * skips a fence, the rare side must call pt_membar_global after each store
 * whose partner may be such a hot side.
 *
 * pt_membar_global_register: query and register (per process; a child of
 * fork() registers again: the registration follows the memory map, which
 * the child does not share). True when this process is registered and the
 * kernel has the command; false under ThreadSanitizer (it cannot see the
 * system call's barriers), off Linux, or where the kernel refuses.
 * pt_membar_global: the rare side's barrier; transient failures retried
 * for about 10 s. False when it could not be made: the caller must then
 * not rely on it (it sleeps with a timeout instead, and says so).
 */
bool pt_membar_global_register(void);
bool pt_membar_global(void);

#endif
