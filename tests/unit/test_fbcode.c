/*
 * test_fbcode.c - the fast boxes' header code (transport/shm_fbcode.h): the
 * SSE2 difference mask equals the word-by-word definition on a table of edge
 * cases (each word alone, words 0 and 31 never, halves of a 64-bit pair,
 * unaligned buffers) and on random headers with few and many changed words;
 * the population count against a bit loop.
 */
#include "shm_fbcode.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static uint32_t naive_pop(uint32_t v)
{
    uint32_t n = 0;
    for (; v; v >>= 1)
        n += v & 1;
    return n;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Both functions over w and b; the mask also checked against want. */
static void both(const unsigned char *w, const unsigned char *b, uint32_t want)
{
    assert_int_equal(pt_fb_diff_c(w, b), want);
    assert_int_equal(pt_fb_diff(w, b), want);
}

static void test_table(void **st)
{
    (void)st;
    /* +1: the wire buffers are 8-aligned, the bases 64-aligned; the code
     * must not depend on either. */
    unsigned char wbuf[129], bbuf[129];
    for (int off = 0; off < 2; off++) {
        unsigned char *w = wbuf + off, *b = bbuf + off;
        memset(w, 0x5a, 128);
        memset(b, 0x5a, 128);
        both(w, b, 0); /* equal */
        for (uint32_t j = 0; j < 32; j++) {
            for (uint32_t byte = 0; byte < 4; byte++) { /* any byte of word j */
                memcpy(w, b, 128);
                w[4 * j + byte] ^= 0x80;
                both(w, b, (j == 0 || j == 31) ? 0 : 1u << j);
            }
        }
        /* both halves of a 64-bit pair, and only the high half */
        memcpy(w, b, 128);
        w[8] ^= 1, w[12] ^= 1;
        both(w, b, (1u << 2) | (1u << 3));
        /* everything differs */
        memset(w, 0xa5, 128);
        both(w, b, PT_FB_WORD_MASK);
        /* a zero base (a lane's reset) against a header with zero words */
        memset(b, 0, 128);
        memset(w, 0, 128);
        w[4 * 7] = 1;
        w[4 * 30 + 3] = 0xff;
        both(w, b, (1u << 7) | (1u << 30));
    }
}

static void test_random(void **st)
{
    (void)st;
    uint32_t w[32], b[32];
    for (int it = 0; it < 200000; it++) {
        uint32_t want = 0;
        uint32_t k = rnd() % 33; /* how many words change, 0 .. 32 */
        for (uint32_t j = 0; j < 32; j++) {
            b[j] = rnd();
            w[j] = b[j];
        }
        for (uint32_t i = 0; i < k; i++) {
            uint32_t j = rnd() % 32;
            w[j] ^= 1u << (rnd() % 32);
        }
        for (uint32_t j = 1; j < 31; j++)
            want |= (uint32_t)(w[j] != b[j]) << j;
        both((const unsigned char *)w, (const unsigned char *)b, want);
        assert_int_equal(pt_fb_pop(want), naive_pop(want));
    }
}

static void test_pop(void **st)
{
    (void)st;
    static const uint32_t t[] = {0, 1, 0x80000000u, 0xffffffffu, PT_FB_WORD_MASK, 0x55555555u,
                                 0xaaaaaaaau, 0x0f0f0f0fu, 0x12345678u};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        assert_int_equal(pt_fb_pop(t[i]), naive_pop(t[i]));
    for (int i = 0; i < 100000; i++) {
        uint32_t v = rnd();
        assert_int_equal(pt_fb_pop(v), naive_pop(v));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_pop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
