/*
 * mp_coll - the collective library (<p3coll.h>) on every rank of the job
 * (run with 1 to 8 ranks, both modes). Every result is checked against a
 * serial computation of the same data:
 *   barrier; bcast of 0, 1, 8, eager-limit, eager+1 and rendezvous bytes from
 *   every root; allreduce of every type and operation (counts 0, 1, 8, one
 *   eager segment, several segments), in place and not, and bit-identical
 *   float results on every member (checked through an allgather); reduce to
 *   every root; gather and scatter from every root, allgather and alltoall
 *   (0, 1, 8, eager, rendezvous bytes per member, in place too); 16
 *   nonblocking collectives in flight waited in reverse order, one finished
 *   by PtlCollTest; two overlapping groups (the job and the job in reverse
 *   order, and the even ranks) running at once; bad arguments.
 * The persistent path (barrier; allreduce and reduce of at most
 * PTL_COLL_SMALL_MAX bytes, read from the environment as the library does):
 * sizes on both sides of that threshold, reduce to every root there; 50
 * calls in flight (more than a group's slots, so that starting one must
 * complete an earlier one) mixing barrier, allreduce and reduce, waited by two
 * threads in reverse order. The CMake entries also run the job with the
 * persistent path off (PTL_COLL_SMALL_MAX=0) and at 8 bytes.
 * mp_coll large: the large path (reduce-scatter + allgather, at least PTL_COLL_LARGE_MIN
 * bytes, read from the environment too): every type and operation just below,
 * at and above that threshold, several eager segments per block, a count of
 * 2, in place and not, float results bit-identical on every member; reduce
 * to every root (its own job). The CMake entries run it at the default
 * threshold on 2, 3, 5 and 8 ranks, at 64 bytes on 3, 6 and 7 ranks, at 8
 * bytes on 5 ranks (counts below the 4 blocks); and the suite with the large
 * path off (PTL_COLL_LARGE_MIN=0).
 * mp_coll pairs (run with 2 ranks: the pair path of a 2-member group, small
 * allreduce without RTR): two threads, each on its own group (the job and
 * the job reversed: both 2-member groups), each keeping W nonblocking small
 * allreduces in flight for thousands of calls (W = 19: a slot's next use
 * starts as soon as its previous one was waited; W = 26: more than the
 * slots), in place in buffers reused every W calls, data changing every
 * call, an Ibarrier every 7th call, a small Ibcast (the slot bcast, its
 * root alternating) in most 5th calls; every result checked. A put that
 * overwrote a slot before its previous use was consumed, or a counter
 * advanced by the wrong use, gives a wrong element. Then min and max of
 * +0 / -0 and of NaN / numbers: both members must get the same bits. Then
 * 3,000 blocking bcasts whose root runs ahead of a member that pauses (the
 * slot bcast's flow control, t_bcast_stream), every element checked.
 * mp_coll bcast: the pipelined large bcast (PTL_COLL_BCAST_SEG, read from the
 * environment as the library does; the CMake entries set it small): every
 * root at one byte less than, equal to and more than 1, 2 and 3 segments,
 * 64 segments and more (the segment grows), then 16 nonblocking pipelined
 * bcasts in flight from rotating roots, waited in reverse order.
 * mp_coll lists K (6 ranks in CMake): K groups over distinct member orders,
 * one alive at a time, each an allreduce and four barriers in flight (the
 * request slots a group keeps must go back to the table at its free).
 * mp_coll died (3 ranks): rank 2 leaves (exit without PtlNIFini) while ranks
 * 0 and 1 wait in an allreduce and a barrier of the group: their waits must
 * return PTL_FAIL within seconds (PTL_PEER_TIMEOUT_MS), never hang.
 * mp_coll flags: the flag path (coll/flag.c: blocking barrier, allreduce,
 * reduce and bcast of up to 16 bytes on single-writer lines): 3,000 rounds
 * (each a barrier, two allreduces, a reduce and two bcasts) on the job
 * and on the job reversed (overlapping groups, member order reversed: the
 * float sums' order differs), where a rotating member sleeps 0.2-1.4 ms
 * before some calls, so that the others announce a sleep and must be woken
 * by a message (a lost wake-up hangs into the watchdog); a nonblocking
 * allreduce in flight across blocking ones; streams of 8 and 16 B bcasts
 * whose root runs ahead of members that pause, and of reduces whose members
 * run ahead of a root that pauses; then 40 groups over one list at
 * once (more than a process's 32 flag slots: the rest run on triggered
 * operations), used round-robin, freed, and 40 more (freed slots drained and
 * taken again). Every result checked against a serial computation in member
 * order, floats bit for bit.
 */
#include "mp_util.h"

#include <p3coll.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EAGER 4032
#define RNDV 70000

static unsigned N, ME;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        mp_die("out of memory");
    return p;
}

/* ---- reductions: data and the serial result -------------------------------- */

static const size_t tsize[] = {4, 8, 8, 4, 8};
static const char *tname[] = {"int32", "int64", "uint64", "float", "double"};
static const char *oname[] = {"sum", "min", "max", "band", "bor", "bxor"};

/* element i of member r; `exact`: floats that sum exactly */
static void value(unsigned r, size_t i, ptl_coll_type_t t, void *out, int exact)
{
    uint64_t x = (r + 1) * 0x9E3779B97F4A7C15ull ^ (i + 3) * 0xC2B2AE3D27D4EB4Full;
    int64_t s = (int64_t)(x >> 40) % 2001 - 1000;
    switch (t) {
    case PTL_COLL_INT32: *(int32_t *)out = (int32_t)(x >> 32) ^ (int32_t)s; break;
    case PTL_COLL_INT64: *(int64_t *)out = (int64_t)(x >> 3) * (s < 0 ? -1 : 1); break;
    case PTL_COLL_UINT64: *(uint64_t *)out = x; break;
    case PTL_COLL_FLOAT: *(float *)out = exact ? (float)s : (float)s * 0.1f + 1e-3f * (float)r; break;
    case PTL_COLL_DOUBLE: *(double *)out = exact ? (double)s : (double)s * 0.1 + 1e-7 * r; break;
    }
}

#define COMB(T, a, b, op, bit)                                                                     \
    do {                                                                                           \
        T *pa = (T *)(a), vb = *(const T *)(b);                                                    \
        switch (op) {                                                                              \
        case PTL_COLL_SUM: *pa = (T)(*pa + vb); break;                                             \
        case PTL_COLL_MIN: if (vb < *pa) *pa = vb; break;                                          \
        case PTL_COLL_MAX: if (vb > *pa) *pa = vb; break;                                          \
        default: bit; break;                                                                       \
        }                                                                                          \
    } while (0)

static void combine(ptl_coll_type_t t, ptl_coll_op_t op, void *a, const void *b)
{
    switch (t) {
    case PTL_COLL_INT32: {
        uint32_t *ua = a, ub = *(const uint32_t *)b;
        if (op == PTL_COLL_SUM) { *ua += ub; break; } /* wraps like the engine */
        COMB(int32_t, a, b, op,
             *ua = op == PTL_COLL_BAND ? *ua & ub : op == PTL_COLL_BOR ? *ua | ub : *ua ^ ub);
        break;
    }
    case PTL_COLL_INT64: {
        uint64_t *ua = a, ub = *(const uint64_t *)b;
        if (op == PTL_COLL_SUM) { *ua += ub; break; }
        COMB(int64_t, a, b, op,
             *ua = op == PTL_COLL_BAND ? *ua & ub : op == PTL_COLL_BOR ? *ua | ub : *ua ^ ub);
        break;
    }
    case PTL_COLL_UINT64: {
        uint64_t *ua = a, ub = *(const uint64_t *)b;
        COMB(uint64_t, a, b, op,
             *ua = op == PTL_COLL_BAND ? *ua & ub : op == PTL_COLL_BOR ? *ua | ub : *ua ^ ub);
        break;
    }
    case PTL_COLL_FLOAT: COMB(float, a, b, op, (void)0); break;
    case PTL_COLL_DOUBLE: COMB(double, a, b, op, (void)0); break;
    }
}

static void make_input(void *buf, size_t count, ptl_coll_type_t t, unsigned r, int exact)
{
    for (size_t i = 0; i < count; i++)
        value(r, i, t, (char *)buf + i * tsize[t], exact);
}

static void serial(void *out, size_t count, ptl_coll_type_t t, ptl_coll_op_t op, int exact)
{
    char v[8];
    make_input(out, count, t, 0, exact);
    for (unsigned r = 1; r < N; r++)
        for (size_t i = 0; i < count; i++) {
            value(r, i, t, v, exact);
            combine(t, op, (char *)out + i * tsize[t], v);
        }
}

static void check_close(const void *got, const void *want, size_t count, ptl_coll_type_t t,
                        int exact, const char *what)
{
    if (exact || t < PTL_COLL_FLOAT) {
        if (memcmp(got, want, count * tsize[t])) {
            for (size_t i = 0; i < count; i++)
                if (memcmp((const char *)got + i * tsize[t], (const char *)want + i * tsize[t],
                           tsize[t]))
                    mp_die("%s: element %zu differs from the serial result", what, i);
        }
        return;
    }
    for (size_t i = 0; i < count; i++) {
        double a = t == PTL_COLL_FLOAT ? ((const float *)got)[i] : ((const double *)got)[i];
        double b = t == PTL_COLL_FLOAT ? ((const float *)want)[i] : ((const double *)want)[i];
        double tol = (t == PTL_COLL_FLOAT ? 1e-4 : 1e-10) * (fabs(b) + 1.0) * N;
        if (fabs(a - b) > tol)
            mp_die("%s: element %zu is %.17g, serial %.17g", what, i, a, b);
    }
}

/* Every member holds the same b bytes of result as we do (allgathered). */
static void same_bits_everywhere(ptl_handle_coll_t g, const char *out, size_t b, const char *what)
{
    if (!b)
        return;
    char *all = xmalloc(b * N);
    MP_CHECK(PtlCollAllgather(g, out, all, b));
    for (unsigned r = 0; r < N; r++)
        if (memcmp(all + r * b, out, b))
            mp_die("%s: member %u's result differs in its bits", what, r);
    free(all);
}

/* PtlCollReduce of count elements to every root in turn: the root gets want
 * (check_close), every other member's recvbuf is left as it was (0x5a). */
static void reduce_every_root(ptl_handle_coll_t g, const void *in, char *out, const void *want,
                              size_t count, ptl_coll_type_t t, ptl_coll_op_t op, int exact,
                              const char *label)
{
    size_t b = count * tsize[t];
    for (unsigned root = 0; root < N; root++) {
        char what[112];
        snprintf(what, sizeof what, "%s reduce %s %s count %zu to %u", label, tname[t],
                 oname[op], count, root);
        mp_doing("reduce to every root");
        memset(out, 0x5a, b);
        MP_CHECK(PtlCollReduce(g, in, out, count, t, op, root));
        if (ME == root)
            check_close(out, want, count, t, exact, what);
        else
            for (size_t i = 0; i < b; i++)
                if ((unsigned char)out[i] != 0x5a)
                    mp_die("%s: a non-root's recvbuf was written", what);
    }
}

/* ---- the collectives --------------------------------------------------------- */

static void t_allreduce(ptl_handle_coll_t g)
{
    const size_t counts[] = {0, 1, 8, 0 /* eager */, 0 /* segments */};
    int n_ops = 0;
    for (int t = 0; t <= PTL_COLL_DOUBLE; t++) {
        size_t cs[5];
        memcpy(cs, counts, sizeof cs);
        cs[3] = EAGER / tsize[t];
        cs[4] = 3 * EAGER / tsize[t] + 5;
        for (int op = 0; op <= PTL_COLL_BXOR; op++) {
            if (t >= PTL_COLL_FLOAT && op >= PTL_COLL_BAND)
                continue;
            for (int ci = 0; ci < 5; ci++) {
                size_t c = cs[ci], b = c * tsize[t];
                for (int exact = 0; exact < 2; exact++) {
                    if (exact && t < PTL_COLL_FLOAT)
                        continue;
                    char *in = xmalloc(b), *out = xmalloc(b), *want = xmalloc(b);
                    char what[96];
                    snprintf(what, sizeof what, "allreduce %s %s count %zu%s", tname[t], oname[op],
                             c, exact ? " exact" : "");
                    mp_doing("allreduce");
                    make_input(in, c, t, ME, exact);
                    memset(out, 0xa5, b);
                    int inplace = ci == 2;
                    if (inplace)
                        memcpy(out, in, b);
                    MP_CHECK(PtlCollAllreduce(g, inplace ? out : in, out, c, t, op));
                    serial(want, c, t, op, exact);
                    check_close(out, want, c, t, exact, what);
                    /* bit-identical on every member */
                    if (t >= PTL_COLL_FLOAT)
                        same_bits_everywhere(g, out, b, what);
                    free(in);
                    free(out);
                    free(want);
                    n_ops++;
                }
            }
        }
    }
    mp_log("allreduce: %d cases checked", n_ops);
}

static void t_reduce(ptl_handle_coll_t g)
{
    for (unsigned root = 0; root < N; root++)
        for (int t = 0; t <= PTL_COLL_DOUBLE; t++)
            for (int op = 0; op <= PTL_COLL_BXOR; op++) {
                if (t >= PTL_COLL_FLOAT && op >= PTL_COLL_BAND)
                    continue;
                size_t c = op == 0 && root == N - 1 ? 2 * EAGER / tsize[t] + 1 : 8;
                size_t b = c * tsize[t];
                char *in = xmalloc(b), *out = xmalloc(b), *want = xmalloc(b);
                make_input(in, c, t, ME, 1);
                memset(out, 0x5a, b);
                mp_doing("reduce");
                MP_CHECK(PtlCollReduce(g, in, out, c, t, op, root));
                if (ME == root) {
                    char what[80];
                    snprintf(what, sizeof what, "reduce %s %s to %u", tname[t], oname[op], root);
                    serial(want, c, t, op, 1);
                    check_close(out, want, c, t, 1, what);
                } else {
                    for (size_t i = 0; i < b; i++)
                        if ((unsigned char)out[i] != 0x5a)
                            mp_die("reduce: a non-root's recvbuf was written");
                }
                free(in);
                free(out);
                free(want);
            }
    /* The root's float result does not depend on the order its children's
     * values arrive in: the same bits in every call, whoever comes late. */
    {
        enum { RC = 8, RTRIES = 30 };
        double in[RC], out[RC], first[RC];
        make_input(in, RC, PTL_COLL_DOUBLE, ME, 0);
        for (int k = 0; k < RTRIES; k++) {
            if (ME == (unsigned)k % N && N > 1)
                usleep(200 + 100 * (unsigned)(k % 3)); /* someone arrives late */
            mp_doing("reduce of doubles, the same bits every time");
            MP_CHECK(PtlCollReduce(g, in, out, RC, PTL_COLL_DOUBLE, PTL_COLL_SUM, N - 1));
            if (ME != N - 1)
                continue;
            if (k == 0)
                memcpy(first, out, sizeof out);
            else if (memcmp(first, out, sizeof out))
                mp_die("reduce of doubles: call %d's result differs in its bits from call 0's", k);
        }
    }
    mp_log("reduce: every root, type and op checked");
}

static const size_t lens[] = {0, 1, 8, EAGER, EAGER + 1, RNDV};
#define NLENS (sizeof lens / sizeof lens[0])

/* A blocking bcast of each of the n lengths from every root, checked. */
static void bcast_sizes(ptl_handle_coll_t g, const size_t *ls, size_t n, unsigned tag0,
                        const char *what)
{
    for (unsigned root = 0; root < N; root++)
        for (size_t li = 0; li < n; li++) {
            size_t l = ls[li];
            char *buf = xmalloc(l);
            if (ME == root)
                mp_fill(buf, l, root, tag0 + (unsigned)li, 0);
            else
                memset(buf, 0, l);
            mp_doing(what);
            MP_CHECK(PtlCollBcast(g, buf, l, root));
            int64_t bad = mp_check_pattern(buf, l, root, tag0 + (unsigned)li, 0);
            if (bad >= 0)
                mp_die("%s of %zu bytes from %u: byte %lld wrong", what, l, root, (long long)bad);
            free(buf);
        }
}

static void t_bcast(ptl_handle_coll_t g)
{
    bcast_sizes(g, lens, NLENS, 40, "bcast");
    mp_log("bcast: every root and size checked");
}

/* The slot bcast's flow control (docs/coll.md, "Slot bcast"): `calls`
 * blocking small bcasts whose root changes every `every` calls, the other
 * members pausing now and then, so that the root runs ahead and must wait
 * for their start signals (never overwrite a slot not yet copied out);
 * every element checked. */
static void t_bcast_stream_n(ptl_handle_coll_t g, long calls, long every, size_t nv)
{
    for (long a = 0; a < calls; a++) {
        unsigned root = (unsigned)(a / every % N);
        int64_t v[4];
        for (size_t i = 0; i < 4; i++)
            v[i] = ME == root ? (int64_t)root * 1000003 + a * 131 + (int64_t)i : -1;
        if (ME != root && (a + ME) % 97 == 0)
            usleep(300);
        mp_doing("bcast stream");
        MP_CHECK(PtlCollBcast(g, v, nv * sizeof v[0], root));
        for (size_t i = 0; i < nv; i++)
            if (v[i] != (int64_t)root * 1000003 + a * 131 + (int64_t)i)
                mp_die("bcast stream: call %ld from %u element %zu is %lld", a, root, i,
                       (long long)v[i]);
    }
    mp_log("bcast stream: %ld bcasts of %zu bytes, roots running ahead, checked", calls,
           nv * sizeof(int64_t));
}

static void t_bcast_stream(ptl_handle_coll_t g, long calls, long every)
{
    t_bcast_stream_n(g, calls, every, 4);
}

/* Blocking reduces whose non-roots run ahead of a root that pauses (the
 * flag path's F-REUSE holds them two calls ahead). */
static void t_reduce_stream(ptl_handle_coll_t g, long calls, long every)
{
    for (long a = 0; a < calls; a++) {
        unsigned root = (unsigned)(a / every % N);
        int64_t x = (int64_t)ME * 1000 + a, y = -1, want = 0;
        for (unsigned i = 0; i < N; i++)
            want += (int64_t)i * 1000 + a;
        if (ME == root && a % 97 == 0)
            usleep(300);
        mp_doing("reduce stream");
        MP_CHECK(PtlCollReduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, root));
        if (ME == root && y != want)
            mp_die("reduce stream: call %ld to %u gave %lld, wanted %lld", a, root, (long long)y,
                   (long long)want);
    }
    mp_log("reduce stream: %ld reduces, members running ahead of the root, checked", calls);
}

static void t_gather_scatter(ptl_handle_coll_t g)
{
    for (unsigned root = 0; root < N; root++)
        for (size_t li = 0; li < NLENS; li++) {
            size_t l = lens[li];
            char *mine = xmalloc(l), *all = xmalloc(l * N);
            mp_fill(mine, l, ME, 60 + (unsigned)li, 0);
            memset(all, 0, l * N);
            mp_doing("gather");
            MP_CHECK(PtlCollGather(g, mine, all, l, root));
            if (ME == root)
                for (unsigned r = 0; r < N; r++)
                    if (mp_check_pattern(all + r * l, l, r, 60 + (unsigned)li, 0) >= 0)
                        mp_die("gather of %zu to %u: member %u's part wrong", l, root, r);
            /* scatter: the root sends part r = pattern(r) */
            if (ME == root)
                for (unsigned r = 0; r < N; r++)
                    mp_fill(all + r * l, l, r, 80 + (unsigned)li, 0);
            memset(mine, 0, l);
            mp_doing("scatter");
            MP_CHECK(PtlCollScatter(g, all, mine, l, root));
            if (mp_check_pattern(mine, l, ME, 80 + (unsigned)li, 0) >= 0)
                mp_die("scatter of %zu from %u: my part wrong", l, root);
            free(mine);
            free(all);
        }
    mp_log("gather, scatter: every root and size checked");
}

static void t_allgather_alltoall(ptl_handle_coll_t g)
{
    for (size_t li = 0; li < NLENS; li++)
        for (int inplace = 0; inplace < 2; inplace++) {
            size_t l = lens[li];
            char *mine = xmalloc(l), *all = xmalloc(l * N), *send = xmalloc(l * N);
            mp_fill(mine, l, ME, 100 + (unsigned)li, 0);
            memset(all, 0, l * N);
            if (inplace)
                memcpy(all + ME * l, mine, l);
            mp_doing("allgather");
            MP_CHECK(PtlCollAllgather(g, inplace ? all : mine, all, l));
            for (unsigned r = 0; r < N; r++)
                if (mp_check_pattern(all + r * l, l, r, 100 + (unsigned)li, 0) >= 0)
                    mp_die("allgather of %zu%s: member %u's part wrong", l,
                           inplace ? " in place" : "", r);
            /* alltoall: part j of member r's send = pattern(r, tag j) */
            for (unsigned j = 0; j < N; j++)
                mp_fill(send + j * l, l, ME, 120 + j, 0);
            if (inplace)
                memcpy(all, send, l * N);
            else
                memset(all, 0, l * N);
            mp_doing("alltoall");
            MP_CHECK(PtlCollAlltoall(g, inplace ? all : send, all, l));
            for (unsigned r = 0; r < N; r++)
                if (mp_check_pattern(all + r * l, l, r, 120 + ME, 0) >= 0)
                    mp_die("alltoall of %zu%s: part from %u wrong", l, inplace ? " in place" : "", r);
            free(mine);
            free(all);
            free(send);
        }
    mp_log("allgather, alltoall: every size checked, in place too");
}


/* ---- the persistent path ------------------------------------------------------ */

static size_t small_max(void)
{
    const char *e = getenv("PTL_COLL_SMALL_MAX");
    size_t m = e ? (size_t)strtoull(e, NULL, 0) : 256;
    return m > EAGER ? EAGER : m;
}

/* allreduce and reduce (every root) with counts around the threshold */
static void t_small_edges(ptl_handle_coll_t g)
{
    size_t m = small_max() / 8;
    size_t cs[] = {m ? m - 1 : 0, m, m + 1, 2 * m + 3};
    for (int t = 0; t <= PTL_COLL_DOUBLE; t++)
        for (int ci = 0; ci < 4; ci++) {
            if (t == PTL_COLL_UINT64 || t == PTL_COLL_FLOAT)
                continue;
            ptl_coll_op_t op = t == PTL_COLL_INT64    ? PTL_COLL_BXOR
                               : t == PTL_COLL_INT32 ? PTL_COLL_MIN
                                                     : PTL_COLL_SUM;
            size_t c = cs[ci] * 8 / tsize[t], b = c * tsize[t];
            char *in = xmalloc(b), *out = xmalloc(b), *want = xmalloc(b);
            char what[96];
            make_input(in, c, t, ME, 1);
            serial(want, c, t, op, 1);
            snprintf(what, sizeof what, "small-edge allreduce %s %s count %zu", tname[t],
                     oname[op], c);
            mp_doing("small-edge allreduce");
            memset(out, 0x5a, b);
            MP_CHECK(PtlCollAllreduce(g, in, out, c, t, op));
            check_close(out, want, c, t, 1, what);
            reduce_every_root(g, in, out, want, c, t, op, 1, "small-edge");
            free(in);
            free(out);
            free(want);
        }
    mp_log("persistent path: allreduce and reduce around %zu bytes checked", small_max());
}

/* ---- large allreduce: reduce-scatter + allgather -------------------------------- */

static size_t large_min(void)
{
    const char *e = getenv("PTL_COLL_LARGE_MIN");
    return e ? (size_t)strtoull(e, NULL, 0) : 32768;
}

/* Every type and operation at byte counts around PTL_COLL_LARGE_MIN (and a
 * count below the group's largest power of two), in place and not; float
 * results bit-identical on every member. */
static void t_large_edges(ptl_handle_coll_t g)
{
    size_t lm = large_min();
    if (!lm)
        lm = 4096;
    int n_ops = 0;
    for (int t = 0; t <= PTL_COLL_DOUBLE; t++) {
        size_t e = lm / tsize[t];
        size_t cs[] = {e ? e - 1 : 0, e, e + 3 * N + 1, 2, 7 * EAGER / tsize[t] + 5};
        for (int op = 0; op <= PTL_COLL_BXOR; op++) {
            if (t >= PTL_COLL_FLOAT && op >= PTL_COLL_BAND)
                continue;
            for (int ci = 0; ci < 5; ci++) {
                size_t c = cs[ci], b = c * tsize[t];
                int exact = t >= PTL_COLL_FLOAT && ci == 3;
                int inplace = (ci + op) % 2;
                char *in = xmalloc(b), *out = xmalloc(b), *want = xmalloc(b);
                char what[112];
                snprintf(what, sizeof what, "large-edge allreduce %s %s count %zu%s%s", tname[t],
                         oname[op], c, inplace ? " in place" : "", exact ? " exact" : "");
                mp_doing("large-edge allreduce");
                make_input(in, c, t, ME, exact);
                memset(out, 0xa5, b);
                if (inplace)
                    memcpy(out, in, b);
                MP_CHECK(PtlCollAllreduce(g, inplace ? out : in, out, c, t, op));
                serial(want, c, t, op, exact);
                check_close(out, want, c, t, exact, what);
                same_bits_everywhere(g, out, b, what);
                free(in);
                free(out);
                free(want);
                n_ops++;
            }
        }
        /* reduce to every root on the large path */
        size_t c = e + 5, b = c * tsize[t];
        ptl_coll_op_t op = t >= PTL_COLL_FLOAT ? PTL_COLL_SUM : PTL_COLL_BXOR;
        char *in = xmalloc(b), *out = xmalloc(b), *want = xmalloc(b);
        make_input(in, c, t, ME, 0);
        serial(want, c, t, op, 0);
        reduce_every_root(g, in, out, want, c, t, op, 0, "large-edge");
        free(in);
        free(out);
        free(want);
    }
    mp_log("large path: %d allreduce cases around %zu bytes and reduce to every root checked",
           n_ops, lm);
}

enum { PK = 120, PC = 9 };
static ptl_handle_coll_req_t pq[PK];
static int prc[PK];

static void *waiter(void *arg)
{
    (void)arg;
    for (int k = PK - 1; k >= 0; k--)
        if (k % 2)
            prc[k] = PtlCollWait(pq[k]);
    return NULL;
}

/* more calls in flight than a group has slots (barrier and allreduce: 20;
 * bcast and reduce, numbered together: 32), two threads waiting */
static void t_persist_inflight(ptl_handle_coll_t g)
{
    static int64_t in[PK][PC], out[PK][PC];
    for (int k = 0; k < PK; k++) {
        size_t c = 1 + (size_t)k % PC;
        for (size_t i = 0; i < c; i++)
            in[k][i] = (int64_t)ME * 7919 + k * 31 + (int64_t)i;
        memset(out[k], 0, sizeof out[k]);
        if (k % 4 == 0)
            MP_CHECK(PtlCollIbarrier(g, &pq[k]));
        else if (k % 4 == 1)
            MP_CHECK(PtlCollIallreduce(g, in[k], out[k], c, PTL_COLL_INT64, PTL_COLL_SUM, &pq[k]));
        else if (k % 4 == 2)
            MP_CHECK(PtlCollIreduce(g, in[k], out[k], c, PTL_COLL_INT64, PTL_COLL_MAX,
                                    (ptl_size_t)k % N, &pq[k]));
        else {
            if ((unsigned)k % N == ME)
                memcpy(out[k], in[k], c * sizeof in[k][0]);
            MP_CHECK(PtlCollIbcast(g, out[k], c * sizeof out[k][0], (ptl_size_t)k % N, &pq[k]));
        }
    }
    mp_doing("120 persistent-path calls in flight");
    pthread_t th;
    if (pthread_create(&th, NULL, waiter, NULL))
        mp_die("pthread_create");
    for (int k = PK - 1; k >= 0; k--)
        if (k % 2 == 0)
            prc[k] = PtlCollWait(pq[k]);
    pthread_join(th, NULL);
    for (int k = 0; k < PK; k++) {
        if (prc[k] != PTL_OK)
            mp_die("in flight (persistent): call %d returned %d", k, prc[k]);
        size_t c = 1 + (size_t)k % PC;
        if (k % 4 == 0)
            continue;
        int isroot = (unsigned)k % N == ME;
        for (size_t i = 0; i < c; i++) {
            int64_t want = k % 4 == 1 ? 0 : INT64_MIN;
            for (unsigned r = 0; r < N; r++) {
                int64_t v = (int64_t)r * 7919 + k * 31 + (int64_t)i;
                want = k % 4 == 1 ? want + v : (v > want ? v : want);
            }
            if (k % 4 == 3) /* bcast: the root's values */
                want = (int64_t)(k % N) * 7919 + k * 31 + (int64_t)i;
            int64_t got = out[k][i];
            if (k % 4 == 2 && !isroot)
                want = 0; /* a non-root's recvbuf is not written */
            if (got != want)
                mp_die("in flight (persistent): call %d element %zu is %lld, want %lld", k, i,
                       (long long)got, (long long)want);
        }
    }
    mp_log("120 persistent-path calls in flight checked");
}

/* 16 nonblocking collectives in flight, waited in reverse order. */
static void t_inflight(ptl_handle_coll_t g)
{
    enum { K = 16, C = 40 };
    static int64_t in[K][C], out[K][C], want[C];
    static char bc[K][100];
    ptl_handle_coll_req_t q[K];
    for (int k = 0; k < K; k++) {
        if (k % 4 == 3) {
            unsigned root = (unsigned)k % N;
            if (ME == root)
                mp_fill(bc[k], sizeof bc[k], root, 200 + (unsigned)k, 0);
            else
                memset(bc[k], 0, sizeof bc[k]);
            MP_CHECK(PtlCollIbcast(g, bc[k], sizeof bc[k], root, &q[k]));
        } else if (k % 4 == 1) {
            MP_CHECK(PtlCollIbarrier(g, &q[k]));
        } else {
            for (int i = 0; i < C; i++)
                in[k][i] = (int64_t)ME * 1000 + k * 10 + i;
            MP_CHECK(PtlCollIallreduce(g, in[k], out[k], C, PTL_COLL_INT64, PTL_COLL_SUM, &q[k]));
        }
    }
    mp_doing("16 nonblocking collectives");
    int done = 0;
    uint64_t t0 = mp_now_ms();
    while (!done) { /* the last one by PtlCollTest */
        MP_CHECK(PtlCollTest(q[K - 1], &done));
        if (mp_now_ms() - t0 > MP_WAIT_MS)
            mp_die("PtlCollTest never said done");
    }
    for (int k = K - 2; k >= 0; k--)
        MP_CHECK(PtlCollWait(q[k]));
    for (int k = 0; k < K; k++) {
        if (k % 4 == 3) {
            if (mp_check_pattern(bc[k], sizeof bc[k], (unsigned)k % N, 200 + (unsigned)k, 0) >= 0)
                mp_die("in flight: bcast %d wrong", k);
        } else if (k % 4 != 1) {
            for (int i = 0; i < C; i++) {
                want[i] = 0;
                for (unsigned r = 0; r < N; r++)
                    want[i] += (int64_t)r * 1000 + k * 10 + i;
                if (out[k][i] != want[i])
                    mp_die("in flight: allreduce %d element %d is %lld, want %lld", k, i,
                           (long long)out[k][i], (long long)want[i]);
            }
        }
    }
    if (PtlCollWait(q[0]) != PTL_HANDLE_INVALID)
        mp_die("a completed request's handle is still valid");
    mp_log("16 nonblocking collectives in flight checked");
}

/* ---- mp_coll pairs ---- */
enum { PW_MAX = 26, PW_CALLS = 6000, PW_C = 4 };
struct pw {
    ptl_handle_coll_t g;
    unsigned tid; /* which thread: changes the data */
    int w;        /* calls in flight */
    const char *fail;
};

static int64_t pw_val(unsigned r, unsigned tid, long a, size_t i)
{
    return (int64_t)r * 1000003 + (int64_t)tid * 7777 + a * 131 + (int64_t)i;
}

/* The rank of member m of p's group (thread 1's group is the job reversed). */
static unsigned pw_rank(const struct pw *p, int m)
{
    return p->tid ? 1u - (unsigned)m : (unsigned)m;
}

static void *pw_run(void *arg)
{
    struct pw *p = arg;
    static __thread int64_t buf[PW_MAX][PW_C];
    ptl_handle_coll_req_t q[PW_MAX];
    int isbar[PW_MAX], bcroot[PW_MAX]; /* bcroot: the bcast's root, or -1 */
    for (long a = 0; a < PW_CALLS + p->w; a++) {
        int k = (int)(a % p->w);
        long o = a - p->w; /* the call that used buffer k before */
        if (o >= 0) {
            int rc = PtlCollWait(q[k]);
            if (rc != PTL_OK) {
                p->fail = "wait failed";
                return NULL;
            }
            size_t c = 1 + (size_t)(o % PW_C);
            ptl_coll_op_t op = o % 3 == 2 ? PTL_COLL_MAX : PTL_COLL_SUM;
            for (size_t i = 0; bcroot[k] >= 0 && i < c; i++) {
                int64_t want = pw_val(pw_rank(p, bcroot[k]), p->tid, o, i);
                if (buf[k][i] != want) {
                    fprintf(stderr, "pairs: thread %u call %ld (bcast from %d) element %zu is %lld, "
                                    "want %lld\n", p->tid, o, bcroot[k], i, (long long)buf[k][i],
                            (long long)want);
                    p->fail = "wrong bcast data";
                    return NULL;
                }
            }
            for (size_t i = 0; !isbar[k] && bcroot[k] < 0 && i < c; i++) {
                int64_t want = op == PTL_COLL_SUM ? 0 : INT64_MIN;
                for (unsigned r = 0; r < N; r++) {
                    int64_t v = pw_val(r, p->tid, o, i);
                    want = op == PTL_COLL_SUM ? want + v : (v > want ? v : want);
                }
                if (buf[k][i] != want) {
                    fprintf(stderr, "pairs: thread %u call %ld element %zu is %lld, want %lld\n",
                            p->tid, o, i, (long long)buf[k][i], (long long)want);
                    p->fail = "wrong result";
                    return NULL;
                }
            }
        }
        if (a >= PW_CALLS)
            continue;
        isbar[k] = a % 7 == 6;
        bcroot[k] = !isbar[k] && a % 5 == 3 ? (int)(a / 5 % 2) : -1;
        int rc;
        if (isbar[k]) {
            rc = PtlCollIbarrier(p->g, &q[k]);
        } else if (bcroot[k] >= 0) { /* a slot bcast (docs/coll.md), roots alternating */
            size_t c = 1 + (size_t)(a % PW_C);
            for (size_t i = 0; i < c; i++)
                buf[k][i] = ME == pw_rank(p, bcroot[k]) ? pw_val(ME, p->tid, a, i) : -1;
            rc = PtlCollIbcast(p->g, buf[k], c * sizeof buf[k][0], (ptl_size_t)bcroot[k], &q[k]);
        } else {
            size_t c = 1 + (size_t)(a % PW_C);
            ptl_coll_op_t op = a % 3 == 2 ? PTL_COLL_MAX : PTL_COLL_SUM;
            for (size_t i = 0; i < c; i++)
                buf[k][i] = pw_val(ME, p->tid, a, i);
            rc = PtlCollIallreduce(p->g, buf[k], buf[k], c, PTL_COLL_INT64, op, &q[k]);
        }
        if (rc != PTL_OK) {
            p->fail = "start failed";
            return NULL;
        }
    }
    return NULL;
}

static int pairs(struct mp *m)
{
    if (N != 2)
        mp_die("mp_coll pairs runs on 2 ranks");
    ptl_process_id_t rev[2] = {m->ids[1], m->ids[0]};
    ptl_handle_coll_t ga, gb;
    mp_doing("group create");
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &ga));
    MP_CHECK(PtlCollGroupCreate(m->ni, rev, N, &gb));
    static const int ws[] = {19, PW_MAX};
    for (int wi = 0; wi < 2; wi++) {
        struct pw pa = {ga, 0, ws[wi], NULL}, pb = {gb, 1, ws[wi], NULL};
        pthread_t th;
        mp_doing("two threads, two groups, calls in flight");
        if (pthread_create(&th, NULL, pw_run, &pb))
            mp_die("pthread_create");
        pw_run(&pa);
        pthread_join(th, NULL);
        if (pa.fail || pb.fail)
            mp_die("pairs (%d in flight): %s", ws[wi], pa.fail ? pa.fail : pb.fail);
        mp_log("pairs: 2 x %d calls, %d in flight, checked", PW_CALLS, ws[wi]);
    }
    /* bit-identical on both members, also for +0 / -0 and NaN / number under min and max
     * (operand order decides those): the results' bits compared through an allgather */
    double v[4] = {ME ? -0.0 : 0.0, ME ? NAN : 1.0, ME ? 2.0 : -0.0, ME ? 0.0 : NAN}, res[4];
    uint64_t bits[2][4];
    for (int op = PTL_COLL_MIN; op <= PTL_COLL_MAX; op++)
        for (int gi = 0; gi < 2; gi++) {
            ptl_handle_coll_t gg = gi ? gb : ga;
            MP_CHECK(PtlCollAllreduce(gg, v, res, 4, PTL_COLL_DOUBLE, (ptl_coll_op_t)op));
            MP_CHECK(PtlCollAllgather(gg, res, bits, sizeof res));
            if (memcmp(bits[0], bits[1], sizeof bits[0]))
                mp_die("pairs: %s of +0/-0, NaN: members got different bits", oname[op]);
        }
    mp_log("pairs: min and max of +0/-0 and NaN bit-identical on both members");
    /* A root that runs ahead of a member that pauses, the root changing every 500 calls */
    t_bcast_stream(ga, 3000, 500);
    MP_CHECK(PtlCollGroupFree(ga));
    MP_CHECK(PtlCollGroupFree(gb));
    mp_barrier(m);
    if (ME == 0)
        printf("mp_coll pairs: OK\n");
    mp_fini(m);
    return 0;
}

/* Two overlapping groups at once: the job reversed, and the even ranks. */
static void t_overlap(struct mp *m, ptl_handle_coll_t world)
{
    ptl_process_id_t *rev = xmalloc(N * sizeof *rev), *even = xmalloc(N * sizeof *even);
    unsigned ne = 0;
    for (unsigned r = 0; r < N; r++) {
        rev[r] = m->ids[N - 1 - r];
        if (r % 2 == 0)
            even[ne++] = m->ids[r];
    }
    ptl_handle_coll_t gr, ge = 0;
    MP_CHECK(PtlCollGroupCreate(m->ni, rev, N, &gr));
    if (ME % 2 == 0)
        MP_CHECK(PtlCollGroupCreate(m->ni, even, ne, &ge));
    int64_t a[16], b[16], c[16], ra[16], rb[16], rc[16];
    for (int i = 0; i < 16; i++) {
        a[i] = ME + i;
        b[i] = (int64_t)ME * 3 - i;
        c[i] = (int64_t)ME * ME + i;
    }
    ptl_handle_coll_req_t qa, qb, qc = 0;
    MP_CHECK(PtlCollIallreduce(world, a, ra, 16, PTL_COLL_INT64, PTL_COLL_SUM, &qa));
    MP_CHECK(PtlCollIallreduce(gr, b, rb, 16, PTL_COLL_INT64, PTL_COLL_MAX, &qb));
    if (ge)
        MP_CHECK(PtlCollIallreduce(ge, c, rc, 16, PTL_COLL_INT64, PTL_COLL_MIN, &qc));
    mp_doing("overlapping groups");
    if (qc)
        MP_CHECK(PtlCollWait(qc));
    MP_CHECK(PtlCollWait(qb));
    MP_CHECK(PtlCollWait(qa));
    for (int i = 0; i < 16; i++) {
        int64_t sa = 0, mb = INT64_MIN, mc = INT64_MAX;
        for (unsigned r = 0; r < N; r++) {
            sa += r + i;
            if ((int64_t)r * 3 - i > mb)
                mb = (int64_t)r * 3 - i;
            if (r % 2 == 0 && (int64_t)r * r + i < mc)
                mc = (int64_t)r * r + i;
        }
        if (ra[i] != sa || rb[i] != mb || (ge && rc[i] != mc))
            mp_die("overlapping groups: element %d wrong", i);
    }
    /* a bcast in the reversed group: member index 0 is the last rank */
    char buf[64];
    if (ME == N - 1)
        mp_fill(buf, sizeof buf, 7, 7, 0);
    MP_CHECK(PtlCollBcast(gr, buf, sizeof buf, 0));
    if (mp_check_pattern(buf, sizeof buf, 7, 7, 0) >= 0)
        mp_die("bcast in the reversed group wrong");
    MP_CHECK(PtlCollGroupFree(gr));
    if (ge)
        MP_CHECK(PtlCollGroupFree(ge));
    free(rev);
    free(even);
    mp_log("overlapping groups checked");
}

static void expect_rc(int got, int want, const char *what)
{
    if (got != want)
        mp_die("%s: returned %d, expected %d", what, got, want);
}

static void t_bad(struct mp *m, ptl_handle_coll_t g)
{
    ptl_handle_coll_req_t q;
    int64_t x = 1, y;
    float f = 1, fy;
    char buf[8];
    if (N > 1) { /* a group without the caller */
        ptl_handle_coll_t h;
        ptl_process_id_t *others = xmalloc(N * sizeof *others);
        for (unsigned r = 0, k = 0; r < N; r++)
            if (r != ME)
                others[k++] = m->ids[r];
        expect_rc(PtlCollGroupCreate(m->ni, others, N - 1, &h), PTL_PROCESS_INVALID,
                  "create without the caller");
        free(others);
    }
    expect_rc(PtlCollGroupCreate(m->ni, m->ids, 0, &q), PTL_ARG_INVALID, "create of 0 members");
    { /* sizes past any address space: refused, nothing touched */
        const ptl_size_t huge = (ptl_size_t)1 << 61;
        expect_rc(PtlCollAllreduce(g, &x, &y, huge + 1, PTL_COLL_INT64, PTL_COLL_SUM),
                  PTL_ARG_INVALID, "allreduce of 2^61 + 1 int64 (bytes wrap)");
        expect_rc(PtlCollReduce(g, &x, &y, huge, PTL_COLL_INT64, PTL_COLL_SUM, 0),
                  PTL_ARG_INVALID, "reduce of 2^61 int64");
        expect_rc(PtlCollBcast(g, buf, (ptl_size_t)1 << 62, 0), PTL_ARG_INVALID,
                  "bcast of 2^62 bytes");
        expect_rc(PtlCollAllgather(g, buf, buf, (ptl_size_t)1 << 63), PTL_ARG_INVALID,
                  "allgather of 2^63 bytes each");
        expect_rc(PtlCollAlltoall(g, buf, buf, (ptl_size_t)1 << 63), PTL_ARG_INVALID,
                  "alltoall of 2^63 bytes each");
        expect_rc(PtlCollGather(g, buf, buf, (ptl_size_t)1 << 63, 0), PTL_ARG_INVALID,
                  "gather of 2^63 bytes each");
        expect_rc(PtlCollScatter(g, buf, buf, (ptl_size_t)1 << 63, 0), PTL_ARG_INVALID,
                  "scatter of 2^63 bytes each");
    }
    { /* a process listed twice (the last rank again; {self, self} with one rank) */
        ptl_process_id_t *twice = xmalloc((N + 1) * sizeof *twice);
        memcpy(twice, m->ids, N * sizeof *twice);
        twice[N] = m->ids[N - 1];
        expect_rc(PtlCollGroupCreate(m->ni, twice, N + 1, &q), PTL_ARG_INVALID,
                  "create with a member listed twice");
        free(twice);
    }
    expect_rc(PtlCollBcast(g, buf, sizeof buf, N), PTL_ARG_INVALID, "bcast root out of range");
    expect_rc(PtlCollReduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, N + 5), PTL_ARG_INVALID,
              "reduce root out of range");
    expect_rc(PtlCollGather(g, buf, buf, 1, N), PTL_ARG_INVALID, "gather root out of range");
    expect_rc(PtlCollScatter(g, buf, buf, 1, (ptl_size_t)-1), PTL_ARG_INVALID,
              "scatter root out of range");
    expect_rc(PtlCollAllreduce(g, &f, &fy, 1, PTL_COLL_FLOAT, PTL_COLL_BXOR), PTL_ARG_INVALID,
              "bxor on float");
    expect_rc(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_DOUBLE, PTL_COLL_BAND), PTL_ARG_INVALID,
              "band on double");
    expect_rc(PtlCollAllreduce(g, &x, &y, 1, (ptl_coll_type_t)9, PTL_COLL_SUM), PTL_ARG_INVALID,
              "unknown type");
    expect_rc(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, (ptl_coll_op_t)17), PTL_ARG_INVALID,
              "unknown op");
    expect_rc(PtlCollTest(0, NULL), PTL_HANDLE_INVALID, "test of handle 0");
    expect_rc(PtlCollWait(12345), PTL_HANDLE_INVALID, "wait of a never issued request");
    expect_rc(PtlCollBarrier(0), PTL_HANDLE_INVALID, "barrier on handle 0");
    /* a freed group */
    ptl_handle_coll_t h;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &h));
    MP_CHECK(PtlCollBarrier(h));
    MP_CHECK(PtlCollGroupFree(h));
    expect_rc(PtlCollBarrier(h), PTL_HANDLE_INVALID, "barrier on a freed group");
    expect_rc(PtlCollAllreduce(h, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM), PTL_HANDLE_INVALID,
              "allreduce on a freed group");
    expect_rc(PtlCollGroupFree(h), PTL_HANDLE_INVALID, "second free");
    mp_log("bad arguments checked");
}

/* mp_coll handles (2 ranks): the process's first group and first request,
 * whose handles were both 1: a group's handle given where a request's goes,
 * and back, is PTL_HANDLE_INVALID, never the other object (PtlCollWait(g)
 * completed the request, PtlCollBarrier(q) ran a barrier on g). */
static int finish(struct mp *m, ptl_handle_coll_t g, const char *name);
static int handles(struct mp *m)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    int64_t xv = 1, yv = 0;
    ptl_handle_coll_req_t qq;
    MP_CHECK(PtlCollIallreduce(g, &xv, &yv, 1, PTL_COLL_INT64, PTL_COLL_SUM, &qq));
    int dn = -1;
    expect_rc(PtlCollTest((ptl_handle_coll_req_t)g, &dn), PTL_HANDLE_INVALID,
              "test of a group's handle");
    expect_rc(PtlCollWait((ptl_handle_coll_req_t)g), PTL_HANDLE_INVALID,
              "wait of a group's handle");
    expect_rc(PtlCollBarrier((ptl_handle_coll_t)qq), PTL_HANDLE_INVALID,
              "barrier on a request's handle");
    expect_rc(PtlCollGroupFree((ptl_handle_coll_t)qq), PTL_HANDLE_INVALID,
              "free of a request's handle");
    MP_CHECK(PtlCollWait(qq));
    if (yv != (int64_t)N)
        mp_die("allreduce beside the wrong handles: %lld", (long long)yv);
    return finish(m, g, "mp_coll handles");
}

/* mp_coll idclash (8 ranks): two live groups over different member lists
 * whose 24-bit group ids collide (coll/group.c: an FNV hash of the list plus
 * 0x9e37 per earlier create of that list). The test finds, with that formula,
 * lists A and B (2-4 members, one in common) such that A's (d+1)-th create
 * has B's first create's id; B is made, A made and freed d times, then made
 * again: that create must fail everywhere (PTL_NO_SPACE) or give a group
 * that works, and the next one must work; then both groups run interleaved
 * nonblocking allreduces, polled with a deadline. Before, the create succeeded
 * and the groups' messages landed in each other's MEs: every call hung. */
static uint64_t ic_base(struct mp *m, const unsigned char *l, unsigned k)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned i = 0; i < k; i++) {
        h = (h ^ m->ids[l[i]].nid) * 1099511628211ull;
        h = (h ^ m->ids[l[i]].pid) * 1099511628211ull;
    }
    return (h ^ h >> 24 ^ h >> 48) & 0xffffff;
}

/* Complete request q by polling PtlCollTest (nap_us between tests), or die
 * after limit_ms: "WHAT: not done after N s". */
static int test_until(ptl_handle_coll_req_t q, uint64_t limit_ms, long nap_us, const char *what)
{
    uint64_t t0 = mp_now_ms();
    for (;;) {
        int done = 0, rc = PtlCollTest(q, &done);
        if (done || rc != PTL_OK)
            return rc;
        if (mp_now_ms() - t0 > limit_ms)
            mp_die("%s: not done after %llu s", what, (unsigned long long)(limit_ms / 1000));
        struct timespec ts = {0, nap_us * 1000L};
        nanosleep(&ts, NULL);
    }
}

static int ic_poll(ptl_handle_coll_req_t q, const char *what)
{
    return test_until(q, 20000, 100, what); /* (groups with one id would never end) */
}

/* The ordered lists of 2-4 distinct ranks of the job, and the pair A, B of
 * them (with at least `common` members in common) whose ids collide soonest:
 * A's (*best + 1)-th create has B's first create's 24 bits (idclash,
 * idbye). */
enum { IC_MAXL = 2100 };
static unsigned char L[IC_MAXL][4], K[IC_MAXL];
static void ic_find(struct mp *m, int common_min, unsigned *pa, unsigned *pb, uint64_t *pbest)
{
    static uint64_t base[IC_MAXL];
    unsigned nl = 0;
    for (unsigned k = 2; k <= 4 && k <= N; k++) { /* ordered lists of k distinct ranks */
        unsigned char c[4];
        unsigned total = 1;
        for (unsigned i = 0; i < k; i++)
            total *= N;
        for (unsigned v = 0; v < total && nl < IC_MAXL; v++) {
            unsigned x = v, ok = 1;
            for (unsigned i = 0; i < k; i++, x /= N)
                c[i] = (unsigned char)(x % N);
            for (unsigned i = 0; i < k; i++)
                for (unsigned j = i + 1; j < k; j++)
                    ok &= c[i] != c[j];
            if (!ok)
                continue;
            memcpy(L[nl], c, k);
            K[nl] = (unsigned char)k;
            base[nl] = ic_base(m, c, k);
            nl++;
        }
    }
    uint32_t inv = 1; /* 0x9e37^-1 mod 2^24 (Newton) */
    for (int i = 0; i < 5; i++)
        inv *= 2 - 0x9e37u * inv;
    uint64_t best = UINT64_MAX;
    unsigned ba = 0, bb = 0;
    for (unsigned i = 0; i < nl; i++)
        for (unsigned j = 0; j < nl; j++) {
            if (i == j)
                continue;
            uint64_t d = ((base[j] - base[i]) * inv) & 0xffffff;
            if (d >= best)
                continue;
            int common = 0;
            for (unsigned x = 0; x < K[i]; x++)
                for (unsigned y = 0; y < K[j]; y++)
                    common += L[i][x] == L[j][y];
            if (common >= common_min) {
                best = d;
                ba = i;
                bb = j;
            }
        }
    if (best > 200)
        mp_die("no colliding pair of lists within 200 creates (best %llu)",
               (unsigned long long)best);
    *pa = ba;
    *pb = bb;
    *pbest = best;
}

static int idclash(struct mp *m)
{
    unsigned ba, bb;
    uint64_t best;
    ic_find(m, 1, &ba, &bb, &best);
    unsigned ma = 0, mb = 0;
    int ina = 0, inb = 0;
    ptl_process_id_t ia[4], ib[4];
    for (unsigned x = 0; x < K[ba]; x++) {
        ia[x] = m->ids[L[ba][x]];
        if (L[ba][x] == ME)
            ina = 1, ma = x;
    }
    for (unsigned y = 0; y < K[bb]; y++) {
        ib[y] = m->ids[L[bb][y]];
        if (L[bb][y] == ME)
            inb = 1, mb = y;
    }
    (void)ma;
    (void)mb;
    ptl_handle_coll_t ga = 0, gb = 0;
    if (inb)
        MP_CHECK(PtlCollGroupCreate(m->ni, ib, K[bb], &gb));
    for (uint64_t c = 0; ina && c < best; c++) {
        MP_CHECK(PtlCollGroupCreate(m->ni, ia, K[ba], &ga));
        MP_CHECK(PtlCollBarrier(ga));
        MP_CHECK(PtlCollGroupFree(ga));
    }
    if (ina) { /* the id of B: refused everywhere, or a group that works */
        int rc = PtlCollGroupCreate(m->ni, ia, K[ba], &ga);
        if (rc == PTL_NO_SPACE)
            rc = PtlCollGroupCreate(m->ni, ia, K[ba], &ga);
        MP_CHECK(rc);
    }
    for (int it = 0; it < 100; it++) {
        int64_t xa = 1000 + ME, ya = 0, xb = 1, yb = 0, wa = 0;
        ptl_handle_coll_req_t qa = 0, qb = 0;
        if (ina)
            MP_CHECK(PtlCollIallreduce(ga, &xa, &ya, 1, PTL_COLL_INT64, PTL_COLL_SUM, &qa));
        if (inb)
            MP_CHECK(PtlCollIallreduce(gb, &xb, &yb, 1, PTL_COLL_INT64, PTL_COLL_SUM, &qb));
        for (unsigned x = 0; x < K[ba]; x++)
            wa += 1000 + L[ba][x];
        if (ina && (ic_poll(qa, "allreduce on A") != PTL_OK || ya != wa))
            mp_die("allreduce %d on A: %lld, expected %lld", it, (long long)ya, (long long)wa);
        if (inb && (ic_poll(qb, "allreduce on B") != PTL_OK || yb != K[bb]))
            mp_die("allreduce %d on B: %lld, expected %u", it, (long long)yb, K[bb]);
    }
    if (ina)
        MP_CHECK(PtlCollGroupFree(ga));
    if (inb)
        MP_CHECK(PtlCollGroupFree(gb));
    mp_barrier(m);
    if (ME == 0)
        printf("mp_coll idclash: OK (lists of %u and %u members, %llu creates apart)\n", K[ba],
               K[bb], (unsigned long long)best);
    fflush(NULL);
    mp_fini(m);
    return 0;
}

/* mp_coll idbye (8 ranks): a late bye of a freed group must not reach a
 * newer group of another member list whose 24-bit id is the same. Lists A
 * and B with two members R and P in common are found as in idclash; A is
 * made and freed until its next create has B's id (X). Every member of A
 * runs a barrier on X and frees it at once, except P, which frees it 500 ms
 * later, so that R has freed X and made B's group (Y: the same 24 bits, its
 * bye ME posted before its hello) when P's bye of X (calls entered: 1)
 * arrives. Then four calls on Y (a nonblocking barrier and small allreduce,
 * a 64 KiB allreduce, a nonblocking barrier), P 250 ms late to each, so that
 * the others' waits stall and look at the byes: every call must return
 * PTL_OK with the right values. Before, R took P's bye of X for P leaving Y
 * after one call, and Y's second call failed with PTL_FAIL (a spurious
 * "left the group before completing this call"). */
static void ib_nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int idbye(struct mp *m)
{
    unsigned ba, bb;
    uint64_t best;
    ic_find(m, 2, &ba, &bb, &best);
    int ina = 0, inb = 0;
    unsigned r = N, p = N; /* the first two members of B that are in A */
    ptl_process_id_t ia[4], ib[4];
    for (unsigned x = 0; x < K[ba]; x++) {
        ia[x] = m->ids[L[ba][x]];
        ina |= L[ba][x] == ME;
    }
    for (unsigned y = 0; y < K[bb]; y++) {
        ib[y] = m->ids[L[bb][y]];
        inb |= L[bb][y] == ME;
        for (unsigned x = 0; x < K[ba]; x++)
            if (L[bb][y] == L[ba][x]) {
                if (r == N)
                    r = L[bb][y];
                else if (p == N)
                    p = L[bb][y];
            }
    }
    ptl_handle_coll_t ga, gb;
    for (uint64_t c = 0; ina && c < best; c++) {
        mp_doing("A made and freed up to B's id");
        MP_CHECK(PtlCollGroupCreate(m->ni, ia, K[ba], &ga));
        MP_CHECK(PtlCollBarrier(ga));
        MP_CHECK(PtlCollGroupFree(ga));
    }
    if (ina) { /* X: B's id */
        mp_doing("X (A with B's id)");
        MP_CHECK(PtlCollGroupCreate(m->ni, ia, K[ba], &ga));
        MP_CHECK(PtlCollBarrier(ga));
        if (ME == p)
            ib_nap(500); /* R frees X and makes Y meanwhile */
        MP_CHECK(PtlCollGroupFree(ga)); /* P's bye: 1 call entered */
    }
    if (inb) {
        mp_doing("Y (B) made");
        MP_CHECK(PtlCollGroupCreate(m->ni, ib, K[bb], &gb));
        static int64_t bx[8192], by[8192];
        for (int i = 0; i < 8192; i++)
            bx[i] = ME + i;
        int64_t x = ME + 1, y = 0, want = 0, lwant = 0;
        for (unsigned j = 0; j < K[bb]; j++) {
            want += L[bb][j] + 1;
            lwant += L[bb][j] + 8191;
        }
        for (int k = 0; k < 4; k++) {
            if (ME == p)
                ib_nap(250); /* the others' waits stall: they look at the byes */
            ptl_handle_coll_req_t q;
            int rc;
            mp_doing("a call on Y after P's bye of X");
            if (k == 0 || k == 3) {
                rc = PtlCollIbarrier(gb, &q);
                if (rc == PTL_OK)
                    rc = PtlCollWait(q);
            } else if (k == 1) {
                y = 0;
                rc = PtlCollIallreduce(gb, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, &q);
                if (rc == PTL_OK)
                    rc = PtlCollWait(q);
                if (rc == PTL_OK && y != want)
                    mp_die("allreduce on Y: %lld, expected %lld", (long long)y, (long long)want);
            } else {
                rc = PtlCollAllreduce(gb, bx, by, 8192, PTL_COLL_INT64, PTL_COLL_SUM);
                if (rc == PTL_OK && by[8191] != lwant)
                    mp_die("large allreduce on Y: %lld, expected %lld", (long long)by[8191],
                           (long long)lwant);
            }
            if (rc != PTL_OK)
                mp_die("call %d on Y (B: %u members, R %u, P %u; X freed by P late): %s", k + 1,
                       K[bb], r, p, PtlErrorStr((unsigned)rc));
        }
        MP_CHECK(PtlCollGroupFree(gb));
    }
    mp_barrier(m);
    if (ME == 0)
        printf("mp_coll idbye: OK (lists of %u and %u members, %llu creates apart)\n", K[ba],
               K[bb], (unsigned long long)best);
    fflush(NULL);
    mp_fini(m);
    return 0;
}

static int died(struct mp *m)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    MP_CHECK(PtlCollBarrier(g));
    if (ME == 2) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        fflush(NULL);
        _exit(0); /* no PtlNIFini: the others see a dead peer */
    }
    int64_t x = ME, y, z;
    ptl_handle_coll_req_t qa, qb, qc;
    uint64_t t0 = mp_now_ms();
    MP_CHECK(PtlCollIallreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, &qa));
    MP_CHECK(PtlCollIbarrier(g, &qb));
    /* a small reduce to member 0 (the slot reduce): member 2 is one of its
     * children, so the root's wait must fail; member 1, a leaf, may finish */
    MP_CHECK(PtlCollIreduce(g, &x, &z, 1, PTL_COLL_INT64, PTL_COLL_SUM, 0, &qc));
    mp_doing("waits on a group with a dead member");
    int ra = PtlCollWait(qa), rb = PtlCollWait(qb), rc = PtlCollWait(qc);
    uint64_t ms = mp_now_ms() - t0;
    if (ra != PTL_FAIL || rb != PTL_FAIL)
        mp_die("waits with a dead member returned %d and %d, expected PTL_FAIL", ra, rb);
    if ((ME == 0 && rc != PTL_FAIL) || (rc != PTL_FAIL && rc != PTL_OK))
        mp_die("the reduce's wait with a dead child returned %d, expected PTL_FAIL%s", rc,
               ME == 0 ? " at the root" : " or PTL_OK");
    if (ms > 15000)
        mp_die("the waits took %llu ms", (unsigned long long)ms);
    if (ME == 0)
        printf("mp_coll died: OK (PTL_FAIL after %llu ms)\n", (unsigned long long)ms);
    fflush(NULL);
    PtlNIFini(m->ni);
    PtlFini();
    return 0;
}

/* mp_coll departed (3 ranks): rank 2 frees the group, calls PtlNIFini and
 * exits 0 without entering the next call (an erroneous program, but a
 * detectable one): the blocking calls of ranks 0 and 1 on the flag path
 * (a barrier, then a small allreduce) must return PTL_FAIL within seconds,
 * never hang (they did: an adversarial client, fifty-third session); so
 * must a nonblocking barrier and allreduce (the persistent path) and a large
 * allreduce (the per-call path; they waited for ever until the fifty-seventh
 * session). Where no flag slots tell (over ofi, PTL_COLL_FLAGS=0: members on
 * other hosts) every call waits on counters, and rank 2's bye from
 * PtlCollGroupFree must fail them (they waited for ever until the sixtieth
 * session). departed_nofree: rank 2 leaves without PtlCollGroupFree (its
 * PtlNIFini says the bye). departed_test: the nonblocking calls completed by
 * polling PtlCollTest, which must say done with PTL_FAIL too. Rank 2
 * enters the first call after a pause, so that a member that leaves right
 * after a call it made is not taken for one that did not make it. */
#define DEP_BCASTS 3 /* PB_SIG - 1 (coll_int.h): the next one sends start signals */
/* departed_test: the same, the nonblocking calls completed by polling
 * PtlCollTest (a large Iallreduce too): done with PTL_FAIL within seconds,
 * as PtlCollWait; it said "not done" for ever before (an adversarial client). */
static bool dep_poll;
static int dep_complete(ptl_handle_coll_req_t q)
{
    if (!dep_poll)
        return PtlCollWait(q);
    return test_until(q, 10000, 1000, "PtlCollTest of a call whose member left");
}

static int departed(struct mp *m, bool free_first)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    for (int i = 0; i < 20; i++) {
        MP_CHECK(PtlCollBarrier(g));
        if (i < DEP_BCASTS) { /* small bcasts: on the slots without flag slots */
            int64_t v = ME == 0 ? 77 + i : 0;
            MP_CHECK(PtlCollBcast(g, &v, sizeof v, 0));
            if (v != 77 + i)
                mp_die("bcast %d: %lld", i, (long long)v);
        }
    }
    if (ME == 2) {
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
        MP_CHECK(PtlCollBarrier(g)); /* the others wait for it here: then it leaves */
        if (free_first) /* else PtlNIFini says the group's bye (nofree) */
            MP_CHECK(PtlCollGroupFree(g));
        mp_fini_alone(m); /* no job barrier: rank 2 is gone */
        return 0;
    }
    MP_CHECK(PtlCollBarrier(g));
    uint64_t t0 = mp_now_ms();
    mp_doing("a barrier whose member left");
    int rb = PtlCollBarrier(g);
    int64_t x = ME + 1, y = 0;
    mp_doing("an allreduce whose member left");
    int ra = PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM);
    /* the persistent path (a nonblocking barrier and small allreduce) and
     * the per-call path (a 64 KiB allreduce): their counters wait for the
     * member's part; they waited for ever before */
    ptl_handle_coll_req_t q;
    mp_doing("an Ibarrier whose member left");
    int rib = PtlCollIbarrier(g, &q);
    if (rib == PTL_OK)
        rib = dep_complete(q);
    mp_doing("an Iallreduce whose member left");
    int ria = PtlCollIallreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, &q);
    if (ria == PTL_OK)
        ria = dep_complete(q);
    static int64_t bx[8192], by[8192];
    mp_doing("a large allreduce whose member left");
    int rl = PtlCollAllreduce(g, bx, by, 8192, PTL_COLL_INT64, PTL_COLL_SUM);
    if (dep_poll && rl == PTL_FAIL) { /* and a nonblocking one, polled */
        mp_doing("a large Iallreduce whose member left, polled");
        rl = PtlCollIallreduce(g, bx, by, 8192, PTL_COLL_INT64, PTL_COLL_SUM, &q);
        if (rl == PTL_OK)
            rl = dep_complete(q);
    }
    uint64_t ms = mp_now_ms() - t0;
    if (rb != PTL_FAIL || ra != PTL_FAIL || rib != PTL_FAIL || ria != PTL_FAIL || rl != PTL_FAIL)
        mp_die("calls with a member that left in order returned %d, %d (flag path), %d, %d "
               "(persistent), %d (per call), expected PTL_FAIL",
               rb, ra, rib, ria, rl);
    if (ms > 15000)
        mp_die("the calls took %llu ms", (unsigned long long)ms);
    /* one more small bcast, the slots' fourth (PB_SIG): its start signal
     * (coll/fast.c pb_begin) never comes from rank 2, and the free must not
     * wait for it (it waited 30 s before the byes). Rank 2 is a leaf of the
     * bcast: PTL_OK with the data, or PTL_FAIL (the put to it failed). */
    int64_t v = ME == 0 ? 5 : 0;
    mp_doing("a small bcast whose member left");
    int rbc = PtlCollBcast(g, &v, sizeof v, 0);
    if ((rbc != PTL_OK && rbc != PTL_FAIL) || (rbc == PTL_OK && v != 5))
        mp_die("the bcast without rank 2 returned %d, value %lld", rbc, (long long)v);
    uint64_t t1 = mp_now_ms();
    mp_doing("PtlCollGroupFree after a member left");
    MP_CHECK(PtlCollGroupFree(g));
    uint64_t fms = mp_now_ms() - t1;
    if (fms > 5000)
        mp_die("PtlCollGroupFree took %llu ms", (unsigned long long)fms);
    if (ME == 0)
        printf("mp_coll departed%s%s: OK (PTL_FAIL after %llu ms, free %llu ms)\n",
               free_first ? "" : " nofree", dep_poll ? " test" : "",
               (unsigned long long)ms, (unsigned long long)fms);
    fflush(NULL);
    mp_fini_alone(m); /* no job barrier: rank 2 is gone */
    return 0;
}

/* mp_coll departed_scratch (3 ranks): rank 2 frees the group and closes its
 * NI (as in departed) without entering the next calls; ranks 0 and 1 then
 * make calls in which they only receive and pass no buffer (the library
 * takes part through scratch memory and reports PTL_SEGV, docs/coll.md),
 * and which cannot complete without rank 2: bcasts and a scatter from root
 * 2 (blocking 8 B: the flag path, or the slot bcast without flag slots;
 * blocking 64 KiB: the per-call path; nonblocking 8 B, completed by
 * PtlCollWait and by polling PtlCollTest), a reduce and a gather to root 0
 * without a recvbuf (rank 2 is a child of the root). Each must return
 * PTL_FAIL, the call's failure, not PTL_SEGV, at every member whose call
 * needs rank 2 (rank 1 is a leaf of the reduce and a sender of the gather:
 * PTL_OK, PTL_SEGV or PTL_FAIL there). Before, every one of them said
 * PTL_SEGV: a caller could not tell a failed call from a completed one. */
static int departed_scratch(struct mp *m)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    for (int i = 0; i < 5; i++)
        MP_CHECK(PtlCollBarrier(g));
    if (ME == 2) {
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
        MP_CHECK(PtlCollBarrier(g)); /* the others wait for it here: then it leaves */
        MP_CHECK(PtlCollGroupFree(g));
        mp_fini_alone(m);
        return 0;
    }
    MP_CHECK(PtlCollBarrier(g));
    struct timespec ts = {0, 300 * 1000000L}; /* rank 2 is gone by then */
    nanosleep(&ts, NULL);
    uint64_t t0 = mp_now_ms();
    int64_t x = ME + 1;
    ptl_handle_coll_req_t q;
    int rc[8];
    const char *what[8] = {"blocking 8 B bcast from the departed root",
                           "blocking 64 KiB bcast from the departed root",
                           "nonblocking 8 B bcast from the departed root (PtlCollWait)",
                           "nonblocking 8 B bcast from the departed root (PtlCollTest)",
                           "blocking 8 B reduce to root 0, no recvbuf",
                           "nonblocking 8 B reduce to root 0, no recvbuf",
                           "nonblocking gather to root 0, no recvbuf",
                           "nonblocking scatter from the departed root"};
    mp_doing(what[0]);
    rc[0] = PtlCollBcast(g, NULL, 8, 2);
    mp_doing(what[1]);
    rc[1] = PtlCollBcast(g, NULL, 65536, 2);
    mp_doing(what[2]);
    if ((rc[2] = PtlCollIbcast(g, NULL, 8, 2, &q)) == PTL_OK)
        rc[2] = PtlCollWait(q);
    mp_doing(what[3]);
    if ((rc[3] = PtlCollIbcast(g, NULL, 8, 2, &q)) == PTL_OK)
        rc[3] = test_until(q, 10000, 1000, what[3]);
    mp_doing(what[4]);
    rc[4] = PtlCollReduce(g, &x, NULL, 1, PTL_COLL_INT64, PTL_COLL_SUM, 0);
    mp_doing(what[5]);
    if ((rc[5] = PtlCollIreduce(g, &x, NULL, 1, PTL_COLL_INT64, PTL_COLL_SUM, 0, &q)) == PTL_OK)
        rc[5] = PtlCollWait(q);
    mp_doing(what[6]);
    if ((rc[6] = PtlCollIgather(g, &x, NULL, 8, 0, &q)) == PTL_OK)
        rc[6] = PtlCollWait(q);
    mp_doing(what[7]);
    if ((rc[7] = PtlCollIscatter(g, NULL, NULL, 8, 2, &q)) == PTL_OK)
        rc[7] = PtlCollWait(q);
    uint64_t ms = mp_now_ms() - t0;
    int bad = 0;
    for (int i = 0; i < 8; i++) {
        bool leaf = ME == 1 && i >= 4 && i <= 6; /* needs nothing of rank 2 */
        if (rc[i] != PTL_FAIL && !(leaf && (rc[i] == PTL_OK || rc[i] == PTL_SEGV))) {
            mp_log("%s: %s, expected PTL_FAIL (a member left)", what[i],
                   PtlErrorStr((unsigned)rc[i]));
            bad = 1;
        }
    }
    if (bad)
        mp_die("a receive-only member's failed call with scratch memory did not say PTL_FAIL");
    if (ms > 15000)
        mp_die("the calls took %llu ms", (unsigned long long)ms);
    MP_CHECK(PtlCollGroupFree(g));
    if (ME == 0)
        printf("mp_coll departed scratch: OK (PTL_FAIL after %llu ms)\n", (unsigned long long)ms);
    fflush(NULL);
    mp_fini_alone(m);
    return 0;
}

/* mp_coll departed_pending (4 ranks): the last rank enters a nonblocking
 * allreduce (small: the persistent path; or large: the per-call path) and
 * closes its NI at once, without PtlCollWait (an erroneous program, as an
 * MPI rank that finalizes with requests pending). Its part of the later
 * rounds depends on what the others send after it left, so their blocking
 * allreduce of that call can never complete: it must return PTL_FAIL within
 * seconds, never hang (it waited for ever: the member's count said it had
 * entered the call, flag slots and byes alike). A first call completed by
 * everyone checks the others still agree on a good result before. */
static int departed_pending(struct mp *m, bool large)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    static int64_t bx[8192], by[8192];
    ptl_size_t cnt = large ? 8192 : 1;
    for (ptl_size_t i = 0; i < cnt; i++)
        bx[i] = ME + 1 + (int64_t)i;
    MP_CHECK(PtlCollAllreduce(g, bx, by, cnt, PTL_COLL_INT64, PTL_COLL_SUM));
    int64_t want = (int64_t)(N * (N + 1) / 2);
    if (by[0] != want)
        mp_die("first allreduce: %lld, expected %lld", (long long)by[0], (long long)want);
    if (ME == N - 1) {
        ptl_handle_coll_req_t q;
        MP_CHECK(PtlCollIallreduce(g, bx, by, cnt, PTL_COLL_INT64, PTL_COLL_SUM, &q));
        mp_fini_alone(m); /* PtlNIFini with the call in flight: no PtlCollWait */
        return 0;
    }
    struct timespec ts = {0, 300 * 1000000L}; /* the last rank is gone by then */
    nanosleep(&ts, NULL);
    uint64_t t0 = mp_now_ms();
    mp_doing("an allreduce whose member left with its own still in flight");
    int rc = PtlCollAllreduce(g, bx, by, cnt, PTL_COLL_INT64, PTL_COLL_SUM);
    uint64_t ms = mp_now_ms() - t0;
    if (rc != PTL_FAIL)
        mp_die("the allreduce returned %d (value %lld), expected PTL_FAIL", rc,
               (long long)by[0]);
    if (ms > 15000)
        mp_die("the allreduce took %llu ms", (unsigned long long)ms);
    mp_doing("PtlCollGroupFree after a member left");
    MP_CHECK(PtlCollGroupFree(g));
    if (ME == 0)
        printf("mp_coll departed pending%s: OK (PTL_FAIL after %llu ms)\n", large ? " large" : "",
               (unsigned long long)ms);
    fflush(NULL);
    mp_fini_alone(m);
    return 0;
}

/* mp_coll manybye G (N ranks): G groups over different member orders, all
 * alive; the last rank closes its NI without freeing them, so its PtlNIFini
 * says G x (N - 1) byes at once; every other rank's barrier on every group
 * must fail (PTL_FAIL), none wait for ever for a bye that did not leave. */
static int manybye(struct mp *m, unsigned G)
{
    ptl_process_id_t *ids = xmalloc(N * sizeof *ids);
    ptl_handle_coll_t *g = xmalloc(G * sizeof *g);
    for (unsigned k = 0; k < G; k++) {
        for (unsigned i = 0; i < N; i++) /* rotation k % N, reversed on odd rounds */
            ids[i] = m->ids[((k & 1 ? N - 1 - i : i) + k) % N];
        int rc, tries = 0;
        while ((rc = PtlCollGroupCreate(m->ni, ids, N, &g[k])) == PTL_NO_SPACE && ++tries < 3)
            ; /* an id clash (docs/coll.md): the next create has another id */
        if (rc != PTL_OK)
            mp_die("create %u: %s", k, PtlErrorStr((unsigned)rc));
        MP_CHECK(PtlCollBarrier(g[k]));
    }
    if (ME == N - 1) {
        mp_fini_alone(m); /* PtlNIFini: every group's bye */
        free(g);
        free(ids);
        return 0;
    }
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    uint64_t t0 = mp_now_ms();
    for (unsigned k = 0; k < G; k++) {
        mp_doing("a barrier of one of many groups whose member left");
        int rc = PtlCollBarrier(g[k]);
        if (rc != PTL_FAIL)
            mp_die("group %u: barrier returned %d, expected PTL_FAIL", k, rc);
    }
    uint64_t ms = mp_now_ms() - t0;
    for (unsigned k = 0; k < G; k++)
        MP_CHECK(PtlCollGroupFree(g[k]));
    if (ME == 0)
        printf("mp_coll manybye: OK %u groups, %llu ms\n", G, (unsigned long long)ms);
    fflush(NULL);
    free(g);
    free(ids);
    mp_fini_alone(m);
    return 0;
}

/* mp_coll trigfull (3 ranks; PTL_TRIG_SLOTS small): rank 0 starts TF_CALLS
 * nonblocking alltoalls at once while the others start theirs 300 ms later.
 * Rank 0's early calls arm triggered puts that wait for the others' RTRs and
 * fill its NI's triggered slots; its later calls must wait for room (the
 * slots free as the others catch up), not fail with PTL_NO_SPACE on rank 0
 * alone while the same calls succeed elsewhere and never complete there (an
 * adversarial client: 1,000 Ialltoall on 8 ranks). Every result is checked. */
#define TF_CALLS 100
static int finish(struct mp *m, ptl_handle_coll_t g, const char *name);
static int trigfull(struct mp *m)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    int64_t *in = xmalloc(sizeof *in * N * TF_CALLS), *out = xmalloc(sizeof *out * N * TF_CALLS);
    ptl_handle_coll_req_t *q = xmalloc(sizeof *q * TF_CALLS);
    for (unsigned c = 0; c < TF_CALLS; c++)
        for (unsigned j = 0; j < N; j++) {
            in[(size_t)c * N + j] = 1000000 * (int64_t)c + 1000 * (int64_t)ME + (int64_t)j;
            out[(size_t)c * N + j] = -1;
        }
    if (ME != 0)
        usleep(300000);
    mp_doing("100 Ialltoall, rank 0 ahead");
    for (unsigned c = 0; c < TF_CALLS; c++) {
        int rc = PtlCollIalltoall(g, in + (size_t)c * N, out + (size_t)c * N, sizeof(int64_t),
                                  &q[c]);
        if (rc != PTL_OK)
            mp_die("Ialltoall %u of %u: %s", c, TF_CALLS, PtlErrorStr((unsigned)rc));
    }
    for (unsigned c = 0; c < TF_CALLS; c++)
        MP_CHECK(PtlCollWait(q[TF_CALLS - 1 - c])); /* newest first */
    for (unsigned c = 0; c < TF_CALLS; c++)
        for (unsigned j = 0; j < N; j++)
            if (out[(size_t)c * N + j] != 1000000 * (int64_t)c + 1000 * (int64_t)j + (int64_t)ME)
                mp_die("Ialltoall %u: member %u's block is %lld", c, j,
                       (long long)out[(size_t)c * N + j]);
    free(in);
    free(out);
    free(q);
    return finish(m, g, "mp_coll trigfull");
}

/* The end of a job: a last barrier on the group, free it, few drops, "OK". */
/* mp_coll bcast: the pipelined path around its segment size (pt_coll_bcast_seg
 * in coll/bcast.c: groups of 3 or more, more than one segment, at most 64). */
static void t_bcast_pipe(ptl_handle_coll_t g)
{
    const char *e = getenv("PTL_COLL_BCAST_SEG");
    size_t seg = e ? (size_t)strtoull(e, NULL, 0) : 0;
    if (!seg) /* off (the default): the same sizes through the whole-buffer tree */
        seg = 1000;
    size_t ls[] = {seg - 1, seg, seg + 1, 2 * seg - 1, 2 * seg + 1, 3 * seg, 64 * seg,
                   64 * seg + 1, 200 * seg + 7};
    bcast_sizes(g, ls, sizeof ls / sizeof ls[0], 70, "pipelined bcast");
    enum { K = 16 };
    char *b[K];
    ptl_handle_coll_req_t q[K];
    size_t l = 3 * seg + 5;
    for (int k = 0; k < K; k++) {
        unsigned root = (unsigned)k % N;
        b[k] = xmalloc(l);
        if (ME == root)
            mp_fill(b[k], l, root, 90 + (unsigned)k, 0);
        else
            memset(b[k], 0, l);
        mp_doing("pipelined Ibcast");
        MP_CHECK(PtlCollIbcast(g, b[k], l, root, &q[k]));
    }
    for (int k = K - 1; k >= 0; k--) {
        MP_CHECK(PtlCollWait(q[k]));
        int64_t bad = mp_check_pattern(b[k], l, (unsigned)k % N, 90 + (unsigned)k, 0);
        if (bad >= 0)
            mp_die("pipelined Ibcast %d of %zu bytes: byte %lld wrong", k, l, (long long)bad);
        free(b[k]);
    }
    mp_log("pipelined bcast: every root around 1, 2, 3 and 64 segments, 16 in flight, checked");
}

static int finish(struct mp *m, ptl_handle_coll_t g, const char *name)
{
    MP_CHECK(PtlCollBarrier(g));
    MP_CHECK(PtlCollGroupFree(g));
    /* Group hellos are resent until the peer posted (docs/coll.md): those drop.
     * The count is logged so that a run that fails here shows how close the
     * others came (8 ranks under ASan and load: once over the limit). */
    long long drops = mp_drops(m);
    mp_log("%lld messages dropped", drops);
    if (drops > 1000)
        mp_die("%lld messages dropped", drops);
    mp_barrier(m);
    if (ME == 0)
        printf("%s: OK (%u ranks)\n", name, N);
    mp_fini(m);
    return 0;
}

/* lists K: K groups of the whole job, each over another order of the
 * members (the k-th permutation, decoded from k in the factorial number
 * system), created, used once and freed: one group alive at a time. The
 * library keeps a count per member list ever used (group ids); a fixed
 * table of 256 made the 257th list fail with PTL_NO_SPACE for good (an
 * audit). Needs K distinct orders: 6 ranks have 720. */
static int lists(struct mp *m, unsigned k_max)
{
    ptl_process_id_t *ids = xmalloc(N * sizeof *ids);
    unsigned *pool = xmalloc(N * sizeof *pool);
    unsigned k = 0;
    for (; k < k_max; k++) {
        unsigned long code = k, me = N;
        for (unsigned i = 0; i < N; i++)
            pool[i] = i;
        for (unsigned i = 0, left = N; i < N; i++, left--) { /* pick code % left of the rest */
            unsigned j = (unsigned)(code % left);
            code /= left;
            ids[i] = m->ids[pool[j]];
            if (pool[j] == ME)
                me = i;
            memmove(&pool[j], &pool[j + 1], (left - j - 1) * sizeof *pool);
        }
        if (code) /* k past N!: the orders have run out */
            break;
        ptl_handle_coll_t g;
        int rc = PtlCollGroupCreate(m->ni, ids, N, &g);
        if (rc != PTL_OK)
            mp_die("create of member order %u (one group alive at a time): %s", k,
                   PtlErrorStr((unsigned)rc));
        int64_t x = (int64_t)me, y = -1;
        MP_CHECK(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM));
        if (y != (int64_t)N * (N - 1) / 2)
            mp_die("order %u: allreduce gave %lld", k, (long long)y);
        /* Four persistent-path requests at once: the group keeps them as
         * free slots after their waits (coll/fast.c, rcache), and its free must
         * give them back to the table (1,024 slots: 300 groups that kept
         * four each would run it out) */
        ptl_handle_coll_req_t q[4];
        for (int i = 0; i < 4; i++) {
            rc = PtlCollIbarrier(g, &q[i]);
            if (rc != PTL_OK)
                mp_die("order %u: barrier %d of 4 in flight: %s", k, i, PtlErrorStr((unsigned)rc));
        }
        for (int i = 0; i < 4; i++)
            MP_CHECK(PtlCollWait(q[i]));
        MP_CHECK(PtlCollGroupFree(g));
    }
    free(ids);
    free(pool);
    mp_barrier(m);
    if (ME == 0)
        printf("mp_coll lists: OK %u member orders, one group at a time\n", k);
    mp_fini(m);
    return 0;
}

/* Rank 0's group table full (groups of itself only), then a create over the
 * whole job: every member says PTL_NO_SPACE at once (before: rank 0 at once,
 * the others PTL_FAIL after 30 s), and once rank 0 has room the next create
 * over the same list works on every member (before: rank 0 had not counted
 * the refused create, its group id differed from its peers', and the create
 * failed after 30 s). Twice, to see the counts stay in step. */
static int full(struct mp *m)
{
    enum { MAX_SELF = 4096 };
    ptl_handle_coll_t *self = xmalloc(MAX_SELF * sizeof *self), g;
    unsigned nself = 0;
    mp_barrier(m);
    if (ME == 0) {
        ptl_process_id_t me = m->ids[0];
        int rc;
        while (nself < MAX_SELF && (rc = PtlCollGroupCreate(m->ni, &me, 1, &self[nself])) == PTL_OK)
            nself++;
        if (nself == MAX_SELF || rc != PTL_NO_SPACE)
            mp_die("groups of one: %u created, then %s", nself, PtlErrorStr((unsigned)rc));
    }
    for (int round = 0; round < 2; round++) {
        int rc = PtlCollGroupCreate(m->ni, m->ids, N, &g);
        if (rc != PTL_NO_SPACE)
            mp_die("round %d: create with rank 0's table full: %s, wanted PTL_NO_SPACE on every "
                   "member", round, PtlErrorStr((unsigned)rc));
        if (ME == 0)
            MP_CHECK(PtlCollGroupFree(self[--nself]));
        rc = PtlCollGroupCreate(m->ni, m->ids, N, &g);
        if (rc != PTL_OK)
            mp_die("round %d: create once rank 0 has room: %s", round, PtlErrorStr((unsigned)rc));
        int64_t x = (int64_t)ME + 1, y = 0;
        MP_CHECK(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM));
        if (y != (int64_t)N * (N + 1) / 2)
            mp_die("round %d: allreduce gave %lld", round, (long long)y);
        if (ME == 0) { /* full again: the group just made takes the slot */
            ptl_process_id_t me = m->ids[0];
            if (PtlCollGroupCreate(m->ni, &me, 1, &self[nself]) != PTL_NO_SPACE)
                mp_die("round %d: rank 0's table had room", round);
        }
        MP_CHECK(PtlCollGroupFree(g));
        if (ME == 0)
            MP_CHECK(PtlCollGroupCreate(m->ni, &m->ids[0], 1, &self[nself++]));
    }
    for (unsigned i = 0; i < nself; i++)
        MP_CHECK(PtlCollGroupFree(self[i]));
    free(self);
    mp_barrier(m);
    if (ME == 0)
        printf("mp_coll full: OK\n");
    mp_fini(m);
    return 0;
}

/* Member i's 2 doubles of round r: large and small magnitudes, so that the
 * order of the sum shows in the last bits. */
static void fl_vals(unsigned i, long r, double *v)
{
    v[0] = (i % 2 ? 1e16 : 1.0) * (double)(1 + (r + i) % 7) + 0.1 * (double)i;
    v[1] = -(double)(r % 11) * 0.3 + (double)i * 1e-3;
}

/* Serial sum of the doubles of round r over members in order ord[0..N). */
static void fl_serial(const unsigned *ord, long r, double *out)
{
    fl_vals(ord[0], r, out);
    for (unsigned k = 1; k < N; k++) {
        double v[2];
        fl_vals(ord[k], r, v);
        out[0] += v[0];
        out[1] += v[1];
    }
}

/* One round of blocking calls on g (members in order ord; we are member
 * pos). exact: the double sums must equal the serial sum in member order bit
 * for bit (the flag path's order; from 3 members on, the triggered path's
 * recursive doubling adds in another); else within rounding. */
static void fl_round(ptl_handle_coll_t g, const unsigned *ord, unsigned pos, long r, int exact)
{
    MP_CHECK(PtlCollBarrier(g));
    int64_t x = (int64_t)(ME + 1) * r, y = -1, want = (int64_t)N * (N + 1) / 2 * r;
    MP_CHECK(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM));
    if (y != want)
        mp_die("flags round %ld: int64 sum %lld, wanted %lld", r, (long long)y, (long long)want);
    double d[2], e[2];
    fl_vals(ME, r, d);
    fl_serial(ord, r, e);
    MP_CHECK(PtlCollAllreduce(g, d, d, 2, PTL_COLL_DOUBLE, PTL_COLL_SUM)); /* in place */
    if (exact ? memcmp(d, e, sizeof d) != 0
              : fabs(d[0] - e[0]) > 1e-9 * fabs(e[0]) + 1e-9 || fabs(d[1] - e[1]) > 1e-9)
        mp_die("flags round %ld: double sums %.17g %.17g, wanted %.17g %.17g (member order)", r,
               d[0], d[1], e[0], e[1]);
    int32_t a = (int32_t)((ME * 7 + (unsigned)r) % 13), b = -1, mx = -1;
    for (unsigned i = 0; i < N; i++)
        if ((int32_t)((i * 7 + (unsigned)r) % 13) > mx)
            mx = (int32_t)((i * 7 + (unsigned)r) % 13);
    unsigned root = (unsigned)(r % N);
    MP_CHECK(PtlCollReduce(g, &a, &b, 1, PTL_COLL_INT32, PTL_COLL_MAX, root));
    if (pos == root && b != mx)
        mp_die("flags round %ld: reduce max at member %u gave %d, wanted %d", r, root, b, mx);
    if (pos != root && b != -1)
        mp_die("flags round %ld: reduce wrote %d at a non-root", r, b);
    /* two bcasts from rotating roots, 16 and 3 bytes: a root runs ahead of
     * its members (it waits only for the one before the previous to be read) */
    for (int k = 0; k < 2; k++) {
        unsigned br = (unsigned)((r + (long)k) % N);
        size_t len = k ? 3 : 16;
        unsigned char bb[16], want[16];
        for (size_t i = 0; i < sizeof want; i++)
            want[i] = (unsigned char)(r * 31 + (long)(br * 7 + i));
        if (pos == br)
            memcpy(bb, want, sizeof bb);
        else
            memset(bb, 0xee, sizeof bb);
        MP_CHECK(PtlCollBcast(g, bb, len, br));
        if (memcmp(bb, want, len) || (len < sizeof bb && pos != br && bb[len] != 0xee))
            mp_die("flags round %ld: bcast of %zu bytes from member %u wrong", r, len, br);
    }
}

static int flags(struct mp *m)
{
    unsigned *fwd = xmalloc(N * sizeof *fwd), *rev = xmalloc(N * sizeof *rev);
    ptl_process_id_t *rids = xmalloc(N * sizeof *rids);
    for (unsigned i = 0; i < N; i++) {
        fwd[i] = i;
        rev[i] = N - 1 - i;
        rids[i] = m->ids[N - 1 - i];
    }
    ptl_handle_coll_t g, gr;
    mp_doing("flag groups");
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    MP_CHECK(PtlCollGroupCreate(m->ni, rids, N, &gr));
    mp_doing("flag rounds");
    for (long r = 1; r <= 3000; r++) {
        if (r % 37 == (long)(ME * 11 % 37)) /* this member comes late: the others sleep */
            usleep((useconds_t)(200 + (r % 5) * 300));
        ptl_handle_coll_req_t q = 0;
        int64_t nx = (int64_t)ME - 5 * r, ny = 0;
        if (r % 10 == 0) /* a nonblocking one in flight across the blocking ones */
            MP_CHECK(PtlCollIallreduce(g, &nx, &ny, 1, PTL_COLL_INT64, PTL_COLL_SUM, &q));
        fl_round(g, fwd, ME, r, 1);
        fl_round(gr, rev, N - 1 - ME, r, 1);
        if (q) {
            MP_CHECK(PtlCollWait(q));
            if (ny != (int64_t)N * (N - 1) / 2 - 5 * r * (int64_t)N)
                mp_die("flags round %ld: the nonblocking allreduce gave %lld", r, (long long)ny);
        }
    }
    MP_CHECK(PtlCollGroupFree(gr));
    t_bcast_stream_n(g, 3000, 500, 1); /* 8 bytes: the flag path's bcast */
    t_bcast_stream_n(g, 2000, 300, 2);
    t_reduce_stream(g, 3000, 500);
    /* a missing buffer where the member only receives: PTL_SEGV, and the
     * group stays in step (the others of a reduce or bcast do not wait) */
    for (unsigned root = 0; root < N; root++) {
        int64_t x = (int64_t)ME + 1, y = 0, v = 0;
        int rc = PtlCollReduce(g, &x, ME == root ? NULL : &y, 1, PTL_COLL_INT64, PTL_COLL_SUM,
                               root);
        if (rc != (ME == root ? PTL_SEGV : PTL_OK))
            mp_die("reduce to %u without the root's recvbuf: %s", root, PtlErrorStr((unsigned)rc));
        rc = PtlCollBcast(g, ME == root ? &x : NULL, sizeof x, root);
        if (rc != (ME == root ? PTL_OK : PTL_SEGV))
            mp_die("bcast from %u without the members' buffers: %s", root, PtlErrorStr((unsigned)rc));
        MP_CHECK(PtlCollReduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, root));
        if (ME == root && y != (int64_t)N * (N + 1) / 2)
            mp_die("reduce to %u after the bad one gave %lld", root, (long long)y);
        v = ME == root ? 77 + (int64_t)root : 0;
        MP_CHECK(PtlCollBcast(g, &v, sizeof v, root));
        if (v != 77 + (int64_t)root)
            mp_die("bcast from %u after the bad one gave %lld", root, (long long)v);
    }
    /* ... and in the nonblocking calls and the gather/scatter pair: the call
     * returns a request, whose completion reports PTL_SEGV; the member took
     * part through scratch memory, so the next call pairs with the others'
     * next call (an adversarial client: Ibcast, Ireduce and the blocking
     * gather skipped the call and took the next one's data) */
    for (unsigned root = 0; root < N; root++) {
        const bool rt = ME == root;
        int64_t x = (int64_t)ME + 1, y = 0, v = rt ? 500 + (int64_t)root : 0;
        int64_t all[N], mine = 10 * (int64_t)ME + (int64_t)root;
        ptl_handle_coll_req_t q;
        MP_CHECK(PtlCollIbcast(g, rt ? &v : NULL, sizeof v, root, &q));
        int rc = PtlCollWait(q);
        if (rc != (rt ? PTL_OK : PTL_SEGV))
            mp_die("Ibcast from %u without the members' buffers: %s", root,
                   PtlErrorStr((unsigned)rc));
        MP_CHECK(PtlCollIreduce(g, &x, rt ? NULL : &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, root, &q));
        rc = PtlCollWait(q);
        if (rc != (rt ? PTL_SEGV : PTL_OK))
            mp_die("Ireduce to %u without the root's recvbuf: %s", root, PtlErrorStr((unsigned)rc));
        rc = PtlCollGather(g, &mine, rt ? NULL : all, sizeof mine, root);
        if (rc != (rt ? PTL_SEGV : PTL_OK))
            mp_die("gather to %u without the root's recvbuf: %s", root, PtlErrorStr((unsigned)rc));
        for (unsigned i = 0; i < N; i++)
            all[i] = rt ? 1000 + (int64_t)i : -1;
        rc = PtlCollScatter(g, rt ? all : NULL, NULL, sizeof y, root); /* root too */
        if (rc != PTL_SEGV)
            mp_die("scatter from %u without recvbuf: %s", root, PtlErrorStr((unsigned)rc));
        /* in step: the next calls give this round's values */
        v = rt ? 600 + (int64_t)root : 0;
        MP_CHECK(PtlCollIbcast(g, &v, sizeof v, root, &q));
        MP_CHECK(PtlCollWait(q));
        if (v != 600 + (int64_t)root)
            mp_die("Ibcast from %u after the bad one gave %lld", root, (long long)v);
        y = 0;
        MP_CHECK(PtlCollIreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM, root, &q));
        MP_CHECK(PtlCollWait(q));
        if (rt && y != (int64_t)N * (N + 1) / 2)
            mp_die("Ireduce to %u after the bad one gave %lld", root, (long long)y);
        mine = 20 * (int64_t)ME + (int64_t)root;
        MP_CHECK(PtlCollGather(g, &mine, all, sizeof mine, root));
        for (unsigned i = 0; rt && i < N; i++)
            if (all[i] != 20 * (int64_t)i + (int64_t)root)
                mp_die("gather to %u after the bad one: member %u gave %lld", root, i,
                       (long long)all[i]);
        for (unsigned i = 0; i < N; i++)
            all[i] = 2000 + (int64_t)i;
        MP_CHECK(PtlCollScatter(g, all, &y, sizeof y, root));
        if (y != 2000 + (int64_t)ME)
            mp_die("scatter from %u after the bad one gave %lld", root, (long long)y);
    }
    enum { MANY = 40 };
    ptl_handle_coll_t many[MANY];
    for (int pass = 0; pass < 2; pass++) {
        mp_doing("40 groups at once");
        for (int k = 0; k < MANY; k++)
            MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &many[k]));
        for (long r = 1; r <= 20; r++)
            for (int k = 0; k < MANY; k++)
                fl_round(many[k], fwd, ME, r * 100 + k, 0);
        for (int k = 0; k < MANY; k++)
            MP_CHECK(PtlCollGroupFree(many[k]));
    }
    free(fwd);
    free(rev);
    free(rids);
    return finish(m, g, "mp_coll flags");
}

/* afterfini: a group used after PtlNIFini: errors, no crash (its flag slots
 * were in the NI's region, unmapped by then). */
static int afterfini(struct mp *m)
{
    ptl_handle_coll_t g;
    MP_CHECK(PtlCollGroupCreate(m->ni, m->ids, N, &g));
    MP_CHECK(PtlCollBarrier(g));
    int64_t x = 1, y = 0;
    MP_CHECK(PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM));
    mp_barrier(m);
    MP_CHECK(PtlNIFini(m->ni));
    if (PtlCollBarrier(g) == PTL_OK)
        mp_die("barrier after PtlNIFini returned PTL_OK");
    if (PtlCollAllreduce(g, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM) == PTL_OK)
        mp_die("allreduce after PtlNIFini returned PTL_OK");
    (void)PtlCollGroupFree(g); /* whatever it says: no crash */
    PtlFini();
    free(m->ids); /* mp_fini's part (the NI is gone already) */
    free(m->seen);
    /* A new NI after it: its groups work (the first NI's bye sink, an ME of
     * the collective library's, went with that NI: coll/group.c). Twice. */
    for (unsigned e = 1; e <= 2; e++) {
        struct mp m2;
        mp_init_epoch(&m2, 2, e);
        ptl_handle_coll_t g2;
        MP_CHECK(PtlCollGroupCreate(m2.ni, m2.ids, m2.size, &g2));
        x = (int64_t)m2.rank + 1;
        MP_CHECK(PtlCollAllreduce(g2, &x, &y, 1, PTL_COLL_INT64, PTL_COLL_SUM));
        if (y != (int64_t)m2.size * (m2.size + 1) / 2)
            mp_die("afterfini: allreduce on NI %u gave %lld", e, (long long)y);
        MP_CHECK(PtlCollGroupFree(g2));
        mp_fini(&m2);
    }
    if (ME == 0)
        printf("mp_coll afterfini: OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct mp m;
    int large = argc > 1 && !strcmp(argv[1], "large");
    int pr = argc > 1 && !strcmp(argv[1], "pairs");
    int bc = argc > 1 && !strcmp(argv[1], "bcast");
    int fl = argc > 1 && (!strcmp(argv[1], "flags") || !strcmp(argv[1], "afterfini") ||
                          !strcmp(argv[1], "handles"));
    /* MP_COLL_NOFLAGS_RID=r: rank r alone runs with PTL_COLL_FLAGS=0 (it takes
     * no flag slot, so every group of it must run on triggered operations on
     * every member, not hang with the others on flags) */
    const char *nf = getenv("MP_COLL_NOFLAGS_RID"), *rid = getenv("PTL_MY_RID");
    if (nf && rid && !strcmp(nf, rid))
        setenv("PTL_COLL_FLAGS", "0", 1);
    mp_init(&m, argc > 1 && !large && !pr && !bc && !fl ? 3 : 1);
    N = m.size;
    ME = m.rank;
    if (pr)
        return pairs(&m);
    if (argc > 2 && !strcmp(argv[1], "lists"))
        return lists(&m, (unsigned)atoi(argv[2]));
    if (argc > 1 && !strcmp(argv[1], "flags"))
        return flags(&m);
    if (argc > 1 && !strcmp(argv[1], "afterfini"))
        return afterfini(&m);
    if (argc > 1 && !strcmp(argv[1], "full"))
        return full(&m);
    if (argc > 1 && !strcmp(argv[1], "departed"))
        return departed(&m, true);
    if (argc > 1 && !strcmp(argv[1], "idclash"))
        return idclash(&m);
    if (argc > 1 && !strcmp(argv[1], "idbye"))
        return idbye(&m);
    if (argc > 1 && !strcmp(argv[1], "handles"))
        return handles(&m);
    if (argc > 1 && !strcmp(argv[1], "departed_test")) {
        dep_poll = true;
        return departed(&m, true);
    }
    if (argc > 1 && !strcmp(argv[1], "departed_scratch"))
        return departed_scratch(&m);
    if (argc > 1 && !strcmp(argv[1], "departed_nofree"))
        return departed(&m, false);
    if (argc > 1 && !strcmp(argv[1], "departed_pending"))
        return departed_pending(&m, argc > 2 && !strcmp(argv[2], "large"));
    if (argc > 2 && !strcmp(argv[1], "manybye"))
        return manybye(&m, (unsigned)atoi(argv[2]));
    if (argc > 1 && !strcmp(argv[1], "trigfull"))
        return trigfull(&m);
    if (argc > 1 && !strcmp(argv[1], "died")) {
        int rc = died(&m); /* the NI has failed: no mp_fini, but its memory goes */
        free(m.ids);
        free(m.seen);
        return rc;
    }
    ptl_handle_coll_t g;
    if (large) { /* its own job: the whole suite on 8 ranks already takes ~15 s loaded */
        mp_doing("group create");
        MP_CHECK(PtlCollGroupCreate(m.ni, m.ids, N, &g));
        t_large_edges(g);
        return finish(&m, g, "mp_coll large");
    }
    if (bc) {
        mp_doing("group create");
        MP_CHECK(PtlCollGroupCreate(m.ni, m.ids, N, &g));
        t_bcast_pipe(g);
        return finish(&m, g, "mp_coll bcast");
    }
    mp_doing("group create");
    MP_CHECK(PtlCollGroupCreate(m.ni, m.ids, N, &g));
    for (int i = 0; i < 20; i++)
        MP_CHECK(PtlCollBarrier(g));
    t_bcast(g);
    t_bcast_stream(g, 1000, 100);
    t_allreduce(g);
    t_reduce(g);
    t_gather_scatter(g);
    t_allgather_alltoall(g);
    t_inflight(g);
    t_small_edges(g);
    t_persist_inflight(g);
    t_overlap(&m, g);
    t_bad(&m, g);
    return finish(&m, g, "mp_coll");
}
