/*
 * ptl_loopback_lat.c - issue 3's bar: a loopback PtlPut of `size` bytes
 * followed by PtlEQWait for its PUT_END, timed per iteration. Prints p50,
 * mean, p99, max and the count of iterations over 4 ms (a scheduler tick),
 * and one SUMMARY line. The mode comes from the environment (PTL_OFFLOAD).
 *
 *   usage: ptl_loopback_lat [iterations] [size]
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200000;
    size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 8;
    if (iters < 10)
        iters = 10;
    int n;
    ptl_handle_ni_t ni;
    ptl_process_id_t self;
    ptl_handle_eq_t eq;
    ptl_handle_me_t me;
    ptl_handle_md_t tmd, imd;
    char *src = calloc(1, size + 1), *dst = calloc(1, size + 1);
    double *lat = malloc(sizeof(double) * (size_t)iters);
    if (!src || !dst || !lat)
        pb_die("out of memory");
    PB_CHECK(PtlInit(&n));
    PB_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    PB_CHECK(PtlGetId(ni, &self));
    PB_CHECK(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    PB_CHECK(PtlMEAttach(ni, 1, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 1, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &me));
    ptl_md_t t = {dst, size, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    PB_CHECK(PtlMDAttach(me, t, PTL_RETAIN, &tmd));
    ptl_md_t s = {src, size, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    PB_CHECK(PtlMDBind(ni, s, PTL_RETAIN, &imd));
    int warm = iters / 10;
    for (int i = -warm; i < iters; i++) {
        ptl_event_t ev;
        double t0 = pb_now_ns();
        PB_CHECK(PtlPut(imd, PTL_NO_ACK_REQ, self, 1, 0, 1, 0, 0));
        PB_CHECK(PtlEQWait(eq, &ev));
        double t1 = pb_now_ns();
        if (ev.type != PTL_EVENT_PUT_END || ev.mlength != size) {
            pb_die("unexpected event %s", PtlEventKindStr(ev.type));
        }
        if (i >= 0)
            lat[i] = (t1 - t0) / 1000.0;
    }
    pb_stats st;
    pb_stats_of(lat, iters, &st);
    int ticks = 0;
    for (int i = 0; i < iters; i++)
        ticks += lat[i] >= 4000.0;
    const char *mode = getenv("PTL_OFFLOAD") && !strcmp(getenv("PTL_OFFLOAD"), "0") ? "host" : "offload";
    printf("loopback put+PtlEQWait(PUT_END), %zu B, %s mode, %d iterations\n", size, mode, iters);
    printf("  p50 %.3f us  mean %.3f us  p99 %.3f us  max %.1f us  >=4ms: %d\n",
           st.p50, st.mean, st.p99, st.max, ticks);
    printf("SUMMARY loopback_lat mode=%s size=%zu p50_us=%.3f mean_us=%.3f p99_us=%.3f max_us=%.1f ticks=%d\n",
           mode, size, st.p50, st.mean, st.p99, st.max, ticks);
    PtlNIFini(ni);
    PtlFini();
    free(lat);
    free(src);
    free(dst);
    return 0;
}
