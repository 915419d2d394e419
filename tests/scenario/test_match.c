/*
 * test_match.c - spec §6.2 (matching) and §5.4 (list order, PtlMEInsert,
 * PtlMEAttachAny).
 *
 * The portal's list is walked from the head; an ME matches iff its match_id
 * nid and pid are wildcards or equal the initiator's, and
 * ((me.match_bits ^ request.match_bits) & ~me.ignore_bits) == 0. The first
 * ME whose MD accepts wins. PTL_INS_BEFORE on PtlMEAttach = head of the list,
 * PTL_INS_AFTER = tail; PtlMEInsert puts the new ME right before/after base.
 */
#include "scn.h"

#define PUT_TO(me_, mb_) \
	{ .op = OP_PUT, .mbits = (mb_), .hdr = HDR, .ev = { I_SEND(16, 0, INF), T_PUT(me_, 16, 16, 0, INF) } }
#define PUT_TO_AT(me_, mb_, off_) \
	{ .op = OP_PUT, .mbits = (mb_), .hdr = HDR, .ev = { I_SEND(16, 0, INF), T_PUT(me_, 16, 16, off_, INF) } }
/* ... into a threshold-1 MD (TMD1): the snapshot shows threshold 0 */
#define PUT1(me_, mb_) \
	{ .op = OP_PUT, .mbits = (mb_), .hdr = HDR, .ev = { I_SEND(16, 0, INF), T_PUT(me_, 16, 16, 0, 0) } }
#define PUT_DROPPED(mb_) { .op = OP_PUT, .mbits = (mb_), .hdr = HDR, .drops = 1, .ev = { I_SEND(16, 0, INF) } }
#define TMD MD(O_PUT, INF, 32)
#define TMD1 MD(O_PUT, 1, 32)
#define LANDED(me_) SPAN(me_, 0, 16, RI, 0)

static const scn_row_t rows[] = {
	/* ---- match bits */
	{ .name = "mbits_exact",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x1234) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0x1234) }, .spans = { LANDED(RT0) } },

	{ .name = "mbits_mismatch_dropped",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x1234) }, .imd = IMD(16, INF),
	  .steps = { PUT_DROPPED(0x1235), PUT_DROPPED(0), PUT_DROPPED(0x1234ull << 32) } },

	{ .name = "ignore_bits",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x1200, .ibits = 0xff) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0x12ab), PUT_DROPPED(0x13ab), PUT_TO_AT(0, 0x1200, 16) },
	  .spans = { LANDED(RT0), SPAN(RT0, 16, 16, RI, 0) } },

	{ .name = "ignore_bits_mask_the_me_bits_too",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x12ff, .ibits = 0xff) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0x1200) }, .spans = { LANDED(RT0) } },

	{ .name = "ignore_all_bits",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x55, .ibits = ~0ull) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0xdeadbeefcafef00dull) }, .spans = { LANDED(RT0) } },

	{ .name = "mbits_full_64_bits",
	  .nme = 1, .me = { ME(TMD, .mbits = 0x8000000000000001ull) }, .imd = IMD(16, INF),
	  .steps = { PUT_DROPPED(0x1), PUT_DROPPED(0x8000000000000000ull), PUT_TO(0, 0x8000000000000001ull) },
	  .spans = { LANDED(RT0) } },

	{ .name = "get_matches_like_put",
	  .nme = 2, .me = { ME(MD(O_GET, INF, 32), .mbits = 0x100, .ibits = 0xf),
			    ME(MD(O_GET, INF, 32), .mbits = 0x200, .ibits = 0xf) },
	  .gmd = GMD(16, INF),
	  .steps = { { .op = OP_GET, .mbits = 0x20c, .ev = { G_REPLY(16, 16, 0, INF), T_GET(1, 16, 16, 0, INF) } },
		     { .op = OP_GET, .mbits = 0x310, .drops = 1 } },
	  .spans = { SPAN(RG, 0, 16, RT1, 0) } },

	/* ---- match ids */
	{ .name = "id_any_matches",
	  .nme = 1, .me = { ME(TMD, .id = ID_ANY) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0) }, .spans = { LANDED(RT0) } },
	{ .name = "id_self_matches",
	  .nme = 1, .me = { ME(TMD, .id = ID_SELF) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0) }, .spans = { LANDED(RT0) } },
	{ .name = "id_self_nid_any_pid_matches",
	  .nme = 1, .me = { ME(TMD, .id = ID_SELF_NID) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0) }, .spans = { LANDED(RT0) } },
	{ .name = "id_any_nid_self_pid_matches",
	  .nme = 1, .me = { ME(TMD, .id = ID_SELF_PID) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0) }, .spans = { LANDED(RT0) } },
	{ .name = "id_other_pid_dropped",
	  .nme = 1, .me = { ME(TMD, .id = ID_OTHER_PID) }, .imd = IMD(16, INF),
	  .steps = { PUT_DROPPED(0) } },
	{ .name = "id_other_nid_dropped",
	  .nme = 1, .me = { ME(TMD, .id = ID_OTHER_NID) }, .imd = IMD(16, INF),
	  .steps = { PUT_DROPPED(0) } },
	{ .name = "id_other_pid_skipped_walk_continues",
	  .nme = 2, .me = { ME(TMD, .id = ID_OTHER_PID), ME(TMD, .id = ID_SELF) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(1, 0) }, .spans = { LANDED(RT1) } },

	/* ---- list order */
	{ .name = "first_match_wins",
	  .nme = 3, .me = { ME(TMD, .mbits = 1), ME(TMD1, .mbits = 2), ME(TMD, .mbits = 2) },
	  .imd = IMD(16, INF),
	  .steps = { PUT1(1, 2), PUT_TO(2, 2) }, /* ME 1 went inactive after one put */
	  .spans = { LANDED(RT1), LANDED(RT2) } },

	{ .name = "walk_skips_mismatch_and_rejection",
	  .nme = 3, .me = { ME(TMD, .mbits = 9), ME(MD(O_PUT, INF, 8), .mbits = 2), ME(TMD, .mbits = 2) },
	  .imd = IMD(16, INF),
	  .steps = { PUT_TO(2, 2) }, .spans = { LANDED(RT2) } },

	{ .name = "attach_before_is_head",
	  .nme = 2, .me = { ME(TMD1), ME(TMD1, .att = ATT_HEAD) }, .imd = IMD(16, INF),
	  .steps = { PUT1(1, 0), PUT1(0, 0), PUT_DROPPED(0) },
	  .spans = { LANDED(RT1), LANDED(RT0) } },

	{ .name = "attach_after_is_tail",
	  .nme = 3, .me = { ME(TMD1), ME(TMD1), ME(TMD1, .att = ATT_TAIL) }, .imd = IMD(16, INF),
	  .steps = { PUT1(0, 0), PUT1(1, 0), PUT1(2, 0) },
	  .spans = { LANDED(RT0), LANDED(RT1), LANDED(RT2) } },

	{ .name = "insert_before_base",
	  .nme = 3, .me = { ME(TMD1), ME(TMD1), ME(TMD1, .att = ATT_BEFORE, .base = 1) },
	  .imd = IMD(16, INF),
	  .steps = { PUT1(0, 0), PUT1(2, 0), PUT1(1, 0) },
	  .spans = { LANDED(RT0), LANDED(RT1), LANDED(RT2) } },

	{ .name = "insert_before_head_becomes_head",
	  .nme = 2, .me = { ME(TMD1), ME(TMD1, .att = ATT_BEFORE, .base = 0) },
	  .imd = IMD(16, INF),
	  .steps = { PUT1(1, 0), PUT1(0, 0) },
	  .spans = { LANDED(RT0), LANDED(RT1) } },

	{ .name = "insert_after_base",
	  .nme = 3, .me = { ME(TMD1), ME(TMD1), ME(TMD1, .att = ATT_AFTER, .base = 0) },
	  .imd = IMD(16, INF),
	  .steps = { PUT1(0, 0), PUT1(2, 0), PUT1(1, 0) },
	  .spans = { LANDED(RT0), LANDED(RT1), LANDED(RT2) } },

	{ .name = "insert_after_tail_becomes_tail",
	  .nme = 3, .me = { ME(TMD1), ME(TMD1), ME(TMD1, .att = ATT_AFTER, .base = 1) },
	  .imd = IMD(16, INF),
	  .steps = { PUT1(0, 0), PUT1(1, 0), PUT1(2, 0), PUT_DROPPED(0) },
	  .spans = { LANDED(RT0), LANDED(RT1), LANDED(RT2) } },

	{ .name = "insert_without_md_skipped",
	  .nme = 2, .me = { ME(TMD), ME_NOMD(.att = ATT_BEFORE, .base = 0) }, .imd = IMD(16, INF),
	  .steps = { PUT_TO(0, 0) }, .spans = { LANDED(RT0) } },

	{ .name = "auto_unlinked_me_leaves_list",
	  .nme = 2, .me = { ME(MD(O_PUT, 1, 32, .unlink = PTL_UNLINK), .unlink = PTL_UNLINK), ME(TMD) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0),
					     TEV(0, UNLINK, 16, 16, 0, 0) } },
		     { .op = OP_PUT, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } },
		     { .op = OP_ME_UNLINK, .role = 0, .ret = PTL_ME_INVALID } },
	  .spans = { LANDED(RT0), LANDED(RT1) } },

	/* ---- portals */
	{ .name = "other_portal_not_searched",
	  .nme = 1, .me = { ME(TMD) }, .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .pt = PT_OTHER, .drops = 1, .ev = { I_SEND(16, 0, INF) } },
		     PUT_TO(0, 0) },
	  .spans = { LANDED(RT0) } },

	{ .name = "attach_any_uses_unused_portal",
	  .nme = 2, .me = { ME(TMD, .mbits = 1), ME(TMD, .att = ATT_ANY, .mbits = 2) }, .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .pt = PT_ANYME, .mbits = 2, .hdr = HDR,
		       .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, INF) } },
		     /* the ME on the any-portal is not on SCN_PT */
		     PUT_DROPPED(2),
		     PUT_TO(0, 1) },
	  .spans = { LANDED(RT1), LANDED(RT0) } },

	{ .name = "attach_any_list_extends_with_insert",
	  .nme = 2, .me = { ME(TMD1, .att = ATT_ANY), ME(TMD1, .att = ATT_AFTER, .base = 0) },
	  .imd = IMD(16, INF),
	  .steps = { { .op = OP_PUT, .pt = PT_ANYME, .ev = { I_SEND(16, 0, INF), T_PUT(0, 16, 16, 0, 0) } },
		     { .op = OP_PUT, .pt = PT_ANYME, .ev = { I_SEND(16, 0, INF), T_PUT(1, 16, 16, 0, 0) } } },
	  .spans = { LANDED(RT0), LANDED(RT1) } },
};

int main(int argc, char **argv)
{
	return scn_main(argc, argv, "match (spec 6.2)", rows, sizeof(rows) / sizeof(rows[0]), NULL, 0);
}
