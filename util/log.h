/*
 * log.h - diagnostics to stderr. Control plane and slow paths only: nothing on
 * the NIC hot path logs (use counters). pt_log_once() reports a condition once
 * per process (e.g. the first CMA fallback and why).
 */
#ifndef PT_LOG_H
#define PT_LOG_H
#include <stdatomic.h>

enum { PT_LOG_ERR = 0, PT_LOG_WARN = 1, PT_LOG_INFO = 2, PT_LOG_DEBUG = 3 };

void pt_log_set_level(int level);
int pt_log_level(void);
void pt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3), cold));

#define pt_log_once(level, ...)                                   \
    do {                                                          \
        static atomic_flag once_ = ATOMIC_FLAG_INIT;              \
        if (!atomic_flag_test_and_set(&once_))                    \
            pt_log(level, __VA_ARGS__);                           \
    } while (0)

#endif
