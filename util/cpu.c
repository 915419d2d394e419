/* cpu.c - see cpu.h. */
#include "cpu.h"

#include <errno.h>
#include <numa.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int pt_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

int pt_cpu_node(int cpu)
{
    if (numa_available() < 0)
        return 0;
    int n = numa_node_of_cpu(cpu);
    return n < 0 ? 0 : n;
}

int pt_cpu_choose_nic(int avoid, unsigned k, unsigned *ncand)
{
    cpu_set_t set;
    if (ncand)
        *ncand = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int here = sched_getcpu();
    int node = here >= 0 ? pt_cpu_node(here) : 0;
    /* the candidates, highest first: the node's cores, else every allowed one */
    int cand[CPU_SETSIZE];
    unsigned n = 0;
    for (int pass = 0; pass < 2 && !n; pass++)
        for (int c = CPU_SETSIZE - 1; c >= 0; c--)
            if (CPU_ISSET(c, &set) && c != avoid && (pass || pt_cpu_node(c) == node))
                cand[n++] = c;
    if (!n)
        return avoid >= 0 && CPU_ISSET(avoid, &set) ? avoid : -1;
    if (ncand)
        *ncand = n;
    return cand[k % n];
}

bool pt_cpu_nic_own_core(const struct pt_nic_place *p)
{
    if (p->nic_cpu < 0 || !p->app || p->shares)
        return false;
    int threads = p->nic_sib && CPU_COUNT(p->nic_sib) > 0 ? CPU_COUNT(p->nic_sib) : 1;
    if (p->pinned) {
        if (!p->own_cpu || CPU_ISSET(p->nic_cpu, p->app))
            return false;
        if (p->nic_sib) {
            cpu_set_t both;
            CPU_AND(&both, p->nic_sib, p->app);
            if (CPU_COUNT(&both))
                return false; /* the rank runs on the NIC core's sibling */
        }
        return 2l * p->ranks_here <= p->online;
    }
    return !p->crowded && 2u * p->ranks_here <= (unsigned)(CPU_COUNT(p->app) / threads);
}

bool pt_cpu_siblings(int cpu, cpu_set_t *set)
{
    char path[96], buf[256];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
             cpu);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    CPU_ZERO(set);
    for (char *q = buf; ok && *q && *q != '\n';) { /* "0,8" or "0-1" */
        char *e;
        long a = strtol(q, &e, 10), b = a;
        if (e == q)
            return false;
        if (*e == '-')
            b = strtol(e + 1, &e, 10);
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        q = *e == ',' ? e + 1 : e;
    }
    return ok && CPU_ISSET(cpu, set);
}

int pt_cpu_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    return rc ? -rc : 0;
}

void pt_numa_bind(void *p, size_t size, int node)
{
    if (numa_available() < 0 || node < 0 || !p)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
    size += (uintptr_t)p - a;
    numa_tonode_memory((void *)a, size, node);
}

void pt_cpu_describe(char *buf, size_t len)
{
    int nodes = numa_available() < 0 ? 1 : numa_max_node() + 1;
    snprintf(buf, len, "%d usable cores, %d NUMA node%s (libnuma %s), NIC thread cores %d (a "
                       "host's first rank), %d (its second), ... (PTL_NIC_CPU -1)",
             pt_cpu_count(), nodes, nodes == 1 ? "" : "s",
             numa_available() < 0 ? "unavailable" : "available", pt_cpu_choose_nic(-1, 0, NULL), pt_cpu_choose_nic(-1, 1, NULL));
}
