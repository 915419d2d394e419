/*
 * ptl_match.c - the cost of matching against a long list of posted entries.
 *
 * For K = 0, 1, 2, 4 ... 4096 the receiving portal holds K match entries
 * (each with an MD) that do not match, plus the one that does:
 *
 *   head    matching entry inserted before the K others: 1 entry walked
 *   tail    K entries with other match bits, matching entry last: K+1 walked
 *   ignore  as tail, every entry uses ignore bits (low 32 bits ignored; the put's
 *           low bits change every message): K+1 walked
 *   srcid   K entries with the right match bits but another source process
 *           (pid), matching entry last with PTL_NID_ANY/PTL_PID_ANY: K+1 walked
 *
 * With 2 ranks both sides hold the list and ping-pong size-byte puts: the
 * half round trip contains one match. In a job of one (or with --self) rank 0
 * puts to itself and waits for PUT_END. Reported: p50 and mean latency, the
 * extra time over K = 0 of the same variant (ns per match) and that divided
 * by the entries walked beyond the first (ns per entry).
 */
#include "bench_util.h"

#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PT_M (PB_PT_FIRST_FREE + 0)
#define MAXK 65536

enum { V_HEAD, V_TAIL, V_IGNORE, V_SRCID, V_NR };
static const char *vname[V_NR] = {"head", "tail", "ignore", "srcid"};

static struct {
    const char *csv;
    int want[V_NR];
    long ks[64];
    int nks;
    double tpoint;
    long maxiters;
    size_t size;
    int self, quiet;
} o;

static pb_ctx C;
static int self_mode, active;
static ptl_process_id_t peer;
static ptl_handle_eq_t eq;
static ptl_handle_md_t smd;
static unsigned char *sbuf, *rbuf, dummy[64];
static ptl_handle_me_t *mes;
static long nmes;
static long n_recv, n_send, sends_posted;
static ptl_hdr_data_t last_hdr;

static void pump(void)
{
    ptl_event_t ev;
    pb_eq_wait(eq, &ev);
    if (ev.type == PTL_EVENT_SEND_END)
        n_send++;
    else if (ev.type == PTL_EVENT_PUT_END) {
        n_recv++;
        last_hdr = ev.hdr_data;
    }
}

static void attach(ptl_process_id_t id, ptl_match_bits_t bits, ptl_match_bits_t ign,
                   ptl_ins_pos_t pos, int matching)
{
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    PB_CHECK(PtlMEAttach(C.ni, PT_M, id, bits, ign, PTL_RETAIN, pos, &me));
    ptl_md_t d = matching
                     ? (ptl_md_t){rbuf, o.size, PTL_MD_THRESH_INF, 0,
                                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                                  NULL, eq}
                     : (ptl_md_t){dummy, sizeof dummy, PTL_MD_THRESH_INF, 0,
                                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, NULL, PTL_EQ_NONE};
    PB_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
    mes[nmes++] = me;
}

#define IGN_LOW 0xffffffffull

static void build(int v, long k)
{
    const ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    for (long j = 0; j < k; j++) {
        switch (v) {
        case V_HEAD:
        case V_TAIL: attach(any, 0x1000 + (ptl_match_bits_t)j, 0, PTL_INS_AFTER, 0); break;
        case V_IGNORE:
            attach(any, (ptl_match_bits_t)(0x100000 + j) << 32, IGN_LOW, PTL_INS_AFTER, 0);
            break;
        case V_SRCID:
            attach((ptl_process_id_t){C.me.nid, 0x7fff0000u + (ptl_pid_t)j}, 0x5, 0,
                   PTL_INS_AFTER, 0);
            break;
        }
    }
    if (v == V_HEAD)
        attach(any, 0x5, 0, PTL_INS_BEFORE, 1);
    else if (v == V_IGNORE)
        attach(any, 0xABCull << 32, IGN_LOW, PTL_INS_AFTER, 1);
    else
        attach(any, 0x5, 0, PTL_INS_AFTER, 1);
}

static void teardown(void)
{
    for (long i = 0; i < nmes; i++)
        PB_CHECK(PtlMEUnlink(mes[i]));
    nmes = 0;
}

static ptl_match_bits_t put_bits(int v, long it)
{
    return v == V_IGNORE ? (0xABCull << 32) | (ptl_match_bits_t)(it & 0xffffff) : 0x5;
}

static void put(int v, long it, unsigned flags)
{
    PB_CHECK(PtlPutRegion(smd, 0, o.size, PTL_NO_ACK_REQ, peer, PT_M, 0, put_bits(v, it), 0,
                          ((ptl_hdr_data_t)it << 8) | flags));
    sends_posted++;
}

/* One (variant, K) point: returns samples (us, one match each) in lat. */
static long point(int v, long k, double *lat)
{
    long n = 0;
    n_recv = n_send = sends_posted = 0;
    if (active)
        build(v, k);
    pb_barrier(&C);
    if (C.rank == 0 && active) {
        long warm = 0;
        double t0 = pb_now_ns(), tw = t0;
        int warming = 1;
        for (long it = 0;; it++) {
            double now = pb_now_ns();
            if (warming && (warm >= 200 || now - tw > o.tpoint * 0.1e9)) {
                warming = 0;
                t0 = now;
            }
            unsigned last = !warming && (n + 1 >= o.maxiters ||
                                         (now - t0 >= o.tpoint * 1e9 && n >= 10));
            double a = pb_now_ns();
            put(v, it, last);
            if (!self_mode) {
                while (n_recv < it + 1 || n_send < sends_posted)
                    pump();
            } else {
                while (n_recv < it + 1 || n_send < sends_posted)
                    pump();
            }
            double b = pb_now_ns();
            if (warming)
                warm++;
            else
                lat[n++] = (b - a) / (self_mode ? 1000.0 : 2000.0);
            if (last)
                break;
        }
    } else if (C.rank == 1 && active) {
        for (long k2 = 0;; k2++) {
            while (n_recv < k2 + 1 || n_send < sends_posted)
                pump();
            unsigned fl = (unsigned)(last_hdr & 0xff);
            put(v, (long)(last_hdr >> 8), 0);
            if (fl & 1)
                break;
        }
        while (n_send < sends_posted)
            pump();
    }
    pb_barrier(&C);
    if (active)
        teardown();
    pb_barrier(&C);
    return n;
}

static void dump(FILE *f)
{
    fprintf(f, "[rank %u] sends posted %ld, SEND_END %ld, PUT_END %ld, entries posted %ld\n",
            C.rank, sends_posted, n_send, n_recv, nmes);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: ptlrun -n 2 [ptlrun options] ptl_match [options]   (or alone: job of one)\n"
"Match cost against K posted non-matching entries.\n"
"  -o FILE       append CSV rows to FILE (header if new)\n"
"  -V LIST       variants: head,tail,ignore,srcid (default all)\n"
"  -K LIST       list lengths (default 0,1,2,4,...,4096; 0 is always run)\n"
"  -t SEC        time per point (default 0.1)\n"
"  -n N          at most N timed iterations per point (default 1000000)\n"
"  -s SIZE       message size (default 8)\n"
"  --self        rank 0 puts to itself even in a larger job\n"
"  -q            no table (CSV only)\n"
"  -h, --help    this text\n"
"Columns: variant, K, entries walked, iterations, p50 and mean us (half round\n"
"trip with 2 ranks, put->PUT_END alone), ns per match over K=0 (p50), ns per\n"
"extra entry walked.\n");
}

int main(int argc, char **argv)
{
    o.tpoint = 0.1;
    o.maxiters = 1000000;
    o.size = 8;
    for (int v = 0; v < V_NR; v++)
        o.want[v] = 1;
    o.nks = 0;
    o.ks[o.nks++] = 0;
    for (long k = 1; k <= 4096; k *= 2)
        o.ks[o.nks++] = k;
    static const struct option lo_opts[] = {{"self", 0, 0, 1}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:V:K:t:n:s:qh", lo_opts, NULL)) != -1) {
        switch (c) {
        case 'o': o.csv = optarg; break;
        case 'V': {
            for (int v = 0; v < V_NR; v++)
                o.want[v] = 0;
            char *d = strdup(optarg), *sv = NULL;
            for (char *t = strtok_r(d, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                int f = 0;
                for (int v = 0; v < V_NR; v++)
                    if (!strcmp(t, vname[v]))
                        o.want[v] = f = 1;
                if (!f)
                    pb_die("-V: unknown variant '%s'", t);
            }
            free(d);
            break;
        }
        case 'K': {
            o.nks = 0;
            o.ks[o.nks++] = 0;
            char *d = strdup(optarg), *sv = NULL;
            for (char *t = strtok_r(d, ",", &sv); t && o.nks < 64; t = strtok_r(NULL, ",", &sv)) {
                long k = pb_atol_or_die("-K", t);
                if (k < 0 || k >= MAXK)
                    pb_die("-K: 0..%d", MAXK - 1);
                if (k > o.ks[o.nks - 1])
                    o.ks[o.nks++] = k;
            }
            free(d);
            break;
        }
        case 't': o.tpoint = pb_atof_or_die("-t", optarg); break;
        case 'n': o.maxiters = pb_atol_or_die("-n", optarg); break;
        case 's': if (pb_parse_size(optarg, &o.size)) pb_die("bad -s"); break;
        case 1: o.self = 1; break;
        case 'q': o.quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        usage(stderr);
        exit(2);
    }
    if (o.maxiters < 10)
        o.maxiters = 10;
    pb_init(&C);
    pb_watchdog_start(&C, dump, o.tpoint * 1.1);
    self_mode = C.nranks == 1 || o.self;
    active = self_mode ? C.rank == 0 : C.rank <= 1;
    peer = C.ids[self_mode ? C.rank : (C.rank == 0 ? 1 : 0)];
    long kmax = o.ks[o.nks - 1];
    mes = calloc((size_t)kmax + 2, sizeof *mes);
    sbuf = pb_alloc(o.size);
    rbuf = pb_alloc(o.size);
    PB_CHECK(PtlEQAlloc(C.ni, 4096, PTL_EQ_HANDLER_NONE, &eq));
    ptl_md_t s = {sbuf, o.size, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, eq};
    PB_CHECK(PtlMDBind(C.ni, s, PTL_RETAIN, &smd));
    double cpu = sched_getcpu(), *cpus = malloc(sizeof(double) * C.nranks);
    pb_gather(&C, &cpu, 1, cpus);
    FILE *csv = NULL;
    if (C.rank == 0) {
        csv = pb_csv_open(o.csv, "bench,impl,variant,k,walked,iters,p50_us,mean_us,"
                                 "ns_per_match,ns_per_entry,ns_per_match_mean,setup");
        if (!o.quiet) {
            printf("# ptl_match: %s mode, %s, %zu-byte puts, rank 0 on cpu %d", C.mode,
                   self_mode ? "self (put->PUT_END)" : "2 ranks (half round trip)", o.size,
                   (int)cpus[0]);
            if (!self_mode)
                printf(", rank 1 on cpu %d", (int)cpus[1]);
            printf("\n%-7s %5s %6s %8s %9s %9s %12s %12s\n", "variant", "K", "walked", "iters",
                   "p50 us", "mean us", "ns/match", "ns/entry");
        }
    }
    free(cpus);
    double *lat = malloc(sizeof(double) * (size_t)(o.maxiters + 1));
    for (int v = 0; v < V_NR; v++) {
        if (!o.want[v])
            continue;
        double base50 = 0, basemean = 0;
        for (int i = 0; i < o.nks; i++) {
            long k = o.ks[i];
            long n = point(v, k, lat);
            if (C.rank != 0)
                continue;
            pb_stats st;
            pb_stats_of(lat, n, &st);
            if (k == 0) {
                base50 = st.p50;
                basemean = st.mean;
            }
            long walked = v == V_HEAD ? 1 : k + 1;
            double dm = (st.p50 - base50) * 1000.0, dmm = (st.mean - basemean) * 1000.0;
            double per = walked > 1 ? dm / (double)(walked - 1) : 0.0;
            if (!o.quiet)
                printf("%-7s %5ld %6ld %8ld %9.3f %9.3f %12.1f %12.2f\n", vname[v], k, walked,
                       st.n, st.p50, st.mean, dm, per);
            if (csv)
                fprintf(csv, "match,%s,%s,%ld,%ld,%ld,%.4f,%.4f,%.1f,%.3f,%.1f,%s\n", C.impl,
                        vname[v], k, walked, st.n, st.p50, st.mean, dm, per, dmm,
                        self_mode ? "self" : "pair");
            fflush(stdout);
        }
    }
    free(lat);
    free(mes);
    if (csv)
        fclose(csv);
    return pb_fini(&C) ? 1 : 0; /* dropped messages: reported by pb_fini */
}
