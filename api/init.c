/* init.c - PtlInit, PtlFini and NI-table resolution (§5.1). */
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif
#include "api_int.h"

#include "clock.h"
#include "config.h"

_Atomic int g_pt_inited;
struct pt_ni_slot g_pt_nis[PT_MAX_NI];
pthread_mutex_t g_pt_ni_lock = PTHREAD_MUTEX_INITIALIZER;

PTL_API int PtlInit(int *max_interfaces)
{
    if (!max_interfaces)
        return PTL_SEGV;
    pthread_mutex_lock(&g_pt_ni_lock);
    if (!LD_RELAXED(&g_pt_inited)) {
        pt_config_reload();
#if !defined(PTL_NO_TIMING)
        g_pt_timing_on = pt_config()->timing != 0;
        if (g_pt_timing_on)
            pt_clock_init();
#endif
        ST_RELEASE(&g_pt_inited, 1);
    }
    pthread_mutex_unlock(&g_pt_ni_lock);
    *max_interfaces = PT_MAX_NI;
    return PTL_OK;
}

int pt_api_ni_fini_locked(uint32_t idx);

PTL_API void PtlFini(void)
{
    pt_life_note(); /* its NIs' flushes run the engine (SO: engine/life.h) */
    pthread_mutex_lock(&g_pt_ni_lock);
    if (LD_RELAXED(&g_pt_inited)) {
        for (uint32_t i = 0; i < PT_MAX_NI; i++) {
            if (g_pt_nis[i].inherited)
                pt_api_ni_forget_locked(i); /* a child of fork(): our parent's */
            pt_api_ni_fini_locked(i);
        }
#ifdef PTL_WITH_PMIX
        pt_pmix_rt_release(); /* the rank runtime's PMIx session (api/rt.c) */
#endif
        ST_RELEASE(&g_pt_inited, 0);
    }
    pthread_mutex_unlock(&g_pt_ni_lock);
}

struct pt_nic *pt_api_nic_of(uint32_t h)
{
    uint32_t t = pt_h_type(h);
    if ((t < PT_H_NI || t > PT_H_EQ) && t != PT_H_CT)
        return NULL;
    struct pt_nic *nic = LD_ACQUIRE(&g_pt_nis[pt_h_ni(h)].nic); /* pairs with ST_RELEASE in NIInit */
    return nic;
}

struct pt_nic *pt_api_ni(ptl_handle_ni_t h)
{
    if (pt_h_type(h) != PT_H_NI || pt_h_idx(h) != 0)
        return NULL;
    struct pt_nic *nic = LD_ACQUIRE(&g_pt_nis[pt_h_ni(h)].nic);
    if (!nic || LD_ACQUIRE(&nic->tag) != ((pt_h_gen(h) << 1) | 1u))
        return NULL;
    return nic;
}
