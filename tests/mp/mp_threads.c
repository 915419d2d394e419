/*
 * mp_threads - the threads a rank has while its NI moves messages: the
 * caller, the NIC thread (offload mode) and the launcher watch (a rank of
 * ptlrun, transport/launcher.c), and none more. Under PTL_TRANSPORT=ofi this
 * shows that libfabric runs no hidden progress thread: the engine is the
 * only caller of the provider (issue 17).
 *
 *   usage (under ptlrun): mp_threads
 *
 * Each rank puts 8 bytes and gets 1 MiB (a rendezvous: an RMA read under
 * ofi) from the next rank, checks the data, waits 200 ms for any lazily
 * started thread to appear, counts /proc/self/task, and does it again after
 * a barrier (every connection of the job exists by then).
 */
#include "mp_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PT_BUF (MP_PT_USER + 0)
#define BIG    (1u << 20)

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        mp_die("cannot open /proc/self/task");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void check(int expect, const char *when)
{
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int n = count_threads();
    if (n != expect)
        mp_die("%d threads %s, expected %d (caller, NIC thread in offload mode, launcher "
               "watch): something started a thread of its own", n, when, expect);
}

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    const char *off = getenv("PTL_OFFLOAD");
    const char *lp = getenv("PTL_LAUNCHER_PID");
    int expect = 1 + (off && !strcmp(off, "0") ? 0 : 1) + (lp && *lp ? 1 : 0);
    const unsigned next = (m.rank + 1) % m.size;

    uint8_t *src = malloc(BIG), *dst = malloc(BIG);
    if (!src || !dst)
        mp_die("out of memory");
    mp_fill(src, BIG, m.rank, 1, 0);
    memset(dst, 0, BIG);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    mp_post(&m, PT_BUF, 0x5, src, BIG, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE |
                PTL_MD_EVENT_START_DISABLE | PTL_MD_EVENT_END_DISABLE,
            PTL_EQ_NONE, PTL_RETAIN, NULL);
    ptl_handle_md_t md = mp_bind(&m, dst, BIG, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE,
                                 eq);
    mp_barrier(&m);
    check(expect, "after PtlNIInit");

    /* the first 8 bytes of the peer's buffer are put back unchanged */
    memcpy(dst, src + 0, 8);
    mp_fill(dst, 8, next, 1, 0);
    MP_CHECK(PtlPutRegion(md, 0, 8, PTL_ACK_REQ, m.ids[next], PT_BUF, 0, 0x5, 0, 0));
    mp_expect(eq, PTL_EVENT_SEND_END, "the 8-byte put");
    mp_expect(eq, PTL_EVENT_ACK, "the 8-byte put's ACK");
    MP_CHECK(PtlGet(md, m.ids[next], PT_BUF, 0, 0x5, 0));
    mp_expect(eq, PTL_EVENT_REPLY_END, "the 1 MiB get");
    int64_t bad = mp_check_pattern(dst, BIG, next, 1, 0);
    if (bad >= 0)
        mp_die("1 MiB get: byte %lld differs", (long long)bad);
    check(expect, "after a put and a 1 MiB get");
    mp_barrier(&m);
    check(expect, "after the job's traffic");
    printf("mp_threads: rank %u: %d threads (transport %s) OK\n", m.rank, expect,
           getenv("PTL_TRANSPORT") ? getenv("PTL_TRANSPORT") : "shm");
    mp_fini(&m);
    free(src);
    free(dst);
    return 0;
}
