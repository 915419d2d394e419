/*
 * test_acl.c - spec §6.14: access control.
 *
 * Every put/get/getput names an ACL entry (ac_index); the request is admitted
 * iff each component of the entry (nid, pid, uid, jid, portal index) is its
 * wildcard or equals the requester's value / the requested portal. Otherwise
 * it is dropped: PTL_SR_DROP_COUNT + 1, no event at the target, no ACK or
 * reply (the initiator still sees its own SEND events). ACKs and replies
 * bypass the ACL. Initial entries admit the process's own uid.
 *
 * ACE(idx, nid, pid, uid, jid, pt): K_ANY = wildcard, K_SELF = our own value
 * (pt: SCN_PT), K_OTHER = a value that is not ours (pt: SCN_PT + 1).
 */
#include "scn.h"

#define ACE(i_, n_, p_, u_, j_, t_) { true, (i_), (n_), (p_), (u_), (j_), (t_) }

#define ADMITTED(ac_) \
	{ .op = OP_PUT_ACK, .ac = (ac_), .hdr = HDR, \
	  .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF), T_PUT(0, 16, 16, 0, INF) } }
#define DROPPED(ac_) \
	{ .op = OP_PUT_ACK, .ac = (ac_), .hdr = HDR, .drops = 1, .ev = { I_SEND(16, 0, INF) } }

#define ROW(name_, ace0_, step_, ...) \
	{ .name = name_, .nme = 1, .me = { ME(MD(O_PG, INF, 32)) }, .imd = IMD(16, INF), \
	  .ace = { ace0_ }, .steps = { step_ }, __VA_ARGS__ }

#define LANDED .spans = { SPAN(RT0, 0, 16, RI, 0) }

static const scn_row_t rows[] = {
	/* ---- initial entries */
	{ .name = "initial_entry0_admits_own_uid", .acl_default = true,
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) }, .imd = IMD(16, INF),
	  .steps = { ADMITTED(0) }, LANDED },

	{ .name = "initial_entry1_admits_own_uid", .acl_default = true,
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) }, .imd = IMD(16, INF),
	  .steps = { ADMITTED(1) }, LANDED },

	/* ---- one component at a time */
	ROW("uid_self_admitted", ACE(2, K_ANY, K_ANY, K_SELF, K_ANY, K_ANY), ADMITTED(2), LANDED),
	ROW("uid_other_dropped", ACE(2, K_ANY, K_ANY, K_OTHER, K_ANY, K_ANY), DROPPED(2)),
	ROW("jid_self_admitted", ACE(2, K_ANY, K_ANY, K_ANY, K_SELF, K_ANY), ADMITTED(2), LANDED),
	ROW("jid_other_dropped", ACE(2, K_ANY, K_ANY, K_ANY, K_OTHER, K_ANY), DROPPED(2)),
	ROW("pid_self_admitted", ACE(2, K_ANY, K_SELF, K_ANY, K_ANY, K_ANY), ADMITTED(2), LANDED),
	ROW("pid_other_dropped", ACE(2, K_ANY, K_OTHER, K_ANY, K_ANY, K_ANY), DROPPED(2)),
	ROW("nid_self_admitted", ACE(2, K_SELF, K_ANY, K_ANY, K_ANY, K_ANY), ADMITTED(2), LANDED),
	ROW("nid_other_dropped", ACE(2, K_OTHER, K_ANY, K_ANY, K_ANY, K_ANY), DROPPED(2)),
	ROW("pt_self_admitted", ACE(2, K_ANY, K_ANY, K_ANY, K_ANY, K_SELF), ADMITTED(2), LANDED),
	ROW("pt_other_dropped", ACE(2, K_ANY, K_ANY, K_ANY, K_ANY, K_OTHER), DROPPED(2)),
	ROW("all_self_admitted", ACE(3, K_SELF, K_SELF, K_SELF, K_SELF, K_SELF), ADMITTED(3), LANDED),
	ROW("all_self_but_uid_dropped", ACE(3, K_SELF, K_SELF, K_OTHER, K_SELF, K_SELF), DROPPED(3)),

	/* ---- entries are independent and overwritable */
	{ .name = "entries_independent",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) }, .imd = IMD(16, INF),
	  .ace = { ACE(4, K_ANY, K_ANY, K_OTHER, K_ANY, K_ANY), ACE(5, K_ANY, K_ANY, K_SELF, K_ANY, K_ANY) },
	  .steps = { DROPPED(4), ADMITTED(5) }, LANDED },

	{ .name = "entry_overwritten",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) }, .imd = IMD(16, INF),
	  .ace = { ACE(2, K_ANY, K_ANY, K_OTHER, K_ANY, K_ANY), ACE(2, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY) },
	  .steps = { ADMITTED(2) }, LANDED },

	{ .name = "entry0_restricted",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) }, .imd = IMD(16, INF),
	  .ace = { ACE(0, K_ANY, K_OTHER, K_ANY, K_ANY, K_ANY) },
	  .steps = { DROPPED(0) } },

	/* ---- gets and getputs are checked too; nothing at all comes back */
	{ .name = "get_dropped",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) }, .gmd = GMD(16, INF),
	  .ace = { ACE(2, K_ANY, K_ANY, K_OTHER, K_ANY, K_ANY) },
	  .steps = { { .op = OP_GET, .ac = 2, .drops = 1 } } },

	{ .name = "getput_dropped",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) }, .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .ace = { ACE(2, K_ANY, K_ANY, K_ANY, K_OTHER, K_ANY) },
	  .steps = { { .op = OP_GETPUT, .ac = 2, .hdr = HDR, .drops = 1, .ev = { I_SEND(8, 0, INF) } } } },

	/* ---- ACKs and replies bypass the ACL (entry 0 admits only portal SCN_PT) */
	{ .name = "ack_and_reply_bypass_acl",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) }, .imd = IMD(16, INF), .gmd = GMD(16, INF),
	  .ace = { ACE(0, K_SELF, K_SELF, K_SELF, K_SELF, K_SELF) },
	  .steps = { ADMITTED(0),
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RG, 0, 16, RT0, 16) } },
};

/* An ac_index beyond max_ac_index: dropped at the target (or refused at the call). */
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

static void ac_index_out_of_range_dropped(void **state)
{
	(void)state;
	uint8_t src[16] = { 1, 2, 3 }, dst[16] = { 0 };
	ptl_handle_eq_t ieq, teq;
	ptl_handle_me_t me;
	ptl_handle_md_t tmd;
	ptlt_ni_init(&env, NULL);
	ptlt_open_acl(&env);
	assert_rc(PtlEQAlloc(env.ni, 8, PTL_EQ_HANDLER_NONE, &ieq), PTL_OK);
	assert_rc(PtlEQAlloc(env.ni, 8, PTL_EQ_HANDLER_NONE, &teq), PTL_OK);
	ptl_process_id_t any = { PTL_NID_ANY, PTL_PID_ANY };
	assert_rc(PtlMEAttach(env.ni, SCN_PT, any, 0, 0, PTL_RETAIN, PTL_INS_AFTER, &me), PTL_OK);
	ptl_md_t d = { .start = dst, .length = 16, .threshold = PTL_MD_THRESH_INF,
		       .options = PTL_MD_OP_PUT, .eq_handle = teq };
	assert_rc(PtlMDAttach(me, d, PTL_RETAIN, &tmd), PTL_OK);
	ptl_handle_md_t imd = ptlt_bind(&env, src, 16, PTL_MD_THRESH_INF, 0, ieq, PTL_RETAIN);
	ptl_sr_value_t d0 = ptlt_drop_count(env.ni);
	ptl_ac_index_t bad = (ptl_ac_index_t)env.limits.max_ac_index + 1;
	int rc = PtlPut(imd, PTL_ACK_REQ, env.self, SCN_PT, bad, 0, 0, 0);
	if (rc == PTL_OK) {
		expect_event(ieq, PTL_EVENT_SEND_START);
		expect_event(ieq, PTL_EVENT_SEND_END);
		ptl_handle_eq_t eqs[2] = { ieq, teq };
		expect_drops(&env, eqs, 2, d0, 1);
		expect_eqs_empty(eqs, 2);
	} else if (rc != PTL_AC_INDEX_INVALID) {
		fail_msg("PtlPut with ac_index %u returned %s", (unsigned)bad, ptlt_rc_str(rc));
	}
	uint8_t zero[16] = { 0 };
	assert_memory_equal(dst, zero, 16);
	/* and a good one still works */
	assert_rc(PtlPut(imd, PTL_NO_ACK_REQ, env.self, SCN_PT, 0, 0, 0, 0), PTL_OK);
	expect_event(teq, PTL_EVENT_PUT_START);
	expect_event(teq, PTL_EVENT_PUT_END);
	assert_memory_equal(dst, src, 16);
}

static const struct CMUnitTest extra[] = {
	cmocka_unit_test_setup_teardown(ac_index_out_of_range_dropped, ni_setup, ni_teardown),
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "acl (spec 6.14)", rows, sizeof(rows) / sizeof(rows[0]), extra,
			sizeof(extra) / sizeof(extra[0]));
}
