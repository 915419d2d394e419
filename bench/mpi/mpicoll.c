/*
 * mpicoll.c - the MPI twin of bench/ptl_coll.c: the same cases, method and
 * output lines with MPI's default collectives (Open MPI: coll/tuned).
 *
 * Build: mpicc -O2 -o mpicoll mpicoll.c
 * Usage: mpirun -n N mpicoll [-i ITER] [-r REPS]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int N, ME;

static double now_us(void) { return MPI_Wtime() * 1e6; }

static double maxall(double v)
{
    double out;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
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
    case C_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case C_ALLREDUCE: MPI_Allreduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case C_BCAST: MPI_Bcast(a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case C_REDUCE: MPI_Reduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
    }
}

static void run_case(int c, size_t bytes, int iter, int reps)
{
    double *a = calloc(bytes / 8 + 1, 8), *b = calloc(bytes / 8 + 1, 8), t[64];
    if (bytes >= (1u << 20) && iter > 200)
        iter = 200;
    for (int i = 0; i < iter / 10 + 1; i++)
        one(c, a, b, bytes);
    for (int r = 0; r < reps && r < 64; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        for (int i = 0; i < iter; i++)
            one(c, a, b, bytes);
        t[r] = maxall((now_us() - t0) / iter);
    }
    qsort(t, (size_t)reps, sizeof t[0], cmpd);
    if (ME == 0)
        printf("coll %s %zu %d %.3f\n", cname[c], bytes, N, t[reps / 2]);
    free(a);
    free(b);
}

static void spin_us(double us)
{
    double t0 = now_us();
    volatile uint64_t x = 0;
    while (now_us() - t0 < us)
        x++;
}

static void overlap(size_t bytes, int reps)
{
    double *a = calloc(bytes / 8, 8), *b = calloc(bytes / 8, 8), pure[64], tot[64], comp, dsum = 0;
    MPI_Request q;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        MPI_Allreduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        pure[r] = maxall(now_us() - t0);
    }
    qsort(pure, (size_t)reps, sizeof pure[0], cmpd);
    comp = pure[reps / 2] * 2 + 20;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        MPI_Iallreduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        spin_us(comp);
        int d = 0;
        MPI_Test(&q, &d, MPI_STATUS_IGNORE);
        if (!d)
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        tot[r] = maxall(now_us() - t0);
        double dd = d, sum;
        MPI_Allreduce(&dd, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        dsum += sum / N;
    }
    qsort(tot, (size_t)reps, sizeof tot[0], cmpd);
    if (ME == 0)
        printf("overlap %zu %d %.1f %.1f %.1f %.1f %.1f\n", bytes, N, pure[reps / 2], comp,
               tot[reps / 2], 100.0 * comp / tot[reps / 2], 100.0 * dsum / reps);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    int iter = 2000, reps = 5, opt;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &N);
    MPI_Comm_rank(MPI_COMM_WORLD, &ME);
    while ((opt = getopt(argc, argv, "i:r:")) != -1) {
        if (opt == 'i')
            iter = atoi(optarg);
        else if (opt == 'r')
            reps = atoi(optarg);
    }
    if (reps < 1 || reps > 64)
        reps = 5;
    if (ME == 0)
        printf("# mpicoll, %d ranks, %d iterations, median of %d\n", N, iter, reps);
    run_case(C_BARRIER, 0, iter, reps);
    run_case(C_ALLREDUCE, 8, iter, reps);
    run_case(C_BCAST, 8, iter, reps);
    run_case(C_BCAST, 65536, iter, reps);
    run_case(C_BCAST, 1 << 20, iter, reps);
    run_case(C_REDUCE, 8, iter, reps);
    run_case(C_ALLREDUCE, 1 << 20, iter / 50 + 1, reps);
    overlap(8, reps);
    overlap(1 << 20, reps);
    MPI_Finalize();
    return 0;
}
