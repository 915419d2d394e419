/*
 * ptl_trig.c - costs of counting events and triggered operations
 * (<portals3_ext.h>), loopback (a job of one). The mode comes from the
 * environment (PTL_OFFLOAD).
 *
 *   fire   per iteration: PtlTriggeredPut of `size` bytes to self armed on a
 *          counter, PtlCTInc of that counter, PtlCTWait on the target MD's
 *          counter: arm + fire + put + count, p50 and mean
 *   chain  a chain of `links` PtlTriggeredCTInc (counter k fires counter k+1)
 *          armed once, started by one PtlCTInc, waited on at its end: ns per
 *          link (the engine alone runs it)
 *
 *   usage: ptl_trig [iterations] [size] [links]
 */
#include "bench_util.h"
#include <portals3_ext.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 8;
    int links = argc > 3 ? atoi(argv[3]) : 1000;
    if (iters < 1 || links < 1 || links > 4000 || size > 4000) {
        fprintf(stderr, "usage: ptl_trig [iterations >= 1] [size <= 4000] [links 1..4000]\n");
        return 2;
    }
    int n;
    ptl_handle_ni_t ni;
    ptl_process_id_t me;
    CHECK(PtlInit(&n));
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni));
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlACEntry(ni, 0, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, PTL_UID_ANY,
                     PTL_JID_ANY, PTL_PT_INDEX_ANY));
    char *src = calloc(1, size + 1), *dst = calloc(1, size + 1);
    ptl_handle_me_t mh;
    ptl_handle_md_t tmd, imd;
    CHECK(PtlMEAttach(ni, 4, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 7, 0, PTL_RETAIN,
                      PTL_INS_AFTER, &mh));
    ptl_md_t t = {dst, size, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, NULL,
                  PTL_EQ_NONE};
    CHECK(PtlMDAttach(mh, t, PTL_RETAIN, &tmd));
    ptl_md_t s = {src, size, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    CHECK(PtlMDBind(ni, s, PTL_RETAIN, &imd));
    ptl_handle_ct_t go, got;
    CHECK(PtlCTAlloc(ni, &go));
    CHECK(PtlCTAlloc(ni, &got));
    CHECK(PtlMDBindCT(tmd, got, PTL_CT_COMM));

    double *lat = malloc(sizeof(double) * (size_t)iters);
    ptl_ct_event_t one = {1, 0}, ev;
    for (int i = 0; i < iters; i++) {
        double t0 = pb_now_ns();
        CHECK(PtlTriggeredPut(imd, 0, size, PTL_NO_ACK_REQ, me, 4, 0, 7, 0, 0, go,
                              (ptl_size_t)i + 1));
        CHECK(PtlCTInc(go, one));
        CHECK(PtlCTWait(got, (ptl_size_t)i + 1, &ev));
        lat[i] = pb_now_ns() - t0;
    }
    pb_stats st;
    pb_stats_of(lat, iters, &st);
    printf("fire: %d iterations, %zu B: p50 %.0f ns, mean %.0f ns, p99 %.0f ns\n", iters, size,
           st.p50, st.mean, st.p99);

    ptl_handle_ct_t *c = malloc(sizeof *c * (size_t)(links + 1));
    for (int k = 0; k <= links; k++)
        CHECK(PtlCTAlloc(ni, &c[k]));
    for (int k = 0; k < links; k++)
        CHECK(PtlTriggeredCTInc(c[k + 1], one, c[k], 1));
    double t0 = pb_now_ns();
    CHECK(PtlCTInc(c[0], one));
    CHECK(PtlCTWait(c[links], 1, &ev));
    double per = (pb_now_ns() - t0) / links;
    printf("chain: %d links: %.0f ns per link\n", links, per);
    printf("SUMMARY ptl_trig fire_p50_ns=%.0f fire_mean_ns=%.0f chain_link_ns=%.0f\n",
           st.p50, st.mean, per);
    CHECK(PtlNIFini(ni));
    PtlFini();
    free(lat);
    free(c);
    free(src);
    free(dst);
    return 0;
}
