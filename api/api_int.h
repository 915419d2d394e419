/*
 * api_int.h - state shared by the api/ files: the library's init flag, the NI
 * table, handle-to-object resolution (lock-free; see engine/handle.h), and the
 * one mapping of engine errors to PTL_* codes.
 */
#ifndef PT_API_INT_H
#define PT_API_INT_H

#include "nic.h"
#include <portals3.h>
#include <p3api/debug.h>
#include <p3rt/p3rt.h>

struct pt_ni_slot {
    _Atomic(struct pt_nic *) nic;   /* published with ST_RELEASE after create */
    uint32_t gen;                   /* generation of the current/last NI here */
    pid_t ospid;                    /* the process that created it           */
    struct pt_nic *inherited;       /* a child of fork(): its parent's NI, moved
                                     * here from `nic` by fork_child, so that no
                                     * lookup finds it (every call on the
                                     * parent's handles fails as on a freed
                                     * NI's); PtlNIFini with its handle, PtlNIInit
                                     * and PtlFini only forget it (fork.c)      */
};

extern _Atomic int g_pt_inited;               /* PtlInit called, PtlFini not yet */
extern struct pt_ni_slot g_pt_nis[PT_MAX_NI];
extern pthread_mutex_t g_pt_ni_lock;          /* NIInit/NIFini/PtlFini only */

/* rt.c: the pid the application's own map gives its own rank (PtlSetRank
 * with a rank, then PtlSetPIDMap), or PTL_PID_ANY. What a process that joins
 * a running job asks for (REF's forktest child). */
ptl_pid_t pt_rt_app_pid(void);
/* node.c: the collective library's hook at PtlNIFini (g_pt_ni_lock held). */
void pt_api_node_fini(ptl_handle_ni_t ni);
/* ni.c: drop an NI this process did not create (fork; g_pt_ni_lock held). */
void pt_api_ni_forget_locked(uint32_t idx);
/* fork.c: register the pthread_atfork handlers that park the library's
 * threads around a fork() (once per process; before the first NI). */
void pt_api_fork_init(void);

/* Map an internal error to the PTL_* code of the call (err.c). */
int pt_ptl_err(int rc);

/* The NI that owns handle h (any type), or NULL. Inside a call only
 * (PT_API_INSIDE), or under g_pt_ni_lock: the NI is not freed before the call
 * returns. */
struct pt_nic *pt_api_nic_of(uint32_t h);
/* The NI named by an NI handle, or NULL. The same rule. */
struct pt_nic *pt_api_ni(ptl_handle_ni_t h);

#define PT_CHECK_INIT()                         \
    do {                                        \
        if (!LD_ACQUIRE(&g_pt_inited))          \
            return PTL_NO_INIT;                 \
    } while (0)

/* Every call that resolves a handle is inside from here to the end of the
 * enclosing block (engine/life.h): no NI, EQ ring or other object it resolves
 * is freed before it returns. Leaving is the block's cleanup, so every return
 * path leaves. Only when no per-thread record could be made: PTL_NO_SPACE. */
struct pt_api_in {
    struct pt_life *rec;
};
static inline void pt_api_out(struct pt_api_in *in)
{
    if (in->rec)
        pt_life_leave(in->rec);
}
#define PT_API_INSIDE()                                                                 \
    struct pt_api_in pt_api_in_ __attribute__((cleanup(pt_api_out))) = {pt_life_enter()}; \
    if (PT_UNLIKELY(!pt_api_in_.rec))                                                   \
        return PTL_NO_SPACE

/* Per-thread initiator stage timing (PTL_TIMING=1). */
extern __thread struct pt_itiming {
    uint64_t ticks[PT_IS_NR];
    uint64_t count[PT_IS_NR];
} tls_pt_itm;

#endif
