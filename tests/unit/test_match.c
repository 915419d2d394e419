/*
 * test_match.c - table-driven tests of the pure predicates of address
 * translation (engine/match.h): ME matching (§6.2), ACL admission (§6.14),
 * MD acceptance with offsets and truncation (§6.3) and the max_size rule (§6.5).
 */
#include "match.h"
#include "wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define ANY PTL_NID_ANY
#define REQ(op, nid, pid, bits, rlen, roff) \
    {op, {nid, pid}, 100, 7, 4, bits, rlen, roff}

static void test_match_table(void **st)
{
    static const struct {
        struct pt_me_key me;
        struct pt_req r;
        bool want;
        const char *why;
    } rows[] = {
        {{{ANY, ANY}, 0x0, 0x0}, REQ(PT_W_PUT, 1, 2, 0x0, 8, 0), true, "all wildcards, bits equal"},
        {{{ANY, ANY}, 0x1, 0x0}, REQ(PT_W_PUT, 1, 2, 0x0, 8, 0), false, "bits differ"},
        {{{ANY, ANY}, 0x1, 0x1}, REQ(PT_W_PUT, 1, 2, 0x0, 8, 0), true, "differing bit ignored"},
        {{{ANY, ANY}, 0xf0, 0x0f}, REQ(PT_W_PUT, 1, 2, 0xf7, 8, 0), true, "low nibble ignored"},
        {{{ANY, ANY}, 0xf0, 0x0f}, REQ(PT_W_PUT, 1, 2, 0xe7, 8, 0), false, "high nibble compared"},
        {{{1, ANY}, 0, 0}, REQ(PT_W_PUT, 1, 2, 0, 8, 0), true, "nid equal"},
        {{{3, ANY}, 0, 0}, REQ(PT_W_PUT, 1, 2, 0, 8, 0), false, "nid differs"},
        {{{ANY, 2}, 0, 0}, REQ(PT_W_PUT, 1, 2, 0, 8, 0), true, "pid equal"},
        {{{ANY, 5}, 0, 0}, REQ(PT_W_PUT, 1, 2, 0, 8, 0), false, "pid differs"},
        {{{1, 2}, ~0ull, 0}, REQ(PT_W_GET, 1, 2, ~0ull, 8, 0), true, "exact id and all-ones bits"},
        {{{ANY, ANY}, 0, ~0ull}, REQ(PT_W_GET, 1, 2, 0x1234, 8, 0), true, "ignore everything"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (pt_match_me(&rows[i].me, &rows[i].r) != rows[i].want)
            fail_msg("row %zu (%s)", i, rows[i].why);
}

static void test_acl_table(void **st)
{
    struct pt_req r = REQ(PT_W_PUT, 1, 2, 0, 8, 0); /* uid 100, jid 7, pt 4 */
    static const struct {
        ptl_process_id_t id;
        ptl_uid_t uid;
        ptl_jid_t jid;
        ptl_pt_index_t pt;
        enum pt_acl_verdict want;
    } rows[] = {
        {{ANY, ANY}, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY, PT_ACL_OK},
        {{ANY, ANY}, 100, PTL_JID_ANY, PTL_PT_INDEX_ANY, PT_ACL_OK},
        {{ANY, ANY}, 101, PTL_JID_ANY, PTL_PT_INDEX_ANY, PT_ACL_DENIED},
        {{ANY, ANY}, PTL_UID_ANY, 7, PTL_PT_INDEX_ANY, PT_ACL_OK},
        {{ANY, ANY}, PTL_UID_ANY, 8, PTL_PT_INDEX_ANY, PT_ACL_DENIED},
        {{ANY, ANY}, PTL_UID_ANY, PTL_JID_ANY, 4, PT_ACL_OK},
        {{ANY, ANY}, PTL_UID_ANY, PTL_JID_ANY, 5, PT_ACL_DENIED},
        {{1, 2}, 100, 7, 4, PT_ACL_OK},
        {{1, 3}, 100, 7, 4, PT_ACL_DENIED},
        {{0, 2}, 100, 7, 4, PT_ACL_DENIED},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (pt_acl_check(&rows[i].id, rows[i].uid, rows[i].jid, rows[i].pt, &r) != rows[i].want)
            fail_msg("acl row %zu", i);
}

static void test_md_accept_table(void **st)
{
    enum { P = PTL_MD_OP_PUT, G = PTL_MD_OP_GET, R = PTL_MD_MANAGE_REMOTE, T = PTL_MD_TRUNCATE };
    static const struct {
        unsigned opts;
        int thr;
        ptl_size_t len, loff;
        int op;
        ptl_size_t rlen, roff;
        bool ok;
        ptl_size_t off, mlen;
    } rows[] = {
        {P, 1, 100, 0, PT_W_PUT, 10, 0, true, 0, 10},
        {P, 0, 100, 0, PT_W_PUT, 10, 0, false, 0, 0},        /* inactive */
        {G, 1, 100, 0, PT_W_PUT, 10, 0, false, 0, 0},        /* no OP_PUT */
        {P, 1, 100, 0, PT_W_GET, 10, 0, false, 0, 0},        /* no OP_GET */
        {P, 1, 100, 0, PT_W_GETPUT, 10, 0, false, 0, 0},     /* getput needs both */
        {P | G, 1, 100, 0, PT_W_GETPUT, 10, 0, true, 0, 10},
        {P, 1, 100, 95, PT_W_PUT, 10, 0, false, 0, 0},       /* local offset: no room */
        {P | T, 1, 100, 95, PT_W_PUT, 10, 0, true, 95, 5},   /* truncated */
        {P | T, 1, 100, 100, PT_W_PUT, 10, 0, true, 100, 0}, /* truncated to nothing */
        {P | T, 1, 100, 101, PT_W_PUT, 10, 0, false, 0, 0},  /* offset past the end */
        {P | R, 1, 100, 50, PT_W_PUT, 10, 20, true, 20, 10}, /* remote offset wins */
        {P | R, 1, 100, 0, PT_W_PUT, 10, 95, false, 0, 0},
        {P | R | T, -1, 100, 0, PT_W_PUT, 10, 95, true, 95, 5},
        {P | R, 1, 100, 0, PT_W_PUT, 1, ~0ull, false, 0, 0},  /* overflow-proof */
        {P | R | T, 1, 100, 0, PT_W_PUT, ~0ull, 1, true, 1, 99},
        {P, 1, 0, 0, PT_W_PUT, 0, 0, true, 0, 0},            /* zero-length */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct pt_md_view v = {rows[i].opts, rows[i].thr, false, rows[i].len, rows[i].loff};
        struct pt_req r = REQ(rows[i].op, 1, 2, 0, rows[i].rlen, rows[i].roff);
        ptl_size_t off = 77, mlen = 77;
        bool ok = pt_md_accept(&v, &r, &off, &mlen);
        if (ok != rows[i].ok)
            fail_msg("accept row %zu: got %d", i, ok);
        if (ok && (off != rows[i].off || mlen != rows[i].mlen))
            fail_msg("accept row %zu: off %llu mlen %llu", i, (unsigned long long)off,
                     (unsigned long long)mlen);
    }
}

static void test_max_size(void **st)
{
    unsigned m = PTL_MD_MAX_SIZE;
    assert_false(pt_md_max_size_exhausted(0, 100, 90, 20));           /* option off */
    assert_true(pt_md_max_size_exhausted(m, 100, 90, 20));            /* 10 left < 20 */
    assert_false(pt_md_max_size_exhausted(m, 100, 80, 20));           /* 20 left */
    assert_false(pt_md_max_size_exhausted(m | PTL_MD_MANAGE_REMOTE, 100, 99, 20)); /* ignored */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_table),
        cmocka_unit_test(test_acl_table),
        cmocka_unit_test(test_md_accept_table),
        cmocka_unit_test(test_max_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
