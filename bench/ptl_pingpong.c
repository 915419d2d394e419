/*
 * ptl_pingpong.c - half round trip between rank 0 and rank 1, 0 B to 8 MiB
 * (powers of two and, as NetPIPE does, 3 bytes either side of each).
 *
 *   put: rank 0 puts the ping, rank 1 waits for its PUT_END and puts the pong
 *        back; rank 0 stops the clock at the pong's PUT_END (having also seen
 *        its ping's SEND_END, i.e. blocking-send semantics). Half round trip.
 *   get: rank 0 PtlGets size bytes from rank 1 and waits for REPLY_END; rank 1
 *        only runs its engine (its NIC thread, or its wait at the barrier in
 *        host-matching mode). Reported: the whole get (one round trip).
 *
 * Data is verified on a sample of iterations (the first measured one and every
 * --verify-every-th): the sender fills a pattern derived from the iteration,
 * the receiver checks it. Those iterations are not timed. Ranks above 1 idle.
 * A job of one plays both roles itself (loopback).
 *
 * Run under ptlrun: ptlrun -n 2 [--cpus 0,1] [--host-matching] ptl_pingpong
 */
#include "bench_util.h"

#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PT_PING (PB_PT_FIRST_FREE + 0)
#define PT_PONG (PB_PT_FIRST_FREE + 1)
#define PT_GSRC (PB_PT_FIRST_FREE + 2)

#define F_LAST 1u
#define F_VERIFY 2u

#define MAX_SIZES 256

static struct {
    const char *csv;
    int do_put, do_get;
    size_t sizes[MAX_SIZES];
    int nsizes;
    double tsize;
    long maxiters, miniters, warm, vevery;
    int repost, quiet;
} o;

static pb_ctx C;
static unsigned peer_rank;
static ptl_process_id_t peer;
static int self_mode;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd, lmd;
static unsigned char *sbuf, *rbuf, *gbuf, *lbuf;
static size_t maxsz;

/* event counts */
static long n_send, n_reply, n_ping, n_pong;
static ptl_hdr_data_t ping_hdr;
static long sends_posted;

static void pump(void)
{
    ptl_event_t ev;
    pb_eq_wait(eq, &ev);
    switch (ev.type) {
    case PTL_EVENT_SEND_END: n_send++; break;
    case PTL_EVENT_REPLY_END: n_reply++; break;
    case PTL_EVENT_PUT_END:
        if (ev.pt_index == PT_PING) {
            n_ping++;
            ping_hdr = ev.hdr_data;
        } else if (ev.pt_index == PT_PONG) {
            n_pong++;
        }
        break;
    default: break;
    }
}

static void wait_sends(void)
{
    while (n_send < sends_posted)
        pump();
}

static uint64_t seed_ping(long it, size_t s) { return ((uint64_t)it << 24) ^ (s * 2 + 0); }
static uint64_t seed_pong(long it, size_t s) { return ((uint64_t)it << 24) ^ (s * 2 + 1); }
static uint64_t seed_get(size_t s) { return 0xfeedull << 40 ^ s; }

static void post_recv(ptl_pt_index_t pt, void *buf, int once)
{
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    PB_CHECK(PtlMEAttach(C.ni, pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 0, 0,
                         once ? PTL_UNLINK : PTL_RETAIN, PTL_INS_AFTER, &me));
    unsigned opt = (pt == PT_GSRC ? PTL_MD_OP_GET : PTL_MD_OP_PUT) | PTL_MD_MANAGE_REMOTE |
                   PTL_MD_EVENT_START_DISABLE;
    ptl_md_t d = {buf, maxsz, once ? 1 : PTL_MD_THRESH_INF, 0, opt, NULL, eq};
    PB_CHECK(PtlMDAttach(me, d, once ? PTL_UNLINK : PTL_RETAIN, &md));
}

static void put_msg(size_t s, ptl_pt_index_t pt, ptl_hdr_data_t hdr)
{
    PB_CHECK(PtlPutRegion(smd, 0, s, PTL_NO_ACK_REQ, peer, pt, 0, 0, 0, hdr));
    sends_posted++;
}

/* rank 1's side of one ping: wait for it, (check), answer. Returns its flags. */
static unsigned answer_ping(size_t s, long k, long *verified, long *errors)
{
    while (n_ping < k + 1)
        pump();
    unsigned fl = (unsigned)(ping_hdr & 0xff);
    long it = (long)(ping_hdr >> 8);
    if (o.repost && !(fl & F_LAST) && !self_mode)
        post_recv(PT_PING, rbuf, 1); /* the next ping's receive, before the pong */
    wait_sends();
    if (fl & F_VERIFY) {
        if (s) {
            (*verified)++;
            *errors += pb_check(rbuf, s, seed_ping(it, s)) != 0;
        }
        pb_fill(sbuf, s, seed_pong(it, s));
    }
    put_msg(s, PT_PONG, ping_hdr);
    return fl;
}

/* Rank 0 decides, iteration by iteration, warm-up / verify / last. */
typedef struct {
    double t_phase;
    long warm_left, k, nsamp, kmax;
    int warming;
} sched_t;

static void sched_init(sched_t *st)
{
    memset(st, 0, sizeof *st);
    st->warm_left = o.warm;
    st->warming = o.warm > 0;
    st->t_phase = pb_now_ns();
    st->kmax = o.maxiters + (o.vevery ? o.maxiters / o.vevery : 0) + 1;
}

/* returns flags for this iteration; *timed = 1 if it is a measured sample */
static unsigned sched_next(sched_t *st, int *timed)
{
    double now = pb_now_ns();
    if (st->warming && (st->warm_left <= 0 || now - st->t_phase > o.tsize * 0.2e9)) {
        st->warming = 0;
        st->t_phase = now;
    }
    if (st->warming) {
        st->warm_left--;
        *timed = 0;
        return 0;
    }
    unsigned fl = 0;
    if (st->k == 0 || (o.vevery > 0 && st->k % o.vevery == 0))
        fl |= F_VERIFY;
    *timed = !(fl & F_VERIFY);
    long ns = st->nsamp + (*timed ? 1 : 0);
    if (st->k + 1 >= st->kmax || ns >= o.maxiters ||
        (now - st->t_phase >= o.tsize * 1e9 && ns >= o.miniters && st->k >= 1))
        fl |= F_LAST;
    st->k++;
    st->nsamp = ns;
    return fl;
}

static FILE *csv;

static void report(const char *variant, size_t s, double *lat, long n, long verified,
                   long errors)
{
    pb_stats st;
    pb_stats_of(lat, n, &st);
    double mbps = st.mean > 0 ? (double)s / st.mean : 0;
    char sz[32];
    if (!o.quiet)
        printf("%-4s %9s %8ld %10.3f %10.3f %10.3f %10.1f %6ld %10.1f %5ld %s\n", variant,
               pb_size_str(s, sz, sizeof sz), st.n, st.p50, st.mean, st.p99, st.max,
               st.outliers, mbps, verified, errors ? "FAILED" : "ok");
    if (csv)
        fprintf(csv, "pingpong,%s,%s,%zu,%ld,%.4f,%.4f,%.4f,%.3f,%ld,%.6g,%ld,%ld\n", C.impl,
                variant, s, st.n, st.p50, st.mean, st.p99, st.max, st.outliers, mbps, verified,
                errors);
    fflush(stdout);
}

static long total_errors;

static void run_put(size_t s, double *lat)
{
    long verified = 0, errors = 0, nlat = 0;
    n_ping = n_pong = 0;
    if (o.repost && C.rank == 1)
        post_recv(PT_PING, rbuf, 1);
    pb_barrier(&C);
    if (C.rank == 0) {
        sched_t st;
        sched_init(&st);
        for (long it = 0;; it++) {
            int timed;
            unsigned fl = sched_next(&st, &timed);
            if (fl & F_VERIFY) {
                wait_sends();
                pb_fill(sbuf, s, seed_ping(it, s));
            }
            double t0 = pb_now_ns();
            if (o.repost) {
                post_recv(PT_PONG, rbuf, 1);
                if (self_mode)
                    post_recv(PT_PING, rbuf, 1);
            }
            put_msg(s, PT_PING, ((ptl_hdr_data_t)it << 8) | fl);
            if (self_mode)
                answer_ping(s, it, &verified, &errors);
            while (n_pong < it + 1 || n_send < sends_posted)
                pump();
            double t1 = pb_now_ns();
            if (fl & F_VERIFY) {
                if (s) {
                    verified++;
                    errors += pb_check(rbuf, s, seed_pong(it, s)) != 0;
                }
            } else if (timed) {
                lat[nlat++] = (t1 - t0) / 2000.0;
            }
            if (fl & F_LAST)
                break;
        }
    } else if (C.rank == 1) {
        for (long k = 0;; k++)
            if (answer_ping(s, k, &verified, &errors) & F_LAST)
                break;
        wait_sends();
    }
    double mine[2] = {(double)verified, (double)errors}, all[2 * 2];
    double *g = C.rank == 0 ? malloc(sizeof(double) * 2 * C.nranks) : all;
    pb_gather(&C, mine, 2, g);
    if (C.rank == 0) {
        if (!self_mode && C.nranks > 1) {
            verified += (long)g[2];
            errors += (long)g[3];
        }
        total_errors += errors;
        report("put", s, lat, nlat, verified, errors);
        free(g);
    }
}

static void run_get(size_t s, double *lat)
{
    long verified = 0, errors = 0, nlat = 0;
    n_reply = 0;
    if (C.rank == 1 || self_mode)
        pb_fill(gbuf, s, seed_get(s));
    pb_barrier(&C);
    if (C.rank == 0) {
        sched_t st;
        sched_init(&st);
        for (long it = 0;; it++) {
            int timed;
            unsigned fl = sched_next(&st, &timed);
            if (fl & F_VERIFY)
                memset(lbuf, 0x5a, s);
            double t0 = pb_now_ns();
            PB_CHECK(PtlGetRegion(lmd, 0, s, peer, PT_GSRC, 0, 0, 0));
            while (n_reply < it + 1)
                pump();
            double t1 = pb_now_ns();
            if (fl & F_VERIFY) {
                if (s) {
                    verified++;
                    errors += pb_check(lbuf, s, seed_get(s)) != 0;
                }
            } else if (timed) {
                lat[nlat++] = (t1 - t0) / 1000.0;
            }
            if (fl & F_LAST)
                break;
        }
        total_errors += errors;
    }
    pb_barrier(&C);
    if (C.rank == 0)
        report("get", s, lat, nlat, verified, errors);
}

static void dump(FILE *f)
{
    fprintf(f, "[rank %u] sends posted %ld, SEND_END %ld, REPLY_END %ld, pings %ld, pongs %ld\n",
            C.rank, sends_posted, n_send, n_reply, n_ping, n_pong);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n 2 [ptlrun options] ptl_pingpong [options]\n"
"Half round trip between rank 0 and rank 1 (put), and PtlGet latency (get).\n"
"  -o FILE          append CSV rows to FILE (header if new)\n"
"  -V put|get|both  variants (default both)\n"
"  --min SIZE       smallest size (default 0)\n"
"  --max SIZE       largest size (default 8M)\n"
"  --sizes LIST     explicit sizes, e.g. 0,8,4K,1M (overrides --min/--max)\n"
"  --no-perturb     powers of two only (default adds p-3 and p+3, as NetPIPE)\n"
"  -t SEC           time budget per size and variant (default 0.1)\n"
"  -n N             at most N timed iterations per size (default 100000)\n"
"  --min-iters N    at least N timed iterations per size (default 10)\n"
"  -w N             warm-up iterations per size (default 100, at most 20%% of -t)\n"
"  --verify-every N verify (untimed) every N-th iteration (default 64)\n"
"  --repost         post the receive (ME+MD, used once) each iteration, as in\n"
"                   the QsNet paper's ping-pong (fills PTL_TIMING's Table 1)\n"
"  -q               no table (CSV only)\n"
"  -h, --help       this text\n"
"Columns: timed iterations, p50/mean/p99/max in us, outliers (> 10x p50),\n"
"MB/s (size / mean, 1 MB = 1e6 B), verified transfers and status.\n"
"Exit status 1 on any data error.\n");
}

static void parse(int argc, char **argv)
{
    size_t lo = 0, hi = 8u << 20;
    int perturb = 1;
    const char *list = NULL;
    o.do_put = o.do_get = 1;
    o.tsize = 0.1;
    o.maxiters = 100000;
    o.miniters = 10;
    o.warm = 100;
    o.vevery = 64;
    static const struct option lo_opts[] = {
        {"min", 1, 0, 1},       {"max", 1, 0, 2},        {"sizes", 1, 0, 3},
        {"no-perturb", 0, 0, 4}, {"min-iters", 1, 0, 5}, {"verify-every", 1, 0, 6},
        {"repost", 0, 0, 7},    {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:V:t:n:w:qh", lo_opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.csv = optarg; break;
        case 'V':
            o.do_put = !strcmp(optarg, "put") || !strcmp(optarg, "both");
            o.do_get = !strcmp(optarg, "get") || !strcmp(optarg, "both");
            if (!o.do_put && !o.do_get)
                pb_die("-V: put, get or both");
            break;
        case 't': o.tsize = pb_atof_or_die("-t", optarg); break;
        case 'n': o.maxiters = pb_atol_or_die("-n", optarg); break;
        case 'w': o.warm = pb_atol_or_die("-w", optarg); break;
        case 'q': o.quiet = 1; break;
        case 1: if (pb_parse_size(optarg, &lo)) pb_die("bad --min"); break;
        case 2: if (pb_parse_size(optarg, &hi)) pb_die("bad --max"); break;
        case 3: list = optarg; break;
        case 4: perturb = 0; break;
        case 5: o.miniters = pb_atol_or_die("--min-iters", optarg); break;
        case 6: o.vevery = pb_atol_or_die("--verify-every", optarg); break;
        case 7: o.repost = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        usage(stderr);
        exit(2);
    }
    if (list) {
        o.nsizes = pb_parse_sizes(list, o.sizes, MAX_SIZES);
        if (o.nsizes <= 0)
            pb_die("bad --sizes '%s'", list);
    } else {
        o.nsizes = pb_size_list(lo, hi, perturb, o.sizes, MAX_SIZES);
    }
    if (o.maxiters < 1)
        o.maxiters = 1;
    if (o.miniters < 1)
        o.miniters = 1;
    if (o.miniters > o.maxiters)
        o.miniters = o.maxiters;
    if (o.vevery < 0)
        o.vevery = 0;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    pb_init(&C);
    pb_watchdog_start(&C, dump, o.tsize * 1.2);
    self_mode = C.nranks == 1;
    peer_rank = self_mode ? 0 : (C.rank == 0 ? 1 : 0);
    peer = C.ids[peer_rank];
    maxsz = 1;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > maxsz)
            maxsz = o.sizes[i];
    int active = C.rank <= 1;
    if (active) {
        sbuf = pb_alloc(maxsz);
        rbuf = pb_alloc(maxsz);
        gbuf = pb_alloc(maxsz);
        lbuf = pb_alloc(maxsz);
        PB_CHECK(PtlEQAlloc(C.ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
        ptl_md_t s = {sbuf, maxsz, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
        PB_CHECK(PtlMDBind(C.ni, s, PTL_RETAIN, &smd));
        ptl_md_t l = {lbuf, maxsz, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
        PB_CHECK(PtlMDBind(C.ni, l, PTL_RETAIN, &lmd));
        if (!o.repost) {
            if (C.rank == 1 || self_mode)
                post_recv(PT_PING, rbuf, 0);
            if (C.rank == 0)
                post_recv(PT_PONG, rbuf, 0);
        }
        if (C.rank == 1 || self_mode)
            post_recv(PT_GSRC, gbuf, 0);
    }
    double cpu = sched_getcpu(), cpus[2 * 1024];
    pb_gather(&C, &cpu, 1, C.nranks <= 2048 ? cpus : NULL);
    if (C.rank == 0) {
        char aff[128];
        pb_affinity(aff, sizeof aff);
        csv = pb_csv_open(o.csv, "bench,impl,variant,size,iters,p50_us,mean_us,p99_us,max_us,"
                                 "outliers,mbps,verified,errors");
        if (!o.quiet) {
            printf("# ptl_pingpong: %u rank(s), %s mode%s, rank 0 on cpu %d (allowed %s)",
                   C.nranks, C.mode, self_mode ? " (job of one: loopback)" : "", (int)cpus[0],
                   aff);
            if (!self_mode)
                printf(", rank 1 on cpu %d", (int)cpus[1]);
            printf("\n# put: half round trip; get: whole PtlGet (request + reply); us\n");
            printf("%-4s %9s %8s %10s %10s %10s %10s %6s %10s %5s %s\n", "op", "size", "iters",
                   "p50", "mean", "p99", "max", "outl", "MB/s", "verif", "data");
        }
    }
    double *lat = malloc(sizeof(double) * (size_t)(o.maxiters + 1));
    for (int v = 0; v < 2; v++) {
        if ((v == 0 && !o.do_put) || (v == 1 && !o.do_get))
            continue;
        for (int i = 0; i < o.nsizes; i++) {
            if (v == 0)
                run_put(o.sizes[i], lat);
            else
                run_get(o.sizes[i], lat);
        }
    }
    free(lat);
    if (csv)
        fclose(csv);
    long te = total_errors;
    if (pb_fini(&C))
        te++; /* a dropped message is a failure too (reported by pb_fini) */
    if (te) {
        fprintf(stderr, "ptl_pingpong: %ld data verification failure(s)\n", te);
        return 1;
    }
    return 0;
}
