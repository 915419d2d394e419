/*
 * test_startend.c - spec §6.9: START/END disable options, link, sequence.
 *
 * PTL_MD_EVENT_START_DISABLE suppresses *_START, PTL_MD_EVENT_END_DISABLE
 * *_END events of that MD. With only END disabled, ACK and UNLINK are still
 * produced; with both disabled the MD produces no events at all (REF; the
 * UNLINK case is an open question, §10.7, and not tested). Disabling events
 * changes neither threshold accounting nor unlinking. The runner also checks,
 * on every row of every file, that sequence numbers grow by one per EQ and
 * that START and END of one operation carry the same link.
 */
#include "scn.h"

static const scn_row_t rows[] = {
	/* ---- target MDs */
	{ .name = "target_start_disabled",
	  .nme = 1, .me = { ME(MD(O_PUT | O_SD, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF),
						 TEV(0, PUT_END, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_end_disabled",
	  .nme = 1, .me = { ME(MD(O_PUT | O_ED, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF),
						 TEV(0, PUT_START, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_both_disabled",
	  .nme = 1, .me = { ME(MD(O_PUT | O_SD | O_ED, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_both_disabled_still_counts",
	  .nme = 1, .me = { ME(MD(O_PUT | O_SD | O_ED, 1, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = 0 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_start_disabled_unlink",
	  .nme = 1, .me = { ME(MD(O_PUT | O_SD, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), TEV(0, PUT_END, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_end_disabled_unlink_still_reported",
	  .nme = 1, .me = { ME(MD(O_PUT | O_ED, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), TEV(0, PUT_START, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "target_get_start_disabled",
	  .nme = 1, .me = { ME(MD(O_GET | O_SD, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), TEV(0, GET_END, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "target_get_end_disabled",
	  .nme = 1, .me = { ME(MD(O_GET | O_ED, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), TEV(0, GET_START, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "target_getput_end_disabled",
	  .nme = 1, .me = { ME(MD(O_PG | O_ED, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), TEV(0, GETPUT_START, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- initiator MDs */
	{ .name = "send_start_disabled",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMDO(O_SD, 16, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { IEV(SEND_END, 16, 16, 0, INF), IEV(ACK, 16, 16, 0, INF),
						 T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "send_end_disabled_ack_and_unlink_still_reported",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMDO(O_ED, 16, 2, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT_ACK, .ev = { IEV(SEND_START, 16, 16, 0, 1), IEV(ACK, 16, 16, 0, 0),
						 IEV(UNLINK, 16, 16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "send_both_disabled_no_ack_event",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMDO(O_SD | O_ED, 16, 3),
	  .steps = { { .op = OP_PUT_ACK, .ev = { T_PUT(0, 16, 16, 0, INF) } },
		     /* the ACK arrived with the target events and was counted */
		     { .op = OP_MD_SNAP, .role = RI, .chk_old = true, .old_thr = 1 } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "reply_start_disabled",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMDO(O_SD, 16, INF),
	  .steps = { { .op = OP_GET, .ev = { GEV(REPLY_END, 16, 16, 0, INF), T_GET(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "reply_end_disabled_unlink_still_reported",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMDO(O_ED, 16, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_GET, .ev = { GEV(REPLY_START, 16, 16, 0, 0), GEV(UNLINK, 16, 16, 0, 0),
					     T_GET(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "getput_put_md_both_disabled",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32)) },
	  .imd = IMDO(O_SD | O_ED, 8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { G_REPLY(8, 8, 0, INF), T_GETPUT(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- sequence and link across several operations on one EQ */
	{ .name = "sequence_and_link_across_operations",
	  .nme = 2, .me = { ME(MD(O_PUT, INF, 32), .mbits = 1), ME(MD(O_PG, INF, 32), .mbits = 2) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_PUT_ACK, .mbits = 1, .ev = { I_SEND(8, 0, INF), IEV(ACK, 8, 8, 0, INF),
							     T_PUT(0, 8, 8, 0, INF) } },
		     { .op = OP_GET, .mbits = 2, .ev = { G_REPLY(8, 8, 0, INF), T_GET(1, 8, 8, 0, INF) } },
		     { .op = OP_PUT, .mbits = 2, .ev = { I_SEND(8, 0, INF), T_PUT(1, 8, 8, 8, INF) } },
		     { .op = OP_GETPUT, .mbits = 1, .drops = 1, .ev = { I_SEND(8, 0, INF) } },
		     { .op = OP_GETPUT, .mbits = 2, .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF),
							    T_GETPUT(1, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RT1, 8, 8, RI, 0), SPAN(RT1, 16, 8, RI, 0),
		     SPAN(RG, 0, 8, RT1, 16) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "startend (spec 6.9)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
