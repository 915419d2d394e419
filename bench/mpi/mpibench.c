/*
 * mpibench.c - the MPI side of bench/run-all: the same ping-pong, bandwidth
 * and message-rate measurements as ptl_pingpong, ptl_bw and ptl_msgrate, with
 * the same sizes, time bounds, statistics and CSV columns, for Open MPI and
 * MPICH over shared memory.
 *
 * Adapted from mpibench.c in shared/docs/peers-mpi.md, Appendix B ("tiny
 * two-rank MPI benchmarks for shared-memory anchors", written for that report;
 * it carries no licence note of its own). Changes: NetPIPE-style size list,
 * time-bounded sizes, p50/mean/p99/max/outliers, sampled data verification,
 * bidirectional bandwidth, CSV output.
 *
 * Build: mpicc -O2 -o mpibench mpibench.c   (bench/run-all does this)
 * Usage: mpirun -n 2 ... mpibench MODE [options]
 *   MODE lat   blocking MPI_Send/MPI_Recv ping-pong; half round trip (us);
 *              --ssend: MPI_Ssend instead (a send that completes once its
 *              receive has matched: MPI's counterpart of a put with an ACK);
 *              with 4 or more ranks, pairs (0,1), (2,3), ... at once (rank 0's
 *              pair reported, the others on "# pair" lines; an odd count's
 *              last rank idles); --threads N (1-4): N ping-pongs per pair at
 *              once, one per thread, each on its own communicator
 *              (MPI_THREAD_MULTIPLE), the samples of rank 0's threads
 *              together: ptl_patterns --threads and its pairs; --think US:
 *              the pair's A sleeps US before each round trip (untimed), B
 *              right after its answer, as ptl_patterns --think (sleep mode)
 *        bw    window of W MPI_Isend/MPI_Irecv + MPI_Waitall, 0-byte ack per
 *              window (uni), or both directions at once without ack (bi)
 *        rate  8-byte messages, window 64, ack per window (1 pair)
 *   -o FILE  append CSV (header if new)      -i NAME  impl column (default mpi)
 *   -t SEC   time per size (lat 0.1, bw 0.2, rate 1.0)
 *   --min SIZE --max SIZE --sizes LIST --no-perturb   (lat/bw sizes)
 *   -W N     window (bw 16, rate 64)         -D uni|bi|both (bw)
 *   -s SIZE  rate message size (8)           -n N  max iterations
 *   -q       no table
 * Rank 0 decides when a size ends and tells rank 1 through the message tag.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define TAG_DATA 1
#define TAG_LAST 2 /* the last message of a size (rank 0 -> 1) */
#define TAG_VERIFY 4
#define TAG_ACK 8
#define MAX_SIZES 256
#define MAX_THREADS 4

static int rank, nranks, peer;
static const char *csv_path, *impl = "mpi";
static double tsize = -1;
static size_t sizes[MAX_SIZES];
static int nsizes, perturb = 1, window = -1, quiet, do_uni = 1, do_bi = 1, nthreads = 1;
/* lat: MPI_Send, or MPI_Ssend with --ssend (same signature) */
static int (*lat_send)(const void *, int, MPI_Datatype, int, int, MPI_Comm) = MPI_Send;
static size_t smin = 0, smax = 0, rsize = 8;
static const char *size_list;
static long maxiters = -1, think_us;

/* --think: a pause in nanosleep (ptl_patterns' think(), sleep mode) */
static void think(void)
{
    if (think_us > 0) {
        struct timespec ts = {think_us / 1000000, (think_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pat_word(uint64_t seed, uint64_t k)
{
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (k + 1) * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static void fill(unsigned char *p, size_t len, uint64_t seed)
{
    for (size_t k = 0; k * 8 < len; k++) {
        uint64_t w = pat_word(seed, k);
        memcpy(p + k * 8, &w, len - k * 8 < 8 ? len - k * 8 : 8);
    }
}

static int check(const unsigned char *p, size_t len, uint64_t seed)
{
    for (size_t k = 0; k * 8 < len; k++) {
        uint64_t w = pat_word(seed, k), g = 0;
        size_t n = len - k * 8 < 8 ? len - k * 8 : 8;
        memcpy(&g, p + k * 8, n);
        if (n < 8)
            w &= (1ull << (8 * n)) - 1;
        if (g != w)
            return 1;
    }
    return 0;
}

static int parse_size(const char *s, size_t *v)
{
    char *end;
    unsigned long long x = strtoull(s, &end, 0);
    if (end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        x <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        x <<= 20, end++;
    long long adj = 0; /* "4K-3", "1M+3" */
    if (*end == '+' || *end == '-') {
        char *e2;
        adj = strtoll(end, &e2, 10);
        if (e2 == end + 1)
            return -1;
        end = e2;
    }
    if (*end || (long long)x + adj < 0)
        return -1;
    *v = (size_t)((long long)x + adj);
    return 0;
}

static int cmpsz(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Same list as bench_util.c's pb_size_list. */
static int size_list_gen(size_t lo, size_t hi, int pert, size_t *out)
{
    int n = 0;
    if (lo == 0)
        out[n++] = 0;
    for (size_t p = 1; p <= hi; p <<= 1)
        for (int k = -1; k <= 1; k++) {
            long long c = (long long)p + 3 * k;
            if ((!pert && k) || c < (long long)lo || c > (long long)hi || c < 0 || n >= MAX_SIZES)
                continue;
            out[n++] = (size_t)c;
        }
    qsort(out, (size_t)n, sizeof *out, cmpsz);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || out[m - 1] != out[i])
            out[m++] = out[i];
    return m;
}

static FILE *csv_open(const char *header)
{
    if (!csv_path || rank != 0)
        return NULL;
    struct stat st;
    int fresh = stat(csv_path, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(csv_path, "a");
    if (!f) {
        perror(csv_path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (fresh)
        fprintf(f, "%s\n", header);
    return f;
}

static const char *size_str(size_t s, char *b, size_t n)
{
    size_t p = 1;
    while (p * 2 <= s + 3)
        p *= 2;
    long long d = (long long)s - (long long)p;
    if (s >= 1024 && d >= -3 && d <= 3) {
        const char *u = p >= (1u << 20) ? "M" : "K";
        size_t v = p >= (1u << 20) ? p >> 20 : p >> 10;
        if (d)
            snprintf(b, n, "%zu%s%+lld", v, u, d);
        else
            snprintf(b, n, "%zu%s", v, u);
    } else
        snprintf(b, n, "%zu", s);
    return b;
}

/* ---- lat ------------------------------------------------------------------ */

/* One thread's ping-pong at one size: the pair's even rank ("A", rank 0 of
 * the pair) times each round trip and decides when the size ends, telling
 * its peer through the tag; the odd one ("B") answers. Each thread of a rank
 * has its own communicator (a dup of MPI_COMM_WORLD), so the threads' messages
 * never match each other's receives, as two independent exchanges in one
 * client. */
struct lat_thr {
    pthread_t th;
    MPI_Comm comm;
    size_t sz;
    double *t; /* A: the timed half round trips (us) */
    long cap, nt, verified, errors;
    unsigned char *sbuf, *rbuf;
};

static void *lat_size(void *arg)
{
    struct lat_thr *L = arg;
    size_t sz = L->sz;
    int n = (int)sz;
    const long vevery = 64, warm = 100;
    unsigned char *sbuf = L->sbuf, *rbuf = L->rbuf;
    L->nt = L->verified = L->errors = 0;
    if (!(rank & 1)) {
        double start = now_ns(), tm0 = 0;
        int warming = 1;
        long k = 0, wl = warm;
        for (long it = 0;; it++) {
            double a = now_ns();
            if (warming && (wl <= 0 || a - start > tsize * 0.2e9)) {
                warming = 0;
                tm0 = a;
            }
            int tag = TAG_DATA, timed = 0;
            if (warming)
                wl--;
            else {
                if (k % vevery == 0)
                    tag |= TAG_VERIFY;
                timed = !(tag & TAG_VERIFY);
                long ns = L->nt + timed;
                if (ns >= L->cap || (a - tm0 >= tsize * 1e9 && ns >= 10 && k >= 1))
                    tag |= TAG_LAST;
                k++;
            }
            if (tag & TAG_VERIFY)
                fill(sbuf, sz, (uint64_t)it * 2);
            think();
            a = now_ns();
            lat_send(sbuf, n, MPI_BYTE, peer, tag, L->comm);
            MPI_Recv(rbuf, n, MPI_BYTE, peer, MPI_ANY_TAG, L->comm, MPI_STATUS_IGNORE);
            double b = now_ns();
            if (tag & TAG_VERIFY) {
                if (sz) {
                    L->verified++;
                    L->errors += check(rbuf, sz, (uint64_t)it * 2 + 1);
                }
            } else if (timed)
                L->t[L->nt++] = (b - a) / 2000.0;
            if (tag & TAG_LAST)
                break;
        }
    } else {
        for (long it = 0;; it++) {
            MPI_Status st;
            MPI_Recv(rbuf, n, MPI_BYTE, peer, MPI_ANY_TAG, L->comm, &st);
            if (st.MPI_TAG & TAG_VERIFY) {
                if (sz) {
                    L->verified++;
                    L->errors += check(rbuf, sz, (uint64_t)it * 2);
                }
                fill(sbuf, sz, (uint64_t)it * 2 + 1);
            }
            lat_send(sbuf, n, MPI_BYTE, peer, TAG_DATA, L->comm);
            if (st.MPI_TAG & TAG_LAST)
                break;
            think();
        }
    }
    return NULL;
}

static void lat(void)
{
    FILE *csv = csv_open("bench,impl,variant,size,iters,p50_us,mean_us,p99_us,max_us,outliers,"
                         "mbps,verified,errors");
    size_t maxsz = 1;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxsz)
            maxsz = sizes[i];
    long cap = maxiters > 0 ? maxiters : 100000;
    struct lat_thr L[MAX_THREADS];
    for (int k = 0; k < nthreads; k++) {
        L[k].cap = cap;
        L[k].t = malloc(sizeof(double) * (size_t)(cap + 1));
        L[k].sbuf = malloc(maxsz);
        L[k].rbuf = malloc(maxsz);
        memset(L[k].sbuf, 1, maxsz);
        memset(L[k].rbuf, 0, maxsz);
        MPI_Comm_dup(MPI_COMM_WORLD, &L[k].comm); /* in order: every rank makes the same */
    }
    double *t = malloc(sizeof(double) * (size_t)(cap * nthreads + 1));
    if (rank == 0 && !quiet)
        printf("%-4s %9s %8s %10s %10s %10s %10s %6s %10s %5s %s\n", "op", "size", "iters", "p50",
               "mean", "p99", "max", "outl", "MB/s", "verif", "data");
    long total_err = 0;
    for (int i = 0; i < nsizes; i++) {
        size_t sz = sizes[i];
        long nt = 0, verified = 0, errors = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (peer != rank) { /* a rank without a pair (an odd count's last) only counts */
            for (int k = 0; k < nthreads; k++)
                L[k].sz = sz;
            if (nthreads == 1)
                lat_size(&L[0]);
            else {
                for (int k = 0; k < nthreads; k++)
                    if (pthread_create(&L[k].th, NULL, lat_size, &L[k])) {
                        fprintf(stderr, "mpibench: pthread_create failed\n");
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                for (int k = 0; k < nthreads; k++)
                    pthread_join(L[k].th, NULL);
            }
            for (int k = 0; k < nthreads; k++) { /* A: every thread's samples together */
                memcpy(t + nt, L[k].t, sizeof(double) * (size_t)L[k].nt);
                nt += L[k].nt;
                verified += L[k].verified;
                errors += L[k].errors;
            }
        }
        long ve[2] = {verified, errors}, sum[2];
        MPI_Reduce(ve, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        qsort(t, (size_t)nt, sizeof *t, cmpd);
        double s = 0;
        long outl = 0;
        for (long j = 0; j < nt; j++)
            s += t[j];
        double mean = nt ? s / nt : 0, p50 = nt ? t[nt / 2] : 0;
        /* The other pairs' figures, each A's (the table reports rank 0's pair,
         * as ptl_patterns does; the rest on "# pair" lines) */
        double mine[2] = {mean, p50}, *all = rank == 0 ? malloc(sizeof(double) * 2 * (size_t)nranks) : NULL;
        MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (long j = 0; j < nt; j++)
                outl += t[j] > 10 * p50;
            double p99 = nt ? t[(long)(nt * 0.99) < nt ? (long)(nt * 0.99) : nt - 1] : 0;
            double mx = nt ? t[nt - 1] : 0, mbps = mean > 0 ? (double)sz / mean : 0;
            char b[32];
            total_err += sum[1];
            if (!quiet)
                printf("%-4s %9s %8ld %10.3f %10.3f %10.3f %10.1f %6ld %10.1f %5ld %s\n", "send",
                       size_str(sz, b, sizeof b), nt, p50, mean, p99, mx, outl, mbps, sum[0],
                       sum[1] ? "FAILED" : "ok");
            for (int r = 2; r + 1 < nranks; r += 2)
                printf("# pair %d-%d: size %zu mean %.3f p50 %.3f us\n", r, r + 1, sz,
                       all[2 * r], all[2 * r + 1]);
            if (csv)
                fprintf(csv, "pingpong,%s,%s,%zu,%ld,%.4f,%.4f,%.4f,%.3f,%ld,%.6g,%ld,%ld\n", impl,
                        lat_send == MPI_Ssend ? "ssend" : "put", sz, nt, p50, mean, p99, mx, outl,
                        mbps, sum[0], sum[1]);
            fflush(stdout);
        }
        free(all);
    }
    if (csv)
        fclose(csv);
    for (int k = 0; k < nthreads; k++) {
        MPI_Comm_free(&L[k].comm);
        free(L[k].t);
        free(L[k].sbuf);
        free(L[k].rbuf);
    }
    free(t);
    if (total_err)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- window (bw / rate) ---------------------------------------------------- */

/* One phase; returns rounds (rank 0 decides the last one); *secs = rank 0's time. */
static long window_phase(unsigned char *sbuf, unsigned char *rbuf, size_t sz, int win, int bidir,
                         double budget, long minr, long maxr, double *secs)
{
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t)win);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * 2 * (size_t)win);
    char ack = 0;
    int n = (int)sz;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    long r = 0;
    for (;;) {
        r++;
        int last = 0, nreq = 0;
        if (rank == 0) {
            last = r >= maxr || (r >= minr && now_ns() - t0 >= budget * 1e9);
            if (bidir)
                for (int w = 0; w < win; w++)
                    MPI_Irecv(rbuf, n, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &req[nreq++]);
            for (int w = 0; w < win; w++)
                MPI_Isend(sbuf, n, MPI_BYTE, peer, (last && w == win - 1) ? TAG_LAST : TAG_DATA,
                          MPI_COMM_WORLD, &req[nreq++]);
            MPI_Waitall(nreq, req, sts); /* (not MPI_STATUSES_IGNORE: gcc 12 + MPICH warn) */
            if (!bidir)
                MPI_Recv(&ack, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < win; w++)
                MPI_Irecv(rbuf, n, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &req[nreq++]);
            if (bidir)
                for (int w = 0; w < win; w++)
                    MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[nreq++]);
            MPI_Waitall(nreq, req, sts);
            for (int w = 0; w < win; w++)
                if (sts[w].MPI_TAG == TAG_LAST)
                    last = 1;
            if (!bidir)
                MPI_Send(&ack, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
        } else {
            last = 1;
        }
        if (last)
            break;
    }
    *secs = (now_ns() - t0) / 1e9;
    free(req);
    free(sts);
    return r;
}

static long verify_one(unsigned char *sbuf, unsigned char *rbuf, size_t sz, int bidir, long *ver)
{
    long err = 0;
    *ver = 0;
    int n = (int)sz;
    memset(rbuf, 0, sz);
    fill(sbuf, sz, sz * 7 + (size_t)rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank <= 1) {
        MPI_Request rq[2];
        MPI_Status st2[2];
        int k = 0;
        if (rank == 1 || bidir)
            MPI_Irecv(rbuf, n, MPI_BYTE, peer, TAG_VERIFY, MPI_COMM_WORLD, &rq[k++]);
        if (rank == 0 || bidir)
            MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_VERIFY, MPI_COMM_WORLD, &rq[k++]);
        MPI_Waitall(k, rq, st2);
        if ((rank == 1 || bidir) && sz) {
            (*ver)++;
            err += check(rbuf, sz, sz * 7 + (size_t)peer);
        }
    }
    return err;
}

static void bw(void)
{
    FILE *csv = csv_open("bench,impl,variant,size,window,rounds,mbps,msgs_per_s,seconds,"
                         "verified,errors");
    size_t maxsz = 1;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxsz)
            maxsz = sizes[i];
    unsigned char *sbuf = malloc(maxsz), *rbuf = malloc(maxsz);
    memset(sbuf, 2, maxsz);
    memset(rbuf, 0, maxsz);
    long maxr = maxiters > 0 ? maxiters : 1000000, total_err = 0;
    if (rank == 0 && !quiet)
        printf("%-4s %9s %3s %8s %12s %14s %8s %5s %s\n", "dir", "size", "W", "rounds", "MB/s",
               "msgs/s", "seconds", "verif", "data");
    for (int d = 0; d < 2; d++) {
        if ((d == 0 && !do_uni) || (d == 1 && !do_bi))
            continue;
        for (int i = 0; i < nsizes; i++) {
            size_t sz = sizes[i];
            double secs;
            window_phase(sbuf, rbuf, sz, window, d, tsize * 0.2, 2, maxr, &secs);
            long rounds = window_phase(sbuf, rbuf, sz, window, d, tsize, 3, maxr, &secs);
            long ver, err = verify_one(sbuf, rbuf, sz, d, &ver), sum[2], ve[2] = {ver, err};
            MPI_Reduce(ve, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                double msgs = (double)rounds * window * (d ? 2 : 1);
                double mbps = (double)sz * msgs / secs / 1e6;
                char b[32];
                total_err += sum[1];
                if (!quiet)
                    printf("%-4s %9s %3d %8ld %12.1f %14.0f %8.3f %5ld %s\n", d ? "bi" : "uni",
                           size_str(sz, b, sizeof b), window, rounds, mbps, msgs / secs, secs,
                           sum[0], sum[1] ? "FAILED" : "ok");
                if (csv)
                    fprintf(csv, "bw,%s,%s,%zu,%d,%ld,%.6g,%.0f,%.6f,%ld,%ld\n", impl,
                            d ? "bi" : "uni", sz, window, rounds, mbps, msgs / secs, secs, sum[0],
                            sum[1]);
                fflush(stdout);
            }
        }
    }
    if (csv)
        fclose(csv);
    free(sbuf);
    free(rbuf);
    if (total_err)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

static void rate(void)
{
    FILE *csv = csv_open("bench,impl,variant,size,window,pairs,msgs_per_s,min_pair_msgs_per_s,"
                         "msgs,seconds,verified,errors");
    unsigned char *sbuf = malloc(rsize + 1), *rbuf = malloc(rsize + 1);
    memset(sbuf, 3, rsize + 1);
    long maxr = maxiters > 0 ? maxiters : 10000000;
    double secs;
    window_phase(sbuf, rbuf, rsize, window, 0, tsize * 0.2, 2, maxr, &secs);
    long rounds = window_phase(sbuf, rbuf, rsize, window, 0, tsize, 3, maxr, &secs);
    long ver, err = verify_one(sbuf, rbuf, rsize, 0, &ver), sum[2], ve[2] = {ver, err};
    MPI_Reduce(ve, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double msgs = (double)rounds * window, r = msgs / secs;
        if (!quiet) {
            printf("%5s %6s %3s %14s %14s %12s %8s %5s %s\n", "pairs", "size", "W", "msgs/s",
                   "slowest pair", "messages", "seconds", "verif", "data");
            printf("%5d %6zu %3d %14.0f %14.0f %12.0f %8.3f %5ld %s\n", 1, rsize, window, r, r,
                   msgs, secs, sum[0], sum[1] ? "FAILED" : "ok");
        }
        if (csv)
            fprintf(csv, "msgrate,%s,pairs1,%zu,%d,1,%.0f,%.0f,%.0f,%.6f,%ld,%ld\n", impl, rsize,
                    window, r, r, msgs, secs, sum[0], sum[1]);
    }
    if (csv)
        fclose(csv);
    free(sbuf);
    free(rbuf);
    if (rank == 0 && sum[1])
        MPI_Abort(MPI_COMM_WORLD, 1);
}

static void usage(void)
{
    printf("usage: mpirun -n 2 mpibench lat|bw|rate [-o FILE] [-i NAME] [-t SEC] [--min S]\n"
           "       [--max S] [--sizes LIST] [--no-perturb] [-W N] [-D uni|bi|both] [-s SIZE]\n"
           "       [-n N] [-q] [--ssend] [--threads N] [--think US]   (see the comment at the top of bench/mpi/mpibench.c)\n");
}

int main(int argc, char **argv)
{
    /* --threads N > 1 asks for MPI_THREAD_MULTIPLE (looked for before MPI_Init:
     * the level is chosen there) */
    int want_mt = 0;
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--threads") && atoi(argv[i + 1]) > 1)
            want_mt = 1;
    int provided = MPI_THREAD_SINGLE;
    if (want_mt)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "-h") || !strcmp(mode, "--help") || !*mode) {
        if (rank == 0)
            usage();
        MPI_Finalize();
        return *mode ? 0 : 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (!strcmp(a, "-o") && v)
            csv_path = v;
        else if (!strcmp(a, "-i") && v)
            impl = v;
        else if (!strcmp(a, "-t") && v)
            tsize = atof(v);
        else if (!strcmp(a, "--min") && v)
            used = parse_size(v, &smin) == 0;
        else if (!strcmp(a, "--max") && v)
            used = parse_size(v, &smax) == 0;
        else if (!strcmp(a, "--sizes") && v)
            size_list = v;
        else if (!strcmp(a, "-W") && v)
            window = atoi(v);
        else if (!strcmp(a, "-s") && v)
            used = parse_size(v, &rsize) == 0;
        else if (!strcmp(a, "-n") && v)
            maxiters = atol(v);
        else if (!strcmp(a, "-D") && v) {
            do_uni = !strcmp(v, "uni") || !strcmp(v, "both");
            do_bi = !strcmp(v, "bi") || !strcmp(v, "both");
        } else if (!strcmp(a, "--no-perturb")) {
            perturb = 0;
            continue;
        } else if (!strcmp(a, "-q")) {
            quiet = 1;
            continue;
        } else if (!strcmp(a, "--think") && v) {
            think_us = atol(v);
            used = think_us >= 0;
        } else if (!strcmp(a, "--threads") && v) {
            nthreads = atoi(v);
            used = nthreads >= 1 && nthreads <= MAX_THREADS;
        } else if (!strcmp(a, "--ssend")) {
            lat_send = MPI_Ssend;
            continue;
        } else
            used = 0;
        if (!used) {
            if (rank == 0) {
                fprintf(stderr, "mpibench: bad option '%s'\n", a);
                usage();
            }
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "mpibench: needs 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    if (want_mt && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "mpibench: --threads needs MPI_THREAD_MULTIPLE (this MPI gives %d)\n",
                    provided);
        MPI_Finalize();
        return 2;
    }
    peer = rank == 0 ? 1 : rank == 1 ? 0 : rank;
    int is_bw = !strcmp(mode, "bw"), is_lat = !strcmp(mode, "lat"), is_rate = !strcmp(mode, "rate");
    if (tsize < 0)
        tsize = is_lat ? 0.1 : is_bw ? 0.2 : 1.0;
    if (window < 0)
        window = is_rate ? 64 : 16;
    if (size_list) {
        char *d = strdup(size_list), *sv = NULL;
        for (char *t = strtok_r(d, ",", &sv); t && nsizes < MAX_SIZES; t = strtok_r(NULL, ",", &sv))
            if (parse_size(t, &sizes[nsizes++]))
                MPI_Abort(MPI_COMM_WORLD, 2);
        free(d);
    } else if (is_lat) {
        nsizes = size_list_gen(smin, smax ? smax : 8u << 20, perturb, sizes);
    } else {
        nsizes = size_list_gen(smin ? smin : 1, smax ? smax : 4u << 20, 0, sizes);
    }
    if (rank == 0 && !quiet) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int l;
        MPI_Get_library_version(v, &l);
        char *nl = strchr(v, '\n');
        if (nl)
            *nl = 0;
        printf("# mpibench %s (%s): %d ranks, rank 0 on cpu %d; %s\n", mode, impl, nranks,
               sched_getcpu(), v);
    }
    if (nthreads > 1 && !is_lat) {
        if (rank == 0)
            fprintf(stderr, "mpibench: --threads is a lat option\n");
        MPI_Finalize();
        return 2;
    }
    if (is_lat) {
        if (nranks >= 4 && (rank ^ 1) < nranks)
            peer = rank ^ 1; /* pairs (0,1), (2,3), ... */
        lat();
    } else if (is_bw)
        bw();
    else if (is_rate)
        rate();
    else {
        if (rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
