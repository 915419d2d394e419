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
 */
#include "mp_util.h"

#include <portals3_ext.h>

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

static size_t tsize(ptl_datatype_t t)
{
    return t == PTL_INT32_T || t == PTL_FLOAT ? 4 : 8;
}

/* want[i] = want[i] OP s[i], one element type at a time: the serial result */
#define REF_LOOP(T, EXPR)                                                                          \
    for (size_t i = 0; i + sizeof(T) <= n; i += sizeof(T)) {                                       \
        T a, b;                                                                                    \
        memcpy(&a, d + i, sizeof a);                                                               \
        memcpy(&b, s + i, sizeof b);                                                               \
        a = (EXPR);                                                                                \
        memcpy(d + i, &a, sizeof a);                                                               \
    }
static void reference(unsigned char *d, const unsigned char *s, size_t n, ptl_op_t op,
                      ptl_datatype_t t)
{
    switch (t) {
    case PTL_INT32_T:
        if (op == PTL_SUM)
            REF_LOOP(uint32_t, a + b) else REF_LOOP(uint32_t, a ^ b) break;
    case PTL_INT64_T:
    case PTL_UINT64_T:
        if (op == PTL_SUM)
            REF_LOOP(uint64_t, a + b) else REF_LOOP(uint64_t, a ^ b) break;
    case PTL_FLOAT:
        if (op == PTL_SUM)
            REF_LOOP(float, a + b) else REF_LOOP(float, b < a ? b : a) break;
    case PTL_DOUBLE:
        if (op == PTL_SUM)
            REF_LOOP(double, a + b) else REF_LOOP(double, b < a ? b : a) break;
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

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    if (m.size != 2)
        mp_die("run with 2 ranks");
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
        ptl_process_id_t any = {PTL_NID_ANY, PTL_PID_ANY};
        ptl_handle_me_t me;
        ptl_handle_md_t md;
        MP_CHECK(PtlMEAttach(m.ni, PT_RED, any, 2, 0, PTL_RETAIN, PTL_INS_AFTER, &me));
        ptl_md_iovec_t iov[3];
        for (int k = 0; k < 3; k++) {
            iov[k].iov_base = tpiece[k];
            iov[k].iov_len = tplen[k];
        }
        ptl_md_t d = {iov, 3, PTL_MD_THRESH_INF, 0, opts | PTL_MD_IOVEC, NULL, eq};
        MP_CHECK(PtlMDAttach(me, d, PTL_RETAIN, &md));
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
