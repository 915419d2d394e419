/*
 * rt.c - the REF rank runtime (p3rt/p3rt.h, §5.10): rank and group size,
 * nid/pid maps. PtlSetRank(PTL_INVALID_HANDLE, -1, -1) reads PTL_MY_RID,
 * PTL_NIDMAP and PTL_PIDMAP (colon-separated, indexed by rank), as ptlrun sets
 * them. Without them the process is a job of one: rank 0 of 1, the map holds
 * its own id (once an NI exists).
 */
#include "api_int.h"
#include "log.h"
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif

#include <stdlib.h>
#include <string.h>

#define PT_RT_MAX 4096

static pthread_mutex_t g_rt_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_rank, g_size;
static bool g_rt_set;
static bool g_rt_bad;   /* PTL_MY_RID is not a rank of this job: PtlGetRank fails */
static ptl_nid_t g_nidmap[PT_RT_MAX];
static ptl_pid_t g_pidmap[PT_RT_MAX];
static unsigned g_nnid, g_npid;
static bool g_rank_app, g_pidmap_app; /* set by PtlSetRank(rank) / PtlSetPIDMap */

static unsigned parse_map(const char *s, uint32_t *out)
{
    unsigned n = 0;
    while (s && *s && n < PT_RT_MAX) {
        char *end;
        unsigned long v = strtoul(s, &end, 0);
        if (end == s)
            break;
        out[n++] = (uint32_t)v;
        s = *end == ':' ? end + 1 : end;
        if (*end != ':')
            break;
    }
    return n;
}

/* A rank: decimal digits only, below the job's size. */
static bool parse_rank(const char *s, unsigned size, unsigned *out)
{
    if (!*s)
        return false;
    unsigned long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > PT_RT_MAX)
            return false;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v >= size)
        return false;
    *out = (unsigned)v;
    return true;
}

static int rt_from_env_locked(void)
{
    const char *r = getenv("PTL_MY_RID");
    g_nnid = parse_map(getenv("PTL_NIDMAP"), g_nidmap);
    g_npid = parse_map(getenv("PTL_PIDMAP"), g_pidmap);
    const char *nr = getenv("PTL_NRANKS");
    g_size = g_npid > g_nnid ? g_npid : g_nnid;
    if (!g_size && nr)
        g_size = (unsigned)strtoul(nr, NULL, 0); /* maps absent: ptlrun's count */
#ifdef PTL_WITH_PMIX
    /* Started by a PMIx launcher without ptlrun: rank and size from PMIx
     * (pmix.c); the maps come from the NI (PtlGetRankId), as in a ptlrun job. */
    if (!g_size && !r && pt_pmix_launched()) {
        uint32_t pr, ps;
        if (pt_pmix_rank_size(&pr, &ps) == 0 && ps <= PT_RT_MAX) {
            g_size = ps;
            g_rank = pr;
            g_rank_app = g_pidmap_app = false;
            g_rt_bad = false;
            g_rt_set = true;
            return PTL_OK;
        }
        pt_log(PT_LOG_ERR, "started by a PMIx launcher, but its rank and size are not known: "
                           "PtlSetRank/PtlGetRank fail with PTL_FAIL");
        g_rt_bad = true;
        g_rt_set = true;
        return PTL_FAIL;
    }
#endif
    if (!g_size)
        g_size = 1;
    g_rank = 0;
    g_rank_app = g_pidmap_app = false;
    g_rt_bad = r && !parse_rank(r, g_size, &g_rank);
    if (g_rt_bad)
        pt_log(PT_LOG_ERR, "PTL_MY_RID='%s' is not a rank of this job (0..%u): "
                           "PtlSetRank/PtlGetRank fail with PTL_FAIL", r, g_size - 1);
    g_rt_set = true;
    return g_rt_bad ? PTL_FAIL : PTL_OK;
}

static void rt_ensure(void)
{
    if (!g_rt_set)
        (void)rt_from_env_locked();
}

PTL_API int PtlSetRank(ptl_handle_ni_t ni, unsigned rank, unsigned group_size)
{
    pthread_mutex_lock(&g_rt_lock);
    if (ni == PTL_INVALID_HANDLE && rank == (unsigned)-1 && group_size == (unsigned)-1) {
        int rc = rt_from_env_locked();
        pthread_mutex_unlock(&g_rt_lock);
        return rc;
    } else {
        if (group_size == 0 || rank >= group_size || group_size > PT_RT_MAX) {
            pthread_mutex_unlock(&g_rt_lock);
            return PTL_FAIL;
        }
        g_rank = rank;
        g_size = group_size;
        g_rank_app = true;
        g_rt_set = true;
        g_rt_bad = false;
    }
    pthread_mutex_unlock(&g_rt_lock);
    return PTL_OK;
}

PTL_API int PtlSetJID(ptl_handle_ni_t ni, ptl_jid_t jid)
{
    PT_API_INSIDE();
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic)
        return PTL_NI_INVALID;
    nic->jid = jid; /* before any traffic: the engine reads it when sending */
    return PTL_OK;
}

static int set_map(uint32_t *dst, unsigned *cnt, const uint32_t *map, unsigned n)
{
    if (!map)
        return PTL_SEGV;
    if (n > PT_RT_MAX)
        return PTL_NO_SPACE;
    pthread_mutex_lock(&g_rt_lock);
    memcpy(dst, map, n * sizeof *dst);
    *cnt = n;
    if (dst == g_pidmap)
        g_pidmap_app = true;
    pthread_mutex_unlock(&g_rt_lock);
    return PTL_OK;
}

ptl_pid_t pt_rt_app_pid(void)
{
    pthread_mutex_lock(&g_rt_lock);
    ptl_pid_t pid = g_rank_app && g_pidmap_app && g_rank < g_npid ? g_pidmap[g_rank] : PTL_PID_ANY;
    pthread_mutex_unlock(&g_rt_lock);
    return pid;
}

PTL_API int PtlSetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned n)
{
    return set_map(g_nidmap, &g_nnid, map, n);
}

PTL_API int PtlSetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned n)
{
    return set_map(g_pidmap, &g_npid, map, n);
}

PTL_API int PtlGetRank(ptl_handle_ni_t ni, unsigned *rank, unsigned *group_size)
{
    if (!rank || !group_size)
        return PTL_SEGV;
    pthread_mutex_lock(&g_rt_lock);
    rt_ensure();
    int rc = g_rt_bad ? PTL_FAIL : PTL_OK;
    if (!g_rt_bad) {
        *rank = g_rank;
        *group_size = g_size;
    }
    pthread_mutex_unlock(&g_rt_lock);
    return rc;
}

PTL_API int PtlGetRankId(ptl_handle_ni_t ni, unsigned rank, ptl_process_id_t *id)
{
    PT_API_INSIDE();
    if (!id)
        return PTL_SEGV;
    pthread_mutex_lock(&g_rt_lock);
    rt_ensure();
    int rc = PTL_OK;
    if (rank < g_npid && rank < g_nnid) {
        id->nid = g_nidmap[rank];
        id->pid = g_pidmap[rank];
    } else {
        /* No maps: a job of one; or the NI knows the job (ptlrun's region). */
        struct pt_nic *nic = pt_api_ni(ni);
        if (!nic)
            nic = LD_ACQUIRE(&g_pt_nis[0].nic);
        if (nic && rank < nic->xi.nranks) {
            nic->xo->id_of(nic->x, rank, &id->nid, &id->pid);
        } else {
            rc = PTL_PROCESS_INVALID;
        }
    }
    pthread_mutex_unlock(&g_rt_lock);
    return rc;
}

static int get_map(const uint32_t *src, unsigned cnt, uint32_t *map, unsigned n)
{
    if (!map)
        return PTL_SEGV;
    pthread_mutex_lock(&g_rt_lock);
    rt_ensure();
    for (unsigned i = 0; i < n; i++)
        map[i] = i < cnt ? src[i] : 0;
    pthread_mutex_unlock(&g_rt_lock);
    return PTL_OK;
}

PTL_API int PtlGetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned n)
{
    return get_map(g_nidmap, g_nnid, map, n);
}

PTL_API int PtlGetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned n)
{
    return get_map(g_pidmap, g_npid, map, n);
}
