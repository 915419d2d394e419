/*
 * cpu.h - core and NUMA placement (libnuma).
 */
#ifndef PT_CPU_H
#define PT_CPU_H
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* The core a NIC thread should use when PTL_NIC_CPU is -1: of the cores the
 * process may run on in the NUMA node the calling thread runs on (all of
 * them if none is), the k-th counting down from the last (wrapping), so that
 * the NIC threads of a host's processes (k: the local rank) spread from the
 * top; `avoid` (-1: none) is skipped unless it is the only one. *ncand (if
 * not NULL): how many cores there were to choose from (0 on -1): a host with
 * more ranks than that puts two NIC threads on one core. */
int pt_cpu_choose_nic(int avoid, unsigned k, unsigned *ncand);
/* Where a rank's NIC thread runs, as the engine sees it at PtlNIInit. */
struct pt_nic_place {
    int nic_cpu;          /* the NIC thread's core; -1: not pinned              */
    const cpu_set_t *app; /* the rank's affinity; NULL: unknown                 */
    bool pinned;          /* ptlrun --cpus pinned the ranks (PTL_JOB_CPUS)      */
    bool own_cpu;         /* ... and gave nic_cpu to this NIC thread alone
                           * (PTL_NIC_OWN_CPU)                                  */
    bool crowded;         /* two of the host's NIC threads share a core         */
    bool shares;          /* pinned to the one core the rank runs on            */
    unsigned ranks_here;  /* the job's ranks on this host                       */
    long online;          /* the host's cores online                            */
    const cpu_set_t *nic_sib; /* nic_cpu's hardware threads, itself included
                               * (pt_cpu_siblings); NULL: unknown, none      */
};
/* Whether the NIC thread has a core of its own (the lease polling of
 * docs/waiting.md, "A core of its own"): pinned ranks (ptlrun --cpus) whose
 * NIC thread ptlrun gave a core that no rank and no other NIC thread uses,
 * on a host with at least two cores per rank; unpinned ones with twice as
 * many allowed cores as ranks, the NIC threads spread (not crowded, not on
 * the rank's one core). With SMT, a NIC core whose sibling hardware thread
 * is one of the rank's is not its own (the poll would take issue slots from
 * the rank), and unpinned jobs count physical cores (the allowed CPUs over
 * the NIC core's threads). */
bool pt_cpu_nic_own_core(const struct pt_nic_place *p);
/* The hardware threads of cpu's core, cpu included (sysfs topology); false
 * if unknown. */
bool pt_cpu_siblings(int cpu, cpu_set_t *set);
/* Pin the calling thread; returns 0 or -errno. */
int pt_cpu_pin_self(int cpu);
/* NUMA node of a core, or 0 without NUMA. */
int pt_cpu_node(int cpu);
int pt_cpu_count(void);
/* Bind an existing range (e.g. part of the shared region) to a node; best effort. */
void pt_numa_bind(void *p, size_t size, int node);
/* One-line description of the layout, for ptl_info. */
void pt_cpu_describe(char *buf, size_t len);

#endif
