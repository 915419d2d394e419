/*
 * test_eq.c - spec §6.10: event queues (capacity, overflow, retrieval,
 * PtlEQPoll over several EQs, EQ handler), and an EQ shared by several MDs.
 *
 * Events are generated without reading them; a put with PTL_ACK_REQ is used
 * as a barrier: its ACK is sent together with PUT_END, so once the ACK is seen
 * on the initiator's EQ the target events are in the target EQ.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "scn.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
	ptlt_env_t env;
	ptl_handle_eq_t ieq;           /* initiator EQ (roomy) */
	ptl_handle_md_t imd;
	uint8_t ibuf[64];
	uint8_t tbuf[4][256];
} fx_t;

static int fx_setup(void **state)
{
	fx_t *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	*state = f;
	f->env.ni = PTL_INVALID_HANDLE;
	return 0;
}

static int fx_teardown(void **state)
{
	fx_t *f = *state;
	if (f && f->env.ni != PTL_INVALID_HANDLE)
		PtlNIFini(f->env.ni);
	free(f);
	return 0;
}

/* NI + open ACL + a put MD of `len` bytes on a 256-event initiator EQ. */
static void fx_start(fx_t *f, ptl_size_t len)
{
	ptlt_ni_init(&f->env, NULL);
	ptlt_open_acl(&f->env);
	assert_rc(PtlEQAlloc(f->env.ni, 256, PTL_EQ_HANDLER_NONE, &f->ieq), PTL_OK);
	for (size_t i = 0; i < sizeof(f->ibuf); i++)
		f->ibuf[i] = (uint8_t)(i + 1);
	f->imd = ptlt_bind(&f->env, f->ibuf, len, PTL_MD_THRESH_INF, 0, f->ieq, PTL_RETAIN);
}

/* ME (match bits mb) + MD on `eq` over tbuf[k] (manage remote, so any number of puts fit). */
static ptl_handle_md_t fx_target(fx_t *f, int k, ptl_match_bits_t mb, unsigned opts,
				 ptl_handle_eq_t eq, ptl_handle_me_t *meh)
{
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	ptl_handle_me_t me;
	ptl_handle_md_t md;
	assert_rc(PtlMEAttach(f->env.ni, SCN_PT, any, mb, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t d = { .start = f->tbuf[k], .length = sizeof(f->tbuf[k]), .threshold = PTL_MD_THRESH_INF,
		       .options = PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | opts,
		       .user_ptr = f->tbuf[k], .eq_handle = eq };
	assert_rc(PtlMDAttach(me, d, PTL_RETAIN, &md), PTL_OK);
	if (meh)
		*meh = me;
	return md;
}

/* Put with ack to match bits mb; wait for SEND_START, SEND_END, ACK on the initiator EQ. */
static void put_acked(fx_t *f, ptl_match_bits_t mb, ptl_hdr_data_t hdr)
{
	assert_rc(PtlPut(f->imd, PTL_ACK_REQ, f->env.self, SCN_PT, 0, mb, 0, hdr), PTL_OK);
	expect_event(f->ieq, PTL_EVENT_SEND_START, .hdr_data = PTLT_V(hdr));
	expect_event(f->ieq, PTL_EVENT_SEND_END, .hdr_data = PTLT_V(hdr));
	expect_event(f->ieq, PTL_EVENT_ACK, .match_bits = PTLT_V(mb));
}

/* ---- capacity: count events fit and come back in order ------------------------- */

static void fits(void **state, ptl_size_t count, unsigned opts, int nput)
{
	fx_t *f = *state;
	ptl_handle_eq_t teq;
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, count, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_handle_md_t tmd = fx_target(f, 0, 0, opts, teq, NULL);
	int per = (opts & PTL_MD_EVENT_START_DISABLE) ? 1 : 2;
	for (int i = 0; i < nput; i++)
		put_acked(f, 0, (ptl_hdr_data_t)i);

	ptl_seq_t seq0 = 0;
	for (int e = 0; e < nput * per; e++) {
		ptl_event_t ev;
		int rc = PtlEQGet(teq, &ev);
		if (rc != PTL_OK)
			ptlt_fail_at(__FILE__, __LINE__, "event %d of %d: PtlEQGet returned %s", e,
				     nput * per, ptlt_rc_str(rc));
		ptl_event_kind_t want = per == 1 ? PTL_EVENT_PUT_END
					: (e % 2 ? PTL_EVENT_PUT_END : PTL_EVENT_PUT_START);
		if (ev.type != want || ev.md_handle != tmd || ev.hdr_data != (ptl_hdr_data_t)(e / per))
			ptlt_fail_at(__FILE__, __LINE__, "event %d: %s hdr %llu, expected %s hdr %d", e,
				     ptlt_kind_str(ev.type), (unsigned long long)ev.hdr_data,
				     ptlt_kind_str(want), e / per);
		if (e == 0)
			seq0 = ev.sequence;
		else
			assert_int_equal(ev.sequence, (ptl_seq_t)(seq0 + (ptl_seq_t)e));
	}
	expect_eq_empty(teq);
	expect_eq_empty(f->ieq);
}

static void eq_count_events_fit(void **state)
{
	fits(state, 8, 0, 4); /* 8 events in an EQ of 8 */
}

static void eq_count_not_power_of_two_fits(void **state)
{
	fits(state, 5, PTL_MD_EVENT_START_DISABLE, 5); /* 5 events in an EQ of 5 */
}

static void eq_one_event_fits(void **state)
{
	fits(state, 1, PTL_MD_EVENT_START_DISABLE, 1);
}

/* ---- overflow: PTL_EQ_DROPPED once, then the oldest survivors in order ----------- */

enum { RD_GET, RD_WAIT, RD_POLL };

static int read_one(int how, ptl_handle_eq_t eq, ptl_event_t *ev)
{
	int which = -1;
	switch (how) {
	case RD_WAIT: return PtlEQWait(eq, ev);
	case RD_POLL: {
		int rc = PtlEQPoll(&eq, 1, 0, ev, &which);
		if ((rc == PTL_OK || rc == PTL_EQ_DROPPED) && which != 0)
			return -1000;
		return rc;
	}
	default: return PtlEQGet(eq, ev);
	}
}

static void overflow(void **state, int how)
{
	fx_t *f = *state;
	enum { N = 8, NPUT = 12, NEV = 2 * NPUT };
	ptl_handle_eq_t teq;
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, N, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_handle_md_t tmd = fx_target(f, 0, 0, 0, teq, NULL);
	for (int i = 0; i < NPUT; i++)
		put_acked(f, 0, (ptl_hdr_data_t)(100 + i));

	ptl_event_t ev[NEV + 1];
	int n = 0;
	for (; n <= NEV; n++) {
		memset(&ev[n], 0, sizeof(ev[n]));
		/* PtlEQWait only where an event is certain (it blocks) */
		int rc = how == RD_WAIT && n >= 1 ? PtlEQGet(teq, &ev[n]) : read_one(how, teq, &ev[n]);
		if (rc == PTL_EQ_EMPTY)
			break;
		int want = n == 0 ? PTL_EQ_DROPPED : PTL_OK;
		if (rc != want)
			ptlt_fail_at(__FILE__, __LINE__, "retrieval %d after overflow returned %s, expected %s",
				     n, ptlt_rc_str(rc), ptlt_rc_str(want));
		if (ev[n].md_handle != tmd || ev[n].md.user_ptr != f->tbuf[0] ||
		    (ev[n].type != PTL_EVENT_PUT_START && ev[n].type != PTL_EVENT_PUT_END))
			ptlt_fail_at(__FILE__, __LINE__, "retrieval %d returned an invalid event (%s)", n,
				     ptlt_kind_str(ev[n].type));
		if (n > 0 && ev[n].sequence != (ptl_seq_t)(ev[n - 1].sequence + 1))
			ptlt_fail_at(__FILE__, __LINE__, "retrieval %d: sequence %u after %u", n,
				     (unsigned)ev[n].sequence, (unsigned)ev[n - 1].sequence);
	}
	if (n < N || n >= NEV)
		ptlt_fail_at(__FILE__, __LINE__, "%d events retrieved from an EQ of %d after %d were posted",
			     n, N, NEV);
	/* the survivors are the newest n events, returned oldest first */
	for (int i = 0; i < n; i++) {
		int e = NEV - n + i; /* event number: put e/2, START if even */
		ptl_event_kind_t k = (e % 2) ? PTL_EVENT_PUT_END : PTL_EVENT_PUT_START;
		if (ev[i].type != k || ev[i].hdr_data != (ptl_hdr_data_t)(100 + e / 2))
			ptlt_fail_at(__FILE__, __LINE__, "retrieval %d is %s of put %llu, expected %s of put %d"
				     " (the oldest surviving events first)", i, ptlt_kind_str(ev[i].type),
				     (unsigned long long)ev[i].hdr_data - 100, ptlt_kind_str(k), e / 2);
	}
	expect_eq_empty(teq);
	/* the loss is reported once: the next event is PTL_OK and continues the sequence */
	put_acked(f, 0, 999);
	ptl_event_t nx;
	assert_rc(PtlEQGet(teq, &nx), PTL_OK);
	assert_int_equal(nx.type, PTL_EVENT_PUT_START);
	assert_int_equal(nx.sequence, (ptl_seq_t)(ev[n - 1].sequence + 1));
	expect_event(teq, PTL_EVENT_PUT_END, .hdr_data = PTLT_V(999));
	expect_eq_empty(teq);
}

static void eq_overflow_get(void **state) { overflow(state, RD_GET); }
static void eq_overflow_wait(void **state) { overflow(state, RD_WAIT); }
static void eq_overflow_poll(void **state) { overflow(state, RD_POLL); }

/* ---- PtlEQWait, retrieval removes ----------------------------------------------- */

static void eq_wait_and_get_remove_events(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t teq;
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 16, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_handle_md_t tmd = fx_target(f, 0, 0, 0, teq, NULL);
	put_acked(f, 0, 7);
	ptl_event_t a, b;
	assert_rc(PtlEQWait(teq, &a), PTL_OK);
	assert_int_equal(a.type, PTL_EVENT_PUT_START);
	assert_int_equal(a.md_handle, tmd);
	assert_rc(PtlEQGet(teq, &b), PTL_OK);
	assert_int_equal(b.type, PTL_EVENT_PUT_END);
	assert_int_equal(b.sequence, (ptl_seq_t)(a.sequence + 1));
	assert_int_equal(b.link, a.link);
	assert_rc(PtlEQGet(teq, &b), PTL_EQ_EMPTY);
	assert_rc(PtlEQGet(teq, &b), PTL_EQ_EMPTY);
}

/* ---- PtlEQPoll over several EQs ------------------------------------------------- */

static void eq_poll_several_which_eq(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t eqs[3];
	ptl_handle_md_t mds[3];
	fx_start(f, 8);
	for (int k = 0; k < 3; k++) {
		assert_rc(PtlEQAlloc(f->env.ni, 16, PTL_EQ_HANDLER_NONE, &eqs[k]), PTL_OK);
		mds[k] = fx_target(f, k, (ptl_match_bits_t)(10 + k), 0, eqs[k], NULL);
	}
	ptl_event_t ev;
	int which = -1;
	assert_rc(PtlEQPoll(eqs, 3, 0, &ev, &which), PTL_EQ_EMPTY);

	/* only EQ #2 has events */
	put_acked(f, 12, 2);
	for (int i = 0; i < 2; i++) {
		which = -1;
		assert_rc(PtlEQPoll(eqs, 3, PTLT_WAIT_MS, &ev, &which), PTL_OK);
		assert_int_equal(which, 2);
		assert_int_equal(ev.md_handle, mds[2]);
		assert_int_equal(ev.type, i ? PTL_EVENT_PUT_END : PTL_EVENT_PUT_START);
	}
	assert_rc(PtlEQPoll(eqs, 3, 0, &ev, &which), PTL_EQ_EMPTY);

	/* events on EQ #0 and #1: every event reports the EQ it came from */
	put_acked(f, 10, 0);
	put_acked(f, 11, 1);
	int seen[3] = { 0, 0, 0 };
	for (int i = 0; i < 4; i++) {
		which = -1;
		assert_rc(PtlEQPoll(eqs, 3, PTLT_WAIT_MS, &ev, &which), PTL_OK);
		assert_in_range(which, 0, 1);
		assert_int_equal(ev.md_handle, mds[which]);
		assert_int_equal(ev.hdr_data, (ptl_hdr_data_t)which);
		seen[which]++;
	}
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 2);
	expect_eqs_empty(eqs, 3);

	/* a subset: the index is relative to the array passed */
	put_acked(f, 12, 2);
	ptl_handle_eq_t sub[2] = { eqs[2], eqs[0] };
	assert_rc(PtlEQPoll(sub, 2, PTLT_WAIT_MS, &ev, &which), PTL_OK);
	assert_int_equal(which, 0);
	assert_int_equal(ev.md_handle, mds[2]);
	assert_rc(PtlEQPoll(sub, 2, PTLT_WAIT_MS, &ev, &which), PTL_OK);
	assert_int_equal(which, 0);
	expect_eqs_empty(eqs, 3);
}

static void eq_poll_timeout(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t eqs[2];
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 4, PTL_EQ_HANDLER_NONE, &eqs[0]), PTL_OK);
	assert_rc(PtlEQAlloc(f->env.ni, 4, PTL_EQ_HANDLER_NONE, &eqs[1]), PTL_OK);
	ptl_event_t ev;
	int which = -1;
	uint64_t t0 = ptlt_now_ms();
	assert_rc(PtlEQPoll(eqs, 2, 0, &ev, &which), PTL_EQ_EMPTY);
	uint64_t t1 = ptlt_now_ms();
	assert_rc(PtlEQPoll(eqs, 2, 100, &ev, &which), PTL_EQ_EMPTY);
	uint64_t t2 = ptlt_now_ms();
	if (t1 - t0 > 1000)
		ptlt_fail_at(__FILE__, __LINE__, "PtlEQPoll(timeout 0) took %llu ms",
			     (unsigned long long)(t1 - t0));
	if (t2 - t1 < 80 || t2 - t1 > 5000)
		ptlt_fail_at(__FILE__, __LINE__, "PtlEQPoll(timeout 100 ms) returned after %llu ms",
			     (unsigned long long)(t2 - t1));
}

/* A blocked PtlEQPoll wakes up when another thread's put produces an event. */
struct waker {
	fx_t *f;
	int rc;
};

static void *waker_main(void *p)
{
	struct waker *w = p;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	w->rc = PtlPut(w->f->imd, PTL_NO_ACK_REQ, w->f->env.self, SCN_PT, 0, 0, 0, 5);
	return NULL;
}

static void eq_poll_wakes_on_event_from_other_thread(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t teq;
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 16, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_handle_md_t tmd = fx_target(f, 0, 0, 0, teq, NULL);
	struct waker w = { f, -1 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, waker_main, &w), 0);
	ptl_event_t ev;
	int which = -1;
	int rc = PtlEQPoll(&teq, 1, 3000, &ev, &which);
	pthread_join(th, NULL);
	assert_rc(w.rc, PTL_OK);
	assert_rc(rc, PTL_OK);
	assert_int_equal(ev.type, PTL_EVENT_PUT_START);
	assert_int_equal(ev.md_handle, tmd);
	expect_event(teq, PTL_EVENT_PUT_END, .hdr_data = PTLT_V(5));
	expect_event(f->ieq, PTL_EVENT_SEND_START);
	expect_event(f->ieq, PTL_EVENT_SEND_END);
	expect_eq_empty(teq);
	expect_eq_empty(f->ieq);
}

/* ---- EQ handler: called with each event when it is dequeued ---------------------- */

static struct {
	int calls;
	ptl_event_kind_t kind[8];
	ptl_seq_t seq[8];
} hrec;

static void record_handler(ptl_event_t *ev)
{
	if (hrec.calls < 8) {
		hrec.kind[hrec.calls] = ev->type;
		hrec.seq[hrec.calls] = ev->sequence;
	}
	hrec.calls++;
}

static void eq_handler_called_on_dequeue(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t teq;
	memset(&hrec, 0, sizeof(hrec));
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 16, record_handler, &teq), PTL_OK);
	fx_target(f, 0, 0, 0, teq, NULL);
	put_acked(f, 0, 1);
	/* both target events are queued; nobody dequeued them yet */
	assert_int_equal(hrec.calls, 0);
	ptl_event_t ev;
	assert_rc(PtlEQGet(teq, &ev), PTL_OK);
	assert_int_equal(hrec.calls, 1);
	assert_int_equal(hrec.kind[0], ev.type);
	assert_int_equal(hrec.seq[0], ev.sequence);
	assert_rc(PtlEQWait(teq, &ev), PTL_OK);
	assert_int_equal(hrec.calls, 2);
	assert_int_equal(hrec.kind[1], ev.type);
	assert_int_equal(hrec.seq[1], ev.sequence);
	put_acked(f, 0, 2);
	int which = -1;
	assert_rc(PtlEQPoll(&teq, 1, PTLT_WAIT_MS, &ev, &which), PTL_OK);
	assert_int_equal(hrec.calls, 3);
	assert_int_equal(hrec.kind[2], PTL_EVENT_PUT_START);
	assert_rc(PtlEQGet(teq, &ev), PTL_OK);
	assert_rc(PtlEQGet(teq, &ev), PTL_EQ_EMPTY);
	assert_int_equal(hrec.calls, 4);
}

/* ---- one EQ shared by several MDs ------------------------------------------------ */

static void eq_shared_by_several_mds(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t teq;
	ptl_handle_md_t md[3];
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 32, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	for (int k = 0; k < 3; k++)
		md[k] = fx_target(f, k, (ptl_match_bits_t)k, 0, teq, NULL);
	put_acked(f, 2, 20);
	put_acked(f, 0, 21);
	put_acked(f, 1, 22);
	const int order[3] = { 2, 0, 1 };
	ptl_seq_t s = 0;
	for (int i = 0; i < 6; i++) {
		ptl_event_t ev = expect_event(teq, (i % 2) ? PTL_EVENT_PUT_END : PTL_EVENT_PUT_START,
					      .md_handle = PTLT_V(md[order[i / 2]]),
					      .user_ptr = PTLT_V((uintptr_t)f->tbuf[order[i / 2]]),
					      .hdr_data = PTLT_V(20 + i / 2));
		if (i)
			assert_int_equal(ev.sequence, (ptl_seq_t)(s + 1));
		s = ev.sequence;
	}
	expect_eq_empty(teq);
}

/* ---- PtlEQFree: a freed EQ's handle is dead, a new one works ---------------------- */

static void eq_free_and_realloc(void **state)
{
	fx_t *f = *state;
	ptl_handle_eq_t a, b;
	fx_start(f, 8);
	assert_rc(PtlEQAlloc(f->env.ni, 4, PTL_EQ_HANDLER_NONE, &a), PTL_OK);
	assert_rc(PtlEQFree(a), PTL_OK);
	assert_rc(PtlEQAlloc(f->env.ni, 4, PTL_EQ_HANDLER_NONE, &b), PTL_OK);
	ptl_event_t ev;
	assert_rc(PtlEQGet(a, &ev), PTL_EQ_INVALID);
	assert_rc(PtlEQGet(b, &ev), PTL_EQ_EMPTY);
	fx_target(f, 0, 0, 0, b, NULL);
	put_acked(f, 0, 3);
	expect_event(b, PTL_EVENT_PUT_START);
	expect_event(b, PTL_EVENT_PUT_END);
	expect_eq_empty(b);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
static const struct CMUnitTest tests[] = {
	T(eq_count_events_fit),
	T(eq_count_not_power_of_two_fits),
	T(eq_one_event_fits),
	T(eq_overflow_get),
	T(eq_overflow_wait),
	T(eq_overflow_poll),
	T(eq_wait_and_get_remove_events),
	T(eq_poll_several_which_eq),
	T(eq_poll_timeout),
	T(eq_poll_wakes_on_event_from_other_thread),
	T(eq_handler_called_on_dequeue),
	T(eq_shared_by_several_mds),
	T(eq_free_and_realloc),
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "eq (spec 6.10)", NULL, 0, tests, sizeof(tests) / sizeof(tests[0]));
}
