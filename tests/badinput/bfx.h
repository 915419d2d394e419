/*
 * bfx.h - fixture shared by the bad-input tests (header only).
 *
 * A fresh NI per row, with valid objects of every kind, plus dead handles of
 * every kind: "freed" (object freed, nothing allocated since) and "stale"
 * (object freed, then a new object of the same kind allocated, which may
 * reuse the slot; `*_new` is that new object and must keep working).
 * bfx_sanity() checks, after a bad call, that the NI still moves data:
 * a put with ack to self must produce exactly its events and data, and the
 * new objects behind the stale handles must still be usable.
 */
#ifndef BFX_H
#define BFX_H

#include "ptltest.h"

#include <stdlib.h>
#include <string.h>

#define BFX_PT 2
#define BFX_LEN 16

typedef struct {
	ptlt_env_t env;
	ptl_handle_eq_t eq, teq;          /* initiator / target EQs */
	ptl_handle_md_t md;               /* bound put MD (BFX_LEN bytes) */
	ptl_handle_me_t me;               /* ME on BFX_PT ... */
	ptl_handle_md_t tmd;              /* ... with this MD (manage remote, INF) */
	ptl_handle_me_t me_nomd;          /* ME on BFX_PT + 1 without MD */
	ptl_handle_eq_t eq_freed, eq_stale, eq_new;
	ptl_handle_md_t md_freed, md_stale, md_new;
	ptl_handle_me_t me_freed, me_stale, me_new;
	int puts;
	uint8_t ibuf[64], tbuf[64], xbuf[64];
} bfx_t;

static inline ptl_md_t bfx_md(void *start, ptl_size_t len, unsigned opts, ptl_handle_eq_t eq)
{
	ptl_md_t d = { .start = start, .length = len, .threshold = PTL_MD_THRESH_INF, .max_size = 0,
		       .options = opts, .user_ptr = start, .eq_handle = eq };
	return d;
}

static inline int bfx_setup(void **state)
{
	bfx_t *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->env.ni = PTL_INVALID_HANDLE;
	*state = f;
	return 0;
}

static inline int bfx_teardown(void **state)
{
	bfx_t *f = *state;
	/* more than once: a duplicate PtlNIInit may have taken a second reference */
	for (int k = 0; f && f->env.ni != PTL_INVALID_HANDLE && k < 4; k++)
		if (PtlNIFini(f->env.ni) != PTL_OK)
			break;
	free(f);
	return 0;
}

/* Build everything (fails the test on error). */
static inline void bfx_start(bfx_t *f, ptl_ni_limits_t *desired)
{
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	ptl_handle_eq_t e;
	ptl_handle_md_t m;
	ptl_handle_me_t x;
	ptlt_env_t *env = &f->env;

	ptlt_ni_init(env, desired);
	ptlt_open_acl(env);
	for (int i = 0; i < 64; i++) {
		f->ibuf[i] = (uint8_t)(0x40 + i);
		f->tbuf[i] = 0;
	}
	assert_rc(PtlEQAlloc(env->ni, 16, PTL_EQ_HANDLER_NONE, &f->eq), PTL_OK);
	assert_rc(PtlEQAlloc(env->ni, 16, PTL_EQ_HANDLER_NONE, &f->teq), PTL_OK);
	assert_rc(PtlMDBind(env->ni, bfx_md(f->ibuf, BFX_LEN, 0, f->eq), PTL_RETAIN, &f->md), PTL_OK);
	assert_rc(PtlMEAttach(env->ni, BFX_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me), PTL_OK);
	assert_rc(PtlMDAttach(f->me, bfx_md(f->tbuf, sizeof(f->tbuf), PTL_MD_OP_PUT | PTL_MD_OP_GET |
						PTL_MD_MANAGE_REMOTE, f->teq), PTL_RETAIN, &f->tmd), PTL_OK);
	assert_rc(PtlMEAttach(env->ni, BFX_PT + 1, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me_nomd), PTL_OK);

	/* stale: free, then allocate again */
	assert_rc(PtlEQAlloc(env->ni, 4, PTL_EQ_HANDLER_NONE, &f->eq_stale), PTL_OK);
	assert_rc(PtlEQFree(f->eq_stale), PTL_OK);
	assert_rc(PtlEQAlloc(env->ni, 4, PTL_EQ_HANDLER_NONE, &f->eq_new), PTL_OK);
	assert_rc(PtlMDBind(env->ni, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &f->md_stale), PTL_OK);
	assert_rc(PtlMDUnlink(f->md_stale), PTL_OK);
	assert_rc(PtlMDBind(env->ni, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &f->md_new), PTL_OK);
	assert_rc(PtlMEAttach(env->ni, BFX_PT + 2, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me_stale), PTL_OK);
	assert_rc(PtlMEUnlink(f->me_stale), PTL_OK);
	assert_rc(PtlMEAttach(env->ni, BFX_PT + 2, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &f->me_new), PTL_OK);

	/* freed: free, allocate nothing */
	assert_rc(PtlEQAlloc(env->ni, 4, PTL_EQ_HANDLER_NONE, &e), PTL_OK);
	assert_rc(PtlEQFree(e), PTL_OK);
	f->eq_freed = e;
	assert_rc(PtlMDBind(env->ni, bfx_md(f->xbuf, 8, 0, PTL_EQ_NONE), PTL_RETAIN, &m), PTL_OK);
	assert_rc(PtlMDUnlink(m), PTL_OK);
	f->md_freed = m;
	assert_rc(PtlMEAttach(env->ni, BFX_PT + 2, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &x), PTL_OK);
	assert_rc(PtlMEUnlink(x), PTL_OK);
	f->me_freed = x;

	/* the brief's "never valid" values really are never handed out */
	const ptl_handle_any_t live[] = { env->ni, f->eq, f->teq, f->md, f->me, f->tmd, f->me_nomd,
					  f->eq_new, f->md_new, f->me_new };
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++)
		if (live[i] == 0 || live[i] == 0x12345 || live[i] == PTL_INVALID_HANDLE ||
		    live[i] == PTL_HANDLE_NONE || live[i] == PTL_EQ_NONE)
			ptlt_fail_at(__FILE__, __LINE__, "library handed out handle %#x", (unsigned)live[i]);
	/* dead handles must differ from the live ones they could be confused with */
	if (f->eq_stale == f->eq_new || f->md_stale == f->md_new || f->me_stale == f->me_new)
		ptlt_fail_at(__FILE__, __LINE__, "a reallocated object got the very same handle as the "
			     "freed one (no generation): stale handles cannot be detected");
}

/* After a bad call: the NI and every live object still work. */
static inline void bfx_sanity_at(const char *file, int line, bfx_t *f)
{
	ptl_handle_eq_t eqs[2] = { f->eq, f->teq };
	ptl_sr_value_t d0 = ptlt_drop_count(f->env.ni);
	ptl_size_t roff = (ptl_size_t)(f->puts % 3) * BFX_LEN;
	ptl_hdr_data_t hdr = 0xbf00u + (ptl_hdr_data_t)f->puts;
	f->puts++;
	memset(f->tbuf, 0, sizeof(f->tbuf));
	int rc = PtlPut(f->md, PTL_ACK_REQ, f->env.self, BFX_PT, 0, 0, roff, hdr);
	if (rc != PTL_OK)
		ptlt_fail_at(file, line, "sanity put after the bad call: PtlPut returned %s", ptlt_rc_str(rc));
	ptlt_expect_event_at(file, line, f->eq, &(ptlt_evx_t){ .kind = PTL_EVENT_SEND_START,
				.md_handle = PTLT_V(f->md), .hdr_data = PTLT_V(hdr) });
	ptlt_expect_event_at(file, line, f->eq, &(ptlt_evx_t){ .kind = PTL_EVENT_SEND_END,
				.md_handle = PTLT_V(f->md), .ni_fail_type = PTLT_V(PTL_NI_OK) });
	ptlt_expect_event_at(file, line, f->eq, &(ptlt_evx_t){ .kind = PTL_EVENT_ACK,
				.md_handle = PTLT_V(f->md), .mlength = PTLT_V(BFX_LEN) });
	ptlt_expect_event_at(file, line, f->teq, &(ptlt_evx_t){ .kind = PTL_EVENT_PUT_START,
				.md_handle = PTLT_V(f->tmd), .offset = PTLT_V(roff) });
	ptlt_expect_event_at(file, line, f->teq, &(ptlt_evx_t){ .kind = PTL_EVENT_PUT_END,
				.md_handle = PTLT_V(f->tmd), .mlength = PTLT_V(BFX_LEN),
				.hdr_data = PTLT_V(hdr) });
	ptlt_expect_eqs_empty_at(file, line, eqs, 2);
	if (memcmp(f->tbuf + roff, f->ibuf, BFX_LEN) != 0)
		ptlt_fail_at(file, line, "sanity put: data did not land");
	ptlt_expect_drops_at(file, line, &f->env, eqs, 2, d0, 0);

	/* the objects behind the stale handles are alive */
	ptl_event_t ev;
	ptl_md_t old;
	ptl_handle_me_t tmp;
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	if (f->eq_new != PTL_INVALID_HANDLE && (rc = PtlEQGet(f->eq_new, &ev)) != PTL_EQ_EMPTY)
		ptlt_fail_at(file, line, "new EQ behind the stale handle: PtlEQGet %s", ptlt_rc_str(rc));
	if (f->md_new != PTL_INVALID_HANDLE &&
	    ((rc = PtlMDUpdate(f->md_new, &old, NULL, PTL_EQ_NONE)) != PTL_OK || old.start != f->xbuf))
		ptlt_fail_at(file, line, "new MD behind the stale handle: PtlMDUpdate %s", ptlt_rc_str(rc));
	if (f->me_new != PTL_INVALID_HANDLE) {
		rc = PtlMEInsert(f->me_new, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &tmp);
		if (rc != PTL_OK)
			ptlt_fail_at(file, line, "new ME behind the stale handle: PtlMEInsert %s", ptlt_rc_str(rc));
		assert_rc(PtlMEUnlink(tmp), PTL_OK);
	}
}
#define bfx_sanity(f) bfx_sanity_at(__FILE__, __LINE__, (f))

#endif /* BFX_H */
