/*
 * test_cpu.c - whether a NIC thread has a core of its own (util/cpu.c
 * pt_cpu_nic_own_core), on a table of placements: ptlrun --cpus with and
 * without a core per NIC thread (PTL_NIC_OWN_CPU, which ptlrun sets), a
 * user's PTL_NIC_CPU under ptlrun --cpus, unpinned jobs with two cores per
 * rank or fewer, PTL_NIC_CPU naming one core for every rank, and SMT (a
 * NIC core that is the sibling of the rank's; physical cores counted). The answer turns on the
 * NIC thread's lease polling (docs/waiting.md, "A core of its own"), which
 * beside a computing rank on a shared core would take half of it.
 */
#include "cpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

struct row {
    const char *what;
    int nic_cpu;
    int app_lo, app_hi; /* the rank's affinity: cores app_lo..app_hi; app_lo -1: unknown */
    bool pinned, own_cpu, crowded, shares;
    unsigned ranks;
    long online;
    bool want;
    int sib; /* SMT: the NIC core's other hardware thread (-1: none known) */
};

static const struct row rows[] = {
    /* what, nic, app lo-hi, pinned, own_cpu, crowded, shares, ranks, online, want, sib */
    {"ptlrun --cpus 0-3, 2 ranks, 16 cores: rank 0 on 0, NIC on 2", 2, 0, 0, true, true, false, false, 2, 16, true, -1},
    {"ptlrun --cpus 0-15, 8 ranks, 16 cores: rank 7 on 7, NIC on 15", 15, 7, 7, true, true, false, false, 8, 16, true, -1},
    {"ptlrun --cpus 0,1,1,0: rank 0's NIC on rank 1's core (not its own)", 1, 0, 0, true, false, true, false, 2, 16, false, -1},
    {"PTL_NIC_CPU=0 ptlrun -n 2 --cpus 0,1: rank 1's NIC on rank 0's core", 0, 1, 1, true, false, true, false, 2, 16, false, -1},
    {"ptlrun --cpus 0,1, 2 ranks: the NIC on the rank's core", 0, 0, 0, true, false, false, true, 2, 2, false, -1},
    {"ptlrun --cpus 0-3 on 2 cores (2 ranks, NIC cores missing)", 2, 0, 0, true, true, false, false, 2, 2, false, -1},
    {"ptlrun --cpus 0-15, 16 ranks: the NIC on the rank's core", 3, 3, 3, true, false, false, true, 16, 16, false, -1},
    {"unpinned, 8 ranks, 16 cores, NIC threads spread", 15, 0, 15, false, false, false, false, 8, 16, true, -1},
    {"unpinned, 9 ranks, 16 cores", 15, 0, 15, false, false, false, false, 9, 16, false, -1},
    {"unpinned, 2 ranks, 2 cores", 1, 0, 1, false, false, false, false, 2, 2, false, -1},
    {"unpinned, 1 rank, 2 cores", 1, 0, 1, false, false, false, false, 1, 2, true, -1},
    {"unpinned, PTL_NIC_CPU=3 for 2 ranks (crowded)", 3, 0, 15, false, false, true, false, 2, 16, false, -1},
    {"no NIC core", -1, 0, 15, false, false, false, false, 1, 16, false, -1},
    {"affinity unknown", 2, -1, -1, false, false, false, false, 1, 16, false, -1},
    /* SMT, 8 cores x 2 threads (cpu c and c + 8 share a core) */
    {"SMT: ptlrun --cpus 0,8, 1 rank: the NIC on rank 0's sibling", 8, 0, 0, true, true, false, false, 1, 16, false, 0},
    {"SMT: ptlrun --cpus 0,1, 1 rank: a core of its own", 1, 0, 0, true, true, false, false, 1, 16, true, 9},
    {"SMT: unpinned, 8 ranks on 8 cores x 2 threads", 15, 0, 15, false, false, false, false, 8, 16, false, 7},
    {"SMT: unpinned, 4 ranks on 8 cores x 2 threads", 15, 0, 15, false, false, false, false, 4, 16, true, 7},
};

static void test_own_core(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        cpu_set_t app;
        CPU_ZERO(&app);
        for (int c = r->app_lo; c >= 0 && c <= r->app_hi; c++)
            CPU_SET(c, &app);
        cpu_set_t sib;
        CPU_ZERO(&sib);
        if (r->sib >= 0) {
            CPU_SET(r->nic_cpu, &sib);
            CPU_SET(r->sib, &sib);
        }
        struct pt_nic_place p = {
            .nic_cpu = r->nic_cpu,
            .app = r->app_lo >= 0 ? &app : NULL,
            .pinned = r->pinned,
            .own_cpu = r->own_cpu,
            .crowded = r->crowded,
            .shares = r->shares,
            .ranks_here = r->ranks,
            .online = r->online,
            .nic_sib = r->sib >= 0 ? &sib : NULL,
        };
        if (pt_cpu_nic_own_core(&p) != r->want)
            fail_msg("%s: %s, expected %s", r->what, r->want ? "shared" : "own",
                     r->want ? "own" : "shared");
    }
}

/* This machine's topology: cpu 0's threads include cpu 0; a cpu that does
 * not exist has none. */
static void test_siblings(void **state)
{
    (void)state;
    cpu_set_t set;
    if (pt_cpu_siblings(0, &set)) /* sysfs may be absent (a container) */
        assert_true(CPU_ISSET(0, &set));
    assert_false(pt_cpu_siblings(CPU_SETSIZE - 1, &set));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_own_core),
                                       cmocka_unit_test(test_siblings)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
