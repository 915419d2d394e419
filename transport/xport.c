/* xport.c - choose the transport for this process (see xport.h), and the slot
 * geometry every process of a job computes the same way. */
#include "xport.h"

#include <string.h>
#include "config.h"
#include "log.h"
#include "shm.h"
#ifdef PTL_WITH_OFI
#include "ofi.h"
#endif
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif

#include <errno.h>
#include <stdlib.h>

uint32_t pt_slot_size_for(uint32_t eager_max)
{
    uint32_t payload = eager_max > PT_XPORT_GETPUT_MAX ? eager_max : PT_XPORT_GETPUT_MAX;
    if (payload < PT_XPORT_RNDV_DESC)
        payload = PT_XPORT_RNDV_DESC;
    if (payload > 0x7fff0000u)
        payload = 0x7fff0000u; /* no wrap below; PTL_EAGER_MAX is far smaller */
    return (PT_XPORT_HDR_BYTES + payload + 63u) & ~63u;
}

uint32_t pt_queue_slots_for(uint32_t want)
{
    uint32_t q = 4;
    while (q < want && q < (1u << 30))
        q <<= 1;
    return q;
}

static _Atomic uint32_t g_guest_pid = 0xffffffffu; /* relaxed: set and read by
                                                     * PtlNIInit's thread */

void pt_xport_set_guest_pid(uint32_t pid) { ST_RELAXED(&g_guest_pid, pid); }
uint32_t pt_xport_guest_pid(void) { return LD_RELAXED(&g_guest_pid); }

static bool env_set(const char *name)
{
    const char *s = getenv(name);
    return s && *s;
}

int pt_xport_open(uint32_t slot_size, uint32_t queue_slots, uint32_t pid_hint,
                  const struct pt_xport_ops **ops_p, struct pt_xport **x_p,
                  struct pt_xport_info *info_p)
{
    /* ptlrun (PTL_JOB_FD) or a named job (PTL_JOB): the shared job region. */
    if (env_set("PTL_JOB_FD") || env_set("PTL_JOB")) {
        int rc;
        if (pt_config()->transport == PT_TRANSPORT_OFI) {
#ifdef PTL_WITH_OFI
            rc = pt_ofi_open(slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
#else
            pt_log(PT_LOG_ERR, "PTL_TRANSPORT=ofi: this libportals was built without libfabric "
                               "(CMake option PTL_WITH_OFI)");
            rc = -ENOTSUP;
#endif
        } else {
            rc = pt_shm_open(slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
        }
        if (rc == 0)
            pt_launcher_watch(); /* ranks of ptlrun die with it (launcher.c) */
        return rc;
    }
#ifdef PTL_WITH_PMIX
    /* Started by a PMIx launcher (mpirun, srun --mpi=pmix) without ptlrun:
     * the peers may be on other hosts. PTL_TRANSPORT=ofi: every peer over
     * ofi; auto (the default): the node's region for the ranks on this host,
     * ofi beyond it; shm: the same, refused when a rank is elsewhere (mix.c;
     * docs/ofi.md). */
    if (pt_pmix_launched()) {
        int64_t t = pt_config()->transport;
        if (t == PT_TRANSPORT_OFI)
            return pt_ofi_open_pmix(slot_size, queue_slots, ops_p, x_p, info_p);
        return pt_mix_open_pmix(slot_size, queue_slots, pid_hint, t == PT_TRANSPORT_SHM, ops_p,
                                x_p, info_p);
    }
#endif
    return pt_loopback_open(slot_size, queue_slots, pid_hint, ops_p, x_p, info_p);
}

ssize_t pt_iov_copy_local(const struct iovec *local, int nlocal, const struct iovec *remote,
                          int nremote)
{
    size_t done = 0, li = 0, ri = 0, lo = 0, ro = 0;
    while ((int)li < nlocal && (int)ri < nremote) {
        size_t n = local[li].iov_len - lo;
        if (remote[ri].iov_len - ro < n)
            n = remote[ri].iov_len - ro;
        if (n)
            memmove((char *)local[li].iov_base + lo, (char *)remote[ri].iov_base + ro, n);
        done += n;
        lo += n;
        ro += n;
        if (lo == local[li].iov_len) { li++; lo = 0; }
        if (ro == remote[ri].iov_len) { ri++; ro = 0; }
    }
    return (ssize_t)done;
}
