/*
 * mp_pexit - a common threading pattern: the main thread opens Portals,
 * hands the rest to a worker and calls pthread_exit; the worker finalizes
 * (PtlNIFini, PtlFini) and returns. The process must then exit (status 0),
 * as it does outside ptlrun: the library keeps no thread of its own past the
 * last NI's close. The launcher watch (transport/launcher.c) used to, and
 * such a rank lived on until ptlrun's --timeout (an adversarial session's
 * finding, 2026-12-04). The driver's --within fails a rank that stays.
 *
 * Before it finalizes, the worker of each of the 2 ranks, once its main
 * thread has exited, puts 64 KiB (a rendezvous: CMA pulls it) and 8 B with
 * ACKs to the other and checks what it got. CMA names a process by its pid,
 * whose thread (the exited main) has no memory left: every rendezvous with
 * such a rank failed with PTL_NI_PEER_DIED though it lived (another
 * adversarial session's finding, the forty-seventh); transport/shm.c now
 * names one of its live threads.
 */
#include "mp_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_X (MP_PT_USER + 7)
#define BIG 65536u

static struct mp g_m;

/* Our main thread has exited (its task a zombie or gone), bounded at 5 s. */
static void main_gone(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
            return;
        usleep(10000);
    }
    mp_die("the main thread did not exit within 5 s");
}

static void exchange(struct mp *m, size_t len, unsigned tag)
{
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    if (!src || !dst)
        mp_die("out of memory");
    mp_fill(src, len, m->rank, tag, 0);
    ptl_handle_me_t me;
    mp_post(m, PT_X, tag, dst, len, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE,
            eq, PTL_RETAIN, &me);
    ptl_handle_md_t md = mp_bind(m, src, len, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    mp_barrier(m);
    MP_CHECK(PtlPut(md, PTL_ACK_REQ, m->ids[1 - m->rank], PT_X, 0, tag, 0, tag));
    const ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_ACK, PTL_EVENT_PUT_END};
    mp_expect_all(eq, k, 3, NULL, "a put after main's pthread_exit");
    if (mp_check_pattern(dst, len, 1 - m->rank, tag, 0) >= 0)
        mp_die("%zu B from rank %u differ", len, 1 - m->rank);
    mp_barrier(m);
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlMEUnlink(me));
    MP_CHECK(PtlEQFree(eq));
    free(src);
    free(dst);
}

static void *worker(void *arg)
{
    (void)arg;
    main_gone();
    exchange(&g_m, BIG, 1);
    exchange(&g_m, 8, 2);
    mp_fini(&g_m); /* barrier, PtlNIFini, PtlFini */
    printf("mp_pexit: rank %u: 64 KiB and 8 B exchanged, worker finalized\n", g_m.rank);
    fflush(stdout);
    return NULL; /* the last thread of the process: it exits with status 0 */
}

int main(void)
{
    mp_init(&g_m, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) {
        perror("mp_pexit: pthread_create");
        return 3;
    }
    pthread_exit(NULL);
}
