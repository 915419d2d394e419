/*
 * p3utils.h - stand-in for REF's internal timeout helpers (libportals).
 *
 * REF's test programs (through tests/handshake.h) use timeout_val_t,
 * set_timeout, test_timeout and clear_timeout from REF's internal p3utils.h;
 * see shared/docs/portals33-clients.md section A. This is a small
 * reimplementation for those programs, not part of the Portals API:
 *
 *   set_timeout(&t, ms)   arm t to expire ms milliseconds from now
 *   test_timeout(&t)      non-zero once an armed t has expired
 *   clear_timeout(&t)     disarm t (test_timeout then returns 0)
 *
 * Time is CLOCK_MONOTONIC where the POSIX clocks are visible (any POSIX or
 * GNU feature macro), else C11 timespec_get, else time() (whole seconds).
 */
#ifndef P3_P3UTILS_H
#define P3_P3UTILS_H

#include <time.h>

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
#define PTL_P3UTILS_INLINE static inline
#elif defined(__GNUC__) || defined(__cplusplus)
#define PTL_P3UTILS_INLINE static __inline__
#else
#define PTL_P3UTILS_INLINE static
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A deadline; all-zero means disarmed. (Own struct: struct timespec is not
 * visible in strict C89/C99 modes.) */
typedef struct {
	time_t tv_sec;
	long tv_nsec;
} timeout_val_t;

PTL_P3UTILS_INLINE void ptl_p3utils_now(timeout_val_t *t)
{
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L && defined(CLOCK_MONOTONIC)
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t->tv_sec = ts.tv_sec;
	t->tv_nsec = ts.tv_nsec;
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && defined(TIME_UTC)
	struct timespec ts;

	timespec_get(&ts, TIME_UTC);
	t->tv_sec = ts.tv_sec;
	t->tv_nsec = ts.tv_nsec;
#else
	t->tv_sec = time(0);
	t->tv_nsec = 0;
#endif
}

PTL_P3UTILS_INLINE void clear_timeout(timeout_val_t *tmo)
{
	tmo->tv_sec = 0;
	tmo->tv_nsec = 0;
}

PTL_P3UTILS_INLINE void set_timeout(timeout_val_t *tmo, unsigned int ms)
{
	ptl_p3utils_now(tmo);
	tmo->tv_sec += (time_t)(ms / 1000);
	tmo->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (tmo->tv_nsec >= 1000000000L) {
		tmo->tv_sec += 1;
		tmo->tv_nsec -= 1000000000L;
	}
	if (tmo->tv_sec == 0 && tmo->tv_nsec == 0)
		tmo->tv_nsec = 1;   /* all-zero means "disarmed" */
}

PTL_P3UTILS_INLINE int test_timeout(timeout_val_t *tmo)
{
	timeout_val_t now;

	if (tmo->tv_sec == 0 && tmo->tv_nsec == 0)
		return 0;
	ptl_p3utils_now(&now);
	return now.tv_sec > tmo->tv_sec ||
	       (now.tv_sec == tmo->tv_sec && now.tv_nsec >= tmo->tv_nsec);
}

#ifdef __cplusplus
}
#endif

#undef PTL_P3UTILS_INLINE

#endif /* P3_P3UTILS_H */
