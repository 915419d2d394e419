/*
 * match.h - pure predicates of address translation (spec §6.2, §6.3, §6.14):
 * they read their const inputs, return a verdict and touch nothing else, so
 * table-driven tests cover them exhaustively (tests/unit/test_match.c).
 */
#ifndef PT_MATCH_H
#define PT_MATCH_H

#include <portals3.h>
#include <stdbool.h>
#include <stdint.h>

/* What an incoming request asks for. */
struct pt_req {
    int op;                 /* PT_W_PUT, PT_W_GET or PT_W_GETPUT */
    ptl_process_id_t src;
    ptl_uid_t uid;
    ptl_jid_t jid;
    ptl_pt_index_t pt_index;
    ptl_match_bits_t match_bits;
    ptl_size_t rlength;
    ptl_size_t remote_offset;
};

/* The parts of an ME that matching reads. */
struct pt_me_key {
    ptl_process_id_t match_id;
    ptl_match_bits_t match_bits, ignore_bits;
};

/* The parts of an MD that acceptance reads. */
struct pt_md_view {
    unsigned int options;
    int threshold;          /* 0: inactive                               */
    bool inactive;          /* made inactive by the max_size rule        */
    ptl_size_t length;      /* total bytes                               */
    ptl_size_t local_off;
};

enum pt_acl_verdict { PT_ACL_OK = 0, PT_ACL_BAD_INDEX, PT_ACL_DENIED };

bool pt_match_me(const struct pt_me_key *me, const struct pt_req *r);
enum pt_acl_verdict pt_acl_check(const ptl_process_id_t *id, ptl_uid_t uid, ptl_jid_t jid,
                                 ptl_pt_index_t pt, const struct pt_req *r);
/* Accept or reject; on accept fills the offset and manipulated length. */
bool pt_md_accept(const struct pt_md_view *md, const struct pt_req *r, ptl_size_t *offset_p,
                  ptl_size_t *mlength_p);
/* After acceptance: does the max_size rule make the MD inactive? */
bool pt_md_max_size_exhausted(unsigned int options, ptl_size_t length, ptl_size_t local_off,
                              ptl_size_t max_size);

#endif
