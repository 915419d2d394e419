/*
 * test_ct.c - counting events and triggered operations (<portals3_ext.h>) as
 * scenario tables, plus hand-written tests for what a table cannot say
 * (every reduction type x operation with its data, exhaustion, PtlNIFini
 * with operations armed, PtlCTWait from other threads).
 *
 * One row = a fresh NI with four CTs (C0..C3), four match entries on portal
 * CT_PT (match bits 0..3) with a target MD each (T0..T3: 64 bytes, zeroed,
 * PTL_MD_OP_PUT | PTL_MD_OP_GET, threshold INF; T3 also PTL_MD_TRUNCATE and
 * PTL_MD_MANAGE_REMOTE, the others manage their offset locally) and
 * three bound initiator MDs (I0..I2: 64 bytes, each filled with its own
 * pattern). No MD has an EQ: what is checked is counters and memory. Then
 * the steps, each one call with its expected return code:
 *   S_WAIT(ct, s, f)  PtlCTWait(ct, s + f) returns {s, f}; and after a quiet
 *                     period PtlCTGet still says {s, f} (nothing more came)
 *   S_CHECK(ct, s, f) after a quiet period PtlCTGet says {s, f}
 *   S_DATA(t, i, n)   T t's first n bytes equal I i's (zero after them)
 *   S_DATAI(i, t, n)  I i's first n bytes equal T t's initial bytes (zero)
 * A quiet period is CT_QUIET_MS of PtlCTGet polls (host mode progresses).
 */
#include "ptltest.h"
#include "scn.h"

#include <portals3_ext.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CT_PT 5
#define CT_BUF 64
#define NCT 4
#define NT 4
#define NI_ 3
#define CT_QUIET_MS 15
#define CT_MAX_STEP 16

enum { C0 = 0, C1, C2, C3, CNONE = 8, CBAD = 9 };
/* MD roles for S_BIND: T0..T3, I0..I2 */
enum { T0 = 0, T1, T2, T3, I0 = 4, I1, I2, MDBAD = 9 };

typedef enum {
	S_END = 0,
	S_BIND,    /* PtlMDBindCT(md[a], ct[b], opts) */
	S_PUT,     /* PtlPutRegion(I a, 0, len, ack?, self, CT_PT, 0, mbits b, roff) */
	S_GET,     /* PtlGetRegion(I a, 0, len, self, CT_PT, 0, mbits b, roff) */
	S_ATOMIC,  /* PtlAtomicPut(I a, 0, len, ack?, ..., mbits b, roff, op, dt) */
	S_TPUT,    /* PtlTriggeredPut(... , ct[c], thr) */
	S_TGET,
	S_TATOMIC,
	S_INC,     /* PtlCTInc(ct[a], {s, f}) */
	S_SET,     /* PtlCTSet(ct[a], {s, f}) */
	S_TINC,    /* PtlTriggeredCTInc(ct[a], {s, f}, ct[c], thr) */
	S_TSET,
	S_FREE,    /* PtlCTFree(ct[a]) */
	S_ALLOC,   /* PtlCTAlloc(ni, &ct[a]) */
	S_GETCT,   /* PtlCTGet(ct[a], &ev): only the return code */
	S_WAIT,
	S_CHECK,
	S_DATA,
	S_DATAI,
	S_UNLINK,  /* PtlMDUnlink(md[a]) */
	S_DROPS,   /* after a quiet period, PTL_SR_DROP_COUNT moved by .s since the row began */
} ct_op_t;

typedef struct {
	ct_op_t op;
	int a, b, c;
	unsigned opts;
	ptl_size_t len, roff, thr;
	bool ack;
	ptl_size_t s, f;
	ptl_op_t aop;
	ptl_datatype_t dt;
	int ret;
} ct_step_t;

typedef struct {
	const char *name;
	ct_step_t steps[CT_MAX_STEP];
} ct_row_t;

#define BIND(md_, ct_, o_) { .op = S_BIND, .a = (md_), .b = (ct_), .opts = (o_) }
#define PUT(i_, t_, n_, ...) { .op = S_PUT, .a = (i_), .b = (t_), .len = (n_), __VA_ARGS__ }
#define GET(i_, t_, n_, ...) { .op = S_GET, .a = (i_), .b = (t_), .len = (n_), __VA_ARGS__ }
#define TPUT(i_, t_, n_, ct_, th_, ...) \
	{ .op = S_TPUT, .a = (i_), .b = (t_), .len = (n_), .c = (ct_), .thr = (th_), __VA_ARGS__ }
#define TGET(i_, t_, n_, ct_, th_, ...) \
	{ .op = S_TGET, .a = (i_), .b = (t_), .len = (n_), .c = (ct_), .thr = (th_), __VA_ARGS__ }
#define ATOM(i_, t_, n_, o_, d_, ...) \
	{ .op = S_ATOMIC, .a = (i_), .b = (t_), .len = (n_), .aop = (o_), .dt = (d_), __VA_ARGS__ }
#define TATOM(i_, t_, n_, o_, d_, ct_, th_, ...)                                               \
	{ .op = S_TATOMIC, .a = (i_), .b = (t_), .len = (n_), .aop = (o_), .dt = (d_), .c = (ct_), \
	  .thr = (th_), __VA_ARGS__ }
#define INC(ct_, s_, f_, ...) { .op = S_INC, .a = (ct_), .s = (s_), .f = (f_), __VA_ARGS__ }
#define SET(ct_, s_, f_, ...) { .op = S_SET, .a = (ct_), .s = (s_), .f = (f_), __VA_ARGS__ }
#define TINC(ct_, s_, f_, tc_, th_, ...) \
	{ .op = S_TINC, .a = (ct_), .s = (s_), .f = (f_), .c = (tc_), .thr = (th_), __VA_ARGS__ }
#define TSET(ct_, s_, f_, tc_, th_, ...) \
	{ .op = S_TSET, .a = (ct_), .s = (s_), .f = (f_), .c = (tc_), .thr = (th_), __VA_ARGS__ }
#define FREE(ct_, ...) { .op = S_FREE, .a = (ct_), __VA_ARGS__ }
#define ALLOC(ct_) { .op = S_ALLOC, .a = (ct_) }
#define GETCT(ct_, r_) { .op = S_GETCT, .a = (ct_), .ret = (r_) }
#define WAIT(ct_, s_, f_) { .op = S_WAIT, .a = (ct_), .s = (s_), .f = (f_) }
#define CHECK(ct_, s_, f_) { .op = S_CHECK, .a = (ct_), .s = (s_), .f = (f_) }
#define DATA(t_, i_, n_) { .op = S_DATA, .a = (t_), .b = (i_), .len = (n_) }
#define DATAI(i_, t_, n_) { .op = S_DATAI, .a = (i_), .b = (t_), .len = (n_) }
#define UNLINK(md_) { .op = S_UNLINK, .a = (md_) }
#define DROPS(n_) { .op = S_DROPS, .s = (n_) }

#define ALLK PTL_CT_ALL
static const ct_row_t rows[] = {
	{ "threshold_met_already_fires_at_once",
	  { BIND(T0, C1, PTL_CT_COMM), SET(C0, 2, 0), TPUT(I0, T0, 16, C0, 1),
	    WAIT(C1, 1, 0), DATA(T0, I0, 16), CHECK(C0, 2, 0) } },
	{ "threshold_zero_fires_at_once",
	  { BIND(T0, C1, PTL_CT_COMM), TPUT(I0, T0, 8, C0, 0), WAIT(C1, 1, 0), DATA(T0, I0, 8) } },
	{ "threshold_met_later",
	  { BIND(T0, C1, PTL_CT_COMM), TPUT(I0, T0, 32, C0, 3), INC(C0, 1, 0), CHECK(C1, 0, 0),
	    INC(C0, 1, 0), CHECK(C1, 0, 0), DATA(T0, I0, 0), INC(C0, 1, 0), WAIT(C1, 1, 0),
	    DATA(T0, I0, 32) } },
	{ "failures_do_not_trigger",
	  { BIND(T0, C1, PTL_CT_COMM), TPUT(I0, T0, 8, C0, 1), INC(C0, 0, 5), CHECK(C1, 0, 0),
	    CHECK(C0, 0, 5), INC(C0, 1, 0), WAIT(C1, 1, 0), CHECK(C0, 1, 5) } },
	{ "ctset_reaches_threshold",
	  { BIND(T0, C1, PTL_CT_COMM), TPUT(I0, T0, 8, C0, 5), SET(C0, 4, 9), CHECK(C1, 0, 0),
	    SET(C0, 5, 0), WAIT(C1, 1, 0), SET(C0, 0, 0), SET(C0, 7, 0), CHECK(C1, 1, 0) } },
	{ "several_armed_on_one_ct_fire_by_threshold",
	  /* armed out of order: thr 3 inc, thr 2 set 100, thr 2 inc, thr 1 inc */
	  { TINC(C1, 1, 0, C0, 3), TSET(C1, 100, 0, C0, 2), TINC(C1, 1, 0, C0, 2),
	    TINC(C2, 1, 0, C0, 1), INC(C0, 1, 0), WAIT(C2, 1, 0), CHECK(C1, 0, 0),
	    INC(C0, 2, 0), WAIT(C1, 102, 0), CHECK(C2, 1, 0) } },
	{ "chain_send_counts_fire_the_next",
	  /* C0 -> put I0->T0; its SEND_END counts C1 -> put I1->T1; its SEND_END
	   * counts C2 -> C3 += 10. T0, T1 count into C3 too. */
	  { BIND(I0, C1, PTL_CT_SEND), BIND(I1, C2, PTL_CT_SEND), BIND(T0, C3, PTL_CT_COMM),
	    BIND(T1, C3, PTL_CT_COMM), TPUT(I0, T0, 24, C0, 1), TPUT(I1, T1, 40, C1, 1),
	    TINC(C3, 10, 0, C2, 1), CHECK(C3, 0, 0), INC(C0, 1, 0), WAIT(C3, 12, 0),
	    CHECK(C1, 1, 0), CHECK(C2, 1, 0), DATA(T0, I0, 24), DATA(T1, I1, 40) } },
	{ "chain_of_ct_incs",
	  { TINC(C1, 1, 0, C0, 1), TINC(C2, 1, 0, C1, 1), TINC(C3, 1, 0, C2, 1),
	    TINC(C0, 5, 0, C3, 1), INC(C0, 1, 0), WAIT(C0, 6, 0), CHECK(C1, 1, 0),
	    CHECK(C2, 1, 0), CHECK(C3, 1, 0) } },
	{ "ct_shared_by_several_mds",
	  { BIND(T0, C1, PTL_CT_COMM), BIND(T1, C1, PTL_CT_COMM), BIND(T2, C1, PTL_CT_COMM),
	    BIND(T3, C2, PTL_CT_COMM), PUT(I0, T0, 8), PUT(I1, T1, 16), PUT(I2, T2, 64),
	    WAIT(C1, 3, 0), TPUT(I0, T3, 8, C1, 3), WAIT(C2, 1, 0), DATA(T0, I0, 8),
	    DATA(T1, I1, 16), DATA(T2, I2, 64), DATA(T3, I0, 8) } },
	{ "initiator_side_counts_send_ack_reply",
	  { BIND(I0, C1, PTL_CT_SEND | PTL_CT_ACK), BIND(I1, C2, PTL_CT_REPLY),
	    BIND(I2, C3, PTL_CT_SEND), PUT(I0, T0, 8, .ack = true), WAIT(C1, 2, 0),
	    GET(I1, T1, 16), WAIT(C2, 1, 0), DATAI(I1, T1, 16), PUT(I2, T2, 8, .ack = true),
	    WAIT(C3, 1, 0), CHECK(C1, 2, 0) } },
	{ "options_select_what_counts",
	  { BIND(I0, C1, PTL_CT_ACK), BIND(T0, C2, PTL_CT_SEND | PTL_CT_REPLY | PTL_CT_ACK),
	    PUT(I0, T0, 8), CHECK(C1, 0, 0), PUT(I0, T0, 8, .ack = true), WAIT(C1, 1, 0),
	    CHECK(C2, 0, 0), BIND(T0, C2, PTL_CT_COMM), GET(I1, T0, 8), WAIT(C2, 1, 0) } },
	{ "triggered_get",
	  { BIND(I0, C1, PTL_CT_REPLY), BIND(T2, C2, PTL_CT_COMM), TGET(I0, T2, 48, C0, 2),
	    INC(C0, 1, 0), CHECK(C1, 0, 0), INC(C0, 1, 0), WAIT(C1, 1, 0), WAIT(C2, 1, 0),
	    DATAI(I0, T2, 48) } },
	{ "unbind_stops_counting",
	  { BIND(T0, C1, PTL_CT_COMM), PUT(I0, T0, 8), WAIT(C1, 1, 0), BIND(T0, CNONE, 0),
	    PUT(I0, T0, 8), BIND(T0, C2, PTL_CT_COMM), PUT(I0, T0, 8), WAIT(C2, 1, 0),
	    CHECK(C1, 1, 0) } },
	{ "failed_reduction_counts_failure",
	  /* T3 truncates: 8 bytes at offset 60 match 4, not a whole int64 */
	  { BIND(T3, C1, PTL_CT_COMM), BIND(I0, C2, PTL_CT_SEND | PTL_CT_ACK),
	    ATOM(I0, T3, 8, PTL_SUM, PTL_INT64_T, .roff = 60, .ack = true), WAIT(C1, 0, 1),
	    WAIT(C2, 1, 1), DATA(T3, I0, 0),
	    ATOM(I0, T3, 8, PTL_BOR, PTL_UINT64_T, .roff = 56, .ack = true), WAIT(C1, 1, 1),
	    WAIT(C2, 3, 1) } },
	{ "failures_and_successes_mixed_fire_on_success",
	  { BIND(T3, C1, PTL_CT_COMM), TINC(C2, 1, 0, C1, 1),
	    ATOM(I0, T3, 8, PTL_SUM, PTL_INT64_T, .roff = 60), WAIT(C1, 0, 1), CHECK(C2, 0, 0),
	    PUT(I0, T3, 4), WAIT(C1, 1, 1), WAIT(C2, 1, 0) } },
	{ "free_drops_armed_operations",
	  { BIND(T0, C2, PTL_CT_COMM), TINC(C1, 1, 0, C0, 1), TPUT(I0, T0, 8, C0, 2),
	    FREE(C0), GETCT(C0, PTL_CT_INVALID), INC(C0, 1, 0, .ret = PTL_CT_INVALID),
	    TPUT(I0, T0, 8, C0, 0, .ret = PTL_CT_INVALID), FREE(C0, .ret = PTL_CT_INVALID),
	    ALLOC(C0), INC(C0, 5, 0), CHECK(C1, 0, 0), CHECK(C2, 0, 0), DATA(T0, I0, 0) } },
	{ "md_unlinked_before_firing_is_dropped",
	  /* the armed put's MD goes before its counter fires: nothing is sent, the
	   * drop is counted; a CTInc armed beside it still fires */
	  { BIND(T0, C1, PTL_CT_COMM), TPUT(I1, T0, 8, C0, 1), TINC(C2, 1, 0, C0, 1), UNLINK(I1),
	    DROPS(0), INC(C0, 1, 0), WAIT(C2, 1, 0), CHECK(C1, 0, 0), DROPS(1), DATA(T0, I0, 0),
	    TPUT(I1, T0, 8, C0, 1, .ret = PTL_MD_INVALID) } },
	{ "freed_ct_stops_md_counting",
	  { BIND(T0, C1, PTL_CT_COMM), FREE(C1), PUT(I0, T0, 8), ALLOC(C1), CHECK(C1, 0, 0),
	    BIND(T0, C1, PTL_CT_COMM), PUT(I0, T0, 8), WAIT(C1, 1, 0) } },
	{ "triggered_reduction",
	  { BIND(T3, C1, PTL_CT_COMM), TATOM(I0, T3, 16, PTL_BXOR, PTL_UINT64_T, C0, 1),
	    TATOM(I0, T3, 16, PTL_BXOR, PTL_UINT64_T, C0, 2), INC(C0, 1, 0), WAIT(C1, 1, 0),
	    DATA(T3, I0, 16), INC(C0, 1, 0), WAIT(C1, 2, 0), DATA(T3, I0, 0) } },
	{ "bad_arguments",
	  { BIND(MDBAD, C0, PTL_CT_COMM), BIND(T0, CBAD, PTL_CT_COMM), BIND(T0, C0, 0x10),
	    INC(CBAD, 1, 0, .ret = PTL_CT_INVALID), SET(CBAD, 1, 0, .ret = PTL_CT_INVALID),
	    GETCT(CBAD, PTL_CT_INVALID), FREE(CBAD, .ret = PTL_CT_INVALID),
	    TPUT(I0, T0, 8, CNONE, 0, .ret = PTL_CT_INVALID),
	    TPUT(MDBAD, T0, 8, C0, 0, .ret = PTL_MD_INVALID),
	    TPUT(I0, T0, 65, C0, 0, .ret = PTL_MD_ILLEGAL),
	    TINC(C1, 1, 0, CBAD, 0, .ret = PTL_CT_INVALID),
	    TSET(CBAD, 1, 0, C0, 0, .ret = PTL_CT_INVALID),
	    ATOM(I0, T0, 8, PTL_BAND, PTL_DOUBLE, .ret = PTL_ARG_INVALID),
	    ATOM(I0, T0, 12, PTL_SUM, PTL_INT64_T, .ret = PTL_MD_ILLEGAL),
	    TATOM(I0, T0, 8, (ptl_op_t)6, PTL_INT32_T, C0, 0, .ret = PTL_ARG_INVALID),
	    CHECK(C0, 0, 0) } },
	{ "bad_arguments_2",
	  { ATOM(I0, T0, 8, PTL_BXOR, PTL_FLOAT, .ret = PTL_ARG_INVALID),
	    ATOM(I0, T0, 8, PTL_BOR, (ptl_datatype_t)5, .ret = PTL_ARG_INVALID),
	    TGET(MDBAD, T0, 8, C0, 0, .ret = PTL_MD_INVALID),
	    TGET(I0, T0, 8, CBAD, 0, .ret = PTL_CT_INVALID),
	    WAIT(C0, 0, 0), DATA(T0, I0, 0), DATAI(I0, T0, 0) } },
};
/* BIND rows with a bad handle/option expect: */
static int bind_ret(const ct_step_t *st)
{
	if (st->a == MDBAD)
		return PTL_MD_INVALID;
	if (st->opts & ~PTL_CT_ALL)
		return PTL_ARG_INVALID;
	if (st->b == CBAD)
		return PTL_CT_INVALID;
	return PTL_OK;
}

typedef struct {
	ptlt_env_t env;
	ptl_handle_ct_t ct[NCT];
	ptl_handle_me_t me[NT];
	ptl_handle_md_t md[NT + NI_];
	unsigned char tbuf[NT][CT_BUF];
	unsigned char ibuf[NI_][CT_BUF];
	const ct_row_t *row;
	ptl_sr_value_t drops0;
} ct_ctx_t;

static unsigned char ifill(int i, size_t j) { return (unsigned char)(0x11 * (i + 1) + 7 * j + 1); }

static int row_setup(void **state)
{
	ct_ctx_t *c = calloc(1, sizeof *c);
	c->row = *state;
	ptlt_ni_init(&c->env, NULL);
	ptlt_open_acl(&c->env);
	for (int k = 0; k < NCT; k++)
		assert_rc(PtlCTAlloc(c->env.ni, &c->ct[k]), PTL_OK);
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	for (int t = 0; t < NT; t++) {
		assert_rc(PtlMEAttach(c->env.ni, CT_PT, any, (ptl_match_bits_t)t, 0, PTL_RETAIN,
				      PTL_INS_AFTER, &c->me[t]), PTL_OK);
		ptl_md_t md = { c->tbuf[t], CT_BUF, PTL_MD_THRESH_INF, 0,
				PTL_MD_OP_PUT | PTL_MD_OP_GET |
					(t == T3 ? PTL_MD_TRUNCATE | PTL_MD_MANAGE_REMOTE : 0),
				NULL, PTL_EQ_NONE };
		assert_rc(PtlMDAttach(c->me[t], md, PTL_RETAIN, &c->md[t]), PTL_OK);
	}
	for (int i = 0; i < NI_; i++) {
		for (size_t j = 0; j < CT_BUF; j++)
			c->ibuf[i][j] = ifill(i, j);
		c->md[I0 + i] = ptlt_bind(&c->env, c->ibuf[i], CT_BUF, PTL_MD_THRESH_INF, 0,
					  PTL_EQ_NONE, PTL_RETAIN);
	}
	assert_rc(PtlNIStatus(c->env.ni, PTL_SR_DROP_COUNT, &c->drops0), PTL_OK);
	*state = c;
	return 0;
}

static int row_teardown(void **state)
{
	ct_ctx_t *c = *state;
	if (c) {
		ptlt_ni_release(&c->env);
		free(c);
	}
	return 0;
}

static ptl_handle_ct_t ct_of(ct_ctx_t *c, int k)
{
	if (k == CNONE)
		return PTL_CT_NONE;
	if (k == CBAD)
		return c->md[T0]; /* a live handle of another type */
	return c->ct[k];
}

static ptl_handle_md_t md_of(ct_ctx_t *c, int r)
{
	return r == MDBAD ? c->ct[C3] : c->md[r];
}

/* CT_QUIET_MS of polling (host mode: each PtlCTGet progresses), then the value. */
static ptl_ct_event_t quiet_get(ptl_handle_ct_t ct)
{
	ptl_ct_event_t ev = { 0, 0 };
	uint64_t t0 = ptlt_now_ms();
	do {
		assert_rc(PtlCTGet(ct, &ev), PTL_OK);
	} while (ptlt_now_ms() - t0 < CT_QUIET_MS);
	return ev;
}

/* CT_QUIET_MS of status reads (each a command: host mode progresses). */
static void settle(ct_ctx_t *c)
{
	ptl_sr_value_t v;
	uint64_t t0 = ptlt_now_ms();
	do {
		assert_rc(PtlNIStatus(c->env.ni, PTL_SR_DROP_COUNT, &v), PTL_OK);
	} while (ptlt_now_ms() - t0 < CT_QUIET_MS);
}

struct wait_arg {
	ptl_handle_ct_t ct;
	ptl_size_t test;
	ptl_ct_event_t ev;
};
static int wait_fn(void *p)
{
	struct wait_arg *w = p;
	return PtlCTWait(w->ct, w->test, &w->ev);
}

static void check_ct(ct_ctx_t *c, int stepno, const ct_step_t *st, bool wait)
{
	ptl_handle_ct_t ct = ct_of(c, st->a);
	if (wait) {
		struct wait_arg w = { ct, st->s + st->f, { 0, 0 } };
		int rc = -1;
		if (!ptlt_call_bounded(wait_fn, &w, PTLT_WAIT_MS, &rc))
			ptlt_fail_at(__FILE__, __LINE__, "%s step %d: PtlCTWait(C%d, %llu) still blocked",
				     c->row->name, stepno, st->a, (unsigned long long)(st->s + st->f));
		assert_rc(rc, PTL_OK);
		if (w.ev.success != st->s || w.ev.failure != st->f)
			ptlt_fail_at(__FILE__, __LINE__, "%s step %d: PtlCTWait(C%d) gave {%llu, %llu}, want {%llu, %llu}",
				     c->row->name, stepno, st->a, (unsigned long long)w.ev.success,
				     (unsigned long long)w.ev.failure, (unsigned long long)st->s,
				     (unsigned long long)st->f);
	}
	ptl_ct_event_t ev = quiet_get(ct);
	if (ev.success != st->s || ev.failure != st->f)
		ptlt_fail_at(__FILE__, __LINE__, "%s step %d: C%d is {%llu, %llu}, want {%llu, %llu}",
			     c->row->name, stepno, st->a, (unsigned long long)ev.success,
			     (unsigned long long)ev.failure, (unsigned long long)st->s,
			     (unsigned long long)st->f);
}

static void check_bytes(ct_ctx_t *c, int stepno, const unsigned char *got, int gi,
			const unsigned char *want, size_t n)
{
	for (size_t j = 0; j < CT_BUF; j++) {
		unsigned char w = j < n ? want[j] : 0;
		if (got[j] != w)
			ptlt_fail_at(__FILE__, __LINE__, "%s step %d: buffer %d byte %zu is %#x, want %#x",
				     c->row->name, stepno, gi, j, got[j], w);
	}
}

static void run_row(void **state)
{
	ct_ctx_t *c = *state;
	for (int k = 0; k < CT_MAX_STEP && c->row->steps[k].op != S_END; k++) {
		const ct_step_t *st = &c->row->steps[k];
		ptl_ack_req_t ack = st->ack ? PTL_ACK_REQ : PTL_NO_ACK_REQ;
		ptl_match_bits_t mb = (ptl_match_bits_t)st->b;
		ptl_ct_event_t v = { st->s, st->f };
		int rc = 0;
		switch (st->op) {
		case S_BIND:
			rc = PtlMDBindCT(md_of(c, st->a), ct_of(c, st->b), st->opts);
			assert_rc(rc, bind_ret(st));
			continue;
		case S_PUT:
			rc = PtlPutRegion(md_of(c, st->a), 0, st->len, ack, c->env.self, CT_PT, 0, mb,
					  st->roff, 0);
			break;
		case S_GET:
			rc = PtlGetRegion(md_of(c, st->a), 0, st->len, c->env.self, CT_PT, 0, mb, st->roff);
			break;
		case S_ATOMIC:
			rc = PtlAtomicPut(md_of(c, st->a), 0, st->len, ack, c->env.self, CT_PT, 0, mb,
					  st->roff, 0, st->aop, st->dt);
			break;
		case S_TPUT:
			rc = PtlTriggeredPut(md_of(c, st->a), 0, st->len, ack, c->env.self, CT_PT, 0, mb,
					     st->roff, 0, ct_of(c, st->c), st->thr);
			break;
		case S_TGET:
			rc = PtlTriggeredGet(md_of(c, st->a), 0, st->len, c->env.self, CT_PT, 0, mb,
					     st->roff, ct_of(c, st->c), st->thr);
			break;
		case S_TATOMIC:
			rc = PtlTriggeredAtomicPut(md_of(c, st->a), 0, st->len, ack, c->env.self, CT_PT, 0,
						   mb, st->roff, 0, st->aop, st->dt, ct_of(c, st->c),
						   st->thr);
			break;
		case S_INC: rc = PtlCTInc(ct_of(c, st->a), v); break;
		case S_SET: rc = PtlCTSet(ct_of(c, st->a), v); break;
		case S_TINC: rc = PtlTriggeredCTInc(ct_of(c, st->a), v, ct_of(c, st->c), st->thr); break;
		case S_TSET: rc = PtlTriggeredCTSet(ct_of(c, st->a), v, ct_of(c, st->c), st->thr); break;
		case S_FREE: rc = PtlCTFree(ct_of(c, st->a)); break;
		case S_ALLOC: rc = PtlCTAlloc(c->env.ni, &c->ct[st->a]); break;
		case S_GETCT: {
			ptl_ct_event_t ev;
			rc = PtlCTGet(ct_of(c, st->a), &ev);
			break;
		}
		case S_WAIT: check_ct(c, k, st, true); continue;
		case S_CHECK: check_ct(c, k, st, false); continue;
		case S_DATA:
			settle(c); /* let stray data arrive */
			check_bytes(c, k, c->tbuf[st->a], st->a, c->ibuf[st->b - I0], st->len);
			continue;
		case S_DATAI: {
			unsigned char zero[CT_BUF] = { 0 };
			unsigned char want[CT_BUF];
			for (size_t j = 0; j < CT_BUF; j++)
				want[j] = j < st->len ? zero[j] : ifill(st->a - I0, j);
			settle(c);
			for (size_t j = 0; j < CT_BUF; j++)
				if (c->ibuf[st->a - I0][j] != want[j])
					ptlt_fail_at(__FILE__, __LINE__, "%s step %d: I%d byte %zu is %#x, want %#x",
						     c->row->name, k, st->a - I0, j, c->ibuf[st->a - I0][j],
						     want[j]);
			continue;
		}
		case S_UNLINK: rc = PtlMDUnlink(md_of(c, st->a)); break;
		case S_DROPS: {
			ptl_sr_value_t v;
			settle(c);
			assert_rc(PtlNIStatus(c->env.ni, PTL_SR_DROP_COUNT, &v), PTL_OK);
			if (v - c->drops0 != st->s)
				ptlt_fail_at(__FILE__, __LINE__, "%s step %d: %llu drops, want %llu",
					     c->row->name, k, (unsigned long long)(v - c->drops0),
					     (unsigned long long)st->s);
			continue;
		}
		default: ptlt_fail_at(__FILE__, __LINE__, "bad step"); break;
		}
		if (rc != st->ret)
			ptlt_fail_at(__FILE__, __LINE__, "%s step %d (op %d): returned %s, want %s",
				     c->row->name, k, (int)st->op, ptlt_rc_str(rc), ptlt_rc_str(st->ret));
	}
}

/* ---- every reduction type x operation, with its data ------------------------- */

static const char *op_name[] = { "SUM", "MIN", "MAX", "BAND", "BOR", "BXOR" };
static const char *dt_name[] = { "INT32", "INT64", "UINT64", "FLOAT", "DOUBLE" };

#define NEL 8 /* elements per reduction */

static double dval(int side, int i) /* exact in float and double */
{
	static const double a[NEL] = { 1.5, -2.25, 1e6, -0.0, 3.0, 7.75, -1e5, 0.5 };
	static const double b[NEL] = { 2.0, -3.5, -1e6, 0.25, 3.0, -8.0, 4096.0, -0.5 };
	return side ? b[i] : a[i];
}
static int64_t ival(int side, int i)
{
	static const int64_t a[NEL] = { 1, -5, INT64_MAX, 0x0f0f0f0f0f0f0f0fLL, -1, 42, 1000000007LL, INT64_MIN };
	static const int64_t b[NEL] = { 2, 7, 1, 0x00ff00ff00ff00ffLL, -1, -42, -3, 5 };
	return side ? b[i] : a[i];
}

/* Fill buf with NEL elements of type dt from side (0: target, 1: data). */
static size_t fill(void *buf, ptl_datatype_t dt, int side)
{
	for (int i = 0; i < NEL; i++) {
		switch (dt) {
		case PTL_INT32_T: { int32_t v = (int32_t)ival(side, i); memcpy((char *)buf + 4 * i, &v, 4); break; }
		case PTL_INT64_T: { int64_t v = ival(side, i); memcpy((char *)buf + 8 * i, &v, 8); break; }
		case PTL_UINT64_T: { uint64_t v = (uint64_t)ival(side, i); memcpy((char *)buf + 8 * i, &v, 8); break; }
		case PTL_FLOAT: { float v = (float)dval(side, i); memcpy((char *)buf + 4 * i, &v, 4); break; }
		case PTL_DOUBLE: { double v = dval(side, i); memcpy((char *)buf + 8 * i, &v, 8); break; }
		}
	}
	return (dt == PTL_INT32_T || dt == PTL_FLOAT ? 4 : 8) * NEL;
}

/* The serial reference: t = t OP d, element i. */
#define REF_INT(T, UT)                                                                    \
	do {                                                                              \
		T a, b;                                                                   \
		memcpy(&a, t + i * sizeof(T), sizeof a);                                  \
		memcpy(&b, d + i * sizeof(T), sizeof b);                                  \
		switch (op) {                                                             \
		case PTL_SUM: a = (T)((UT)a + (UT)b); break;                              \
		case PTL_MIN: a = a < b ? a : b; break;                                   \
		case PTL_MAX: a = a > b ? a : b; break;                                   \
		case PTL_BAND: a = (T)((UT)a & (UT)b); break;                             \
		case PTL_BOR: a = (T)((UT)a | (UT)b); break;                              \
		case PTL_BXOR: a = (T)((UT)a ^ (UT)b); break;                             \
		}                                                                         \
		memcpy(t + i * sizeof(T), &a, sizeof a);                                  \
	} while (0)
#define REF_FLT(T)                                                                        \
	do {                                                                              \
		T a, b;                                                                   \
		memcpy(&a, t + i * sizeof(T), sizeof a);                                  \
		memcpy(&b, d + i * sizeof(T), sizeof b);                                  \
		if (op == PTL_SUM) a = a + b;                                             \
		else if (op == PTL_MIN) a = a < b ? a : b;                                \
		else a = a > b ? a : b;                                                   \
		memcpy(t + i * sizeof(T), &a, sizeof a);                                  \
	} while (0)
static void reference(unsigned char *t, const unsigned char *d, ptl_op_t op, ptl_datatype_t dt)
{
	for (int i = 0; i < NEL; i++) {
		switch (dt) {
		case PTL_INT32_T: REF_INT(int32_t, uint32_t); break;
		case PTL_INT64_T: REF_INT(int64_t, uint64_t); break;
		case PTL_UINT64_T: REF_INT(uint64_t, uint64_t); break;
		case PTL_FLOAT: REF_FLT(float); break;
		case PTL_DOUBLE: REF_FLT(double); break;
		}
	}
}

static void test_reductions(void **state)
{
	(void)state;
	ptlt_env_t env;
	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	ptl_handle_ct_t tct, trig;
	assert_rc(PtlCTAlloc(env.ni, &tct), PTL_OK);
	assert_rc(PtlCTAlloc(env.ni, &trig), PTL_OK);
	/* target at offset 8 of a 96-byte MD (bytes around it must stay) */
	unsigned char tmem[96], dmem[64], want[96];
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	assert_rc(PtlMEAttach(env.ni, CT_PT, any, 77, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t md = { tmem, sizeof tmem, PTL_MD_THRESH_INF, 0,
			PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, NULL, PTL_EQ_NONE };
	assert_rc(PtlMDAttach(me, md, PTL_RETAIN, &tmd), PTL_OK);
	assert_rc(PtlMDBindCT(tmd, tct, PTL_CT_COMM), PTL_OK);
	ptl_handle_md_t dmd = ptlt_bind(&env, dmem, sizeof dmem, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE,
					PTL_RETAIN);
	uint64_t done = 0, fired = 0;
	int checked = 0, refused = 0;
	for (int dt = PTL_INT32_T; dt <= PTL_DOUBLE; dt++) {
		for (int op = PTL_SUM; op <= PTL_BXOR; op++) {
			bool is_int = dt <= PTL_UINT64_T;
			bool valid = op <= PTL_MAX || is_int;
			memset(tmem, 0xa5, sizeof tmem);
			size_t n = fill(tmem + 8, (ptl_datatype_t)dt, 0);
			fill(dmem, (ptl_datatype_t)dt, 1);
			memcpy(want, tmem, sizeof want);
			reference(want + 8, dmem, (ptl_op_t)op, (ptl_datatype_t)dt);
			bool triggered = (op + dt) % 2;
			int rc;
			if (triggered)
				rc = PtlTriggeredAtomicPut(dmd, 0, n, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 77, 8, 0,
							   (ptl_op_t)op, (ptl_datatype_t)dt, trig, fired + 1);
			else
				rc = PtlAtomicPut(dmd, 0, n, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 77, 8, 0,
						  (ptl_op_t)op, (ptl_datatype_t)dt);
			if (!valid) {
				if (rc != PTL_ARG_INVALID)
					ptlt_fail_at(__FILE__, __LINE__, "%s on %s: %s, want PTL_ARG_INVALID",
						     op_name[op], dt_name[dt], ptlt_rc_str(rc));
				refused++;
				continue;
			}
			assert_rc(rc, PTL_OK);
			if (triggered) {
				ptl_ct_event_t ev;
				(void)quiet_get(tct);
				assert_rc(PtlCTGet(tct, &ev), PTL_OK);
				if (ev.success != done) /* armed, not yet fired */
					ptlt_fail_at(__FILE__, __LINE__, "%s on %s fired early", op_name[op],
						     dt_name[dt]);
				ptl_ct_event_t one = { 1, 0 };
				assert_rc(PtlCTInc(trig, one), PTL_OK);
				fired++;
			}
			done++;
			struct wait_arg w = { tct, done, { 0, 0 } };
			int wrc = -1;
			if (!ptlt_call_bounded(wait_fn, &w, PTLT_WAIT_MS, &wrc))
				ptlt_fail_at(__FILE__, __LINE__, "%s on %s: never combined", op_name[op],
					     dt_name[dt]);
			assert_rc(wrc, PTL_OK);
			assert_int_equal(w.ev.failure, 0);
			if (memcmp(tmem, want, sizeof want)) {
				for (size_t j = 0; j < sizeof want; j++)
					if (tmem[j] != want[j])
						ptlt_fail_at(__FILE__, __LINE__,
							     "%s on %s: byte %zu is %#x, want %#x",
							     op_name[op], dt_name[dt], j, tmem[j], want[j]);
			}
			checked++;
		}
	}
	assert_int_equal(checked, 5 * 3 + 3 * 3); /* SUM/MIN/MAX x 5 + bitwise x 3 ints */
	assert_int_equal(refused, 2 * 3);
	ptlt_ni_fini(&env);
}

/* ---- exhaustion, and PtlNIFini with operations armed --------------------------- */

static long env_or(const char *name, long def)
{
	const char *s = getenv(name);
	return s && *s ? strtol(s, NULL, 0) : def;
}

static void test_exhaustion_and_fini(void **state)
{
	(void)state;
	long nslots = env_or("PTL_TRIG_SLOTS", 4096), ncts = env_or("PTL_MAX_CTS", 65535);
	for (int round = 0; round < 2; round++) {
		ptlt_env_t env;
		ptlt_ni_init(&env, NULL);
		ptl_handle_ct_t *cts = calloc((size_t)ncts + 1, sizeof *cts);
		for (long i = 0; i < ncts; i++)
			assert_rc(PtlCTAlloc(env.ni, &cts[i]), PTL_OK);
		assert_rc(PtlCTAlloc(env.ni, &cts[ncts]), PTL_NO_SPACE);
		assert_rc(PtlCTFree(cts[ncts - 1]), PTL_OK);
		assert_rc(PtlCTAlloc(env.ni, &cts[ncts - 1]), PTL_OK);
		ptl_ct_event_t one = { 1, 0 };
		/* every slot armed on cts[0] and cts[1], thresholds never reached */
		for (long i = 0; i < nslots; i++)
			assert_rc(PtlTriggeredCTInc(cts[2], one, cts[i % 2], (ptl_size_t)(1000 + i)),
				  PTL_OK);
		assert_rc(PtlTriggeredCTInc(cts[2], one, cts[0], 5), PTL_NO_SPACE);
		char b[8];
		ptl_handle_md_t md = ptlt_bind(&env, b, sizeof b, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE,
					       PTL_RETAIN);
		assert_rc(PtlTriggeredPut(md, 0, 8, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 0, 0, 0, cts[0], 1),
			  PTL_NO_SPACE);
		/* freeing cts[1] drops its half: that many slots come back */
		assert_rc(PtlCTFree(cts[1]), PTL_OK);
		long half = nslots / 2;
		for (long i = 0; i < half; i++)
			assert_rc(PtlTriggeredCTInc(cts[2], one, cts[3], (ptl_size_t)(5000 + i)), PTL_OK);
		assert_rc(PtlTriggeredCTInc(cts[2], one, cts[3], 1), PTL_NO_SPACE);
		/* fire the first 10 armed on cts[0] (thresholds 1000, 1002, ...) */
		ptl_ct_event_t v = { 1018, 0 };
		assert_rc(PtlCTSet(cts[0], v), PTL_OK);
		struct wait_arg w = { cts[2], 10, { 0, 0 } };
		int rc = -1;
		assert_true(ptlt_call_bounded(wait_fn, &w, PTLT_WAIT_MS, &rc));
		assert_rc(rc, PTL_OK);
		assert_int_equal(quiet_get(cts[2]).success, 10);
		for (int i = 0; i < 10; i++)
			assert_rc(PtlTriggeredCTInc(cts[2], one, cts[3], 1u << 30), PTL_OK);
		assert_rc(PtlTriggeredCTInc(cts[2], one, cts[3], 1), PTL_NO_SPACE);
		free(cts);
		/* the NI goes with every operation still armed; the next round must
		 * get the whole table again (and ASan sees no leak) */
		ptlt_ni_fini(&env);
	}
}

/* ---- PtlCTWait from other threads ----------------------------------------------- */

struct waiter {
	ptl_handle_ct_t ct;
	ptl_size_t test;
	ptl_ct_event_t ev;
	int rc;
	pthread_t th;
};
static void *waiter_main(void *p)
{
	struct waiter *w = p;
	w->rc = PtlCTWait(w->ct, w->test, &w->ev);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void test_ctwait_threads(void **state)
{
	(void)state;
	ptlt_env_t env;
	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	ptl_handle_ct_t ct, trig, gone;
	assert_rc(PtlCTAlloc(env.ni, &ct), PTL_OK);
	assert_rc(PtlCTAlloc(env.ni, &trig), PTL_OK);
	assert_rc(PtlCTAlloc(env.ni, &gone), PTL_OK);
	unsigned char tb[64], ib[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	assert_rc(PtlMEAttach(env.ni, CT_PT, any, 1, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t md = { tb, sizeof tb, PTL_MD_THRESH_INF, 0, PTL_MD_OP_PUT, NULL, PTL_EQ_NONE };
	assert_rc(PtlMDAttach(me, md, PTL_RETAIN, &tmd), PTL_OK);
	assert_rc(PtlMDBindCT(tmd, ct, PTL_CT_COMM), PTL_OK);
	ptl_handle_md_t imd = ptlt_bind(&env, ib, sizeof ib, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE,
					PTL_RETAIN);
	/* four waiters for 3 puts, one for 4 (woken by the set below), one on a CT that
	 * gets freed */
	struct waiter w[6];
	for (int i = 0; i < 6; i++) {
		w[i] = (struct waiter){ i == 5 ? gone : ct, i == 4 ? 4 : 3, { 0, 0 }, -1, 0 };
		assert_int_equal(pthread_create(&w[i].th, NULL, waiter_main, &w[i]), 0);
	}
	sleep_ms(60); /* past PTL_WAIT_SPIN_US: the waiters sleep */
	/* two puts at once, the third triggered by trig (fired by the engine) */
	assert_rc(PtlPut(imd, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 1, 0, 0), PTL_OK);
	assert_rc(PtlPut(imd, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 1, 8, 0), PTL_OK);
	assert_rc(PtlTriggeredPut(imd, 0, 8, PTL_NO_ACK_REQ, env.self, CT_PT, 0, 1, 16, 0, trig, 1),
		  PTL_OK);
	sleep_ms(20);
	ptl_ct_event_t one = { 1, 0 };
	assert_rc(PtlCTInc(trig, one), PTL_OK);
	uint64_t t0 = ptlt_now_ms();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(w[i].th, NULL), 0);
		assert_rc(w[i].rc, PTL_OK);
		assert_int_equal(w[i].ev.success, 3);
		assert_int_equal(w[i].ev.failure, 0);
	}
	if (ptlt_now_ms() - t0 > PTLT_WAIT_MS)
		ptlt_fail_at(__FILE__, __LINE__, "waiters woke late");
	ptl_ct_event_t four = { 4, 0 };
	assert_rc(PtlCTSet(ct, four), PTL_OK);
	assert_int_equal(pthread_join(w[4].th, NULL), 0);
	assert_rc(w[4].rc, PTL_OK);
	assert_int_equal(w[4].ev.success, 4);
	assert_rc(PtlCTFree(gone), PTL_OK);
	assert_int_equal(pthread_join(w[5].th, NULL), 0);
	assert_rc(w[5].rc, PTL_CT_INVALID);
	ptl_ct_event_t ev;
	assert_rc(PtlCTWait(ct, 0, &ev), PTL_OK);
	assert_rc(PtlCTWait(ct, 4, NULL), PTL_SEGV);
	assert_rc(PtlCTGet(ct, NULL), PTL_SEGV);
	assert_rc(PtlCTAlloc(env.ni, NULL), PTL_SEGV);
	assert_rc(PtlCTAlloc(PTL_INVALID_HANDLE, &gone), PTL_NI_INVALID);
	assert_rc(PtlCTWait(gone, 1, &ev), PTL_CT_INVALID);
	for (int i = 0; i < 24; i += 8)
		if (memcmp(tb + i, ib, 8))
			ptlt_fail_at(__FILE__, __LINE__, "put %d did not land", i / 8);
	/* the handle type is known to PtlNIHandle; the codes have names */
	ptl_handle_ni_t nih;
	assert_rc(PtlNIHandle(ct, &nih), PTL_OK);
	assert_int_equal(nih, env.ni);
	assert_string_equal(PtlErrorStr(PTL_CT_INVALID), "PTL_CT_INVALID");
	assert_string_equal(PtlErrorStr(PTL_ARG_INVALID), "PTL_ARG_INVALID");
	ptlt_ni_fini(&env);
}

/* ---- counting beside events: bound MDs post their events as before, and
 * count whether or not their events are disabled ------------------------------ */

static void test_events_and_counts(void **state)
{
	(void)state;
	ptlt_env_t env;
	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	ptl_handle_eq_t eq;
	assert_rc(PtlEQAlloc(env.ni, 64, PTL_EQ_HANDLER_NONE, &eq), PTL_OK);
	ptl_handle_ct_t tct, ict;
	assert_rc(PtlCTAlloc(env.ni, &tct), PTL_OK);
	assert_rc(PtlCTAlloc(env.ni, &ict), PTL_OK);
	unsigned char tb[32] = { 0 }, ib[16];
	memset(ib, 0x5c, sizeof ib);
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	assert_rc(PtlMEAttach(env.ni, CT_PT, any, 9, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	/* target: END events disabled (only PUT_START is posted) */
	ptl_md_t md = { tb, sizeof tb, 2, 0, PTL_MD_OP_PUT | PTL_MD_EVENT_END_DISABLE, NULL, eq };
	assert_rc(PtlMDAttach(me, md, PTL_UNLINK, &tmd), PTL_OK);
	assert_rc(PtlMDBindCT(tmd, tct, PTL_CT_COMM), PTL_OK);
	ptl_handle_md_t imd = ptlt_bind(&env, ib, sizeof ib, PTL_MD_THRESH_INF, 0, eq, PTL_RETAIN);
	assert_rc(PtlMDBindCT(imd, ict, PTL_CT_ALL), PTL_OK);
	for (int k = 0; k < 2; k++) {
		assert_rc(PtlPut(imd, PTL_ACK_REQ, env.self, CT_PT, 0, 9, 0, 0), PTL_OK);
		expect_event(eq, PTL_EVENT_SEND_START, .mlength = PTLT_V(16));
		expect_event(eq, PTL_EVENT_SEND_END, .mlength = PTLT_V(16));
		expect_event(eq, PTL_EVENT_PUT_START, .mlength = PTLT_V(16), .threshold = PTLT_V(1 - k));
		if (k == 1) /* threshold 2, PTL_UNLINK: unlinked after the second */
			expect_event(eq, PTL_EVENT_UNLINK);
		expect_event(eq, PTL_EVENT_ACK, .mlength = PTLT_V(16));
	}
	expect_eq_empty(eq);
	ptl_ct_event_t ev;
	assert_rc(PtlCTWait(tct, 2, &ev), PTL_OK);
	assert_int_equal(ev.success, 2);
	assert_rc(PtlCTWait(ict, 4, &ev), PTL_OK); /* 2 SEND_END + 2 ACK */
	assert_int_equal(ev.success, 4);
	assert_int_equal(ev.failure, 0);
	assert_int_equal(memcmp(tb + 16, ib, 16), 0);
	/* the unlinked MD's binding went with it */
	assert_rc(PtlMDBindCT(tmd, tct, PTL_CT_COMM), PTL_MD_INVALID);
	ptlt_ni_fini(&env);
}

int main(int argc, char **argv)
{
	size_t nrows = sizeof rows / sizeof rows[0];
	struct CMUnitTest *t = calloc(nrows + 4, sizeof *t);
	for (size_t i = 0; i < nrows; i++) {
		t[i].name = rows[i].name;
		t[i].test_func = run_row;
		t[i].setup_func = row_setup;
		t[i].teardown_func = row_teardown;
		t[i].initial_state = (void *)&rows[i];
	}
	t[nrows] = (struct CMUnitTest)cmocka_unit_test(test_reductions);
	t[nrows + 1] = (struct CMUnitTest)cmocka_unit_test(test_exhaustion_and_fini);
	t[nrows + 2] = (struct CMUnitTest)cmocka_unit_test(test_ctwait_threads);
	t[nrows + 3] = (struct CMUnitTest)cmocka_unit_test(test_events_and_counts);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	int rc = ptlt_run_group("scenario_ct", t, nrows + 4, scn_group_setup, scn_group_teardown);
	free(t);
	return rc;
}
