/*
 * mp_a2a_threads - an all-to-all written the way a threaded client writes
 * it: several threads in every rank, each with its own EQ, put (ACK) from
 * one shared source buffer into every rank and get from one shared exposed
 * buffer of every rank, so that one target answers several gets of the same
 * memory at once and one initiator reads several descriptors of the same
 * addresses. Data is checked on both sides.
 *
 *   usage (under ptlrun): mp_a2a_threads wait|poll NTHREADS SIZE...
 *
 * One round per SIZE (a fresh pair of MEs each). Found over ofi: two gets of
 * the same memory give two replies with the same descriptor id, each under
 * its own registration; the reader ended one, the target closed the other,
 * and the reader's next RMA read named a key the target no longer had
 * ("unknown key" at the target, tcp resets the connection, both sides take
 * the other for dead): 6 failures in 6 runs of 4 ranks x 3 threads.
 */
#include "mp_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_DST  (MP_PT_USER + 1)
#define PT_SRC  (MP_PT_USER + 2)
#define MAX_THR 16

static struct mp m;
static int use_wait;
static unsigned nthr, iter;
static uint64_t size;
static uint8_t *src, *dst;

static ptl_event_t next_ev(ptl_handle_eq_t eq, const char *what)
{
    ptl_event_t ev;
    int rc, which;
    if (use_wait)
        rc = PtlEQWait(eq, &ev);
    else
        rc = PtlEQPoll(&eq, 1, 60000, &ev, &which);
    if (rc != PTL_OK)
        mp_die("%s: %s returned %s", what, use_wait ? "PtlEQWait" : "PtlEQPoll",
               PtlErrorStr(rc));
    if (ev.ni_fail_type != PTL_NI_OK)
        mp_die("%s: event %s failed: %s", what, PtlEventKindStr(ev.type),
               PtlNIFailStr(m.ni, ev.ni_fail_type));
    return ev;
}

static void *thr(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t *gbuf = malloc(size);
    if (!gbuf)
        mp_die("out of memory");
    for (unsigned k = 0; k < m.size; k++) {
        unsigned p = (m.rank + k) % m.size; /* every rank starts with a different peer */
        ptl_handle_md_t md;
        ptl_md_t d = {.start = src, .length = size, .threshold = PTL_MD_THRESH_INF,
                      .options = PTL_MD_EVENT_START_DISABLE, .eq_handle = eq};
        MP_CHECK(PtlMDBind(m.ni, d, PTL_RETAIN, &md));
        MP_CHECK(PtlPut(md, PTL_ACK_REQ, m.ids[p], PT_DST, 0, iter,
                        (m.rank * nthr + t) * size, 0));
        for (int got = 0; got < 2;) {
            ptl_event_t ev = next_ev(eq, "put");
            if (ev.type == PTL_EVENT_SEND_END || ev.type == PTL_EVENT_ACK)
                got++;
            if (ev.type == PTL_EVENT_ACK && ev.mlength != size)
                mp_die("put to %u: ACK mlength %llu", p, (unsigned long long)ev.mlength);
        }
        MP_CHECK(PtlMDUnlink(md));

        memset(gbuf, 0, size);
        ptl_md_t g = {.start = gbuf, .length = size, .threshold = PTL_MD_THRESH_INF,
                      .options = PTL_MD_EVENT_START_DISABLE, .eq_handle = eq};
        MP_CHECK(PtlMDBind(m.ni, g, PTL_RETAIN, &md));
        MP_CHECK(PtlGet(md, m.ids[p], PT_SRC, 0, iter, 0));
        for (;;) {
            ptl_event_t ev = next_ev(eq, "get");
            if (ev.type != PTL_EVENT_REPLY_END)
                continue;
            if (ev.mlength != size)
                mp_die("get from %u: REPLY mlength %llu", p, (unsigned long long)ev.mlength);
            break;
        }
        int64_t bad = mp_check_pattern(gbuf, size, p, iter, 0);
        if (bad >= 0)
            mp_die("get from %u, %llu bytes: byte %lld wrong", p, (unsigned long long)size,
                   (long long)bad);
        MP_CHECK(PtlMDUnlink(md));
    }
    free(gbuf);
    MP_CHECK(PtlEQFree(eq));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "wait") && strcmp(argv[1], "poll")))
        mp_die("usage: mp_a2a_threads wait|poll NTHREADS SIZE...");
    use_wait = !strcmp(argv[1], "wait");
    nthr = (unsigned)atoi(argv[2]);
    if (nthr < 1 || nthr > MAX_THR)
        mp_die("NTHREADS: 1 to %d", MAX_THR);
    mp_init(&m, 1);
    for (int a = 3; a < argc; a++, iter++) {
        size = strtoull(argv[a], NULL, 0);
        if (size == 0)
            mp_die("SIZE: at least 1");
        src = malloc(size);
        dst = malloc(size * m.size * nthr);
        if (!src || !dst)
            mp_die("out of memory");
        mp_fill(src, size, m.rank, iter, 0);
        memset(dst, 0xEE, size * m.size * nthr);
        ptl_handle_me_t me_dst, me_src;
        mp_post(&m, PT_DST, iter, dst, size * m.size * nthr, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE |
                    PTL_MD_EVENT_END_DISABLE,
                PTL_EQ_NONE, PTL_RETAIN, &me_dst);
        mp_post(&m, PT_SRC, iter, src, size, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE |
                    PTL_MD_EVENT_END_DISABLE,
                PTL_EQ_NONE, PTL_RETAIN, &me_src);
        mp_barrier(&m);
        pthread_t th[MAX_THR];
        for (unsigned t = 0; t < nthr; t++)
            if (pthread_create(&th[t], NULL, thr, (void *)(uintptr_t)t))
                mp_die("pthread_create failed");
        for (unsigned t = 0; t < nthr; t++)
            pthread_join(th[t], NULL);
        mp_barrier(&m); /* every put into dst has been acknowledged */
        for (unsigned p = 0; p < m.size; p++)
            for (unsigned t = 0; t < nthr; t++) {
                int64_t bad = mp_check_pattern(dst + (p * nthr + t) * size, size, p, iter, 0);
                if (bad >= 0)
                    mp_die("put from %u thread %u, %llu bytes: byte %lld wrong", p, t,
                           (unsigned long long)size, (long long)bad);
            }
        mp_barrier(&m); /* nobody gets from src any more */
        MP_CHECK(PtlMEUnlink(me_dst));
        MP_CHECK(PtlMEUnlink(me_src));
        free(src);
        free(dst);
        if (m.rank == 0)
            printf("mp_a2a_threads: %u ranks x %u threads, %llu bytes: OK\n", m.size, nthr,
                   (unsigned long long)size);
    }
    mp_fini(&m);
    return 0;
}
