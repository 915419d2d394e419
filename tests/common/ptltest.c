/*
 * ptltest.c - shared helper for the cmocka conformance tests (public API only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ptltest.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t ptlt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ptlt_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint_error(fmt, ap);
	va_end(ap);
	print_error("\n");
	_fail(file, line);
}

const char *ptlt_rc_str(int rc)
{
	const char *s = PtlErrorStr((unsigned int)rc);
	return s ? s : "(null)";
}

const char *ptlt_kind_str(ptl_event_kind_t k)
{
	const char *s = PtlEventKindStr(k);
	return s ? s : "(null)";
}

void ptlt_assert_rc_at(const char *file, int line, const char *what, int rc, int expected)
{
	if (rc != expected)
		ptlt_fail_at(file, line, "%s returned %s (%d), expected %s (%d)", what,
			     ptlt_rc_str(rc), rc, ptlt_rc_str(expected), expected);
}

void ptlt_ni_init(ptlt_env_t *env, ptl_ni_limits_t *desired)
{
	int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, desired, &env->limits, &env->ni);
	assert_rc(rc, PTL_OK);
	assert_rc(PtlGetId(env->ni, &env->self), PTL_OK);
	assert_rc(PtlGetUid(env->ni, &env->uid), PTL_OK);
	assert_rc(PtlGetJid(env->ni, &env->jid), PTL_OK);
}

void ptlt_init(ptlt_env_t *env, ptl_ni_limits_t *desired)
{
	memset(env, 0, sizeof(*env));
	env->max_interfaces = -1;
	assert_rc(PtlInit(&env->max_interfaces), PTL_OK);
	if (env->max_interfaces < 1)
		ptlt_fail_at(__FILE__, __LINE__, "PtlInit set *max_interfaces = %d",
			     env->max_interfaces);
	ptlt_ni_init(env, desired);
}

void ptlt_open_acl(const ptlt_env_t *env)
{
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	assert_rc(PtlACEntry(env->ni, 0, any, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY), PTL_OK);
}

void ptlt_ni_fini(ptlt_env_t *env)
{
	assert_rc(PtlNIFini(env->ni), PTL_OK);
	env->ni = PTL_INVALID_HANDLE;
}

void ptlt_ni_release(ptlt_env_t *env)
{
	if (env->ni != PTL_INVALID_HANDLE)
		PtlNIFini(env->ni);
	env->ni = PTL_INVALID_HANDLE;
}

void ptlt_fini(ptlt_env_t *env)
{
	ptlt_ni_fini(env);
	PtlFini();
}

int ptlt_wait_event(ptl_handle_eq_t eq, ptl_event_t *ev, unsigned ms)
{
	int which = -1;
	return PtlEQPoll(&eq, 1, (ptl_time_t)ms, ev, &which);
}

static void dump_event(const ptl_event_t *ev)
{
	print_error("    event %s: initiator {%" PRIu32 ",%" PRIu32 "} uid %" PRIu32 " jid %" PRIu32
		    " pt %" PRIu32 " mbits %#" PRIx64 " rlength %" PRIu64 " mlength %" PRIu64
		    " offset %" PRIu64 " md %#" PRIx32 " md.threshold %d md.user_ptr %p"
		    " hdr %#" PRIx64 " link %" PRIu32 " ni_fail %" PRIu32 " seq %" PRIu32 "\n",
		    ptlt_kind_str(ev->type), ev->initiator.nid, ev->initiator.pid, ev->uid, ev->jid,
		    ev->pt_index, ev->match_bits, ev->rlength, ev->mlength, ev->offset,
		    ev->md_handle, ev->md.threshold, ev->md.user_ptr, ev->hdr_data, ev->link,
		    ev->ni_fail_type, (ptl_seq_t)ev->sequence);
}

static int check_field(const char *name, ptlt_opt_t want, uint64_t got)
{
	if (!want.set || want.v == got)
		return 0;
	print_error("    field %s = %" PRIu64 " (%#" PRIx64 "), expected %" PRIu64 " (%#" PRIx64 ")\n",
		    name, got, got, want.v, want.v);
	return 1;
}

ptl_event_t ptlt_expect_event_at(const char *file, int line, ptl_handle_eq_t eq,
				 const ptlt_evx_t *x)
{
	ptl_event_t ev;
	memset(&ev, 0, sizeof(ev));
	int rc = ptlt_wait_event(eq, &ev, PTLT_WAIT_MS);
	if (rc == PTL_EQ_EMPTY)
		ptlt_fail_at(file, line, "expected %s, but no event arrived within %d ms",
			     ptlt_kind_str(x->kind), PTLT_WAIT_MS);
	if (rc != PTL_OK) {
		if (rc == PTL_EQ_DROPPED)
			dump_event(&ev);
		ptlt_fail_at(file, line, "waiting for %s: PtlEQPoll returned %s",
			     ptlt_kind_str(x->kind), ptlt_rc_str(rc));
	}
	int bad = 0;
	if (ev.type != x->kind) {
		print_error("    got %s, expected %s\n", ptlt_kind_str(ev.type), ptlt_kind_str(x->kind));
		bad = 1;
	}
	bad |= check_field("rlength", x->rlength, ev.rlength);
	bad |= check_field("mlength", x->mlength, ev.mlength);
	bad |= check_field("offset", x->offset, ev.offset);
	bad |= check_field("match_bits", x->match_bits, ev.match_bits);
	bad |= check_field("hdr_data", x->hdr_data, ev.hdr_data);
	bad |= check_field("pt_index", x->pt_index, ev.pt_index);
	bad |= check_field("md_handle", x->md_handle, ev.md_handle);
	bad |= check_field("md.threshold", x->threshold, (uint64_t)(int64_t)ev.md.threshold);
	bad |= check_field("md.user_ptr", x->user_ptr, (uint64_t)(uintptr_t)ev.md.user_ptr);
	bad |= check_field("ni_fail_type", x->ni_fail_type, ev.ni_fail_type);
	if (bad) {
		dump_event(&ev);
		ptlt_fail_at(file, line, "event mismatch (expected %s)", ptlt_kind_str(x->kind));
	}
	return ev;
}

void ptlt_expect_eqs_empty_at(const char *file, int line, const ptl_handle_eq_t *eqs, int n)
{
	ptl_handle_eq_t list[16];
	int m = 0;
	for (int i = 0; i < n && m < 16; i++)
		if (eqs[i] != PTL_EQ_NONE)
			list[m++] = eqs[i];
	if (m == 0)
		return;
	ptl_event_t ev;
	int which = -1;
	int rc = PtlEQPoll(list, m, PTLT_EMPTY_MS, &ev, &which);
	if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
		dump_event(&ev);
		ptlt_fail_at(file, line, "EQ should be empty, but EQ #%d returned %s (%s)", which,
			     ptlt_kind_str(ev.type), ptlt_rc_str(rc));
	}
	if (rc != PTL_EQ_EMPTY)
		ptlt_fail_at(file, line, "PtlEQPoll on idle EQs returned %s, expected PTL_EQ_EMPTY",
			     ptlt_rc_str(rc));
	for (int i = 0; i < m; i++) {
		rc = PtlEQGet(list[i], &ev);
		if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
			dump_event(&ev);
			ptlt_fail_at(file, line, "EQ #%d should be empty, PtlEQGet returned %s", i,
				     ptlt_kind_str(ev.type));
		}
		if (rc != PTL_EQ_EMPTY)
			ptlt_fail_at(file, line, "PtlEQGet on an empty EQ returned %s", ptlt_rc_str(rc));
	}
}

void ptlt_expect_eq_empty_at(const char *file, int line, ptl_handle_eq_t eq)
{
	ptlt_expect_eqs_empty_at(file, line, &eq, 1);
}

ptl_sr_value_t ptlt_drop_count(ptl_handle_ni_t ni)
{
	ptl_sr_value_t v = 0;
	assert_rc(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v), PTL_OK);
	return v;
}

void ptlt_expect_drops_at(const char *file, int line, const ptlt_env_t *env,
			  const ptl_handle_eq_t *eqs, int n, ptl_sr_value_t base,
			  ptl_sr_value_t delta)
{
	ptl_handle_eq_t list[16];
	int m = 0;
	for (int i = 0; i < n && m < 16; i++)
		if (eqs[i] != PTL_EQ_NONE)
			list[m++] = eqs[i];
	uint64_t t0 = ptlt_now_ms();
	ptl_sr_value_t v = ptlt_drop_count(env->ni);
	while (v < base + delta && ptlt_now_ms() - t0 < PTLT_WAIT_MS) {
		if (m > 0) {
			ptl_event_t ev;
			int which = -1;
			int rc = PtlEQPoll(list, m, 1, &ev, &which);
			if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
				dump_event(&ev);
				ptlt_fail_at(file, line, "unexpected %s while waiting for drops",
					     ptlt_kind_str(ev.type));
			}
		} else {
			PtlProgress(env->ni, 1);
		}
		v = ptlt_drop_count(env->ni);
	}
	if (v != base + delta)
		ptlt_fail_at(file, line, "PTL_SR_DROP_COUNT went from %" PRIu64 " to %" PRIu64
			     " (delta %" PRId64 "), expected delta %" PRIu64,
			     base, v, (int64_t)(v - base), delta);
}

ptl_handle_md_t ptlt_bind(const ptlt_env_t *env, void *start, ptl_size_t len, int thr,
			  unsigned opts, ptl_handle_eq_t eq, ptl_unlink_t unlink)
{
	ptl_md_t md = { .start = start, .length = len, .threshold = thr, .max_size = 0,
			.options = opts, .user_ptr = start, .eq_handle = eq };
	ptl_handle_md_t h = PTL_INVALID_HANDLE;
	assert_rc(PtlMDBind(env->ni, md, unlink, &h), PTL_OK);
	return h;
}

int ptlt_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
		   CMFixtureFunction setup, CMFixtureFunction teardown)
{
	return _cmocka_run_group_tests(name, tests, n, setup, teardown);
}

struct bounded_call {
	int (*fn)(void *);
	void *arg;
	int rc;
	int done; /* accessed with __atomic builtins */
	int abandoned;
};

static void *bounded_main(void *p)
{
	struct bounded_call *b = p;
	b->rc = b->fn(b->arg);
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	/* whoever comes second frees */
	if (__atomic_exchange_n(&b->abandoned, 1, __ATOMIC_ACQ_REL))
		free(b);
	return NULL;
}

bool ptlt_call_bounded(int (*fn)(void *), void *arg, unsigned ms, int *rc)
{
	struct bounded_call *b = calloc(1, sizeof(*b));
	pthread_t th;
	if (!b)
		return false;
	b->fn = fn;
	b->arg = arg;
	if (pthread_create(&th, NULL, bounded_main, b) != 0) {
		free(b);
		*rc = fn(arg);
		return true;
	}
	uint64_t t0 = ptlt_now_ms();
	while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) && ptlt_now_ms() - t0 < ms) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
		pthread_join(th, NULL);
		*rc = b->rc;
		free(b);
		return true;
	}
	pthread_detach(th);
	if (__atomic_exchange_n(&b->abandoned, 1, __ATOMIC_ACQ_REL))
		free(b);
	return false;
}
