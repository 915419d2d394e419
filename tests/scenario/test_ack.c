/*
 * test_ack.c - spec §6.6: acknowledgements.
 *
 * An ACK is sent iff the initiator asked (PTL_ACK_REQ), an MD accepted the
 * put and that MD lacks PTL_MD_ACK_DISABLE. It carries the target's mlength,
 * and rlength = mlength (the convention OrangeFS, Open MPI 1.x and CCI
 * accept; a truncated put's ACK says so in both); libportals also echoes the
 * offset and pt_index. It costs the put MD one
 * threshold count and yields PTL_EVENT_ACK there. The target MD needs no EQ.
 * Initiator MD options do not matter for receiving it.
 */
#include "scn.h"

static const scn_row_t rows[] = {
	{ .name = "ack_requested",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .mbits = 0, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "no_ack_requested",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUTREGION, .len = 16, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "ack_disable_on_target",
	  .nme = 1, .me = { ME(MD(O_PUT | O_AD, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUTREGION_ACK, .len = 8, .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 8, RI, 0) } },

	{ .name = "ack_disable_on_initiator_irrelevant",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMDO(O_AD, 16, INF),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "ack_carries_truncated_mlength",
	  .nme = 1, .me = { ME(MD(O_PUT | O_TR, INF, 8)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 8, 8, 0, INF), T_PUT(0, 16, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0) } },

	{ .name = "ack_carries_zero_mlength",
	  .nme = 1, .me = { ME(MD(O_PUT | O_TR, INF, 0)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 0, 0, 0, INF), T_PUT(0, 16, 0, 0, INF) } } } },

	{ .name = "ack_target_md_without_eq",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32, .eq_none = true)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "ack_not_sent_for_dropped_put",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .drops = 1, .ev = { I_SEND(16, 0, INF) } } } },

	{ .name = "ack_putregion_remote_offset_echo",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 32), .mbits = MB) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUTREGION_ACK, .loff = 4, .len = 8, .roff = 8, .mbits = MB, .hdr = HDR,
		       .ev = { I_SEND(8, 8, INF), IEV(ACK, 8, 8, 8, INF), T_PUT(0, 8, 8, 8, INF) } } },
	  .spans = { SPAN(RT0, 8, 8, RI, 4) } },

	{ .name = "ack_on_attach_any_portal_echoes_pt",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .att = ATT_ANY) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .pt = PT_ANYME, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "ack_decrements_put_md_threshold",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 2),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { I_SEND(16, 0, 1), IEV(ACK, 16, 16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 0 },
		     /* exhausted: initiating fails or does nothing (§9.1) */
		     { .op = OP_PUT, .ret = PTL_OK, .ret_alt = PTL_MD_INVALID, .drops_upto = 1 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "ack_from_unlinking_target_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK), .unlink = PTL_UNLINK) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF),
			       T_PUT(0, 16, 16, 0, 0), TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_ME_UNLINK, .ret = PTL_ME_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "ack_each_of_several_puts",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 48)) },
	  .imd = IMD(16, 6),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, 5), IEV(ACK, 16, 16, 0, 4), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, 3), IEV(ACK, 16, 16, 0, 2), T_PUT(0, 16, 16, 16, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, 1), T_PUT(0, 16, 16, 32, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0), SPAN(RT0, 32, 16, RI, 0) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "ack (spec 6.6)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
