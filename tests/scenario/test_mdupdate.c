/*
 * test_mdupdate.c - spec §6.11: PtlMDUpdate.
 *
 * old_md receives the MD as it is (always, even when the update is refused).
 * The update is done iff the test EQ is PTL_EQ_NONE or empty (it need not be
 * the MD's own EQ), else PTL_MD_NO_UPDATE and nothing changes. An update
 * replaces every member, resets the local offset to 0, activates the MD
 * (threshold != 0) or deactivates it without unlinking (threshold 0), and is
 * not an operation. The runner compares old_md with the MD it created (start,
 * length, options, max_size, user_ptr, eq_handle) on every call; rows check
 * the threshold. Events snapshot the MD as it is when they are generated.
 */
#include "scn.h"

static const scn_row_t rows[] = {
	{ .name = "snapshot_old_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 3, 32, .max_size = 7)) },
	  .imd = IMD(16, 5),
	  .steps = { { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 3 },
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 5 },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, 4), T_PUT(0, 16, 16, 0, 2) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 2 },
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 4 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "no_update_while_test_eq_has_events",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { /* the ACK proves the target events are queued; leave them there */
		     { .op = OP_PUT_ACK, .keep = true, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 16, .start_off = 32), .tq = TQ_T,
		       .ret = PTL_MD_NO_UPDATE, .chk_old = true, .old_thr = INF, .keep = true },
		     { .op = OP_DRAIN, .ev = { T_PUT(0, 16, 16, 0, INF) } },
		     /* unchanged: the next put continues in the old region at offset 16 */
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } },
		     /* test EQ empty now: updated, offset reset, new region */
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 16, .start_off = 32), .tq = TQ_T,
		       .chk_old = true, .old_thr = INF },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0), SPAN(RT0, 32, 16, RI, 0) } },

	{ .name = "test_eq_need_not_be_the_mds_own",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { /* SEND_START is queued on I's EQ before the target events exist */
		     { .op = OP_PUT_ACK, .keep = true, .ev = { T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 2, 32), .tq = TQ_I, .ret = PTL_MD_NO_UPDATE,
		       .keep = true },
		     { .op = OP_DRAIN, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 2, 32), .tq = TQ_I },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 2 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "eq_none_test_always_updates",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .keep = true, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 4, 32), .tq = TQ_NONE, .keep = true },
		     /* queued before the update: they show the MD as it was */
		     { .op = OP_DRAIN, .prev_snapshot = true, .ev = { T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 3) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "update_resets_local_offset",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 32), .tq = TQ_T },
		     { .op = OP_PUTREGION, .loff = 8, .len = 8, .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 0, 8, RI, 8) } },

	{ .name = "thr0_reactivated_then_auto_unlinked",
	  .nme = 1, .me = { ME(MD(O_PUT, 0, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 1, 32), .tq = TQ_T, .chk_old = true, .old_thr = 0 },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "update_to_thr0_inactive_not_unlinked",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UPDATE, .md = MD(O_PUT, 0, 32), .tq = TQ_T },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 0 },
		     /* and it can be brought back */
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 32), .tq = TQ_T },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "update_is_not_an_operation",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UPDATE, .md = MD(O_PUT, 1, 32), .tq = TQ_NONE, .chk_old = true, .old_thr = 1 },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 1, 32), .tq = TQ_T, .chk_old = true, .old_thr = 1 },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 1 },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "update_replaces_options",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_MD_UPDATE, .md = MD(O_GET | O_MR, INF, 32), .tq = TQ_T },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_GET, .roff = 8, .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 8, 8, 8, INF) } } },
	  .spans = { SPAN(RG, 0, 8, RT0, 8) } },

	{ .name = "update_replaces_eq_handle",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 32, .eq_none = true), .tq = TQ_T },
		     { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, INF, 32), .tq = TQ_T },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "update_reactivates_initiator_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .role = RI, .md = MD(0, 1, 8), .tq = TQ_I, .chk_old = true, .old_thr = 0 },
		     { .op = OP_PUT, .ev = { I_SEND(8, 0, 0), T_PUT(0, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 8, RI, 0) } },

	/* MPI idiom (§6.11): post a receive with threshold 0, then activate it against the unexpected EQ */
	{ .name = "mpi_post_receive_idiom",
	  .nme = 2, .me = { ME(MD(O_PUT, 0, 32), .mbits = 7), ME(MD(O_PUT, INF, 64), .ibits = ~0ull) },
	  .imd = IMD(16, INF),
	  .steps = { /* an "unexpected" message lands in the catch-all ME 1 */
		     { .op = OP_PUT_ACK, .mbits = 7, .keep = true, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 1, 32), .tq = TQ_T, .ret = PTL_MD_NO_UPDATE,
		       .chk_old = true, .old_thr = 0, .keep = true },
		     { .op = OP_DRAIN, .mbits = 7, .ev = { T_PUT(1, 16, 16, 0, INF) } },
		     { .op = OP_MD_UPDATE, .md = MD(O_PUT, 1, 32), .tq = TQ_T, .chk_old = true, .old_thr = 0 },
		     { .op = OP_PUT, .mbits = 7, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0) } } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0), SPAN(RT0, 0, 16, RI, 0) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "mdupdate (spec 6.11)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
