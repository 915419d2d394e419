/*
 * mp_pingpong - 8-byte put ping-pong between ranks 0 and 1: rank 0 puts,
 * rank 1 puts back when its PUT_END arrives. Prints the half round trip
 * (median and mean over the timed iterations). Other ranks only join the
 * barriers.
 *
 *   usage (under ptlrun): mp_pingpong [iterations] [size]    default 10000 8
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PT_P (MP_PT_USER + 6)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    long iters = argc > 1 ? strtol(argv[1], NULL, 0) : 10000;
    long size = argc > 2 ? strtol(argv[2], NULL, 0) : 8;
    if (iters < 10 || iters > 100000000 || size < 0 || size > (1 << 24))
        mp_die("usage: mp_pingpong [iterations >= 10] [size]");
    const long warm = iters / 10;
    char *sbuf = calloc(1, (size_t)size + 1), *rbuf = calloc(1, (size_t)size + 1);
    uint64_t *t = calloc((size_t)iters, sizeof *t);
    if (!sbuf || !rbuf || !t)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank <= 1)
        mp_post(&m, PT_P, 1, rbuf, (ptl_size_t)size, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq,
                PTL_RETAIN, NULL);
    ptl_handle_md_t smd = mp_bind(&m, sbuf, (ptl_size_t)size, PTL_MD_THRESH_INF, 0,
                                  PTL_EQ_NONE);
    mp_barrier(&m);
    if (m.rank <= 1) {
        ptl_process_id_t peer = m.ids[1 - m.rank];
        for (long i = 0; i < iters + warm; i++) {
            uint64_t t0 = now_ns();
            if (m.rank == 0)
                MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, peer, PT_P, 0, 1, 0, 0));
            mp_expect(eq, PTL_EVENT_PUT_END, "ping-pong");
            if (m.rank == 1)
                MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, peer, PT_P, 0, 1, 0, 0));
            else if (i >= warm)
                t[i - warm] = now_ns() - t0;
        }
    }
    if (m.rank == 0) {
        double sum = 0;
        for (long i = 0; i < iters; i++)
            sum += (double)t[i];
        qsort(t, (size_t)iters, sizeof *t, cmp);
        const char *mode = getenv("PTL_OFFLOAD");
        printf("mp_pingpong: %ld-byte put half round trip, %s mode: median %.2f us, mean "
               "%.2f us, p99 %.2f us (%ld iterations)\n",
               size, mode && mode[0] == '0' ? "host-matching" : "offload",
               (double)t[iters / 2] / 2000.0, sum / (double)iters / 2000.0,
               (double)t[iters * 99 / 100] / 2000.0, iters);
    }
    mp_fini(&m);
    free(t);
    free(sbuf);
    free(rbuf);
    return 0;
}
