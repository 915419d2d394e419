/*
 * test_ring_fair - command rings share scarce credits fairly (issue 12,
 * item 8): oldest command first.
 *
 * Four threads each queue 64 puts to ourselves (one command ring each) while
 * this thread holds the engine; the queue to ourselves has 4 credits
 * (PTL_QUEUE_SLOTS=4, set by CTest), so one poll can send at most 4 puts.
 * Then we step the engine (pt_nic_poll_once) while every ring still has some
 * queued. A fixed starting ring once gave ring 0 all 4 credits of every poll
 * and the other threads none (with live traffic they then timed out with
 * PTL_NO_SPACE); rings served in turn then fixed that but let a command
 * overtake an older one of another thread (§6.15, mp_xthread_order). Now
 * the engine takes the rings' heads in posting order (cmd_seq, nic.h), so
 * no command waits behind a later one: expected, every command taken was
 * posted before every command left (their stamps, read from the rings
 * before the polls), and some were taken.
 */
#include "api_int.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define NT 4
#define PER_THREAD 64

#include "ut_check.h"

static ptl_handle_ni_t ni;
static ptl_process_id_t me;
static char src[NT][8];
static char dst[4096];
static ptl_handle_md_t smd[NT];
static _Atomic int done;

static void *producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++)
        CHECK(PtlPut(smd[t], PTL_NO_ACK_REQ, me, 4, 0, 7, 0, 0));
    /* Stay: an exited thread's ring goes to the next thread that asks. */
    while (!LD_ACQUIRE(&done))
        sched_yield();
    return NULL;
}

static uint32_t queued(struct pt_cmdq *q)
{
    return LD_ACQUIRE(&q->ring.head) - LD_ACQUIRE(&q->ring.tail);
}

int main(void)
{
    int ignored;
    CHECK(PtlInit(&ignored));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &me));
    struct pt_nic *nic = pt_api_ni(ni);
    if (!nic->has_thread) {
        printf("ring_fair: needs offload mode (commands queue while the engine is held)\n");
        return 1;
    }
    ptl_handle_me_t meh;
    CHECK(PtlMEAttach(ni, 4, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &meh));
    ptl_md_t tmd = {.start = dst, .length = sizeof dst, .threshold = PTL_MD_THRESH_INF,
                    .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, .eq_handle = PTL_EQ_NONE};
    ptl_handle_md_t tmdh;
    CHECK(PtlMDAttach(meh, tmd, PTL_RETAIN, &tmdh));

    for (int t = 0; t < NT; t++) {
        ptl_md_t md = {.start = src[t], .length = sizeof src[t],
                       .threshold = PTL_MD_THRESH_INF, .eq_handle = PTL_EQ_NONE};
        CHECK(PtlMDBind(ni, md, PTL_RETAIN, &smd[t]));
    }
    /* Hold the engine: the NIC thread (and the producers' inline attempts)
     * cannot take it, so the puts stay in the rings. */
    while (!pt_wait_try_take(&nic->w))
        ;
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t);
    /* Wait until every producer's ring holds its 64 puts. The main thread
     * made the binds above and claimed a ring then (it stays empty). */
    struct pt_cmdq *q[NT];
    for (;;) {
        uint32_t n = LD_ACQUIRE(&nic->ncmdq);
        int k = 0;
        for (uint32_t i = 0; i < n; i++) {
            struct pt_cmdq *r = LD_ACQUIRE(&nic->cmdq[i]);
            if (r && queued(r) == PER_THREAD && k < NT)
                q[k++] = r;
        }
        if (k == NT)
            break;
        sched_yield();
    }
    /* Every queued command's stamp, in ring order (they are ours to read:
     * we hold the engine, the consumer). */
    static uint32_t seq[NT][PER_THREAD];
    uint32_t base[NT], taken[NT], total = 0;
    for (int i = 0; i < NT; i++) {
        base[i] = queued(q[i]);
        uint32_t t = LD_RELAXED(&q[i]->ring.tail);
        for (uint32_t k = 0; k < base[i]; k++) {
            const struct pt_cmd *c = spsc_slot(&q[i]->ring, q[i]->slots, t + k);
            if (!(c->flags & PT_CF_SEQ)) {
                printf("ring_fair: FAIL (a command posted with %u rings has no stamp)\n",
                       LD_RELAXED(&nic->ncmdq));
                return 1;
            }
            seq[i][k] = c->seq;
        }
    }
    for (int polls = 0; polls < 1000; polls++) {
        bool all = true;
        for (int i = 0; i < NT; i++)
            all &= queued(q[i]) > 0;
        if (!all)
            break;
        pt_nic_poll_once(nic);
    }
    bool have_taken = false, have_left = false;
    uint32_t max_taken = 0, min_left = 0;
    for (int i = 0; i < NT; i++) {
        taken[i] = base[i] - queued(q[i]);
        total += taken[i];
        for (uint32_t k = 0; k < base[i]; k++) {
            uint32_t v = seq[i][k] - seq[0][0]; /* stamps are 32-bit, relative is enough */
            if (k < taken[i]) {
                max_taken = !have_taken || v > max_taken ? v : max_taken;
                have_taken = true;
            } else {
                min_left = !have_left || v < min_left ? v : min_left;
                have_left = true;
            }
        }
    }
    pt_wait_release(nic); /* the NIC thread sends the rest */
    ST_RELEASE(&done, 1);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    CHECK(PtlNIFini(ni));
    PtlFini();

    for (int i = 0; i < NT; i++)
        printf("ring_fair: ring %d: %u puts taken of %u\n", i, taken[i], total);
    if (total == 0 || (have_left && max_taken > min_left)) {
        printf("ring_fair: FAIL (a command was taken before an older one of another ring)\n");
        return 1;
    }
    printf("ring_fair: OK\n");
    return 0;
}
