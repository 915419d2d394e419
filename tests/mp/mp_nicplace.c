/*
 * mp_nicplace - where the NIC threads of one host's ranks run when nobody
 * chose (PTL_NIC_CPU -1, ranks not pinned: ptlrun without --cpus): spread
 * over the cores the ranks may use, from the last one down by local rank
 * (util/cpu.c pt_cpu_choose_nic). Before, every rank's NIC thread was pinned
 * to the last core: two ranks' NIC threads then shared one core while the
 * other idled, and a stream through the queues (PTL_CMA=0) ran 100x slower
 * (a 64 MiB put 1 s instead of 10 ms; docs/architecture.md).
 *
 * Each rank finds its NIC thread (named "ptl-nic"), reads the one core it
 * may run on, and puts it to rank 0, which checks that the ranks' NIC
 * threads are on min(ranks, cores) different cores. Offload mode only.
 *
 *   usage (under ptlrun): mp_nicplace [crowded]
 *   prints "mp_nicplace: N ranks, their NIC threads on D different cores of C"
 *
 * crowded: PTL_NIC_CPU names one core for every rank; their NIC threads must
 * all be there. Either way rank 0 then dumps its NI (PtlTblDump of an empty
 * portal: the NI's lines only) to stderr, where the test looks for what its
 * NIC thread's idle spin is: with another NIC thread on its core, never the
 * application's PTL_WAIT_SPIN_US (engine/wait.c nic_spin: each one's 1 ms
 * turn held the other's work up, a copy-mode 8 MiB put 0.94 -> 12.7 ms).
 */
#include "mp_util.h"

#include <p3api/debug.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_CORE MP_PT_USER
#define MAXR 256u

/* The core the thread named ptl-nic may run on (it names and pins itself
 * as it starts: -1 until then). */
static int nic_core_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        mp_die("opendir /proc/self/task");
    int core = -1;
    struct dirent *e;
    while ((e = readdir(d)) && core < 0) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = 0;
        fclose(f);
        if (strncmp(comm, "ptl-nic", 7))
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18)) {
                char *s = line + 18;
                while (*s == ' ' || *s == '\t')
                    s++;
                if (!strpbrk(s, ",-"))
                    core = atoi(s);
            }
        fclose(f);
    }
    closedir(d);
    return core;
}

static int nic_core(void)
{
    for (uint64_t t0 = mp_now_ms(); mp_now_ms() - t0 < 10000; usleep(1000)) {
        int c = nic_core_now();
        if (c >= 0)
            return c;
    }
    mp_die("no thread named ptl-nic pinned to one core within 10 s (offload mode?)");
}

static uint32_t cores[MAXR];

int main(int argc, char **argv)
{
    bool crowded = argc > 1 && !strcmp(argv[1], "crowded");
    if (argc > 2 || (argc > 1 && !crowded))
        mp_die("usage: mp_nicplace [crowded]");
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        mp_die("sched_getaffinity");
    unsigned ncores = (unsigned)CPU_COUNT(&set);
    struct mp m;
    mp_init(&m, 1);
    const unsigned n = m.size, me = m.rank;
    if (n > MAXR)
        mp_die("at most %u ranks", MAXR);
    uint32_t mine = (uint32_t)nic_core();
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 2 * MAXR, PTL_EQ_HANDLER_NONE, &eq));
    mp_post(&m, PT_CORE, 0, cores, sizeof cores, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            NULL);
    ptl_handle_md_t smd = mp_bind(&m, &mine, sizeof mine, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(&m);
    if (me != 0) {
        MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[0], PT_CORE, 0, 0, me * sizeof mine, 0));
        mp_expect(eq, PTL_EVENT_SEND_END, "the put of our core");
    } else {
        cores[0] = mine;
        for (unsigned k = 1; k < n; k++)
            mp_expect(eq, PTL_EVENT_PUT_END, "a rank's core");
        unsigned distinct = 0;
        for (unsigned r = 0; r < n; r++) {
            bool seen = false;
            for (unsigned q = 0; q < r; q++)
                seen |= cores[q] == cores[r];
            distinct += !seen;
        }
        unsigned want = crowded ? 1 : n < ncores ? n : ncores;
        printf("mp_nicplace: %u ranks, their NIC threads on %u different cores of %u\n", n,
               distinct, ncores);
        fflush(stdout);
        if (crowded ? distinct != 1 : distinct < want)
            mp_die("%u ranks on %u cores: their NIC threads share %u cores, want %u", n, ncores,
                   distinct, want);
        fflush(stderr);
        MP_CHECK(PtlTblDump(m.ni, PT_CORE + 1)); /* nothing posted there */
        fflush(stderr);
    }
    mp_fini(&m);
    return 0;
}
