/*
 * test_handle_reuse.c - a freed handle stays invalid however often its object
 * type is created and freed again (issue 12 item 4; docs/architecture.md,
 * "Handles": at least 2^26 creations of the type on the NI).
 *
 * Each test keeps the first handle of an MD, ME, EQ or CT, frees the object, then
 * creates and frees objects of the same type many times on an NI whose limit
 * leaves room for one of them at a time, well past the 1,021 cycles after
 * which 10-bit generations with LIFO reuse revived the handle. After every
 * creation each call with the stale handle must return the type's *_INVALID
 * code and leave the live object alone: PtlMDUnlink does not destroy it,
 * PtlPut does not send from it, PtlEQGet does not take its events.
 */
#include "bfx.h"

#include <portals3_ext.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#define CYCLES 5000 /* every stale call after every creation */

/* Handle comparison after every creation, stale calls every 4096: 2^20 by
 * default; PTLT_REUSE_CYCLES=67108864 checks the documented bound (2^26,
 * about 8 s per mode in a Release build). */
static unsigned long long_cycles(void)
{
	const char *v = getenv("PTLT_REUSE_CYCLES");
	unsigned long n = v ? strtoul(v, NULL, 0) : 0;
	return n ? n : 1ul << 20;
}

static const ptl_process_id_t ANYID = { PTL_NID_ANY, PTL_PID_ANY };
static ptlt_env_t env;

/* Every stale call is made; what went wrong is collected and reported at the
 * end of the cycle (fails the test), so one run shows every effect. */
static char errs[1024];
static size_t nerr;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (nerr < sizeof(errs))
		nerr += (size_t)vsnprintf(errs + nerr, sizeof(errs) - nerr, fmt, ap);
	va_end(ap);
}

static void start(int max_mes, int max_mds, int max_eqs)
{
	ptl_ni_limits_t d = { INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX };
	d.max_mes = max_mes;
	d.max_mds = max_mds;
	d.max_eqs = max_eqs;
	ptlt_ni_init(&env, &d);
	ptlt_open_acl(&env);
	if (env.limits.max_mes != max_mes || env.limits.max_mds != max_mds || env.limits.max_eqs != max_eqs)
		fail_msg("limits not lowered: mes %d mds %d eqs %d", env.limits.max_mes, env.limits.max_mds,
			 env.limits.max_eqs);
}

static int ni_setup(void **state)
{
	(void)state;
	env.ni = PTL_INVALID_HANDLE;
	nerr = 0;
	errs[0] = 0;
	return 0;
}

static int ni_teardown(void **state)
{
	(void)state;
	ptlt_ni_release(&env);
	return 0;
}

#define expect_stale(call, want)                                                                     \
	do {                                                                                         \
		int rc_ = (call);                                                                    \
		if (rc_ != (want))                                                                   \
			note("\n  %s returned %s, expected %s", #call, ptlt_rc_str(rc_),              \
			     ptlt_rc_str(want));                                                     \
	} while (0)

static void report(const char *what, unsigned long cycle)
{
	if (nerr)
		fail_msg("after %lu %s create/free cycles:%s", cycle, what, errs);
}

/* ---- MD ---------------------------------------------------------------------- */

static void md_stale_stays_invalid(void **state)
{
	(void)state;
	uint8_t buf[8] = { 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a }, dst[8] = { 0 };
	ptl_handle_eq_t teq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	start(1, 2, 1); /* one MD for the target, one slot that must be reused */
	/* a put from the stale handle that got through would land here */
	assert_rc(PtlEQAlloc(env.ni, 8, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	assert_rc(PtlMDAttach(me, bfx_md(dst, sizeof(dst), PTL_MD_OP_PUT, teq), PTL_RETAIN, &tmd), PTL_OK);

	ptl_handle_md_t stale = ptlt_bind(&env, buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE, PTL_RETAIN);
	assert_rc(PtlMDUnlink(stale), PTL_OK);
	for (unsigned i = 1; i <= CYCLES; i++) {
		ptl_handle_md_t live = ptlt_bind(&env, buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE, PTL_RETAIN);
		ptl_md_t old;
		ptl_event_t ev;
		expect_stale(PtlMDUpdate(stale, &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
		expect_stale(PtlPut(stale, PTL_NO_ACK_REQ, env.self, BFX_PT, 0, 0, 0, 0), PTL_MD_INVALID);
		if (nerr && ptlt_wait_event(teq, &ev, PTLT_WAIT_MS) == PTL_OK)
			note("\n  the target got %s of %u bytes from the live MD (dst[0] = %#x)",
			     ptlt_kind_str(ev.type), (unsigned)ev.rlength, dst[0]);
		expect_stale(PtlMDUnlink(stale), PTL_MD_INVALID);
		int rc = PtlMDUpdate(live, &old, NULL, PTL_EQ_NONE);
		if (rc != PTL_OK)
			note("\n  the live MD behind it is gone: PtlMDUpdate(live) returned %s", ptlt_rc_str(rc));
		if (live == stale)
			note("\n  a new MD got the freed handle %#x", (unsigned)stale);
		report("MD", i);
		assert_rc(PtlMDUnlink(live), PTL_OK);
	}
	expect_eq_empty(teq);
	ptlt_ni_fini(&env);
}

static void md_stale_stays_invalid_long(void **state)
{
	(void)state;
	uint8_t buf[8] = { 0 };
	unsigned long n = long_cycles();
	start(1, 1, 1);
	ptl_handle_md_t stale = ptlt_bind(&env, buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE, PTL_RETAIN);
	assert_rc(PtlMDUnlink(stale), PTL_OK);
	for (unsigned long i = 1; i <= n; i++) {
		ptl_handle_md_t live = ptlt_bind(&env, buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE, PTL_RETAIN);
		if (live == stale)
			note("\n  a new MD got the freed handle %#x", (unsigned)stale);
		if (i % 4096 == 0 || nerr) {
			ptl_md_t old;
			expect_stale(PtlMDUpdate(stale, &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
			expect_stale(PtlMDUnlink(stale), PTL_MD_INVALID);
		}
		report("MD", i);
		assert_rc(PtlMDUnlink(live), PTL_OK);
	}
	ptl_sr_value_t made = 0;
	assert_rc(PtlNIStatus(env.ni, PTL_SR_MDS_ALLOC, &made), PTL_OK);
	if (made < n + 1)
		fail_msg("only %lu of %lu MDs were created", (unsigned long)made, n + 1);
	ptlt_ni_fini(&env);
}

/* ---- ME ---------------------------------------------------------------------- */

static void me_stale_stays_invalid(void **state)
{
	(void)state;
	uint8_t buf[8];
	ptl_handle_md_t md;
	start(1, 1, 1); /* one ME: every creation reuses its slot */
	ptl_handle_me_t stale;
	assert_rc(PtlMEAttach(env.ni, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &stale), PTL_OK);
	assert_rc(PtlMEUnlink(stale), PTL_OK);
	for (unsigned i = 1; i <= CYCLES; i++) {
		ptl_handle_me_t live, x;
		assert_rc(PtlMEAttach(env.ni, BFX_PT, ANYID, i, 0, PTL_RETAIN, PTL_INS_AFTER, &live), PTL_OK);
		/* the ME limit is 1: an insert next to a revived ME fails NO_SPACE */
		expect_stale(PtlMEInsert(stale, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_ME_INVALID);
		expect_stale(PtlMDAttach(stale, bfx_md(buf, sizeof(buf), PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &md),
			     PTL_ME_INVALID);
		expect_stale(PtlMEUnlink(stale), PTL_ME_INVALID);
		if (live == stale)
			note("\n  a new ME got the freed handle %#x", (unsigned)stale);
		/* the live ME is still linked and still has no MD */
		int rc = PtlMDAttach(live, bfx_md(buf, sizeof(buf), PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &md);
		if (rc != PTL_OK)
			note("\n  the live ME behind it changed: PtlMDAttach(live) returned %s", ptlt_rc_str(rc));
		report("ME", i);
		assert_rc(PtlMEUnlink(live), PTL_OK);
		assert_rc(PtlMDUnlink(md), PTL_MD_INVALID); /* went with the ME */
	}
	ptlt_ni_fini(&env);
}

/* ---- EQ ---------------------------------------------------------------------- */

static void eq_stale_stays_invalid(void **state)
{
	(void)state;
	uint8_t src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dst[8];
	ptl_handle_eq_t ieq;
	ptl_handle_me_t me;
	ptl_handle_md_t imd;
	start(1, 2, 2); /* the initiator's EQ and one slot that must be reused */
	assert_rc(PtlEQAlloc(env.ni, 8, PTL_EQ_HANDLER_NONE, &ieq), PTL_OK);
	imd = ptlt_bind(&env, src, sizeof(src), PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, ieq, PTL_RETAIN);
	assert_rc(PtlMEAttach(env.ni, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);

	ptl_handle_eq_t stale;
	assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &stale), PTL_OK);
	assert_rc(PtlEQFree(stale), PTL_OK);
	for (unsigned i = 1; i <= CYCLES; i++) {
		ptl_handle_eq_t live;
		ptl_handle_md_t tmd;
		ptl_event_t ev;
		int which;
		assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &live), PTL_OK);
		/* the live EQ gets PUT_START and PUT_END; the ACK is sent after both */
		assert_rc(PtlMDAttach(me, bfx_md(dst, sizeof(dst), PTL_MD_OP_PUT, live), PTL_RETAIN, &tmd), PTL_OK);
		assert_rc(PtlPut(imd, PTL_ACK_REQ, env.self, BFX_PT, 0, 0, 0, i), PTL_OK);
		expect_event(ieq, PTL_EVENT_SEND_END);
		expect_event(ieq, PTL_EVENT_ACK);
		int rc = PtlEQGet(stale, &ev);
		if (rc != PTL_EQ_INVALID)
			note("\n  PtlEQGet(stale) returned %s%s%s, expected PTL_EQ_INVALID", ptlt_rc_str(rc),
			     rc == PTL_OK ? " and took the live EQ's " : "", rc == PTL_OK ? ptlt_kind_str(ev.type) : "");
		expect_stale(PtlEQPoll(&stale, 1, 0, &ev, &which), PTL_EQ_INVALID);
		expect_stale(PtlEQFree(stale), PTL_EQ_INVALID);
		if (live == stale)
			note("\n  a new EQ got the freed handle %#x", (unsigned)stale);
		report("EQ", i);
		/* both events are still in the live EQ */
		expect_event(live, PTL_EVENT_PUT_START, .hdr_data = PTLT_V(i));
		expect_event(live, PTL_EVENT_PUT_END, .hdr_data = PTLT_V(i));
		assert_rc(PtlEQGet(live, &ev), PTL_EQ_EMPTY);
		assert_rc(PtlMDUnlink(tmd), PTL_OK);
		assert_rc(PtlEQFree(live), PTL_OK);
	}
	ptlt_ni_fini(&env);
}

/* ---- CT (portals3_ext.h): same tables and reuse rule; PTL_MAX_CTS cannot be
 * lowered per NI, so the cycles run past the free-list depth (the stale slot
 * is reused after about 32,800 cycles) ------------------------------------------ */

#define CT_CYCLES 70000

static void ct_stale_stays_invalid(void **state)
{
	(void)state;
	start(1, 1, 1);
	ptl_handle_ct_t stale, live, other;
	ptl_ct_event_t ev, one = { 1, 0 };
	assert_rc(PtlCTAlloc(env.ni, &other), PTL_OK);
	assert_rc(PtlCTAlloc(env.ni, &stale), PTL_OK);
	assert_rc(PtlCTFree(stale), PTL_OK);
	for (unsigned i = 1; i <= CT_CYCLES; i++) {
		assert_rc(PtlCTAlloc(env.ni, &live), PTL_OK);
		if (live == stale)
			note("\n  a new CT got the freed handle %#x", (unsigned)stale);
		if (i % 64 == 1 || i > 32000) {
			expect_stale(PtlCTInc(stale, one), PTL_CT_INVALID);
			expect_stale(PtlCTSet(stale, one), PTL_CT_INVALID);
			expect_stale(PtlCTGet(stale, &ev), PTL_CT_INVALID);
			expect_stale(PtlCTWait(stale, 1, &ev), PTL_CT_INVALID);
			expect_stale(PtlTriggeredCTInc(other, one, stale, 0), PTL_CT_INVALID);
			expect_stale(PtlTriggeredCTInc(stale, one, other, 1u << 30), PTL_CT_INVALID);
			expect_stale(PtlCTFree(stale), PTL_CT_INVALID);
			int rc = PtlCTGet(live, &ev);
			if (rc != PTL_OK || ev.success || ev.failure)
				note("\n  the live CT behind it changed: %s {%llu, %llu}", ptlt_rc_str(rc),
				     (unsigned long long)ev.success, (unsigned long long)ev.failure);
		}
		report("CT", i);
		assert_rc(PtlCTFree(live), PTL_OK);
	}
	ptlt_ni_fini(&env);
}

/* ---- across NIs ----------------------------------------------------------------- */

#define NI_LIVES 6 /* NIs opened one after another in this process */

/* Handles of an NI that was closed (PtlNIFini) name nothing on the NIs
 * opened after it, although the new objects take the same slots: every
 * earlier NI's MD, ME, EQ and CT handle is checked against each later NI
 * (an adversarial client: they named the new NI's objects, and an old ME
 * handle's PtlMEUnlink removed the new ME). */
static void stale_across_nis(void **state)
{
	(void)state;
	uint8_t buf[8] = { 0 };
	ptl_handle_md_t md[NI_LIVES];
	ptl_handle_me_t me[NI_LIVES];
	ptl_handle_eq_t eq[NI_LIVES];
	ptl_handle_ct_t ct[NI_LIVES];
	for (unsigned k = 0; k < NI_LIVES; k++) {
		start(4, 4, 4);
		assert_rc(PtlEQAlloc(env.ni, 8, PTL_EQ_HANDLER_NONE, &eq[k]), PTL_OK);
		assert_rc(PtlMEAttach(env.ni, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me[k]),
			  PTL_OK);
		md[k] = ptlt_bind(&env, buf, sizeof(buf), PTL_MD_THRESH_INF, 0, PTL_EQ_NONE, PTL_RETAIN);
		assert_rc(PtlCTAlloc(env.ni, &ct[k]), PTL_OK);
		for (unsigned j = 0; j < k; j++) {
			ptl_md_t old;
			ptl_event_t ev;
			ptl_ct_event_t cev;
			if (md[j] == md[k] || me[j] == me[k] || eq[j] == eq[k] || ct[j] == ct[k])
				note("\n  NI %u's objects got a handle of NI %u's", k, j);
			expect_stale(PtlMDUpdate(md[j], &old, NULL, PTL_EQ_NONE), PTL_MD_INVALID);
			expect_stale(PtlEQGet(eq[j], &ev), PTL_EQ_INVALID);
			expect_stale(PtlCTGet(ct[j], &cev), PTL_CT_INVALID);
			expect_stale(PtlMEUnlink(me[j]), PTL_ME_INVALID);
		}
		/* the live objects are untouched */
		ptl_md_t cur;
		expect_stale(PtlMDUpdate(md[k], &cur, NULL, PTL_EQ_NONE), PTL_OK);
		expect_stale(PtlMEUnlink(me[k]), PTL_OK);
		report("NI", k + 1);
		ptlt_ni_fini(&env);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(md_stale_stays_invalid, ni_setup, ni_teardown),
		cmocka_unit_test_setup_teardown(me_stale_stays_invalid, ni_setup, ni_teardown),
		cmocka_unit_test_setup_teardown(eq_stale_stays_invalid, ni_setup, ni_teardown),
		cmocka_unit_test_setup_teardown(md_stale_stays_invalid_long, ni_setup, ni_teardown),
		cmocka_unit_test_setup_teardown(ct_stale_stays_invalid, ni_setup, ni_teardown),
		cmocka_unit_test_setup_teardown(stale_across_nis, ni_setup, ni_teardown),
	};
	int n;
	if (PtlInit(&n) != PTL_OK)
		return 1;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	int rc = cmocka_run_group_tests_name("badinput handle reuse", tests, NULL, NULL);
	PtlFini();
	return rc;
}
