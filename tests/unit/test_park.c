/*
 * test_park - a request parked for a match is no work for the engine's
 * sleepers (docs/waiting.md, "Parked for a match"; model/park.pml),
 * white-box, one process (loopback).
 *
 * A put to ourselves on a portal with no entry yet: the engine keeps it
 * (PTL_NOMATCH_WAIT_US, 10 s here) instead of dropping it. A thread waits
 * in PtlEQWait for its PUT_END meanwhile. For 300 ms nobody attaches
 * anything, and the engine must sleep through it: in offload mode the NIC
 * thread (its sleeps and the arms its recheck cancelled may grow by a few:
 * before the rule it went S1 -> S2 -> S1 for the whole wait, thousands of
 * cancelled arms), in host mode the waiter (it must be found asleep on
 * most looks; before, it polled the engine for the whole wait). Then the
 * main thread attaches the entry: the command is what makes the request
 * work again, so the waiter must get its event at once, long before the
 * 10 s wait ends (bounded at 5 s: a lost wake-up, not a speed check), and
 * nothing may have been dropped. (A wait that ends, and a sleeper woken
 * for it: mp_nomatch's second case; another sender's message arriving
 * meanwhile: mp_nomatch park.) The mode comes from the environment
 * (PTL_OFFLOAD). A watchdog (alarm) fails a hang. Counts, not times.
 */
#include "api_int.h"
#include "nic.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ut_check.h"

#define QUIET_MS 300
#define LOOKS 30
#define NIC_SLEEPS_MAX 40   /* NIC thread sleeps allowed while parked (timed ones
                             * included: the lease, the backstop every 100 ms) */
#define ARMS_MAX 40         /* ... and arms its recheck cancelled */

static ptl_handle_ni_t ni;
static ptl_process_id_t self;
static ptl_handle_eq_t eq;
static char buf[8], src[8] = "parked";
static ptl_event_t got;
static _Atomic int rc_wait = -1; /* the waiter's result, polled by main */

static void *waiter(void *arg)
{
    (void)arg;
    rc_wait = PtlEQWait(eq, &got);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static ptl_sr_value_t drops(void)
{
    ptl_sr_value_t v;
    CHECK(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v));
    return v;
}

int main(void)
{
    alarm(60);
    int n;
    CHECK(PtlInit(&n));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &self));
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic) {
        printf("FAIL: no NIC behind the handle\n");
        return 1;
    }
    const bool offload = nic->w.nic_thread;
    CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t s;
    ptl_md_t smd = {.start = src, .length = sizeof src, .threshold = PTL_MD_THRESH_INF,
                    .eq_handle = PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, smd, PTL_RETAIN, &s));
    ptl_sr_value_t d0 = drops();

    pthread_t th;
    if (pthread_create(&th, NULL, waiter, NULL))
        return 1;
    CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 5, 0, 7, 0, 0x5a));
    /* until the engine has parked it */
    for (int i = 0; LD_RELAXED(&nic->park_n) == 0; i++) {
        if (i > 5000) {
            printf("FAIL: the put to an entry not yet attached was never parked\n");
            return 1;
        }
        sleep_ms(1);
    }
    sleep_ms(20); /* the sleepers' spin (PTL_WAIT_SPIN_US, PTL_NIC_SPIN_US) ends */
    uint64_t ns0 = LD_RELAXED(&nic->w.st.nic_sleeps);
    uint64_t na0 = LD_RELAXED(&nic->w.st.nic_armed_work);
    int asleep = 0;
    for (int k = 0; k < LOOKS; k++) {
        sleep_ms(QUIET_MS / LOOKS);
        if (offload)
            asleep += LD_RELAXED(&nic->w.nic_state) == PT_NIC_SLEEP;
        else
            asleep += LD_RELAXED(&nic->w.ev->sleepers) != 0 && LD_RELAXED(&nic->w.token) == 0;
    }
    uint64_t sleeps = LD_RELAXED(&nic->w.st.nic_sleeps) - ns0;
    uint64_t arms = LD_RELAXED(&nic->w.st.nic_armed_work) - na0;
    printf("parked for %d ms: engine sleeper found asleep at %d of %d looks; NIC thread "
           "sleeps %llu, arms cancelled %llu\n", QUIET_MS, asleep, LOOKS,
           (unsigned long long)sleeps, (unsigned long long)arms);
    if (rc_wait != -1) {
        printf("FAIL: the waiter returned (%d) before the entry was attached\n", rc_wait);
        return 1;
    }
    if (asleep < LOOKS * 2 / 3) {
        printf("FAIL: the engine's sleeper kept waking for a request parked for a match\n");
        return 1;
    }
    if (offload && (sleeps > NIC_SLEEPS_MAX || arms > ARMS_MAX)) {
        printf("FAIL: the NIC thread kept rechecking a parked request (more than %d)\n",
               ARMS_MAX);
        return 1;
    }

    /* The entry: its command makes the request work again. */
    uint64_t t0 = now_ms();
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    CHECK(PtlMEAttach(ni, 5, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &me));
    ptl_md_t d = {.start = buf, .length = sizeof buf, .threshold = PTL_MD_THRESH_INF,
                  .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                  .eq_handle = eq};
    CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
    while (rc_wait == -1 && now_ms() - t0 < 5000)
        sleep_ms(1);
    if (rc_wait == -1) {
        printf("FAIL: attaching the entry did not deliver the parked put (a lost wake-up)\n");
        return 1;
    }
    pthread_join(th, NULL);
    if (rc_wait != PTL_OK || got.type != PTL_EVENT_PUT_END || got.hdr_data != 0x5a ||
        memcmp(buf, src, sizeof buf) != 0) {
        printf("FAIL: the parked put: rc %d, event %d, hdr_data %llx\n", rc_wait,
               (int)got.type, (unsigned long long)got.hdr_data);
        return 1;
    }
    if (drops() != d0) {
        printf("FAIL: a drop was counted\n");
        return 1;
    }
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("park: OK\n");
    return 0;
}
