/*
 * test_config.c - the tunables' parser (util/config.c) on a table of values
 * for the variables that also take names (PTL_TRANSPORT, PTL_RNDV_MODE):
 * names in any case and with blanks around them, numbers, and values that are
 * refused (the default is kept, and the table says the environment's value
 * was refused). "OFI" used to run the job on shared memory. And numbers
 * (test_numbers): decimal, hex after 0x, blanks around them.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static const char *source_of(const char *var)
{
    const struct pt_tunable *t;
    int n = pt_tunables(&t);
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, var))
            return t[i].source;
    return NULL;
}

struct row {
    const char *var, *value;
    int64_t want;
    int from_env; /* 1: taken; 0: refused, the default kept */
};

static const struct row rows[] = {
    {"PTL_TRANSPORT", "ofi", 1, 1},       {"PTL_TRANSPORT", "OFI", 1, 1},
    {"PTL_TRANSPORT", "Ofi", 1, 1},       {"PTL_TRANSPORT", " ofi ", 1, 1},
    {"PTL_TRANSPORT", "shm", 0, 1},       {"PTL_TRANSPORT", "SHM", 0, 1},
    {"PTL_TRANSPORT", "auto", 2, 1},      {"PTL_TRANSPORT", "1", 1, 1},
    {"PTL_TRANSPORT", "0", 0, 1},         {"PTL_TRANSPORT", "of", 2, 0},
    {"PTL_TRANSPORT", "ofi2", 2, 0},      {"PTL_TRANSPORT", "copy", 2, 0},
    {"PTL_TRANSPORT", "7", 2, 0},         {"PTL_TRANSPORT", "", 2, 0},
    {"PTL_RNDV_MODE", "copy", 2, 1},      {"PTL_RNDV_MODE", "CMA", 1, 1},
    {"PTL_RNDV_MODE", "\tAuto", 0, 1},    {"PTL_RNDV_MODE", "ofi", 0, 0},
};

/* Each row's value set, the table reloaded: the value got and where it came from. */
static void check_rows(const struct row *t, size_t n, int64_t (*got_of)(const char *var))
{
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &t[i];
        setenv(r->var, r->value, 1);
        pt_config_reload();
        int64_t got = got_of(r->var);
        if (got != r->want)
            fail_msg("%s=\"%s\": %lld, expected %lld", r->var, r->value, (long long)got,
                     (long long)r->want);
        const char *src = source_of(r->var);
        assert_non_null(src);
        if (r->from_env != !strcmp(src, "env"))
            fail_msg("%s=\"%s\": source \"%s\"", r->var, r->value, src);
        unsetenv(r->var);
    }
}

static int64_t named_of(const char *var)
{
    const struct pt_config *c = pt_config();
    return !strcmp(var, "PTL_TRANSPORT") ? c->transport : c->rndv_mode;
}

static void test_named_values(void **state)
{
    (void)state;
    check_rows(rows, sizeof rows / sizeof rows[0], named_of);
}

/* Numbers as a user means them (an adversarial client: "010" was octal 8, and
 * PTL_PEER_TIMEOUT_MS=0100 silently 64 ms): decimal with leading zeros, hex after
 * 0x, blanks around ignored; the rest refused, the default (2000) kept. */
static const struct row nums[] = {
    {"PTL_PEER_TIMEOUT_MS", "0100", 100, 1},  {"PTL_PEER_TIMEOUT_MS", "010", 10, 1},
    {"PTL_PEER_TIMEOUT_MS", " 250 ", 250, 1}, {"PTL_PEER_TIMEOUT_MS", "250\t", 250, 1},
    {"PTL_PEER_TIMEOUT_MS", "+300", 300, 1},  {"PTL_PEER_TIMEOUT_MS", "0x100", 256, 1},
    {"PTL_PEER_TIMEOUT_MS", "0X10", 16, 1},   {"PTL_PEER_TIMEOUT_MS", "1e3", 2000, 0},
    {"PTL_PEER_TIMEOUT_MS", "abc", 2000, 0},  {"PTL_PEER_TIMEOUT_MS", "12 3", 2000, 0},
    {"PTL_PEER_TIMEOUT_MS", "-", 2000, 0},    {"PTL_PEER_TIMEOUT_MS", "0x", 2000, 0},
    {"PTL_PEER_TIMEOUT_MS", "-50", 2000, 0},  {"PTL_PEER_TIMEOUT_MS", " ", 2000, 0},
    {"PTL_PEER_TIMEOUT_MS", "99999999999999999999", 2000, 0},
    {"PTL_PEER_TIMEOUT_MS", "3600000", 3600000, 1},
    {"PTL_PEER_TIMEOUT_MS", "3600001", 2000, 0},
};

static int64_t timeout_of(const char *var)
{
    (void)var;
    return pt_config()->ni_fail_grace_ms;
}

static void test_numbers(void **state)
{
    (void)state;
    check_rows(nums, sizeof nums / sizeof nums[0], timeout_of);
}

int main(void)
{
    setenv("PTL_LOG_LEVEL", "0", 1); /* the refusals' warnings are expected */
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_named_values),
                                       cmocka_unit_test(test_numbers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
