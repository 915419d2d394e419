/*
 * test_args.c - bad arguments other than handles, for every Ptl call: NULL
 * out-pointers (PTL_SEGV), out-of-range indexes, illegal regions, and a few
 * "known library decisions" (duplicate init, count-0 EQ, inactive MD).
 * One row = one call and the code(s) it must return; after every row a put to
 * self must still deliver exactly its events and data.
 */
#include "bfx.h"

#include <p3rt/p3rt.h>

#include <stdio.h>

typedef struct {
	const char *name;
	int (*fn)(bfx_t *f);
	int expect, alt; /* alt: a second accepted code (0 = none) */
} arow_t;

static const ptl_process_id_t ANYID = { PTL_NID_ANY, PTL_PID_ANY };
static ptl_event_t sev;
static int swhich;
static ptl_handle_eq_t seq_;

/* ---- PTL_SEGV -------------------------------------------------------------------- */
static int a_init_null(bfx_t *f) { (void)f; return PtlInit(NULL); }
static int a_niinit_null(bfx_t *f)
{
	ptl_ni_limits_t a;
	(void)f;
	return PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &a, NULL);
}
static int a_nistatus_null(bfx_t *f) { return PtlNIStatus(f->env.ni, PTL_SR_DROP_COUNT, NULL); }
static int a_nidist_null(bfx_t *f) { return PtlNIDist(f->env.ni, f->env.self, NULL); }
static int a_nihandle_null(bfx_t *f) { return PtlNIHandle(f->md, NULL); }
static int a_getuid_null(bfx_t *f) { return PtlGetUid(f->env.ni, NULL); }
static int a_getid_null(bfx_t *f) { return PtlGetId(f->env.ni, NULL); }
static int a_getjid_null(bfx_t *f) { return PtlGetJid(f->env.ni, NULL); }
static int a_meattach_null(bfx_t *f)
{
	return PtlMEAttach(f->env.ni, BFX_PT, ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, NULL);
}
static int a_meattachany_null_pt(bfx_t *f)
{
	ptl_handle_me_t m;
	return PtlMEAttachAny(f->env.ni, NULL, ANYID, 0, 0, PTL_RETAIN, &m);
}
static int a_meattachany_null_me(bfx_t *f)
{
	ptl_pt_index_t pt;
	return PtlMEAttachAny(f->env.ni, &pt, ANYID, 0, 0, PTL_RETAIN, NULL);
}
static int a_meinsert_null(bfx_t *f)
{
	return PtlMEInsert(f->me, ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, NULL);
}
static int a_mdattach_null(bfx_t *f)
{
	int rc = PtlMDAttach(f->me_nomd, bfx_md(f->xbuf, 8, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, NULL);
	/* nothing was attached: the ME still takes an MD */
	ptl_handle_md_t m;
	assert_rc(PtlMDAttach(f->me_nomd, bfx_md(f->xbuf, 8, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &m),
		  PTL_OK);
	assert_rc(PtlMDUnlink(m), PTL_OK);
	return rc;
}
static int a_mdbind_null(bfx_t *f)
{
	return PtlMDBind(f->env.ni, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, NULL);
}
static int a_eqalloc_null(bfx_t *f) { return PtlEQAlloc(f->env.ni, 4, PTL_EQ_HANDLER_NONE, NULL); }
static int a_eqget_null(bfx_t *f) { return PtlEQGet(f->eq, NULL); }
static int wait_null(void *p) { return PtlEQWait(*(ptl_handle_eq_t *)p, NULL); }
static int a_eqwait_null(bfx_t *f)
{
	int rc;
	seq_ = f->eq;
	if (!ptlt_call_bounded(wait_null, &seq_, PTLT_WAIT_MS, &rc))
		fail_msg("PtlEQWait(eq, NULL) blocked");
	return rc;
}
static int a_eqpoll_null_eqs(bfx_t *f) { (void)f; return PtlEQPoll(NULL, 1, 0, &sev, &swhich); }
static int a_eqpoll_null_ev(bfx_t *f) { return PtlEQPoll(&f->eq, 1, 0, NULL, &swhich); }
static int a_eqpoll_null_which(bfx_t *f) { return PtlEQPoll(&f->eq, 1, 0, &sev, NULL); }

/* ---- indexes ----------------------------------------------------------------------- */
static int a_meattach_pt_beyond(bfx_t *f)
{
	ptl_handle_me_t m;
	return PtlMEAttach(f->env.ni, (ptl_pt_index_t)f->env.limits.max_pt_index + 1, ANYID, 0, 0,
			   PTL_RETAIN, PTL_INS_AFTER, &m);
}
static int a_meattach_pt_any(bfx_t *f)
{
	ptl_handle_me_t m;
	return PtlMEAttach(f->env.ni, PTL_PT_INDEX_ANY, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &m);
}
static int a_meattach_pt_max(bfx_t *f)
{
	ptl_handle_me_t m;
	int rc = PtlMEAttach(f->env.ni, (ptl_pt_index_t)f->env.limits.max_pt_index, ANYID, 0, 0,
			     PTL_RETAIN, PTL_INS_AFTER, &m);
	if (rc == PTL_OK)
		assert_rc(PtlMEUnlink(m), PTL_OK);
	return rc;
}
static int a_acentry_ac_beyond(bfx_t *f)
{
	return PtlACEntry(f->env.ni, (ptl_ac_index_t)f->env.limits.max_ac_index + 1, ANYID, PTL_UID_ANY,
			  PTL_JID_ANY, PTL_PT_INDEX_ANY);
}
static int a_acentry_ac_huge(bfx_t *f)
{
	return PtlACEntry(f->env.ni, 0xffffffffu, ANYID, PTL_UID_ANY, PTL_JID_ANY, PTL_PT_INDEX_ANY);
}
static int a_acentry_ac_max(bfx_t *f)
{
	return PtlACEntry(f->env.ni, (ptl_ac_index_t)f->env.limits.max_ac_index, ANYID, PTL_UID_ANY,
			  PTL_JID_ANY, PTL_PT_INDEX_ANY);
}
static int a_acentry_pt_beyond(bfx_t *f)
{
	/* entry 1, so that a wrongly accepted entry cannot break the sanity put (entry 0) */
	return PtlACEntry(f->env.ni, 1, ANYID, PTL_UID_ANY, PTL_JID_ANY,
			  (ptl_pt_index_t)f->env.limits.max_pt_index + 1);
}
static int a_nistatus_bad_sr(bfx_t *f)
{
	ptl_sr_value_t v;
	return PtlNIStatus(f->env.ni, 100000, &v);
}
static int a_nistatus_sr_huge(bfx_t *f)
{
	ptl_sr_value_t v;
	return PtlNIStatus(f->env.ni, 0xffffffffu, &v);
}
static int a_eqpoll_size0(bfx_t *f) { return PtlEQPoll(&f->eq, 0, 0, &sev, &swhich); }
static int a_eqpoll_size_neg(bfx_t *f) { return PtlEQPoll(&f->eq, -1, 0, &sev, &swhich); }
static int a_niinit_bad_iface(bfx_t *f)
{
	ptl_handle_ni_t n = PTL_INVALID_HANDLE;
	ptl_ni_limits_t a;
	(void)f;
	return PtlNIInit(0x12345678u, PTL_PID_ANY, NULL, &a, &n);
}

/* ---- regions ----------------------------------------------------------------------- */
static int a_putregion_past_end(bfx_t *f)
{
	return PtlPutRegion(f->md, 8, BFX_LEN - 7, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int a_putregion_offset_beyond(bfx_t *f)
{
	return PtlPutRegion(f->md, BFX_LEN + 1, 0, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int a_putregion_too_long(bfx_t *f)
{
	return PtlPutRegion(f->md, 0, BFX_LEN + 1, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int a_putregion_wraps(bfx_t *f)
{
	return PtlPutRegion(f->md, UINT64_MAX, 2, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
}
static int a_getregion_past_end(bfx_t *f)
{
	return PtlGetRegion(f->md, 8, BFX_LEN - 7, f->env.self, BFX_PT, 0, 0, 0);
}
static int a_getregion_offset_beyond(bfx_t *f)
{
	return PtlGetRegion(f->md, BFX_LEN + 1, 0, f->env.self, BFX_PT, 0, 0, 0);
}
static int a_getregion_wraps(bfx_t *f)
{
	return PtlGetRegion(f->md, 2, UINT64_MAX, f->env.self, BFX_PT, 0, 0, 0);
}
static int a_getput_put_md_too_long(bfx_t *f)
{
	size_t n = (size_t)f->env.limits.max_getput_md + 1;
	uint8_t *buf = calloc(1, n);
	ptl_handle_md_t big;
	assert_non_null(buf);
	assert_rc(PtlMDBind(f->env.ni, bfx_md(buf, n, 0, PTL_EQ_NONE), PTL_RETAIN, &big), PTL_OK);
	int rc = PtlGetPut(f->md, big, f->env.self, BFX_PT, 0, 0, 0, 0);
	assert_rc(PtlMDUnlink(big), PTL_OK);
	free(buf);
	return rc;
}
/* Regions no process can have (an adversarial client: PtlMDBind took them,
 * and a transfer then ran off the end of the address space): PTL_MD_ILLEGAL. */
static int bind_rc(bfx_t *f, ptl_md_t d)
{
	ptl_handle_md_t m;
	int rc = PtlMDBind(f->env.ni, d, PTL_RETAIN, &m);
	if (rc == PTL_OK)
		assert_rc(PtlMDUnlink(m), PTL_OK);
	return rc;
}
static int a_mdbind_len_huge(bfx_t *f) { return bind_rc(f, bfx_md(f->xbuf, UINT64_MAX, 0, PTL_EQ_NONE)); }
static int a_mdbind_len_half(bfx_t *f)
{
	return bind_rc(f, bfx_md(f->xbuf, (ptl_size_t)1 << 63, 0, PTL_EQ_NONE));
}
static int a_mdbind_wraps(bfx_t *f)
{
	return bind_rc(f, bfx_md((void *)(uintptr_t)-4096, 8192, 0, PTL_EQ_NONE));
}
static int a_mdbind_iov_entry_wraps(bfx_t *f)
{
	ptl_md_iovec_t v[2] = { { f->xbuf, 8 }, { (void *)(uintptr_t)-4096, 8192 } };
	return bind_rc(f, bfx_md(v, 2, PTL_MD_IOVEC, PTL_EQ_NONE));
}
static int a_mdbind_iov_total_wraps(bfx_t *f)
{
	ptl_md_iovec_t v[3] = { { f->xbuf, 8 }, { (void *)4096, (ptl_size_t)1 << 62 },
				{ (void *)4096, (ptl_size_t)3 << 62 } };
	return bind_rc(f, bfx_md(v, 3, PTL_MD_IOVEC, PTL_EQ_NONE));
}
static int a_mdbind_len_zero_top(bfx_t *f)
{
	return bind_rc(f, bfx_md((void *)(uintptr_t)-4096, 0, 0, PTL_EQ_NONE));
}

static int a_mdattach_twice(bfx_t *f)
{
	ptl_handle_md_t m;
	return PtlMDAttach(f->me, bfx_md(f->xbuf, 8, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &m);
}

/* ---- known library decisions --------------------------------------------------------- */
static int a_init_twice(bfx_t *f)
{
	int n = -1;
	(void)f;
	return PtlInit(&n);
}
static int a_niinit_twice(bfx_t *f)
{
	ptl_handle_ni_t n = PTL_INVALID_HANDLE;
	ptl_ni_limits_t a;
	int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &a, &n);
	if ((rc == PTL_OK || rc == PTL_IFACE_DUP) && n != f->env.ni)
		fail_msg("second PtlNIInit returned handle %#x, first %#x", (unsigned)n, (unsigned)f->env.ni);
	return rc;
}
static int a_eqalloc_zero(bfx_t *f)
{
	ptl_handle_eq_t e = 0;
	int rc = PtlEQAlloc(f->env.ni, 0, PTL_EQ_HANDLER_NONE, &e);
	if (rc == PTL_OK && e != PTL_EQ_NONE)
		fail_msg("PtlEQAlloc(count 0) gave handle %#x, expected PTL_EQ_NONE", (unsigned)e);
	return rc;
}
static int a_put_from_inactive_md(bfx_t *f)
{
	ptl_handle_md_t m;
	ptl_md_t d = bfx_md(f->xbuf, 8, 0, f->eq);
	d.threshold = 0;
	assert_rc(PtlMDBind(f->env.ni, d, PTL_RETAIN, &m), PTL_OK);
	int rc = PtlPut(m, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, 0, 0);
	assert_rc(PtlMDUnlink(m), PTL_OK);
	return rc; /* no events either way: the sanity put checks the EQs */
}
static int a_get_from_inactive_md(bfx_t *f)
{
	ptl_handle_md_t m;
	ptl_md_t d = bfx_md(f->xbuf, 8, 0, f->eq);
	d.threshold = 0;
	assert_rc(PtlMDBind(f->env.ni, d, PTL_RETAIN, &m), PTL_OK);
	int rc = PtlGet(m, f->env.self, BFX_PT, 0, 0, 0);
	assert_rc(PtlMDUnlink(m), PTL_OK);
	return rc;
}
static int a_nihandle_of_each(bfx_t *f)
{
	const ptl_handle_any_t hs[] = { f->env.ni, f->eq, f->md, f->me, f->tmd, f->eq_new };
	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
		ptl_handle_ni_t n = PTL_INVALID_HANDLE;
		int rc = PtlNIHandle(hs[i], &n);
		if (rc != PTL_OK)
			return rc;
		if (n != f->env.ni)
			fail_msg("PtlNIHandle(%#x) gave %#x, expected %#x", (unsigned)hs[i], (unsigned)n,
				 (unsigned)f->env.ni);
	}
	return PTL_OK;
}
static int a_eq_none_on_md(bfx_t *f)
{
	ptl_handle_md_t m;
	int rc = PtlMDBind(f->env.ni, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &m);
	if (rc == PTL_OK)
		assert_rc(PtlMDUnlink(m), PTL_OK);
	return rc;
}
static int a_handle_is_equal(bfx_t *f)
{
	if (!PtlHandleIsEqual(f->md, f->md) || PtlHandleIsEqual(f->md, f->tmd) ||
	    !PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE) ||
	    PtlHandleIsEqual(f->eq, PTL_INVALID_HANDLE))
		fail_msg("PtlHandleIsEqual is not handle equality");
	return PTL_OK;
}
static int a_strings(bfx_t *f)
{
	assert_string_equal(PtlErrorStr(PTL_MD_INVALID), "PTL_MD_INVALID");
	assert_string_equal(PtlErrorStr(PTL_OK), "PTL_OK");
	assert_non_null(PtlErrorStr(100000));
	assert_string_equal(PtlEventKindStr(PTL_EVENT_ACK), "PTL_EVENT_ACK");
	assert_string_equal(PtlEventKindStr(PTL_EVENT_GETPUT_END), "PTL_EVENT_GETPUT_END");
	assert_non_null(PtlEventKindStr((ptl_event_kind_t)999));
	assert_string_equal(PtlNIFailStr(f->env.ni, PTL_NI_OK), "PTL_NI_OK");
	assert_non_null(PtlNIFailStr(f->env.ni, 99999));
	return PTL_OK;
}

#define R(fn, code) { #fn, fn, code, 0 }
#define R2(fn, code, alt) { #fn, fn, code, alt }
/* PTL_MY_RID that is not a rank of the job: PtlSetRank(INVALID, -1, -1) and
 * PtlGetRank both fail (issue 12: -1 was read as 4294967295, "abc" as 0).
 * Returns their common code (or -1000 if they disagree), then restores the
 * job of one. */
static int myrid(const char *v)
{
	unsigned r = 7, n = 7;
	setenv("PTL_MY_RID", v, 1);
	int rc1 = PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1);
	int rc2 = PtlGetRank(PTL_INVALID_HANDLE, &r, &n);
	unsetenv("PTL_MY_RID");
	PtlSetRank(PTL_INVALID_HANDLE, (unsigned)-1, (unsigned)-1);
	if (rc1 == PTL_OK && (r != 0 || n != 1))
		return -1001; /* a job of one: rank 0 of 1 */
	return rc1 == rc2 ? rc1 : -1000;
}
static int a_myrid_negative(bfx_t *f) { (void)f; return myrid("-1"); }
static int a_myrid_garbage(bfx_t *f) { (void)f; return myrid("abc"); }
static int a_myrid_trailing(bfx_t *f) { (void)f; return myrid("0x"); }
static int a_myrid_beyond(bfx_t *f) { (void)f; return myrid("1"); }
static int a_myrid_empty(bfx_t *f) { (void)f; return myrid(""); }
static int a_myrid_zero(bfx_t *f) { (void)f; return myrid("0"); }

static const arow_t rows[] = {
	R2(a_init_null, PTL_SEGV, PTL_OK), /* already initialised: REF returns PTL_OK early */
	R(a_niinit_null, PTL_SEGV),
	R(a_nistatus_null, PTL_SEGV),
	R(a_nidist_null, PTL_SEGV),
	R(a_nihandle_null, PTL_SEGV),
	R(a_getuid_null, PTL_SEGV),
	R(a_getid_null, PTL_SEGV),
	R(a_getjid_null, PTL_SEGV),
	R(a_meattach_null, PTL_SEGV),
	R(a_meattachany_null_pt, PTL_SEGV),
	R(a_meattachany_null_me, PTL_SEGV),
	R(a_meinsert_null, PTL_SEGV),
	R(a_mdattach_null, PTL_SEGV),
	R(a_mdbind_null, PTL_SEGV),
	R(a_eqalloc_null, PTL_SEGV),
	R(a_eqget_null, PTL_SEGV),
	R(a_eqwait_null, PTL_SEGV),
	R(a_eqpoll_null_eqs, PTL_SEGV),
	R(a_eqpoll_null_ev, PTL_SEGV),
	R(a_eqpoll_null_which, PTL_SEGV),

	R(a_meattach_pt_beyond, PTL_PT_INDEX_INVALID),
	R(a_meattach_pt_any, PTL_PT_INDEX_INVALID),
	R(a_meattach_pt_max, PTL_OK),
	R(a_acentry_ac_beyond, PTL_AC_INDEX_INVALID),
	R(a_acentry_ac_huge, PTL_AC_INDEX_INVALID),
	R(a_acentry_ac_max, PTL_OK),
	R(a_acentry_pt_beyond, PTL_PT_INDEX_INVALID),
	R(a_nistatus_bad_sr, PTL_SR_INDEX_INVALID),
	R(a_nistatus_sr_huge, PTL_SR_INDEX_INVALID),
	R(a_eqpoll_size0, PTL_EQ_INVALID),
	R(a_eqpoll_size_neg, PTL_EQ_INVALID),
	R(a_niinit_bad_iface, PTL_IFACE_INVALID),
	R(a_myrid_negative, PTL_FAIL),
	R(a_myrid_garbage, PTL_FAIL),
	R(a_myrid_trailing, PTL_FAIL),
	R(a_myrid_beyond, PTL_FAIL),
	R(a_myrid_empty, PTL_FAIL),
	R(a_myrid_zero, PTL_OK),

	R(a_putregion_past_end, PTL_MD_ILLEGAL),
	R(a_putregion_offset_beyond, PTL_MD_ILLEGAL),
	R(a_putregion_too_long, PTL_MD_ILLEGAL),
	R(a_putregion_wraps, PTL_MD_ILLEGAL),
	R(a_mdbind_len_huge, PTL_MD_ILLEGAL),
	R(a_mdbind_len_half, PTL_MD_ILLEGAL),
	R(a_mdbind_wraps, PTL_MD_ILLEGAL),
	R(a_mdbind_iov_entry_wraps, PTL_MD_ILLEGAL),
	R(a_mdbind_iov_total_wraps, PTL_MD_ILLEGAL),
	R(a_mdbind_len_zero_top, PTL_OK),
	R(a_getregion_past_end, PTL_MD_ILLEGAL),
	R(a_getregion_offset_beyond, PTL_MD_ILLEGAL),
	R(a_getregion_wraps, PTL_MD_ILLEGAL),
	R(a_getput_put_md_too_long, PTL_MD_ILLEGAL),
	R(a_mdattach_twice, PTL_ME_IN_USE),

	R(a_init_twice, PTL_OK),
	R2(a_niinit_twice, PTL_OK, PTL_IFACE_DUP),
	R(a_eqalloc_zero, PTL_OK),
	R2(a_put_from_inactive_md, PTL_OK, PTL_MD_INVALID),
	R2(a_get_from_inactive_md, PTL_OK, PTL_MD_INVALID),
	R(a_nihandle_of_each, PTL_OK),
	R(a_eq_none_on_md, PTL_OK),
	R(a_handle_is_equal, PTL_OK),
	R(a_strings, PTL_OK),
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

typedef struct {
	bfx_t *f;
	const arow_t *r;
} wrap_t;

static int row_setup(void **state)
{
	wrap_t *w = calloc(1, sizeof(*w));
	void *fs = NULL;
	if (!w || bfx_setup(&fs) != 0)
		return -1;
	w->f = fs;
	w->r = *state;
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
	bfx_start(w->f, NULL);
	int rc = w->r->fn(w->f);
	if (rc != w->r->expect && !(w->r->alt && rc == w->r->alt))
		fail_msg("%s returned %s (%d), expected %s%s%s", w->r->name, ptlt_rc_str(rc), rc,
			 ptlt_rc_str(w->r->expect), w->r->alt ? " or " : "", w->r->alt ? ptlt_rc_str(w->r->alt) : "");
	bfx_sanity(w->f);
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
	struct CMUnitTest t[NROWS];
	for (size_t i = 0; i < NROWS; i++) {
		t[i].name = rows[i].name + 2; /* drop the "a_" */
		t[i].test_func = row_test;
		t[i].setup_func = row_setup;
		t[i].teardown_func = row_teardown;
		t[i].initial_state = (void *)&rows[i];
	}
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return ptlt_run_group("badinput args", t, NROWS, grp_setup, grp_teardown);
}
