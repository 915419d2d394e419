/*
 * test_handles.c - every Ptl call that takes a handle, with every kind of bad
 * handle: never valid (0, 0x12345, PTL_INVALID_HANDLE, PTL_HANDLE_NONE,
 * PTL_EQ_NONE where it is not allowed), a live handle of the wrong type,
 * freed, and stale (freed, slot possibly reused by a new object). Each must
 * fail with the call's *_INVALID code and change nothing: after every row a
 * put to self must still deliver exactly its events and data, and the objects
 * behind the stale handles must still work.
 *
 * One cmocka test per (call, category of bad handle), each on a fresh NI; a
 * put to self is checked after every single bad call.
 */
#include "bfx.h"

#include <stdio.h>

typedef enum { K_NI, K_ME, K_MD, K_EQ, K_ANY } hkind_t;

typedef struct {
	const char *name;
	hkind_t kind;
	int expect, expect_alt;
	bool eq_none_ok; /* PTL_EQ_NONE is a valid value for this parameter */
	bool blocking;   /* the call may block if it wrongly accepts the handle */
	int (*call)(bfx_t *f, ptl_handle_any_t h);
} hcall_t;

/* static storage for calls run in a helper thread (they may outlive the test) */
static ptl_event_t wait_ev;

static int c_nifini(bfx_t *f, ptl_handle_any_t h) { (void)f; return PtlNIFini(h); }
static int c_nistatus(bfx_t *f, ptl_handle_any_t h) { ptl_sr_value_t v; (void)f; return PtlNIStatus(h, PTL_SR_DROP_COUNT, &v); }
static int c_nidist(bfx_t *f, ptl_handle_any_t h) { unsigned long d; return PtlNIDist(h, f->env.self, &d); }
static int c_nihandle(bfx_t *f, ptl_handle_any_t h) { ptl_handle_ni_t n; (void)f; return PtlNIHandle(h, &n); }
static int c_getuid(bfx_t *f, ptl_handle_any_t h) { ptl_uid_t u; (void)f; return PtlGetUid(h, &u); }
static int c_getid(bfx_t *f, ptl_handle_any_t h) { ptl_process_id_t i; (void)f; return PtlGetId(h, &i); }
static int c_getjid(bfx_t *f, ptl_handle_any_t h) { ptl_jid_t j; (void)f; return PtlGetJid(h, &j); }

static const ptl_process_id_t ANYID = { PTL_NID_ANY, PTL_PID_ANY };

static int c_meattach(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_me_t m;
	(void)f;
	return PtlMEAttach(h, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, &m);
}
static int c_meattachany(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_me_t m;
	ptl_pt_index_t pt;
	(void)f;
	return PtlMEAttachAny(h, &pt, ANYID, 0, 0, PTL_RETAIN, &m);
}
static int c_mdbind_ni(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_md_t m;
	return PtlMDBind(h, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &m);
}
static int c_eqalloc(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_eq_t e;
	(void)f;
	return PtlEQAlloc(h, 4, PTL_EQ_HANDLER_NONE, &e);
}
static int c_acentry(bfx_t *f, ptl_handle_any_t h)
{
	(void)f;
	return PtlACEntry(h, 0, ANYID, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY);
}
static int c_meinsert(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_me_t m;
	(void)f;
	return PtlMEInsert(h, ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, &m);
}
static int c_meunlink(bfx_t *f, ptl_handle_any_t h) { (void)f; return PtlMEUnlink(h); }
static int c_mdattach_me(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_md_t m;
	return PtlMDAttach(h, bfx_md(f->xbuf, 8, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &m);
}
static int c_mdunlink(bfx_t *f, ptl_handle_any_t h) { (void)f; return PtlMDUnlink(h); }
static int c_mdupdate_old(bfx_t *f, ptl_handle_any_t h)
{
	ptl_md_t old;
	(void)f;
	return PtlMDUpdate(h, &old, NULL, PTL_EQ_NONE);
}
static int c_mdupdate_new(bfx_t *f, ptl_handle_any_t h)
{
	ptl_md_t nw = bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE);
	return PtlMDUpdate(h, NULL, &nw, PTL_EQ_NONE);
}
static int c_put(bfx_t *f, ptl_handle_any_t h)
{
	return PtlPut(h, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int c_putregion(bfx_t *f, ptl_handle_any_t h)
{
	return PtlPutRegion(h, 0, 4, PTL_NO_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int c_get(bfx_t *f, ptl_handle_any_t h) { return PtlGet(h, f->env.self, BFX_PT, 0, 0, 0); }
static int c_getregion(bfx_t *f, ptl_handle_any_t h)
{
	return PtlGetRegion(h, 0, 4, f->env.self, BFX_PT, 0, 0, 0);
}
static int c_getput_get(bfx_t *f, ptl_handle_any_t h)
{
	return PtlGetPut(h, f->md, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int c_getput_put(bfx_t *f, ptl_handle_any_t h)
{
	return PtlGetPut(f->md, h, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int c_eqfree(bfx_t *f, ptl_handle_any_t h) { (void)f; return PtlEQFree(h); }
static int c_eqget(bfx_t *f, ptl_handle_any_t h) { ptl_event_t e; (void)f; return PtlEQGet(h, &e); }
static int c_eqwait(bfx_t *f, ptl_handle_any_t h) { (void)f; return PtlEQWait(h, &wait_ev); }
static int c_eqpoll1(bfx_t *f, ptl_handle_any_t h)
{
	ptl_event_t e;
	int w;
	(void)f;
	return PtlEQPoll(&h, 1, 0, &e, &w);
}
static int c_eqpoll2(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_eq_t l[2] = { f->eq_new, h };
	ptl_event_t e;
	int w;
	return PtlEQPoll(l, 2, 0, &e, &w);
}
static int c_mdattach_eq(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_md_t m;
	return PtlMDAttach(f->me_nomd, bfx_md(f->xbuf, 8, PTL_MD_OP_PUT, h), PTL_RETAIN, &m);
}
static int c_mdbind_eq(bfx_t *f, ptl_handle_any_t h)
{
	ptl_handle_md_t m;
	return PtlMDBind(f->env.ni, bfx_md(f->xbuf, 8, 0, h), PTL_RETAIN, &m);
}
static int c_mdupdate_testeq(bfx_t *f, ptl_handle_any_t h)
{
	ptl_md_t nw = bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE);
	return PtlMDUpdate(f->md_new, NULL, &nw, h);
}
static int c_mdupdate_neweq(bfx_t *f, ptl_handle_any_t h)
{
	ptl_md_t nw = bfx_md(f->xbuf, 8, 0, h);
	return PtlMDUpdate(f->md_new, NULL, &nw, PTL_EQ_NONE);
}

static const hcall_t calls[] = {
	{ "PtlNIFini", K_NI, PTL_NI_INVALID, 0, false, false, c_nifini },
	{ "PtlNIStatus", K_NI, PTL_NI_INVALID, 0, false, false, c_nistatus },
	{ "PtlNIDist", K_NI, PTL_NI_INVALID, 0, false, false, c_nidist },
	{ "PtlNIHandle", K_ANY, PTL_HANDLE_INVALID, 0, false, false, c_nihandle },
	{ "PtlGetUid", K_NI, PTL_NI_INVALID, 0, false, false, c_getuid },
	{ "PtlGetId", K_NI, PTL_NI_INVALID, 0, false, false, c_getid },
	{ "PtlGetJid", K_NI, PTL_NI_INVALID, 0, false, false, c_getjid },
	{ "PtlMEAttach", K_NI, PTL_NI_INVALID, 0, false, false, c_meattach },
	{ "PtlMEAttachAny", K_NI, PTL_NI_INVALID, 0, false, false, c_meattachany },
	{ "PtlMDBind(ni)", K_NI, PTL_NI_INVALID, 0, false, false, c_mdbind_ni },
	{ "PtlEQAlloc", K_NI, PTL_NI_INVALID, 0, false, false, c_eqalloc },
	{ "PtlACEntry", K_NI, PTL_NI_INVALID, 0, false, false, c_acentry },
	{ "PtlMEInsert", K_ME, PTL_ME_INVALID, 0, false, false, c_meinsert },
	{ "PtlMEUnlink", K_ME, PTL_ME_INVALID, 0, false, false, c_meunlink },
	{ "PtlMDAttach(me)", K_ME, PTL_ME_INVALID, 0, false, false, c_mdattach_me },
	{ "PtlMDUnlink", K_MD, PTL_MD_INVALID, 0, false, false, c_mdunlink },
	{ "PtlMDUpdate(old)", K_MD, PTL_MD_INVALID, 0, false, false, c_mdupdate_old },
	{ "PtlMDUpdate(new)", K_MD, PTL_MD_INVALID, 0, false, false, c_mdupdate_new },
	{ "PtlPut", K_MD, PTL_MD_INVALID, 0, false, false, c_put },
	{ "PtlPutRegion", K_MD, PTL_MD_INVALID, 0, false, false, c_putregion },
	{ "PtlGet", K_MD, PTL_MD_INVALID, 0, false, false, c_get },
	{ "PtlGetRegion", K_MD, PTL_MD_INVALID, 0, false, false, c_getregion },
	{ "PtlGetPut(get)", K_MD, PTL_MD_INVALID, 0, false, false, c_getput_get },
	{ "PtlGetPut(put)", K_MD, PTL_MD_INVALID, 0, false, false, c_getput_put },
	{ "PtlEQFree", K_EQ, PTL_EQ_INVALID, 0, false, false, c_eqfree },
	{ "PtlEQGet", K_EQ, PTL_EQ_INVALID, 0, false, false, c_eqget },
	{ "PtlEQWait", K_EQ, PTL_EQ_INVALID, 0, false, true, c_eqwait },
	{ "PtlEQPoll", K_EQ, PTL_EQ_INVALID, 0, false, false, c_eqpoll1 },
	{ "PtlEQPoll(2nd)", K_EQ, PTL_EQ_INVALID, 0, false, false, c_eqpoll2 },
	{ "PtlMDAttach(eq)", K_EQ, PTL_EQ_INVALID, 0, true, false, c_mdattach_eq },
	{ "PtlMDBind(eq)", K_EQ, PTL_EQ_INVALID, 0, true, false, c_mdbind_eq },
	{ "PtlMDUpdate(test eq)", K_EQ, PTL_EQ_INVALID, 0, true, false, c_mdupdate_testeq },
	/* a bad eq_handle in the new MD: EQ_INVALID as for MDAttach/MDBind (MD_ILLEGAL tolerated) */
	{ "PtlMDUpdate(new eq)", K_EQ, PTL_EQ_INVALID, PTL_MD_ILLEGAL, true, false, c_mdupdate_neweq },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

typedef enum { BV_ZERO, BV_12345, BV_INVALID, BV_HNONE, BV_EQNONE, BV_WRONG1, BV_WRONG2, BV_WRONG3,
	       BV_FREED, BV_STALE, NBV } bv_t;
static const char *bv_name[NBV] = { "zero", "0x12345", "PTL_INVALID_HANDLE", "PTL_HANDLE_NONE",
				    "PTL_EQ_NONE", "wrong_type_1", "wrong_type_2", "wrong_type_3",
				    "freed", "stale" };

static bool bv_applies(const hcall_t *c, bv_t b)
{
	switch (b) {
	case BV_EQNONE: return !c->eq_none_ok;
	case BV_WRONG1: case BV_WRONG2: case BV_WRONG3: return c->kind != K_ANY;
	case BV_FREED: case BV_STALE: return c->kind != K_NI; /* NI: see ni_handle_after_fini */
	default: return true;
	}
}

static ptl_handle_any_t bv_value(const bfx_t *f, hkind_t k, bv_t b)
{
	switch (b) {
	case BV_ZERO: return 0;
	case BV_12345: return 0x12345;
	case BV_INVALID: return PTL_INVALID_HANDLE;
	case BV_HNONE: return PTL_HANDLE_NONE;
	case BV_EQNONE: return PTL_EQ_NONE;
	case BV_WRONG1: return k == K_NI ? f->eq : k == K_MD ? f->eq : k == K_ME ? f->md : f->md;
	case BV_WRONG2: return k == K_NI ? f->md : k == K_MD ? f->me : k == K_ME ? f->eq : f->me;
	case BV_WRONG3: return k == K_NI ? f->me : f->env.ni;
	case BV_FREED: return k == K_MD ? f->md_freed : k == K_ME ? f->me_freed : f->eq_freed;
	case BV_STALE:
	default:
		/* for K_ANY (PtlNIHandle) use the stale MD */
		return k == K_ME ? f->me_stale : k == K_EQ ? f->eq_stale : f->md_stale;
	}
}

/* one row = one call and one category of bad handle (each value tried in turn) */
typedef enum { CAT_NEVER, CAT_WRONG, CAT_FREED, CAT_STALE, NCAT } cat_t;
static const char *cat_name[NCAT] = { "never_valid", "wrong_type", "freed", "stale" };
static const bv_t cat_values[NCAT][5] = {
	{ BV_ZERO, BV_12345, BV_INVALID, BV_HNONE, BV_EQNONE },
	{ BV_WRONG1, BV_WRONG2, BV_WRONG3, NBV, NBV },
	{ BV_FREED, NBV, NBV, NBV, NBV },
	{ BV_STALE, NBV, NBV, NBV, NBV },
};

static bool cat_applies(const hcall_t *c, cat_t k)
{
	for (int i = 0; i < 5 && cat_values[k][i] != NBV; i++)
		if (bv_applies(c, cat_values[k][i]))
			return true;
	return false;
}

typedef struct {
	const hcall_t *c;
	cat_t cat;
	char name[96];
} row_t;

struct blocked_arg {
	const hcall_t *c;
	bfx_t *f;
	ptl_handle_any_t h;
};
static struct blocked_arg barg;

static int run_blocking(void *p)
{
	struct blocked_arg *a = p;
	return a->c->call(a->f, a->h);
}

/* cmocka passes only one state pointer: the row lives in a wrapper */
typedef struct {
	bfx_t *f;
	const row_t *r;
} wrap_t;

static int row_setup(void **state)
{
	const row_t *r = *state;
	wrap_t *w = calloc(1, sizeof(*w));
	void *fs = NULL;
	if (!w || bfx_setup(&fs) != 0)
		return -1;
	w->f = fs;
	w->r = r;
	*state = w;
	return 0;
}

static int row_teardown(void **state)
{
	wrap_t *w = *state;
	void *fs = w->f;
	bfx_teardown(&fs);
	free(w);
	return 0;
}

static void row_test(void **state)
{
	wrap_t *w = *state;
	bfx_t *f = w->f;
	const hcall_t *c = w->r->c;
	bfx_start(f, NULL);
	for (int i = 0; i < 5; i++) {
		bv_t b = cat_values[w->r->cat][i];
		if (b == NBV)
			break;
		if (!bv_applies(c, b))
			continue;
		ptl_handle_any_t h = bv_value(f, c->kind, b);
		int rc;
		if (c->blocking) {
			barg.c = c;
			barg.f = f;
			barg.h = h;
			if (!ptlt_call_bounded(run_blocking, &barg, PTLT_WAIT_MS, &rc))
				fail_msg("%s(%s handle %#x) blocked", c->name, bv_name[b], (unsigned)h);
		} else {
			rc = c->call(f, h);
		}
		if (rc != c->expect && !(c->expect_alt && rc == c->expect_alt))
			fail_msg("%s with %s handle %#x returned %s (%d), expected %s", c->name, bv_name[b],
				 (unsigned)h, ptlt_rc_str(rc), rc, ptlt_rc_str(c->expect));
		/* nothing changed: the NI still moves data, every live object still works */
		bfx_sanity(f);
	}
}

/* ---- NI handles after PtlNIFini (freed) and after a new PtlNIInit (stale) ------- */

static void ni_handle_after_fini(void **state)
{
	(void)state;
	ptlt_env_t e1, e2;
	ptlt_ni_init(&e1, NULL);
	ptl_handle_ni_t old = e1.ni;
	assert_rc(PtlNIFini(old), PTL_OK);
	for (size_t i = 0; i < NCALLS; i++) {
		if (calls[i].kind != K_NI && calls[i].kind != K_ANY)
			continue;
		if (calls[i].call == c_nidist || calls[i].call == c_mdbind_ni)
			continue; /* need a live fixture; covered below */
		int rc = calls[i].call(NULL, old);
		int want = calls[i].kind == K_ANY ? PTL_HANDLE_INVALID : PTL_NI_INVALID;
		if (rc != want)
			fail_msg("%s on a finalised NI returned %s, expected %s", calls[i].name, ptlt_rc_str(rc),
				 ptlt_rc_str(want));
	}
	ptlt_ni_init(&e2, NULL);
	if (e2.ni != old) {
		ptl_process_id_t id;
		assert_rc(PtlGetId(old, &id), PTL_NI_INVALID);
		unsigned long d;
		assert_rc(PtlNIDist(old, e2.self, &d), PTL_NI_INVALID);
	} else {
		print_message("NI handle reused as is after PtlNIFini (stale NI handles are not detectable)\n");
	}
	ptl_process_id_t id;
	assert_rc(PtlGetId(e2.ni, &id), PTL_OK);
	assert_rc(PtlNIFini(e2.ni), PTL_OK);
	assert_rc(PtlNIFini(e2.ni), PTL_NI_INVALID);
}

static int grp_setup(void **state)
{
	int n;
	(void)state;
	return PtlInit(&n) == PTL_OK ? 0 : -1;
}

static int grp_teardown(void **state)
{
	(void)state;
	PtlFini();
	return 0;
}

int main(int argc, char **argv)
{
	static row_t rows[NCALLS * NCAT];
	struct CMUnitTest *t = calloc(NCALLS * NCAT + 1, sizeof(*t));
	size_t n = 0;
	if (!t)
		return 1;
	for (size_t i = 0; i < NCALLS; i++)
		for (int k = 0; k < NCAT; k++) {
			if (!cat_applies(&calls[i], (cat_t)k))
				continue;
			row_t *r = &rows[n];
			r->c = &calls[i];
			r->cat = (cat_t)k;
			snprintf(r->name, sizeof(r->name), "%s/%s", calls[i].name, cat_name[k]);
			t[n].name = r->name;
			t[n].test_func = row_test;
			t[n].setup_func = row_setup;
			t[n].teardown_func = row_teardown;
			t[n].initial_state = r;
			n++;
		}
	t[n].name = "ni_handle_after_fini";
	t[n].test_func = ni_handle_after_fini;
	n++;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	int rc = ptlt_run_group("badinput handles", t, n, grp_setup, grp_teardown);
	free(t);
	return rc;
}
