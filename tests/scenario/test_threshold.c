/*
 * test_threshold.c - spec §6.4: thresholds, activity, automatic unlink.
 *
 * Every accepted put/get/getput costs the target MD one; a put costs the put
 * MD one at the call and one more when the ACK arrives; a get costs the get
 * MD one when the reply arrives (the PtlGet call itself does not count).
 * Threshold 0 = inactive: skipped by matching (the walk continues), ACKs and
 * replies to it are dropped. PTL_UNLINK MDs that become inactive through use
 * are unlinked after their last END event, with an UNLINK event; the ME goes
 * with them if it was created PTL_UNLINK. MDs created with threshold 0 are
 * never auto-unlinked.
 */
#include "scn.h"

/*
 * "initiating from an inactive MD": PTL_OK doing nothing, or PTL_MD_INVALID
 * (§9.1). Either way no event anywhere; whether the library counts the
 * unsent request in PTL_SR_DROP_COUNT is not specified (0 or 1 accepted).
 */
#define INACTIVE_RET .ret = PTL_OK, .ret_alt = PTL_MD_INVALID, .drops_upto = 1

static const scn_row_t rows[] = {
	{ .name = "thr1_md_unlink_me_retain",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     /* the ME stays, with no MD: skipped, nothing else matches */
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID },
		     { .op = OP_ME_UNLINK, .ret = PTL_OK } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "thr1_md_unlink_me_unlink",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK), .unlink = PTL_UNLINK) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID },
		     /* the ME went with its MD */
		     { .op = OP_ME_UNLINK, .ret = PTL_ME_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "thr1_md_retain_goes_inactive",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32), .unlink = PTL_UNLINK) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 0 },
		     /* the MD was not unlinked, so neither was its PTL_UNLINK ME */
		     { .op = OP_ME_UNLINK, .ret = PTL_OK } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "thr2_unlink_after_second",
	  .nme = 1, .me = { ME(MD(O_PUT, 2, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 1) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, 0),
					     TEV(0, UNLINK, 16, 16, 16, 0) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "thr3_retain_counts_down",
	  .nme = 1, .me = { ME(MD(O_PUT, 3, 48)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 2) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 2 },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, 1) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 32, 0) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 0 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0), SPAN(RT0, 32, 16, RI, 0) } },

	{ .name = "thr_inf_never_counts",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } },
		     /* full: rejected for lack of room, but still active and linked */
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = INF } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "inactive_md_skipped_walk_continues",
	  .nme = 2, .me = { ME(MD(O_PUT, 0, 32, .unlink = PTL_UNLINK)), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } },
		     /* created with threshold 0: inactive, never auto-unlinked */
		     { .op = OP_MD_SNAP, .role = RT0, .chk_old = true, .old_thr = 0 } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0) } },

	{ .name = "thr0_created_never_unlinked",
	  .nme = 1, .me = { ME(MD(O_PUT, 0, 32, .unlink = PTL_UNLINK), .unlink = PTL_UNLINK) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 0 },
		     { .op = OP_ME_UNLINK, .ret = PTL_OK } } },

	{ .name = "exhausted_md_skipped_walk_continues",
	  .nme = 2, .me = { ME(MD(O_PUT, 1, 32)), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT1, 0, 16, RI, 0) } },

	{ .name = "me_without_md_skipped",
	  .nme = 2, .me = { ME_NOMD(), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0) } },

	/* ---- initiator side */
	{ .name = "put_ack_thr1_unlink_no_ack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { IEV(SEND_START, 16, 16, 0, 0), IEV(SEND_END, 16, 16, 0, 0),
			       IEV(UNLINK, 16, 16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_ack_thr1_retain_no_ack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { IEV(SEND_START, 16, 16, 0, 0), IEV(SEND_END, 16, 16, 0, 0),
			       T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 0 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_ack_thr2_unlink_send_ack_unlink",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 2, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { IEV(SEND_START, 16, 16, 0, 1), IEV(SEND_END, 16, 16, 0, 1),
			       IEV(ACK, 16, 16, 0, 0), IEV(UNLINK, 16, 16, 0, 0),
			       T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_noack_thr2_counts_only_send",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 2, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, 1), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, 0), IEV(UNLINK, 16, 16, 0, 0),
					     T_PUT(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "get_call_does_not_count",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(16, 1),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, 0), T_GET(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RG, .chk_old = true, .old_thr = 0 } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "get_md_thr2_two_replies_then_unlink",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(16, 2, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, 1), T_GET(0, 16, 16, 0, INF) } },
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, 0), GEV(UNLINK, 16, 16, 0, 0),
					     T_GET(0, 16, 16, 16, INF) } },
		     { .op = OP_MD_SNAP, .role = RG, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RG, 0, 16, RT0, 16) } },

	{ .name = "target_put_then_get_thr2",
	  .nme = 1, .me = { ME(MD(O_PG, 2, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF), .gmd = GMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 1) } },
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 16, 0),
					     TEV(0, UNLINK, 16, 16, 16, 0) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RG, 0, 16, RT0, 16) } },

	{ .name = "getput_costs_target_one",
	  .nme = 1, .me = { ME(MD(O_PG, 1, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 0, 0) } },
		     { .op = OP_GETPUT, .hdr = HDR, .drops = 1, .ev = { I_SEND(8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- initiating from an inactive MD (open question §9.1: PTL_OK doing nothing, or PTL_MD_INVALID) */
	{ .name = "put_from_thr0_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 0),
	  .steps = { { .op = OP_PUT_ACK, INACTIVE_RET },
		     { .op = OP_PUTREGION, .len = 8, INACTIVE_RET },
		     /* the same MD, activated, does send (and nothing earlier went out) */
		     { .op = OP_MD_UPDATE, .role = RI, .md = MD(0, 1, 16), .tq = TQ_I },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, 0), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_from_exhausted_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, INACTIVE_RET },
		     { .op = OP_MD_UPDATE, .role = RI, .md = MD(0, 1, 8), .tq = TQ_I },
		     { .op = OP_PUT, .ev = { I_SEND(8, 0, 0), T_PUT(0, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 8, RI, 0) } },

	{ .name = "get_from_thr0_md",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(16, 0),
	  .steps = { { .op = OP_GET, INACTIVE_RET },
		     { .op = OP_GETREGION, .len = 8, INACTIVE_RET },
		     { .op = OP_MD_UPDATE, .role = RG, .md = MD(0, 1, 16), .tq = TQ_G },
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, 0), T_GET(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "getput_from_thr0_md",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, 0), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, INACTIVE_RET },
		     { .op = OP_MD_UPDATE, .role = RI, .md = MD(0, INF, 8), .tq = TQ_I },
		     { .op = OP_GETPUT, .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF),
						T_GETPUT(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- no EQ: threshold accounting and unlinking still happen */
	{ .name = "target_without_eq_counts_and_unlinks",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK, .eq_none = true)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "threshold (spec 6.4)", rows, sizeof(rows) / sizeof(rows[0]),
			NULL, 0);
}
