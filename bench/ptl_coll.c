/*
 * ptl_coll - collectives of <p3coll.h> on every rank of the job, the twin of
 * bench/mpi/mpicoll.c (same cases, same method, same output lines).
 *
 * Method (as the Open MPI anchor in coll-anchors.md A.4): each case runs
 * back to back ITER times (1 MiB cases at most 200, the 1 MiB allreduce
 * ITER/50 + 1; after a warm-up of a tenth); the time per call is
 * the maximum over ranks; the run is repeated REPS times and the median is
 * printed. Barrier and allreduce synchronise, so theirs are latencies; a
 * back-to-back bcast is per-call throughput.
 *
 * Overlap: every rank starts a nonblocking 1 MiB (and 8 B) allreduce,
 * computes for a fixed time without calling the library, then waits.
 * compute kept = compute time / (time from start to wait's return); "done"
 * = share of ranks whose collective had completed when the compute ended
 * (one PtlCollTest right after it).
 *
 * Usage: ptlrun -n N [--host-matching] -- ptl_coll [-i ITER] [-r REPS] [-c CASE]
 * -c NAME[:BYTES]: run only that case (barrier, allreduce, bcast, reduce; 8 bytes
 *    unless told; allreduce8 and bcast1m as before), for perf and quick A/B runs.
 * Output: "coll <case> <bytes> <ranks> <us per call>" and
 *         "overlap <bytes> <ranks> <pure us> <compute us> <total us> <kept %> <done %>
 *                  <post us>" (post: the slowest rank's PtlCollIallreduce call, median)
 */
#include "bench_util.h"

#include <p3coll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ptl_handle_coll_t G;
static unsigned N;

static void check(int rc, const char *what)
{
    if (rc != PTL_OK)
        pb_die("%s: %s (%d)", what, PtlErrorStr((unsigned)rc), rc);
}

static double maxall(double v)
{
    double out;
    check(PtlCollAllreduce(G, &v, &out, 1, PTL_COLL_DOUBLE, PTL_COLL_MAX), "allreduce max");
    return out;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { C_BARRIER, C_ALLREDUCE, C_BCAST, C_REDUCE };
static const char *cname[] = {"barrier", "allreduce", "bcast", "reduce"};

static void one(int c, void *a, void *b, size_t bytes)
{
    switch (c) {
    case C_BARRIER: check(PtlCollBarrier(G), "barrier"); break;
    case C_ALLREDUCE:
        check(PtlCollAllreduce(G, a, b, bytes / 8, PTL_COLL_DOUBLE, PTL_COLL_SUM), "allreduce");
        break;
    case C_BCAST: check(PtlCollBcast(G, a, bytes, 0), "bcast"); break;
    case C_REDUCE:
        check(PtlCollReduce(G, a, b, bytes / 8, PTL_COLL_DOUBLE, PTL_COLL_SUM, 0), "reduce");
        break;
    }
}

static void run_case(pb_ctx *ctx, int c, size_t bytes, int iter, int reps)
{
    double *a = calloc(bytes / 8 + 1, 8), *b = calloc(bytes / 8 + 1, 8), t[64];
    if (!a || !b)
        pb_die("out of memory");
    if (bytes >= (1u << 20) && iter > 200)
        iter = 200;
    for (int i = 0; i < iter / 10 + 1; i++)
        one(c, a, b, bytes);
    for (int r = 0; r < reps && r < 64; r++) {
        check(PtlCollBarrier(G), "barrier");
        double t0 = pb_now_us();
        for (int i = 0; i < iter; i++)
            one(c, a, b, bytes);
        t[r] = maxall((pb_now_us() - t0) / iter);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmpd);
    if (ctx->rank == 0)
        printf("coll %s %zu %u %.3f\n", cname[c], bytes, N, t[reps / 2]);
    free(a);
    free(b);
}

static void spin_us(double us)
{
    double t0 = pb_now_us();
    volatile uint64_t x = 0;
    while (pb_now_us() - t0 < us)
        x++;
}

static void overlap(pb_ctx *ctx, size_t bytes, int reps)
{
    double *a = calloc(bytes / 8, 8), *b = calloc(bytes / 8, 8);
    ptl_handle_coll_req_t q;
    double pure[64], tot[64], done[64], post[64], comp;
    if (!a || !b)
        pb_die("out of memory");
    for (int r = 0; r < reps; r++) {
        check(PtlCollBarrier(G), "barrier");
        double t0 = pb_now_us();
        check(PtlCollAllreduce(G, a, b, bytes / 8, PTL_COLL_DOUBLE, PTL_COLL_SUM), "allreduce");
        pure[r] = maxall(pb_now_us() - t0);
    }
    qsort(pure, (size_t)reps, sizeof pure[0], cmpd);
    comp = pure[reps / 2] * 2 + 20; /* a compute phase twice the collective */
    for (int r = 0; r < reps; r++) {
        check(PtlCollBarrier(G), "barrier");
        double t0 = pb_now_us();
        check(PtlCollIallreduce(G, a, b, bytes / 8, PTL_COLL_DOUBLE, PTL_COLL_SUM, &q), "iallreduce");
        post[r] = pb_now_us() - t0;
        spin_us(comp);
        int d = 0;
        check(PtlCollTest(q, &d), "test");
        if (!d)
            check(PtlCollWait(q), "wait");
        tot[r] = maxall(pb_now_us() - t0);
        post[r] = maxall(post[r]);
        double dd = d, sum;
        check(PtlCollAllreduce(G, &dd, &sum, 1, PTL_COLL_DOUBLE, PTL_COLL_SUM), "allreduce");
        done[r] = sum / N;
    }
    double dsum = 0;
    for (int r = 0; r < reps; r++)
        dsum += done[r];
    qsort(tot, (size_t)reps, sizeof tot[0], cmpd);
    qsort(post, (size_t)reps, sizeof post[0], cmpd);
    if (ctx->rank == 0)
        printf("overlap %zu %u %.1f %.1f %.1f %.1f %.1f %.1f\n", bytes, N, pure[reps / 2], comp,
               tot[reps / 2], 100.0 * comp / tot[reps / 2], 100.0 * dsum / reps, post[reps / 2]);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    int iter = 2000, reps = 5, opt;
    const char *only = NULL;
    while ((opt = getopt(argc, argv, "i:r:c:h")) != -1) {
        if (opt == 'i')
            iter = atoi(optarg);
        else if (opt == 'r')
            reps = atoi(optarg);
        else if (opt == 'c')
            only = optarg;
        else
            pb_die("usage: ptl_coll [-i ITER] [-r REPS] [-c NAME[:BYTES]]");
    }
    if (iter < 1 || reps < 1 || reps > 64)
        pb_die("bad -i or -r");
    pb_ctx ctx;
    pb_init(&ctx);
    N = ctx.nranks;
    check(PtlCollGroupCreate(ctx.ni, ctx.ids, N, &G), "group create");
    if (ctx.rank == 0)
        printf("# ptl_coll %s, %u ranks, %d iterations, median of %d\n", ctx.mode, N, iter, reps);
    if (only) {
        /* NAME or NAME:BYTES (barrier, allreduce, bcast, reduce); the three
         * short names of the first version stay */
        char name[32];
        unsigned long bytes = 8;
        if (!strcmp(only, "allreduce8"))
            only = "allreduce:8";
        else if (!strcmp(only, "bcast1m"))
            only = "bcast:1048576";
        if (sscanf(only, "%31[a-z]:%lu", name, &bytes) < 1)
            pb_die("-c: NAME[:BYTES]");
        int c = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(name, cname[k]))
                c = k;
        if (c < 0)
            pb_die("-c: barrier, allreduce, bcast or reduce");
        run_case(&ctx, c, c == C_BARRIER ? 0 : bytes, iter, reps);
        check(PtlCollGroupFree(G), "group free");
        pb_fini(&ctx);
        return 0;
    }
    run_case(&ctx, C_BARRIER, 0, iter, reps);
    run_case(&ctx, C_ALLREDUCE, 8, iter, reps);
    run_case(&ctx, C_BCAST, 8, iter, reps);
    run_case(&ctx, C_BCAST, 65536, iter, reps);
    run_case(&ctx, C_BCAST, 1 << 20, iter, reps);
    run_case(&ctx, C_REDUCE, 8, iter, reps);
    run_case(&ctx, C_ALLREDUCE, 1 << 20, iter / 50 + 1, reps);
    overlap(&ctx, 8, reps);
    overlap(&ctx, 1 << 20, reps);
    check(PtlCollGroupFree(G), "group free");
    pb_fini(&ctx);
    return 0;
}
