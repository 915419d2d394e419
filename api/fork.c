/*
 * fork.c - fork() with the library's threads running (pthread_atfork).
 *
 * A child of fork() may re-initialise and join the job (docs/architecture.md,
 * "Processes that join a job"): it calls malloc and starts threads (the
 * launcher watch, a NIC thread). At the instant of the fork no thread the
 * library started may hold a lock the child needs. The library's own locks
 * are safe (the child drops the parent's NI unread), the allocator's are
 * not everywhere: glibc's malloc takes its locks around fork() itself, but
 * ASan's runtime before LLVM 18 (gcc 12's libasan) does not, and each of our
 * threads allocates in its start-up (ASan's thread start) and a NIC thread
 * now and then later (engine/nic.c, "fork()"). A child forked while one did
 * inherited the lock held and hung in its first new thread's start-up.
 *
 * prepare (the forking thread): take g_pt_ni_lock (no NI is being created or
 * finalized; the child finds the table consistent) and the lock of the
 * threads' exit handler (engine/progress.c: a thread exiting at the fork
 * would leave it held in the child, whose PtlNIInit takes it), wait for the launcher
 * watch to be past its start-up (and one an earlier PtlNIFini told to end, if
 * it had not ended within that call's bound: transport/launcher.c; every
 * other thread of the library has ended when the call that ends it returns,
 * and the node region's watch is past its start-up when PtlNIInit returns,
 * transport/shm_watch.c), and park every NIC thread of this process
 * at a safe point. Bounded (PT_FORK_WAIT_MS in all; past it the fork goes
 * on, as without this, and a warning says so once). parent: let the NIC
 * threads go, release the locks. child: hide the parent's NIs from every
 * lookup (api_int.h, `inherited`), release the locks.
 *
 * Not for fork() from inside a Portals call (g_pt_ni_lock is never held
 * when a call returns, and EQ handlers run after the call has left).
 * Application threads are the application's: one inside malloc at the fork
 * is the same hazard under such an ASan runtime.
 */
#include "api_int.h"

#include "clock.h"
#include "log.h"

#include <pthread.h>
#include <unistd.h>

#define PT_FORK_WAIT_MS 1000

static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_pt_ni_lock);
    pt_nic_life_fork_lock(true); /* no exiting thread holds it at the fork */
    uint64_t deadline = pt_now_ns() + (uint64_t)PT_FORK_WAIT_MS * 1000000u;
    bool ok = pt_launcher_fork_settle(deadline);
    pid_t self = getpid();
    for (uint32_t i = 0; i < PT_MAX_NI; i++) {
        struct pt_nic *nic = LD_RELAXED(&g_pt_nis[i].nic);
        if (nic && g_pt_nis[i].ospid == self)
            ok = pt_nic_fork_prepare(nic, deadline) && ok;
    }
    if (!ok)
        pt_log_once(PT_LOG_WARN, "fork(): a thread of the library did not reach a safe point "
                                 "within %d ms; the child may inherit a lock held by it",
                    PT_FORK_WAIT_MS);
}

static void fork_parent(void)
{
    pid_t self = getpid();
    for (uint32_t i = 0; i < PT_MAX_NI; i++) {
        struct pt_nic *nic = LD_RELAXED(&g_pt_nis[i].nic);
        if (nic && g_pt_nis[i].ospid == self)
            pt_nic_fork_resume(nic);
    }
    pt_nic_life_fork_lock(false);
    pthread_mutex_unlock(&g_pt_ni_lock);
}

static void fork_child(void)
{
    /* The parent's NIs are not ours: hidden from every lookup from here, so
     * that a call on an inherited handle fails instead of running a copy of
     * the parent's engine against the job region (it took the parent's
     * messages and events: an adversarial session's child drained its
     * parent's EQ, the parent saw 16 of 20 ACK-ed puts). */
    for (uint32_t i = 0; i < PT_MAX_NI; i++) {
        struct pt_nic *nic = LD_RELAXED(&g_pt_nis[i].nic);
        if (nic) {
            g_pt_nis[i].inherited = nic;
            ST_RELAXED(&g_pt_nis[i].nic, NULL); /* one thread here */
        }
    }
    pt_nic_life_fork_lock(false);
    pthread_mutex_unlock(&g_pt_ni_lock);
}

static void fork_register(void) { (void)pthread_atfork(fork_prepare, fork_parent, fork_child); }

void pt_api_fork_init(void) { pthread_once(&g_fork_once, fork_register); }
