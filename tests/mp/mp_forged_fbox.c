/*
 * mp_forged_fbox - a rank that forges fast boxes (transport/shm_region.h,
 * "Fast boxes") cannot crash their receivers nor make them take a forged
 * message, and the hot pairs' own boxes keep working beside the forgery.
 *
 * Three ranks under ptlrun (memfd region). Rank 2 claims no box of its own
 * (PTL_SHM_FBOX=0 for it alone) and maps the region through PTL_JOB_FD:
 *   - in rank 0's directory it claims a box for a sender that does not
 *     exist (owner beyond the ranks) and moves the count: rank 0 must list
 *     nothing for it;
 *   - in rank 1's directory it claims a box in its own name and publishes,
 *     on its request lane, a first line no sender writes (a mask naming the
 *     transport's sequence word, nine lines, a length beyond a lane
 *     message), moves the count and rings rank 1's doorbell.
 * Meanwhile ranks 0 and 1 ping-pong 8-byte and 200-byte puts (so each claims
 * a box at the other after 16 messages and both lanes carry them), every
 * byte checked. At the end rank 1's head of the forged lane must not have
 * moved (the message was refused, logged once, and its sender ignored), and
 * the job ends cleanly.
 *
 *   usage (under ptlrun -n 3, memfd mode): mp_forged_fbox [rounds]
 */
#include "mp_region.h"
#include "xport.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PT_A (MP_PT_USER + 0)

static char *g_base;

static struct pt_shm_layout layout(void) { return mp_region_layout(g_base); }

/* Claim a free box of receiver r for `owner` (the directory's last free
 * one: the real senders claim from the first). Returns its index. */
static uint32_t forge_claim(const struct pt_shm_layout *l, uint32_t r, uint32_t owner)
{
    struct pt_shm_fbdir *d = pt_shm_fbdir(g_base, l, r);
    for (uint32_t k = PT_SHM_FBOXES; k-- > 0;) {
        uint32_t z = 0;
        if (RMW_CAS(&d->owner[k], &z, owner))
            return k;
    }
    mp_die("no free box in rank %u's directory", r);
}

static uint32_t forge(void)
{
    struct pt_shm_layout l = layout();
    (void)forge_claim(&l, 0, 0xfffffff0u); /* a sender beyond the ranks */
    RMW_ADD(&pt_shm_fbdir(g_base, &l, 0)->nclaimed, 1);
    uint32_t k = forge_claim(&l, 1, 2 + 1);
    struct pt_shm_fbox *b = pt_shm_fbox(g_base, &l, 1, k);
    struct pt_shm_fbline *ln = &b->lane[PT_CLS_REQ][0];
    ln->ord = 0;
    ln->mask = 0x1u | 0x2u; /* word 0 is the sequence word: no sender sends it */
    ln->len = 4000;
    ln->nlines = PT_SHM_FB_MAXLN + 1; /* more lines than a message may take */
    memset(ln->data, 0xa5, sizeof ln->data);
    ST_RELEASE(&ln->seq, 1u); /* position 0's sequence word */
    RMW_ADD(&pt_shm_fbdir(g_base, &l, 1)->nclaimed, 1);
    /* Ring rank 1 as a sender does (D1): the fault under test is the line. */
    struct pt_waitword *bell = &pt_shm_rankrec(g_base, &l, 1)->bell;
    RMW_ADD(&bell->seq, 1);
    syscall(SYS_futex, &bell->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    return k;
}

static void ping_pong(struct mp *m, unsigned rounds)
{
    static const uint64_t sizes[] = {8, 200};
    const unsigned me = m->rank, peer = 1 - me;
    uint8_t rbuf[256], sbuf[256];
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t mea;
    mp_post(m, PT_A, 7, rbuf, sizeof rbuf, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
            &mea);
    ptl_handle_md_t smd = mp_bind(m, sbuf, sizeof sbuf, PTL_MD_THRESH_INF,
                                  PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(m);
    mp_doing("ping-pong beside forged fast boxes");
    unsigned puts = 0, sends = 0;
    for (unsigned i = 0; i < rounds; i++) {
        uint64_t sz = sizes[i % 2];
        unsigned tag = i + 1;
        if (me == 0) {
            mp_fill(sbuf, sz, me, tag, 0);
            MP_CHECK(PtlPutRegion(smd, 0, sz, PTL_NO_ACK_REQ, m->ids[peer], PT_A, 0, 7, 0, 0));
        }
        while (puts <= i) { /* the peer's put of round i, and our SEND_ENDs */
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, MP_WAIT_MS))
                mp_die("round %u: no event within %d ms", i, MP_WAIT_MS);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("round %u: %s failed", i, PtlEventKindStr(ev.type));
            if (ev.type == PTL_EVENT_SEND_END) {
                sends++;
                continue;
            }
            if (ev.type != PTL_EVENT_PUT_END || ev.mlength != sz)
                mp_die("round %u: %s of %llu bytes", i, PtlEventKindStr(ev.type),
                       (unsigned long long)ev.mlength);
            int64_t bad = mp_check_pattern(rbuf, sz, peer, tag, 0);
            if (bad >= 0)
                mp_die("round %u: byte %lld of rank %u's %llu-byte put is wrong", i,
                       (long long)bad, peer, (unsigned long long)sz);
            puts++;
        }
        if (me == 1) {
            mp_fill(sbuf, sz, me, tag, 0);
            MP_CHECK(PtlPutRegion(smd, 0, sz, PTL_NO_ACK_REQ, m->ids[peer], PT_A, 0, 7, 0, 0));
        }
    }
    while (sends < rounds) {
        ptl_event_t ev = mp_expect(eq, PTL_EVENT_SEND_END, "the last puts leaving");
        (void)ev;
        sends++;
    }
    MP_CHECK(PtlMEUnlink(mea));
    MP_CHECK(PtlMDUnlink(smd));
    MP_CHECK(PtlEQFree(eq));
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 2000;
    const char *rid = getenv("PTL_MY_RID");
    unsigned rank = rid ? (unsigned)atoi(rid) : 0;
    g_base = mp_map_job_region();
    if (rank == 2)
        setenv("PTL_SHM_FBOX", "0", 1); /* the forger claims nothing for real */
    struct mp m;
    mp_init(&m, 3);
    if (m.size != 3)
        mp_die("run me with exactly 3 ranks");
    if (rank == 2) {
        uint32_t k = forge();
        mp_barrier(&m); /* = the ping-pong's first barrier */
        mp_barrier(&m); /* the ping-pong is over */
        struct pt_shm_layout l = layout();
        struct pt_shm_fbox *b = pt_shm_fbox(g_base, &l, 1, k);
        uint32_t h = LD_ACQUIRE(&b->rx_head[PT_CLS_REQ]);
        if (h != 0)
            mp_die("rank 1 consumed a forged fast-box line (head 0 -> %u)", h);
        /* Both real senders claimed a box at each other (the count moved
         * past the forged claims). */
        uint32_t n0 = LD_ACQUIRE(&pt_shm_fbdir(g_base, &l, 0)->nclaimed);
        uint32_t n1 = LD_ACQUIRE(&pt_shm_fbdir(g_base, &l, 1)->nclaimed);
        if (n0 < 2 || n1 < 2)
            mp_die("the hot pair did not claim its boxes (counts %u and %u)", n0, n1);
        printf("mp_forged_fbox: rank 1 refused a forged fast-box line; the pair's boxes "
               "carried %u rounds\n", rounds);
    } else {
        ping_pong(&m, rounds);
        mp_barrier(&m);
        if (rank == 0)
            printf("mp_forged_fbox: %u rounds beside forged fast boxes OK\n", rounds);
    }
    mp_fini(&m);
    return 0;
}
