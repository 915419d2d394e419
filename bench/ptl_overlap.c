/*
 * ptl_overlap.c - how much application compute proceeds while messages are in
 * flight (the post-work-wait method of COMB / osu_*_overlap), offload vs
 * host-matching.
 *
 * One iteration: rank 1 starts its clock and puts a 0-byte "go" to rank 0;
 * rank 0 starts its clock, puts M messages of SIZE bytes to rank 1, and waits
 * for their SEND_ENDs; rank 1 waits for their PUT_ENDs. In scenario
 *
 *   send  rank 0 computes for T us between its puts and its wait (timed on rank 0)
 *   recv  rank 1 computes for T us between its "go" and its wait (timed on rank 1)
 *
 * The compute is a calibrated busy loop (a fixed amount of work, so cycles
 * stolen by a NIC thread on the same core make it longer). Per size and
 * scenario three phases: communication alone (t_comm), compute alone
 * (t_comp, T chosen = t_comm), and both (t_total); p50 of each.
 *   overlap% = 100 * (t_comm + t_comp - t_total) / min(t_comm, t_comp),
 * clipped to 0..100: 100 means the communication hid completely behind the
 * compute. With a NIC thread (offload) the receiving engine can pull a
 * rendezvous put while the application computes; in host-matching mode only
 * a Ptl call moves it. A job of one puts to itself (scenario "self").
 */
#include "bench_util.h"

#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA (PB_PT_FIRST_FREE + 0)
#define PT_GO (PB_PT_FIRST_FREE + 1)
#define MAX_SIZES 32

static struct {
    const char *csv;
    size_t sizes[MAX_SIZES];
    int nsizes, count, quiet;
    double tphase;
    long maxiters;
} o;

static pb_ctx C;
static int self_mode;
static ptl_process_id_t peer;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd;
static unsigned char *sbuf, *rbuf;
static size_t maxsz;
static pb_flow F; /* event counters (bench_util.h) */
static double work_per_us;

static void pump(void) { pb_flow_pump(eq, &F, PT_DATA, PT_GO); }

static uint64_t sink;

static void compute(uint64_t n)
{
    uint64_t x = sink + 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x));
    }
    sink = x;
}

static void calibrate(void)
{
    double best = 0;
    for (int r = 0; r < 5; r++) {
        uint64_t n = 2000000;
        double a = pb_now_ns();
        compute(n);
        double us = (pb_now_ns() - a) / 1000.0;
        if (us > 0 && (double)n / us > best)
            best = (double)n / us;
    }
    work_per_us = best;
}


/* One phase of iterations; my own per-iteration times go to lat (us).
 * work0/work1: compute on rank 0 / rank 1 (0 = none); comm 0: no messages. */
static long phase(size_t s, int comm, uint64_t work0, uint64_t work1, double *lat)
{
    long n = 0;
    F.n_send = F.n_recv = F.n_ctl = F.sends_posted = 0;
    F.stop_seen = 0;
    pb_barrier(&C);
    if (!comm) { /* compute alone, on whichever rank computes */
        uint64_t w = C.rank == 0 ? work0 : C.rank == 1 ? work1 : 0;
        if (!w)
            return 0;
        double start = pb_now_ns();
        for (long it = 0; it < o.maxiters; it++) {
            double a = pb_now_ns();
            compute(w);
            double b = pb_now_ns();
            if (it >= 2)
                lat[n++] = (b - a) / 1000.0;
            if (n >= 5 && b - start > o.tphase * 1e9)
                break;
        }
        return n;
    }
    double start = pb_now_ns();
    if (C.rank == 0) {
        for (long it = 0;; it++) {
            if (!self_mode)
                while (F.n_ctl < it + 1)
                    pump();
            double a = pb_now_ns();
            int last = it + 1 >= o.maxiters + 2 || (it >= 7 && a - start > o.tphase * 1e9);
            for (int m = 0; m < o.count; m++) {
                PB_CHECK(PtlPutRegion(smd, 0, s, PTL_NO_ACK_REQ, peer, PT_DATA, 0, 0, 0,
                                      (last && m == o.count - 1) ? 1 : 0));
                F.sends_posted++;
            }
            if (work0)
                compute(work0);
            while (F.n_send < F.sends_posted || (self_mode && F.n_recv < (it + 1) * o.count))
                pump();
            double b = pb_now_ns();
            if (it >= 2)
                lat[n++] = (b - a) / 1000.0;
            if (last)
                break;
        }
    } else if (C.rank == 1) {
        for (long it = 0;; it++) {
            double a = pb_now_ns();
            PB_CHECK(PtlPut(C.zero_md, PTL_NO_ACK_REQ, peer, PT_GO, 0, 0, 0, 0));
            if (work1)
                compute(work1);
            while (F.n_recv < (it + 1) * o.count)
                pump();
            double b = pb_now_ns();
            if (it >= 2)
                lat[n++] = (b - a) / 1000.0;
            if (F.stop_seen)
                break;
        }
    }
    return n;
}

static double p50_of(double *v, long n)
{
    pb_stats st;
    pb_stats_of(v, n, &st);
    return st.p50;
}

static FILE *csv;
static const char *sname[3] = {"send", "recv", "self"};

static void run(size_t s, int scen, double *lat)
{
    /* scen 0: send (rank 0 computes), 1: recv (rank 1 computes), 2: self */
    int trank = scen == 1 ? 1 : 0;
    double *all = C.rank == 0 ? malloc(sizeof(double) * 4 * C.nranks) : NULL;
    /* 1. communication alone */
    long n = phase(s, 1, 0, 0, lat);
    double mine[4] = {n ? p50_of(lat, n) : 0, 0, 0, 0};
    pb_gather(&C, mine, 1, all);
    double T[1] = {C.rank == 0 ? all[trank] : 0};
    pb_bcast(&C, T, 1); /* compute for as long as the communication took */
    uint64_t work = (uint64_t)(T[0] * work_per_us);
    if (work < 1)
        work = 1;
    uint64_t w0 = trank == 0 ? work : 0, w1 = trank == 1 ? work : 0;
    /* 2. compute alone */
    n = phase(s, 0, w0, w1, lat);
    mine[1] = n ? p50_of(lat, n) : 0;
    /* 3. both */
    n = phase(s, 1, w0, w1, lat);
    mine[2] = n ? p50_of(lat, n) : 0;
    mine[3] = (double)n;
    pb_gather(&C, mine, 4, all);
    if (C.rank == 0) {
        double *a = all + 4 * trank;
        double tcomm = a[0], tcomp = a[1], ttot = a[2];
        double den = tcomm < tcomp ? tcomm : tcomp;
        double ov = den > 0 ? 100.0 * (tcomm + tcomp - ttot) / den : 0;
        if (ov < 0)
            ov = 0;
        if (ov > 100)
            ov = 100;
        char sz[32];
        if (!o.quiet)
            printf("%-5s %8s %3d %8ld %11.2f %11.2f %11.2f %9.1f\n", sname[scen],
                   pb_size_str(s, sz, sizeof sz), o.count, (long)a[3], tcomm, tcomp, ttot, ov);
        if (csv)
            fprintf(csv, "overlap,%s,%s,%zu,%d,%ld,%.3f,%.3f,%.3f,%.2f\n", C.impl, sname[scen], s,
                    o.count, (long)a[3], tcomm, tcomp, ttot, ov);
        fflush(stdout);
    }
    free(all);
}

static void dump(FILE *f) { pb_flow_print(f, C.rank, &F, "go"); }

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n 2 [ptlrun options] ptl_overlap [options]\n"
"Compute/communication overlap (post, compute T, wait), offload vs host.\n"
"  -o FILE       append CSV rows to FILE (header if new)\n"
"  --sizes LIST  message sizes (default 64K,256K,1M,4M)\n"
"  -m M          messages per iteration (default 1)\n"
"  -t SEC        time per phase (default 0.2; three phases per size and scenario)\n"
"  -n N          at most N iterations per phase (default 100000)\n"
"  -q            no table (CSV only)\n"
"  -h, --help    this text\n"
"Columns: scenario (send: rank 0 computes; recv: rank 1 computes), size, M,\n"
"t_comm, t_comp, t_total (p50, us) and overlap%% = 100*(t_comm+t_comp-t_total)\n"
"/ min(t_comm,t_comp), clipped to 0..100.\n");
}

int main(int argc, char **argv)
{
    o.count = 1;
    o.tphase = 0.2;
    o.maxiters = 100000;
    o.nsizes = pb_parse_sizes("64K,256K,1M,4M", o.sizes, MAX_SIZES);
    static const struct option lo_opts[] = {{"sizes", 1, 0, 1}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:m:t:n:qh", lo_opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.csv = optarg; break;
        case 'm': o.count = (int)pb_atol_or_die("-m", optarg); break;
        case 't': o.tphase = pb_atof_or_die("-t", optarg); break;
        case 'n': o.maxiters = pb_atol_or_die("-n", optarg); break;
        case 'q': o.quiet = 1; break;
        case 1:
            o.nsizes = pb_parse_sizes(optarg, o.sizes, MAX_SIZES);
            if (o.nsizes <= 0)
                pb_die("bad --sizes '%s'", optarg);
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        usage(stderr);
        exit(2);
    }
    if (o.count < 1 || o.count > 256)
        pb_die("-m: 1..256");
    if (o.maxiters < 8)
        o.maxiters = 8;
    pb_init(&C);
    pb_watchdog_start(&C, dump, o.tphase);
    self_mode = C.nranks == 1;
    peer = C.ids[self_mode ? 0 : (C.rank == 0 ? 1 : 0)];
    maxsz = 1;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > maxsz)
            maxsz = o.sizes[i];
    sbuf = pb_alloc(maxsz);
    rbuf = pb_alloc(maxsz);
    PB_CHECK(PtlEQAlloc(C.ni, 8 * (size_t)o.count + 1024, PTL_EQ_HANDLER_NONE, &eq));
    ptl_md_t sd = {sbuf, maxsz, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
    PB_CHECK(PtlMDBind(C.ni, sd, PTL_RETAIN, &smd));
    pb_post_recv(&C, PT_DATA, rbuf, maxsz, eq);
    pb_post_recv(&C, PT_GO, rbuf, 0, eq);
    calibrate();
    double info[2] = {sched_getcpu(), work_per_us}, *all = malloc(sizeof(double) * 2 * C.nranks);
    pb_gather(&C, info, 2, all);
    if (C.rank == 0) {
        csv = pb_csv_open(o.csv, "bench,impl,variant,size,count,iters,comm_us,comp_us,total_us,"
                                 "overlap_pct");
        if (!o.quiet) {
            printf("# ptl_overlap: %s mode%s, rank 0 on cpu %d", C.mode,
                   self_mode ? " (job of one: puts to itself)" : "", (int)all[0]);
            if (!self_mode)
                printf(", rank 1 on cpu %d", (int)all[2]);
            printf("; compute loop %.0f steps/us\n", all[1]);
            printf("%-5s %8s %3s %8s %11s %11s %11s %9s\n", "scen", "size", "M", "iters",
                   "t_comm us", "t_comp us", "t_total us", "overlap%");
        }
    }
    free(all);
    double *lat = malloc(sizeof(double) * (size_t)(o.maxiters + 8));
    for (int i = 0; i < o.nsizes; i++) {
        if (self_mode) {
            run(o.sizes[i], 2, lat);
        } else {
            run(o.sizes[i], 0, lat);
            run(o.sizes[i], 1, lat);
        }
    }
    free(lat);
    if (csv)
        fclose(csv);
    return pb_fini(&C) ? 1 : 0; /* dropped messages: reported by pb_fini */
}
