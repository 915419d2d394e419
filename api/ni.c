/* ni.c - network interfaces and identification (§5.2, §5.3, §5.7). */
#include "api_int.h"

#include "config.h"
#include "log.h"

#include <limits.h>
#include <p3nal_shm.h>
#include <unistd.h>
#include <p3nal_utcp.h>

static bool iface_ok(ptl_interface_t i)
{
    /* Every interface name a client may use selects the shared-memory NI. */
    return i == PTL_IFACE_DEFAULT || (i >= PTL_IFACE_UTCP0 && i <= PTL_IFACE_UTCP3) ||
           i == PTL_IFACE_SHM;
}

PTL_API int PtlNIInit(ptl_interface_t interface, ptl_pid_t pid, ptl_ni_limits_t *desired,
                      ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle)
{
    PT_CHECK_INIT();
    if (!ni_handle)
        return PTL_SEGV;
    if (!iface_ok(interface))
        return PTL_IFACE_INVALID;
    pt_api_fork_init(); /* before our first thread exists (fork.c) */
    pt_life_note(); /* an API thread, though it resolves no handle (SO: engine/life.h) */
    pthread_mutex_lock(&g_pt_ni_lock);
    /* All accepted interface names are one NI: a second init returns it (REF). */
    for (uint32_t i = 0; i < PT_MAX_NI; i++) {
        struct pt_nic *nic = LD_RELAXED(&g_pt_nis[i].nic);
        if (g_pt_nis[i].inherited || (nic && g_pt_nis[i].ospid != getpid())) {
            pt_api_ni_forget_locked(i); /* our parent's, copied by fork() */
            nic = NULL;
        }
        if (nic) {
            if (pid != PTL_PID_ANY && pid != nic->id.pid) {
                pthread_mutex_unlock(&g_pt_ni_lock);
                return PTL_PID_INVALID;
            }
            if (actual)
                *actual = nic->limits;
            *ni_handle = pt_h_make(PT_H_NI, i, g_pt_nis[i].gen, 0);
            pthread_mutex_unlock(&g_pt_ni_lock);
            return PTL_OK;
        }
    }
    uint32_t idx = 0; /* one shared-memory NI per process */
    uint32_t gen = pt_gen_next(g_pt_nis[idx].gen);
    struct pt_nic *nic;
    /* Should this process join the job as a guest (a child of fork() that
     * re-initialised, transport/shm.h), the pid its own map gives it. */
    pt_xport_set_guest_pid(pid == PTL_PID_ANY ? pt_rt_app_pid() : pid);
    int rc = pt_nic_create(interface, pid, desired, idx, gen, &nic);
    if (rc) {
        pthread_mutex_unlock(&g_pt_ni_lock);
        return pt_ptl_err(rc);
    }
    g_pt_nis[idx].gen = gen;
    g_pt_nis[idx].ospid = getpid();
    ST_RELEASE(&g_pt_nis[idx].nic, nic); /* the NI is complete before anyone resolves it */
    if (actual)
        *actual = nic->limits;
    *ni_handle = pt_h_make(PT_H_NI, idx, gen, 0);
    pthread_mutex_unlock(&g_pt_ni_lock);
    return PTL_OK;
}

/* A child of fork() holds a copy of its parent's NI: the parent's engine
 * state (its NIC thread does not exist here, and may have held locks at the
 * fork) and the parent's place in the job region. Nothing of it may run or
 * be written: the child drops the NI (its memory stays, a copy) and may
 * then open one of its own, which joins the job as a guest. */
void pt_api_ni_forget_locked(uint32_t idx)
{
    ST_RELEASE(&g_pt_nis[idx].nic, NULL);
    g_pt_nis[idx].inherited = NULL;
    g_pt_nis[idx].ospid = 0;
}

/* Handle h names the NI this child of fork() inherited (api_int.h). */
static bool inherited_ni(ptl_handle_ni_t h)
{
    if (pt_h_type(h) != PT_H_NI || pt_h_idx(h) != 0 || pt_h_ni(h) >= PT_MAX_NI)
        return false;
    struct pt_nic *nic = g_pt_nis[pt_h_ni(h)].inherited;
    return nic && LD_RELAXED(&nic->tag) == ((pt_h_gen(h) << 1) | 1u);
}

int pt_api_ni_fini_locked(uint32_t idx)
{
    struct pt_nic *nic = LD_RELAXED(&g_pt_nis[idx].nic);
    if (!nic)
        return PTL_NI_INVALID;
    if (g_pt_nis[idx].ospid != getpid()) {
        pt_api_ni_forget_locked(idx);
        return PTL_OK;
    }
    /* The collective groups of this NI say bye while it still sends
     * (node.c; the flush below sends what they queued). */
    pt_api_node_fini(pt_h_make(PT_H_NI, idx, LD_RELAXED(&nic->tag) >> 1, 0));
    ST_RELEASE(&g_pt_nis[idx].nic, NULL); /* calls that enter from here find no NI */
    if (!pt_nic_quiesce(nic)) {
        /* A thread stayed inside a call on it: leave its memory (and the job
         * region) as they are rather than free them under that thread. */
        pt_nic_stop_thread(nic);
        pt_log(PT_LOG_WARN, "PtlNIFini: a thread is still inside a call on the NI after "
                            "PTL_PEER_TIMEOUT_MS (%lld ms); the NI is left allocated",
               (long long)pt_config()->ni_fail_grace_ms);
        return PTL_OK;
    }
    void pt_api_timing_dump(struct pt_nic *nic);
    pt_nic_stop_thread(nic); /* first: its counters become ours */
    pt_api_timing_dump(nic);
    pt_nic_destroy(nic);
    return PTL_OK;
}

PTL_API int PtlNIFini(ptl_handle_ni_t ni_handle)
{
    PT_CHECK_INIT();
    pt_life_note(); /* its flush runs the engine (SO: engine/life.h) */
    pthread_mutex_lock(&g_pt_ni_lock);
    int rc = pt_api_ni(ni_handle) ? pt_api_ni_fini_locked(pt_h_ni(ni_handle)) : PTL_NI_INVALID;
    if (rc == PTL_NI_INVALID && inherited_ni(ni_handle)) {
        pt_api_ni_forget_locked(pt_h_ni(ni_handle)); /* our parent's: forgotten, as before */
        rc = PTL_OK;
    }
    pthread_mutex_unlock(&g_pt_ni_lock);
    return rc;
}

PTL_API int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t register_index,
                        ptl_sr_value_t *status)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!status)
        return PTL_SEGV;
    if (register_index >= PTL_SR_NAL_REGS_START)
        return PTL_SR_INDEX_INVALID;
    struct pt_cmd c = {.op = PT_CMD_STATUS};
    c.u.sr = register_index;
    struct pt_done d;
    int rc = pt_nic_call_out(nic, &c, &d);
    if (rc == PT_OK)
        *status = d.u64;
    return pt_ptl_err(rc);
}

PTL_API int PtlNIDist(ptl_handle_ni_t ni_handle, ptl_process_id_t process,
                      unsigned long *distance)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!distance)
        return PTL_SEGV;
    int r = nic->xo->rank_of(nic->x, process.nid, process.pid);
    if (r < 0) {
        *distance = ULONG_MAX;
        return PTL_PROCESS_INVALID;
    }
    *distance = (uint32_t)r == nic->xi.rank ? 0 : 1; /* self 0, same host 1 */
    return PTL_OK;
}

PTL_API int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    if (!ni_handle)
        return PTL_SEGV;
    struct pt_nic *nic = pt_api_nic_of(handle);
    if (!nic)
        return PTL_HANDLE_INVALID;
    bool ok;
    switch (pt_h_type(handle)) {
    case PT_H_NI: ok = pt_api_ni(handle) != NULL; break;
    case PT_H_ME: ok = pt_me_lookup(nic, handle) != NULL; break;
    case PT_H_MD: ok = pt_md_lookup(nic, handle) != NULL; break;
    case PT_H_EQ: ok = pt_eqo_lookup(nic, handle) != NULL; break;
    case PT_H_CT: ok = pt_ct_lookup(nic, handle) != NULL; break;
    default: ok = false;
    }
    if (!ok)
        return PTL_HANDLE_INVALID;
    *ni_handle = pt_h_make(PT_H_NI, nic->ni_index, LD_RELAXED(&nic->tag) >> 1, 0);
    return PTL_OK;
}

PTL_API int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!uid)
        return PTL_SEGV;
    *uid = nic->uid;
    return PTL_OK;
}

PTL_API int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_id_t *id)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!id)
        return PTL_SEGV;
    *id = nic->id;
    return PTL_OK;
}

PTL_API int PtlGetJid(ptl_handle_ni_t ni_handle, ptl_jid_t *jid)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (!jid)
        return PTL_SEGV;
    *jid = nic->jid;
    return PTL_OK;
}

PTL_API int PtlACEntry(ptl_handle_ni_t ni_handle, ptl_ac_index_t ac_index,
                       ptl_process_id_t match_id, ptl_uid_t user_id, ptl_jid_t job_id,
                       ptl_pt_index_t pt_index)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni_handle);
    if (!nic)
        return PTL_NI_INVALID;
    if (ac_index > (ptl_ac_index_t)nic->limits.max_ac_index)
        return PTL_AC_INDEX_INVALID;
    if (pt_index != PTL_PT_INDEX_ANY && pt_index > (ptl_pt_index_t)nic->limits.max_pt_index)
        return PTL_PT_INDEX_INVALID;
    struct pt_cmd c = {.op = PT_CMD_AC_ENTRY};
    c.u.ac.index = ac_index;
    c.u.ac.e.id = match_id;
    c.u.ac.e.uid = user_id;
    c.u.ac.e.jid = job_id;
    c.u.ac.e.pt_index = pt_index;
    return pt_ptl_err(pt_nic_call(nic, &c));
}

PTL_API int PtlProgress(ptl_handle_any_t handle, ptl_time_t timeout)
{
    PT_CHECK_INIT();
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_nic_of(handle);
    if (!nic)
        return PTL_HANDLE_INVALID;
    pt_nic_progress(nic);
    return PTL_OK;
}

PTL_API int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2)
{
    return handle1 == handle2; /* boolean (§5.9 recommendation) */
}
