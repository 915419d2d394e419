/*
 * cpu.h - core and NUMA placement (libnuma).
 */
#ifndef PT_CPU_H
#define PT_CPU_H
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
