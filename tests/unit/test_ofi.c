/*
 * test_ofi.c - the ofi transport's pure rules (transport/ofi.h) on a table:
 * which providers' fi_trywait answers "safe to sleep" without looking at the
 * completion queue (pt_ofi_trywait_blind), so that the CQ sleeps on a wait
 * set that rx_pending resets before it peeks.
 * libfabric's xnet core did until 1.19; it is `net` in 1.17 (Debian 12) and
 * `tcp` in 1.18, alone or under ofi_rxm.
 */
#include "ofi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define V(maj, min) (((uint32_t)(maj) << 16) | (uint32_t)(min))

struct row {
    const char *prov;
    uint32_t version;
    bool blind;
};

static const struct row rows[] = {
    {"net", V(117, 0), true},           /* Debian 12's libfabric 1.17 */
    {"net;ofi_rxm", V(117, 0), true},   /* rxm asks the message endpoints' trywait */
    {"net", V(118, 0), true},
    {"net", V(119, 0), false},          /* trywait looks at the CQ from 1.19 on */
    {"net", V(120, 10), false},
    {"net", 0, true},                   /* no version given: peek anyway */
    {"tcp;ofi_rxm", V(117, 0), false},  /* 1.17's tcp is tcpx: its trywait is sound */
    {"tcp", V(117, 0), false},
    {"tcp;ofi_rxm", V(118, 0), true},   /* 1.18: tcp is the xnet core */
    {"tcp", V(118, 10), true},
    {"tcp", V(119, 0), false},
    {"tcp;ofi_rxm", V(121, 0), false},
    {"tcpx", V(118, 0), false},         /* only the names themselves */
    {"ne", V(117, 0), false},
    {"verbs;ofi_rxm", V(117, 0), false},
    {"psm2", V(117, 0), false},
    {"shm", V(118, 0), false},
    {"", V(118, 0), false},
    {NULL, V(118, 0), false},
};

static void test_trywait_blind(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        bool got = pt_ofi_trywait_blind(rows[i].prov, rows[i].version);
        if (got != rows[i].blind)
            fail_msg("row %zu: %s %u.%u: got %d, want %d", i,
                     rows[i].prov ? rows[i].prov : "(null)", rows[i].version >> 16,
                     rows[i].version & 0xffff, got, rows[i].blind);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_trywait_blind)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
