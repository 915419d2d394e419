/*
 * test_offset.c - spec §6.3: MD acceptance, offsets, truncation (and the
 * operation-type check, and PTL_MD_IOVEC offsets into the concatenation).
 *
 *   offset  = request's remote_offset with PTL_MD_MANAGE_REMOTE, else the MD's
 *             local offset (0 at attach, += mlength after each accepted op);
 *   mlength = TRUNCATE and offset <= length ? min(rlength, length - offset)
 *           : offset + rlength <= length ? rlength : reject (walk continues).
 */
#include "scn.h"

static const scn_row_t rows[] = {
	{ .name = "local_offset_advances",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 8, /* ignored: locally managed */
		       .ev = { I_SEND(16, 8, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "local_offset_advances_by_mlength",
	  .nme = 1, .me = { ME(MD(O_PUT | O_TR, INF, 24)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 8, 16, INF) } },
		     /* offset == length: accepted with mlength 0 */
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 0, 24, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 8, RI, 0) } },

	{ .name = "no_truncate_rejects_overflow",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 24)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     /* the rejected put did not move the offset: 8 bytes still fit */
		     { .op = OP_PUTREGION, .loff = 8, .len = 8,
		       .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 8, RI, 8) } },

	{ .name = "reject_then_next_me_accepts",
	  .nme = 2, .me = { ME(MD(O_PUT, INF, 8)), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } },
		     /* the first MD was not disturbed by the rejection */
		     { .op = OP_PUTREGION, .len = 8, .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0), SPAN(RT0, 0, 8, RI, 0) } },

	{ .name = "manage_remote_uses_remote_offset",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 8, .ev = { I_SEND(16, 8, INF), T_PUT(0, 16, 16, 8, INF) } },
		     { .op = OP_PUT, .roff = 0, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .roff = 16, .ev = { I_SEND(16, 16, INF), T_PUT(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "manage_remote_out_of_range_rejected",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 24, .drops = 1, .ev = { I_SEND(16, 24, INF) } },
		     { .op = OP_PUT, .roff = 40, .drops = 1, .ev = { I_SEND(16, 40, INF) } },
		     { .op = OP_PUT, .roff = 16, .ev = { I_SEND(16, 16, INF), T_PUT(0, 16, 16, 16, INF) } } },
	  .spans = { SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "manage_remote_truncate",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR | O_TR, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 24, .ev = { I_SEND(16, 24, INF), T_PUT(0, 16, 8, 24, INF) } },
		     { .op = OP_PUT, .roff = 32, .ev = { I_SEND(16, 32, INF), T_PUT(0, 16, 0, 32, INF) } },
		     /* offset beyond the MD: rejected even with TRUNCATE */
		     { .op = OP_PUT, .roff = 40, .drops = 1, .ev = { I_SEND(16, 40, INF) } } },
	  .spans = { SPAN(RT0, 24, 8, RI, 0) } },

	{ .name = "zero_length_put",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 0)) },
	  .imd = IMD(0, INF),
	  .steps = { { .op = OP_PUT_ACK, .ev = { I_SEND(0, 0, INF), IEV(ACK, 0, 0, 0, INF),
						 T_PUT(0, 0, 0, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(0, 0, INF), T_PUT(0, 0, 0, 0, INF) } } } },

	{ .name = "zero_length_putregion_into_full_md",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 16)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUTREGION, .loff = 16, .len = 0,
		       .ev = { I_SEND(0, 0, INF), T_PUT(0, 0, 0, 16, INF) } },
		     { .op = OP_PUTREGION, .loff = 0, .len = 1, .drops = 1, .ev = { I_SEND(1, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "putregion_local_and_remote_offsets",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 32)) },
	  .imd = IMD(32, INF),
	  .steps = { { .op = OP_PUTREGION, .loff = 4, .len = 8, .roff = 20,
		       .ev = { I_SEND(8, 20, INF), T_PUT(0, 8, 8, 20, INF) } } },
	  .spans = { SPAN(RT0, 20, 8, RI, 4) } },

	{ .name = "get_manage_remote",
	  .nme = 1, .me = { ME(MD(O_GET | O_MR, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .roff = 8, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 8, INF) } } },
	  .spans = { SPAN(RG, 0, 16, RT0, 8) } },

	{ .name = "get_manage_remote_truncate",
	  .nme = 1, .me = { ME(MD(O_GET | O_MR | O_TR, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .roff = 24, .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 16, 8, 24, INF) } },
		     { .op = OP_GET, .roff = 33, .drops = 1 } },
	  .spans = { SPAN(RG, 0, 8, RT0, 24) } },

	{ .name = "get_no_truncate_rejects",
	  .nme = 1, .me = { ME(MD(O_GET | O_MR, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .roff = 24, .drops = 1 } } },

	{ .name = "get_local_offset_advances",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 8, 8, 0, INF) } },
		     { .op = OP_GET, .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 8, 8, 8, INF) } } },
	  .spans = { SPAN(RG, 0, 8, RT0, 8) } },

	/* ---- operation type */
	{ .name = "optype_put_skips_get_only_md",
	  .nme = 2, .me = { ME(MD(O_GET, INF, 32)), ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(16, INF), .gmd = GMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } },
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT1, 0, 16, RI, 0), SPAN(RG, 0, 16, RT0, 0) } },

	{ .name = "optype_getput_needs_both",
	  .nme = 3, .me = { ME(MD(O_PUT, INF, 32)), ME(MD(O_GET, INF, 32)), ME(MD(O_PG, INF, 32)) },
	  .imd = IMD(8, INF), .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GETPUT, .hdr = HDR,
		       .ev = { I_SEND(8, 0, INF), G_REPLY(8, 8, 0, INF), T_GETPUT(2, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RT2, 0, 8, RI, 0), SPAN(RG, 0, 8, RT2, 0) } },

	{ .name = "optype_no_accepting_md_drops",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_PUT_ACK, .drops = 1, .ev = { I_SEND(16, 0, INF) } } } },

	{ .name = "optype_none_drops_get",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .drops = 1 } } },

	/* ---- PTL_MD_IOVEC: offsets index the concatenation of the entries */
	{ .name = "iovec_target_put",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MR, INF, 0, .iov = 3)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 4, .ev = { I_SEND(16, 4, INF), T_PUT(0, 16, 16, 4, INF) } } },
	  .spans = { SPAN(RT0, 4, 4, RI, 0), SPAN(RT0, 16, 8, RI, 4), SPAN(RT0, 32, 4, RI, 12) } },

	{ .name = "iovec_target_local_offset",
	  .nme = 1, .me = { ME(MD(O_PUT | O_TR, INF, 0, .iov = 2)) },
	  .imd = IMD(12, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(12, 0, INF), T_PUT(0, 12, 12, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(12, 0, INF), T_PUT(0, 12, 4, 12, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RT0, 16, 4, RI, 8), SPAN(RT0, 20, 4, RI, 0) } },

	{ .name = "iovec_initiator_put",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(0, INF, .iov = 2),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RT0, 8, 8, RI, 16) } },

	{ .name = "iovec_initiator_putregion",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32)) },
	  .imd = IMD(0, INF, .iov = 3),
	  .steps = { { .op = OP_PUTREGION, .loff = 6, .len = 12,
		       .ev = { I_SEND(12, 0, INF), T_PUT(0, 12, 12, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 2, RI, 6), SPAN(RT0, 2, 8, RI, 16), SPAN(RT0, 10, 2, RI, 32) } },

	{ .name = "iovec_target_get",
	  .nme = 1, .me = { ME(MD(O_GET | O_MR, INF, 0, .iov = 3)) },
	  .gmd = GMD(8, INF),
	  .steps = { { .op = OP_GET, .roff = 4, .ev = { G_REPLY(8, 8, 0, INF), T_GET(0, 8, 8, 4, INF) } } },
	  .spans = { SPAN(RG, 0, 4, RT0, 4), SPAN(RG, 4, 4, RT0, 16) } },

	{ .name = "iovec_get_md_reply",
	  .nme = 1, .me = { ME(MD(O_GET, INF, 32)) },
	  .gmd = GMD(0, INF, .iov = 2),
	  .steps = { { .op = OP_GETREGION, .loff = 4, .len = 8,
		       .ev = { G_REPLY(8, 8, 4, INF), T_GET(0, 8, 8, 0, INF) } } },
	  .spans = { SPAN(RG, 4, 4, RT0, 0), SPAN(RG, 16, 4, RT0, 4) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "offset (spec 6.3)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
