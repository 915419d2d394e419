/* bench_util.c - see bench_util.h. */
#include "bench_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned g_rank_for_msgs;

void pb_die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "[rank %u] ", g_rank_for_msgs);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void pb_die_rc(const char *what, int rc, const char *file, int line)
{
    pb_die("%s:%d: %s: %s", file, line, what, PtlErrorStr((unsigned)rc));
}

double pb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static _Atomic unsigned long g_wait_seq; /* odd while a wait is in progress */

void pb_eq_wait(ptl_handle_eq_t eq, ptl_event_t *ev)
{
    atomic_fetch_add_explicit(&g_wait_seq, 1, memory_order_relaxed);
    int rc = PtlEQWait(eq, ev);
    atomic_fetch_add_explicit(&g_wait_seq, 1, memory_order_relaxed);
    if (rc == PTL_EQ_DROPPED)
        pb_die("event queue overflow (PTL_EQ_DROPPED): the benchmark's EQ is too small");
    if (rc != PTL_OK)
        pb_die("PtlEQWait: %s", PtlErrorStr((unsigned)rc));
    if (ev->ni_fail_type != PTL_NI_OK)
        pb_die("event %s failed: ni_fail_type %u", PtlEventKindStr(ev->type),
               (unsigned)ev->ni_fail_type);
}


static struct {
    pb_ctx *c;
    void (*dump)(FILE *f);
    double limit_s;
} g_wd;

static void *watchdog_main(void *arg)
{
    (void)arg;
    unsigned long last = 0;
    double since = 0;
    for (;;) {
        sleep(1);
        unsigned long s = atomic_load_explicit(&g_wait_seq, memory_order_relaxed);
        double now = pb_now_ns() / 1e9;
        if (!(s & 1) || s != last) {
            last = s;
            since = now;
            continue;
        }
        if (now - since < g_wd.limit_s)
            continue;
        fflush(stdout);
        fprintf(stderr, "[rank %u] watchdog: one event-queue wait has lasted %.0f s: hang.\n",
                g_wd.c->rank, now - since);
        if (g_wd.dump)
            g_wd.dump(stderr);
        fprintf(stderr, "[rank %u] messages dropped here since start-up: %ld\n", g_wd.c->rank,
                pb_drops(g_wd.c));
        fflush(stderr);
        _exit(3);
    }
    return NULL;
}

void pb_watchdog_start(pb_ctx *c, void (*dump)(FILE *f), double phase_s)
{
    const char *e = getenv("PB_WATCHDOG_S");
    double lim = e && *e ? atof(e) : 20.0;
    if (lim <= 0)
        return;
    if (lim < 3 * phase_s + 10)
        lim = 3 * phase_s + 10;
    g_wd.c = c;
    g_wd.dump = dump;
    g_wd.limit_s = lim;
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog_main, NULL) == 0)
        pthread_detach(t);
}

static char g_dummy[64];
static double g_gsend[PB_GATHER_MAX];
static ptl_handle_md_t g_gsend_md = PTL_INVALID_HANDLE;

static void post_target(pb_ctx *c, ptl_pt_index_t pt, void *buf, ptl_size_t len,
                        unsigned extra, ptl_handle_eq_t eq)
{
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    PB_CHECK(PtlMEAttach(c->ni, pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 0,
                         ~(ptl_match_bits_t)0, PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_t d = {buf, len, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE | extra, NULL, eq};
    PB_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
}

static void handshake(pb_ctx *c)
{
    if (c->nranks == 1)
        return;
    ptl_handle_eq_t heq;
    ptl_handle_md_t hmd;
    PB_CHECK(PtlEQAlloc(c->ni, 1024, PTL_EQ_HANDLER_NONE, &heq));
    ptl_md_t s = {g_dummy, 0, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE, NULL, heq};
    PB_CHECK(PtlMDBind(c->ni, s, PTL_RETAIN, &hmd));
    char *acked = calloc(c->nranks, 1);
    unsigned left = c->nranks - 1;
    acked[c->rank] = 1;
    double deadline = pb_now_ns() + 60e9;
    while (left) {
        for (unsigned r = 0; r < c->nranks; r++)
            if (!acked[r])
                (void)PtlPut(hmd, PTL_ACK_REQ, c->ids[r], PB_PT_HELLO, 0, 0, 0, c->rank);
        double until = pb_now_ns() + 20e6;
        while (left && pb_now_ns() < until) {
            ptl_event_t ev;
            int which;
            int rc = PtlEQPoll(&heq, 1, 5, &ev, &which);
            if ((rc != PTL_OK && rc != PTL_EQ_DROPPED) || ev.type != PTL_EVENT_ACK)
                continue;
            for (unsigned r = 0; r < c->nranks; r++)
                if (!acked[r] && c->ids[r].nid == ev.initiator.nid &&
                    c->ids[r].pid == ev.initiator.pid) {
                    acked[r] = 1;
                    left--;
                }
        }
        if (left && pb_now_ns() > deadline)
            pb_die("start-up handshake: %u peer(s) never answered in 60 s", left);
    }
    free(acked);
    /* hmd and heq stay: late ACKs of retried hellos land there harmlessly. */
}

void pb_init(pb_ctx *c)
{
    memset(c, 0, sizeof *c);
    int nif;
    PB_CHECK(PtlInit(&nif));
    PB_CHECK(PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1));
    PB_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &c->ni));
    PB_CHECK(PtlGetRank(c->ni, &c->rank, &c->nranks));
    PB_CHECK(PtlGetId(c->ni, &c->me));
    g_rank_for_msgs = c->rank;
    c->ids = calloc(c->nranks, sizeof *c->ids);
    for (unsigned r = 0; r < c->nranks; r++)
        PB_CHECK(PtlGetRankId(c->ni, r, &c->ids[r]));
    const char *off = getenv("PTL_OFFLOAD");
    c->offload = !(off && *off && strtol(off, NULL, 0) == 0);
    c->mode = c->offload ? "offload" : "host";
    c->impl = c->offload ? "ptl-offload" : "ptl-host";

    PB_CHECK(PtlEQAlloc(c->ni, 4 * c->nranks + 64, PTL_EQ_HANDLER_NONE, &c->bar_eq));
    PB_CHECK(PtlEQAlloc(c->ni, 2 * c->nranks + 64, PTL_EQ_HANDLER_NONE, &c->gat_eq));
    PB_CHECK(PtlEQAlloc(c->ni, 4 * c->nranks + 64, PTL_EQ_HANDLER_NONE, &c->gsend_eq));
    PB_CHECK(PtlEQAlloc(c->ni, 64, PTL_EQ_HANDLER_NONE, &c->bc_eq));
    post_target(c, PB_PT_BAR, g_dummy, 0, 0, c->bar_eq);
    post_target(c, PB_PT_BCAST, c->bc_buf, sizeof c->bc_buf, PTL_MD_MANAGE_REMOTE, c->bc_eq);
    if (c->rank == 0) {
        c->gat_buf = calloc((size_t)c->nranks * PB_GATHER_MAX, sizeof(double));
        post_target(c, PB_PT_GATHER, c->gat_buf,
                    (ptl_size_t)c->nranks * PB_GATHER_MAX * sizeof(double), PTL_MD_MANAGE_REMOTE,
                    c->gat_eq);
    }
    ptl_md_t z = {g_dummy, 0, PTL_MD_THRESH_INF, 0, 0, NULL, PTL_EQ_NONE};
    PB_CHECK(PtlMDBind(c->ni, z, PTL_RETAIN, &c->zero_md));
    ptl_md_t g = {g_gsend, sizeof g_gsend, PTL_MD_THRESH_INF, 0, PTL_MD_EVENT_START_DISABLE,
                  NULL, c->gsend_eq};
    PB_CHECK(PtlMDBind(c->ni, g, PTL_RETAIN, &g_gsend_md));
    /* The hello target is posted last: a peer that got our ACK knows every
     * control entry above is in place. */
    post_target(c, PB_PT_HELLO, g_dummy, 0, 0, PTL_EQ_NONE);
    handshake(c);
    pb_barrier(c);
    PB_CHECK(PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &c->drops0));
    pb_barrier(c); /* nothing is sent to a rank before it has read its count */
}

long pb_drops(pb_ctx *c)
{
    ptl_sr_value_t v = 0;
    PB_CHECK(PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &v));
    return (long)(v - c->drops0);
}

long pb_fini(pb_ctx *c)
{
    pb_barrier(c);
    double d = (double)pb_drops(c), *all = c->rank == 0 ? calloc(c->nranks, sizeof *all) : NULL;
    pb_gather(c, &d, 1, all);
    long total = 0;
    if (c->rank == 0) {
        for (unsigned r = 0; r < c->nranks; r++)
            if (all[r] > 0) {
                fprintf(stderr, "WARNING: rank %u dropped %.0f message(s) (PTL_SR_DROP_COUNT)\n",
                        r, all[r]);
                total += (long)all[r];
            }
        free(all);
    }
    PB_CHECK(PtlNIFini(c->ni));
    PtlFini();
    free(c->ids);
    free(c->gat_buf);
    return total;
}

static void wait_put_ends(ptl_handle_eq_t eq, unsigned n)
{
    while (n) {
        ptl_event_t ev;
        pb_eq_wait(eq, &ev);
        if (ev.type == PTL_EVENT_PUT_END)
            n--;
    }
}

void pb_barrier(pb_ctx *c)
{
    if (c->nranks == 1)
        return;
    if (c->rank == 0) {
        wait_put_ends(c->bar_eq, c->nranks - 1);
        for (unsigned r = 1; r < c->nranks; r++)
            PB_CHECK(PtlPut(c->zero_md, PTL_NO_ACK_REQ, c->ids[r], PB_PT_BAR, 0, 0, 0, 0));
    } else {
        PB_CHECK(PtlPut(c->zero_md, PTL_NO_ACK_REQ, c->ids[0], PB_PT_BAR, 0, 0, 0, 0));
        wait_put_ends(c->bar_eq, 1);
    }
}

void pb_gather(pb_ctx *c, const double *vals, int n, double *out)
{
    if (n < 1 || n > PB_GATHER_MAX)
        pb_die("pb_gather: %d values (1..%d)", n, PB_GATHER_MAX);
    if (c->rank == 0) {
        wait_put_ends(c->gat_eq, c->nranks - 1);
        for (unsigned r = 0; r < c->nranks; r++)
            memcpy(out + (size_t)r * n, r ? c->gat_buf + (size_t)r * PB_GATHER_MAX : vals,
                   sizeof(double) * (size_t)n);
    } else {
        memcpy(g_gsend, vals, sizeof(double) * (size_t)n);
        PB_CHECK(PtlPutRegion(g_gsend_md, 0, sizeof(double) * (size_t)n, PTL_NO_ACK_REQ,
                              c->ids[0], PB_PT_GATHER, 0, 0,
                              (ptl_size_t)c->rank * PB_GATHER_MAX * sizeof(double), 0));
        for (;;) {
            ptl_event_t ev;
            pb_eq_wait(c->gsend_eq, &ev);
            if (ev.type == PTL_EVENT_SEND_END)
                break;
        }
    }
    pb_barrier(c); /* nobody overwrites its slot before rank 0 has read it */
}

void pb_bcast(pb_ctx *c, double *vals, int n)
{
    if (n < 1 || n > PB_GATHER_MAX)
        pb_die("pb_bcast: %d values (1..%d)", n, PB_GATHER_MAX);
    if (c->rank == 0) {
        memcpy(g_gsend, vals, sizeof(double) * (size_t)n);
        for (unsigned r = 1; r < c->nranks; r++)
            PB_CHECK(PtlPutRegion(g_gsend_md, 0, sizeof(double) * (size_t)n, PTL_NO_ACK_REQ,
                                  c->ids[r], PB_PT_BCAST, 0, 0, 0, 0));
        for (unsigned left = c->nranks - 1; left;) {
            ptl_event_t ev;
            pb_eq_wait(c->gsend_eq, &ev);
            if (ev.type == PTL_EVENT_SEND_END)
                left--;
        }
    } else {
        wait_put_ends(c->bc_eq, 1);
        memcpy(vals, c->bc_buf, sizeof(double) * (size_t)n);
    }
    pb_barrier(c); /* the next broadcast cannot overwrite bc_buf before it is read */
}

/* ---- statistics ------------------------------------------------------------ */

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void pb_stats_of(double *v, long n, pb_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmpd);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += v[i];
    s->mean = sum / (double)n;
    s->p50 = v[n / 2];
    s->p99 = v[(long)((double)n * 0.99) < n ? (long)((double)n * 0.99) : n - 1];
    s->min = v[0];
    s->max = v[n - 1];
    for (long i = 0; i < n; i++)
        s->outliers += v[i] > 10.0 * s->p50;
}

/* ---- data patterns ------------------------------------------------------- */

static inline uint64_t pat_word(uint64_t seed, uint64_t k)
{
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (k + 1) * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

void pb_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    size_t words = len / 8;
    for (size_t k = 0; k < words; k++) {
        uint64_t w = pat_word(seed, k);
        memcpy(p + k * 8, &w, 8);
    }
    if (len % 8) {
        uint64_t w = pat_word(seed, words);
        memcpy(p + words * 8, &w, len % 8);
    }
}

size_t pb_check(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = buf;
    size_t words = len / 8, bad = 0;
    for (size_t k = 0; k <= words; k++) {
        size_t n = k < words ? 8 : len % 8;
        if (!n)
            break;
        uint64_t w = pat_word(seed, k), got = 0;
        memcpy(&got, p + k * 8, n);
        if (n < 8)
            w &= (1ull << (8 * n)) - 1;
        if (w != got)
            for (size_t b = 0; b < n; b++)
                bad += ((w >> (8 * b)) & 0xff) != ((got >> (8 * b)) & 0xff);
    }
    return bad;
}

/* ---- sizes --------------------------------------------------------------- */

int pb_parse_size(const char *s, size_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (end == s || errno)
        return -1;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024ull, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1024ull * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1024ull * 1024 * 1024, end++;
    if (*end == 'i' && (end[1] == 'B' || end[1] == 'b'))
        end += 2;
    else if (*end == 'B' || *end == 'b')
        end++;
    long long adj = 0; /* "4K-3", "1M+3": NetPIPE's perturbed sizes */
    if (*end == '+' || *end == '-') {
        char *e2;
        adj = strtoll(end, &e2, 10);
        if (e2 == end + 1)
            return -1;
        end = e2;
    }
    if (*end)
        return -1;
    long long r = (long long)(x * mul) + adj;
    if (r < 0)
        return -1;
    *v = (size_t)r;
    return 0;
}

int pb_parse_sizes(const char *s, size_t *out, int max)
{
    int n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n >= max || pb_parse_size(t, &out[n]) != 0) {
            free(dup);
            return -1;
        }
        n++;
    }
    free(dup);
    return n;
}

static int cmpsz(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int pb_size_list(size_t lo, size_t hi, int perturb, size_t *out, int max)
{
    int n = 0;
    if (lo == 0 && n < max)
        out[n++] = 0;
    for (size_t p = 1; p && p <= hi; p <<= 1) {
        long long cand[3] = {(long long)p - 3, (long long)p, (long long)p + 3};
        for (int k = 0; k < 3; k++) {
            if (!perturb && k != 1)
                continue;
            if (cand[k] < (long long)lo || cand[k] > (long long)hi || cand[k] < 0 || n >= max)
                continue;
            out[n++] = (size_t)cand[k];
        }
    }
    qsort(out, (size_t)n, sizeof *out, cmpsz);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || out[m - 1] != out[i])
            out[m++] = out[i];
    return m;
}

const char *pb_size_str(size_t s, char *buf, size_t len)
{
    size_t p = 1;
    while (p * 2 <= s + 3 && p < ((size_t)1 << 62))
        p *= 2;
    long long d = (long long)s - (long long)p;
    if (s >= 1024 && (d >= -3 && d <= 3)) {
        const char *u = p >= (1u << 20) ? "M" : "K";
        size_t v = p >= (1u << 20) ? p >> 20 : p >> 10;
        if (d)
            snprintf(buf, len, "%zu%s%+lld", v, u, d);
        else
            snprintf(buf, len, "%zu%s", v, u);
    } else {
        snprintf(buf, len, "%zu", s);
    }
    return buf;
}

void *pb_alloc(size_t len)
{
    if (len == 0)
        len = 1;
    size_t pg = 4096, n = (len + pg - 1) / pg * pg;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        pb_die("mmap %zu bytes: %s", n, strerror(errno));
    memset(p, 0, n);
    return p;
}

FILE *pb_csv_open(const char *path, const char *header)
{
    if (!path)
        return NULL;
    struct stat st;
    int fresh = stat(path, &st) != 0 || st.st_size == 0;
    FILE *f = fopen(path, "a");
    if (!f)
        pb_die("cannot open %s: %s", path, strerror(errno));
    if (fresh)
        fprintf(f, "%s\n", header);
    return f;
}

void pb_affinity(char *buf, size_t len)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    buf[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    size_t n = 0;
    for (int c = 0; c < CPU_SETSIZE && n + 8 < len; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
            e++;
        n += (size_t)snprintf(buf + n, len - n, n ? ",%d" : "%d", c);
        if (e > c)
            n += (size_t)snprintf(buf + n, len - n, "-%d", e);
        c = e;
    }
}

double pb_atof_or_die(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end)
        pb_die("bad value for %s: '%s'", opt, s);
    return v;
}

long pb_atol_or_die(const char *opt, const char *s)
{
    char *end;
    long v = strtol(s, &end, 0);
    if (end == s || *end)
        pb_die("bad value for %s: '%s'", opt, s);
    return v;
}

void pb_post_recv(pb_ctx *c, ptl_pt_index_t pt, void *buf, size_t len, ptl_handle_eq_t eq)
{
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    PB_CHECK(PtlMEAttach(c->ni, pt, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 0, 0,
                         PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_t d = {buf, len, PTL_MD_THRESH_INF, 0,
                  PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, NULL, eq};
    PB_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
}

void pb_flow_pump(ptl_handle_eq_t eq, pb_flow *f, ptl_pt_index_t data_pt, ptl_pt_index_t ctl_pt)
{
    ptl_event_t ev;
    pb_eq_wait(eq, &ev);
    if (ev.type == PTL_EVENT_SEND_END) {
        f->n_send++;
    } else if (ev.type == PTL_EVENT_PUT_END) {
        if (ev.pt_index == data_pt) {
            f->n_recv++;
            if (ev.hdr_data & 1) {
                f->stop_seen = 1;
                f->stop_round = (long)(ev.hdr_data >> 1);
            }
        } else if (ev.pt_index == ctl_pt) {
            f->n_ctl++;
        }
    }
}

void pb_flow_print(FILE *out, unsigned rank, const pb_flow *f, const char *ctl)
{
    fprintf(out, "[rank %u] sends posted %ld, SEND_END %ld, PUT_END data %ld, %s %ld, stop round %ld\n",
            rank, f->sends_posted, f->n_send, f->n_recv, ctl, f->n_ctl, f->stop_round);
}
