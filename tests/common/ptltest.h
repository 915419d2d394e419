/*
 * ptltest.h - tiny shared helper for the cmocka conformance tests.
 *
 * Everything here uses only the public Portals 3.3 API (<portals3.h>).
 * Every wait is bounded: a missing event fails the test after
 * PTLT_WAIT_MS instead of hanging, and "EQ empty" first gives the engine
 * PTLT_EMPTY_MS to deliver anything unexpected.
 */
#ifndef PTLTEST_H
#define PTLTEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>

#include <portals3.h>

#define PTLT_WAIT_MS 2000 /* longest wait for an expected event */
#define PTLT_EMPTY_MS 20  /* grace period before declaring an EQ empty */

/* One open interface of the test process. */
typedef struct ptlt_env {
	ptl_handle_ni_t ni;
	ptl_process_id_t self;
	ptl_uid_t uid;
	ptl_jid_t jid;
	ptl_ni_limits_t limits; /* actual limits from PtlNIInit */
	int max_interfaces;
} ptlt_env_t;

/*
 * PtlInit, PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, desired, &actual, &ni),
 * PtlGetId/Uid/Jid. desired may be NULL. Fails the test on any error.
 */
void ptlt_init(ptlt_env_t *env, ptl_ni_limits_t *desired);
/* Only the NI part (PtlInit already done). */
void ptlt_ni_init(ptlt_env_t *env, ptl_ni_limits_t *desired);
/* PtlACEntry(ni, 0, {NID_ANY, PID_ANY}, UID_ANY, JID_ANY, PT_INDEX_ANY). */
void ptlt_open_acl(const ptlt_env_t *env);
/* PtlNIFini only / PtlNIFini + PtlFini. */
void ptlt_ni_fini(ptlt_env_t *env);
/* Teardown after a test that may have left the NI open or never opened it:
 * PtlNIFini if open (result ignored), then the handle is invalid. */
void ptlt_ni_release(ptlt_env_t *env);
void ptlt_fini(ptlt_env_t *env);

/* Printable names (never NULL). */
const char *ptlt_rc_str(int rc);
const char *ptlt_kind_str(ptl_event_kind_t k);

/* assert_rc(call, expected): prints both codes by name on failure. */
#define assert_rc(expr, expected) \
	ptlt_assert_rc_at(__FILE__, __LINE__, #expr, (int)(expr), (int)(expected))
void ptlt_assert_rc_at(const char *file, int line, const char *what, int rc, int expected);

/* A field to check, or not: .mlength = PTLT_V(16). Unset fields are skipped. */
typedef struct {
	bool set;
	uint64_t v;
} ptlt_opt_t;
#define PTLT_V(x) ((ptlt_opt_t){ true, (uint64_t)(int64_t)(x) })

/* Expected event: kind plus any subset of the fields. */
typedef struct ptlt_evx {
	ptl_event_kind_t kind;
	ptlt_opt_t rlength, mlength, offset;
	ptlt_opt_t match_bits, hdr_data, pt_index;
	ptlt_opt_t md_handle;
	ptlt_opt_t threshold; /* ev.md.threshold, the MD snapshot after decrement */
	ptlt_opt_t user_ptr;  /* ev.md.user_ptr, as uintptr_t */
	ptlt_opt_t ni_fail_type;
} ptlt_evx_t;

/*
 * expect_event(eq, kind, .field = PTLT_V(x), ...): waits (bounded) for the
 * next event on eq (PtlEQPoll(&eq, 1, PTLT_WAIT_MS, ...)), checks its kind
 * and the given fields, returns the event. PTL_EQ_DROPPED fails the test.
 */
#define expect_event(eq, k, ...) \
	ptlt_expect_event_at(__FILE__, __LINE__, (eq), &(const ptlt_evx_t){ .kind = (k), __VA_ARGS__ })
ptl_event_t ptlt_expect_event_at(const char *file, int line, ptl_handle_eq_t eq,
				 const ptlt_evx_t *x);

/* Bounded wait for the next event; returns the PtlEQPoll code (OK/DROPPED/EMPTY...). */
int ptlt_wait_event(ptl_handle_eq_t eq, ptl_event_t *ev, unsigned ms);

/*
 * expect_eq_empty(eq): PtlEQPoll with a PTLT_EMPTY_MS timeout must time out
 * (PTL_EQ_EMPTY) and then PtlEQGet must return PTL_EQ_EMPTY. The _n variant
 * polls several EQs at once (one grace period for all of them); entries equal
 * to PTL_EQ_NONE are skipped.
 */
#define expect_eq_empty(eq) ptlt_expect_eq_empty_at(__FILE__, __LINE__, (eq))
#define expect_eqs_empty(eqs, n) ptlt_expect_eqs_empty_at(__FILE__, __LINE__, (eqs), (n))
void ptlt_expect_eq_empty_at(const char *file, int line, ptl_handle_eq_t eq);
void ptlt_expect_eqs_empty_at(const char *file, int line, const ptl_handle_eq_t *eqs, int n);

/* PTL_SR_DROP_COUNT of the NI (fails the test if PtlNIStatus fails). */
ptl_sr_value_t ptlt_drop_count(ptl_handle_ni_t ni);

/*
 * Wait (bounded, while polling eqs so host-matching mode progresses) until
 * PTL_SR_DROP_COUNT reaches base + delta, then require it to be exactly that.
 * Any event arriving on eqs meanwhile fails the test.
 */
#define expect_drops(env, eqs, n, base, delta) \
	ptlt_expect_drops_at(__FILE__, __LINE__, (env), (eqs), (n), (base), (delta))
void ptlt_expect_drops_at(const char *file, int line, const ptlt_env_t *env,
			  const ptl_handle_eq_t *eqs, int n, ptl_sr_value_t base,
			  ptl_sr_value_t delta);

/* Monotonic milliseconds. */
uint64_t ptlt_now_ms(void);

/* Formatted failure at a given location (print + cmocka _fail). */
void ptlt_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Bind a plain MD (no iovec) on env->ni. Fails the test on error. */
ptl_handle_md_t ptlt_bind(const ptlt_env_t *env, void *start, ptl_size_t len, int thr,
			  unsigned opts, ptl_handle_eq_t eq, ptl_unlink_t unlink);

/*
 * Run fn(arg) in a helper thread and wait up to ms for it to return (for calls
 * that must not block, such as PtlEQWait on a bad handle). Returns true and
 * stores fn's result in *rc if it returned in time; false if it is still
 * blocked (the thread is then left behind, detached).
 */
bool ptlt_call_bounded(int (*fn)(void *), void *arg, unsigned ms, int *rc);

/* Run a group of tests built at run time (name, count); returns failures. */
int ptlt_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
		   CMFixtureFunction setup, CMFixtureFunction teardown);

#endif /* PTLTEST_H */
