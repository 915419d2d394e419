/*
 * scn.h - scenario tables for the single-process Portals 3.3 conformance tests.
 *
 * One row = a named setup (match entries with their MDs on portal SCN_PT, an
 * initiator put MD "I" and get MD "G", ACL entries) and a sequence of steps.
 * Each step makes one call, checks its return code, then checks the exact
 * events it must produce, in order per EQ, then that every EQ is empty and
 * that PTL_SR_DROP_COUNT moved by exactly .drops. At the end of the row every
 * buffer is compared byte for byte with its initial fill plus the row's spans.
 *
 * Every data operation targets the test process itself (PtlGetId), so it
 * travels the full engine path. Three EQs: one for all target MDs (T), one
 * for the put MD I and one for the get MD G, so the order per EQ is exact.
 *
 * Fields checked on every event, without being written in the row:
 *   kind; md_handle; md snapshot (start, length, options, max_size, user_ptr,
 *   eq_handle as passed; threshold as written in the row); ni_fail_type
 *   PTL_NI_OK; initiator = self; uid/jid = own; pt_index and match_bits echo
 *   the request on target, SEND and ACK events; hdr_data echoes the request on
 *   PUT, GETPUT (libportals' recommendation) and SEND events, 0 on GET events;
 *   sequence +1 per EQ; START and END of one operation share `link`.
 * Fields written in the row: rlength, mlength, offset, md.threshold.
 */
#ifndef SCN_H
#define SCN_H

#include "ptltest.h"

#define SCN_PT 3       /* portal index the rows use */
#define SCN_BUF 64     /* bytes behind every MD role */
#define SCN_MAX_ME 4
#define SCN_MAX_STEP 10
#define SCN_MAX_EV 12
#define SCN_MAX_SPAN 6
#define SCN_MAX_ACE 2
#define SCN_EQ_COUNT 64

/* MD roles: target MDs of ME 0..3, the initiator put MD, the initiator get MD. */
enum { RT0 = 0, RT1, RT2, RT3, RI, RG, SCN_NROLE };

/* ME match_id */
typedef enum {
	ID_ANY = 0,   /* {PTL_NID_ANY, PTL_PID_ANY} */
	ID_SELF,      /* {self.nid, self.pid} */
	ID_SELF_NID,  /* {self.nid, PTL_PID_ANY} */
	ID_SELF_PID,  /* {PTL_NID_ANY, self.pid} */
	ID_OTHER_PID, /* {self.nid, self.pid + 1}: never matches us */
	ID_OTHER_NID, /* {self.nid + 1, PTL_PID_ANY}: never matches us */
} scn_id_t;

/* how an ME is put in the list (in row order) */
typedef enum {
	ATT_TAIL = 0, /* PtlMEAttach(..., PTL_INS_AFTER) on SCN_PT */
	ATT_HEAD,     /* PtlMEAttach(..., PTL_INS_BEFORE) on SCN_PT */
	ATT_BEFORE,   /* PtlMEInsert(me[.base], ..., PTL_INS_BEFORE) */
	ATT_AFTER,    /* PtlMEInsert(me[.base], ..., PTL_INS_AFTER) */
	ATT_ANY,      /* PtlMEAttachAny: steps reach it with .pt = PT_ANYME */
} scn_att_t;

typedef enum { PT_SCN = 0, PT_ANYME, PT_OTHER /* SCN_PT + 1, empty */ } scn_pt_t;

/* ACL entry components */
typedef enum { K_ANY = 0, K_SELF, K_OTHER } scn_k_t;

/* test EQ of PtlMDUpdate */
typedef enum { TQ_NONE = 0, TQ_T, TQ_I, TQ_G } scn_tq_t;

typedef struct {
	bool used;            /* I/G: bind it */
	unsigned opts;
	int thr;
	ptl_size_t len;
	ptl_size_t max_size;
	ptl_unlink_t unlink;  /* unlink_op */
	bool eq_none;         /* eq_handle = PTL_EQ_NONE */
	int iov;              /* > 0: PTL_MD_IOVEC, iov segments of 8 bytes at buffer offsets 0, 16, 32... */
	ptl_size_t start_off; /* start = buffer + start_off */
} scn_md_t;

typedef struct {
	scn_id_t id;
	ptl_match_bits_t mbits, ibits;
	ptl_unlink_t unlink;
	scn_att_t att;
	int base;
	bool no_md;
	scn_md_t md;
} scn_me_t;

typedef struct {
	bool used;
	int role;
	ptl_event_kind_t kind;
	ptl_size_t rlength, mlength, offset;
	int thr;
} scn_ev_t;

typedef enum {
	OP_END = 0,
	OP_PUT,           /* PtlPut(I, PTL_NO_ACK_REQ, self, pt, ac, mbits, roff, hdr) */
	OP_PUT_ACK,       /* ... PTL_ACK_REQ */
	OP_PUTREGION,     /* PtlPutRegion(I, loff, len, PTL_NO_ACK_REQ, ...) */
	OP_PUTREGION_ACK,
	OP_GET,           /* PtlGet(G, self, pt, ac, mbits, roff) */
	OP_GETREGION,     /* PtlGetRegion(G, loff, len, ...) */
	OP_GETPUT,        /* PtlGetPut(G, I, self, pt, ac, mbits, roff, hdr) */
	OP_MD_UNLINK,     /* PtlMDUnlink(md[.role]) */
	OP_ME_UNLINK,     /* PtlMEUnlink(me[.role]) */
	OP_MD_UPDATE,     /* PtlMDUpdate(md[.role], &old, &.md, test EQ .tq) */
	OP_MD_SNAP,       /* PtlMDUpdate(md[.role], &old, NULL, PTL_EQ_NONE) */
	OP_MD_ATTACH,     /* PtlMDAttach(me[.role], .md, .md.unlink, &md[.role]) */
	OP_DRAIN,         /* no call: only the expected events */
} scn_op_t;

typedef struct {
	scn_op_t op;
	ptl_size_t loff, len, roff;
	ptl_match_bits_t mbits;
	ptl_hdr_data_t hdr;
	scn_pt_t pt;
	ptl_ac_index_t ac;
	int role;            /* control ops */
	scn_md_t md;         /* OP_MD_UPDATE / OP_MD_ATTACH */
	scn_tq_t tq;         /* OP_MD_UPDATE */
	int ret, ret_alt;    /* accepted return codes (ret defaults to PTL_OK; ret_alt,
				if not PTL_OK, is accepted as well) */
	bool chk_old;        /* OP_MD_UPDATE/SNAP: old.threshold must be old_thr */
	int old_thr;
	int drops;           /* PTL_SR_DROP_COUNT delta */
	int drops_upto;      /* > drops: any delta in [drops, drops_upto] is accepted */
	bool keep;           /* leave unlisted events queued (no empty check) */
	bool prev_snapshot;  /* events were queued before the last PtlMDUpdate of their
				MD: their md snapshot is the MD as it was before it */
	scn_ev_t ev[SCN_MAX_EV];
} scn_step_t;

typedef struct {
	bool used;
	int dst;
	size_t doff, len;
	int src;
	size_t soff;
} scn_span_t;

typedef struct {
	bool used;
	ptl_ac_index_t idx;
	scn_k_t nid, pid, uid, jid, pt;
} scn_ace_t;

typedef struct scn_row {
	const char *name;
	int nme;
	scn_me_t me[SCN_MAX_ME];
	scn_md_t imd, gmd;
	bool acl_default;    /* keep the NI's initial ACL (do not open entry 0) */
	scn_ace_t ace[SCN_MAX_ACE];
	scn_step_t steps[SCN_MAX_STEP];
	scn_span_t spans[SCN_MAX_SPAN]; /* dst[doff..+len) = original src[soff..+len) */
} scn_row_t;

/* common request values */
#define MB 0x5a5a0000cafe0001ull
#define HDR 0x1122334455667788ull

/* ---- row-writing shorthands --------------------------------------------------- */
#define INF PTL_MD_THRESH_INF
#define O_PUT PTL_MD_OP_PUT
#define O_GET PTL_MD_OP_GET
#define O_PG (PTL_MD_OP_PUT | PTL_MD_OP_GET)
#define O_MR PTL_MD_MANAGE_REMOTE
#define O_TR PTL_MD_TRUNCATE
#define O_AD PTL_MD_ACK_DISABLE
#define O_MS PTL_MD_MAX_SIZE
#define O_SD PTL_MD_EVENT_START_DISABLE
#define O_ED PTL_MD_EVENT_END_DISABLE

#define MD(o_, t_, l_, ...) { .used = true, .opts = (o_), .thr = (t_), .len = (l_), __VA_ARGS__ }
#define IMD(l_, t_, ...) MD(0, t_, l_, __VA_ARGS__)
#define GMD(l_, t_, ...) MD(0, t_, l_, __VA_ARGS__)
#define IMDO(o_, l_, t_, ...) MD(o_, t_, l_, __VA_ARGS__)
#define GMDO(o_, l_, t_, ...) MD(o_, t_, l_, __VA_ARGS__)
#define ME(m_, ...) { .md = m_, __VA_ARGS__ }
#define ME_NOMD(...) { .no_md = true, __VA_ARGS__ }

#define EV(r_, k_, rl_, ml_, off_, t_) { true, (r_), PTL_EVENT_##k_, (rl_), (ml_), (off_), (t_) }
#define TEV(me_, k_, rl_, ml_, off_, t_) EV(me_, k_, rl_, ml_, off_, t_)
#define IEV(k_, rl_, ml_, off_, t_) EV(RI, k_, rl_, ml_, off_, t_)
#define GEV(k_, rl_, ml_, off_, t_) EV(RG, k_, rl_, ml_, off_, t_)
/* START + END pairs */
#define T_PUT(me_, rl_, ml_, off_, t_) \
	TEV(me_, PUT_START, rl_, ml_, off_, t_), TEV(me_, PUT_END, rl_, ml_, off_, t_)
#define T_GET(me_, rl_, ml_, off_, t_) \
	TEV(me_, GET_START, rl_, ml_, off_, t_), TEV(me_, GET_END, rl_, ml_, off_, t_)
#define T_GETPUT(me_, rl_, ml_, off_, t_) \
	TEV(me_, GETPUT_START, rl_, ml_, off_, t_), TEV(me_, GETPUT_END, rl_, ml_, off_, t_)
#define I_SEND(l_, roff_, t_) \
	IEV(SEND_START, l_, l_, roff_, t_), IEV(SEND_END, l_, l_, roff_, t_)
#define G_REPLY(rl_, ml_, off_, t_) \
	GEV(REPLY_START, rl_, ml_, off_, t_), GEV(REPLY_END, rl_, ml_, off_, t_)

#define SPAN(d_, doff_, n_, s_, soff_) { true, (d_), (doff_), (n_), (s_), (soff_) }

/*
 * Runs the rows (one cmocka test each, fresh NI per row) followed by the
 * extra hand-written tests, inside one PtlInit/PtlFini. argv[1], if given, is a
 * cmocka test-name filter.
 */
int scn_main(int argc, char **argv, const char *group, const scn_row_t *rows, size_t nrows,
	     const struct CMUnitTest *extra, size_t nextra);

/* Group fixtures usable by hand-written tests: PtlInit / PtlFini. */
int scn_group_setup(void **state);
int scn_group_teardown(void **state);

/* Fill pattern of byte j of role r's buffer (shared by hand-written tests). */
uint8_t scn_fill(int r, size_t j);

#endif /* SCN_H */
