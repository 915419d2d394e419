/* match.c - see match.h. Spec references are to portals33-api.md. */
#include "match.h"
#include "wire.h"

bool pt_match_me(const struct pt_me_key *me, const struct pt_req *r)
{
    if (me->match_id.nid != PTL_NID_ANY && me->match_id.nid != r->src.nid)
        return false;
    if (me->match_id.pid != PTL_PID_ANY && me->match_id.pid != r->src.pid)
        return false;
    return ((me->match_bits ^ r->match_bits) & ~me->ignore_bits) == 0;
}

enum pt_acl_verdict pt_acl_check(const ptl_process_id_t *id, ptl_uid_t uid, ptl_jid_t jid,
                                 ptl_pt_index_t pt, const struct pt_req *r)
{
    if (id->nid != PTL_NID_ANY && id->nid != r->src.nid)
        return PT_ACL_DENIED;
    if (id->pid != PTL_PID_ANY && id->pid != r->src.pid)
        return PT_ACL_DENIED;
    if (uid != PTL_UID_ANY && uid != r->uid)
        return PT_ACL_DENIED;
    if (jid != PTL_JID_ANY && jid != r->jid)
        return PT_ACL_DENIED;
    if (pt != PTL_PT_INDEX_ANY && pt != r->pt_index)
        return PT_ACL_DENIED;
    return PT_ACL_OK;
}

bool pt_md_accept(const struct pt_md_view *md, const struct pt_req *r, ptl_size_t *offset_p,
                  ptl_size_t *mlength_p)
{
    if (md->threshold == 0 || md->inactive)
        return false;
    unsigned need = r->op == PT_W_PUT ? PTL_MD_OP_PUT
                  : r->op == PT_W_GET ? PTL_MD_OP_GET
                                      : (PTL_MD_OP_PUT | PTL_MD_OP_GET);
    if ((md->options & need) != need)
        return false;
    ptl_size_t off = (md->options & PTL_MD_MANAGE_REMOTE) ? r->remote_offset : md->local_off;
    ptl_size_t mlen;
    if ((md->options & PTL_MD_TRUNCATE) && off <= md->length) {
        ptl_size_t avail = md->length - off;
        mlen = r->rlength < avail ? r->rlength : avail;
    } else if (off <= md->length && r->rlength <= md->length - off) {
        mlen = r->rlength; /* written so that off + rlength cannot overflow */
    } else {
        return false;
    }
    *offset_p = off;
    *mlength_p = mlen;
    return true;
}

bool pt_md_max_size_exhausted(unsigned int options, ptl_size_t length, ptl_size_t local_off,
                              ptl_size_t max_size)
{
    /* §6.5: ignored with MANAGE_REMOTE (REF's comment; its code forgot). */
    if (!(options & PTL_MD_MAX_SIZE) || (options & PTL_MD_MANAGE_REMOTE))
        return false;
    return local_off > length || length - local_off < max_size;
}
