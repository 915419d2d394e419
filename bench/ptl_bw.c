/*
 * ptl_bw.c - streaming bandwidth with a window of puts, 1 B to 4 MiB, as
 * osu_bw / osu_bibw and peers-mpi.md's mpibench (window 16, one send and one
 * receive buffer shared by the whole window).
 *
 *   uni: per round rank 0 puts W messages to rank 1 and waits for their
 *        SEND_ENDs and for rank 1's 0-byte ack, which rank 1 sends once all
 *        W have landed (PUT_END).
 *   bi:  per round both ranks put W messages to each other and wait for their
 *        own W SEND_ENDs and the peer's W PUT_ENDs.
 *
 * Rank 0 times the rounds after a warm-up (both bounded by -t); it flags the
 * last round in the last put's hdr_data, so rank 1 stops in the same round.
 * MB/s with 1 MB = 1e6 B (bi: bytes in both directions). After each size one
 * message per direction is checked against a pattern. Ranks above 1 idle.
 */
#include "bench_util.h"

#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA (PB_PT_FIRST_FREE + 0)
#define PT_ACK (PB_PT_FIRST_FREE + 1)
#define MAX_SIZES 64

static struct {
    const char *csv;
    int uni, bi, quiet;
    int window;
    size_t sizes[MAX_SIZES];
    int nsizes;
    double tsize;
    long maxrounds, minrounds;
} o;

static pb_ctx C;
static int self_mode;
static ptl_process_id_t peer;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd;
static unsigned char *sbuf, *rbuf;
static size_t maxsz;
static pb_flow F; /* event counters (bench_util.h) */
static FILE *csv;
static long total_errors;

static void pump(void) { pb_flow_pump(eq, &F, PT_DATA, PT_ACK); }


static void send_window(size_t s, long round, int last)
{
    for (int w = 0; w < o.window; w++) {
        PB_CHECK(PtlPutRegion(smd, 0, s, PTL_NO_ACK_REQ, peer, PT_DATA, 0, 0, 0,
                              ((ptl_hdr_data_t)round << 1) | ((last && w == o.window - 1) ? 1 : 0)));
        F.sends_posted++;
    }
}

/* One phase (warm-up or measured) of rounds; returns rank 0's elapsed ns and
 * the rounds done. Rank 1 follows rank 0's stop flag. */
static double phase(size_t s, int bidir, double budget_s, long minr, long maxr, long *rounds)
{
    F.n_send = F.n_recv = F.n_ctl = F.sends_posted = 0;
    F.stop_round = 0;
    pb_barrier(&C);
    double t0 = pb_now_ns();
    long r = 0;
    if (C.rank == 0) {
        for (;;) {
            r++;
            int last = r >= maxr || (r >= minr && pb_now_ns() - t0 >= budget_s * 1e9);
            send_window(s, r, last);
            if (self_mode || bidir) {
                while (F.n_send < F.sends_posted || F.n_recv < r * o.window)
                    pump();
            } else {
                while (F.n_send < F.sends_posted || F.n_ctl < r)
                    pump();
            }
            if (last)
                break;
        }
    } else if (C.rank == 1) {
        for (;;) {
            r++;
            if (bidir)
                send_window(s, r, 0);
            while (F.n_recv < r * o.window || F.n_send < F.sends_posted)
                pump();
            if (!bidir) {
                PB_CHECK(PtlPut(C.zero_md, PTL_NO_ACK_REQ, peer, PT_ACK, 0, 0, 0, 0));
            }
            if (F.stop_round && r >= F.stop_round)
                break; /* (bi: rank 0's next window may have arrived already) */
        }
    }
    double t = pb_now_ns() - t0;
    *rounds = r;
    return t;
}

static void verify(size_t s, int bidir, long *verified, long *errors)
{
    /* Rank 0 (and rank 1 when bidir) sends one patterned message. */
    F.n_send = F.n_recv = F.sends_posted = 0;
    if (C.rank <= 1)
        memset(rbuf, 0, s);
    int sends = C.rank == 0 || (C.rank == 1 && bidir && !self_mode);
    int recvs = self_mode || C.rank == 1 || (C.rank == 0 && bidir);
    if (sends)
        pb_fill(sbuf, s, s * 7 + C.rank);
    pb_barrier(&C);
    if (sends) {
        PB_CHECK(PtlPutRegion(smd, 0, s, PTL_NO_ACK_REQ, peer, PT_DATA, 0, 0, 0, 0));
        F.sends_posted++;
    }
    if (C.rank <= 1) {
        while (F.n_send < F.sends_posted || (recvs && F.n_recv < 1))
            pump();
    }
    if (recvs && s > 0) {
        unsigned from = self_mode ? 0 : 1 - C.rank;
        (*verified)++;
        *errors += pb_check(rbuf, s, s * 7 + from) != 0;
    }
}

static void run(size_t s, int bidir)
{
    long rounds = 0, verified = 0, errors = 0;
    phase(s, bidir, o.tsize * 0.2, 2, o.maxrounds, &rounds);
    double t = phase(s, bidir, o.tsize, o.minrounds, o.maxrounds, &rounds);
    verify(s, bidir, &verified, &errors);
    double mine[2] = {(double)verified, (double)errors}, *all = NULL;
    if (C.rank == 0)
        all = malloc(sizeof(double) * 2 * C.nranks);
    pb_gather(&C, mine, 2, all);
    if (C.rank != 0)
        return;
    if (!self_mode) {
        verified += (long)all[2];
        errors += (long)all[3];
    }
    free(all);
    total_errors += errors;
    double msgs = (double)rounds * o.window * (bidir && !self_mode ? 2 : 1);
    double mbps = (double)s * msgs / (t / 1e9) / 1e6;
    double mrate = msgs / (t / 1e9);
    char sz[32];
    if (!o.quiet)
        printf("%-4s %9s %3d %8ld %12.1f %14.0f %8.3f %5ld %s\n", bidir ? "bi" : "uni",
               pb_size_str(s, sz, sizeof sz), o.window, rounds, mbps, mrate, t / 1e9, verified,
               errors ? "FAILED" : "ok");
    if (csv)
        fprintf(csv, "bw,%s,%s,%zu,%d,%ld,%.6g,%.0f,%.6f,%ld,%ld\n", C.impl, bidir ? "bi" : "uni",
                s, o.window, rounds, mbps, mrate, t / 1e9, verified, errors);
    fflush(stdout);
}

static void dump(FILE *f) { pb_flow_print(f, C.rank, &F, "acks"); }

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n 2 [ptlrun options] ptl_bw [options]\n"
"Unidirectional and bidirectional put bandwidth, window of W puts per round.\n"
"  -o FILE        append CSV rows to FILE (header if new)\n"
"  -D uni|bi|both directions (default both)\n"
"  -W N           window (default 16)\n"
"  --min SIZE     smallest size (default 1)\n"
"  --max SIZE     largest size (default 4M); powers of two in between\n"
"  --sizes LIST   explicit sizes, e.g. 1,1K,4M\n"
"  -t SEC         measured time per size and direction (default 0.2; warm-up 20%%)\n"
"  -n N           at most N rounds per size (default 1000000)\n"
"  --min-rounds N at least N measured rounds (default 3)\n"
"  -q             no table (CSV only)\n"
"  -h, --help     this text\n"
"Columns: window, rounds, MB/s (1 MB = 1e6 B; bi counts both directions),\n"
"messages/s, seconds, messages verified, status. Exit 1 on a data error.\n");
}

static void parse(int argc, char **argv)
{
    size_t lo = 1, hi = 4u << 20;
    const char *list = NULL;
    o.uni = o.bi = 1;
    o.window = 16;
    o.tsize = 0.2;
    o.maxrounds = 1000000;
    o.minrounds = 3;
    static const struct option lo_opts[] = {{"min", 1, 0, 1},        {"max", 1, 0, 2},
                                            {"sizes", 1, 0, 3},      {"min-rounds", 1, 0, 4},
                                            {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:D:W:t:n:qh", lo_opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.csv = optarg; break;
        case 'D':
            o.uni = !strcmp(optarg, "uni") || !strcmp(optarg, "both");
            o.bi = !strcmp(optarg, "bi") || !strcmp(optarg, "both");
            if (!o.uni && !o.bi)
                pb_die("-D: uni, bi or both");
            break;
        case 'W': o.window = (int)pb_atol_or_die("-W", optarg); break;
        case 't': o.tsize = pb_atof_or_die("-t", optarg); break;
        case 'n': o.maxrounds = pb_atol_or_die("-n", optarg); break;
        case 'q': o.quiet = 1; break;
        case 1: if (pb_parse_size(optarg, &lo)) pb_die("bad --min"); break;
        case 2: if (pb_parse_size(optarg, &hi)) pb_die("bad --max"); break;
        case 3: list = optarg; break;
        case 4: o.minrounds = pb_atol_or_die("--min-rounds", optarg); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        usage(stderr);
        exit(2);
    }
    if (o.window < 1 || o.window > 1024)
        pb_die("-W: 1..1024");
    if (list) {
        o.nsizes = pb_parse_sizes(list, o.sizes, MAX_SIZES);
        if (o.nsizes <= 0)
            pb_die("bad --sizes '%s'", list);
    } else {
        o.nsizes = pb_size_list(lo ? lo : 1, hi, 0, o.sizes, MAX_SIZES);
    }
    if (o.maxrounds < 1)
        o.maxrounds = 1;
    if (o.minrounds < 1)
        o.minrounds = 1;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    pb_init(&C);
    pb_watchdog_start(&C, dump, o.tsize * 1.2);
    self_mode = C.nranks == 1;
    peer = C.ids[self_mode ? 0 : (C.rank == 0 ? 1 : 0)];
    maxsz = 1;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > maxsz)
            maxsz = o.sizes[i];
    if (C.rank <= 1) {
        sbuf = pb_alloc(maxsz);
        rbuf = pb_alloc(maxsz);
        PB_CHECK(PtlEQAlloc(C.ni, 16 * (size_t)o.window + 1024, PTL_EQ_HANDLER_NONE, &eq));
        ptl_md_t s = {sbuf, maxsz, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
        PB_CHECK(PtlMDBind(C.ni, s, PTL_RETAIN, &smd));
        pb_post_recv(&C, PT_DATA, rbuf, maxsz, eq);
        pb_post_recv(&C, PT_ACK, rbuf, 0, eq);
    }
    double cpu = sched_getcpu(), *cpus = malloc(sizeof(double) * C.nranks);
    pb_gather(&C, &cpu, 1, cpus);
    if (C.rank == 0) {
        csv = pb_csv_open(o.csv, "bench,impl,variant,size,window,rounds,mbps,msgs_per_s,"
                                 "seconds,verified,errors");
        if (!o.quiet) {
            printf("# ptl_bw: %u rank(s), %s mode%s, rank 0 on cpu %d", C.nranks, C.mode,
                   self_mode ? " (job of one: loopback)" : "", (int)cpus[0]);
            if (!self_mode)
                printf(", rank 1 on cpu %d", (int)cpus[1]);
            printf("\n%-4s %9s %3s %8s %12s %14s %8s %5s %s\n", "dir", "size", "W", "rounds",
                   "MB/s", "msgs/s", "seconds", "verif", "data");
        }
    }
    free(cpus);
    for (int d = 0; d < 2; d++) {
        if ((d == 0 && !o.uni) || (d == 1 && !o.bi))
            continue;
        for (int i = 0; i < o.nsizes; i++)
            run(o.sizes[i], d == 1);
    }
    if (csv)
        fclose(csv);
    long te = total_errors;
    if (pb_fini(&C))
        te++; /* a dropped message is a failure too (reported by pb_fini) */
    if (te) {
        fprintf(stderr, "ptl_bw: %ld data verification failure(s)\n", te);
        return 1;
    }
    return 0;
}
