/*
 * test_limits.c - resource limits (spec §5.2, §7): PtlNIInit's desired/actual
 * limits; object counts past max_mes / max_mds / max_eqs (PTL_NO_SPACE); a
 * match list past max_me_list (PTL_ME_LIST_TOO_LONG); PtlMEAttachAny on a full
 * portal table (PTL_PT_FULL); iovec MDs past max_md_iovecs and PtlGetPut put
 * MDs past max_getput_md (PTL_MD_ILLEGAL). Each test lowers the limit it tests
 * through `desired`, fills up to exactly `actual`, checks the refusal and that
 * freeing makes room again, and ends with a put to self that must still work.
 */
#include "bfx.h"

#include <limits.h>
#include <stdio.h>

static const ptl_process_id_t ANYID = { PTL_NID_ANY, PTL_PID_ANY };

/* desired limits: INT_MAX (= "as much as you have") except the ones given */
static ptl_ni_limits_t desired(void)
{
	ptl_ni_limits_t d = { INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX };
	return d;
}

/* A put to self with its own objects (2 EQs, 1 ME, 2 MDs), all freed after. */
static void put_works(ptlt_env_t *env, ptl_pt_index_t pt)
{
	uint8_t src[16], dst[16] = { 0 };
	ptl_handle_eq_t ieq, teq;
	ptl_handle_me_t me;
	ptl_handle_md_t imd, tmd;
	for (int i = 0; i < 16; i++)
		src[i] = (uint8_t)(i + 100);
	assert_rc(PtlEQAlloc(env->ni, 8, PTL_EQ_HANDLER_NONE, &ieq), PTL_OK);
	assert_rc(PtlEQAlloc(env->ni, 8, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	assert_rc(PtlMEAttach(env->ni, pt, ANYID, 0x77, 0, PTL_RETAIN, PTL_INS_BEFORE, &me), PTL_OK);
	assert_rc(PtlMDAttach(me, bfx_md(dst, 16, PTL_MD_OP_PUT, teq), PTL_RETAIN, &tmd), PTL_OK);
	assert_rc(PtlMDBind(env->ni, bfx_md(src, 16, 0, ieq), PTL_RETAIN, &imd), PTL_OK);
	assert_rc(PtlPut(imd, PTL_ACK_REQ, env->self, pt, 0, 0x77, 0, 0), PTL_OK);
	expect_event(ieq, PTL_EVENT_SEND_START);
	expect_event(ieq, PTL_EVENT_SEND_END);
	expect_event(ieq, PTL_EVENT_ACK, .mlength = PTLT_V(16));
	expect_event(teq, PTL_EVENT_PUT_START, .md_handle = PTLT_V(tmd));
	expect_event(teq, PTL_EVENT_PUT_END, .md_handle = PTLT_V(tmd));
	assert_memory_equal(src, dst, 16);
	assert_rc(PtlMEUnlink(me), PTL_OK);
	assert_rc(PtlMDUnlink(imd), PTL_OK);
	assert_rc(PtlEQFree(ieq), PTL_OK);
	assert_rc(PtlEQFree(teq), PTL_OK);
}

static ptlt_env_t env;

static int ni_setup(void **state)
{
	(void)state;
	env.ni = PTL_INVALID_HANDLE;
	return 0;
}

static int ni_teardown(void **state)
{
	(void)state;
	ptlt_ni_release(&env);
	return 0;
}

static void start(ptl_ni_limits_t *d)
{
	ptlt_ni_init(&env, d);
	ptlt_open_acl(&env);
}

/* ---- actual limits ------------------------------------------------------------- */

static void actual_limits_sane(void **state)
{
	(void)state;
	start(NULL);
	const ptl_ni_limits_t *a = &env.limits;
	if (a->max_mes < 1 || a->max_mds < 2 || a->max_eqs < 1 || a->max_ac_index < 0 ||
	    a->max_pt_index < 1 || a->max_md_iovecs < 1 || a->max_me_list < 1 || a->max_getput_md < 1)
		fail_msg("implausible actual limits: mes %d mds %d eqs %d ac %d pt %d iov %d list %d getput %d",
			 a->max_mes, a->max_mds, a->max_eqs, a->max_ac_index, a->max_pt_index, a->max_md_iovecs,
			 a->max_me_list, a->max_getput_md);
	/* the largest indexes are usable */
	ptl_handle_me_t me;
	assert_rc(PtlMEAttach(env.ni, (ptl_pt_index_t)a->max_pt_index, ANYID, 0, 0, PTL_RETAIN,
			      PTL_INS_AFTER, &me), PTL_OK);
	assert_rc(PtlMEUnlink(me), PTL_OK);
	assert_rc(PtlACEntry(env.ni, (ptl_ac_index_t)a->max_ac_index, ANYID, PTL_UID_ANY, PTL_JID_ANY,
			     PTL_PT_INDEX_ANY), PTL_OK);
	put_works(&env, (ptl_pt_index_t)a->max_pt_index);
}

static void actual_never_exceeds_desired(void **state)
{
	(void)state;
	ptl_ni_limits_t d = { 40, 41, 9, 3, 5, 2, 6, 8 };
	start(&d);
	const ptl_ni_limits_t *a = &env.limits;
	if (a->max_mes > 40 || a->max_mds > 41 || a->max_eqs > 9 || a->max_ac_index > 3 ||
	    a->max_pt_index > 5 || a->max_md_iovecs > 2 || a->max_me_list > 6 || a->max_getput_md > 8)
		fail_msg("actual exceeds desired: mes %d mds %d eqs %d ac %d pt %d iov %d list %d getput %d",
			 a->max_mes, a->max_mds, a->max_eqs, a->max_ac_index, a->max_pt_index, a->max_md_iovecs,
			 a->max_me_list, a->max_getput_md);
	/* and the NI enforces what it reported */
	ptl_handle_me_t me;
	assert_rc(PtlMEAttach(env.ni, (ptl_pt_index_t)a->max_pt_index + 1, ANYID, 0, 0, PTL_RETAIN,
			      PTL_INS_AFTER, &me), PTL_PT_INDEX_INVALID);
	assert_rc(PtlACEntry(env.ni, (ptl_ac_index_t)a->max_ac_index + 1, ANYID, PTL_UID_ANY, PTL_JID_ANY,
			     PTL_PT_INDEX_ANY), PTL_AC_INDEX_INVALID);
	put_works(&env, (ptl_pt_index_t)a->max_pt_index);
}

/* A desired member of 0 or less is no preference (docs/architecture.md, "Desired
 * limits"): the library's value, as for a NULL desired. Clients zero the struct and set
 * the members they care about: a zeroed max_pt_index must not mean "portal 0 only". */
static void desired_zero_is_no_preference(void **state)
{
	(void)state;
	start(NULL);
	const ptl_ni_limits_t lib = env.limits;
	ptlt_ni_release(&env);
	ptl_ni_limits_t d = { 0, -1, 0, 0, -5, 0, 0, 0 };
	d.max_eqs = 7;
	start(&d);
	const ptl_ni_limits_t *a = &env.limits;
	assert_int_equal(a->max_eqs, 7);
	assert_int_equal(a->max_mes, lib.max_mes);
	assert_int_equal(a->max_mds, lib.max_mds);
	assert_int_equal(a->max_ac_index, lib.max_ac_index);
	assert_int_equal(a->max_pt_index, lib.max_pt_index);
	assert_int_equal(a->max_md_iovecs, lib.max_md_iovecs);
	assert_int_equal(a->max_me_list, lib.max_me_list);
	assert_int_equal(a->max_getput_md, lib.max_getput_md);
	put_works(&env, (ptl_pt_index_t)a->max_pt_index);
}

/* ---- object counts --------------------------------------------------------------- */

static void max_mes_no_space(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_mes = 5;
	start(&d);
	int n = env.limits.max_mes;
	assert_in_range(n, 2, 5);
	ptl_handle_me_t me[5], x;
	ptl_pt_index_t pt;
	for (int i = 0; i < n; i++)
		assert_rc(PtlMEAttach(env.ni, (ptl_pt_index_t)(i % 2), ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER,
				      &me[i]), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 0, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_NO_SPACE);
	assert_rc(PtlMEInsert(me[0], ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_NO_SPACE);
	assert_rc(PtlMEAttachAny(env.ni, &pt, ANYID, 0, 0, PTL_RETAIN, &x), PTL_NO_SPACE);
	assert_rc(PtlMEUnlink(me[n - 1]), PTL_OK);
	assert_rc(PtlMEInsert(me[0], ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 0, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me[n - 1]), PTL_NO_SPACE);
	for (int i = 0; i < n - 1; i++)
		assert_rc(PtlMEUnlink(me[i]), PTL_OK);
	assert_rc(PtlMEUnlink(x), PTL_OK);
	put_works(&env, 3);
}

static void max_mds_no_space(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_mds = 4;
	start(&d);
	int n = env.limits.max_mds;
	assert_in_range(n, 2, 4);
	uint8_t buf[16];
	ptl_handle_md_t md[4], x;
	ptl_handle_me_t me;
	for (int i = 0; i < n; i++)
		assert_rc(PtlMDBind(env.ni, bfx_md(buf, 16, 0, PTL_EQ_NONE), PTL_RETAIN, &md[i]), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(buf, 16, 0, PTL_EQ_NONE), PTL_RETAIN, &x), PTL_NO_SPACE);
	assert_rc(PtlMEAttach(env.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	assert_rc(PtlMDAttach(me, bfx_md(buf, 16, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &x), PTL_NO_SPACE);
	/* the failed attach left the ME without MD */
	assert_rc(PtlMDUnlink(md[0]), PTL_OK);
	assert_rc(PtlMDAttach(me, bfx_md(buf, 16, PTL_MD_OP_PUT, PTL_EQ_NONE), PTL_RETAIN, &x), PTL_OK);
	assert_rc(PtlMEUnlink(me), PTL_OK); /* takes x with it */
	for (int i = 1; i < n; i++)
		assert_rc(PtlMDUnlink(md[i]), PTL_OK);
	put_works(&env, 3);
}

/* An MD that unlinks itself after use gives its slot back. */
static void max_mds_auto_unlink_frees_slot(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_mds = 2;
	start(&d);
	if (env.limits.max_mds != 2)
		skip();
	uint8_t src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, dst[8] = { 0 };
	ptl_handle_eq_t eq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd, imd, x;
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &eq), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t t = bfx_md(dst, 8, PTL_MD_OP_PUT, PTL_EQ_NONE);
	t.threshold = 1;
	assert_rc(PtlMDAttach(me, t, PTL_UNLINK, &tmd), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(src, 8, 0, eq), PTL_RETAIN, &imd), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(src, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &x), PTL_NO_SPACE);
	assert_rc(PtlPut(imd, PTL_ACK_REQ, env.self, 1, 0, 0, 0, 0), PTL_OK);
	expect_event(eq, PTL_EVENT_SEND_START);
	expect_event(eq, PTL_EVENT_SEND_END);
	expect_event(eq, PTL_EVENT_ACK);
	/* the target MD is unlinked once its put is done (allow the engine a moment) */
	int rc;
	uint64_t t0 = ptlt_now_ms();
	while ((rc = PtlMDBind(env.ni, bfx_md(src, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &x)) == PTL_NO_SPACE &&
	       ptlt_now_ms() - t0 < PTLT_WAIT_MS)
		PtlProgress(env.ni, 1);
	assert_rc(rc, PTL_OK);
	assert_memory_equal(src, dst, 8);
	assert_rc(PtlMDUnlink(x), PTL_OK);
	assert_rc(PtlMDUnlink(imd), PTL_OK);
	assert_rc(PtlMEUnlink(me), PTL_OK);
	assert_rc(PtlEQFree(eq), PTL_OK);
	put_works(&env, 3);
}

static void max_eqs_no_space(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_eqs = 3;
	start(&d);
	int n = env.limits.max_eqs;
	assert_in_range(n, 2, 3);
	ptl_handle_eq_t eq[3], x;
	for (int i = 0; i < n; i++)
		assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &eq[i]), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &x), PTL_NO_SPACE);
	/* count 0 allocates nothing: PTL_EQ_NONE even at the limit */
	x = 0;
	assert_rc(PtlEQAlloc(env.ni, 0, PTL_EQ_HANDLER_NONE, &x), PTL_OK);
	assert_int_equal(x, PTL_EQ_NONE);
	assert_rc(PtlEQFree(eq[0]), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &eq[0]), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 4, PTL_EQ_HANDLER_NONE, &x), PTL_NO_SPACE);
	for (int i = 0; i < n; i++)
		assert_rc(PtlEQFree(eq[i]), PTL_OK);
	put_works(&env, 3);
}

static void eq_huge_count_no_space(void **state)
{
	(void)state;
	start(NULL);
	ptl_handle_eq_t x;
	assert_rc(PtlEQAlloc(env.ni, (ptl_size_t)1 << 62, PTL_EQ_HANDLER_NONE, &x), PTL_NO_SPACE);
	put_works(&env, 3);
}

/* ---- match list length -------------------------------------------------------------- */

static void max_me_list_too_long(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_me_list = 4;
	start(&d);
	int n = env.limits.max_me_list;
	assert_in_range(n, 2, 4);
	ptl_handle_me_t me[4], x;
	ptl_pt_index_t pt;
	for (int i = 0; i < n; i++)
		assert_rc(PtlMEAttach(env.ni, 3, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me[i]), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 3, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_ME_LIST_TOO_LONG);
	assert_rc(PtlMEAttach(env.ni, 3, ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, &x), PTL_ME_LIST_TOO_LONG);
	assert_rc(PtlMEInsert(me[0], ANYID, 0, 0, PTL_RETAIN, PTL_INS_BEFORE, &x), PTL_ME_LIST_TOO_LONG);
	assert_rc(PtlMEInsert(me[n - 1], ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_ME_LIST_TOO_LONG);
	/* other portals are not affected */
	assert_rc(PtlMEAttach(env.ni, 4, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_OK);
	assert_rc(PtlMEUnlink(x), PTL_OK);
	assert_rc(PtlMEAttachAny(env.ni, &pt, ANYID, 0, 0, PTL_RETAIN, &x), PTL_OK);
	assert_int_not_equal(pt, 3);
	assert_rc(PtlMEUnlink(x), PTL_OK);
	/* room again after an unlink */
	assert_rc(PtlMEUnlink(me[0]), PTL_OK);
	assert_rc(PtlMEInsert(me[n - 1], ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me[0]), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 3, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_ME_LIST_TOO_LONG);
	for (int i = 0; i < n; i++)
		assert_rc(PtlMEUnlink(me[i]), PTL_OK);
	put_works(&env, 3);
}

/* ---- portal table full ------------------------------------------------------------- */

static void attach_any_pt_full(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_pt_index = 7;
	start(&d);
	int np = env.limits.max_pt_index + 1;
	assert_in_range(np, 2, 8);
	if (env.limits.max_mes < np + 2)
		skip();
	ptl_handle_me_t me[8], x;
	ptl_pt_index_t pt = PTL_PT_INDEX_ANY;
	bool used[8] = { false };
	/* the first AttachAny takes some unused index; fill the rest explicitly */
	assert_rc(PtlMEAttachAny(env.ni, &pt, ANYID, 0, 0, PTL_RETAIN, &me[0]), PTL_OK);
	assert_in_range(pt, 0, (unsigned)np - 1);
	used[pt] = true;
	for (int i = 0, k = 1; i < np; i++)
		if (!used[i])
			assert_rc(PtlMEAttach(env.ni, (ptl_pt_index_t)i, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER,
					      &me[k++]), PTL_OK);
	assert_rc(PtlMEAttachAny(env.ni, &pt, ANYID, 0, 0, PTL_RETAIN, &x), PTL_PT_FULL);
	/* attaching to a used portal is still fine */
	assert_rc(PtlMEAttach(env.ni, 0, ANYID, 0x77, 0, PTL_RETAIN, PTL_INS_BEFORE, &x), PTL_OK);
	assert_rc(PtlMEUnlink(x), PTL_OK);
	put_works(&env, (ptl_pt_index_t)(np - 1));
}

/* ---- iovec MDs ---------------------------------------------------------------------- */

static void iovec_count_past_max_illegal(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_md_iovecs = 4;
	start(&d);
	int n = env.limits.max_md_iovecs;
	assert_in_range(n, 1, 4);
	static uint8_t buf[5][8];
	ptl_md_iovec_t iov[5];
	for (int i = 0; i < 5; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = 8;
	}
	ptl_md_t md = bfx_md(iov, (ptl_size_t)n, PTL_MD_IOVEC, PTL_EQ_NONE);
	ptl_handle_md_t h;
	ptl_handle_me_t me;
	assert_rc(PtlMDBind(env.ni, md, PTL_RETAIN, &h), PTL_OK);
	assert_rc(PtlMDUnlink(h), PTL_OK);
	md.length = (ptl_size_t)n + 1;
	assert_rc(PtlMDBind(env.ni, md, PTL_RETAIN, &h), PTL_MD_ILLEGAL);
	assert_rc(PtlMEAttach(env.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	md.options |= PTL_MD_OP_PUT;
	assert_rc(PtlMDAttach(me, md, PTL_RETAIN, &h), PTL_MD_ILLEGAL);
	md.length = (ptl_size_t)n;
	assert_rc(PtlMDAttach(me, md, PTL_RETAIN, &h), PTL_OK);
	/* PtlMDUpdate to too many entries is refused and leaves the MD alone */
	ptl_md_t big = md;
	big.length = (ptl_size_t)n + 1;
	assert_rc(PtlMDUpdate(h, NULL, &big, PTL_EQ_NONE), PTL_MD_ILLEGAL);
	assert_rc(PtlMEUnlink(me), PTL_OK);
	put_works(&env, 3);
}

/* ---- PtlGetPut put MD size ----------------------------------------------------------- */

static void getput_put_md_at_and_past_max(void **state)
{
	(void)state;
	ptl_ni_limits_t d = desired();
	d.max_getput_md = 16;
	start(&d);
	int n = env.limits.max_getput_md;
	assert_in_range(n, 1, 16);
	uint8_t put[17], got[17] = { 0 }, tgt[32];
	for (int i = 0; i < 17; i++)
		put[i] = (uint8_t)(0xc0 + i);
	for (int i = 0; i < 32; i++)
		tgt[i] = (uint8_t)i;
	ptl_handle_eq_t eq, teq, geq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd, pmd, gmd, big;
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &eq), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &geq), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	assert_rc(PtlMEAttach(env.ni, 1, ANYID, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	assert_rc(PtlMDAttach(me, bfx_md(tgt, 32, PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, teq),
			      PTL_RETAIN, &tmd), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(got, (ptl_size_t)n, 0, geq), PTL_RETAIN, &gmd), PTL_OK);
	assert_rc(PtlMDBind(env.ni, bfx_md(put, (ptl_size_t)n + 1, 0, eq), PTL_RETAIN, &big), PTL_OK);
	assert_rc(PtlGetPut(gmd, big, env.self, 1, 0, 0, 0, 0), PTL_MD_ILLEGAL);
	ptl_handle_eq_t all[3] = { eq, teq, geq };
	expect_eqs_empty(all, 3);
	assert_rc(PtlMDBind(env.ni, bfx_md(put, (ptl_size_t)n, 0, eq), PTL_RETAIN, &pmd), PTL_OK);
	assert_rc(PtlGetPut(gmd, pmd, env.self, 1, 0, 0, 0, 0), PTL_OK);
	expect_event(eq, PTL_EVENT_SEND_START, .mlength = PTLT_V(n));
	expect_event(eq, PTL_EVENT_SEND_END, .mlength = PTLT_V(n));
	expect_event(teq, PTL_EVENT_GETPUT_START, .mlength = PTLT_V(n));
	expect_event(teq, PTL_EVENT_GETPUT_END, .mlength = PTLT_V(n));
	expect_event(geq, PTL_EVENT_REPLY_START, .mlength = PTLT_V(n));
	expect_event(geq, PTL_EVENT_REPLY_END, .mlength = PTLT_V(n));
	expect_eqs_empty(all, 3);
	uint8_t want_got[17], want_tgt[32];
	for (int i = 0; i < 32; i++)
		want_tgt[i] = (uint8_t)i;
	memcpy(want_got, want_tgt, (size_t)n);
	memcpy(want_tgt, put, (size_t)n);
	assert_memory_equal(tgt, want_tgt, 32);
	assert_memory_equal(got, want_got, (size_t)n);
	assert_rc(PtlMDUnlink(pmd), PTL_OK);
	assert_rc(PtlMDUnlink(big), PTL_OK);
	assert_rc(PtlMDUnlink(gmd), PTL_OK);
	assert_rc(PtlMEUnlink(me), PTL_OK);
	assert_rc(PtlEQFree(eq), PTL_OK);
	assert_rc(PtlEQFree(teq), PTL_OK);
	assert_rc(PtlEQFree(geq), PTL_OK);
	put_works(&env, 3);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, ni_setup, ni_teardown)
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(actual_limits_sane),
		T(actual_never_exceeds_desired),
		T(desired_zero_is_no_preference),
		T(max_mes_no_space),
		T(max_mds_no_space),
		T(max_mds_auto_unlink_frees_slot),
		T(max_eqs_no_space),
		T(eq_huge_count_no_space),
		T(max_me_list_too_long),
		T(attach_any_pt_full),
		T(iovec_count_past_max_illegal),
		T(getput_put_md_at_and_past_max),
	};
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	int n;
	if (PtlInit(&n) != PTL_OK)
		return 1;
	int rc = ptlt_run_group("badinput limits", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
	PtlFini();
	return rc;
}
