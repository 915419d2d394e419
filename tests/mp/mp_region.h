/*
 * mp_region.h - white-box tests that read or forge the job region: its
 * layout as the library computes it, from the header of a mapped region
 * (mp_map_job_region).
 */
#ifndef MP_REGION_H
#define MP_REGION_H

#include "mp_util.h"
#include "shm_region.h"

static inline struct pt_shm_layout mp_region_layout(const char *base)
{
    const struct pt_shm_hdr *h = (const struct pt_shm_hdr *)base;
    struct pt_shm_layout l;
    if (pt_shm_layout(h->nranks, h->nguests, h->slot_size, h->qslots, h->pool_req, h->pool_rsp,
                      &l) != 0)
        mp_die("cannot compute the region's layout");
    return l;
}

#endif
