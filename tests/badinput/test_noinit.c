/*
 * test_noinit.c - PTL_NO_INIT before PtlInit and after PtlFini, for every call
 * (spec §4, §5.1); PtlInit and PtlNIInit twice; PtlNIFini.
 *
 * The tests must run in this order (cmocka runs them in array order) in a
 * fresh process: before_init_* touch the library before PtlInit.
 */
#include "bfx.h"

#include <portals3_ext.h>

#include <stdio.h>

/* handles the calls use: garbage before PtlInit, dead objects after PtlFini */
static struct {
	ptl_handle_ni_t ni;
	ptl_handle_eq_t eq;
	ptl_handle_md_t md;
	ptl_handle_me_t me;
	ptl_process_id_t id;
} g = { 0x20000001u, 0x80000001u, 0x60000001u, 0x40000001u, { 0, 0 } };

static ptl_event_t nev;
static uint8_t nbuf[16];
static const ptl_process_id_t ANYID = { PTL_NID_ANY, PTL_PID_ANY };

static int n_niinit(void)
{
	ptl_handle_ni_t n;
	ptl_ni_limits_t a;
	return PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &a, &n);
}
static int n_nifini(void) { return PtlNIFini(g.ni); }
static int n_nistatus(void) { ptl_sr_value_t v; return PtlNIStatus(g.ni, PTL_SR_DROP_COUNT, &v); }
static int n_nidist(void) { unsigned long d; return PtlNIDist(g.ni, g.id, &d); }
static int n_nihandle(void) { ptl_handle_ni_t n; return PtlNIHandle(g.md, &n); }
static int n_getuid(void) { ptl_uid_t u; return PtlGetUid(g.ni, &u); }
static int n_getid(void) { ptl_process_id_t i; return PtlGetId(g.ni, &i); }
static int n_getjid(void) { ptl_jid_t j; return PtlGetJid(g.ni, &j); }
static int n_meattach(void)
{
	ptl_handle_me_t m;
	return PtlMEAttach(g.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m);
}
static int n_meattachany(void)
{
	ptl_handle_me_t m;
	ptl_pt_index_t pt;
	return PtlMEAttachAny(g.ni, &pt, ANYID, 0, 0, PTL_RETAIN, &m);
}
static int n_meinsert(void)
{
	ptl_handle_me_t m;
	return PtlMEInsert(g.me, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m);
}
static int n_meunlink(void) { return PtlMEUnlink(g.me); }
static int n_mdattach(void)
{
	ptl_handle_md_t m;
	return PtlMDAttach(g.me, bfx_md(nbuf, 8, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &m);
}
static int n_mdbind(void)
{
	ptl_handle_md_t m;
	return PtlMDBind(g.ni, bfx_md(nbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &m);
}
static int n_mdunlink(void) { return PtlMDUnlink(g.md); }
static int n_mdupdate(void)
{
	ptl_md_t old;
	return PtlMDUpdate(g.md, &old, NULL, PTL_EQ_NONE);
}
static int n_eqalloc(void)
{
	ptl_handle_eq_t e;
	return PtlEQAlloc(g.ni, 4, PTL_EQ_HANDLER_NONE, &e);
}
static int n_eqfree(void) { return PtlEQFree(g.eq); }
static int n_eqget(void) { return PtlEQGet(g.eq, &nev); }
static int wait_fn(void *p) { (void)p; return PtlEQWait(g.eq, &nev); }
static int n_eqwait(void)
{
	int rc;
	if (!ptlt_call_bounded(wait_fn, NULL, PTLT_WAIT_MS, &rc))
		fail_msg("PtlEQWait blocked");
	return rc;
}
static int n_eqpoll(void)
{
	int w;
	return PtlEQPoll(&g.eq, 1, 0, &nev, &w);
}
static int n_acentry(void) { return PtlACEntry(g.ni, 0, ANYID, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY); }
static int n_put(void) { return PtlPut(g.md, PTL_ACK_REQ, g.id, 1, 0, 0, 0, 0); }
static int n_putregion(void) { return PtlPutRegion(g.md, 0, 4, PTL_ACK_REQ, g.id, 1, 0, 0, 0, 0); }
static int n_get(void) { return PtlGet(g.md, g.id, 1, 0, 0, 0); }
static int n_getregion(void) { return PtlGetRegion(g.md, 0, 4, g.id, 1, 0, 0, 0); }
static int n_getput(void) { return PtlGetPut(g.md, g.md, g.id, 1, 0, 0, 0, 0); }

/* <portals3_ext.h> */
static const ptl_handle_ct_t g_ct = 0xc0000001u;
static const ptl_ct_event_t ONE = { 1, 0 };
static int n_ctalloc(void) { ptl_handle_ct_t c; return PtlCTAlloc(g.ni, &c); }
static int n_ctfree(void) { return PtlCTFree(g_ct); }
static int n_ctget(void) { ptl_ct_event_t e; return PtlCTGet(g_ct, &e); }
static int n_ctwait(void) { ptl_ct_event_t e; return PtlCTWait(g_ct, 1, &e); }
static int n_ctset(void) { return PtlCTSet(g_ct, ONE); }
static int n_ctinc(void) { return PtlCTInc(g_ct, ONE); }
static int n_mdbindct(void) { return PtlMDBindCT(g.md, g_ct, PTL_CT_ALL); }
static int n_atomicput(void)
{
	return PtlAtomicPut(g.md, 0, 8, PTL_NO_ACK_REQ, g.id, 1, 0, 0, 0, 0, PTL_SUM, PTL_INT64_T);
}
static int n_tput(void)
{
	return PtlTriggeredPut(g.md, 0, 4, PTL_NO_ACK_REQ, g.id, 1, 0, 0, 0, 0, g_ct, 1);
}
static int n_tget(void) { return PtlTriggeredGet(g.md, 0, 4, g.id, 1, 0, 0, 0, g_ct, 1); }
static int n_tatomic(void)
{
	return PtlTriggeredAtomicPut(g.md, 0, 8, PTL_NO_ACK_REQ, g.id, 1, 0, 0, 0, 0, PTL_SUM,
				     PTL_INT64_T, g_ct, 1);
}
static int n_tctinc(void) { return PtlTriggeredCTInc(g_ct, ONE, g_ct, 1); }
static int n_tctset(void) { return PtlTriggeredCTSet(g_ct, ONE, g_ct, 1); }

static const struct {
	const char *name;
	int (*fn)(void);
} calls[] = {
	{ "PtlNIInit", n_niinit },       { "PtlNIFini", n_nifini },         { "PtlNIStatus", n_nistatus },
	{ "PtlNIDist", n_nidist },       { "PtlNIHandle", n_nihandle },     { "PtlGetUid", n_getuid },
	{ "PtlGetId", n_getid },         { "PtlGetJid", n_getjid },         { "PtlMEAttach", n_meattach },
	{ "PtlMEAttachAny", n_meattachany }, { "PtlMEInsert", n_meinsert }, { "PtlMEUnlink", n_meunlink },
	{ "PtlMDAttach", n_mdattach },   { "PtlMDBind", n_mdbind },         { "PtlMDUnlink", n_mdunlink },
	{ "PtlMDUpdate", n_mdupdate },   { "PtlEQAlloc", n_eqalloc },       { "PtlEQFree", n_eqfree },
	{ "PtlEQGet", n_eqget },         { "PtlEQWait", n_eqwait },         { "PtlEQPoll", n_eqpoll },
	{ "PtlACEntry", n_acentry },     { "PtlPut", n_put },               { "PtlPutRegion", n_putregion },
	{ "PtlGet", n_get },             { "PtlGetRegion", n_getregion },   { "PtlGetPut", n_getput },
	{ "PtlCTAlloc", n_ctalloc },     { "PtlCTFree", n_ctfree },         { "PtlCTGet", n_ctget },
	{ "PtlCTWait", n_ctwait },       { "PtlCTSet", n_ctset },           { "PtlCTInc", n_ctinc },
	{ "PtlMDBindCT", n_mdbindct },   { "PtlAtomicPut", n_atomicput },   { "PtlTriggeredPut", n_tput },
	{ "PtlTriggeredGet", n_tget },   { "PtlTriggeredAtomicPut", n_tatomic },
	{ "PtlTriggeredCTInc", n_tctinc }, { "PtlTriggeredCTSet", n_tctset },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

static void all_no_init(const char *when)
{
	int bad = 0;
	for (size_t i = 0; i < NCALLS; i++) {
		int rc = calls[i].fn();
		if (rc != PTL_NO_INIT) {
			print_error("    %s %s returned %s (%d), expected PTL_NO_INIT\n", calls[i].name, when,
				    ptlt_rc_str(rc), rc);
			bad++;
		}
	}
	if (bad)
		fail_msg("%d of %zu calls did not return PTL_NO_INIT %s", bad, NCALLS, when);
}

/*
 * Before PtlInit: every call fails PTL_NO_INIT (also after a stray PtlFini),
 * PtlInit(NULL) fails PTL_SEGV; then PtlInit makes the same calls work.
 */
static void before_init_no_init_then_init_works(void **state)
{
	(void)state;
	all_no_init("before PtlInit");
	PtlFini();
	all_no_init("after PtlFini without PtlInit");
	assert_rc(PtlInit(NULL), PTL_SEGV);
	int n = -1;
	assert_rc(PtlInit(&n), PTL_OK);
	ptl_handle_ni_t h;
	ptl_process_id_t id;
	assert_rc(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &h), PTL_OK);
	assert_rc(PtlGetId(h, &id), PTL_OK);
	assert_rc(PtlNIFini(h), PTL_OK);
}

static void init_twice(void **state)
{
	(void)state;
	int a = -1, b = -1;
	assert_rc(PtlInit(&a), PTL_OK);
	if (a < 1)
		fail_msg("PtlInit set *max_interfaces = %d", a);
	assert_rc(PtlInit(&b), PTL_OK);
	/* and the library works */
	void *fs = NULL;
	assert_int_equal(bfx_setup(&fs), 0);
	bfx_start(fs, NULL);
	bfx_sanity((bfx_t *)fs);
	bfx_teardown(&fs);
}

static void ni_init_twice_same_handle(void **state)
{
	(void)state;
	ptl_handle_ni_t h1 = PTL_INVALID_HANDLE, h2 = PTL_INVALID_HANDLE;
	ptl_ni_limits_t a1, a2, small = { 16, 16, 16, 3, 7, 4, 8, 16 };
	assert_rc(PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &a1, &h1), PTL_OK);
	int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, &small, &a2, &h2);
	if (rc != PTL_OK && rc != PTL_IFACE_DUP)
		fail_msg("second PtlNIInit returned %s", ptlt_rc_str(rc));
	assert_int_equal(h1, h2);
	/* bad interface */
	ptl_handle_ni_t h3 = PTL_INVALID_HANDLE;
	assert_rc(PtlNIInit(0x0badf00du, PTL_PID_ANY, NULL, NULL, &h3), PTL_IFACE_INVALID);
	/* the NI works */
	ptl_process_id_t id;
	assert_rc(PtlGetId(h1, &id), PTL_OK);
	/* one PtlNIFini tears it down (REF), or the second does (use counter) */
	assert_rc(PtlNIFini(h1), PTL_OK);
	rc = PtlNIFini(h1);
	if (rc != PTL_OK && rc != PTL_NI_INVALID)
		fail_msg("second PtlNIFini returned %s", ptlt_rc_str(rc));
	if (rc == PTL_OK)
		assert_rc(PtlNIFini(h1), PTL_NI_INVALID);
	assert_rc(PtlGetId(h1, &id), PTL_NI_INVALID);
}

static void ni_reinit_after_fini_works(void **state)
{
	void *fs = NULL;
	(void)state;
	assert_int_equal(bfx_setup(&fs), 0);
	bfx_start(fs, NULL);
	bfx_sanity((bfx_t *)fs);
	bfx_teardown(&fs);
	fs = NULL;
	assert_int_equal(bfx_setup(&fs), 0);
	bfx_start(fs, NULL);
	bfx_sanity((bfx_t *)fs);
	bfx_teardown(&fs);
}

static void after_fini_every_call_no_init(void **state)
{
	(void)state;
	ptlt_env_t env;
	uint8_t buf[16];
	/* live objects of every kind, then PtlFini under them */
	ptlt_ni_init(&env, NULL);
	g.ni = env.ni;
	g.id = env.self;
	assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &g.eq), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(buf, 16, 0, g.eq), PTL_RETAIN, &g.md), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &g.me), PTL_OK);
	PtlFini();
	all_no_init("after PtlFini");
	PtlFini(); /* twice: harmless */
	all_no_init("after a second PtlFini");
}

static void init_again_after_fini(void **state)
{
	(void)state;
	int n = -1;
	assert_rc(PtlInit(&n), PTL_OK);
	void *fs = NULL;
	assert_int_equal(bfx_setup(&fs), 0);
	bfx_start(fs, NULL);
	bfx_sanity((bfx_t *)fs);
	bfx_teardown(&fs);
	PtlFini();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(before_init_no_init_then_init_works),
		cmocka_unit_test(init_twice),
		cmocka_unit_test(ni_init_twice_same_handle),
		cmocka_unit_test(ni_reinit_after_fini_works),
		cmocka_unit_test(after_fini_every_call_no_init),
		cmocka_unit_test(init_again_after_fini),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return ptlt_run_group("badinput noinit", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
