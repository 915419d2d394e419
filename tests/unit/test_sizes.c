/*
 * test_sizes.c - every size around the protocol switches, through the whole
 * engine path (put/get to self), byte for byte, with local and remote
 * offsets and truncation. Run under each PTL_RNDV_MODE (CTest sets it):
 * eager, CMA-pull rendezvous (memcpy in a job of one) and copy-through-queues.
 */
#include <portals3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static ptl_handle_ni_t ni;
static ptl_process_id_t self;
static ptl_handle_eq_t eq;

static int setup(void **st)
{
    int n;
    assert_int_equal(PtlInit(&n), PTL_OK);
    assert_int_equal(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni), PTL_OK);
    assert_int_equal(PtlGetId(ni, &self), PTL_OK);
    assert_int_equal(PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &eq), PTL_OK);
    return 0;
}

static int teardown(void **st)
{
    PtlNIFini(ni);
    PtlFini();
    return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 131u + seed * 7u) >> 3);
}

/* Put `len` bytes from src+loff into a target MD of tlen bytes at roff. */
static void one_put(size_t len, size_t loff, size_t roff, size_t tlen, unsigned opts)
{
    size_t slen = loff + len;
    unsigned char *src = malloc(slen + 1), *dst = malloc(tlen + 1), *ref = malloc(tlen + 1);
    fill(src, slen, (unsigned)len);
    memset(dst, 0xee, tlen + 1);
    memcpy(ref, dst, tlen + 1);
    size_t avail = roff <= tlen ? tlen - roff : 0;
    size_t mlen = len < avail ? len : avail;
    memcpy(ref + roff, src + loff, mlen);

    ptl_handle_me_t me;
    ptl_handle_md_t tmd, imd;
    assert_int_equal(PtlMEAttach(ni, 3, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 42, 0,
                                 PTL_UNLINK, PTL_INS_AFTER, &me), PTL_OK);
    ptl_md_t t = {dst, tlen, 1, 0, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | opts, NULL, eq};
    assert_int_equal(PtlMDAttach(me, t, PTL_UNLINK, &tmd), PTL_OK);
    ptl_md_t i = {src, slen, 2, 0, 0, NULL, eq};
    assert_int_equal(PtlMDBind(ni, i, PTL_UNLINK, &imd), PTL_OK);
    assert_int_equal(PtlPutRegion(imd, loff, len, PTL_ACK_REQ, self, 3, 0, 42, roff, 7), PTL_OK);

    /* Per-EQ order is not fixed between initiator and target streams here:
     * collect the 7 events (SEND_START/END, PUT_START/END, ACK, 2x UNLINK). */
    int seen[16] = {0};
    ptl_event_t put_end = {0}, ack = {0};
    for (int k = 0; k < 7; k++) {
        ptl_event_t ev;
        int which, rc = PtlEQPoll(&eq, 1, 10000, &ev, &which);
        if (rc != PTL_OK)
            fail_msg("len %zu: event %d: %s", len, k, PtlErrorStr(rc));
        seen[ev.type]++;
        if (ev.type == PTL_EVENT_PUT_END)
            put_end = ev;
        if (ev.type == PTL_EVENT_ACK)
            ack = ev;
        assert_int_equal(ev.ni_fail_type, PTL_NI_OK);
    }
    assert_int_equal(seen[PTL_EVENT_SEND_START], 1);
    assert_int_equal(seen[PTL_EVENT_SEND_END], 1);
    assert_int_equal(seen[PTL_EVENT_PUT_START], 1);
    assert_int_equal(seen[PTL_EVENT_PUT_END], 1);
    assert_int_equal(seen[PTL_EVENT_ACK], 1);
    assert_int_equal(seen[PTL_EVENT_UNLINK], 2);
    assert_int_equal(put_end.mlength, mlen);
    assert_int_equal(put_end.rlength, len);
    assert_int_equal(put_end.offset, roff);
    assert_int_equal(ack.mlength, mlen);
    if (memcmp(dst, ref, tlen + 1) != 0) {
        size_t k = 0;
        while (dst[k] == ref[k])
            k++;
        fail_msg("len %zu loff %zu roff %zu: data differs at byte %zu", len, loff, roff, k);
    }
    ptl_event_t ev;
    int rc = PtlEQGet(eq, &ev);
    if (rc != PTL_EQ_EMPTY)
        fail_msg("len %zu: unexpected extra event %s", len, PtlEventKindStr(ev.type));
    free(src);
    free(dst);
    free(ref);
}

static void one_get(size_t len, size_t loff, size_t roff)
{
    size_t tlen = roff + len;
    unsigned char *tgt = malloc(tlen + 1), *buf = malloc(loff + len + 1);
    fill(tgt, tlen + 1, (unsigned)len + 1);
    memset(buf, 0x11, loff + len + 1);
    ptl_handle_me_t me;
    ptl_handle_md_t tmd, imd;
    assert_int_equal(PtlMEAttach(ni, 5, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, 9, 0,
                                 PTL_UNLINK, PTL_INS_AFTER, &me), PTL_OK);
    ptl_md_t t = {tgt, tlen, 1, 0, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, NULL, eq};
    assert_int_equal(PtlMDAttach(me, t, PTL_UNLINK, &tmd), PTL_OK);
    ptl_md_t i = {buf, loff + len, 1, 0, 0, NULL, eq};
    assert_int_equal(PtlMDBind(ni, i, PTL_UNLINK, &imd), PTL_OK);
    assert_int_equal(PtlGetRegion(imd, loff, len, self, 5, 0, 9, roff), PTL_OK);
    int seen[16] = {0};
    ptl_event_t rend = {0};
    for (int k = 0; k < 6; k++) {
        ptl_event_t ev;
        int which, rc = PtlEQPoll(&eq, 1, 10000, &ev, &which);
        if (rc != PTL_OK)
            fail_msg("get len %zu: event %d: %s", len, k, PtlErrorStr(rc));
        seen[ev.type]++;
        if (ev.type == PTL_EVENT_REPLY_END)
            rend = ev;
    }
    assert_int_equal(seen[PTL_EVENT_GET_START], 1);
    assert_int_equal(seen[PTL_EVENT_GET_END], 1);
    assert_int_equal(seen[PTL_EVENT_REPLY_START], 1);
    assert_int_equal(seen[PTL_EVENT_REPLY_END], 1);
    assert_int_equal(seen[PTL_EVENT_UNLINK], 2);
    assert_int_equal(rend.mlength, len);
    assert_int_equal(rend.offset, loff);
    assert_memory_equal(buf + loff, tgt + roff, len);
    for (size_t k = 0; k < loff; k++)
        assert_int_equal(buf[k], 0x11);
    assert_int_equal(buf[loff + len], 0x11);
    free(tgt);
    free(buf);
}

static const size_t g_sizes[] = {0, 1, 63, 64, 1023, 1024, 1025, 4031, 4032, 4033, 8191,
                                 8192, 65535, 65536, 65537, 131072, 1 << 20, (1 << 20) + 3};

static void test_put_sizes(void **st)
{
    for (size_t i = 0; i < sizeof g_sizes / sizeof g_sizes[0]; i++) {
        one_put(g_sizes[i], 0, 0, g_sizes[i], 0);
        one_put(g_sizes[i], 5, 17, g_sizes[i] + 17, 0);
    }
}

static void test_put_truncate(void **st)
{
    for (size_t i = 0; i < sizeof g_sizes / sizeof g_sizes[0]; i++)
        if (g_sizes[i] > 8)
            one_put(g_sizes[i], 3, 8, g_sizes[i] / 2 + 8, PTL_MD_TRUNCATE);
}

static void test_get_sizes(void **st)
{
    for (size_t i = 0; i < sizeof g_sizes / sizeof g_sizes[0]; i++) {
        one_get(g_sizes[i], 0, 0);
        one_get(g_sizes[i], 11, 29);
    }
}

static void test_put_64mib(void **st)
{
    one_put((size_t)64 << 20, 0, 0, (size_t)64 << 20, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_sizes),
        cmocka_unit_test(test_put_truncate),
        cmocka_unit_test(test_get_sizes),
        cmocka_unit_test(test_put_64mib),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
