/*
 * test_unlink.c - explicit unlink (spec §5.4, §5.5, §6.4) and unlink with
 * pending operations (§6.12).
 *
 * PtlMDUnlink/PtlMEUnlink never generate events. Unlinking an MD takes a
 * PTL_UNLINK ME with it; a PTL_RETAIN ME stays (without MD, skipped by
 * matching) and can get a new MD. PtlMEUnlink takes the ME's MD with it.
 * While an operation on the MD is in progress PtlMDUnlink returns
 * PTL_MD_IN_USE (PtlMEUnlink PTL_ME_IN_USE) and nothing changes.
 *
 * Whether a given unlink finds the operation still in progress is a race;
 * the pending-operation tests therefore accept both outcomes, but check the
 * consequences of each exactly: after PTL_MD_IN_USE the operation completes
 * normally and a later unlink succeeds; after PTL_OK the operation must
 * already have posted all its events (the library may not free an MD with
 * an operation in progress), or, on the target side, must never touch it.
 */
#include "scn.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const scn_row_t rows[] = {
	{ .name = "md_unlink_no_event_me_retained",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UNLINK },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_UNLINK, .ret = PTL_MD_INVALID },
		     { .op = OP_ME_UNLINK, .ret = PTL_OK } } },

	{ .name = "md_unlink_takes_unlink_me",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .unlink = PTL_UNLINK) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UNLINK },
		     { .op = OP_ME_UNLINK, .ret = PTL_ME_INVALID },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } } } },

	{ .name = "me_unlink_takes_retain_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_ME_UNLINK },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_UNLINK, .ret = PTL_MD_INVALID },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_ME_UNLINK, .ret = PTL_ME_INVALID } } },

	{ .name = "me_unlink_takes_unlink_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 2, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_ME_UNLINK },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } } } },

	{ .name = "retained_me_gets_new_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_ATTACH, .md = MD(O_PUT, INF, 32, .start_off = 32) },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 32, 16, RI, 0) } },

	{ .name = "me_with_md_refuses_second_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_ATTACH, .md = MD(O_PUT, INF, 16, .start_off = 32), .ret = PTL_ME_IN_USE },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "unlinked_put_md_handle_invalid",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UNLINK, .role = RI },
		     { .op = OP_PUT, .ret = PTL_MD_INVALID },
		     { .op = OP_PUTREGION, .len = 4, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_UNLINK, .role = RI, .ret = PTL_MD_INVALID } } },

	{ .name = "unlinked_get_md_handle_invalid",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(16, INF),
	  .steps = { { .op = OP_MD_UNLINK, .role = RG },
		     { .op = OP_GET, .ret = PTL_MD_INVALID },
		     { .op = OP_GETREGION, .len = 4, .ret = PTL_MD_INVALID },
		     { .op = OP_GETPUT, .ret = PTL_MD_INVALID } } },

	{ .name = "unlink_first_me_walk_continues",
	  .nme = 2, .me = { ME(MD(O_PUT, INF, 32)), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_ME_UNLINK, .role = 0 },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0) } },

	{ .name = "unlink_middle_me_keeps_order",
	  .nme = 3, .me = { ME(MD(O_PUT, INF, 32), .mbits = 1), ME(MD(O_PUT, INF, 32), .mbits = 2),
			    ME(MD(O_PUT, INF, 32), .mbits = 2) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_ME_UNLINK, .role = 1 },
		     { .op = OP_PUT, .mbits = 2, .ev = { I_SEND(16, 0, INF), T_PUT(2, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .mbits = 1, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT2, 0, 16, RI, 0), SPAN(RT0, 0, 16, RI, 0) } },
};

/* ---- unlink with operations pending (racy by nature: both outcomes checked) ----- */

#define BIG (4u << 20)
#define ITER 6

typedef struct {
	ptlt_env_t env;
	ptl_handle_eq_t ieq, teq;
	ptl_handle_me_t me;
	uint8_t *a, *b;
} pfx_t;

static int pfx_setup(void **state)
{
	pfx_t *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->a = malloc(BIG);
	f->b = malloc(BIG);
	if (!f->a || !f->b)
		return -1;
	f->env.ni = PTL_INVALID_HANDLE;
	*state = f;
	return 0;
}

static int pfx_teardown(void **state)
{
	pfx_t *f = *state;
	if (f) {
		if (f->env.ni != PTL_INVALID_HANDLE)
			PtlNIFini(f->env.ni);
		free(f->a);
		free(f->b);
		free(f);
	}
	return 0;
}

static void pfx_start(pfx_t *f)
{
	ptlt_ni_init(&f->env, NULL);
	ptlt_open_acl(&f->env);
	assert_rc(PtlEQAlloc(f->env.ni, 64, PTL_EQ_HANDLER_NONE, &f->ieq), PTL_OK);
	assert_rc(PtlEQAlloc(f->env.ni, 64, PTL_EQ_HANDLER_NONE, &f->teq), PTL_OK);
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	assert_rc(PtlMEAttach(f->env.ni, SCN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me), PTL_OK);
	for (size_t i = 0; i < BIG; i++) {
		f->a[i] = (uint8_t)(i * 7 + 3);
		f->b[i] = (uint8_t)(i * 13 + 1);
	}
}

static ptl_handle_md_t pfx_target_md(pfx_t *f, void *buf, unsigned opts)
{
	ptl_md_t d = { .start = buf, .length = BIG, .threshold = PTL_MD_THRESH_INF,
		       .options = opts | PTL_MD_MANAGE_REMOTE, .user_ptr = NULL, .eq_handle = f->teq };
	ptl_handle_md_t h;
	assert_rc(PtlMDAttach(f->me, d, PTL_RETAIN, &h), PTL_OK);
	return h;
}

/* Next event on eq, already queued (no waiting): must be of kind k. */
static void queued(ptl_handle_eq_t eq, ptl_event_kind_t k, const char *why)
{
	ptl_event_t ev;
	int rc = PtlEQGet(eq, &ev);
	if (rc != PTL_OK || ev.type != k)
		ptlt_fail_at(__FILE__, __LINE__, "%s: expected %s already queued, PtlEQGet gave %s (%s)", why,
			     ptlt_kind_str(k), ptlt_rc_str(rc), rc == PTL_OK ? ptlt_kind_str(ev.type) : "-");
}

/* wait for a START/END pair (END may report failure only where allowed) */
static void pair(ptl_handle_eq_t eq, ptl_event_kind_t s, ptl_handle_md_t md)
{
	expect_event(eq, s, .md_handle = PTLT_V(md), .ni_fail_type = PTLT_V(PTL_NI_OK));
	expect_event(eq, (ptl_event_kind_t)(s + 1), .md_handle = PTLT_V(md), .ni_fail_type = PTLT_V(PTL_NI_OK));
}

static void unlink_put_md_while_sending(void **state)
{
	pfx_t *f = *state;
	int in_use = 0;
	pfx_start(f);
	ptl_handle_md_t tmd = pfx_target_md(f, f->b, PTL_MD_OP_PUT);
	for (int it = 0; it < ITER; it++) {
		ptl_handle_md_t imd = ptlt_bind(&f->env, f->a, BIG, PTL_MD_THRESH_INF, 0, f->ieq, PTL_RETAIN);
		assert_rc(PtlPut(imd, PTL_NO_ACK_REQ, f->env.self, SCN_PT, 0, 0, 0, it), PTL_OK);
		int rc = PtlMDUnlink(imd);
		if (rc == PTL_MD_IN_USE) {
			in_use++;
			pair(f->ieq, PTL_EVENT_SEND_START, imd);
			assert_rc(PtlMDUnlink(imd), PTL_OK);
		} else {
			assert_rc(rc, PTL_OK);
			queued(f->ieq, PTL_EVENT_SEND_START, "put MD unlinked with PTL_OK");
			queued(f->ieq, PTL_EVENT_SEND_END, "put MD unlinked with PTL_OK");
		}
		pair(f->teq, PTL_EVENT_PUT_START, tmd);
		ptl_handle_eq_t eqs[2] = { f->ieq, f->teq };
		expect_eqs_empty(eqs, 2);
		assert_rc(PtlMDUnlink(imd), PTL_MD_INVALID);
		assert_true(memcmp(f->a, f->b, BIG) == 0);
		memset(f->b, 0, BIG);
	}
	print_message("put MD busy at unlink in %d of %d tries\n", in_use, ITER);
}

static void unlink_get_md_while_reply_pending(void **state)
{
	pfx_t *f = *state;
	int in_use = 0;
	pfx_start(f);
	ptl_handle_md_t tmd = pfx_target_md(f, f->a, PTL_MD_OP_GET);
	for (int it = 0; it < ITER; it++) {
		memset(f->b, 0, BIG);
		ptl_handle_md_t gmd = ptlt_bind(&f->env, f->b, BIG, PTL_MD_THRESH_INF, 0, f->ieq, PTL_RETAIN);
		assert_rc(PtlGet(gmd, f->env.self, SCN_PT, 0, 0, 0), PTL_OK);
		int rc = PtlMDUnlink(gmd);
		if (rc == PTL_MD_IN_USE) {
			in_use++;
			pair(f->ieq, PTL_EVENT_REPLY_START, gmd);
			assert_rc(PtlMDUnlink(gmd), PTL_OK);
		} else {
			assert_rc(rc, PTL_OK);
			queued(f->ieq, PTL_EVENT_REPLY_START, "get MD unlinked with PTL_OK");
			queued(f->ieq, PTL_EVENT_REPLY_END, "get MD unlinked with PTL_OK");
		}
		pair(f->teq, PTL_EVENT_GET_START, tmd);
		ptl_handle_eq_t eqs[2] = { f->ieq, f->teq };
		expect_eqs_empty(eqs, 2);
		assert_true(memcmp(f->a, f->b, BIG) == 0);
	}
	print_message("get MD busy at unlink in %d of %d tries\n", in_use, ITER);
}

/*
 * Target side: the put may not have arrived (then it finds no MD and is
 * dropped), may be in progress (PTL_MD_IN_USE / PTL_ME_IN_USE), or may be done
 * (its events are queued).
 */
static void target_unlink_race(void **state, bool me_unlink)
{
	pfx_t *f = *state;
	int busy = 0, early = 0, late = 0;
	pfx_start(f);
	ptl_handle_md_t imd = ptlt_bind(&f->env, f->a, BIG, PTL_MD_THRESH_INF, 0, f->ieq, PTL_RETAIN);
	for (int it = 0; it < ITER; it++) {
		if (me_unlink && it > 0) {
			ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
			assert_rc(PtlMEAttach(f->env.ni, SCN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me),
				  PTL_OK);
		}
		memset(f->b, 0, BIG);
		ptl_handle_md_t tmd = pfx_target_md(f, f->b, PTL_MD_OP_PUT);
		ptl_sr_value_t d0 = ptlt_drop_count(f->env.ni);
		assert_rc(PtlPut(imd, PTL_NO_ACK_REQ, f->env.self, SCN_PT, 0, 0, 0, it), PTL_OK);
		int rc = me_unlink ? PtlMEUnlink(f->me) : PtlMDUnlink(tmd);
		if (rc == (me_unlink ? PTL_ME_IN_USE : PTL_MD_IN_USE)) {
			busy++;
			pair(f->teq, PTL_EVENT_PUT_START, tmd);
			assert_rc(me_unlink ? PtlMEUnlink(f->me) : PtlMDUnlink(tmd), PTL_OK);
			assert_true(memcmp(f->a, f->b, BIG) == 0);
		} else {
			assert_rc(rc, PTL_OK);
			ptl_event_t ev;
			rc = PtlEQGet(f->teq, &ev);
			if (rc == PTL_EQ_EMPTY) {
				/* not arrived yet: it must be dropped and never touch the MD */
				late++;
				ptl_handle_eq_t teq = f->teq;
				ptlt_expect_drops_at(__FILE__, __LINE__, &f->env, &teq, 1, d0, 1);
				expect_eq_empty(f->teq);
			} else {
				early++;
				if (rc != PTL_OK || ev.type != PTL_EVENT_PUT_START)
					ptlt_fail_at(__FILE__, __LINE__, "MD unlinked with PTL_OK while the put "
						     "had only partly been reported (%s)", ptlt_rc_str(rc));
				queued(f->teq, PTL_EVENT_PUT_END, "target MD unlinked with PTL_OK");
				assert_true(memcmp(f->a, f->b, BIG) == 0);
			}
		}
		/* the send completes either way (a drop may be reported in SEND_END) */
		expect_event(f->ieq, PTL_EVENT_SEND_START, .md_handle = PTLT_V(imd));
		ptl_event_t se = expect_event(f->ieq, PTL_EVENT_SEND_END, .md_handle = PTLT_V(imd));
		if (se.ni_fail_type != PTL_NI_OK && se.ni_fail_type != PTL_NI_DROPPED)
			ptlt_fail_at(__FILE__, __LINE__, "SEND_END ni_fail_type %u", (unsigned)se.ni_fail_type);
		ptl_handle_eq_t eqs[2] = { f->ieq, f->teq };
		expect_eqs_empty(eqs, 2);
		if (me_unlink)
			assert_rc(PtlMDUnlink(tmd), PTL_MD_INVALID); /* went with the ME */
	}
	print_message("target %s: busy %d, done before unlink %d, arrived after unlink %d\n",
		      me_unlink ? "ME" : "MD", busy, early, late);
}

static void unlink_target_md_while_receiving(void **state) { target_unlink_race(state, false); }
static void unlink_target_me_while_receiving(void **state) { target_unlink_race(state, true); }

#define T(fn) cmocka_unit_test_setup_teardown(fn, pfx_setup, pfx_teardown)
static const struct CMUnitTest extra[] = {
	T(unlink_put_md_while_sending),
	T(unlink_get_md_while_reply_pending),
	T(unlink_target_md_while_receiving),
	T(unlink_target_me_while_receiving),
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "unlink (spec 6.4, 6.12)", rows, sizeof(rows) / sizeof(rows[0]), extra,
			sizeof(extra) / sizeof(extra[0]));
}
