/*
 * test_spsc.c - the SPSC slot ring: full/empty edges, and a two-thread stress
 * that stamps every element with its sequence and checks conservation
 * (enqueued = dequeued, in order, no element seen twice); slot-sequence mode
 * under a header that someone else rewrites (issue 12 item 9).
 */
#include "spsc.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_edges(void **st)
{
    struct spsc_hdr r;
    uint64_t slots[8];
    spsc_init(&r, 8, sizeof(uint64_t));
    assert_null(spsc_peek(&r, slots));
    for (int i = 0; i < 8; i++) {
        uint64_t *s = spsc_reserve(&r, slots);
        assert_non_null(s);
        *s = (uint64_t)i;
        spsc_commit(&r);
    }
    assert_null(spsc_reserve(&r, slots)); /* full */
    assert_int_equal(spsc_free(&r), 0);
    for (int i = 0; i < 8; i++) {
        uint64_t *s = spsc_peek(&r, slots);
        assert_non_null(s);
        assert_int_equal(*s, (uint64_t)i);
        spsc_release(&r);
    }
    assert_null(spsc_peek(&r, slots));
    assert_false(spsc_nonempty(&r));
}

#if defined(__SANITIZE_THREAD__)
#define N 100000u /* TSan runs ~50x slower; coverage of the orderings is what matters */
#else
#define N 2000000u
#endif
static struct spsc_hdr g_r;
static uint64_t g_slots[64];

static void *producer(void *arg)
{
    for (uint64_t i = 0; i < N;) {
        uint64_t *s = spsc_reserve(&g_r, g_slots);
        if (!s) {
            CPU_RELAX();
            continue;
        }
        *s = i++;
        spsc_commit(&g_r);
    }
    return NULL;
}

static void test_stress(void **st)
{
    spsc_init(&g_r, 64, sizeof(uint64_t));
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    uint64_t expect = 0;
    while (expect < N) {
        uint64_t *s = spsc_peek(&g_r, g_slots);
        if (!s) {
            CPU_RELAX();
            continue;
        }
        if (*s != expect)
            fail_msg("element %llu arrived as %llu", (unsigned long long)expect,
                     (unsigned long long)*s);
        expect++;
        spsc_release(&g_r);
    }
    pthread_join(t, NULL);
    assert_null(spsc_peek(&g_r, g_slots));
}

/* Slot-sequence mode, the header rewritten between calls as a peer sharing
 * the region could: the producer places slots by its private geometry only,
 * and a forged tail gives exactly the credits it implies when it lies within
 * nslots behind head, none otherwise. The consumer stays in bounds too. */
enum { FQ_N = 8, FQ_SZ = 64, FQ_GUARD = 4096 };

static uint32_t xorshift(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void assert_in_ring(const uint8_t *slots, const void *p)
{
    const uint8_t *b = p;
    if (b < slots || b >= slots + FQ_N * FQ_SZ || (size_t)(b - slots) % FQ_SZ)
        fail_msg("slot %p outside the ring [%p, %p)", p, (const void *)slots,
                 (const void *)(slots + FQ_N * FQ_SZ));
}

static void test_forged_header(void **st)
{
    uint8_t *mem = malloc(FQ_GUARD + FQ_N * FQ_SZ + FQ_GUARD);
    assert_non_null(mem);
    uint8_t *slots = mem + FQ_GUARD;
    memset(mem, 0xa5, FQ_GUARD);
    memset(slots, 0, FQ_N * FQ_SZ);
    memset(slots + FQ_N * FQ_SZ, 0xa5, FQ_GUARD);
    struct spsc_hdr r;
    spsc_init(&r, FQ_N, FQ_SZ);
    struct spsc_prod p = spsc_prod_make(&r, slots, FQ_N, FQ_SZ);
    struct spsc_view v = spsc_view_make(slots, FQ_N, FQ_SZ);
    static const int32_t near[] = {0, -1, -3, -7, -8, -9, 1, 5, INT32_MIN, INT32_MAX};
    const int nnear = (int)(sizeof near / sizeof near[0]);
    uint32_t seed = 0x9e3779b9u;
    for (int k = 0; k < 20000; k++) {
        r.mask = xorshift(&seed);
        r.slot_size = xorshift(&seed);
        r.prod_cached_tail = xorshift(&seed);
        ST_RELAXED(&r.head, xorshift(&seed));
        uint32_t t = k < nnear ? p.head + (uint32_t)near[k] : xorshift(&seed);
        if (k >= nnear && k % 2)
            t = p.head - xorshift(&seed) % (2 * FQ_N); /* near head: some credits */
        ST_RELAXED(&r.tail, t);
        uint32_t behind = p.head - t;
        uint32_t want = behind < FQ_N ? FQ_N - behind : 0; /* behind == FQ_N: full */
        uint32_t got = 0;
        for (void *s; (s = spsc_reserve_seq(&r, &p)) != NULL;) {
            assert_in_ring(slots, s);
            memset((uint8_t *)s + 4, (int)k, FQ_SZ - 4);
            spsc_commit_seq(&r, &p, 0);
            if (++got > FQ_N)
                fail_msg("tail %#x: more than %d credits", t, FQ_N);
        }
        if (got != want)
            fail_msg("tail %u behind head: %u credits, expected %u", behind, got, want);
        void *c = spsc_peek_seq(&r, &v, 0); /* the consumer under the same forged tail */
        if (c)
            assert_in_ring(slots, c);
    }
    for (int i = 0; i < FQ_GUARD; i++)
        if (mem[i] != 0xa5 || slots[FQ_N * FQ_SZ + i] != 0xa5)
            fail_msg("guard byte %d around the ring overwritten", i);
    free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_stress),
        cmocka_unit_test(test_forged_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
