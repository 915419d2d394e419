/*
 * ptl_msgrate.c - small-message rate (8 B puts), window 64, for 1 pair and
 * for N = nranks/2 pairs at once, the scheme of peers-mpi.md's mpibench
 * "rate": per round the sender puts W messages and waits for their SEND_ENDs
 * and for a 0-byte ack that the receiver sends once all W landed (PUT_END).
 *
 * 1 pair: rank 0 -> rank 1. N pairs: rank i -> rank i + N, i < N. Each sender
 * times its own rounds (warm-up then measured, bounded by -t) and flags its
 * last round in the last put's hdr_data. Reported: the sum of the senders'
 * rates and the slowest pair. One patterned message per pair is checked after
 * each test. A job of one measures puts to itself.
 */
#include "bench_util.h"

#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA (PB_PT_FIRST_FREE + 0)
#define PT_ACK (PB_PT_FIRST_FREE + 1)

static struct {
    const char *csv;
    size_t size;
    int window, quiet, only1, onlyN;
    double tsize;
    long maxrounds;
} o;

static pb_ctx C;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd;
static unsigned char *sbuf, *rbuf;
static pb_flow F; /* event counters (bench_util.h) */
static long total_errors;

static void pump(void) { pb_flow_pump(eq, &F, PT_DATA, PT_ACK); }


/* role in a test with p pairs: 1 sender, 2 receiver, 3 both (job of one), 0 idle */
static int role(unsigned p, unsigned *partner)
{
    if (C.nranks == 1) {
        *partner = 0;
        return 3;
    }
    unsigned h = p == 1 ? 1 : C.nranks / 2;
    if (C.rank < p) {
        *partner = C.rank + h;
        return 1;
    }
    if (C.rank >= h && C.rank - h < p) {
        *partner = C.rank - h;
        return 2;
    }
    return 0;
}

static double phase(int ro, ptl_process_id_t peer, double budget_s, long minr, long *rounds)
{
    F.n_send = F.n_recv = F.n_ctl = F.sends_posted = 0;
    F.stop_round = 0;
    pb_barrier(&C);
    double t0 = pb_now_ns();
    long r = 0;
    if (ro & 1) {
        for (;;) {
            r++;
            int last = r >= o.maxrounds || (r >= minr && pb_now_ns() - t0 >= budget_s * 1e9);
            for (int w = 0; w < o.window; w++) {
                PB_CHECK(PtlPutRegion(smd, 0, o.size, PTL_NO_ACK_REQ, peer, PT_DATA, 0, 0, 0,
                                      ((ptl_hdr_data_t)r << 1) |
                                          ((last && w == o.window - 1) ? 1 : 0)));
                F.sends_posted++;
            }
            if (ro == 3) {
                while (F.n_send < F.sends_posted || F.n_recv < r * o.window)
                    pump();
            } else {
                while (F.n_send < F.sends_posted || F.n_ctl < r)
                    pump();
            }
            if (last)
                break;
        }
    } else if (ro == 2) {
        for (;;) {
            r++;
            while (F.n_recv < r * o.window)
                pump();
            PB_CHECK(PtlPut(C.zero_md, PTL_NO_ACK_REQ, peer, PT_ACK, 0, 0, 0, 0));
            if (F.stop_round && r >= F.stop_round)
                break;
        }
    }
    *rounds = r;
    return pb_now_ns() - t0;
}

static void run(unsigned p, FILE *csv)
{
    unsigned partner = 0;
    int ro = role(p, &partner);
    ptl_process_id_t peer = C.ids[partner];
    long rounds = 0;
    phase(ro, peer, o.tsize * 0.2, 2, &rounds);
    double t = phase(ro, peer, o.tsize, 3, &rounds);
    /* verification: one patterned message per pair */
    long verified = 0, errors = 0;
    F.n_send = F.n_recv = F.sends_posted = 0;
    if (ro & 2)
        memset(rbuf, 0, o.size);
    if (ro & 1)
        pb_fill(sbuf, o.size, 0x4a7e + C.rank);
    pb_barrier(&C);
    if (ro & 1) {
        PB_CHECK(PtlPutRegion(smd, 0, o.size, PTL_NO_ACK_REQ, peer, PT_DATA, 0, 0, 0, 0));
        F.sends_posted++;
    }
    if (ro)
        while (F.n_send < F.sends_posted || ((ro & 2) && F.n_recv < 1))
            pump();
    if ((ro & 2) && o.size) {
        verified++;
        errors += pb_check(rbuf, o.size, 0x4a7e + partner) != 0;
    }
    double msgs = (ro & 1) ? (double)rounds * o.window : 0;
    double mine[5] = {(ro & 1) ? 1.0 : 0.0, msgs, t / 1e9, (double)verified, (double)errors};
    double *all = C.rank == 0 ? malloc(sizeof(double) * 5 * C.nranks) : NULL;
    pb_gather(&C, mine, 5, all);
    if (C.rank != 0)
        return;
    double sum = 0, minr = -1, msum = 0, tmax = 0;
    long ver = 0, err = 0;
    for (unsigned r = 0; r < C.nranks; r++) {
        double *a = all + 5 * r;
        ver += (long)a[3];
        err += (long)a[4];
        if (a[0] == 0)
            continue;
        double rate = a[1] / a[2];
        sum += rate;
        msum += a[1];
        if (a[2] > tmax)
            tmax = a[2];
        if (minr < 0 || rate < minr)
            minr = rate;
    }
    free(all);
    total_errors += err;
    if (!o.quiet)
        printf("%5u %6zu %3d %14.0f %14.0f %12.0f %8.3f %5ld %s\n", p, o.size, o.window, sum,
               minr, msum, tmax, ver, err ? "FAILED" : "ok");
    if (csv)
        fprintf(csv, "msgrate,%s,pairs%u,%zu,%d,%u,%.0f,%.0f,%.0f,%.6f,%ld,%ld\n", C.impl, p,
                o.size, o.window, p, sum, minr, msum, tmax, ver, err);
    fflush(stdout);
}

static void dump(FILE *f) { pb_flow_print(f, C.rank, &F, "acks"); }

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n 2N [ptlrun options] ptl_msgrate [options]\n"
"Small-message put rate, window W, for 1 pair (0->1) and N pairs (i->i+N).\n"
"  -o FILE     append CSV rows to FILE (header if new)\n"
"  -s SIZE     message size (default 8)\n"
"  -W N        window (default 64)\n"
"  -t SEC      measured time per test (default 1.0; warm-up 20%% more)\n"
"  -n N        at most N rounds (default 10000000)\n"
"  -1          only the 1-pair test;  -N  only the N-pair test\n"
"  -q          no table (CSV only)\n"
"  -h, --help  this text\n"
"Columns: pairs, size, window, total msgs/s (sum over pairs), slowest pair's\n"
"msgs/s, messages, seconds, verified messages, status. Exit 1 on a data error.\n");
}

int main(int argc, char **argv)
{
    o.size = 8;
    o.window = 64;
    o.tsize = 1.0;
    o.maxrounds = 10000000;
    static const struct option lo_opts[] = {{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:s:W:t:n:1Nqh", lo_opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.csv = optarg; break;
        case 's': if (pb_parse_size(optarg, &o.size)) pb_die("bad -s"); break;
        case 'W': o.window = (int)pb_atol_or_die("-W", optarg); break;
        case 't': o.tsize = pb_atof_or_die("-t", optarg); break;
        case 'n': o.maxrounds = pb_atol_or_die("-n", optarg); break;
        case '1': o.only1 = 1; break;
        case 'N': o.onlyN = 1; break;
        case 'q': o.quiet = 1; break;
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
    if (o.maxrounds < 3)
        o.maxrounds = 3;
    pb_init(&C);
    pb_watchdog_start(&C, dump, o.tsize * 1.2);
    sbuf = pb_alloc(o.size);
    rbuf = pb_alloc(o.size);
    PB_CHECK(PtlEQAlloc(C.ni, 16 * (size_t)o.window + 1024, PTL_EQ_HANDLER_NONE, &eq));
    ptl_md_t s = {sbuf, o.size, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
    PB_CHECK(PtlMDBind(C.ni, s, PTL_RETAIN, &smd));
    pb_post_recv(&C, PT_DATA, rbuf, o.size, eq);
    pb_post_recv(&C, PT_ACK, rbuf, 0, eq);
    double cpu = sched_getcpu(), *cpus = malloc(sizeof(double) * C.nranks);
    pb_gather(&C, &cpu, 1, cpus);
    FILE *csv = NULL;
    unsigned npairs = C.nranks / 2;
    if (C.rank == 0) {
        csv = pb_csv_open(o.csv, "bench,impl,variant,size,window,pairs,msgs_per_s,"
                                 "min_pair_msgs_per_s,msgs,seconds,verified,errors");
        if (!o.quiet) {
            printf("# ptl_msgrate: %u rank(s), %s mode%s, cpus of ranks:", C.nranks, C.mode,
                   C.nranks == 1 ? " (job of one: puts to itself)" : "");
            for (unsigned r = 0; r < C.nranks && r < 64; r++)
                printf(" %d", (int)cpus[r]);
            printf("\n%5s %6s %3s %14s %14s %12s %8s %5s %s\n", "pairs", "size", "W", "msgs/s",
                   "slowest pair", "messages", "seconds", "verif", "data");
        }
    }
    free(cpus);
    if (!o.onlyN || npairs <= 1)
        run(1, csv);
    if (!o.only1 && npairs > 1)
        run(npairs, csv);
    if (csv)
        fclose(csv);
    long te = total_errors;
    if (pb_fini(&C))
        te++; /* a dropped message is a failure too (reported by pb_fini) */
    if (te) {
        fprintf(stderr, "ptl_msgrate: %ld data verification failure(s)\n", te);
        return 1;
    }
    return 0;
}
