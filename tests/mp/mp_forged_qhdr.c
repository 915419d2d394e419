/*
 * mp_forged_qhdr - a rank that rewrites the shared header of queues it does
 * not own cannot crash their producer or consumer (issue 12 item 9).
 *
 * Three ranks under ptlrun (memfd region). Rank 2 maps the region through
 * PTL_JOB_FD and rewrites what it can write without owning it on the paths
 * between ranks 0 and 1: their "senders with work" bitmaps and summary words
 * (bits of senders with nothing, and of senders beyond the process slots)
 * and the rings' padding, before anybody uses them and, from the first
 * barrier on, continuously until rank 0 says the traffic is done. Rank 1
 * attaches only after the first rewrite. Ranks 0 and 1 then ping-pong puts
 * (with ACKs) and gets of 8, 4000 and 100000 bytes, every byte checked.
 * Then rank 2 publishes, on its own ring to rank 1, an entry beyond its
 * buffer pool: rank 1 must not consume it (its head stays) nor crash, and
 * the job ends cleanly. The rings' tails and entries between 0 and 1 are
 * left alone: a forged tail may stall traffic (it makes the sender faulty
 * to its receiver, shm_region.h "What r trusts").
 *
 *   usage (under ptlrun -n 3, memfd mode): mp_forged_qhdr [rounds]
 */
#include "mp_region.h"
#include "xport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PT_A (MP_PT_USER + 0) /* rank 0 and 1: puts land here           */
#define PT_G (MP_PT_USER + 1) /* rank 0 and 1: gets are served from here */

/* Test-private words in the header page's padding (nothing else uses it). */
struct flags {
    _Atomic uint32_t forged; /* rank 2: 1 once the first rewrite is done */
    _Atomic uint32_t done;   /* rank 0: 1 once the traffic is over        */
};

static char *g_base;

static struct flags *flags(void)
{
    return (struct flags *)(g_base + offsetof(struct pt_shm_hdr, pad_));
}

static void map_region(void) { g_base = mp_map_job_region(); }

static struct pt_shm_layout layout(void) { return mp_region_layout(g_base); }

/* Rewrite what a third rank can write without owning it, on the paths
 * between ranks 0 and 1: their "senders with work" bitmaps and summary
 * words (every bit set: senders that have nothing, and senders that do not
 * exist, beyond the process slots) and the rings' credit marks (`want`:
 * any value costs a ring or a backstop period, never a message). */
static void forge(uint32_t round, bool heads)
{
    struct pt_shm_layout l = layout();
    for (uint32_t r = 0; r < 2; r++) {
        _Atomic uint64_t *w = pt_shm_words(g_base, &l, r), *sm = pt_shm_sum(g_base, &l, r);
        for (uint32_t k = 0; k < l.nsum; k++)
            RMW_OR(&sm[k], ~0ull);
        for (uint32_t k = 0; k < l.nwords; k++)
            RMW_OR(&w[k], heads ? ~0ull : 0x5ull << (round % 60));
        for (uint32_t c = 0; c < 2; c++)
            ST_RELAXED(&pt_shm_ring(g_base, &l, 1 - r, r, c)->want, 0x80000000u + round);
    }
}

/* After the traffic: rank 2 writes into its own ring to rank 1 an entry no
 * sender writes (a buffer index beyond its pool) and publishes it. Rank 1
 * must take rank 2 as faulty, never use the entry, and go on with the
 * others. Returns rank 1's head of that ring, to compare after a barrier. */
static uint32_t forge_entry(void)
{
    struct pt_shm_layout l = layout();
    struct pt_shm_ring *ring = pt_shm_ring(g_base, &l, 2, 1, PT_CLS_REQ);
    uint32_t t = LD_RELAXED(&ring->tail);
    ST_RELAXED(&ring->ent[t & (l.qslots - 1)], 0xffff);
    ST_RELEASE(&ring->tail, t + 1);
    RMW_OR(&pt_shm_words(g_base, &l, 1)[0], 1ull << 2);
    RMW_OR(&pt_shm_sum(g_base, &l, 1)[0], 1ull);
    /* Ring rank 1's doorbell as a sender does (D1): the fault under test is
     * the entry, not a missing wake-up (rank 1 may be asleep in a wait; the
     * engine's backstop would find the entry and report a lost wake-up). */
    struct pt_waitword *bell = &pt_shm_rankrec(g_base, &l, 1)->bell;
    RMW_ADD(&bell->seq, 1);
    syscall(SYS_futex, &bell->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    return LD_ACQUIRE(pt_shm_rxhead(g_base, &l, 2, 1, PT_CLS_REQ));
}

/* Events of kinds this side has seen but not yet waited for: an ACK may
 * come after the peer's next request (different queues), so each wait takes
 * its kind from the tally and reads the EQ only while it has none. */
struct tally {
    unsigned n[PTL_EVENT_UNLINK + 1];
    ptl_size_t put_mlength; /* of the latest PUT_END */
};

static void await(ptl_handle_eq_t eq, struct tally *t, ptl_event_kind_t k, unsigned round)
{
    while (!t->n[k]) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, MP_WAIT_MS))
            mp_die("round %u: no %s within %d ms", round, PtlEventKindStr(k), MP_WAIT_MS);
        if (ev.ni_fail_type != PTL_NI_OK || ev.type > PTL_EVENT_UNLINK)
            mp_die("round %u: %s failed (ni_fail_type %u)", round, PtlEventKindStr(ev.type),
                   ev.ni_fail_type);
        if (ev.type == PTL_EVENT_PUT_END)
            t->put_mlength = ev.mlength;
        t->n[ev.type]++;
    }
    t->n[k]--;
}

static void ping_pong(struct mp *m, unsigned rounds)
{
    static const uint64_t sizes[] = {8, 4000, 100000};
    const uint64_t max = 100000;
    const unsigned me = m->rank, peer = 1 - me;
    uint8_t *rbuf = malloc(max), *sbuf = malloc(max), *gsrc = malloc(max), *gdst = malloc(max);
    if (!rbuf || !sbuf || !gsrc || !gdst)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t mea, meg;
    mp_post(m, PT_A, 7, rbuf, max, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            &mea);
    mp_post(m, PT_G, 8, gsrc, max, PTL_MD_THRESH_INF,
            PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            &meg);
    ptl_handle_md_t smd = mp_bind(m, sbuf, max, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    ptl_handle_md_t gmd = mp_bind(m, gdst, max, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(m); /* MEs posted on both sides; rank 2 is rewriting headers */

    mp_doing("ping-pong over forged queue headers");
    struct tally t = {{0}, 0};
    for (unsigned i = 0; i < rounds; i++) {
        uint64_t sz = sizes[i % 3];
        unsigned tag = i + 1;
        if (me == 1) {
            await(eq, &t, PTL_EVENT_PUT_END, i);
            int64_t bad = t.put_mlength == sz ? mp_check_pattern(rbuf, sz, 0, tag, 0) : 0;
            if (bad >= 0)
                mp_die("round %u: rank 0's %llu-byte put arrived wrong (byte %lld)", i,
                       (unsigned long long)sz, (long long)bad);
        }
        mp_fill(sbuf, sz, me, tag, 0);
        mp_fill(gsrc, sz, me, tag + 1000, 0); /* read by the peer's get after our put */
        MP_CHECK(PtlPutRegion(smd, 0, sz, PTL_ACK_REQ, m->ids[peer], PT_A, 0, 7, 0, 0));
        if (me == 0) {
            await(eq, &t, PTL_EVENT_PUT_END, i); /* rank 1 answers once it has ours */
            int64_t bad = t.put_mlength == sz ? mp_check_pattern(rbuf, sz, 1, tag, 0) : 0;
            if (bad >= 0)
                mp_die("round %u: rank 1's %llu-byte put arrived wrong (byte %lld)", i,
                       (unsigned long long)sz, (long long)bad);
            /* rank 1 filled its get source before its put: get it now */
            MP_CHECK(PtlGetRegion(gmd, 0, sz, m->ids[peer], PT_G, 0, 8, 0));
            await(eq, &t, PTL_EVENT_REPLY_END, i);
            bad = mp_check_pattern(gdst, sz, 1, tag + 1000, 0);
            if (bad >= 0)
                mp_die("round %u: byte %lld of a %llu-byte get from rank 1 is wrong", i,
                       (long long)bad, (unsigned long long)sz);
        } else {
            await(eq, &t, PTL_EVENT_GET_END, i); /* before gsrc is refilled */
        }
        await(eq, &t, PTL_EVENT_SEND_END, i);
        await(eq, &t, PTL_EVENT_ACK, i);
    }
    mp_expect_none(eq, 20, "after the ping-pong");
    MP_CHECK(PtlMEUnlink(mea));
    MP_CHECK(PtlMEUnlink(meg));
    MP_CHECK(PtlMDUnlink(smd));
    MP_CHECK(PtlMDUnlink(gmd));
    MP_CHECK(PtlEQFree(eq));
    free(rbuf);
    free(sbuf);
    free(gsrc);
    free(gdst);
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 300;
    const char *rid = getenv("PTL_MY_RID");
    unsigned rank = rid ? (unsigned)atoi(rid) : 0;
    map_region();
    if (rank == 2) {
        forge(0, false); /* before ranks 0 and 1 use (rank 1: attach to) the queues */
        ST_RELEASE(&flags()->forged, 1); /* pairs with rank 1's LD_ACQUIRE below */
    } else if (rank == 1) {
        for (int i = 0; i < 10000 && !LD_ACQUIRE(&flags()->forged); i++)
            usleep(1000);
        if (!LD_ACQUIRE(&flags()->forged))
            mp_die("rank 2 did not rewrite the bitmaps within 10 s");
    }
    struct mp m;
    mp_init(&m, 3);
    if (m.size != 3)
        mp_die("run me with exactly 3 ranks");
    if (rank == 2) {
        mp_barrier(&m); /* = the ping-pong's first barrier */
        mp_doing("rewriting queue headers");
        uint32_t round = 1;
        struct timespec ts = {0, 20000};
        while (!LD_ACQUIRE(&flags()->done)) {
            forge(round++, true);
            nanosleep(&ts, NULL);
        }
        printf("mp_forged_qhdr: %u rewrites of 2 bitmaps and 4 rings\n", round);
        uint32_t head = forge_entry();
        mp_barrier(&m); /* rank 1 polls its rings here, ours among them */
        struct timespec ms = {0, 50000000};
        nanosleep(&ms, NULL);
        struct pt_shm_layout l = layout();
        uint32_t now = LD_ACQUIRE(pt_shm_rxhead(g_base, &l, 2, 1, PT_CLS_REQ));
        if (now != head)
            mp_die("rank 1 consumed a ring entry beyond rank 2's pool (head %u -> %u)", head,
                   now);
        printf("mp_forged_qhdr: rank 1 refused a forged ring entry\n");
    } else {
        ping_pong(&m, rounds);
        if (rank == 0) {
            ST_RELEASE(&flags()->done, 1);
            printf("mp_forged_qhdr: %u rounds over forged bitmaps and rings OK\n", rounds);
        }
        mp_barrier(&m); /* rank 2 forges an entry of its ring to rank 1 before this */
    }
    mp_fini(&m);
    return 0;
}
