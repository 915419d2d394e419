/*
 * test_getput.c - spec §6.13: PtlGetPut (atomic swap).
 *
 * The request carries the put MD's contents (rlength = its length); it is
 * matched like a put/get and needs an MD with OP_GET and OP_PUT; offsets and
 * truncation follow §6.3. At the target the mlength bytes at the offset are
 * replaced by the first mlength incoming bytes and the old bytes come back in
 * the reply, deposited at offset 0 of the get MD. Events: put MD SEND_*, get
 * MD REPLY_*, target GETPUT_* (hdr_data echoed); no ACK.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scn.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const scn_row_t rows[] = {
	{ .name = "swap_at_remote_offset",
	  .nme = 1, .me = { ME(MD(O_PG | O_MR, INF, 32), .mbits = MB) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .roff = 8, .mbits = MB, .hdr = HDR,
		       .ev = { I_SEND(8, 8, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 8, INF) } } },
	  .spans = { SPAN(RT0, 8, 8, RI, 0), SPAN(RG, 0, 8, RT0, 8) } },

	{ .name = "swap_local_offset_advances",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = 1,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 0, INF) } },
		     { .op = OP_GETPUT, .hdr = 2,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 8, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RT0, 8, 8, RI, 0), SPAN(RG, 0, 8, RT0, 8) } },

	{ .name = "swap_truncated",
	  .nme = 1, .me = { ME(MD(O_PG | O_MR | O_TR, INF, 12)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .roff = 8, .hdr = HDR,
		       .ev = { I_SEND(8, 8, INF), G_REPLY(4, 4, 0, INF), T_GETPUT(0, 8, 4, 8, INF) } } },
	  .spans = { SPAN(RT0, 8, 4, RI, 0), SPAN(RG, 0, 4, RT0, 8) } },

	{ .name = "swap_reply_into_larger_get_md",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(24, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	{ .name = "swap_needs_op_put",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR, .drops = 1, .ev = { I_SEND(8, 0, INF) } } } },

	{ .name = "swap_needs_op_get",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR, .drops = 1, .ev = { I_SEND(8, 0, INF) } } } },

	{ .name = "swap_walks_to_md_with_both_ops",
	  .nme = 2, .me = { ME(MD(O_PUT, INF, 32)), ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(1, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT1, 0, 8, RI, 0), SPAN(RG, 0, 8, RT1, 0) } },

	{ .name = "swap_no_ack_ever",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, 2), .gmd = GMD(8, 2),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, 1), G_REPLY(8, 8, 0, 1), T_GETPUT(0, 8, 8, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 1 } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	{ .name = "swap_target_threshold_unlink",
	  .nme = 1, .me = { ME(MD(O_PG, 1, 32, .unlink = PTL_UNLINK), .unlink = PTL_UNLINK) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 0, 0),
			       TEV(0, UNLINK, 8, 8, 0, 0) } },
		     { .op = OP_ME_UNLINK, .ret = PTL_ME_INVALID } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	{ .name = "swap_zero_length_put_md",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(0, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(0, 0, INF), G_REPLY(0, 0, 0, INF), T_GETPUT(0, 0, 0, 0, INF) } } } },
};

/* hand-written tests share this NI; the teardown closes it even after a failure */
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

/* ---- one MD as both get and put MD (REF getput_test does this) ------------------- */

static void swap_same_md_for_get_and_put(void **state)
{
	(void)state;
	uint8_t mine[8], target[32], want_mine[8], want_target[32];
	for (int i = 0; i < 8; i++)
		mine[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 32; i++)
		target[i] = (uint8_t)i;
	memcpy(want_target, target, 32);
	memcpy(want_target + 8, mine, 8);
	memcpy(want_mine, target + 8, 8);

	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	ptl_handle_eq_t eq, teq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &eq), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 16, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	assert_rc(PtlMEAttach(env.ni, SCN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t d = { .start = target, .length = 32, .threshold = PTL_MD_THRESH_INF,
		       .options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, .eq_handle = teq };
	assert_rc(PtlMDAttach(me, d, PTL_RETAIN, &tmd), PTL_OK);
	ptl_handle_md_t md = ptlt_bind(&env, mine, 8, 2, 0, eq, PTL_UNLINK);

	assert_rc(PtlGetPut(md, md, env.self, SCN_PT, 0, 0, 8, 77), PTL_OK);
	expect_event(teq, PTL_EVENT_GETPUT_START, .mlength = PTLT_V(8), .offset = PTLT_V(8), .hdr_data = PTLT_V(77));
	expect_event(teq, PTL_EVENT_GETPUT_END, .mlength = PTLT_V(8), .offset = PTLT_V(8));
	/* SEND_* and REPLY_* may interleave on the shared EQ; START precedes END per pair */
	int seen[PTL_EVENT_UNLINK + 1] = { 0 };
	for (int i = 0; i < 5; i++) {
		ptl_event_t ev;
		int rc = ptlt_wait_event(eq, &ev, PTLT_WAIT_MS);
		if (rc != PTL_OK)
			ptlt_fail_at(__FILE__, __LINE__, "event %d of 5: %s", i, ptlt_rc_str(rc));
		assert_int_equal(ev.md_handle, md);
		assert_in_range(ev.type, PTL_EVENT_REPLY_START, PTL_EVENT_UNLINK);
		if (ev.type == PTL_EVENT_ACK)
			fail_msg("PtlGetPut produced an ACK");
		if (ev.type == PTL_EVENT_REPLY_END && !seen[PTL_EVENT_REPLY_START])
			fail_msg("REPLY_END before REPLY_START");
		if (ev.type == PTL_EVENT_SEND_END && !seen[PTL_EVENT_SEND_START])
			fail_msg("SEND_END before SEND_START");
		if (ev.type == PTL_EVENT_UNLINK && i != 4)
			fail_msg("UNLINK before the last END event");
		seen[ev.type]++;
	}
	assert_int_equal(seen[PTL_EVENT_SEND_START], 1);
	assert_int_equal(seen[PTL_EVENT_SEND_END], 1);
	assert_int_equal(seen[PTL_EVENT_REPLY_START], 1);
	assert_int_equal(seen[PTL_EVENT_REPLY_END], 1);
	assert_int_equal(seen[PTL_EVENT_UNLINK], 1);
	expect_eq_empty(eq);
	expect_eq_empty(teq);
	/* the request carried the MD's contents as they were at the call */
	assert_memory_equal(target, want_target, 32);
	assert_memory_equal(mine, want_mine, 8);
}

/* ---- atomicity: concurrent swaps on one word lose and duplicate nothing ----------- */

#define NTHR 4
#define NSWAP 150

struct swapper {
	ptl_handle_ni_t ni;
	ptl_process_id_t self;
	int id;
	uint64_t got[NSWAP];
	char err[160];
};

static int wait_kind(ptl_handle_eq_t eq, ptl_event_kind_t k, struct swapper *s)
{
	ptl_event_t ev;
	int rc = ptlt_wait_event(eq, &ev, PTLT_WAIT_MS);
	if (rc != PTL_OK || ev.type != k || ev.ni_fail_type != PTL_NI_OK) {
		snprintf(s->err, sizeof(s->err), "thread %d: wanted %s, got rc %s kind %s fail %u", s->id,
			 ptlt_kind_str(k), ptlt_rc_str(rc), rc == PTL_OK ? ptlt_kind_str(ev.type) : "-",
			 (unsigned)ev.ni_fail_type);
		return -1;
	}
	return 0;
}

static void *swapper_main(void *p)
{
	struct swapper *s = p;
	ptl_handle_eq_t peq, geq;
	ptl_handle_md_t pmd, gmd;
	uint64_t put_word = 0, get_word = 0;
	if (PtlEQAlloc(s->ni, 8, PTL_EQ_HANDLER_NONE, &peq) != PTL_OK ||
	    PtlEQAlloc(s->ni, 8, PTL_EQ_HANDLER_NONE, &geq) != PTL_OK) {
		snprintf(s->err, sizeof(s->err), "thread %d: PtlEQAlloc failed", s->id);
		return NULL;
	}
	ptl_md_t pd = { .start = &put_word, .length = 8, .threshold = PTL_MD_THRESH_INF, .eq_handle = peq };
	ptl_md_t gd = { .start = &get_word, .length = 8, .threshold = PTL_MD_THRESH_INF, .eq_handle = geq };
	if (PtlMDBind(s->ni, pd, PTL_RETAIN, &pmd) != PTL_OK || PtlMDBind(s->ni, gd, PTL_RETAIN, &gmd) != PTL_OK) {
		snprintf(s->err, sizeof(s->err), "thread %d: PtlMDBind failed", s->id);
		return NULL;
	}
	for (int k = 0; k < NSWAP; k++) {
		put_word = ((uint64_t)(s->id + 1) << 32) | (uint64_t)(k + 1);
		get_word = 0;
		int rc = PtlGetPut(gmd, pmd, s->self, SCN_PT, 0, 0, 0, 0);
		if (rc != PTL_OK) {
			snprintf(s->err, sizeof(s->err), "thread %d: PtlGetPut %s", s->id, ptlt_rc_str(rc));
			return NULL;
		}
		if (wait_kind(peq, PTL_EVENT_SEND_START, s) || wait_kind(peq, PTL_EVENT_SEND_END, s) ||
		    wait_kind(geq, PTL_EVENT_REPLY_START, s) || wait_kind(geq, PTL_EVENT_REPLY_END, s))
			return NULL;
		s->got[k] = get_word;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void swap_is_atomic_under_concurrency(void **state)
{
	(void)state;
	static struct swapper sw[NTHR];
	pthread_t th[NTHR];
	uint64_t word = 0xfeedull; /* the initial token */
	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	assert_rc(PtlMEAttach(env.ni, SCN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t d = { .start = &word, .length = 8, .threshold = PTL_MD_THRESH_INF,
		       .options = PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, .eq_handle = PTL_EQ_NONE };
	assert_rc(PtlMDAttach(me, d, PTL_RETAIN, &tmd), PTL_OK);
	for (int i = 0; i < NTHR; i++) {
		memset(&sw[i], 0, sizeof(sw[i]));
		sw[i].ni = env.ni;
		sw[i].self = env.self;
		sw[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, swapper_main, &sw[i]), 0);
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NTHR; i++)
		if (sw[i].err[0])
			fail_msg("%s", sw[i].err);
	/* conservation: tokens put in + the initial one == tokens got back + the final one */
	static uint64_t in[NTHR * NSWAP + 1], out[NTHR * NSWAP + 1];
	size_t n = 0;
	for (int i = 0; i < NTHR; i++)
		for (int k = 0; k < NSWAP; k++) {
			in[n] = ((uint64_t)(i + 1) << 32) | (uint64_t)(k + 1);
			out[n] = sw[i].got[k];
			n++;
		}
	in[n] = 0xfeedull;
	out[n] = word;
	n++;
	qsort(in, n, sizeof(in[0]), cmp_u64);
	qsort(out, n, sizeof(out[0]), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (in[i] != out[i])
			fail_msg("token multiset differs at %zu: put in %#" PRIx64 ", got back %#" PRIx64
				 " (a swap was lost or duplicated)", i, in[i], out[i]);
}

static const struct CMUnitTest extra[] = {
	cmocka_unit_test_setup_teardown(swap_same_md_for_get_and_put, ni_setup, ni_teardown),
	cmocka_unit_test_setup_teardown(swap_is_atomic_under_concurrency, ni_setup, ni_teardown),
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "getput (spec 6.13)", rows, sizeof(rows) / sizeof(rows[0]), extra,
			sizeof(extra) / sizeof(extra[0]));
}
