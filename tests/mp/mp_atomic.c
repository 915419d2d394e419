/*
 * mp_atomic - reduction puts (PtlAtomicPut, portals3_ext.h) longer than the
 * eager limit, rank 0 to rank 1 (2 ranks). Every type with SUM and one more
 * operation (MIN for the floating types, BXOR for the integers), at 4040 (just
 * past the eager limit), 65544 (the 64 KiB pull scratch and one element) and
 * 1048600 bytes, at remote offset 16 of a contiguous MD and of a 3-piece
 * iovec MD whose pieces end inside elements: every byte of the target checked
 * against a serial combine (untouched outside the region), PUT_END and the
 * ACK's mlength the length. Then truncated ones (the MD ends 4 bytes into an
 * element, eager and longer): PUT_END and the ACK carry PTL_NI_FAIL and the
 * target is unchanged. The CMake entries run it by default (rendezvous: the
 * target pulls and combines in 64 KiB parts), in copy mode (PTL_RNDV_MODE=2:
 * fragments combined as they come) and with CMA refused (PTL_CMA=0).
 *
 * mp_atomic threads: four threads of rank 0 issue such puts at once, several
 * in flight each, into overlapping and disjoint regions of rank 1's MDs (the
 * combines of different threads interleave on the same elements, every part
 * pulled through the target NI's one scratch); see "mp_atomic threads" below.
 */
#include "mp_util.h"

#include <portals3_ext.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_RED 5
#define ROFF 16
#define LMAX 1048600u
#define TMEM (ROFF + LMAX + 64)
#define TRUNC_LEN 65544u

static unsigned char *tmem, *want, *src, *tpiece[3];
static const size_t tplen[3] = {1001, 524287, TMEM - 1001 - 524287};

/* An ME with match bits `bits` on PT_RED and a 3-piece iovec MD on it. */
static void attach_iov3(struct mp *m, ptl_match_bits_t bits, unsigned char *const piece[3],
                        const size_t len[3], unsigned opts, ptl_handle_eq_t eq)
{
    ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    MP_CHECK(PtlMEAttach(m->ni, PT_RED, any, bits, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
    ptl_md_iovec_t iov[3];
    for (int k = 0; k < 3; k++) {
        iov[k].iov_base = piece[k];
        iov[k].iov_len = len[k];
    }
    ptl_md_t d = {iov, 3, PTL_MD_THRESH_INF, 0, opts | PTL_MD_IOVEC, NULL, eq};
    MP_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
}

static size_t tsize(ptl_datatype_t t)
{
    return t == PTL_INT32_T || t == PTL_FLOAT ? 4 : 8;
}

/* want[i] = want[i] OP s[i], one element type at a time: the serial result.
 * Sums and the bitwise operations on the integer types as unsigned (sums
 * wrap), MIN/MAX compared as the type (int32 and int64 signed). */
#define REF_LOOP(T, EXPR)                                                                          \
    for (size_t i = 0; i + sizeof(T) <= n; i += sizeof(T)) {                                       \
        T a, b;                                                                                    \
        memcpy(&a, d + i, sizeof a);                                                               \
        memcpy(&b, s + i, sizeof b);                                                               \
        a = (EXPR);                                                                                \
        memcpy(d + i, &a, sizeof a);                                                               \
    }
#define REF_INT(T, UT)                                                                             \
    switch (op) {                                                                                  \
    case PTL_SUM: REF_LOOP(UT, a + b) break;                                                       \
    case PTL_MIN: REF_LOOP(T, b < a ? b : a) break;                                                \
    case PTL_MAX: REF_LOOP(T, b > a ? b : a) break;                                                \
    case PTL_BAND: REF_LOOP(UT, a & b) break;                                                      \
    case PTL_BOR: REF_LOOP(UT, a | b) break;                                                       \
    case PTL_BXOR: REF_LOOP(UT, a ^ b) break;                                                      \
    default: mp_die("no such operation %d", (int)op);                                              \
    }
#define REF_FLOAT(T)                                                                               \
    switch (op) {                                                                                  \
    case PTL_SUM: REF_LOOP(T, a + b) break;                                                        \
    case PTL_MIN: REF_LOOP(T, b < a ? b : a) break;                                                \
    case PTL_MAX: REF_LOOP(T, b > a ? b : a) break;                                                \
    default: mp_die("no such floating operation %d", (int)op);                                     \
    }
static void reference(unsigned char *d, const unsigned char *s, size_t n, ptl_op_t op,
                      ptl_datatype_t t)
{
    switch (t) {
    case PTL_INT32_T: REF_INT(int32_t, uint32_t) break;
    case PTL_INT64_T: REF_INT(int64_t, uint64_t) break;
    case PTL_UINT64_T: REF_INT(uint64_t, uint64_t) break;
    case PTL_FLOAT: REF_FLOAT(float) break;
    case PTL_DOUBLE: REF_FLOAT(double) break;
    default: mp_die("no such type %d", (int)t);
    }
}

/* Bytes of a value pattern: floats are small integers (exact sums), the
 * integer types any bits. */
static void values(unsigned char *buf, size_t n, ptl_datatype_t t, unsigned who, unsigned tag)
{
    if (t == PTL_FLOAT || t == PTL_DOUBLE) {
        for (size_t i = 0; i + tsize(t) <= n; i += tsize(t)) {
            int v = (int)mp_pattern(who, tag, i) - 128;
            if (t == PTL_FLOAT) {
                float f = (float)v * 0.5f;
                memcpy(buf + i, &f, 4);
            } else {
                double d = (double)v * 0.25;
                memcpy(buf + i, &d, 8);
            }
        }
        for (size_t i = n - n % tsize(t); i < n; i++)
            buf[i] = mp_pattern(who, tag, i);
    } else
        mp_fill(buf, n, who, tag, 0);
}

/* The iovec MD's bytes, gathered into out, or set from in. */
static void gather(unsigned char *out)
{
    size_t o = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(out + o, tpiece[k], tplen[k]);
        o += tplen[k];
    }
}
static void scatter(const unsigned char *in)
{
    size_t o = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(tpiece[k], in + o, tplen[k]);
        o += tplen[k];
    }
}

static const char *tname(ptl_datatype_t t)
{
    static const char *n[] = {"int32", "int64", "uint64", "float", "double"};
    return (unsigned)t < 5 ? n[t] : "?";
}

static const char *oname(ptl_op_t op)
{
    static const char *n[] = {"sum", "min", "max", "band", "bor", "bxor"};
    return (unsigned)op < 6 ? n[op] : "?";
}

/* ---- mp_atomic threads ------------------------------------------------------
 * Rank 0's TH_N threads, each with its own source MD and EQ, issue reduction
 * puts to rank 1 at once, a round's puts all in flight before any is waited
 * for (then its SEND_ENDs and ACKs, any order, bounded): lengths th_lens
 * (eager, just past the eager limit, the 64 KiB pull scratch and an element,
 * ~300 KB, 1 MiB). Rank 1's regions (TH_RSZ bytes each, TH_GAP untouched
 * bytes around each):
 *   SUM64  every thread, SUM on int64 and uint64 (one wrapping sum)
 *   XOR    threads 1-3, BXOR on int32/int64/uint64, at 4-byte offsets
 *   MAXD   threads 0 and 3, MAX on double
 *   MIN32  threads 0 and 2, MIN on int32
 *   IOV    threads 1 and 3, SUM on int64/uint64 into a 3-piece iovec MD
 *          whose pieces end inside elements
 *   P0-P3  thread t's own, one operation per round (a thread's second round
 *          starts when its first one's ACKs are in)
 * The operations that meet on an element commute, so in whatever order the
 * target's engine takes the parts of the puts of different threads (all
 * pulled through the one 64 KiB scratch of its NI) the result is the serial
 * one: rank 1 computes it with reference() and compares every byte (regions
 * and gaps), after a PUT_END for each put (hdr_data names the put: once
 * each; mlength, rlength, offset, match bits, initiator). Each thread
 * matches its ACKs to its puts (match bits, offset, mlength).
 */
#define TH_N        4
#define TH_ROUNDS   2
#define TH_PER      3                     /* puts per region and round */
#define TH_MAXP     (5 * TH_PER)          /* puts per thread and round, at most */
#define TH_RSZ      (1048576u + 131072u)  /* a region */
#define TH_GAP      4096u
#define TH_BITS_TM  10                    /* the contiguous MD: every region but IOV */
#define TH_BITS_IOV 11
#define TH_IOV_LEN  (TH_RSZ + 8)          /* IOV at offset 4, 4 bytes after it */
#define TH_WAIT_MS  60000                 /* a round's events; all PUT_ENDs */

enum { RG_SUM64, RG_XOR, RG_MAXD, RG_MIN32, RG_IOV, RG_P0, RG_P1, RG_P2, RG_P3, RG_N };
#define TH_TM_LEN (TH_GAP + (RG_N - 1) * (TH_RSZ + TH_GAP))
static const char *const rg_name[RG_N] = {"SUM64", "XOR", "MAXD", "MIN32", "IOV",
                                          "P0",    "P1",  "P2",   "P3"};
static const int th_regions[TH_N][6] = {
    {RG_SUM64, RG_MAXD, RG_MIN32, RG_P0, -1},
    {RG_SUM64, RG_XOR, RG_IOV, RG_P1, -1},
    {RG_SUM64, RG_XOR, RG_MIN32, RG_P2, -1},
    {RG_SUM64, RG_XOR, RG_MAXD, RG_IOV, RG_P3, -1},
};
static const size_t th_lens[5] = {1000, 4040, 65544, 300000, 1048576};
static const size_t th_plen[3] = {1001, 524287, TH_IOV_LEN - 1001 - 524287};

struct th_put {
    int rg;
    ptl_op_t op;
    ptl_datatype_t t;
    size_t len, roff, loff; /* roff: in the target MD; loff: in the thread's source MD */
};

/* Where region rg starts in its MD. */
static size_t th_base(int rg)
{
    if (rg == RG_IOV)
        return 4;
    return TH_GAP + (size_t)(rg < RG_IOV ? rg : rg - 1) * (TH_RSZ + TH_GAP);
}

/* The operation and type of put j of thread t, round r, into region rg. */
static void th_op(int rg, unsigned t, unsigned r, unsigned j, ptl_op_t *op, ptl_datatype_t *dt)
{
    static const ptl_datatype_t i64[2] = {PTL_INT64_T, PTL_UINT64_T};
    static const ptl_datatype_t ints[3] = {PTL_INT32_T, PTL_INT64_T, PTL_UINT64_T};
    switch (rg) {
    case RG_SUM64:
    case RG_IOV: *op = PTL_SUM, *dt = i64[(t + j) % 2]; break;
    case RG_XOR: *op = PTL_BXOR, *dt = ints[(t + r + j) % 3]; break;
    case RG_MAXD: *op = PTL_MAX, *dt = PTL_DOUBLE; break;
    case RG_MIN32: *op = PTL_MIN, *dt = PTL_INT32_T; break;
    case RG_P0: *op = r ? PTL_BAND : PTL_BOR, *dt = r ? PTL_INT32_T : PTL_UINT64_T; break;
    case RG_P1: *op = r ? PTL_SUM : PTL_MAX, *dt = r ? PTL_INT32_T : PTL_FLOAT; break;
    case RG_P2: *op = r ? PTL_BXOR : PTL_MIN, *dt = r ? PTL_INT64_T : PTL_FLOAT; break;
    default: *op = r ? PTL_BAND : PTL_SUM, *dt = r ? PTL_UINT64_T : PTL_DOUBLE; break;
    }
}

static uint64_t th_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ x >> 30) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ x >> 27) * 0x94D049BB133111EBull;
    return x ^ x >> 31;
}

/* Thread t's puts of round r, in issue order (regions interleaved); returns
 * how many. */
static unsigned th_plan(unsigned t, unsigned r, struct th_put *p)
{
    unsigned n = 0;
    size_t loff = 0;
    for (unsigned j = 0; j < TH_PER; j++)
        for (int k = 0; th_regions[t][k] >= 0; k++) {
            struct th_put *q = &p[n++];
            q->rg = th_regions[t][k];
            th_op(q->rg, t, r, j, &q->op, &q->t);
            q->len = th_lens[(t + 2 * r + j + (unsigned)q->rg) % 5];
            size_t align = q->rg == RG_XOR || q->rg == RG_MIN32 ? 4 : 8;
            uint64_t h = th_mix(((uint64_t)t << 24) ^ ((uint64_t)r << 16) ^ (j << 8) ^
                                (unsigned)q->rg);
            q->roff = th_base(q->rg) + h % (TH_RSZ - q->len + 1) / align * align;
            q->loff = loff;
            loff += q->len;
        }
    return n;
}

static unsigned th_tag(unsigned t, unsigned r, unsigned i) { return 1000 + t * 100 + r * 40 + i; }

/* Values for op on type t: small numbers for the floating types (every sum
 * exact), few bits set for BOR, most for BAND (neither saturates), else any. */
static void th_values(unsigned char *buf, size_t n, ptl_op_t op, ptl_datatype_t t, unsigned who,
                      unsigned tag)
{
    if (t == PTL_FLOAT || t == PTL_DOUBLE) {
        values(buf, n, t, who, tag);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t a = mp_pattern(who, tag, i), b = mp_pattern(who, tag + 7001, i),
                c = mp_pattern(who, tag + 7002, i);
        buf[i] = op == PTL_BOR ? a & b & c : op == PTL_BAND ? a | b | c : a;
    }
}

struct th {
    struct mp *m;
    unsigned t, puts;
    pthread_barrier_t *go;
};

static void *th_run(void *arg)
{
    struct th *p = arg;
    struct mp *m = p->m;
    unsigned t = p->t;
    struct th_put plan[TH_ROUNDS][TH_MAXP];
    unsigned np[TH_ROUNDS];
    size_t need = 0;
    for (unsigned r = 0; r < TH_ROUNDS; r++) {
        np[r] = th_plan(t, r, plan[r]);
        const struct th_put *q = &plan[r][np[r] - 1];
        if (q->loff + q->len > need)
            need = q->loff + q->len;
    }
    unsigned char *buf = malloc(need);
    if (!buf)
        mp_die("thread %u: out of memory", t);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 4 * TH_MAXP, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = mp_bind(m, buf, need, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    for (unsigned r = 0; r < TH_ROUNDS; r++) {
        const struct th_put *pr = plan[r];
        for (unsigned i = 0; i < np[r]; i++)
            th_values(buf + pr[i].loff, pr[i].len, pr[i].op, pr[i].t, 0, th_tag(t, r, i));
        if (r == 0) {
            mp_doing("threads: waiting for the other threads");
            pthread_barrier_wait(p->go); /* the four start together */
        }
        mp_doing("threads: reduction puts in flight");
        for (unsigned i = 0; i < np[r]; i++) {
            const struct th_put *q = &pr[i];
            int rc = PtlAtomicPut(md, q->loff, q->len, PTL_ACK_REQ, m->ids[1], PT_RED, 0,
                                  q->rg == RG_IOV ? TH_BITS_IOV : TH_BITS_TM, q->roff,
                                  (ptl_hdr_data_t)(t << 16 | r << 8 | i), q->op, q->t);
            if (rc != PTL_OK)
                mp_die("thread %u round %u put %u (%s of %zu bytes of %s into %s): "
                       "PtlAtomicPut returned %s (%d)", t, r, i, oname(q->op), q->len,
                       tname(q->t), rg_name[q->rg], PtlErrorStr((unsigned)rc), rc);
        }
        bool acked[TH_MAXP] = {false};
        unsigned sends = 0, acks = 0;
        uint64_t until = mp_now_ms() + TH_WAIT_MS;
        while (sends < np[r] || acks < np[r]) {
            uint64_t now = mp_now_ms();
            ptl_event_t ev;
            if (now >= until || !mp_poll(eq, &ev, (unsigned)(until - now)))
                mp_die("thread %u round %u: %u of %u SEND_END and %u of %u ACK within %d ms", t,
                       r, sends, np[r], acks, np[r], TH_WAIT_MS);
            if (ev.ni_fail_type != PTL_NI_OK)
                mp_die("thread %u round %u: %s with ni_fail_type %s", t, r,
                       PtlEventKindStr(ev.type),
                       PtlNIFailStr(PTL_INVALID_HANDLE, ev.ni_fail_type));
            if (ev.type == PTL_EVENT_SEND_END) {
                if (++sends > np[r])
                    mp_die("thread %u round %u: more SEND_ENDs than puts", t, r);
                continue;
            }
            if (ev.type != PTL_EVENT_ACK)
                mp_die("thread %u round %u: unexpected %s", t, r, PtlEventKindStr(ev.type));
            unsigned i = 0;
            for (; i < np[r]; i++) {
                const struct th_put *q = &pr[i];
                if (!acked[i] && ev.mlength == q->len && ev.offset == q->roff &&
                    ev.match_bits == (q->rg == RG_IOV ? TH_BITS_IOV : TH_BITS_TM))
                    break;
            }
            if (i == np[r])
                mp_die("thread %u round %u: an ACK (mlength %llu, offset %llu, match bits "
                       "%llu) that no put of the round is waiting for", t, r,
                       (unsigned long long)ev.mlength, (unsigned long long)ev.offset,
                       (unsigned long long)ev.match_bits);
            acked[i] = true;
            acks++;
        }
        p->puts += np[r];
    }
    MP_CHECK(PtlMDUnlink(md));
    MP_CHECK(PtlEQFree(eq));
    free(buf);
    return NULL;
}

/* Where byte i of region rg's MD is: a region and the offset in it, or a gap. */
static void th_where(int md_iov, size_t i, char *out, size_t n)
{
    for (int rg = 0; rg < RG_N; rg++) {
        if ((rg == RG_IOV) != md_iov)
            continue;
        size_t b = th_base(rg);
        if (i >= b && i < b + TH_RSZ) {
            snprintf(out, n, "region %s offset %zu", rg_name[rg], i - b);
            return;
        }
    }
    snprintf(out, n, "a gap between the regions");
}

/* Rank 1's check of one MD: got against want, every byte; a difference names
 * the puts that cover the byte. */
static void th_compare(const unsigned char *got, const unsigned char *want, size_t n, int md_iov)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i] && !bad++)
            first = i;
    if (!bad)
        return;
    char where[96];
    th_where(md_iov, first, where, sizeof where);
    mp_log("%zu bytes of the %s MD differ from the serial result; the first, byte %zu (%s), "
           "is %#x, want %#x; the puts over it:", bad, md_iov ? "iovec" : "contiguous", first,
           where, got[first], want[first]);
    struct th_put plan[TH_MAXP];
    for (unsigned t = 0; t < TH_N; t++)
        for (unsigned r = 0; r < TH_ROUNDS; r++) {
            unsigned np = th_plan(t, r, plan);
            for (unsigned i = 0; i < np; i++) {
                const struct th_put *q = &plan[i];
                if ((q->rg == RG_IOV) == md_iov && first >= q->roff && first < q->roff + q->len)
                    mp_log("  thread %u round %u put %u: %s of %zu bytes of %s at MD offset %zu",
                           t, r, i, oname(q->op), q->len, tname(q->t), q->roff);
            }
        }
    mp_die("threads: concurrent reduction puts gave a wrong result");
}

static int threads_mode(struct mp *m)
{
    ptl_handle_eq_t eq = PTL_EQ_NONE;
    unsigned char *tm = NULL, *twant = NULL, *iwant = NULL, *igot = NULL, *piece[3] = {NULL};
    unsigned total = 0;
    struct th_put plan[TH_MAXP];
    for (unsigned t = 0; t < TH_N; t++)
        for (unsigned r = 0; r < TH_ROUNDS; r++)
            total += th_plan(t, r, plan);
    if (m->rank == 1) {
        tm = malloc(TH_TM_LEN);
        twant = malloc(TH_TM_LEN);
        iwant = malloc(TH_IOV_LEN);
        igot = malloc(TH_IOV_LEN);
        for (int k = 0; k < 3; k++)
            piece[k] = malloc(th_plen[k]);
        if (!tm || !twant || !iwant || !igot || !piece[0] || !piece[1] || !piece[2])
            mp_die("out of memory");
        /* the start: any bytes, then each region's values for its first operation */
        mp_fill(twant, TH_TM_LEN, 1, 49, 0);
        mp_fill(iwant, TH_IOV_LEN, 1, 50, 0);
        for (int rg = 0; rg < RG_N; rg++) {
            ptl_op_t op;
            ptl_datatype_t dt;
            th_op(rg, 0, 0, 0, &op, &dt);
            th_values((rg == RG_IOV ? iwant : twant) + th_base(rg), TH_RSZ, op, dt, 1,
                      60 + (unsigned)rg);
        }
        memcpy(tm, twant, TH_TM_LEN);
        for (size_t k = 0, o = 0; k < 3; o += th_plen[k], k++)
            memcpy(piece[k], iwant + o, th_plen[k]);
        MP_CHECK(PtlEQAlloc(m->ni, 2 * total + 64, PTL_EQ_HANDLER_NONE, &eq));
        unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
        mp_post(m, PT_RED, TH_BITS_TM, tm, TH_TM_LEN, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN,
                NULL);
        attach_iov3(m, TH_BITS_IOV, piece, th_plen, opts, eq);
    }
    mp_barrier(m);

    if (m->rank == 0) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, TH_N);
        pthread_t th[TH_N];
        struct th arg[TH_N];
        for (unsigned t = 0; t < TH_N; t++) {
            arg[t] = (struct th){m, t, 0, &go};
            if (pthread_create(&th[t], NULL, th_run, &arg[t]))
                mp_die("pthread_create");
        }
        unsigned acked = 0;
        for (unsigned t = 0; t < TH_N; t++) {
            pthread_join(th[t], NULL);
            acked += arg[t].puts;
        }
        pthread_barrier_destroy(&go);
        mp_log("threads: %u reduction puts from %d threads ACKed", acked, TH_N);
        mp_fini(m);
        return 0;
    }

    /* rank 1: a PUT_END for every put, each once */
    static bool seen[TH_N][TH_ROUNDS][TH_MAXP];
    mp_doing("threads: waiting for the PUT_ENDs");
    uint64_t until = mp_now_ms() + TH_WAIT_MS;
    for (unsigned got = 0; got < total; got++) {
        uint64_t now = mp_now_ms();
        ptl_event_t ev;
        if (now >= until || !mp_poll(eq, &ev, (unsigned)(until - now)))
            mp_die("threads: %u of %u PUT_ENDs within %d ms", got, total, TH_WAIT_MS);
        if (ev.type != PTL_EVENT_PUT_END || ev.ni_fail_type != PTL_NI_OK)
            mp_die("threads: %s with ni_fail_type %s, want PUT_END ok",
                   PtlEventKindStr(ev.type), PtlNIFailStr(PTL_INVALID_HANDLE, ev.ni_fail_type));
        unsigned t = (unsigned)(ev.hdr_data >> 16), r = (unsigned)(ev.hdr_data >> 8 & 0xff),
                 i = (unsigned)(ev.hdr_data & 0xff);
        if (ev.hdr_data >> 24 || t >= TH_N || r >= TH_ROUNDS || i >= th_plan(t, r, plan))
            mp_die("threads: PUT_END with hdr_data %#llx: no such put",
                   (unsigned long long)ev.hdr_data);
        const struct th_put *q = &plan[i];
        if (seen[t][r][i])
            mp_die("threads: a second PUT_END for thread %u round %u put %u", t, r, i);
        seen[t][r][i] = true;
        ptl_match_bits_t bits = q->rg == RG_IOV ? TH_BITS_IOV : TH_BITS_TM;
        if (ev.mlength != q->len || ev.rlength != q->len || ev.offset != q->roff ||
            ev.match_bits != bits || ev.initiator.nid != m->ids[0].nid ||
            ev.initiator.pid != m->ids[0].pid)
            mp_die("threads: PUT_END of thread %u round %u put %u: mlength %llu rlength %llu "
                   "offset %llu bits %llu, want %zu at %zu bits %llu (from rank 0)", t, r, i,
                   (unsigned long long)ev.mlength, (unsigned long long)ev.rlength,
                   (unsigned long long)ev.offset, (unsigned long long)ev.match_bits, q->len,
                   q->roff, (unsigned long long)bits);
    }
    mp_expect_none(eq, 100, "threads: after the last PUT_END");

    /* the serial result: every put combined in turn (those that meet commute) */
    unsigned char *s = malloc(th_lens[4]);
    if (!s)
        mp_die("out of memory");
    for (unsigned t = 0; t < TH_N; t++)
        for (unsigned r = 0; r < TH_ROUNDS; r++) {
            unsigned np = th_plan(t, r, plan);
            for (unsigned i = 0; i < np; i++) {
                const struct th_put *q = &plan[i];
                th_values(s, q->len, q->op, q->t, 0, th_tag(t, r, i));
                reference((q->rg == RG_IOV ? iwant : twant) + q->roff, s, q->len, q->op, q->t);
            }
        }
    free(s);
    th_compare(tm, twant, TH_TM_LEN, 0);
    for (size_t k = 0, o = 0; k < 3; o += th_plen[k], k++)
        memcpy(igot + o, piece[k], th_plen[k]);
    th_compare(igot, iwant, TH_IOV_LEN, 1);
    mp_log("threads: %u reduction puts from %d threads, every byte of %zu checked", total, TH_N,
           (size_t)TH_TM_LEN + TH_IOV_LEN);
    mp_fini(m);
    printf("mp_atomic threads: OK\n");
    free(tm);
    free(twant);
    free(iwant);
    free(igot);
    for (int k = 0; k < 3; k++)
        free(piece[k]);
    return 0;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (m.size != 2)
        mp_die("run with 2 ranks");
    if (argc > 1) {
        if (!strcmp(argv[1], "threads"))
            return threads_mode(&m);
        mp_die("usage: mp_atomic [threads]");
    }
    unsigned r = m.rank;
    tmem = malloc(TMEM);
    want = malloc(TMEM);
    src = malloc(LMAX);
    for (int k = 0; k < 3; k++)
        tpiece[k] = malloc(tplen[k]);
    if (!tmem || !want || !src || !tpiece[0] || !tpiece[1] || !tpiece[2])
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t smd = PTL_INVALID_HANDLE;
    if (r == 1) {
        unsigned opts = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE;
        mp_post(&m, PT_RED, 1, tmem, TMEM, PTL_MD_THRESH_INF, opts, eq, PTL_RETAIN, NULL);
        attach_iov3(&m, 2, tpiece, tplen, opts, eq);
        /* truncation: the MD ends 4 bytes into the last element */
        mp_post(&m, PT_RED, 3, tmem, ROFF + TRUNC_LEN - 4, PTL_MD_THRESH_INF,
                opts | PTL_MD_TRUNCATE, eq, PTL_RETAIN, NULL);
        mp_post(&m, PT_RED, 4, tmem, ROFF + 4036, PTL_MD_THRESH_INF, opts | PTL_MD_TRUNCATE, eq,
                PTL_RETAIN, NULL);
    } else {
        smd = mp_bind(&m, src, LMAX, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
    }
    mp_barrier(&m);

    static const size_t lens[] = {4040, 65544, LMAX};
    static const ptl_datatype_t types[] = {PTL_INT32_T, PTL_INT64_T, PTL_UINT64_T, PTL_FLOAT,
                                           PTL_DOUBLE};
    unsigned tag = 0, checked = 0;
    for (size_t li = 0; li < 3; li++)
        for (int ti = 0; ti < 5; ti++)
            for (int oi = 0; oi < 2; oi++)
                for (int iovec = 0; iovec < 2; iovec++) {
                    size_t len = lens[li];
                    ptl_datatype_t t = types[ti];
                    ptl_op_t op = oi == 0 ? PTL_SUM : t >= PTL_FLOAT ? PTL_MIN : PTL_BXOR;
                    tag++;
                    if (r == 1) {
                        values(want, TMEM, t, 1, tag);
                        if (iovec)
                            scatter(want);
                        else
                            memcpy(tmem, want, TMEM);
                    }
                    mp_barrier(&m); /* the target is set */
                    if (r == 0) {
                        values(src, len, t, 0, tag);
                        mp_doing("large reduction put");
                        MP_CHECK(PtlAtomicPut(smd, 0, len, PTL_ACK_REQ, m.ids[1], PT_RED, 0,
                                              iovec ? 2 : 1, ROFF, 0, op, t));
                        ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_ACK};
                        ptl_event_t ev[2];
                        mp_expect_all(eq, k, 2, ev, "reduction put");
                        if (ev[1].mlength != len)
                            mp_die("%s %s of %zu bytes: ACK mlength %llu", tname(t),
                                   op == PTL_SUM ? "sum" : "min/bxor", len,
                                   (unsigned long long)ev[1].mlength);
                    } else {
                        ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "reduction arrived");
                        if (ev.mlength != len || ev.offset != ROFF)
                            mp_die("PUT_END mlength %llu offset %llu, want %zu at %d",
                                   (unsigned long long)ev.mlength,
                                   (unsigned long long)ev.offset, len, ROFF);
                        values(src, len, t, 0, tag); /* what rank 0 sent */
                        reference(want + ROFF, src, len, op, t);
                        unsigned char *got = tmem;
                        if (iovec) {
                            got = malloc(TMEM);
                            if (!got)
                                mp_die("out of memory");
                            gather(got);
                        }
                        for (size_t i = 0; i < TMEM; i++)
                            if (got[i] != want[i])
                                mp_die("%s %s of %zu bytes into the %s MD: byte %zu is %#x, "
                                       "want %#x", tname(t), op == PTL_SUM ? "sum" : "min/bxor",
                                       len, iovec ? "iovec" : "contiguous", i, got[i], want[i]);
                        if (iovec)
                            free(got);
                        checked++;
                    }
                    mp_barrier(&m);
                }

    /* Truncated: 65544 bytes of doubles into 65540 matched, and 4040 bytes
     * (copy mode or rendezvous too) into 4036: nothing written, both sides fail. */
    static const unsigned bits[] = {3, 4};
    static const size_t tlen[] = {TRUNC_LEN, 4040};
    for (int k = 0; k < 2; k++) {
        if (r == 1) {
            values(want, TMEM, PTL_DOUBLE, 1, 900 + k);
            memcpy(tmem, want, TMEM);
        }
        mp_barrier(&m);
        if (r == 0) {
            values(src, tlen[k], PTL_DOUBLE, 0, 900 + k);
            MP_CHECK(PtlAtomicPut(smd, 0, tlen[k], PTL_ACK_REQ, m.ids[1], PT_RED, 0, bits[k],
                                  ROFF, 0, PTL_SUM, PTL_DOUBLE));
            ptl_event_t ev;
            bool acked = false;
            for (int i = 0; i < 2; i++) {
                if (!mp_poll(eq, &ev, MP_WAIT_MS))
                    mp_die("truncated reduction: no SEND_END/ACK");
                if (ev.type == PTL_EVENT_ACK) {
                    acked = true;
                    if (ev.ni_fail_type != PTL_NI_FAIL)
                        mp_die("truncated reduction of %zu bytes: ACK ni_fail_type %d", tlen[k],
                               (int)ev.ni_fail_type);
                }
            }
            if (!acked)
                mp_die("truncated reduction: no ACK");
        } else {
            ptl_event_t ev;
            if (!mp_poll(eq, &ev, MP_WAIT_MS) || ev.type != PTL_EVENT_PUT_END)
                mp_die("truncated reduction: no PUT_END");
            if (ev.ni_fail_type != PTL_NI_FAIL)
                mp_die("truncated reduction of %zu bytes: PUT_END ni_fail_type %d", tlen[k],
                       (int)ev.ni_fail_type);
            if (memcmp(tmem, want, TMEM))
                mp_die("truncated reduction of %zu bytes wrote the target", tlen[k]);
            checked++;
        }
        mp_barrier(&m);
    }
    if (r == 1)
        mp_log("%u large reductions checked", checked);
    mp_fini(&m);
    if (r == 0)
        printf("mp_atomic: OK\n");
    return 0;
}
