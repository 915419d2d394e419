/*
 * cmd.c - command dispatch: one handler per enum pt_cmd_op, from a table
 * checked at compile time to cover every op. Handlers run on the token holder.
 * A handler returns PT_E_AGAIN when it cannot proceed now (no credits): the
 * command stays at the head of its ring and is retried on a later poll.
 */
#include "nic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_cmd_get(struct pt_nic *nic, const struct pt_cmd *c);
int pt_cmd_getput(struct pt_nic *nic, const struct pt_cmd *c);
int pt_me_cmd_attach(struct pt_nic *nic, const struct pt_cmd_me *a, uint32_t *h_p, uint32_t *pt_p);
int pt_me_cmd_unlink(struct pt_nic *nic, uint32_t h);
int pt_eq_cmd_alloc(struct pt_nic *nic, struct pt_eq *q, uint32_t *h_p);
int pt_eq_cmd_free(struct pt_nic *nic, uint32_t h);
void pt_nic_dump(struct pt_nic *nic, int what, FILE *f);

static int md_attach(struct pt_nic *nic, const struct pt_cmd_md *a, uint32_t *h_p)
{
    struct pt_me *me = NULL;
    if (a->me) {
        me = pt_me_lookup(nic, a->me);
        if (!me)
            return PT_E_BADME;
        if (me->md)
            return PT_E_MEINUSE;
    }
    struct pt_md *md = pt_md_alloc(nic);
    if (!md)
        return PT_E_NOSPACE;
    md->iov = NULL;
    int rc = pt_md_build(nic, md, a->md, a->unlink_op);
    if (rc) { /* never published: back on the free list, same generation */
        pt_md_unalloc(nic, md);
        return rc;
    }
    md->pending = 0;
    md->ct_h = 0;
    md->ct_opts = 0;
    ST_RELAXED(&md->api_len, md->mem.len);
    md->me = me;
    if (me)
        me->md = md;
    nic->sr[PTL_SR_MDS_ALLOC]++;
    pt_obj_publish(&md->tag);
    *h_p = pt_md_handle(nic, md);
    return PT_OK;
}

static int md_unlink(struct pt_nic *nic, uint32_t h)
{
    struct pt_md *md = pt_md_lookup(nic, h);
    if (!md)
        return PT_E_BADMD;
    if (md->pending || pt_cmdq_names_md(nic, h))
        return PT_E_MDINUSE;
    pt_md_destroy(nic, md); /* explicit unlink: no event (§6.4) */
    return PT_OK;
}

/* PtlMDUpdate's and PtlMEMDPost's test EQ: no unread events and none on
 * their way (REF: eq->pending). An END owed to it (pt_ev_owe: a rendezvous
 * or copy-mode put still arriving, a rendezvous reply not yet pulled) is a
 * message some MD already took: with START events disabled (Open MPI's
 * unexpected MD) the EQ is empty until that END, and an update that went
 * through then posted a receive that message had already bypassed.
 * The ENDs of our own operations (a put's SEND_END, a get's REPLY_END, an
 * ACK) are not counted, though REF's eq->pending counts a put's SEND_START,
 * SEND_END and UNLINK from PtlPut on (lib_PtlPut) and a reply's events from
 * its arrival (parse_reply; not from PtlGet): none of them is a message an
 * MD took, so none can make the update post a receive too late, and no
 * client counts on an update waiting for its own sends (Open MPI's test EQ
 * is its unexpected EQ, target side only; REF's put_pp reads its SEND_END
 * before it updates). Counting them would make the update wait on the
 * peer's progress here: a rendezvous put's SEND_END comes with the target's
 * FIN, and a host-matching target pulls only inside its own calls (sixtieth
 * session, a decision; every owed END has an end: event.c, pt_ev_owe). */
static bool test_eq_busy(const struct pt_eqo *teq)
{
    return teq && (!pt_eq_empty(teq->q) || teq->owed);
}

static int md_update(struct pt_nic *nic, uint32_t h, ptl_md_t *oldmd, const ptl_md_t *newmd,
                     uint32_t test_eq)
{
    struct pt_md *md = pt_md_lookup(nic, h);
    if (!md)
        return PT_E_BADMD;
    struct pt_eqo *teq = NULL;
    if (test_eq != PTL_EQ_NONE) {
        teq = pt_eqo_lookup(nic, test_eq);
        if (!teq)
            return PT_E_BADEQ;
    }
    if (oldmd) {
        if ((md->umd.options & PTL_MD_IOVEC) && md->iov && (oldmd->options & PTL_MD_IOVEC) &&
            oldmd->start) {
            /* REF: old_md->start/length give caller storage for the iovecs. */
            ptl_size_t n = oldmd->length < md->umd.length ? oldmd->length : md->umd.length;
            ptl_md_iovec_t *dst = oldmd->start;
            for (ptl_size_t i = 0; i < n; i++) {
                dst[i].iov_base = md->iov[i].iov_base;
                dst[i].iov_len = md->iov[i].iov_len;
            }
            void *keep = oldmd->start;
            *oldmd = md->umd;
            oldmd->start = keep;
        } else {
            *oldmd = md->umd;
        }
    }
    if (!newmd)
        return PT_OK;
    if (test_eq_busy(teq) || md->pending || pt_cmdq_names_md(nic, h))
        return PT_E_NOUPDATE;
    /* Build into a scratch MD so a refused description leaves this one intact. */
    struct pt_md tmp;
    memset(&tmp, 0, sizeof tmp);
    int rc = pt_md_build(nic, &tmp, newmd, (ptl_unlink_t)md->unlink_op);
    if (rc)
        return rc;
    free(md->iov);
    md->iov = tmp.iov;
    md->umd = tmp.umd;
    md->ev_kinds = tmp.ev_kinds;
    md->mem = tmp.mem;
    if (md->iov)
        md->mem.iov = md->iov;
    else
        pt_mem_contig(&md->mem, md->umd.start, md->umd.length);
    ST_RELAXED(&md->api_len, md->mem.len);
    md->local_off = 0;
    md->unlink_due = 0;       /* made inactive by an update: never auto-unlinked */
    md->inactive_by_use = 0;
    return PT_OK;
}

/* Handlers. Async ones return PT_E_AGAIN to be retried; sync ones fill done. */
typedef int (*pt_cmd_fn)(struct pt_nic *nic, const struct pt_cmd *c);

static int h_put(struct pt_nic *n, const struct pt_cmd *c) { return pt_cmd_put(n, c); }
static int h_get(struct pt_nic *n, const struct pt_cmd *c) { return pt_cmd_get(n, c); }
static int h_getput(struct pt_nic *n, const struct pt_cmd *c) { return pt_cmd_getput(n, c); }
static int h_me_attach(struct pt_nic *n, const struct pt_cmd *c)
{
    return pt_me_cmd_attach(n, &c->u.me, &c->done->h1, &c->done->u32);
}
static int h_me_unlink(struct pt_nic *n, const struct pt_cmd *c) { return pt_me_cmd_unlink(n, c->h); }
static int h_md_attach(struct pt_nic *n, const struct pt_cmd *c)
{
    return md_attach(n, &c->u.md, &c->done->h1);
}
static int h_md_unlink(struct pt_nic *n, const struct pt_cmd *c) { return md_unlink(n, c->h); }
static int h_md_update(struct pt_nic *n, const struct pt_cmd *c)
{
    return md_update(n, c->h, c->u.upd.oldmd, c->u.upd.newmd, c->u.upd.test_eq);
}
static int h_eq_alloc(struct pt_nic *n, const struct pt_cmd *c)
{
    return pt_eq_cmd_alloc(n, c->u.eqa.q, &c->done->h1);
}
static int h_eq_free(struct pt_nic *n, const struct pt_cmd *c) { return pt_eq_cmd_free(n, c->h); }
static int h_ac_entry(struct pt_nic *n, const struct pt_cmd *c)
{
    if (c->u.ac.index > (uint32_t)n->limits.max_ac_index)
        return PT_E_BADAC;
    n->acl[c->u.ac.index] = c->u.ac.e;
    return PT_OK;
}
static int h_status(struct pt_nic *n, const struct pt_cmd *c)
{
    uint32_t sr = c->u.sr;
    if (sr >= PTL_SR_NAL_REGS_START)
        return PT_E_BADSR;
    switch (sr) {
    case PTL_SR_MES_CUR: c->done->u64 = n->me_cnt; break;
    case PTL_SR_MDS_CUR: c->done->u64 = n->md_cnt; break;
    case PTL_SR_EQS_CUR: c->done->u64 = n->eq_cnt; break;
    case PTL_SR_MES_MAX: c->done->u64 = (uint64_t)n->limits.max_mes; break;
    case PTL_SR_MDS_MAX: c->done->u64 = (uint64_t)n->limits.max_mds; break;
    case PTL_SR_EQS_MAX: c->done->u64 = (uint64_t)n->limits.max_eqs; break;
    case PTL_SR_PTLS_MAX: c->done->u64 = n->npt; break;
    case PTL_SR_MSGS_CUR: c->done->u64 = LD_RELAXED(&n->nops); break;
    default: c->done->u64 = n->sr[sr]; break;
    }
    return PT_OK;
}
static int h_memd_post(struct pt_nic *n, const struct pt_cmd *c)
{
    uint32_t meh, pt;
    int rc = pt_me_cmd_attach(n, &c->u.post.me, &meh, &pt);
    if (rc)
        return rc;
    struct pt_cmd_md a = c->u.post.md;
    a.me = meh;
    uint32_t mdh;
    rc = md_attach(n, &a, &mdh);
    if (rc) {
        pt_me_cmd_unlink(n, meh);
        return rc;
    }
    c->done->h1 = meh;
    c->done->h2 = mdh;
    /* REF's PtlMEMDPost: post only if the test EQ is empty, else leave the MD
     * inactive (threshold 0) for the caller to PtlMDUpdate later. */
    if (c->u.post.test_eq != PTL_EQ_NONE) {
        struct pt_eqo *e = pt_eqo_lookup(n, c->u.post.test_eq);
        if (test_eq_busy(e)) {
            struct pt_md *md = pt_md_lookup(n, mdh);
            md->umd.threshold = 0;
            return PT_E_NOUPDATE;
        }
    }
    return PT_OK;
}
static int h_dump(struct pt_nic *n, const struct pt_cmd *c)
{
    pt_nic_dump(n, c->u.dump_what, stderr);
    return PT_OK;
}

static int h_atomic(struct pt_nic *n, const struct pt_cmd *c) { return pt_cmd_put(n, c); }
static int h_ct_alloc(struct pt_nic *n, const struct pt_cmd *c) { return pt_ct_cmd_alloc(n, &c->done->h1); }
static int h_ct_free(struct pt_nic *n, const struct pt_cmd *c) { return pt_ct_cmd_free(n, c->h); }
static int h_ct_op(struct pt_nic *n, const struct pt_cmd *c) { return pt_ct_cmd_op(n, c); }
static int h_md_ct(struct pt_nic *n, const struct pt_cmd *c)
{
    return pt_md_cmd_ct(n, c->h, c->u.mdct.ct, c->u.mdct.opts);
}

/* matching: the command can change what a request matches or whether its
 * target accepts it (match entries, MDs, the ACL, EQs, counters an MD
 * counts into), so that requests parked for a match (target.c) are matched
 * again (match_gen; the data-moving and read-only ones cannot). */
static const struct {
    pt_cmd_fn fn;
    const char *name;
    bool matching;
} g_cmd_table[] = {
    [PT_CMD_PUT] = {h_put, "put", false},
    [PT_CMD_GET] = {h_get, "get", false},
    [PT_CMD_GETPUT] = {h_getput, "getput", false},
    [PT_CMD_ME_ATTACH] = {h_me_attach, "me_attach", true},
    [PT_CMD_ME_UNLINK] = {h_me_unlink, "me_unlink", true},
    [PT_CMD_MD_ATTACH] = {h_md_attach, "md_attach", true},
    [PT_CMD_MD_UNLINK] = {h_md_unlink, "md_unlink", true},
    [PT_CMD_MD_UPDATE] = {h_md_update, "md_update", true},
    [PT_CMD_EQ_ALLOC] = {h_eq_alloc, "eq_alloc", true},
    [PT_CMD_EQ_FREE] = {h_eq_free, "eq_free", true},
    [PT_CMD_AC_ENTRY] = {h_ac_entry, "ac_entry", true},
    [PT_CMD_STATUS] = {h_status, "status", false},
    [PT_CMD_MEMD_POST] = {h_memd_post, "memd_post", true},
    [PT_CMD_DUMP] = {h_dump, "dump", false},
    [PT_CMD_ATOMIC] = {h_atomic, "atomic", false},
    [PT_CMD_CT_ALLOC] = {h_ct_alloc, "ct_alloc", true},
    [PT_CMD_CT_FREE] = {h_ct_free, "ct_free", true},
    [PT_CMD_CT_OP] = {h_ct_op, "ct_op", true},
    [PT_CMD_MD_CT] = {h_md_ct, "md_ct", true},
};
_Static_assert(sizeof(g_cmd_table) / sizeof(g_cmd_table[0]) == PT_CMD_LAST,
               "every command op needs a handler");

int pt_cmd_dispatch(struct pt_nic *nic, const struct pt_cmd *cmd)
{
    if (cmd->op >= PT_CMD_LAST) {
        if (cmd->done) {
            cmd->done->rc = PT_E_FAIL;
            ST_RELEASE(&cmd->done->done, 1); /* R-DONE pairs with A-DONE */
        }
        return PT_OK;
    }
    if (PT_UNLIKELY(cmd->flags & PT_CF_TRIG)) /* armed, not run (ct.c) */
        return pt_trig_arm(nic, cmd);
    int rc = g_cmd_table[cmd->op].fn(nic, cmd);
    if (rc == PT_E_AGAIN)
        return rc;
    if (g_cmd_table[cmd->op].matching) /* requests parked for a match: work again */
        ST_RELAXED(&nic->match_gen, LD_RELAXED(&nic->match_gen) + 1);
    if (cmd->done) {
        cmd->done->rc = rc;
        ST_RELEASE(&cmd->done->done, 1); /* R-DONE pairs with A-DONE */
        nic->events_posted = true;       /* a sleeping caller needs the wake */
    }
    return PT_OK;
}

const char *pt_cmd_name(int op)
{
    return op >= 0 && op < PT_CMD_LAST ? g_cmd_table[op].name : "?";
}
