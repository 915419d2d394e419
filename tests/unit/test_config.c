/*
 * test_config.c - the tunables' parser (util/config.c) on a table of values
 * for the variables that also take names (PTL_TRANSPORT, PTL_RNDV_MODE):
 * names in any case and with blanks around them, numbers, and values that are
 * refused (the default is kept, and the table says the environment's value
 * was refused). "OFI" used to run the job on shared memory.
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

static void test_named_values(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        setenv(r->var, r->value, 1);
        pt_config_reload();
        const struct pt_config *c = pt_config();
        int64_t got = !strcmp(r->var, "PTL_TRANSPORT") ? c->transport : c->rndv_mode;
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

int main(void)
{
    setenv("PTL_LOG_LEVEL", "0", 1); /* the refusals' warnings are expected */
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_named_values)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
