/*
 * life.c - per-thread records of who is inside a call (see life.h): the
 * registry, thread exit, parking, and the reclaimers' scans.
 *
 * Registry: a push-only list of records. A record is published by the CAS
 * that makes it the head (R-L, after its fields are set); scanners
 * LD_ACQUIRE the head and then follow `next`, which never changes. A record
 * is never freed: when its thread exits it is marked unused (its word OUT)
 * and the next new thread claims it, so the list is as long as the most
 * threads that were ever alive at once.
 */
#include "life.h"

#include "config.h"
#include "perturb.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__thread struct pt_life *pt_life_self;

static struct pt_life *_Atomic g_life_head; /* R-L: published by CAS; scanners acquire */
/* Records owned now: threads that entered a call and have not ended. A hint
 * (pt_life_threads), read relaxed: no access is ordered by it. */
static _Atomic uint32_t g_life_threads;
/* Registrations ever made: the second ends the solo path (SO-V). */
static _Atomic uint32_t g_life_regs;
_Atomic uint32_t g_pt_solo;
/* The process started on the solo path (written once, in life_key_init). */
static bool g_solo_began;
/* SO-D: 1 once a revocation has seen every open section end (ST_RELEASE after
 * SO-A); a later thread that loads it 1 (acquire) needs no revocation of its
 * own. One that loads 0 revokes too, even if g_pt_solo is already 0: the
 * first revoker may still be waiting for a section, and until it ends the
 * token may be held by a plain store that a CAS would not see. */
static _Atomic uint32_t g_solo_done;
static pthread_key_t g_life_key;
static pthread_once_t g_life_once = PTHREAD_ONCE_INIT;

/* Thread exit: the thread can no longer hold anything, wherever it was. */
static void life_exit(void *arg)
{
    struct pt_life *l = arg;
    uint64_t w = LD_RELAXED(&l->word);
    l->depth = 0;
    if (w & PT_LIFE_STATE)
        ST_RELEASE(&l->word, w & ~(uint64_t)7); /* L-R */
    pt_life_self = NULL;
    RMW_SUB(&g_life_threads, 1);
    ST_RELEASE(&l->used, 0); /* R-U: the next owner's CAS sees our last word */
}

uint32_t pt_life_threads(void) { return LD_RELAXED(&g_life_threads); }

/* The process's first call: whether L-E is a fence or a store (membar.h),
 * decided before any record can enter. */
static void life_key_init(void)
{
    pt_membar_decide(pt_config()->asym_fence != 0);
    /* SOLO needs the asymmetric fence: its revocation is the heavy side. */
    g_solo_began = LD_RELAXED(&g_pt_membar) && pt_config()->solo != 0;
    ST_RELAXED(&g_pt_solo, g_solo_began);
    pthread_key_create(&g_life_key, life_exit);
}

/* A second API thread: the first may no longer take the solo path (SO-V),
 * and a section it opened before it could see that ends before we go on
 * (SO-F, then SO-A on every record). Once per process, before this thread's
 * first call: the wait is at most one section of the other thread (a token
 * held through a wait's spin, PTL_WAIT_SPIN_US; life.h). Control path. */
static void solo_revoke(void)
{
    ST_RELAXED(&g_pt_solo, 0); /* SO-V */
    PT_PERTURB();
    pt_membar_heavy();         /* SO-F pairs with SO-E (pt_life_solo_open) */
    PT_PERTURB();
    for (struct pt_life *l = LD_ACQUIRE(&g_life_head); l; l = l->next) { /* pairs with R-L */
        for (int i = 0; LD_ACQUIRE(&l->solo) != 0; i++) { /* SO-A pairs with SO-R */
            if (i < 64) {
                sched_yield();
            } else {
                struct timespec nap = {0, 50000};
                nanosleep(&nap, NULL);
            }
        }
    }
    ST_RELEASE(&g_solo_done, 1); /* SO-D: pairs with the later registrants' acquire */
}

struct pt_life *pt_life_register(void)
{
    pthread_once(&g_life_once, life_key_init);
    /* Before anything of this thread can take the token or read an EQ, out
     * of memory or not (a thread without a record is still a second thread) */
    if (RMW_ADD(&g_life_regs, 1) != 0 && g_solo_began && !LD_ACQUIRE(&g_solo_done))
        solo_revoke(); /* SO-D: a third thread while the second still waits revokes too */
    struct pt_life *l;
    for (l = LD_ACQUIRE(&g_life_head); l; l = l->next) { /* pairs with R-L */
        uint32_t z = 0;
        if (LD_RELAXED(&l->used) == 0 && RMW_CAS(&l->used, &z, 1)) /* pairs with R-U */
            break;
    }
    if (!l) {
        l = aligned_alloc(PT_CACHELINE, sizeof *l);
        if (!l)
            return NULL;
        memset(l, 0, sizeof *l);
        ST_RELAXED(&l->word, 0);
        ST_RELAXED(&l->used, 1);
        struct pt_life *h = LD_RELAXED(&g_life_head);
        do
            l->next = h;
        while (!RMW_CAS(&g_life_head, &h, l)); /* R-L */
    }
    l->depth = 0;
    ST_RELAXED(&l->solo, 0); /* a claimed record's last owner ended outside any section */
    RMW_ADD(&g_life_threads, 1);
    pthread_setspecific(g_life_key, l);
    pt_life_self = l;
    return l;
}

void pt_life_park(uint32_t ni)
{
    struct pt_life *l = pt_life_self;
    if (!l || l->depth != 1)
        return;
    uint64_t w = LD_RELAXED(&l->word);
    ST_RELEASE(&l->word, (w & ~(uint64_t)7) | (uint64_t)(ni & 1u) << 2 | PT_LIFE_PARKED); /* L-R */
}

void pt_life_unpark(void)
{
    struct pt_life *l = pt_life_self;
    if (!l || l->depth != 1)
        return;
    pt_life_in(l); /* L-E */
}

bool pt_life_quiet(uint32_t ni)
{
    for (struct pt_life *l = LD_ACQUIRE(&g_life_head); l; l = l->next) { /* pairs with R-L */
        uint64_t w = LD_ACQUIRE(&l->word); /* L-A pairs with L-R */
        uint64_t st = w & PT_LIFE_STATE;
        if (st == PT_LIFE_IN || (st == PT_LIFE_PARKED && PT_LIFE_NI(w) == (ni & 1u)))
            return false;
    }
    return true;
}

bool pt_life_snap_take(struct pt_life_snap *s)
{
    s->n = 0;
    for (struct pt_life *l = LD_ACQUIRE(&g_life_head); l; l = l->next) { /* pairs with R-L */
        uint64_t w = LD_ACQUIRE(&l->word); /* L-A pairs with L-R */
        if ((w & PT_LIFE_STATE) != PT_LIFE_IN)
            continue;
        if (s->n == s->cap) {
            uint32_t cap = s->cap ? 2 * s->cap : 16;
            struct pt_life **rec = realloc(s->rec, cap * sizeof *rec);
            if (rec)
                s->rec = rec;
            uint64_t *word = rec ? realloc(s->word, cap * sizeof *word) : NULL;
            if (!word)
                return false;
            s->word = word;
            s->cap = cap;
        }
        s->rec[s->n] = l;
        s->word[s->n] = w;
        s->n++;
    }
    return true;
}

bool pt_life_snap_passed(struct pt_life_snap *s)
{
    /* Drop the records that moved on; the grace period ends with the last. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (LD_ACQUIRE(&s->rec[i]->word) == s->word[i]) { /* L-A pairs with L-R */
            s->rec[k] = s->rec[i];
            s->word[k] = s->word[i];
            k++;
        }
    }
    s->n = k;
    return k == 0;
}

void pt_life_snap_free(struct pt_life_snap *s)
{
    free(s->rec);
    free(s->word);
    memset(s, 0, sizeof *s);
}
