/*
 * ptl_plain - the plain client of issue 11's report, as its author would
 * write it: a two-rank ping-pong, one EQ per rank, a receive MD with
 * PTL_MD_THRESH_INF | PTL_MD_MANAGE_REMOTE (START events on unless
 * --start off), a bound source MD whose EQ receives SEND_START/SEND_END
 * (PTL_EQ_NONE with --send-end off), PtlPut, and one wait call per event.
 * The client looks at what a client looks at: each event's type and
 * ni_fail_type, and the first word of the data it received (the iteration,
 * every iteration). Nothing else: no expected-event records, no watchdog
 * stores, no data patterns. bench/ptl_patterns runs the same shape with its
 * checks (every event's fields against a record), which cost it about 30-60 ns
 * per half round trip on this machine (bench/results-notes.md, "Fifty-seventh
 * session"); this is the library's share alone, for comparison with mpibench
 * lat, which checks nothing in its timed iterations either.
 *
 *   ptlrun -n 2 [--host-matching] [--cpus 0,1] -- ptl_plain [options]
 *     --wait eqwait|eqpoll|eqget   PtlEQWait, PtlEQPoll(FOREVER), PtlEQGet spin
 *     --start on|off               START events (default on)
 *     --send-end on|off            the source MD's EQ (default on)
 *     --size N                     bytes per message, 8 to 4096 (default 8)
 *     -n N                         timed iterations (default 30000; a tenth more first)
 * Output (rank 0): one line, half round trip in us:
 *   ptl_plain,IMPL,WAIT,start=S,send_end=E,SIZE,ITERS,mean,p50,p99,max,over100us
 */
#include "bench_util.h"

#include <stdlib.h>
#include <string.h>

#define PT_PLAIN (PB_PT_FIRST_FREE + 1)
#define MB_PLAIN 0x7071ull
enum { W_EQWAIT, W_EQPOLL, W_EQGET };

static struct {
    int wait, start, send_end;
    size_t size;
    long iters;
} R = {W_EQWAIT, 1, 1, 8, 30000};

static void usage(void)
{
    fprintf(stderr, "usage: ptlrun -n 2 -- ptl_plain [--wait eqwait|eqpoll|eqget] [--start on|off] "
                    "[--send-end on|off] [--size N] [-n N]\n");
    exit(2);
}

static int on_off(const char *opt, const char *v)
{
    if (v && !strcmp(v, "on"))
        return 1;
    if (v && !strcmp(v, "off"))
        return 0;
    fprintf(stderr, "ptl_plain: %s wants on or off\n", opt);
    usage();
    return 0;
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--wait") && v) {
            R.wait = !strcmp(v, "eqwait") ? W_EQWAIT : !strcmp(v, "eqpoll") ? W_EQPOLL
                   : !strcmp(v, "eqget")  ? W_EQGET : -1;
            if (R.wait < 0)
                usage();
        } else if (!strcmp(a, "--start")) {
            R.start = on_off(a, v);
        } else if (!strcmp(a, "--send-end")) {
            R.send_end = on_off(a, v);
        } else if (!strcmp(a, "--size") && v) {
            if (pb_parse_size(v, &R.size) != 0 || R.size < 8 || R.size > 4096)
                usage();
        } else if (!strcmp(a, "-n") && v) {
            R.iters = pb_atol_or_die("-n", v);
            if (R.iters < 1)
                usage();
        } else {
            usage();
        }
        i++;
    }
}

/* One event, by the wait call the run uses; a failed one ends the run. */
static void next_event(ptl_handle_eq_t eq, ptl_event_t *ev)
{
    int rc, which;
    switch (R.wait) {
    case W_EQPOLL:
        rc = PtlEQPoll(&eq, 1, PTL_TIME_FOREVER, ev, &which);
        break;
    case W_EQGET:
        while ((rc = PtlEQGet(eq, ev)) == PTL_EQ_EMPTY)
            ;
        break;
    default:
        rc = PtlEQWait(eq, ev);
        break;
    }
    if (rc != PTL_OK)
        pb_die("wait: %s", PtlErrorStr((unsigned)rc));
    if (ev->ni_fail_type != PTL_NI_OK)
        pb_die("a failed event (%s)", PtlEventKindStr(ev->type));
}

/* Until the peer's message of iteration it is in and, with an EQ on the
 * source, our own put has ended (sends: SEND_ENDs still owed). */
static void wait_turn(ptl_handle_eq_t eq, const uint64_t *rbuf, long it, int *sends)
{
    int got = 0;
    while (!got || *sends > 0) {
        ptl_event_t ev;
        next_event(eq, &ev);
        if (ev.type == PTL_EVENT_PUT_END) {
            if (rbuf[0] != (uint64_t)it)
                pb_die("iteration %ld: received the data of iteration %llu", it,
                       (unsigned long long)rbuf[0]);
            got = 1;
        } else if (ev.type == PTL_EVENT_SEND_END) {
            (*sends)--;
        }
    }
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    pb_ctx c;
    pb_init(&c);
    if (c.nranks != 2)
        pb_die("ptl_plain runs with 2 ranks");
    pb_watchdog_start(&c, NULL, 1.0);
    ptl_process_id_t peer = c.ids[c.rank ^ 1u];
    ptl_handle_eq_t eq;
    PB_CHECK(PtlEQAlloc(c.ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    uint64_t *rbuf = pb_alloc(R.size), *sbuf = pb_alloc(R.size);
    unsigned nostart = R.start ? 0 : PTL_MD_EVENT_START_DISABLE;
    ptl_handle_me_t me;
    ptl_handle_md_t rmd, smd;
    PB_CHECK(PtlMEAttach(c.ni, PT_PLAIN, peer, MB_PLAIN, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_t d = {rbuf, R.size, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | nostart, NULL, eq};
    PB_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &rmd));
    ptl_md_t s = {sbuf, R.size, PTL_MD_THRESH_INF, 0, nostart, NULL,
                  R.send_end ? eq : PTL_EQ_NONE};
    PB_CHECK(PtlMDBind(c.ni, s, PTL_RETAIN, &smd));
    pb_barrier(&c);

    long warm = R.iters / 10, total = warm + R.iters;
    double *lat = c.rank == 0 ? malloc(sizeof(double) * (size_t)R.iters) : NULL;
    int sends = 0;
    for (long it = 0; it < total; it++) {
        double t0 = pb_now_ns();
        if (c.rank == 0) {
            sbuf[0] = (uint64_t)it;
            PB_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, peer, PT_PLAIN, 0, MB_PLAIN, 0, 0));
            sends += R.send_end;
            wait_turn(eq, rbuf, it, &sends);
            if (it >= warm)
                lat[it - warm] = (pb_now_ns() - t0) / 2000.0;
        } else {
            wait_turn(eq, rbuf, it, &sends); /* the ping, and our last answer's SEND_END */
            sbuf[0] = (uint64_t)it;
            PB_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, peer, PT_PLAIN, 0, MB_PLAIN, 0, 0));
            sends += R.send_end;
        }
    }
    while (sends > 0) { /* rank 1's last answer */
        ptl_event_t ev;
        next_event(eq, &ev);
        sends -= ev.type == PTL_EVENT_SEND_END;
    }
    if (c.rank == 0) {
        long over = 0;
        for (long i = 0; i < R.iters; i++)
            over += lat[i] > 100.0;
        pb_stats st;
        pb_stats_of(lat, R.iters, &st);
        static const char *const waits[] = {"eqwait", "eqpoll", "eqget"};
        printf("ptl_plain,%s,%s,start=%s,send_end=%s,%zu,%ld,%.3f,%.3f,%.3f,%.3f,%ld\n", c.impl,
               waits[R.wait], R.start ? "on" : "off", R.send_end ? "on" : "off", R.size, R.iters,
               st.mean, st.p50, st.p99, st.max, over);
        free(lat);
    }
    pb_fini(&c);
    return 0;
}
