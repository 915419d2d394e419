/*
 * mp_nicclass - the NIC thread's scheduling class follows its application
 * (docs/waiting.md, "Batch, and urgent while a waiter sleeps"; offload mode,
 * PTL_NIC_BATCH=1, the default).
 *
 *   usage (2 ranks, offload mode): mp_nicclass
 *
 * Rank 1 finds its NIC thread ("ptl-nic" in /proc/self/task) and checks its
 * policy (field 41 of the thread's stat file):
 *   1. SCHED_BATCH while the application runs outside the library;
 *   2. SCHED_OTHER while the application sleeps in PtlEQWait (rank 0 puts
 *      only after 300 ms): a watcher thread samples the policy every 2 ms from
 *      50 ms into the wait until it returns, and must see SCHED_OTHER;
 *   3. SCHED_BATCH again once PtlEQWait returned the PUT_END (within 200 ms).
 * Before the sixty-fifth session the NIC thread was SCHED_BATCH throughout, and
 * beside other programs its wake-ups for a sleeping application waited for a
 * scheduler tick (step 2 fails). Prints "mp_nicclass: OK" on rank 1.
 * Where the two ranks have fewer than two cores, the NIC thread stays batch by
 * design (the ranks outnumber the cores): skipped (exit 77).
 */
#include "mp_util.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_stat[300]; /* the NIC thread's stat file */

/* The NIC thread's stat path, once it has named itself (it may not have run
 * yet when PtlNIInit and the first barrier return: the application thread
 * runs the engine itself when it waits); false if none is there (yet). */
static bool find_nic_thread(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        mp_die("cannot open /proc/self/task");
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && strncmp(comm, "ptl-nic", 7) == 0)
            snprintf(g_stat, sizeof g_stat, "/proc/self/task/%s/stat", e->d_name);
        fclose(f);
    }
    closedir(d);
    return g_stat[0] != 0;
}

/* The NIC thread's policy (SCHED_OTHER 0, SCHED_BATCH 3), or die. */
static int nic_policy(void)
{
    char v[16];
    if (!mp_stat_field(g_stat, 41, v, sizeof v))
        mp_die("no policy field in %s", g_stat);
    return atoi(v);
}

static const char *pname(int p) { return p == SCHED_BATCH ? "SCHED_BATCH" : p == SCHED_OTHER ? "SCHED_OTHER" : "other"; }

static atomic_int g_waiting;   /* main is inside PtlEQWait             */
static atomic_int g_seen_other, g_samples;

static void *watcher(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 2000000};
    nanosleep(&(struct timespec){0, 50000000}, NULL); /* 50 ms into the wait */
    while (atomic_load(&g_waiting)) {
        atomic_fetch_add(&g_samples, 1);
        if (nic_policy() == SCHED_OTHER)
            atomic_store(&g_seen_other, 1);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    if (m.size != 2)
        mp_die("run with 2 ranks");
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < 2) {
        printf("rank %u: one core: the NIC thread stays SCHED_BATCH there: skipped\n", m.rank);
        mp_fini(&m);
        return 77;
    }
    static uint64_t buf, out = 0x5eed;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    int p;
    if (m.rank == 1) {
        mp_post(&m, MP_PT_USER, 7, &buf, sizeof buf, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, eq,
                PTL_RETAIN, NULL);
        /* The NIC thread names itself and takes its class when it first runs. */
        uint64_t t0 = mp_now_ms();
        while (!find_nic_thread() && mp_now_ms() - t0 < 2000)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        if (!g_stat[0])
            mp_die("no thread named ptl-nic within 2 s: not offload mode?");
        int p;
        while ((p = nic_policy()) != SCHED_BATCH && mp_now_ms() - t0 < 2000)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        if (p != SCHED_BATCH)
            mp_die("before the wait the NIC thread is %s (%d), not SCHED_BATCH", pname(p), p);
    }
    mp_barrier(&m); /* rank 0 puts 300 ms after it: rank 1 is asleep in its wait by then */
    if (m.rank == 0) {
        nanosleep(&(struct timespec){0, 300000000}, NULL);
        ptl_handle_md_t md = mp_bind(&m, &out, sizeof out, PTL_MD_THRESH_INF, 0, eq);
        MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[1], MP_PT_USER, 0, 7, 0, 0));
        mp_expect(eq, PTL_EVENT_SEND_START, "put");
        mp_expect(eq, PTL_EVENT_SEND_END, "put");
        mp_fini(&m);
        return 0;
    }
    atomic_store(&g_waiting, 1);
    pthread_t t;
    if (pthread_create(&t, NULL, watcher, NULL))
        mp_die("pthread_create");
    ptl_event_t ev;
    do
        MP_CHECK(PtlEQWait(eq, &ev));
    while (ev.type != PTL_EVENT_PUT_END);
    atomic_store(&g_waiting, 0);
    pthread_join(t, NULL);
    if (buf != 0x5eed)
        mp_die("the put delivered %llx", (unsigned long long)buf);
    if (!atomic_load(&g_seen_other))
        mp_die("while the application slept in PtlEQWait the NIC thread stayed %s "
               "(%d samples): its wake-ups wait for a scheduler tick beside other programs",
               pname(nic_policy()), atomic_load(&g_samples));
    uint64_t t1 = mp_now_ms();
    while ((p = nic_policy()) != SCHED_BATCH && mp_now_ms() - t1 < 200)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    if (p != SCHED_BATCH)
        mp_die("after the wait the NIC thread is still %s", pname(p));
    printf("mp_nicclass: OK (%d samples in the wait)\n", atomic_load(&g_samples));
    fflush(stdout);
    mp_fini(&m);
    return 0;
}
