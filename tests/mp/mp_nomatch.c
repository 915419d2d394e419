/*
 * mp_nomatch - a put that arrives before its match entry (engine/target.c,
 * nomatch_expired): Portals drops a request that matches nothing, but the
 * engine waits PTL_NOMATCH_WAIT_US before it does, as host matching did
 * implicitly (REF's partner_handshake hung in offload mode without it).
 *
 *   1. rank 0 puts as soon as it leaves a barrier; rank 1 attaches the entry
 *      5 ms after the same barrier: PUT_END with the data, no drop counted.
 *   2. a put that matches nothing at all is still dropped (the drop counter
 *      goes up by one, no event), and the put rank 0 sends right after it to
 *      an existing entry arrives after the drop: nothing overtook, nothing
 *      was lost.
 * Run with PTL_NOMATCH_WAIT_US=0, case 1 fails in offload mode (the NIC
 * thread drops the put before rank 1 attaches).
 *
 *   mp_nomatch park (3 ranks; PTL_NOMATCH_WAIT_US far beyond the bounds
 *   below): while rank 0's put waits at rank 2 for its entry (parked: no
 *   work for rank 2's sleepers, docs/waiting.md "Parked for a match"), rank
 *   1's put to an entry that exists must still wake rank 2 and be delivered
 *   (rank 2 waits for it in PtlEQWait, bounded at 5 s by a watchdog thread:
 *   a lost wake-up, not a speed check); then rank 2 attaches rank 0's
 *   entry, and that command alone must deliver the parked put (same bound).
 *
 *   mp_nomatch burst (2 ranks; PTL_NOMATCH_WAIT_US=1000000): rank 0 puts
 *   BURST messages to an entry rank 1 never attaches, then one to an entry
 *   that exists. The first of the burst waits its second and is dropped;
 *   the rest, for the same entry with no attach in between, have nothing
 *   new to wait for and are dropped at once: the last put arrives within
 *   8 s (each waited its own second before: BURST s), and the drop count
 *   goes up by BURST. Then a put for an entry rank 1 attaches 100 ms later
 *   must still find it (a request for another entry waits as the first
 *   did). Bounds: stalls, not speed checks.
 *
 *   mp_nomatch rounds (2 ranks; PTL_NOMATCH_WAIT_US=20000, the default, and
 *   PTL_WAKE_BACKSTOP_MS=30000): ROUNDS times, rank 0 puts to an entry rank
 *   1 never attaches, then to one that exists, and waits in PtlEQWait for
 *   rank 1's echo, which rank 1 sends when it sees the second put (its own
 *   PtlEQWait). The unmatched put parks at rank 1 for 20 ms, and the put
 *   behind it waits with it; then the engine must run by itself (the park's
 *   end bounds every sleep of rank 1's engine, docs/waiting.md "Parked for a
 *   match"). Before, in offload mode the NIC thread went to sleep while the
 *   application's wait held the engine, and nobody woke it at the park's end:
 *   each round waited for the backstop (here 30 s). Bound: each echo within
 *   5 s, a lost wake-up, not a speed check.
 *
 *   mp_nomatch away (2 ranks; PTL_NOMATCH_WAIT_US=20000, the default): rank
 *   0 puts as soon as it leaves a barrier; rank 1 makes no call into the
 *   library for AWAY_MS (300 ms: an application the machine has not run,
 *   or one still loading its input), then attaches the entry: PUT_END with
 *   the data, no drop (offload: the wait goes on while the application has
 *   not run, up to PTL_NOMATCH_IDLE_US; host matching: the put waits in the
 *   queue for the application's call). With PTL_NOMATCH_IDLE_US=100000 in
 *   offload mode the put is dropped (a drop counted, no event) and a second
 *   put, sent once rank 1 attached, arrives. Before the fifty-eighth
 *   session, offload dropped the put after 20 ms (mp_forkuse, whose ranks
 *   exchange a first put so, hung on loaded machines).
 *
 *   mp_nomatch acl (2 ranks; PTL_NOMATCH_IDLE_US=60000000): rank 1 sets
 *   access control entry 1 to portal PT_T + 1 only, attaches an entry on
 *   PT_T without its MD and then computes (a PtlEQGet now and then);
 *   rank 0 puts to that entry through entry 1. The ACL refuses the put
 *   whatever rank 1 attaches, so the wait for an entry's MD
 *   (nomatch_setting_up) is no reason to keep it: once rank 1 has had its
 *   20 ms of CPU time it is dropped (a drop counted, within 5 s of rank 1's
 *   CPU time; before the fifty-ninth session it waited for the MD, up to
 *   PTL_NOMATCH_IDLE_US). Then rank 1 attaches the MD, and a put through
 *   entry 0 arrives.
 *
 *   mp_nomatch fini (1 rank; PTL_NOMATCH_WAIT_US and PTL_PEER_TIMEOUT_MS far
 *   beyond the bound): 100 gets to itself that match nothing (the entry's
 *   MD takes puts only), then PtlNIFini at once. Nothing can attach to a
 *   finishing NI, so they are dropped then and there; PtlNIFini held them
 *   up to PTL_PEER_TIMEOUT_MS before (the first parked for its entry, the
 *   rest behind it, most in the command ring for want of credits). Bound:
 *   5 s, a stall, not a speed check.
 */
#include "mp_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PT_T (MP_PT_USER + 6)
#define LEN 64

/* A wait in PtlEQWait, as plain clients wait, with a watchdog: exit 1
 * after ms. */
static unsigned wd_ms;
static void *watchdog(void *arg)
{
    const char *what = arg;
    usleep(wd_ms * 1000u);
    mp_die("park: %s did not come within %u ms (a lost wake-up)", what, wd_ms);
    return NULL;
}

static void eqwait(ptl_handle_eq_t eq, ptl_event_t *ev, const char *what)
{
    pthread_t th;
    wd_ms = 5000;
    if (pthread_create(&th, NULL, watchdog, (void *)what))
        mp_die("pthread_create");
    MP_CHECK(PtlEQWait(eq, ev));
    pthread_cancel(th);
    pthread_join(th, NULL);
}

static int park(void)
{
    struct mp m;
    mp_init(&m, 3);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t src[LEN], d0b[LEN], d1b[LEN];
    mp_fill(src, LEN, 0, 7, m.rank);
    memset(d0b, 0, sizeof d0b);
    memset(d1b, 0, sizeof d1b);
    const unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    if (m.rank < 2)
        imd = mp_bind(&m, src, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE);
    ptl_sr_value_t dr0 = m.rank == 2 ? mp_drops(&m) : 0;
    if (m.rank == 2) /* rank 1's entry exists from the start; rank 0's comes later */
        mp_post(&m, PT_T, 31, d1b, LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (m.rank == 0)
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[2], PT_T, 0, 30, 0, 30));
    if (m.rank == 1) {
        usleep(50000); /* most often after rank 0's put is parked (either order is a pass) */
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[2], PT_T, 0, 31, 0, 31));
    }
    if (m.rank == 2) {
        ptl_event_t ev;
        eqwait(eq, &ev, "rank 1's put, beside rank 0's parked one");
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 31)
            mp_die("park: %s hdr_data %llu", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        if (mp_check_pattern(d1b, LEN, 0, 7, 1) >= 0)
            mp_die("park: rank 1's data differs");
        mp_post(&m, PT_T, 30, d0b, LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
        eqwait(eq, &ev, "rank 0's parked put, after its entry was attached");
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 30)
            mp_die("park: %s hdr_data %llu", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        if (mp_check_pattern(d0b, LEN, 0, 7, 0) >= 0)
            mp_die("park: rank 0's data differs");
        if (mp_drops(&m) != dr0)
            mp_die("park: a drop was counted");
        printf("mp_nomatch park: the other sender's put and the parked one delivered\n");
    }
    mp_barrier(&m);
    mp_fini(&m);
    if (m.rank == 0)
        printf("OK\n");
    return 0;
}

#define BURST 20u

static int burst(void)
{
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t src[LEN], dst[LEN], late[LEN];
    mp_fill(src, LEN, 0, 9, 0);
    memset(dst, 0, sizeof dst);
    memset(late, 0, sizeof late);
    const unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    ptl_sr_value_t d0 = 0;
    if (m.rank == 0)
        imd = mp_bind(&m, src, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE);
    else {
        d0 = mp_drops(&m);
        mp_post(&m, PT_T, 2, dst, LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    if (m.rank == 0) {
        for (unsigned i = 0; i < BURST; i++)
            MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 99, 0, 100 + i));
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 2, 0, 2));
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 3, 0, 3));
    } else {
        uint64_t t0 = mp_now_ms();
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, 8000))
            mp_die("burst: the put behind %u unmatched ones did not come within 8 s", BURST);
        uint64_t ms = mp_now_ms() - t0;
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 2)
            mp_die("burst: %s hdr_data %llu", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        if (mp_drops(&m) != d0 + BURST)
            mp_die("burst: %llu drops, expected %u", (unsigned long long)(mp_drops(&m) - d0),
                   BURST);
        /* rank 0's put for entry 3 came right behind: attached late, it
         * must still find the entry */
        usleep(100000);
        mp_post(&m, PT_T, 3, late, LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
        if (!mp_poll(eq, &ev, 10000))
            mp_die("burst: the put for an entry attached 100 ms late was lost");
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 3 ||
            mp_check_pattern(late, LEN, 0, 9, 0) >= 0)
            mp_die("burst: %s hdr_data %llu, or its data differs", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        printf("mp_nomatch burst: %u unmatched puts dropped, the next arrived after %llu ms; "
               "a put for a late entry delivered\n", BURST, (unsigned long long)ms);
    }
    mp_barrier(&m);
    mp_fini(&m);
    return 0;
}

#define ROUNDS 10u

static int rounds(void)
{
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t src[LEN], dst[LEN];
    mp_fill(src, LEN, 0, 11, m.rank);
    memset(dst, 0, sizeof dst);
    const unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
    mp_post(&m, PT_T, 5, dst, LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
    ptl_handle_md_t imd = mp_bind(&m, src, LEN, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE,
                                  PTL_EQ_NONE);
    ptl_sr_value_t d0 = mp_drops(&m);
    mp_barrier(&m);
    uint64_t worst = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        ptl_event_t ev;
        uint64_t t0 = mp_now_ms();
        if (m.rank == 0) {
            MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 6, 0, 1000 + r));
            MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 5, 0, r));
        }
        eqwait(eq, &ev, m.rank == 0 ? "rank 1's echo" : "the put behind an unmatched one");
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != r || ev.ni_fail_type != PTL_NI_OK)
            mp_die("rounds: round %u: %s hdr_data %llu", r, PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        if (m.rank == 1)
            MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[0], PT_T, 0, 5, 0, r));
        uint64_t ms = mp_now_ms() - t0;
        worst = ms > worst ? ms : worst;
    }
    if (m.rank == 1 && mp_drops(&m) != d0 + ROUNDS)
        mp_die("rounds: %llu drops, expected %u", (unsigned long long)(mp_drops(&m) - d0),
               ROUNDS);
    if (m.rank == 0)
        printf("mp_nomatch rounds: %u rounds of an unmatched put and an echo, the slowest "
               "%llu ms: every park's end ran the engine\n", ROUNDS, (unsigned long long)worst);
    mp_barrier(&m);
    mp_fini(&m);
    return 0;
}

/* The put that came before its entry (hdr_data hdr, pattern tag): its
 * PUT_END, its data, and no drop counted since d0. */
static void early_put_came(struct mp *m, ptl_handle_eq_t eq, const uint8_t *dst, uint64_t hdr,
                           unsigned tag, ptl_sr_value_t d0, const char *what)
{
    ptl_event_t ev;
    if (!mp_poll(eq, &ev, 10000)) /* generous: a loaded machine, not a speed check */
        mp_die("%s: the put that came before its entry was lost (%llu drops)", what,
               (unsigned long long)(mp_drops(m) - d0));
    if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != hdr || ev.mlength != LEN)
        mp_die("%s: %s hdr_data %llu", what, PtlEventKindStr(ev.type),
               (unsigned long long)ev.hdr_data);
    if (mp_check_pattern(dst, LEN, 0, tag, 0) >= 0)
        mp_die("%s: data differs", what);
    if (mp_drops(m) != d0)
        mp_die("%s: a drop was counted", what);
}

#define AWAY_MS 300u

/* Two ranks, an EQ each; rank 0's source (filled with tag) bound without
 * events, rank 1's destination zeroed and its drop count so far. */
struct two {
    struct mp m;
    ptl_handle_eq_t eq;
    uint8_t src[LEN], dst[LEN];
    ptl_handle_md_t imd;
    ptl_sr_value_t d0;
};

static void two_init(struct two *t, unsigned tag)
{
    mp_init(&t->m, 2);
    MP_CHECK(PtlEQAlloc(t->m.ni, 64, PTL_EQ_HANDLER_NONE, &t->eq));
    mp_fill(t->src, LEN, 0, tag, 0);
    memset(t->dst, 0, sizeof t->dst);
    t->imd = t->m.rank == 0 ? mp_bind(&t->m, t->src, LEN, PTL_MD_THRESH_INF,
                                      PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE)
                            : PTL_INVALID_HANDLE;
    t->d0 = t->m.rank == 1 ? mp_drops(&t->m) : 0;
}

/* After a barrier rank 0 puts (ac_index 0, bits, hdr) to rank 1's entry,
 * which exists by then: rank 1 sees its PUT_END with the data, and drops
 * drops since two_init; then the job ends. */
static void two_last_put(struct two *t, ptl_match_bits_t bits, uint64_t hdr, unsigned tag,
                         ptl_sr_value_t drops, const char *what)
{
    struct mp *m = &t->m;
    mp_barrier(m);
    if (m->rank == 0)
        MP_CHECK(PtlPut(t->imd, PTL_NO_ACK_REQ, m->ids[1], PT_T, 0, bits, 0, hdr));
    if (m->rank == 1) {
        ptl_event_t ev;
        if (!mp_poll(t->eq, &ev, 10000))
            mp_die("%s: the put after the attach did not arrive", what);
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != hdr)
            mp_die("%s: %s hdr_data %llu, expected the last put", what,
                   PtlEventKindStr(ev.type), (unsigned long long)ev.hdr_data);
        if (mp_check_pattern(t->dst, LEN, 0, tag, 0) >= 0)
            mp_die("%s: data differs", what);
        if (mp_drops(m) != t->d0 + drops)
            mp_die("%s: %llu drops, expected %llu", what,
                   (unsigned long long)(mp_drops(m) - t->d0), (unsigned long long)drops);
    }
    mp_barrier(m);
    mp_fini(m);
}

static int away(void)
{
    struct two t;
    two_init(&t, 7);
    struct mp *m = &t.m;
    const char *o = getenv("PTL_OFFLOAD"), *c = getenv("PTL_NOMATCH_IDLE_US");
    bool offload = !o || strcmp(o, "0") != 0;
    unsigned long cap_us = c ? strtoul(c, NULL, 10) : 1000000u;
    bool dropped = offload && cap_us < AWAY_MS * 1000ul;
    mp_barrier(m);
    if (m->rank == 0)
        MP_CHECK(PtlPut(t.imd, PTL_NO_ACK_REQ, m->ids[1], PT_T, 0, 5, 0, 31));
    if (m->rank == 1) {
        usleep(AWAY_MS * 1000u); /* away: no call into the library */
        mp_post(m, PT_T, 5, t.dst, LEN, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, t.eq,
                PTL_RETAIN, NULL);
        if (!dropped) {
            early_put_came(m, t.eq, t.dst, 31, 7, t.d0, "away");
        } else {
            ptl_event_t ev;
            if (mp_poll(t.eq, &ev, 500))
                mp_die("away: %s hdr_data %llu, but the put should have been dropped after "
                       "PTL_NOMATCH_IDLE_US", PtlEventKindStr(ev.type),
                       (unsigned long long)ev.hdr_data);
            if (mp_drops(m) != t.d0 + 1)
                mp_die("away: %llu drops, expected 1", (unsigned long long)(mp_drops(m) - t.d0));
        }
        printf("mp_nomatch away: a put sent while the target was away for %u ms %s\n",
               AWAY_MS, dropped ? "dropped after PTL_NOMATCH_IDLE_US" : "delivered");
    }
    /* the entry exists now: a second put arrives either way */
    two_last_put(&t, 5, 32, 7, dropped, "away");
    return 0;
}

/* This thread's CPU time, ms */
static uint64_t cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int acl(void)
{
    struct two t;
    two_init(&t, 9);
    struct mp *m = &t.m;
    ptl_handle_me_t me = PTL_INVALID_HANDLE;
    if (m->rank == 1) {
        ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
        MP_CHECK(PtlACEntry(m->ni, 1, any, PTL_UID_ANY, PTL_JID_ANY, PT_T + 1));
        MP_CHECK(PtlMEAttach(m->ni, PT_T, any, 9, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    }
    mp_barrier(m);
    if (m->rank == 0) /* through entry 1, which admits portal PT_T + 1 only */
        MP_CHECK(PtlPut(t.imd, PTL_NO_ACK_REQ, m->ids[1], PT_T, 1, 9, 0, 41));
    if (m->rank == 1) {
        /* compute, and look at the EQ now and then (host matching runs its
         * engine there), until the refused put is dropped (bounded by this
         * thread's CPU time, not the clock: a loaded machine runs it late) */
        uint64_t c0 = cpu_ms(), t0 = mp_now_ms();
        volatile uint64_t sink = 0;
        while (mp_drops(m) == t.d0) {
            for (unsigned i = 0; i < 100000; i++)
                sink += i;
            ptl_event_t ev;
            int rc = PtlEQGet(t.eq, &ev);
            if (rc != PTL_EQ_EMPTY)
                mp_die("acl: PtlEQGet %s (%s) while nothing can arrive", PtlErrorStr(rc),
                       rc == PTL_OK ? PtlEventKindStr(ev.type) : "-");
            if (cpu_ms() - c0 > 5000 || mp_now_ms() - t0 > 50000)
                mp_die("acl: the put the ACL refuses was not dropped while an entry waited "
                       "for its MD (%llu ms of CPU time)", (unsigned long long)(cpu_ms() - c0));
        }
        printf("mp_nomatch acl: the refused put dropped after %llu ms (%llu ms of CPU time), "
               "the entry still without its MD\n", (unsigned long long)(mp_now_ms() - t0),
               (unsigned long long)(cpu_ms() - c0));
        ptl_md_t d = {t.dst, LEN,  PTL_MD_THRESH_INF,
                      0,     PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                      NULL,  t.eq};
        ptl_handle_md_t md;
        MP_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
    }
    two_last_put(&t, 9, 42, 9, 1, "acl"); /* through entry 0 (any process, any portal) */
    return 0;
}

#define FINI_GETS 100u /* more than a ring's credits: most wait in the command ring */

static int fini_self(void)
{
    struct mp m;
    mp_init(&m, 1);
    uint8_t src[LEN], dst[LEN];
    mp_fill(src, LEN, 0, 8, m.rank);
    /* an entry whose MD takes puts only: a get matches nothing there */
    mp_post(&m, PT_T, 77, dst, LEN, PTL_MD_THRESH_INF, PTL_MD_OP_PUT, PTL_EQ_NONE, PTL_RETAIN,
            NULL);
    ptl_handle_md_t imd =
        mp_bind(&m, src, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE);
    for (unsigned i = 0; i < FINI_GETS; i++)
        MP_CHECK(PtlGet(imd, m.ids[m.rank], PT_T, 0, 77, 0));
    uint64_t t0 = mp_now_ms();
    mp_fini_alone(&m);
    uint64_t ms = mp_now_ms() - t0;
    if (ms > 5000)
        mp_die("fini: PtlNIFini took %llu ms with %u unmatched gets to itself",
               (unsigned long long)ms, FINI_GETS);
    printf("mp_nomatch fini: PtlNIFini dropped %u unmatched gets to itself (%llu ms)\n",
           FINI_GETS, (unsigned long long)ms);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "park") == 0)
        return park();
    if (argc > 1 && strcmp(argv[1], "fini") == 0)
        return fini_self();
    if (argc > 1 && strcmp(argv[1], "burst") == 0)
        return burst();
    if (argc > 1 && strcmp(argv[1], "rounds") == 0)
        return rounds();
    if (argc > 1 && strcmp(argv[1], "away") == 0)
        return away();
    if (argc > 1 && strcmp(argv[1], "acl") == 0)
        return acl();
    struct mp m;
    mp_init(&m, 2);
    const bool ini = m.rank == 0, tgt = m.rank == 1;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t src[LEN], dst[LEN], dst2[LEN];
    mp_fill(src, LEN, 0, 6, 0);
    memset(dst, 0, sizeof dst);
    memset(dst2, 0, sizeof dst2);
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    if (ini)
        imd = mp_bind(&m, src, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, PTL_EQ_NONE);
    ptl_sr_value_t d0 = tgt ? mp_drops(&m) : 0;
    mp_barrier(&m);

    /* 1. the put comes first, the entry 5 ms later */
    if (ini)
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 1, 0, 11));
    if (tgt) {
        usleep(5000);
        mp_post(&m, PT_T, 1, dst, LEN, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
        early_put_came(&m, eq, dst, 11, 6, d0, "1");
    }
    mp_barrier(&m);

    /* 2. no entry ever: still dropped; the next put (matching) arrives */
    if (tgt)
        mp_post(&m, PT_T, 2, dst2, LEN, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (ini) {
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 99, 0, 21)); /* no entry */
        MP_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, m.ids[1], PT_T, 0, 2, 0, 22));
    }
    if (tgt) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, 10000)) /* generous: a loaded machine, not a speed check */
            mp_die("2: the put behind the unmatched one did not arrive");
        if (ev.type != PTL_EVENT_PUT_END || ev.hdr_data != 22)
            mp_die("2: %s hdr_data %llu", PtlEventKindStr(ev.type),
                   (unsigned long long)ev.hdr_data);
        if (mp_drops(&m) != d0 + 1)
            mp_die("2: drop count went from %llu to %llu, expected +1",
                   (unsigned long long)d0, (unsigned long long)mp_drops(&m));
        mp_expect_none(eq, 50, "2: after the drop");
        printf("mp_nomatch: early put delivered, unmatched put dropped\n");
    }
    mp_barrier(&m);
    mp_fini(&m);
    if (m.rank == 0)
        printf("OK\n");
    return 0;
}
