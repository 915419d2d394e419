/*
 * test_thread_exit - a thread that used an NI exits after PtlNIFini and a new
 * PtlNIInit: its exit must not touch the new NI (issue 12, item 3).
 *
 * T1 uses NI 1 (claims a command ring), the NI is finalized and a new one
 * created. When malloc hands the new NI and T2's ring the addresses of the
 * old ones (glibc does, for same-size blocks freed just before), T1's exit
 * destructor used to compare NIC addresses, take the new NI for its own and
 * free T2's ring for the next thread to claim: T2 and T3 then share one
 * single-producer ring. Checked here: T2 still owns its ring after T1 exits
 * and T3 gets a ring of its own. Where the addresses were not reused (ASan's
 * quarantine, another allocator), the case cannot arise: exit 77 (skip).
 * The freed ring's block is also taken back as an application object
 * (filled with a pattern) that the old destructor zeroed 4 bytes of.
 */
#include "api_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ut_check.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int step; /* under mu: 1 T1 used the NI; 2 T1 may exit; 3 T2 used the NI; 4 T2 may exit */

static void set_step(int s)
{
    pthread_mutex_lock(&mu);
    step = s;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}
static void wait_step(int s)
{
    pthread_mutex_lock(&mu);
    while (step < s)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static ptl_handle_ni_t ni;
static char buf[64];

/* One command through this thread's ring (PtlMDBind is a command). */
static void use_ni(void)
{
    ptl_md_t md = {.start = buf, .length = sizeof buf, .threshold = PTL_MD_THRESH_INF,
                   .eq_handle = PTL_EQ_NONE};
    ptl_handle_md_t h;
    CHECK(PtlMDBind(ni, md, PTL_RETAIN, &h));
    CHECK(PtlMDUnlink(h));
}

static void *t1_main(void *arg)
{
    (void)arg;
    use_ni();
    set_step(1);
    wait_step(2);
    return NULL; /* the thread-exit destructor runs here */
}

static void *t2_main(void *arg)
{
    (void)arg;
    use_ni();
    set_step(3);
    wait_step(4);
    return NULL;
}

static void *t3_main(void *arg)
{
    (void)arg;
    use_ni();
    return NULL;
}

/* An application heap object where T1's freed ring was (what the issue saw
 * zeroed): blocks of the ring's size are taken until one lands there. */
static unsigned char *canary;
static void *spare[256];
static int nspare;

static void grab_ring_block(struct pt_cmdq **old, int nold)
{
    free(canary);
    canary = NULL;
    for (int i = 0; i < nspare; i++)
        free(spare[i]);
    nspare = 0;
    while (nspare < 256 && !canary) {
        unsigned char *p = malloc(sizeof(struct pt_cmdq)); /* the tcache (aligned_alloc bypasses it) */
        if (!p)
            break;
        for (int i = 0; i < nold && !canary; i++)
            if ((void *)old[i] == (void *)p)
                canary = p;
        if (!canary)
            spare[nspare++] = p;
    }
    if (canary)
        memset(canary, 0xa5, sizeof(struct pt_cmdq));
}

static bool canary_intact(void)
{
    for (size_t i = 0; i < sizeof(struct pt_cmdq); i++)
        if (canary[i] != 0xa5)
            return false;
    return true;
}

/* The command rings of NIC n that some thread owns. */
static int owned_rings(struct pt_nic *n, struct pt_cmdq **out, int max)
{
    int k = 0;
    uint32_t nq = LD_ACQUIRE(&n->ncmdq);
    for (uint32_t i = 0; i < nq && k < max; i++) {
        struct pt_cmdq *q = LD_ACQUIRE(&n->cmdq[i]);
        if (q && LD_ACQUIRE(&q->owner))
            out[k++] = q;
    }
    return k;
}

int main(void)
{
    int ignored;
    CHECK(PtlInit(&ignored));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));

    /* Until the allocator gives the new NI the old one's address (bounded):
     * T1 uses the current NI, which is then replaced. */
    pthread_t t1, t2, t3;
    struct pt_cmdq *old_q[PT_MAX_CMDQ];
    int n_old = 0;
    bool reused = false;
    struct pt_nic *new_nic = NULL;
    for (int attempt = 0; attempt < 64 && !reused; attempt++) {
        struct pt_nic *old_nic = pt_api_ni(ni);
        step = 0;
        pthread_create(&t1, NULL, t1_main, NULL);
        wait_step(1);
        n_old = owned_rings(old_nic, old_q, PT_MAX_CMDQ);
        CHECK(PtlNIFini(ni));
        grab_ring_block(old_q, n_old);
        CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
        new_nic = pt_api_ni(ni);
        reused = new_nic == old_nic;
        if (!reused) { /* another address: T1's exit cannot confuse them */
            set_step(2);
            pthread_join(t1, NULL);
        }
    }
    if (!reused) {
        CHECK(PtlNIFini(ni));
        PtlFini();
        printf("thread_exit: SKIP (the allocator never reused the NIC's address)\n");
        return 77;
    }

    pthread_create(&t2, NULL, t2_main, NULL);
    wait_step(3);
    struct pt_cmdq *new_q[PT_MAX_CMDQ];
    int n_new = owned_rings(new_nic, new_q, PT_MAX_CMDQ);
    if (n_new != 1) {
        printf("thread_exit: T2 owns %d rings, expected 1\n", n_new);
        return 1;
    }
    struct pt_cmdq *t2_q = new_q[0];
    bool ring_reused = false;
    for (int i = 0; i < n_old; i++)
        ring_reused |= old_q[i] == t2_q;

    set_step(2); /* T1 exits */
    pthread_join(t1, NULL);

    int bad = 0;
    if (canary && !canary_intact()) {
        printf("thread_exit: T1's exit wrote into freed memory (an application object)\n");
        bad = 1;
    }
    if (!LD_ACQUIRE(&t2_q->owner)) {
        printf("thread_exit: T1's exit freed T2's command ring of the new NI\n");
        bad = 1;
    }
    pthread_create(&t3, NULL, t3_main, NULL);
    pthread_join(t3, NULL);
    if (LD_ACQUIRE(&new_nic->ncmdq) < 2) {
        printf("thread_exit: T3 was given T2's command ring\n");
        bad = 1;
    }
    set_step(4);
    pthread_join(t2, NULL);
    bool had_canary = canary != NULL;
    grab_ring_block(NULL, 0); /* frees the blocks */
    CHECK(PtlNIFini(ni));
    PtlFini();
    if (bad)
        return 1;
    if (!ring_reused && !had_canary) {
        printf("thread_exit: SKIP (the allocator did not reuse the ring's address)\n");
        return 77;
    }
    printf("thread_exit: OK\n");
    return 0;
}
