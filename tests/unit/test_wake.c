/*
 * test_wake - whom D6 wakes (docs/waiting.md, "Whom D6 wakes"), white-box.
 *
 * A thread sleeps in PtlEQWait on EQ A (PTL_WAIT_SPIN_US=0: it sleeps at
 * once). The main thread then puts 200 messages to itself whose PUT_END
 * events go into EQ B, reading each with PtlEQGet (it never sleeps). The
 * sleeper must not be woken for B's events: its futex sleeps (the engine's
 * waiter_sleeps count) may grow by a few at most, where a D6 that rings for
 * every event makes it wake and sleep again (and the count of D6's rings,
 * ev_rings, must not move at all while only B gets events). Then
 * one put into A: the sleeper must wake and return that event (the filter
 * must not lose the wake it is there for). Counts, not times.
 * The mode comes from the environment (PTL_OFFLOAD). A watchdog (alarm)
 * fails a hang.
 */
#include "api_int.h"
#include "nic.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ut_check.h"

#define MSGS 200
#define SPURIOUS_MAX 20 /* wake-ups of the sleeper allowed for B's 200 events */

static ptl_handle_ni_t ni;
static ptl_process_id_t self;
static ptl_handle_eq_t eq_a, eq_b;
static char buf_a[8], buf_b[8], src[8] = "wakeup";
static ptl_event_t got_a;
static int rc_a = -1;

static void *sleeper(void *arg)
{
    (void)arg;
    rc_a = PtlEQWait(eq_a, &got_a);
    return NULL;
}

/* ME+MD on portal pt (match bits 7) whose events go into eq. */
static void target(ptl_pt_index_t pt, char *buf, ptl_handle_eq_t eq)
{
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    CHECK(PtlMEAttach(ni, pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &me));
    ptl_md_t d = {.start = buf, .length = 8, .threshold = PTL_MD_THRESH_INF,
                  .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                  .eq_handle = eq};
    CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
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
    CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq_a));
    CHECK(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq_b));
    target(3, buf_a, eq_a);
    target(4, buf_b, eq_b);
    ptl_handle_md_t s;
    ptl_md_t smd = {.start = src, .length = sizeof src, .threshold = PTL_MD_THRESH_INF,
                    .eq_handle = PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, smd, PTL_RETAIN, &s));

    pthread_t th;
    if (pthread_create(&th, NULL, sleeper, NULL))
        return 1;
    /* until the sleeper is asleep on the event word (W3) */
    for (int i = 0; LD_RELAXED(&nic->w.ev->sleepers) == 0; i++) {
        if (i > 5000) {
            printf("FAIL: the waiter never went to sleep\n");
            return 1;
        }
        sleep_ms(1);
    }
    sleep_ms(20);
    uint64_t s0 = LD_RELAXED(&nic->w.st.waiter_sleeps), r0 = LD_RELAXED(&nic->w.st.ev_rings);
    for (int m = 0; m < MSGS; m++) {
        CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 4, 0, 7, 0, (ptl_hdr_data_t)m));
        ptl_event_t ev;
        int rc;
        while ((rc = PtlEQGet(eq_b, &ev)) == PTL_EQ_EMPTY)
            ;
        CHECK(rc);
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != (ptl_hdr_data_t)m) {
            printf("FAIL: message %d: event %d, hdr_data %llu\n", m, (int)ev.type,
                   (unsigned long long)ev.hdr_data);
            return 1;
        }
    }
    sleep_ms(20);
    uint64_t woke = LD_RELAXED(&nic->w.st.waiter_sleeps) - s0;
    uint64_t rang = LD_RELAXED(&nic->w.st.ev_rings) - r0;
    printf("the sleeper on EQ A slept %llu more time(s), D6 rang %llu time(s), during %d "
           "events into EQ B\n", (unsigned long long)woke, (unsigned long long)rang, MSGS);
    if (rc_a != -1) {
        printf("FAIL: the waiter on EQ A returned (%d) without an event in A\n", rc_a);
        return 1;
    }
    if (rang) {
        printf("FAIL: D6 rang for events into an EQ nobody sleeps on\n");
        return 1;
    }
    if (woke > SPURIOUS_MAX) {
        printf("FAIL: woken for other EQs' events (more than %d)\n", SPURIOUS_MAX);
        return 1;
    }
    CHECK(PtlPut(s, PTL_NO_ACK_REQ, self, 3, 0, 7, 0, 0xa));
    pthread_join(th, NULL);
    if (rc_a != PTL_OK || got_a.type != PTL_EVENT_PUT_END || got_a.hdr_data != 0xa) {
        printf("FAIL: the waiter on EQ A: rc %d, event %d\n", rc_a, (int)got_a.type);
        return 1;
    }
    CHECK(PtlNIFini(ni));
    PtlFini();
    printf("wake: OK\n");
    return 0;
}
