/*
 * scn.c - the scenario-table runner (see scn.h).
 */
#include "scn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { Q_T = 0, Q_I, Q_G, SCN_NQ };

typedef struct {
	ptlt_env_t env;
	const scn_row_t *row;
	ptl_handle_eq_t eq[SCN_NQ];
	ptl_handle_me_t me[SCN_MAX_ME];
	ptl_handle_md_t md[SCN_NROLE];
	ptl_md_t mdval[SCN_NROLE];                /* what the role's MD currently is */
	ptl_md_t prevval[SCN_NROLE];              /* ... and was before the last update */
	ptl_md_iovec_t iov[SCN_NROLE][2][8];      /* two generations (attach / update) */
	int iov_gen[SCN_NROLE];
	unsigned version[SCN_NROLE];
	uint8_t buf[SCN_NROLE][SCN_BUF];
	uint8_t orig[SCN_NROLE][SCN_BUF];
	ptl_pt_index_t anypt;
	bool have_seq[SCN_NQ];
	ptl_seq_t last_seq[SCN_NQ];
	bool start_open[SCN_NROLE];
	ptl_event_kind_t start_kind[SCN_NROLE];
	ptl_seq_t start_link[SCN_NROLE];
	int stepno;
} scn_ctx_t;

static const char *role_name(int r)
{
	static const char *n[] = { "T0", "T1", "T2", "T3", "I", "G" };
	return (r >= 0 && r < SCN_NROLE) ? n[r] : "?";
}

static int role_q(int r)
{
	return r == RI ? Q_I : r == RG ? Q_G : Q_T;
}

uint8_t scn_fill(int r, size_t j)
{
	uint32_t x = (uint32_t)(r * SCN_BUF + (int)j + 1) * 2654435761u;
	return (uint8_t)(x >> 13);
}

int scn_group_setup(void **state)
{
	int maxif = -1;
	(void)state;
	if (PtlInit(&maxif) != PTL_OK)
		return -1;
	return 0;
}

int scn_group_teardown(void **state)
{
	(void)state;
	PtlFini();
	return 0;
}

static void scn_fail(scn_ctx_t *c, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void scn_fail(scn_ctx_t *c, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ptlt_fail_at(file, line, "[row %s, step %d] %s", c->row->name, c->stepno, msg);
}
#define SFAIL(c, ...) scn_fail((c), __FILE__, __LINE__, __VA_ARGS__)

static ptl_md_t build_md(scn_ctx_t *c, int r, const scn_md_t *s)
{
	ptl_md_t md;
	memset(&md, 0, sizeof(md));
	uint8_t *base = c->buf[r] + s->start_off;
	if (s->iov > 0) {
		int g = c->iov_gen[r] ^= 1; /* never rewrite the array a live MD may use */
		for (int i = 0; i < s->iov && i < 8; i++) {
			c->iov[r][g][i].iov_base = base + 16 * i;
			c->iov[r][g][i].iov_len = 8;
		}
		md.start = c->iov[r][g];
		md.length = (ptl_size_t)s->iov;
		md.options = s->opts | PTL_MD_IOVEC;
	} else {
		md.start = base;
		md.length = s->len;
		md.options = s->opts;
	}
	md.threshold = s->thr;
	md.max_size = s->max_size;
	c->version[r]++;
	md.user_ptr = (void *)(uintptr_t)(0x5c0000u + 0x100u * (unsigned)r + c->version[r]);
	md.eq_handle = s->eq_none ? PTL_EQ_NONE : c->eq[role_q(r)];
	return md;
}

static ptl_process_id_t make_id(const scn_ctx_t *c, scn_id_t k)
{
	ptl_process_id_t id = { PTL_NID_ANY, PTL_PID_ANY };
	const ptl_process_id_t s = c->env.self;
	switch (k) {
	case ID_ANY: break;
	case ID_SELF: id = s; break;
	case ID_SELF_NID: id.nid = s.nid; break;
	case ID_SELF_PID: id.pid = s.pid; break;
	case ID_OTHER_PID: id.nid = s.nid; id.pid = s.pid + 1; break;
	case ID_OTHER_NID: id.nid = s.nid + 1; break;
	}
	return id;
}

static ptl_pt_index_t step_pt(const scn_ctx_t *c, scn_pt_t p)
{
	return p == PT_ANYME ? c->anypt : p == PT_OTHER ? SCN_PT + 1 : SCN_PT;
}

/* ---- setup / teardown of one row ------------------------------------------- */

static int row_setup(void **state)
{
	const scn_row_t *row = *state;
	scn_ctx_t *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->row = row;
	*state = c;
	for (int q = 0; q < SCN_NQ; q++)
		c->eq[q] = PTL_EQ_NONE;
	for (int r = 0; r < SCN_NROLE; r++)
		c->md[r] = PTL_INVALID_HANDLE;
	for (int i = 0; i < SCN_MAX_ME; i++)
		c->me[i] = PTL_INVALID_HANDLE;
	c->env.ni = PTL_INVALID_HANDLE;
	return 0;
}

static int row_teardown(void **state)
{
	scn_ctx_t *c = *state;
	if (c) {
		if (c->env.ni != PTL_INVALID_HANDLE)
			PtlNIFini(c->env.ni);
		free(c);
	}
	return 0;
}

static void apply_acl(scn_ctx_t *c)
{
	const scn_row_t *row = c->row;
	if (!row->acl_default)
		ptlt_open_acl(&c->env);
	for (int i = 0; i < SCN_MAX_ACE; i++) {
		const scn_ace_t *a = &row->ace[i];
		if (!a->used)
			continue;
		const ptl_process_id_t s = c->env.self;
		ptl_process_id_t id = {
			a->nid == K_ANY ? PTL_NID_ANY : a->nid == K_SELF ? s.nid : s.nid + 1,
			a->pid == K_ANY ? PTL_PID_ANY : a->pid == K_SELF ? s.pid : s.pid + 1,
		};
		ptl_uid_t uid = a->uid == K_ANY ? PTL_UID_ANY : a->uid == K_SELF ? c->env.uid : c->env.uid + 1;
		ptl_jid_t jid = a->jid == K_ANY ? PTL_JID_ANY : a->jid == K_SELF ? c->env.jid : c->env.jid + 1;
		ptl_pt_index_t pt = a->pt == K_ANY ? PTL_PT_INDEX_ANY : a->pt == K_SELF ? SCN_PT : SCN_PT + 1;
		assert_rc(PtlACEntry(c->env.ni, a->idx, id, uid, jid, pt), PTL_OK);
	}
}

static void build_objects(scn_ctx_t *c)
{
	const scn_row_t *row = c->row;
	bool on_scn_pt = false;

	for (int q = 0; q < SCN_NQ; q++)
		assert_rc(PtlEQAlloc(c->env.ni, SCN_EQ_COUNT, PTL_EQ_HANDLER_NONE, &c->eq[q]), PTL_OK);
	for (int r = 0; r < SCN_NROLE; r++)
		for (size_t j = 0; j < SCN_BUF; j++)
			c->buf[r][j] = c->orig[r][j] = scn_fill(r, j);

	for (int i = 0; i < row->nme; i++) {
		const scn_me_t *m = &row->me[i];
		ptl_process_id_t id = make_id(c, m->id);
		int rc;
		switch (m->att) {
		case ATT_TAIL:
		case ATT_HEAD:
			rc = PtlMEAttach(c->env.ni, SCN_PT, id, m->mbits, m->ibits, m->unlink,
					 m->att == ATT_HEAD ? PTL_INS_BEFORE : PTL_INS_AFTER, &c->me[i]);
			on_scn_pt = true;
			break;
		case ATT_BEFORE:
		case ATT_AFTER:
			rc = PtlMEInsert(c->me[m->base], id, m->mbits, m->ibits, m->unlink,
					 m->att == ATT_BEFORE ? PTL_INS_BEFORE : PTL_INS_AFTER, &c->me[i]);
			break;
		case ATT_ANY:
		default:
			c->anypt = PTL_PT_INDEX_ANY;
			rc = PtlMEAttachAny(c->env.ni, &c->anypt, id, m->mbits, m->ibits, m->unlink, &c->me[i]);
			if (rc == PTL_OK) {
				if ((int)c->anypt < 0 || (int)c->anypt > c->env.limits.max_pt_index)
					SFAIL(c, "PtlMEAttachAny returned pt_index %" PRIu32 " (max %d)", c->anypt,
					      c->env.limits.max_pt_index);
				if (on_scn_pt && c->anypt == SCN_PT)
					SFAIL(c, "PtlMEAttachAny picked portal %d, which already has an ME", SCN_PT);
			}
			break;
		}
		if (rc != PTL_OK)
			SFAIL(c, "attaching ME %d: %s", i, ptlt_rc_str(rc));
		if (!m->no_md) {
			c->mdval[i] = c->prevval[i] = build_md(c, i, &m->md);
			rc = PtlMDAttach(c->me[i], c->mdval[i], m->md.unlink, &c->md[i]);
			if (rc != PTL_OK)
				SFAIL(c, "PtlMDAttach on ME %d: %s", i, ptlt_rc_str(rc));
		}
	}
	const scn_md_t *im[2] = { &row->imd, &row->gmd };
	for (int k = 0; k < 2; k++) {
		int r = k == 0 ? RI : RG;
		if (!im[k]->used)
			continue;
		c->mdval[r] = c->prevval[r] = build_md(c, r, im[k]);
		int rc = PtlMDBind(c->env.ni, c->mdval[r], im[k]->unlink, &c->md[r]);
		if (rc != PTL_OK)
			SFAIL(c, "PtlMDBind of %s: %s", role_name(r), ptlt_rc_str(rc));
	}
}

/* ---- one expected event ------------------------------------------------------ */

static bool is_start(ptl_event_kind_t k)
{
	return k == PTL_EVENT_GET_START || k == PTL_EVENT_PUT_START || k == PTL_EVENT_GETPUT_START ||
	       k == PTL_EVENT_REPLY_START || k == PTL_EVENT_SEND_START;
}

static bool is_end(ptl_event_kind_t k)
{
	return k == PTL_EVENT_GET_END || k == PTL_EVENT_PUT_END || k == PTL_EVENT_GETPUT_END ||
	       k == PTL_EVENT_REPLY_END || k == PTL_EVENT_SEND_END;
}

static void dump(const ptl_event_t *ev)
{
	print_error("    got %s: initiator {%" PRIu32 ",%" PRIu32 "} pt %" PRIu32 " mbits %#" PRIx64
		    " rlength %" PRIu64 " mlength %" PRIu64 " offset %" PRIu64 " md %#" PRIx32
		    " md.threshold %d user_ptr %p hdr %#" PRIx64 " link %" PRIu32 " ni_fail %" PRIu32
		    " seq %" PRIu32 "\n",
		    ptlt_kind_str(ev->type), ev->initiator.nid, ev->initiator.pid, ev->pt_index,
		    ev->match_bits, ev->rlength, ev->mlength, ev->offset, ev->md_handle,
		    ev->md.threshold, ev->md.user_ptr, ev->hdr_data, ev->link, ev->ni_fail_type,
		    (ptl_seq_t)ev->sequence);
}

#define CHK(cond, ...)                                  \
	do {                                            \
		if (!(cond)) {                          \
			print_error("    " __VA_ARGS__); \
			print_error("\n");              \
			bad = true;                     \
		}                                       \
	} while (0)

static void expect_one(scn_ctx_t *c, const scn_step_t *st, const scn_ev_t *x, int evno)
{
	int q = role_q(x->role);
	ptl_event_t ev;
	memset(&ev, 0, sizeof(ev));
	int rc = ptlt_wait_event(c->eq[q], &ev, PTLT_WAIT_MS);
	if (rc == PTL_EQ_EMPTY)
		SFAIL(c, "expected event #%d %s on %s's EQ: nothing within %d ms", evno,
		      ptlt_kind_str(x->kind), role_name(x->role), PTLT_WAIT_MS);
	if (rc != PTL_OK) {
		dump(&ev);
		SFAIL(c, "expected event #%d %s: PtlEQPoll returned %s", evno, ptlt_kind_str(x->kind),
		      ptlt_rc_str(rc));
	}

	bool bad = false;
	const ptl_md_t *m = st->prev_snapshot ? &c->prevval[x->role] : &c->mdval[x->role];
	const ptl_pt_index_t pt = step_pt(c, st->pt);
	const ptl_event_kind_t k = ev.type;
	const bool target = x->role < RI;
	const bool sendk = k == PTL_EVENT_SEND_START || k == PTL_EVENT_SEND_END;

	CHK(k == x->kind, "kind %s, expected %s", ptlt_kind_str(k), ptlt_kind_str(x->kind));
	CHK(ev.md_handle == c->md[x->role], "md_handle %#" PRIx32 ", expected %s's %#" PRIx32,
	    ev.md_handle, role_name(x->role), c->md[x->role]);
	CHK(ev.rlength == x->rlength, "rlength %" PRIu64 ", expected %" PRIu64, ev.rlength, x->rlength);
	CHK(ev.mlength == x->mlength, "mlength %" PRIu64 ", expected %" PRIu64, ev.mlength, x->mlength);
	CHK(ev.offset == x->offset, "offset %" PRIu64 ", expected %" PRIu64, ev.offset, x->offset);
	CHK(ev.md.threshold == x->thr, "md.threshold %d, expected %d", ev.md.threshold, x->thr);
	CHK(ev.md.start == m->start && ev.md.length == m->length, "md.start/length %p/%" PRIu64
	    ", expected %p/%" PRIu64, ev.md.start, ev.md.length, m->start, m->length);
	CHK(ev.md.options == m->options, "md.options %#x, expected %#x", ev.md.options, m->options);
	CHK(ev.md.max_size == m->max_size, "md.max_size %" PRIu64, ev.md.max_size);
	CHK(ev.md.user_ptr == m->user_ptr, "md.user_ptr %p, expected %p", ev.md.user_ptr, m->user_ptr);
	CHK(ev.md.eq_handle == m->eq_handle, "md.eq_handle %#" PRIx32 ", expected %#" PRIx32,
	    ev.md.eq_handle, m->eq_handle);
	/* A dropped put may report the drop in SEND_END (PTL_NI_DROPPED). */
	bool fail_ok = ev.ni_fail_type == PTL_NI_OK ||
		       (k == PTL_EVENT_SEND_END && st->drops > 0 && ev.ni_fail_type == PTL_NI_DROPPED);
	CHK(fail_ok, "ni_fail_type %" PRIu32 " (%s)", ev.ni_fail_type,
	    PtlNIFailStr(c->env.ni, ev.ni_fail_type));
	CHK(ev.initiator.nid == c->env.self.nid && ev.initiator.pid == c->env.self.pid,
	    "initiator {%" PRIu32 ",%" PRIu32 "}, expected self", ev.initiator.nid, ev.initiator.pid);
	CHK(ev.uid == c->env.uid, "uid %" PRIu32 ", expected %" PRIu32, ev.uid, c->env.uid);
	CHK(ev.jid == c->env.jid, "jid %" PRIu32 ", expected %" PRIu32, ev.jid, c->env.jid);
	if (k == x->kind && k != PTL_EVENT_UNLINK && k != PTL_EVENT_REPLY_START &&
	    k != PTL_EVENT_REPLY_END) {
		/* target events, SEND_* and ACK echo the request */
		CHK(ev.pt_index == pt, "pt_index %" PRIu32 ", expected %" PRIu32, ev.pt_index, pt);
		CHK(ev.match_bits == st->mbits, "match_bits %#" PRIx64 ", expected %#" PRIx64,
		    ev.match_bits, st->mbits);
	}
	if (k == x->kind && (target || sendk)) {
		ptl_hdr_data_t h = (k == PTL_EVENT_GET_START || k == PTL_EVENT_GET_END) ? 0 : st->hdr;
		CHK(ev.hdr_data == h, "hdr_data %#" PRIx64 ", expected %#" PRIx64, ev.hdr_data, h);
	}
	if (c->have_seq[q])
		CHK(ev.sequence == (ptl_seq_t)(c->last_seq[q] + 1), "sequence %" PRIu32
		    " does not follow %" PRIu32 " on this EQ", (ptl_seq_t)ev.sequence, c->last_seq[q]);
	c->have_seq[q] = true;
	c->last_seq[q] = ev.sequence;
	if (is_start(k)) {
		c->start_open[x->role] = true;
		c->start_kind[x->role] = k;
		c->start_link[x->role] = ev.link;
	} else if (is_end(k)) {
		if (c->start_open[x->role] && c->start_kind[x->role] + 1 == k)
			CHK(ev.link == c->start_link[x->role], "END link %" PRIu32
			    " differs from its START's link %" PRIu32, ev.link, c->start_link[x->role]);
		c->start_open[x->role] = false;
	}
	if (bad) {
		dump(&ev);
		SFAIL(c, "event #%d (%s on %s) mismatch", evno, ptlt_kind_str(x->kind), role_name(x->role));
	}
}

/* ---- steps --------------------------------------------------------------------- */

static void check_old(scn_ctx_t *c, const scn_step_t *st, const ptl_md_t *old)
{
	const ptl_md_t *m = &c->mdval[st->role];
	bool bad = false;
	CHK(old->start == m->start && old->length == m->length, "old_md.start/length %p/%" PRIu64
	    ", expected %p/%" PRIu64, old->start, old->length, m->start, m->length);
	CHK(old->options == m->options, "old_md.options %#x, expected %#x", old->options, m->options);
	CHK(old->max_size == m->max_size, "old_md.max_size %" PRIu64, old->max_size);
	CHK(old->user_ptr == m->user_ptr, "old_md.user_ptr %p, expected %p", old->user_ptr, m->user_ptr);
	CHK(old->eq_handle == m->eq_handle, "old_md.eq_handle %#" PRIx32 ", expected %#" PRIx32,
	    old->eq_handle, m->eq_handle);
	if (st->chk_old)
		CHK(old->threshold == st->old_thr, "old_md.threshold %d, expected %d", old->threshold,
		    st->old_thr);
	if (bad)
		SFAIL(c, "PtlMDUpdate old_md snapshot of %s mismatch", role_name(st->role));
}

static int do_op(scn_ctx_t *c, const scn_step_t *st)
{
	const ptl_process_id_t self = c->env.self;
	const ptl_pt_index_t pt = step_pt(c, st->pt);
	const ptl_handle_md_t im = c->md[RI], gm = c->md[RG];
	ptl_md_t old, nmd;
	int rc;

	switch (st->op) {
	case OP_PUT:
	case OP_PUT_ACK:
		return PtlPut(im, st->op == OP_PUT_ACK ? PTL_ACK_REQ : PTL_NO_ACK_REQ, self, pt, st->ac,
			      st->mbits, st->roff, st->hdr);
	case OP_PUTREGION:
	case OP_PUTREGION_ACK:
		return PtlPutRegion(im, st->loff, st->len,
				    st->op == OP_PUTREGION_ACK ? PTL_ACK_REQ : PTL_NO_ACK_REQ, self, pt,
				    st->ac, st->mbits, st->roff, st->hdr);
	case OP_GET:
		return PtlGet(gm, self, pt, st->ac, st->mbits, st->roff);
	case OP_GETREGION:
		return PtlGetRegion(gm, st->loff, st->len, self, pt, st->ac, st->mbits, st->roff);
	case OP_GETPUT:
		return PtlGetPut(gm, im, self, pt, st->ac, st->mbits, st->roff, st->hdr);
	case OP_MD_UNLINK:
		return PtlMDUnlink(c->md[st->role]);
	case OP_ME_UNLINK:
		return PtlMEUnlink(c->me[st->role]);
	case OP_MD_UPDATE: {
		ptl_handle_eq_t teq = st->tq == TQ_T ? c->eq[Q_T] : st->tq == TQ_I ? c->eq[Q_I]
				    : st->tq == TQ_G ? c->eq[Q_G] : PTL_EQ_NONE;
		unsigned v = c->version[st->role];
		nmd = build_md(c, st->role, &st->md);
		memset(&old, 0xa5, sizeof(old));
		rc = PtlMDUpdate(c->md[st->role], &old, &nmd, teq);
		if (rc == PTL_OK || rc == PTL_MD_NO_UPDATE)
			check_old(c, st, &old);
		if (rc == PTL_OK) {
			c->prevval[st->role] = c->mdval[st->role];
			c->mdval[st->role] = nmd;
		} else
			c->version[st->role] = v;
		return rc;
	}
	case OP_MD_SNAP:
		memset(&old, 0xa5, sizeof(old));
		rc = PtlMDUpdate(c->md[st->role], &old, NULL, PTL_EQ_NONE);
		if (rc == PTL_OK)
			check_old(c, st, &old);
		return rc;
	case OP_MD_ATTACH: {
		ptl_handle_md_t h = PTL_INVALID_HANDLE;
		nmd = build_md(c, st->role, &st->md);
		rc = PtlMDAttach(c->me[st->role], nmd, st->md.unlink, &h);
		if (rc == PTL_OK) {
			c->md[st->role] = h;
			c->mdval[st->role] = c->prevval[st->role] = nmd;
			c->start_open[st->role] = false;
		}
		return rc;
	}
	case OP_DRAIN:
	case OP_END:
	default:
		return PTL_OK;
	}
}

static void check_spans(scn_ctx_t *c)
{
	uint8_t want[SCN_BUF];
	for (int r = 0; r < SCN_NROLE; r++) {
		memcpy(want, c->orig[r], SCN_BUF);
		for (int i = 0; i < SCN_MAX_SPAN; i++) {
			const scn_span_t *s = &c->row->spans[i];
			if (!s->used || s->dst != r)
				continue;
			assert_true(s->doff + s->len <= SCN_BUF && s->soff + s->len <= SCN_BUF);
			memcpy(want + s->doff, c->orig[s->src] + s->soff, s->len);
		}
		for (size_t j = 0; j < SCN_BUF; j++) {
			if (c->buf[r][j] == want[j])
				continue;
			print_error("    %s buffer byte %zu is %#04x, expected %#04x (%s)\n", role_name(r),
				    j, c->buf[r][j], want[j],
				    want[j] == c->orig[r][j] ? "unchanged" : "copied data");
			c->stepno = -1;
			SFAIL(c, "data mismatch in %s's buffer", role_name(r));
		}
	}
}

static void run_row(void **state)
{
	scn_ctx_t *c = *state;
	const scn_row_t *row = c->row;

	c->stepno = 0;
	ptlt_ni_init(&c->env, NULL);
	apply_acl(c);
	build_objects(c);

	for (int s = 0; s < SCN_MAX_STEP && row->steps[s].op != OP_END; s++) {
		const scn_step_t *st = &row->steps[s];
		c->stepno = s + 1;
		ptl_sr_value_t drops0 = ptlt_drop_count(c->env.ni);
		int rc = do_op(c, st);
		if (rc != st->ret && !(st->ret_alt != PTL_OK && rc == st->ret_alt))
			SFAIL(c, "call returned %s (%d), expected %s%s%s", ptlt_rc_str(rc), rc,
			      ptlt_rc_str(st->ret), st->ret_alt != st->ret ? " or " : "",
			      st->ret_alt != st->ret ? ptlt_rc_str(st->ret_alt) : "");
		for (int e = 0; e < SCN_MAX_EV && st->ev[e].used; e++)
			expect_one(c, st, &st->ev[e], e + 1);
		if (st->drops_upto > st->drops) {
			if (!st->keep)
				ptlt_expect_eqs_empty_at(__FILE__, __LINE__, c->eq, SCN_NQ);
			ptl_sr_value_t d = ptlt_drop_count(c->env.ni) - drops0;
			if (d < (ptl_sr_value_t)st->drops || d > (ptl_sr_value_t)st->drops_upto)
				SFAIL(c, "PTL_SR_DROP_COUNT moved by %" PRIu64 ", expected %d..%d", d, st->drops,
				      st->drops_upto);
		} else if (!st->keep) {
			ptlt_expect_eqs_empty_at(__FILE__, __LINE__, c->eq, SCN_NQ);
			ptlt_expect_drops_at(__FILE__, __LINE__, &c->env, c->eq, SCN_NQ, drops0,
					     (ptl_sr_value_t)st->drops);
		} else {
			ptlt_expect_drops_at(__FILE__, __LINE__, &c->env, NULL, 0, drops0,
					     (ptl_sr_value_t)st->drops);
		}
	}
	c->stepno = 0;
	check_spans(c);
}

int scn_main(int argc, char **argv, const char *group, const scn_row_t *rows, size_t nrows,
	     const struct CMUnitTest *extra, size_t nextra)
{
	struct CMUnitTest *t = calloc(nrows + nextra + 1, sizeof(*t));
	if (!t)
		return 1;
	for (size_t i = 0; i < nrows; i++) {
		t[i].name = rows[i].name;
		t[i].test_func = run_row;
		t[i].setup_func = row_setup;
		t[i].teardown_func = row_teardown;
		t[i].initial_state = (void *)&rows[i];
	}
	for (size_t i = 0; i < nextra; i++)
		t[nrows + i] = extra[i];
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	int rc = ptlt_run_group(group, t, nrows + nextra, scn_group_setup, scn_group_teardown);
	free(t);
	return rc;
}
