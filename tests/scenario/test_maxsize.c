/*
 * test_maxsize.c - spec §6.5: PTL_MD_MAX_SIZE.
 *
 * With the option, after each accepted operation on a locally managed MD: if
 * length - local offset < max_size the MD becomes inactive (and, created
 * PTL_UNLINK, is unlinked with an UNLINK event). Ignored with
 * PTL_MD_MANAGE_REMOTE (libportals follows REF's comment) and without the
 * option. No row sends a request larger than max_size (open question §10.2).
 */
#include "scn.h"

static const scn_row_t rows[] = {
	{ .name = "maxsize_unlink_when_space_low",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS, INF, 32, .max_size = 16, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF),
					     TEV(0, UNLINK, 16, 16, 16, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "maxsize_retain_goes_inactive",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS, INF, 40, .max_size = 16)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     /* 40 - 32 = 8 < 16 left: inactive although 8 bytes would still fit */
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } },
		     { .op = OP_PUTREGION, .len = 8, .drops = 1, .ev = { I_SEND(8, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = INF } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "maxsize_exact_fit_stays_active",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS, INF, 24, .max_size = 8, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUTREGION, .len = 8, .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 0, INF) } },
		     /* 24 - 16 = 8, not < 8: still active */
		     { .op = OP_PUTREGION, .loff = 8, .len = 8,
		       .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 8, INF) } },
		     { .op = OP_PUTREGION, .len = 8, .ev = { I_SEND(8, 0, INF), T_PUT(0, 8, 8, 16, INF),
							     TEV(0, UNLINK, 8, 8, 16, INF) } } },
	  .spans = { SPAN(RT0, 0, 8, RI, 0), SPAN(RT0, 8, 8, RI, 8), SPAN(RT0, 16, 8, RI, 0) } },

	{ .name = "maxsize_ring_falls_through_to_next_me",
	  .nme = 2, .me = { ME(MD(O_PUT | O_MS, INF, 24, .max_size = 16, .unlink = PTL_UNLINK)),
			    ME(MD(O_PUT, INF, 64)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF),
					     TEV(0, UNLINK, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT1, 0, 16, RI, 0) } },

	{ .name = "maxsize_with_truncate",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS | O_TR, INF, 24, .max_size = 16, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF),
					     TEV(0, UNLINK, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },

	{ .name = "maxsize_ignored_with_manage_remote",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS | O_MR, INF, 32, .max_size = 16, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .roff = 16, .ev = { I_SEND(16, 16, INF), T_PUT(0, 16, 16, 16, INF) } },
		     { .op = OP_PUT, .roff = 16, .ev = { I_SEND(16, 16, INF), T_PUT(0, 16, 16, 16, INF) } },
		     { .op = OP_PUT, .roff = 0, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = INF } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "maxsize_ignored_without_option",
	  .nme = 1, .me = { ME(MD(O_PUT, INF, 32, .max_size = 64, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, INF) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 16, INF) } },
		     { .op = OP_PUT, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     { .op = OP_MD_SNAP, .chk_old = true, .old_thr = INF } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "maxsize_get",
	  .nme = 1, .me = { ME(MD(O_GET | O_MS, INF, 32, .max_size = 16, .unlink = PTL_UNLINK)) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 0, INF) } },
		     { .op = OP_GET, .ev = { G_REPLY(16, 16, 0, INF), T_GET(0, 16, 16, 16, INF),
					     TEV(0, UNLINK, 16, 16, 16, INF) } },
		     { .op = OP_GET, .drops = 1 } },
	  .spans = { SPAN(RG, 0, 16, RT0, 16) } },

	{ .name = "maxsize_and_threshold_unlink_once",
	  .nme = 1, .me = { ME(MD(O_PUT | O_MS, 1, 32, .max_size = 32, .unlink = PTL_UNLINK)) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_MD_SNAP, .ret = PTL_MD_INVALID } },
	  .spans = { SPAN(RT0, 0, 16, RI, 0) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "maxsize (spec 6.5)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
