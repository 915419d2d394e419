/*
 * ptl_loopback_lat.c - issue 3's bar: a loopback PtlPut of `size` bytes
 * followed by PtlEQWait for its PUT_END, timed per iteration. Prints p50,
 * mean, p99, max and the count of iterations over 4 ms (a scheduler tick),
 * and one SUMMARY line. The mode comes from the environment (PTL_OFFLOAD).
 *
 *   usage: ptl_loopback_lat [iterations] [size]
 */
#include <portals3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(x)                                                                  \
    do {                                                                          \
        int rc_ = (x);                                                            \
        if (rc_ != PTL_OK) {                                                      \
            fprintf(stderr, "%s: %s\n", #x, PtlErrorStr(rc_));                    \
            return 1;                                                             \
        }                                                                         \
    } while (0)

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
    CHECK(PtlInit(&n));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &self));
    CHECK(PtlEQAlloc(ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    CHECK(PtlMEAttach(ni, 1, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 1, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &me));
    ptl_md_t t = {dst, size, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    CHECK(PtlMDAttach(me, t, PTL_RETAIN, &tmd));
    ptl_md_t s = {src, size, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, s, PTL_RETAIN, &imd));
    double *lat = malloc(sizeof(double) * (size_t)iters);
    int warm = iters / 10;
    for (int i = -warm; i < iters; i++) {
        ptl_event_t ev;
        double t0 = now_ns();
        CHECK(PtlPut(imd, PTL_NO_ACK_REQ, self, 1, 0, 1, 0, 0));
        CHECK(PtlEQWait(eq, &ev));
        double t1 = now_ns();
        if (ev.type != PTL_EVENT_PUT_END || ev.mlength != size) {
            fprintf(stderr, "unexpected event %s\n", PtlEventKindStr(ev.type));
            return 1;
        }
        if (i >= 0)
            lat[i] = (t1 - t0) / 1000.0;
    }
    qsort(lat, (size_t)iters, sizeof *lat, cmp);
    double sum = 0;
    int ticks = 0;
    for (int i = 0; i < iters; i++) {
        sum += lat[i];
        ticks += lat[i] >= 4000.0;
    }
    const char *mode = getenv("PTL_OFFLOAD") && !strcmp(getenv("PTL_OFFLOAD"), "0") ? "host" : "offload";
    printf("loopback put+PtlEQWait(PUT_END), %zu B, %s mode, %d iterations\n", size, mode, iters);
    printf("  p50 %.3f us  mean %.3f us  p99 %.3f us  max %.1f us  >=4ms: %d\n",
           lat[iters / 2], sum / iters, lat[(int)(iters * 0.99)], lat[iters - 1], ticks);
    printf("SUMMARY loopback_lat mode=%s size=%zu p50_us=%.3f mean_us=%.3f p99_us=%.3f max_us=%.1f ticks=%d\n",
           mode, size, lat[iters / 2], sum / iters, lat[(int)(iters * 0.99)], lat[iters - 1], ticks);
    PtlNIFini(ni);
    PtlFini();
    free(lat);
    free(src);
    free(dst);
    return 0;
}
