/*
 * test_spsc.c - the SPSC slot ring: full/empty edges, and a two-thread stress
 * that stamps every element with its sequence and checks conservation
 * (enqueued = dequeued, in order, no element seen twice).
 */
#include "spsc.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
