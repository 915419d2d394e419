/* log.c - see log.h. */
#include "log.h"
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int g_level = PT_LOG_WARN;

void pt_log_set_level(int level) { atomic_store(&g_level, level); }
int pt_log_level(void) { return atomic_load(&g_level); }

void pt_log(int level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    if (level > atomic_load(&g_level))
        return;
    char buf[2048]; /* the backstop's verdict lists what was pending */
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(buf, sizeof buf, "libportals[%d] %s: ", (int)getpid(), names[level & 3]);
    if (n < 0)
        n = 0;
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", buf);
}
