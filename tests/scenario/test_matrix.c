/*
 * test_matrix.c - spec §6.7 (operation -> events matrix) and §6.8 (event
 * field values, with libportals' recommendations: ACK rlength/offset/pt_index
 * echo the request, REPLY rlength = the target's mlength, REPLY offset = local
 * offset of the deposit, GETPUT hdr_data echoed).
 *
 * Every row of the matrix, with and without the automatic unlink that adds
 * an UNLINK event after the END event of the MD concerned.
 */
#include "scn.h"

static const scn_row_t rows[] = {
	/* ---- PtlPut / PtlPutRegion, no ack: SEND_START, SEND_END | PUT_START, PUT_END */
	{ .name = "put_noack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .mbits = MB) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .mbits = MB, .hdr = HDR,
		       .ev = { IEV(SEND_START, 16, 16, 0, INF), IEV(SEND_END, 16, 16, 0, INF),
			       TEV(0, PUT_START, 16, 16, 0, INF), TEV(0, PUT_END, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "putregion_noack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .mbits = MB) },
	  .imd = IMD(32, INF),
	  .steps = { { .op = OP_PUTREGION, .loff = 8, .len = 8, .mbits = MB, .hdr = HDR,
		       .ev = { IEV(SEND_START, 8, 8, 0, INF), IEV(SEND_END, 8, 8, 0, INF),
			       TEV(0, PUT_START, 8, 8, 0, INF), TEV(0, PUT_END, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 8) } },

	/* ---- with PTL_ACK_REQ: + ACK at the initiator */
	{ .name = "put_ack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .mbits = MB) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .mbits = MB, .hdr = HDR,
		       .ev = { IEV(SEND_START, 16, 16, 0, INF), IEV(SEND_END, 16, 16, 0, INF),
			       IEV(ACK, 16, 16, 0, INF),
			       TEV(0, PUT_START, 16, 16, 0, INF), TEV(0, PUT_END, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "putregion_ack",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32), .mbits = MB) },
	  .imd = IMD(32, INF),
	  .steps = { { .op = OP_PUTREGION_ACK, .loff = 16, .len = 8, .mbits = MB, .hdr = HDR,
		       .ev = { IEV(SEND_START, 8, 8, 0, INF), IEV(SEND_END, 8, 8, 0, INF),
			       IEV(ACK, 8, 8, 0, INF),
			       TEV(0, PUT_START, 8, 8, 0, INF), TEV(0, PUT_END, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 16) } },

	/* ---- PtlGet / PtlGetRegion: no SEND events; REPLY_START, REPLY_END | GET_START, GET_END */
	{ .name = "get",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32), .mbits = MB) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .mbits = MB,
		       .ev = { GEV(REPLY_START, 16, 16, 0, INF), GEV(REPLY_END, 16, 16, 0, INF),
			       TEV(0, GET_START, 16, 16, 0, INF), TEV(0, GET_END, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "getregion",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32), .mbits = MB) },
	  .gmd = GMD(32, INF),
	  .steps = { { .op = OP_GETREGION, .loff = 8, .len = 8, .mbits = MB,
		       .ev = { GEV(REPLY_START, 8, 8, 8, INF), GEV(REPLY_END, 8, 8, 8, INF),
			       TEV(0, GET_START, 8, 8, 0, INF), TEV(0, GET_END, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RG, 8, 8, RT0, 0) } },

	/* ---- PtlGetPut: put MD SEND_*, get MD REPLY_* | GETPUT_START, GETPUT_END */
	{ .name = "getput",
	  .nme = 1, .me = { ME(MD(O_PG, INF, 32), .mbits = MB) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .mbits = MB, .hdr = HDR,
		       .ev = { IEV(SEND_START, 8, 8, 0, INF), IEV(SEND_END, 8, 8, 0, INF),
			       GEV(REPLY_START, 8, 8, 0, INF), GEV(REPLY_END, 8, 8, 0, INF),
			       TEV(0, GETPUT_START, 8, 8, 0, INF), TEV(0, GETPUT_END, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- any op that auto-unlinks an MD: + UNLINK after that MD's END event */
	{ .name = "put_unlinks_target_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF),
			       TEV(0, PUT_START, 16, 16, 0, 0), TEV(0, PUT_END, 16, 16, 0, 0),
			       TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .role = RT0, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_unlinks_initiator_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT,
		       .ev = { IEV(SEND_START, 16, 16, 0, 0), IEV(SEND_END, 16, 16, 0, 0),
			       IEV(UNLINK, 16, 16, 0, 0), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "put_ack_unlinks_both_mds",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, 2, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT_ACK, .mbits = 0, .hdr = HDR,
		       .ev = { IEV(SEND_START, 16, 16, 0, 1), IEV(SEND_END, 16, 16, 0, 1),
			       IEV(ACK, 16, 16, 0, 0), IEV(UNLINK, 16, 16, 0, 0),
			       T_PUT(0, 16, 16, 0, 0), TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_SNAP, .role = RT0, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "putregion_ack_unlinks_target_md",
	  .nme = 1, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(32, INF),
	  .steps = { { .op = OP_PUTREGION_ACK, .loff = 4, .len = 12,
		       .ev = { I_SEND(12, 0, INF), IEV(ACK, 12, 12, 0, INF),
			       T_PUT(0, 12, 12, 0, 0), TEV(0, UNLINK, 12, 12, 0, 0) } } },
	  .spans = { SPAN(RT0, 0, 12, RI, 4) } },

	{ .name = "get_unlinks_target_md",
	  .nme = 1, .me = { ME(MD(O_GET, 1, 32, .unlink = PTL_UNLINK)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET,
		       .ev = { G_REPLY(16, 16, 0, INF),
			       T_GET(0, 16, 16, 0, 0), TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .role = RT0, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "get_unlinks_get_md",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(16, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_GET,
		       .ev = { GEV(REPLY_START, 16, 16, 0, 0), GEV(REPLY_END, 16, 16, 0, 0),
			       GEV(UNLINK, 16, 16, 0, 0), T_GET(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RG, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "getregion_unlinks_get_md",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(32, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_GETREGION, .loff = 8, .len = 8,
		       .ev = { GEV(REPLY_START, 8, 8, 8, 0), GEV(REPLY_END, 8, 8, 8, 0),
			       GEV(UNLINK, 8, 8, 8, 0), T_GET(0, 8, 8, 0, INF) } },
		     { .op = OP_MD_SNAP, .role = RG, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RG, 8, 8, RT0, 0) } },

	{ .name = "getput_unlinks_all_three_mds",
	  .nme = 1, .me = { ME(MD(O_PG, 1, 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(8, 1, .unlink = PTL_UNLINK), .gmd = GMD(8, 1, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { IEV(SEND_START, 8, 8, 0, 0), IEV(SEND_END, 8, 8, 0, 0),
			       IEV(UNLINK, 8, 8, 0, 0),
			       GEV(REPLY_START, 8, 8, 0, 0), GEV(REPLY_END, 8, 8, 0, 0),
			       GEV(UNLINK, 8, 8, 0, 0),
			       TEV(0, GETPUT_START, 8, 8, 0, 0), TEV(0, GETPUT_END, 8, 8, 0, 0),
			       TEV(0, UNLINK, 8, 8, 0, 0) } },
		     { .op = OP_MD_SNAP, .role = RT0, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID },
		     { .op = OP_MD_SNAP, .role = RG, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RG, 0, 8, RT0, 0) } },

	/* ---- §6.8 field values */
	/* REPLY rlength = the target's mlength; REPLY mlength = bytes deposited */
	{ .name = "get_truncated_reply_fields",
	  .nme = 1, .me = { ME(MD(O_GET | O_TR, INF, 8)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET,
		       .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 16, 8, 0, INF) } } },
	  .spans = { SPAN(RG, 0, 8, RT0, 0) } },

	/* REPLY offset = local offset of the deposit; target offset = remote offset */
	{ .name = "getregion_remote_offset_fields",
	  .nme = 1, .me = { ME(MD(O_GET | O_MR, INF, 32), .mbits = MB) },
	  .gmd = GMD(32, INF),
	  .steps = { { .op = OP_GETREGION, .loff = 4, .len = 8, .roff = 16, .mbits = MB,
		       .ev = { G_REPLY(8, 8, 4, INF), T_GET(0, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RG, 4, 8, RT0, 16) } },

	/* ACK rlength and offset echo the request (SEND offset = remote_offset) */
	{ .name = "put_ack_remote_offset_fields",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 32), .mbits = MB) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .roff = 8, .mbits = MB, .hdr = HDR,
		       .ev = { I_SEND(16, 8, INF), IEV(ACK, 16, 16, 8, INF),
			       T_PUT(0, 16, 16, 8, INF) } } },
	  .spans = { SPAN(RT0, 8, 16, RI, 0) } },

	/* ACK mlength is the target's mlength, and so is its rlength */
	{ .name = "put_ack_truncated_fields",
	  .nme = 1, .me = { ME(MD(O_PUT | O_TR, INF, 8)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 8, 8, 0, INF),
			       T_PUT(0, 16, 8, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0) } },

	/* GETPUT target events carry the initiator's hdr_data; offsets per §6.3 */
	{ .name = "getput_remote_offset_fields",
	  .nme = 1, .me = { ME(MD(O_PG | O_MR, INF, 32), .mbits = MB) },
	  .imd = IMD(8, INF), .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GETPUT, .roff = 24, .mbits = MB, .hdr = HDR,
		       .ev = { I_SEND(8, 24, INF), G_REPLY(8, 8, 0, INF),
			       T_GETPUT(0, 8, 8, 24, INF) } } },
	  .spans = { SPAN(RT0, 24, 8, RI, 0), SPAN(RG, 0, 8, RT0, 24) } },

	/* a target MD without EQ: only the initiator sees events; data still lands */
	{ .name = "put_target_without_eq",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32, .eq_none = true)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT_ACK, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF), IEV(ACK, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	/* an initiator MD without EQ: only the target sees events */
	{ .name = "put_initiator_without_eq",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, 1, .eq_none = true, .unlink = PTL_UNLINK),
	  .steps = { { .op = OP_PUT, .hdr = HDR, .ev = { T_PUT(0, 16, 16, 0, INF) } },
		     /* threshold accounting and auto-unlink still happen without an EQ */
		     { .op = OP_MD_SNAP, .role = RI, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "matrix (spec 6.7, 6.8)", rows, sizeof(rows) / sizeof(rows[0]),
			NULL, 0);
}
