/*
 * shm.c - the shared-memory transport: the processes of a job on one host
 * talk through the job region (shm_region.h): a message is written into a
 * buffer of the sender's pool and its index is published on the (sender,
 * receiver, class) descriptor ring; receivers poll only the senders their
 * "senders with work" bitmap named. Bulk data is pulled with
 * process_vm_readv (CMA).
 *
 * This file is the data path and the ops table; the region's creation and
 * checks, the launcher's side, the CMA probe and the opening live beside it
 * (the table in shm_int.h).
 *
 * Hot path (reserve/commit/peek/release): no malloc, no syscalls, no logging,
 * except the futex wake in commit when the receiver announced sleep, and the
 * one error logged when a sender's ring is found corrupt (rx_faulty).
 */
#include "shm_int.h"
#include "config.h"
#include "shm_fbcode.h"

#include "clock.h"
#include "log.h"
#include "perturb.h"
#include "proc.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- the rank's transport ------------------------------------------------- */

#define PT_XPORT_PF_BYTES (3u * PT_CACHELINE) /* "small": what the prefetch covers */
/* A message through a ring makes its sender take the buffer back as soon as
 * the peer has answered (shm_reserve, "reuse"), by the head the answer
 * carried (P-HEAD); from this many bytes (header and payload) also by
 * reading the peer's head (A-HEAD) when the answer came through a lane:
 * that read costs the peer an invalidation before its next fence, paid
 * back only by a large buffer's lines (bench/results-notes.md, "Fiftieth
 * session", "Fifty-eighth session"). */
#ifndef PT_SHM_REUSE_BYTES /* -D for a measurement build */
#define PT_SHM_REUSE_BYTES 1536u
#endif
/* At most this many lines of a ring buffer are prefetched for writing
 * before it is filled (shm_reserve); measured, same section; but a message
 * of at most PT_SHM_PF_WHOLE lines has all of its lines prefetched: 1.5-2 KiB
 * ping-pong -10..-18% in the slow core placement, where the lines past the
 * 20th came a miss at a time in the copy (sixty-second session). */
#ifndef PT_SHM_PF_LINES /* -D for a measurement build, as the two below */
#define PT_SHM_PF_LINES 20u
#endif
#ifndef PT_SHM_PF_WHOLE
#define PT_SHM_PF_WHOLE 40u
#endif
_Static_assert(PT_SHM_PF_WHOLE >= PT_SHM_PF_LINES,
               "a message within the cap is prefetched whole (shm_reserve takes no min)");
/* The line a stream prefetches for writing: this many after the next (1:
 * the line after next; 3 lost 13% of the 8 B rate, sixty-second session). */
#ifndef PT_FB_PF_AHEAD
#define PT_FB_PF_AHEAD 1u
#endif

/* Reuse (shm_reserve): our last message on ring t went through it and its
 * buffer has not been taken back yet. */
static inline bool tx_reuse_due(const struct shm_tx *t)
{
    return t->last_len && t->tail != t->rec;
}

/* ... and large enough to look at the peer's head for it (A-HEAD). */
static inline bool tx_reuse_look(const struct shm_tx *t)
{
    return t->last_len >= PT_SHM_REUSE_BYTES && t->tail != t->rec;
}

/* Take back the buffers of ring t of class c before position h, a head its
 * receiver r wrote. A head outside [rec, tail] is not one r wrote: no
 * progress. */
static inline void tx_reclaim_to(struct pt_xport *x, struct shm_tx *t, uint32_t c, uint32_t h)
{
    if (h - t->rec > t->tail - t->rec)
        return;
    for (; t->rec != h; t->rec++) {
        uint16_t b = t->map[t->rec & x->mask];
        if (b != SHM_NOBUF && x->nfree[c] < x->l.pool_n[c])
            x->freel[c][x->nfree[c]++] = b;
    }
}

/* Take back the buffers receiver r has moved past on ring t of class c (A-HEAD
 * pairs with r's R-HEAD: r is done reading them). */
static void tx_reclaim(struct pt_xport *x, struct shm_tx *t, uint32_t c)
{
    tx_reclaim_to(x, t, c, LD_ACQUIRE(t->hd)); /* A-HEAD */
}

/* r's last ring message to us said it had read everything we sent on t
 * (P-HEAD): the reuse needs no look at r's head. */
static inline bool tx_pig_all(const struct shm_tx *t) { return t->pig == t->tail; }

/* A ring message from s in class c, at position pos of s's ring to us, with
 * transport word w: the high half is s's head of our ring to s in that class
 * (P-HEAD). Its messages come in the order s sent them and s's head only
 * grows, so the smallest position at or past the last estimate that agrees
 * with the 16 bits is never past the head s had (a head more than 2^16
 * further on is underestimated by multiples of 2^16: fewer buffers taken
 * back, never one s still reads). Idempotent: a message peeked again (held)
 * adds nothing. */
static inline void pig_note(struct pt_xport *x, uint32_t s, uint32_t c, uint32_t pos, uint32_t w)
{
    struct shm_tx *o = &x->out[s * 2 + c];
    if ((int32_t)(pos - o->pig_from) >= 0)
        o->pig += (uint16_t)((w >> 16) - (uint16_t)o->pig);
}

/* A pool ran dry: take back what every receiver that holds buffers of ours
 * has consumed (only those: the holders list, never all peers). */
static void tx_reclaim_all(struct pt_xport *x)
{
    for (uint32_t i = 0; i < x->nholders;) {
        uint32_t r = x->holders[i];
        struct shm_tx *t = &x->out[r * 2];
        tx_reclaim(x, t, PT_CLS_REQ);
        tx_reclaim(x, t + 1, PT_CLS_RSP);
        if (t->rec == t->tail && t[1].rec == t[1].tail) {
            x->holding[r] = 0;
            x->holders[i] = x->holders[--x->nholders];
        } else {
            i++;
        }
    }
}

/* C-ARM (model/credit.pml): set ring t's mark, where its receiver looks
 * after it moves the head, and list it for stall_armed. The receiver rings
 * once it has consumed half of what we have outstanding there (at least one
 * message; model: HALF): a wake-up per D/2 messages, not one per message,
 * when it frees a slot per pass (incast). Cold path. */
static void tx_arm(struct pt_xport *x, struct shm_tx *t)
{
    uint32_t out = t->tail - t->rec, at = t->rec + (out + 1) / 2;
    /* A poll retrying the stall finds its mark set as it left it: no store
     * to the line the receiver reads its entries from (model: C-ARM is
     * skipped when want and want_at already hold these values). */
    if (t->want_at != at || !LD_RELAXED(&t->ring->want)) {
        t->want_at = at;
        ST_RELAXED(&t->ring->want_at, at); /* C-ARM: the threshold ... */
        ST_RELEASE(&t->ring->want, 1);     /* ... then the mark */
    }
    if (!t->armed) {
        t->armed = 1;
        uint32_t n = LD_RELAXED(&x->narmed);
        ST_RELAXED(&x->armed[n], (uint32_t)(t - x->out));
        ST_RELEASE(&x->narmed, n + 1); /* the entry before the count (stall_armed) */
    }
}

/* The ring to `peer` is full: arm its mark, then look again (C-FENCE,
 * C-HEAD). True if room appeared (the mark stays: a ring more at worst). */
static bool tx_arm_ring(struct pt_xport *x, struct shm_tx *t, uint32_t cls)
{
    tx_arm(x, t);
    FENCE_FULL(); /* C-FENCE: C-ARM before the head's reload (MUT_CFENCE) */
    tx_reclaim(x, t, cls); /* C-HEAD: A-HEAD again (MUT_NORELOAD leaves it out) */
    return t->tail - t->rec <= x->mask;
}

/* Our pool of class cls is empty: arm every ring of that class that still
 * holds buffers of ours (the holders list), then take back what they have
 * consumed (C-FENCE, C-HEAD). True if a buffer came back. */
static bool tx_arm_pool(struct pt_xport *x, uint32_t cls)
{
    for (uint32_t i = 0; i < x->nholders; i++) {
        struct shm_tx *t = &x->out[x->holders[i] * 2 + cls];
        if (t->rec != t->tail)
            tx_arm(x, t);
    }
    FENCE_FULL(); /* C-FENCE */
    tx_reclaim_all(x); /* C-HEAD of every holder */
    return x->nfree[cls] != 0;
}

/* The buffer at the top of our free stack of class c (nfree[c] > 0): the one
 * reserve hands out and commit takes. */
static inline char *pool_top(struct pt_xport *x, uint32_t c)
{
    return x->pool[c] + (size_t)x->freel[c][x->nfree[c] - 1] * x->slot_size;
}

/* shm_reserve's buffers to take back before it hands one out; false when
 * there is no room (the ring or the pool armed). Out of line: inlined, its
 * calls made reserve save two registers more and set up a stack frame for
 * every message (7 instructions, callgrind). */
static __attribute__((noinline)) bool tx_room(struct pt_xport *x, struct shm_tx *t,
                                               enum pt_cls cls)
{
    /* Reuse: the peer has answered since our last message (no streak),
     * which went through the ring: take its buffer back now and fill the
     * same buffer again, still in our cache, instead of the next of the
     * ring's PTL_QUEUE_SLOTS buffers in turn (32 x 4 KiB, more than a core's
     * L1; 2-4 KiB ping-pong -5..-11%, fiftieth session). By the head the
     * peer's answer carried, if it came through its ring (P-HEAD): its head's
     * line stays where it is, so the peer's next R-HEAD store needs no
     * invalidation of our copy before its fence (D6 waited for it: 1.5-4
     * KiB -8..-22% in the slow placement, 256 B-1 KiB -2..-19% once every
     * ring message reused, fifty-eighth session). An answer through a lane
     * carries none: a large message's buffer is worth A-HEAD (the line asked
     * for when the answer was peeked, peek_served), a small one's is not
     * (1 KiB +3%). Not in a stream, whose receiver moves the head all the
     * time. */
    if (!t->streak && tx_reuse_due(t)) {
        tx_reclaim_to(x, t, cls, t->pig);
        if (tx_reuse_look(t))
            tx_reclaim(x, t, cls);
    }
    if (t->tail - t->rec > x->mask) { /* the ring looks full: ask where r is */
        tx_reclaim(x, t, cls);
        if (t->tail - t->rec > x->mask && !tx_arm_ring(x, t, cls)) {
            x->stall_ctr++; /* armed: r rings us when it frees room */
            return false;
        }
    }
    if (PT_UNLIKELY(!x->nfree[cls])) {
        tx_reclaim_all(x);
        if (!x->nfree[cls] && !tx_arm_pool(x, cls)) {
            x->stall_ctr++;
            return false;
        }
    }
    return true;
}

static void *shm_reserve(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (PT_UNLIKELY(peer >= x->np))
        return NULL;
    struct shm_tx *t = &x->out[peer * 2 + cls];
    if (PT_UNLIKELY((!t->streak && tx_reuse_due(t)) || t->tail - t->rec > x->mask ||
                    !x->nfree[cls]) &&
        !tx_room(x, t, cls))
        return NULL;
    /* The first message since the peer last answered (a ping-pong's, an
     * exchange's): ask for the lane lines it will take now (as many as the
     * lane's last message took), while the engine builds it, so that the
     * commit finds them ours or on their way and its fence (F-SND) waits
     * less for the receiver's copies to go (ping-pong p50: 8 B -11..-13%,
     * 64-200 B -12..-20%; bench/results-notes.md, "Forty-fourth session").
     * A stream prefetches its own way (fb_send). */
    struct shm_fbtx *f = &x->fbtx[peer];
    uint32_t nl = f->last_nl[cls] ? f->last_nl[cls] : 1; /* at most PT_SHM_FB_MAXLN */
    if (f->state == 1 && !t->streak && f->tail[cls] + nl - f->head[cls] <= PT_SHM_FBLINES) {
        /* (only lines the receiver has read: fb_send's room check, with the
         * head as last read; a lane that looks full is not taken from it) */
        for (uint32_t i = 0; i < nl; i++)
            PREFETCH_W(&f->box->lane[cls][(f->tail[cls] + i) & (PT_SHM_FBLINES - 1)]);
    }
    /* The same for a message that takes the ring: the buffer's lines, as
     * many as our last message to this peer took (a ping-pong's buffer was
     * last read by the peer), but at most PT_SHM_PF_LINES of a message
     * longer than PT_SHM_PF_WHOLE lines: a core has only so many misses in
     * flight, and further prefetches stalled the sender (3-4 KiB ping-pong
     * -21% in the fast placement with the cap; the copy that follows asks
     * for the rest itself). */
    char *top = pool_top(x, cls);
    if (!t->streak && t->last_len) {
        uint32_t pf = t->last_len <= PT_SHM_PF_WHOLE * PT_CACHELINE ? t->last_len
                      : PT_SHM_PF_LINES * PT_CACHELINE;
        for (uint32_t o = 0; o < pf; o += PT_CACHELINE)
            PREFETCH_W(top + o);
    }
    /* The buffer at the top of the free stack; commit takes it. A reserve
     * that is not committed leaves nothing behind. */
    return top;
}

static inline uint32_t *slot_ord(void *slot)
{
    return (uint32_t *)((char *)slot + PT_XPORT_ORD_OFF);
}

/* The header's transport-owned first word of a ring buffer (the rings need
 * no sequence word: R-TAIL publishes), written by its commit: the low half
 * the message's byte count (header and payload, at most 0xffff: the receiver
 * only prefetches by it, rx_prefetch_rest, bounded by the buffer, nothing
 * else trusts it), the high half the sender's head of our ring to it in the
 * same class (P-HEAD, shm_region.h; pig_note). */
static inline uint32_t *slot_xseq(void *slot)
{
    return (uint32_t *)((char *)slot + PT_XPORT_SEQ_OFF);
}

static inline uint32_t xseq_word(uint32_t len, uint32_t head)
{
    return (len < 0xffffu ? len : 0xffffu) | head << 16;
}

/* ---- fast boxes, sending (shm_region.h, "Fast boxes") ----------------------- */

static inline uint32_t fb_seqv(uint32_t pos) { return pos * 2u + 1u; }

/* FB-SEQ-A (pairs with the sender's FB-SEQ): line `pos` of a lane holds a
 * message's first line, published. */
static inline bool fb_published(const struct pt_shm_fbline *lane, uint32_t pos)
{
    return LD_ACQUIRE(&lane[pos & (PT_SHM_FBLINES - 1)].seq) == fb_seqv(pos);
}

/* A further line's 60 bytes: everything after its sequence word. */
static inline unsigned char *fb_cont(struct pt_shm_fbline *ln)
{
    return (unsigned char *)ln + sizeof ln->seq;
}
_Static_assert(sizeof(struct pt_shm_fbline) - sizeof(uint32_t) == PT_SHM_FB_CONT_BYTES,
               "a further line carries all but its sequence word");

/* Our box k at receiver r is ours from now on: resume its state from the
 * region (its owner line: written by us only), the first message of each
 * lane restarting the receiver's base (a re-attach cannot know whether the
 * last message before it updated both bases). */
void pt_shm_fb_tx_resume(struct pt_xport *x, uint32_t r, uint32_t k)
{
    struct shm_fbtx *f = &x->fbtx[r];
    f->box = pt_shm_fbox(x->base, &x->l, r, k);
    f->state = 1;
    f->cnt = LD_RELAXED(&f->box->tx_cnt);
    for (uint32_t c = 0; c < PT_CLS_NR; c++) {
        f->tail[c] = LD_RELAXED(&f->box->tx_tail[c]);
        f->head[c] = LD_ACQUIRE(&f->box->rx_head[c]); /* FB-HEAD-A */
        if (f->tail[c] - f->head[c] > PT_SHM_FBLINES)
            f->head[c] = f->tail[c]; /* not a head r wrote: the lane reads full */
        memset(f->box->tx_base[c], 0, sizeof f->box->tx_base[c]);
        f->reset[c] = 1;
    }
}

/* We have sent r PT_SHM_FB_AFTER messages: claim a free box of its block
 * (FB-CLAIM, then FB-COUNT). Once per peer; none free, and we never look
 * again (the first PT_SHM_FBOXES hot senders of a receiver have them). */
static void fb_claim(struct pt_xport *x, uint32_t r)
{
    struct shm_fbtx *f = &x->fbtx[r];
    f->state = 2;
    struct pt_shm_fbdir *d = pt_shm_fbdir(x->base, &x->l, r);
    for (uint32_t k = 0; k < PT_SHM_FBOXES; k++) {
        uint32_t z = 0;
        if (LD_RELAXED(&d->owner[k]) || !RMW_CAS(&d->owner[k], &z, x->me + 1))
            continue; /* FB-CLAIM */
        RMW_ADD(&x->ranks[x->me].fb_claims, 1);
        pt_shm_fb_tx_resume(x, r, k);
        RMW_ADD(&d->nclaimed, 1); /* FB-COUNT: after the claim (r reads it first) */
        return;
    }
}

_Static_assert(PT_XPORT_HDR_BYTES == 32 * sizeof(uint32_t), "a header is the 32 words fb_diff compares");

/* Room for nl lines from pos in lane cls: as we last saw the lane, else
 * after a look at where r is. */
static inline bool fb_room(struct shm_fbtx *f, uint32_t cls, uint32_t pos, uint32_t nl)
{
    if (pos + nl - f->head[cls] <= PT_SHM_FBLINES)
        return true;
    uint32_t h = LD_ACQUIRE(&f->box->rx_head[cls]); /* FB-HEAD-A pairs with FB-HEAD */
    if (h - f->head[cls] <= pos - f->head[cls])
        f->head[cls] = h; /* else not a head r wrote: no progress */
    return pos + nl - f->head[cls] <= PT_SHM_FBLINES;
}

/* Send the message in buf (len bytes: header, payload) through our box's
 * lane of class cls, if it fits in size and room. False: use the ring.
 * Only the header words that differ from the lane's base go (shm_fbcode.h). */
static bool fb_send(struct shm_fbtx *f, uint32_t cls, const char *buf, uint32_t len,
                    uint32_t ord, bool stream)
{
    if (len < PT_XPORT_HDR_BYTES || len > PT_SHM_FB_MAXMSG)
        return false;
    /* A lane without room for a line is found so before the header's diff:
     * a stream that filled it goes on through the ring, and each of its
     * messages looked here first (the diff cost the half of an 8 B stream
     * that took the ring about 60 instructions each, callgrind). */
    uint32_t pos = f->tail[cls];
    if (!fb_room(f, cls, pos, 1))
        return false;
    uint32_t *base = f->box->tx_base[cls];
    const bool reset = f->reset[cls]; /* against a zero base */
    static const uint32_t zero[32];
    uint32_t mask = pt_fb_diff(buf, reset ? zero : base);
    uint32_t nw = pt_fb_pop(mask), plen = len - PT_XPORT_HDR_BYTES;
    uint32_t need = nw * 4 + plen, nl = 1;
    if (need > PT_SHM_FB_HEAD_BYTES)
        nl += (need - PT_SHM_FB_HEAD_BYTES + PT_SHM_FB_CONT_BYTES - 1) / PT_SHM_FB_CONT_BYTES;
    if (nl > PT_SHM_FB_MAXLN || (nl > 1 && !fb_room(f, cls, pos, nl)))
        return false;
    struct pt_shm_fbline *lane = f->box->lane[cls];
    const uint32_t lm = PT_SHM_FBLINES - 1;
    struct pt_shm_fbline *ln = &lane[pos & lm];
    /* The stream: the changed words, then the payload; straight into the
     * first line when it fits there (an 8 B put), else staged. */
    unsigned char stage[PT_SHM_FB_HEAD_BYTES + (PT_SHM_FB_MAXLN - 1) * PT_SHM_FB_CONT_BYTES];
    unsigned char *st = nl == 1 ? ln->data : stage;
    const unsigned char *wb = (const unsigned char *)buf;
    uint32_t o = 0;
    for (uint32_t m = mask; m; m &= m - 1) {
        memcpy(st + o, wb + 4 * (uint32_t)__builtin_ctz(m), 4);
        o += 4;
    }
    memcpy(st + o, buf + PT_XPORT_HDR_BYTES, plen);
    /* Further lines first, then the first line's body, then its sequence
     * word (FB-SEQ): r sees the message whole or not at all. */
    for (uint32_t i = 1; i < nl; i++) {
        struct pt_shm_fbline *cl = &lane[(pos + i) & lm];
        ST_RELAXED(&cl->seq, 0);
        memcpy(fb_cont(cl), stage + PT_SHM_FB_HEAD_BYTES + (i - 1) * PT_SHM_FB_CONT_BYTES,
               PT_SHM_FB_CONT_BYTES);
    }
    ln->ord = ord;
    ln->mask = mask;
    ln->len = (uint16_t)len;
    ln->nlines = (uint8_t)nl;
    ln->reset = (uint8_t)reset;
    if (nl > 1)
        memcpy(ln->data, stage, PT_SHM_FB_HEAD_BYTES);
    ST_RELEASE(&ln->seq, fb_seqv(pos)); /* FB-SEQ pairs with FB-SEQ-A */
    /* The base is now this header (words 0 and 31 are never compared). */
    memcpy(base, buf, 32 * sizeof *base);
    f->reset[cls] = 0;
    f->last_nl[cls] = nl;
    f->tail[cls] = pos + nl;
    f->cnt++;
    if (stream) {
        /* A stream (the peer has not answered since our last message): own
         * the line after next before we fill it. Written now, it would wait
         * for the receiver's copy of it to be invalidated (its read of the
         * lane's previous round), and every fence and locked instruction
         * after the write waits for that too (F-SND below, D6, D3). The
         * receiver polls only the line at its head, at most the next one:
         * the line after next is not in use there. In a ping-pong the same
         * prefetch competes with the receiver's read of the line just
         * written (8 B half round trip +15%), hence only in a stream. */
        PREFETCH_W(&lane[(pos + nl + PT_FB_PF_AHEAD) & lm]);
    }
    ST_RELAXED(&f->box->tx_tail[cls], pos + nl); /* for a re-attach only */
    ST_RELAXED(&f->box->tx_cnt, f->cnt);
    return true;
}

/* ---- the ring socket (shm_int.h; transport/mix.c) -------------------------- */

/* A ring of peer's bell (the futex's seq bump and wake done) also makes the
 * peer's socket readable: its engine sleepers may be in poll() on another
 * transport's descriptor beside it (engine/wait.c, fd_wait: the socket is a
 * ring's second half there, as the eventfd is for this process's rings).
 * One byte, never blocking: a full queue is a readable one, and a peer not
 * bound (not yet attached, or gone) has no sleeper to wake. */
static void ring_sock(struct pt_xport *x, uint32_t peer)
{
    struct sockaddr_un a = x->rname;
    char d[12];
    int k = 0;
    do {
        d[k++] = (char)('0' + peer % 10);
        peer /= 10;
    } while (peer);
    uint32_t len = x->rname_len;
    while (k && len < sizeof a.sun_path)
        a.sun_path[len++] = d[--k];
    char one = 1;
    (void)!sendto(x->rsock, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a,
                  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
}

static inline void ring_peer(struct pt_xport *x, uint32_t peer)
{
    if (pt_wake_if_sleeping_fenced(&x->ranks[peer].bell) && PT_UNLIKELY(x->rsock >= 0))
        ring_sock(x, peer);
}

int pt_shm_ring_socket(struct pt_xport *x, const char *prefix)
{
    if (x->rsock >= 0)
        return 0;
    size_t pl = strlen(prefix);
    if (pl + 12 >= sizeof x->rname.sun_path)
        return -ENAMETOOLONG;
    memset(&x->rname, 0, sizeof x->rname);
    x->rname.sun_family = AF_UNIX;
    x->rname.sun_path[0] = '\0'; /* abstract: nothing in the file system, gone with us */
    memcpy(x->rname.sun_path + 1, prefix, pl);
    x->rname_len = (uint32_t)(1 + pl);
    int fd = pt_fd_above_std(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return -errno;
    struct sockaddr_un me = x->rname;
    int n = snprintf(me.sun_path + x->rname_len, sizeof me.sun_path - x->rname_len, "%u", x->me);
    socklen_t alen =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + x->rname_len + (uint32_t)n);
    if (bind(fd, (struct sockaddr *)&me, alen) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    x->rsock = fd;
    return 0;
}

int pt_shm_ring_fd(struct pt_xport *x) { return x->rsock; }

void pt_shm_ring_everyone(struct pt_xport *x)
{
    for (uint32_t i = 0; i < x->np; i++) {
        pt_wake_all(&x->ranks[i].bell);
        if (x->rsock >= 0)
            ring_sock(x, i);
    }
}

static void tx_bit(struct pt_xport *x, uint32_t peer);
static void tx_due(struct pt_xport *x, uint32_t peer, uint8_t f);

static void shm_commit(struct pt_xport *x, uint32_t peer, enum pt_cls cls, uint32_t len)
{
    struct shm_tx *t = &x->out[peer * 2 + cls];
    struct shm_fbtx *f = &x->fbtx[peer];
    /* Order stamp: messages committed to this peer so far, both classes and
     * the fast box (the tails and the box's count resume together after a
     * re-attach). R-TAIL or FB-SEQ publishes it. */
    uint32_t ord = x->out[peer * 2].tail + x->out[peer * 2 + 1].tail + f->cnt;
    if (f->state == 1 && x->out[peer * 2].streak + x->out[peer * 2 + 1].streak < x->fb_streak) {
        /* The buffer reserve returned stays on top of the free stack (it
         * is hot for the next message): the message goes to the lane. */
        if (fb_send(f, cls, pool_top(x, cls), len, ord, t->streak != 0)) {
            t->streak++;
            t->last_len = 0;
            if (x->tx_held) {
                tx_due(x, peer, 1); /* F-SND and D1 at tx_flush */
                return;
            }
            PT_PERTURB();
            if (x->af_reg && LD_RELAXED(&x->ranks[peer].af))
                COMPILER_BARRIER(); /* AF: F-SND's partner is the receiver's AF-M */
            else
                FENCE_FULL(); /* F-SND: FB-SEQ before the doorbell's load (D1) */
            ring_peer(x, peer);
            return;
        }
    } else if (PT_UNLIKELY(!f->state) && ord >= PT_SHM_FB_AFTER) {
        fb_claim(x, peer); /* this message still goes through the ring */
    }
    uint16_t b = x->freel[cls][--x->nfree[cls]]; /* the buffer reserve returned */
    char *buf = x->pool[cls] + (size_t)b * x->slot_size;
    *slot_ord(buf) = ord;
    /* P-HEAD: our head of the peer's ring to us in this class, as of now:
     * every buffer before it we have read (published with the message by
     * R-TAIL below) */
    *slot_xseq(buf) = xseq_word(len, x->in[peer * 2 + cls].head);
    t->last_len = len; /* a message fits its buffer */
    uint32_t pos = t->tail;
    t->map[pos & x->mask] = b;
    ST_RELAXED(&t->ring->ent[pos & x->mask], b);
    t->tail = pos + 1;
    ST_RELEASE(&t->ring->tail, pos + 1); /* R-TAIL pairs with A-TAIL */
    if (PT_UNLIKELY(!x->holding[peer])) {
        x->holding[peer] = 1;
        x->holders[x->nholders++] = peer;
    }
    if (++t->streak >= 2 && len <= PT_XPORT_PF_BYTES && x->nfree[cls]) {
        /* Streaming small messages: own the next buffer's first lines before
         * we fill it (the receiver read it last). */
        char *next = pool_top(x, cls);
        PREFETCH_W(next);
        PREFETCH_W(next + 64);
    }
    if (x->tx_held) {
        tx_due(x, peer, 2); /* F-SND, D-BIT and D1 at tx_flush */
        return;
    }
    /* F-SND: R-TAIL before the load of our bit (D-BIT, shm_region.h) and,
     * the doorbell's D1 (engine/wait.h), before the load of its sleepers
     * (model/region.pml commit(); MUT_FSND removes it). */
    PT_PERTURB();
    FENCE_FULL();
    tx_bit(x, peer);
    ring_peer(x, peer); /* D1: after F-SND or B-SET/S-SET */
}

/* Our bit in receiver peer's "senders with work" words (D-BIT), after
 * F-SND (commit's, or tx_flush's for a batch). */
static void tx_bit(struct pt_xport *x, uint32_t peer)
{
    char *rb = (char *)x->base + x->l.off_procs + (uint64_t)peer * x->l.proc_bytes;
    _Atomic uint64_t *w = (_Atomic uint64_t *)(rb + x->l.words_off) + x->my_word;
    if (PT_UNLIKELY(!(LD_RELAXED(w) & x->my_bit))) {
        RMW_OR(w, x->my_bit); /* B-SET: an RMW, a full fence before the summary load (MUT_BSET) */
        _Atomic uint64_t *sm = (_Atomic uint64_t *)(rb + x->l.sum_off) + x->my_sword;
        if (!(LD_RELAXED(sm) & x->my_sbit))
            RMW_OR(sm, x->my_sbit); /* S-SET (D-SUM; MUT_SSET leaves it out) */
    }
}

/* Batched doorbells (xport.h tx_hold/tx_flush; docs/waiting.md, "D1 after a
 * batch"). A held commit has published its message (FB-SEQ or R-TAIL) and
 * lists its receiver; tx_flush's one fence orders every such publish
 * before the loads that commit would have made after its own F-SND. The
 * engine holds only across a pass over its command rings, which does not
 * wait for any peer, so a receiver asleep learns of the pass's messages
 * when the pass ends: later by the pass's length, never lost. */
static void tx_ring_due(struct pt_xport *x, bool fenced);

static void tx_due(struct pt_xport *x, uint32_t peer, uint8_t f)
{
    uint8_t o = x->txdue_f[peer];
    if (!o)
        x->txdue[x->ntxdue++] = peer;
    x->txdue_f[peer] = (uint8_t)(o | f);
    /* A pass may take PT_CMD_BATCH commands from each of many rings: the
     * first receiver is not kept waiting for all of them. */
    if (++x->ntxheld >= PT_SHM_TX_HOLD_MAX)
        tx_ring_due(x, false);
}

static void shm_tx_hold(struct pt_xport *x) { x->tx_held = true; }

static void shm_tx_flush(struct pt_xport *x, bool fenced)
{
    x->tx_held = false;
    tx_ring_due(x, fenced);
}

/* F-SND for every publish listed since the last one, then each receiver's
 * bit (a ring was used) and D1. */
static void tx_ring_due(struct pt_xport *x, bool fenced)
{
    x->ntxheld = 0;
    if (!x->ntxdue)
        return;
    PT_PERTURB();
    if (!fenced)
        FENCE_FULL(); /* F-SND for every publish of the batch (MUT_FSND) */
    for (uint32_t i = 0; i < x->ntxdue; i++) {
        uint32_t peer = x->txdue[i];
        if (x->txdue_f[peer] & 2)
            tx_bit(x, peer);
        x->txdue_f[peer] = 0;
        ring_peer(x, peer); /* D1 */
    }
    x->ntxdue = 0;
}

/* Sender s wrote a value into its ring to us that no correct sender writes
 * (or a third process forged it): never read s again. Rare; logs once. */
static void rx_faulty(struct pt_xport *x, uint32_t s, const char *what)
{
    if (!LD_RELAXED(&x->rxo[s].bad)) {
        ST_RELAXED(&x->rxo[s].bad, 1);
        pt_log(PT_LOG_ERR, "job region: the ring from process %u to process %u has %s: "
                           "messages from it are ignored from now on", s, x->me, what);
    }
}

/* The message at the head of ring (s, c), or NULL. Checks every value read
 * from the ring (shm_region.h, "What r trusts"). */
static void *ring_look(struct pt_xport *x, uint32_t s, uint32_t c)
{
    struct shm_rx *q = &x->in[s * 2 + c];
    if (q->head == q->ctail) {
        uint32_t t = LD_ACQUIRE(&q->ring->tail); /* A-TAIL pairs with R-TAIL */
        if (t == q->head)
            return NULL;
        if (PT_UNLIKELY(t - q->head > x->mask + 1)) {
            rx_faulty(x, s, "a tail more than a ring ahead of our head");
            return NULL;
        }
        q->ctail = t;
    }
    uint32_t b = LD_RELAXED(&q->ring->ent[q->head & x->mask]);
    if (PT_UNLIKELY(b >= x->l.pool_n[c])) {
        rx_faulty(x, s, "a buffer index beyond its pool");
        return NULL;
    }
    return q->pool + (size_t)b * x->slot_size;
}

/* ---- fast boxes, receiving ------------------------------------------------- */

_Static_assert(PT_SHM_FBOXES <= 32, "fb_looked has a bit per box");

/* The directory's count moved: list the boxes claimed since (FB-COUNT,
 * then the owners). A box names a rank of the job other than us, and a
 * sender has one box here; anything else is not a value a sender writes. */
static void fb_pickup(struct pt_xport *x)
{
    uint32_t n = LD_ACQUIRE(&x->fbdir->nclaimed); /* pairs with FB-COUNT */
    x->fb_seen = n;
    for (uint32_t k = 0; k < PT_SHM_FBOXES && x->nfbrx < PT_SHM_FBOXES; k++) {
        uint32_t o = LD_ACQUIRE(&x->fbdir->owner[k]); /* after FB-CLAIM */
        if (!o)
            continue;
        uint32_t s = o - 1;
        if (x->fb_looked & (1u << k))
            continue; /* listed, or refused, before */
        x->fb_looked |= 1u << k;
        if (s >= x->n || s == x->me || x->fbrx_of[s])
            continue; /* forged, or a second box of one sender: never read */
        struct shm_fbrx *b = &x->fbrx[x->nfbrx++];
        b->box = pt_shm_fbox(x->base, &x->l, x->me, k);
        b->s = s;
        for (uint32_t c = 0; c < PT_CLS_NR; c++) {
            b->head[c] = LD_RELAXED(&b->box->rx_head[c]); /* ours: resumes a re-attach */
            b->dec[c] = 0;
        }
        x->fbrx_of[s] = (uint16_t)x->nfbrx;
        pt_shm_rx_list(x, s); /* polled from now on, never dropped (rx_drop) */
    }
}

/* The message at the head of box b's lane c, rebuilt into b->out[c], or
 * NULL. Every value read from the lane is checked (shm_region.h). */
static void *fb_look(struct pt_xport *x, struct shm_fbrx *b, uint32_t c)
{
    if (b->dec[c])
        return b->out[c]; /* decoded, not yet released (deferred) */
    const uint32_t lm = PT_SHM_FBLINES - 1;
    struct pt_shm_fbline *lane = b->box->lane[c];
    uint32_t pos = b->head[c];
    struct pt_shm_fbline *ln = &lane[pos & lm];
    if (!fb_published(lane, pos))
        return NULL;
    uint32_t mask = ln->mask, len = ln->len, nl = ln->nlines, ord = ln->ord;
    uint32_t nw = pt_fb_pop(mask);
    if (PT_UNLIKELY((mask & ~PT_FB_WORD_MASK) || nl < 1 || nl > PT_SHM_FB_MAXLN ||
                    len < PT_XPORT_HDR_BYTES || len > PT_SHM_FB_MAXMSG ||
                    nw * 4 + len - PT_XPORT_HDR_BYTES >
                        PT_SHM_FB_HEAD_BYTES + (nl - 1) * PT_SHM_FB_CONT_BYTES)) {
        rx_faulty(x, b->s, "a fast-box message no sender writes");
        return NULL;
    }
    /* The stream: read in place when it is the first line alone. */
    unsigned char stage[PT_SHM_FB_HEAD_BYTES + (PT_SHM_FB_MAXLN - 1) * PT_SHM_FB_CONT_BYTES];
    const unsigned char *st = ln->data;
    if (nl > 1) {
        memcpy(stage, ln->data, PT_SHM_FB_HEAD_BYTES);
        for (uint32_t i = 1; i < nl; i++)
            memcpy(stage + PT_SHM_FB_HEAD_BYTES + (i - 1) * PT_SHM_FB_CONT_BYTES,
                   fb_cont(&lane[(pos + i) & lm]), PT_SHM_FB_CONT_BYTES);
        st = stage;
    }
    uint32_t *base = b->box->rx_base[c];
    if (ln->reset)
        memset(base, 0, 32 * sizeof *base);
    uint32_t o = 0;
    for (uint32_t m = mask; m; m &= m - 1) {
        memcpy(&base[__builtin_ctz(m)], st + o, 4);
        o += 4;
    }
    unsigned char *out = (unsigned char *)b->out[c];
    memcpy(out, base, PT_XPORT_HDR_BYTES);
    memcpy(out + PT_XPORT_HDR_BYTES, st + o, len - PT_XPORT_HDR_BYTES);
    *slot_ord(out) = ord;
    b->dec[c] = nl;
    return out;
}

_Static_assert(sizeof(((struct shm_fbrx *)0)->out[0]) >= PT_SHM_FB_MAXMSG,
               "a lane's decoded message fits its buffer");

/* Box b's lane c: the message fb_look returned is done (FB-HEAD). */
static void fb_release(struct shm_fbrx *b, uint32_t c)
{
    b->head[c] += b->dec[c];
    b->dec[c] = 0;
    ST_RELEASE(&b->box->rx_head[c], b->head[c]); /* FB-HEAD pairs with FB-HEAD-A */
}

/* Box b's lane c has a message for fb_look: decoded and not yet released,
 * or its head line published (FB-SEQ-A, the load fb_look makes). */
static inline bool fb_ready(const struct shm_fbrx *b, uint32_t c)
{
    return b->dec[c] || fb_published(b->box->lane[c], b->head[c]);
}

/* A request lane or ring of one of the senders rx_pending_beyond leaves
 * out (none when park is NULL). */
struct shm_park {
    const uint32_t *s;
    uint32_t n;
};

static bool parked(const struct shm_park *pk, uint32_t s, uint32_t c)
{
    if (!pk || c != PT_CLS_REQ)
        return false;
    for (uint32_t i = 0; i < pk->n; i++)
        if (pk->s[i] == s)
            return true;
    return false;
}

/* Any thread (rx_pending, rx_pending_from): the owners of boxes in our
 * block with a message in a lane, up to max of them into peers (NULL: only
 * how many, so max 1 asks whether there is one), but for the lanes park
 * leaves out. Reads only shared words: the directory, each claimed box's
 * heads and lines. */
static uint32_t fb_senders(struct pt_xport *x, uint32_t *peers, uint32_t max,
                           const struct shm_park *pk)
{
    uint32_t n = 0;
    if (!LD_ACQUIRE(&x->fbdir->nclaimed))
        return 0;
    for (uint32_t k = 0; k < PT_SHM_FBOXES && n < max; k++) {
        uint32_t o = LD_ACQUIRE(&x->fbdir->owner[k]);
        /* The owners are a prefix: a claimer takes the lowest free box
         * (fb_claim tries k only after k - 1 was taken) and no box is given
         * back. A box claimed after this load of a free owner is claimed
         * after our caller's fence (S2/W2/D3), so its first message's F-SND
         * sees our announcement and rings: nothing beyond needs a look.
         * (Was: all 32 owners at every recheck, ~280 instructions per
         * ping-pong iteration with one box claimed, callgrind.) A rank
         * that writes a zero owner under an honest sender's box hides it
         * from this recheck only; the engine's backstop covers that. */
        if (!o)
            break;
        if (o - 1 >= x->n || LD_RELAXED(&x->rxo[o - 1].bad))
            continue;
        struct pt_shm_fbox *box = pt_shm_fbox(x->base, &x->l, x->me, k);
        for (uint32_t c = 0; c < PT_CLS_NR; c++) {
            uint32_t h = LD_RELAXED(&box->rx_head[c]);
            if (!parked(pk, o - 1, c) && fb_published(box->lane[c], h)) {
                if (peers)
                    peers[n] = o - 1;
                n++;
                break;
            }
        }
    }
    return n;
}

/* The next message from sender s in class c, or NULL: the ring's head, or
 * when s has a fast box here, the earlier (by order stamp) of the ring's and
 * the lane's heads. q->lane says which. The ring is looked at first: a
 * message the sender put in the lane before the ring's head is visible once
 * that head is (FB-ORDER in model/fbox.pml). When the ring was empty and the
 * lane's head is not the message due, the ring is looked at again: what the
 * sender put there before that head is visible now. */
static void *rx_look(struct pt_xport *x, uint32_t s, uint32_t c)
{
    struct shm_rx *q = &x->in[s * 2 + c];
    void *r = ring_look(x, s, c);
    q->lane = 0;
    uint32_t bi = x->fbrx_of[s];
    if (!bi) {
        /* A ring head that is not the message due may follow messages in a
         * box claimed before it that we have not listed yet (FB-ORDER). */
        if (!r || *slot_ord(r) == x->rxo[s].next ||
            LD_ACQUIRE(&x->fbdir->nclaimed) == x->fb_seen)
            return r;
        fb_pickup(x);
        bi = x->fbrx_of[s];
        if (!bi)
            return r;
    }
    if (LD_RELAXED(&x->rxo[s].bad))
        return r;
    void *f = fb_look(x, &x->fbrx[bi - 1], c);
    if (f && !r && *slot_ord(f) != x->rxo[s].next)
        r = ring_look(x, s, c); /* FB-ORDER: the second look */
    if (f && (!r || (int32_t)(*slot_ord(f) - *slot_ord(r)) < 0)) {
        q->lane = 1;
        return f;
    }
    return r;
}

/* Sender s's head in class c has stamp `ord`, not the one due next: its
 * other ring may hold an earlier message, visible since A-TAIL of this one
 * (the sender committed it first). Returns the class to deliver from. */
static int order_pick(struct pt_xport *x, uint32_t s, int c, uint32_t ord, void **slot_p)
{
    int o = c ^ 1;
    if (o == PT_CLS_REQ && x->rxo[s].req_waits)
        return c; /* a deferred request lets later responses pass */
    void *other = rx_look(x, s, (uint32_t)o);
    if (!other || (int32_t)(*slot_ord(other) - ord) > 0)
        return c;
    *slot_p = other;
    return o;
}

/* The `listed` check keeps a sender in act once: a listed sender's bit stays
 * set, and another sender's pickup sees it again (model/region.pml: MUT_LIST). */
void pt_shm_rx_list(struct pt_xport *x, uint32_t s)
{
    if (s < x->np && !x->listed[s] && !LD_RELAXED(&x->rxo[s].bad)) {
        x->listed[s] = 1;
        x->act[x->nact++] = s;
    }
}

/* Senders that set their bit since we last looked (D-SUM): into the active
 * list. One relaxed load per summary word when nothing is new. Returns how
 * many were added. */
static uint32_t rx_pickup(struct pt_xport *x)
{
    uint32_t added = x->nact;
    for (uint32_t k = 0; k < x->l.nsum; k++) {
        uint64_t sv = LD_RELAXED(&x->sum[k]);
        while (PT_UNLIKELY(sv)) {
            uint32_t j = (uint32_t)__builtin_ctzll(sv);
            sv &= sv - 1;
            uint32_t wi = k * 64 + j;
            /* S-CLR (D-SUM, receiver side): an RMW, so a full fence before
             * the word's load (model/region.pml: MUT_SWAP loads it first) */
            RMW_AND(&x->sum[k], ~(1ull << j));
            if (wi >= x->l.nwords)
                continue; /* forged summary bit */
            uint64_t wv = LD_ACQUIRE(&x->words[wi]);
            while (wv) {
                uint32_t b = (uint32_t)__builtin_ctzll(wv);
                wv &= wv - 1;
                pt_shm_rx_list(x, wi * 64 + b);
            }
        }
    }
    return x->nact - added;
}

/* A poll found nothing: unlist the senders whose two rings are empty
 * (B-CLR, D-BIT in shm_region.h). Held senders stay: their message waits. */
static void rx_drop(struct pt_xport *x)
{
    for (uint32_t i = 0; i < x->nact;) {
        uint32_t s = x->act[i];
        struct shm_rx *q = &x->in[s * 2];
        bool bad = LD_RELAXED(&x->rxo[s].bad);
        if (!bad && (x->rxo[s].held || x->fbrx_of[s] || q[0].head != q[0].ctail ||
                     q[1].head != q[1].ctail)) { /* a box sender stays listed */
            i++;
            continue;
        }
        if (!bad) {
            _Atomic uint64_t *w = &x->words[s / 64];
            uint64_t bit = 1ull << (s % 64);
            RMW_AND(w, ~bit); /* B-CLR (model/region.pml rx_drop) */
            FENCE_FULL();     /* B-CLR before the reload (MUT_BCLR); the reload: MUT_RELOAD */
            if (LD_ACQUIRE(&q[0].ring->tail) != q[0].head || /* A-TAIL */
                LD_ACQUIRE(&q[1].ring->tail) != q[1].head) {
                RMW_OR(w, bit); /* it committed meanwhile: listed, bit set again */
                i++;
                continue;
            }
        }
        x->listed[s] = 0;
        x->act[i] = x->act[--x->nact];
        x->fast_left = 0; /* the places rr names moved: a full look first */
    }
}

/* A ring message's lines past its first three (which shm_peek asked for),
 * asked for as soon as it is served: the engine reads the header, checks
 * and matches before it copies the payload, and a 1-2 KiB payload's lines,
 * fetched from the sender's cache only when the copy reaches them, came a
 * hardware-prefetcher step at a time after that work. The length is the
 * sender's (slot_xseq), bounded by the buffer. */
static inline void rx_prefetch_rest(const struct pt_xport *x, void *slot, uint32_t w)
{
    uint32_t len = w & 0xffffu;
    if (len > x->slot_size)
        len = x->slot_size;
    for (uint32_t o = 3 * PT_CACHELINE; o < len; o += PT_CACHELINE)
        __builtin_prefetch((char *)slot + o);
}

/* Both ways of peeking (stream_next, the full look in shm_peek) end here:
 * sender s's message `slot`, stamp `ord`, from its ring or (q->lane) its
 * box's lane in class c, is the one returned. */
static inline void *peek_served(struct pt_xport *x, uint32_t s, uint32_t c, uint32_t ord,
                                void *slot, uint32_t *peer_p, enum pt_cls *cls_p)
{
    struct shm_rx *q = &x->in[s * 2 + c];
    q->ord = ord;
    if (!q->lane) {
        uint32_t w = *slot_xseq(slot);
        rx_prefetch_rest(x, slot, w);
        pig_note(x, s, c, q->head, w);
    }
    if (!q->lane && q->ctail - q->head > 1) {
        /* Streaming: the next message's buffer while the engine handles
         * this one (checked again when it is peeked). */
        uint32_t nb = LD_RELAXED(&q->ring->ent[(q->head + 1) & x->mask]);
        if (nb < x->l.pool_n[c])
            __builtin_prefetch(q->pool + (size_t)nb * x->slot_size);
    }
    x->idle_peeks = 0;
    /* An answer from s: our next large message to s will look at s's head
     * (shm_reserve, "reuse"), unless s's ring messages told us it read
     * everything (P-HEAD); ask for its line now (both classes share it). */
    struct shm_tx *ot = &x->out[s * 2];
    if ((tx_reuse_look(&ot[0]) && !tx_pig_all(&ot[0])) ||
        (tx_reuse_look(&ot[1]) && !tx_pig_all(&ot[1])))
        __builtin_prefetch(ot->hd);
    ot[0].streak = ot[1].streak = 0;
    *peer_p = s;
    *cls_p = (enum pt_cls)c;
    return slot;
}

/* A streaming sender: the ring or lane the last full look served holds the
 * message due next from that sender (order stamp; xport.h, "Order": nothing
 * earlier in its other class, ring or lane), which is served without the
 * full look, at most PT_SHM_STREAM_PEEKS times in a row: a look at every
 * listed sender's response queue and lanes before each request was half the
 * streaming receiver's instructions per message (callgrind). A ring is
 * served from the entries the last full look saw published (its cached
 * tail: A-TAIL came before), and every peek counts. A lane is looked at as
 * fb_look looks (FB-SEQ-A), and only a message served counts: a ping-pong's
 * peeks find the lane empty many times between two messages, and the full
 * look after them cost ~300 instructions per message on the path to the
 * waiter (callgrind, 8 B ping-pong, host matching). Anything else (held,
 * faulty, a request that waits, an entry out of range, another stamp) is
 * left to the full look (a lane's message it decoded stays decoded). */
static void *stream_next(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    uint32_t s = x->fast_s, c = x->fast_c;
    struct shm_rx *q = &x->in[s * 2 + c];
    if (x->rxo[s].req_waits || (x->nheld && x->rxo[s].held) || LD_RELAXED(&x->rxo[s].bad))
        goto end;
    void *slot;
    if (x->fast_b) {
        slot = fb_look(x, x->fast_b, c);
        if (!slot || *slot_ord(slot) != x->rxo[s].next)
            return NULL; /* the stream goes on: the lane may fill again */
        q->lane = 1;
    } else {
        if (q->head == q->ctail)
            goto end;
        uint32_t b = LD_RELAXED(&q->ring->ent[q->head & x->mask]);
        if (PT_UNLIKELY(b >= x->l.pool_n[c]))
            goto end; /* the full look reports it (ring_look) */
        slot = q->pool + (size_t)b * x->slot_size;
        if (*slot_ord(slot) != x->rxo[s].next)
            goto end;
        q->lane = 0;
    }
    x->fast_left--;
    return peek_served(x, s, c, *slot_ord(slot), slot, peer_p, cls_p);
end:
    x->fast_left = 0; /* the full look next */
    return NULL;
}

/* Nothing for the full look to find: no summary bit (a sender not listed
 * that committed), no box claimed since fb_pickup, and every listed
 * sender's two rings and box lanes empty, loaded as ring_look and fb_look
 * load them (A-TAIL, FB-SEQ-A). Anything else, held or faulty senders
 * included, is left to the full look. An empty peek of a waiter or a NIC
 * thread cost ~340 instructions through the full look with one sender
 * listed (rx_pickup twice, rx_look per class), ~120 this way (callgrind,
 * 8 B ping-pong, host matching, 2026-11-30): the
 * time from a message's commit to its peek is half an empty poll on
 * average. What arrives after these loads, the next peek finds (as after
 * the full look's). */
static bool rx_quiet(struct pt_xport *x)
{
    for (uint32_t k = 0; k < x->l.nsum; k++)
        if (LD_RELAXED(&x->sum[k]))
            return false;
    if (LD_RELAXED(&x->fbdir->nclaimed) != x->fb_seen)
        return false;
    for (uint32_t i = 0; i < x->nact; i++) {
        uint32_t s = x->act[i];
        const struct shm_rx *q = &x->in[s * 2];
        if (q[0].head != q[0].ctail || q[1].head != q[1].ctail ||
            LD_ACQUIRE(&q[0].ring->tail) != q[0].head || /* A-TAIL, as ring_look */
            LD_ACQUIRE(&q[1].ring->tail) != q[1].head)
            return false;
        uint32_t bi = x->fbrx_of[s];
        if (bi) {
            const struct shm_fbrx *b = &x->fbrx[bi - 1];
            for (uint32_t c = 0; c < PT_CLS_NR; c++) {
                if (fb_ready(b, c))
                    return false;
            }
        }
    }
    return true;
}

/* A peek that found nothing: unlist idle senders only after a streak of
 * empty peeks (or at once when many are listed): a sender that stays
 * listed keeps its bit set and commits with a load of it, while one
 * dropped and listed again costs an RMW on each side per message (a
 * ping-pong would pay that on every message). */
static void peek_idle(struct pt_xport *x)
{
    if (x->nact > PT_SHM_DROP_LISTED + x->nfbrx || ++x->idle_peeks >= PT_SHM_DROP_PEEKS) {
        x->idle_peeks = 0;
        rx_drop(x);
    }
}

static void *shm_peek(struct pt_xport *x, uint32_t *peer_p, enum pt_cls *cls_p)
{
    if (x->fast_left) {
        /* A streaming lane with nothing new: the peek goes on at once (a
         * waiter's empty peeks, many per message) */
        if (!x->fast_b || fb_ready(x->fast_b, x->fast_c)) {
            void *slot = stream_next(x, peer_p, cls_p);
            if (slot)
                return slot;
        }
    }
    if (x->nact <= PT_SHM_QUIET_LISTED && rx_quiet(x)) {
        peek_idle(x);
        return NULL;
    }
    if (PT_UNLIKELY(LD_RELAXED(&x->fbdir->nclaimed) != x->fb_seen))
        fb_pickup(x); /* boxes claimed since we last looked */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            rx_pickup(x);
        const uint32_t n = x->nact;
        /* Responses first, then requests; within a class, round-robin over
         * the active senders from the one after the one served last, so a
         * busy sender cannot starve the others. Per sender, commit order
         * across the classes (xport.h, "Order"). With many senders listed
         * (an incast: 255 senders of requests, no responses), a look at
         * every response queue before each request cost the receiver O(n)
         * per message (ring_look, rx_look and shm_peek: 28% of a 256-rank
         * incast's cycles, against 1% for drain_rx): then the responses
         * come first only at every PT_SHM_RSP_EVERY-th peek or while they
         * keep coming, and otherwise after the requests (found there when
         * no request is), so a response waits at most that many requests. */
        bool rsp_first = n <= PT_SHM_RSP_ALWAYS || x->rsp_seen ||
                         ++x->rsp_skip >= PT_SHM_RSP_EVERY;
        for (int k0 = 0; k0 < 3; k0++) {
            int c0 = k0 == 1 ? PT_CLS_REQ : PT_CLS_RSP;
            if ((k0 == 0 && !rsp_first) || (k0 == 2 && rsp_first))
                continue;
            if (c0 == PT_CLS_RSP && n > PT_SHM_RSP_ALWAYS) {
                x->rsp_skip = 0;
                x->rsp_seen = false; /* set again below if this look finds one */
            }
            uint32_t i = x->rr;
            for (uint32_t k = 0; k < n; k++) {
                if (++i >= n)
                    i = 0;
                uint32_t s = x->act[i];
                if (PT_UNLIKELY(x->nheld) && x->rxo[s].held)
                    continue;
                int c = c0;
                void *slot = rx_look(x, s, (uint32_t)c);
                if (!slot)
                    continue;
                /* Fetch the rest of the header (the order stamp is there)
                 * and the first payload line in parallel. */
                __builtin_prefetch((char *)slot);
                __builtin_prefetch((char *)slot + 64);
                __builtin_prefetch((char *)slot + 128);
                uint32_t ord = *slot_ord(slot);
                if (PT_UNLIKELY(ord != x->rxo[s].next)) {
                    c = order_pick(x, s, c, ord, &slot);
                    ord = *slot_ord(slot);
                }
                /* The next full look starts after s, in either class: a
                 * lane's stream (stream_next) may go on after peeks that
                 * found nothing, while messages of either class came from
                 * others, and the look after it must reach them before s
                 * (the bound in tests/mp/mp_xorder.c, RUN_BOUND). */
                x->rr = i;
                if (c0 == PT_CLS_RSP)
                    x->rsp_seen = true;
                x->fast_s = s; /* stream_next: this ring or lane, while it streams */
                x->fast_c = (uint32_t)c;
                x->fast_b = x->in[s * 2 + c].lane ? &x->fbrx[x->fbrx_of[s] - 1] : NULL;
                x->fast_left = PT_SHM_STREAM_PEEKS;
                return peek_served(x, s, (uint32_t)c, ord, slot, peer_p, cls_p);
            }
        }
        peek_idle(x);
        if (!rx_pickup(x)) /* senders that came while we looked: once more */
            break;
    }
    return NULL;
}

static void shm_unhold_all(struct pt_xport *x)
{
    while (x->nheld)
        x->rxo[x->held_list[--x->nheld]].held = 0;
}

static void shm_release(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    struct shm_rx *q = &x->in[peer * 2 + cls];
    x->rxo[peer].next = q->ord + 1;
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 0;
    if (q->lane) {
        fb_release(&x->fbrx[x->fbrx_of[peer] - 1], cls);
        return;
    }
    q->head++;
    ST_RELEASE(q->hd, q->head); /* R-HEAD pairs with the sender's A-HEAD */
    if (!q->adv) { /* for rx_done: its mark is looked at once per pass */
        q->adv = 1;
        x->advl[x->nadv++] = peer * 2 + cls;
    }
}

/* End of a receive pass (model/credit.pml, the receiver): the senders of
 * the rings we moved that wait for room (their mark set) are rung. One
 * fence per poll that released something (none of our own when the engine
 * posted events: D6's fence comes after the releases); the mark shares the
 * line we read the ring's entries from. */
static void shm_rx_done(struct pt_xport *x, bool fenced)
{
    if (!x->nadv)
        return;
    if (!fenced)
        FENCE_FULL(); /* R-FENCE: every R-HEAD of the pass before the marks' loads
                       * (MUT_RFENCE); or the caller's (the engine's D6) */
    for (uint32_t i = 0; i < x->nadv; i++) {
        uint32_t k = x->advl[i];
        struct shm_rx *q = &x->in[k];
        q->adv = 0;
        if (PT_LIKELY(!LD_ACQUIRE(&q->ring->want))) /* R-WANT */
            continue;
        /* Short of the sender's threshold: the mark stays set; we consume
         * on up to it (it is at most the tail) unless we stop draining. */
        if ((int32_t)(q->head - LD_RELAXED(&q->ring->want_at)) < 0)
            continue;
        if (RMW_XCHG(&q->ring->want, 0)) { /* R-CLR: a full fence before sleepers' load */
            struct pt_waitword *b = &x->ranks[k / 2].bell;
            if (LD_RELAXED(&b->sleepers)) { /* R-RING (polled is not looked at: C-RECHECK
                                             * is every sleeper's and D4's) */
                pt_wake_all(b);
                if (PT_UNLIKELY(x->rsock >= 0))
                    ring_sock(x, k / 2);
            }
        }
    }
    x->nadv = 0;
}

static const uint32_t *shm_stall_counter(struct pt_xport *x) { return &x->stall_ctr; }

/* Token holder: a new round of stalls begins; the marks stay set (their
 * receivers clear them). */
static void shm_stall_clear(struct pt_xport *x)
{
    uint32_t n = LD_RELAXED(&x->narmed);
    for (uint32_t i = 0; i < n; i++)
        x->out[LD_RELAXED(&x->armed[i])].armed = 0;
    ST_RELAXED(&x->narmed, 0);
}

/* Any thread, after its full fence (C-RECHECK): armed since stall_clear,
 * and no mark cleared since. */
static bool shm_stall_armed(struct pt_xport *x)
{
    uint32_t n = LD_ACQUIRE(&x->narmed);
    if (!n)
        return false;
    for (uint32_t i = 0; i < n && i < x->np * PT_CLS_NR; i++) {
        uint32_t k = LD_RELAXED(&x->armed[i]);
        if (k >= x->np * PT_CLS_NR || !LD_RELAXED(&x->out[k].ring->want))
            return false;
    }
    return true;
}

static void shm_defer(struct pt_xport *x, uint32_t peer, enum pt_cls cls)
{
    if (cls == PT_CLS_REQ)
        x->rxo[peer].req_waits = 1;
    if (!x->rxo[peer].held) {
        x->rxo[peer].held = 1;
        x->held_list[x->nheld++] = peer;
    }
}

/* Any thread: senders with their bit set and a message in a ring, up to max
 * into peers (NULL: only how many). Shared words only. */
static uint32_t ring_senders(struct pt_xport *x, uint32_t *peers, uint32_t max,
                             const struct shm_park *pk)
{
    uint32_t n = 0;
    for (uint32_t wi = 0; wi < x->l.nwords && n < max; wi++) {
        uint64_t wv = LD_ACQUIRE(&x->words[wi]);
        while (wv && n < max) {
            uint32_t s = wi * 64 + (uint32_t)__builtin_ctzll(wv);
            wv &= wv - 1;
            if (s >= x->np || LD_RELAXED(&x->rxo[s].bad))
                continue;
            for (uint32_t c = 0; c < PT_CLS_NR; c++) {
                struct shm_rx *q = &x->in[s * 2 + c];
                if (parked(pk, s, c))
                    continue;
                if (LD_ACQUIRE(&q->ring->tail) != LD_RELAXED(q->hd)) { /* A-TAIL */
                    if (peers)
                        peers[n] = s;
                    n++;
                    break;
                }
            }
        }
    }
    return n;
}

static bool shm_rx_pending(struct pt_xport *x)
{
    /* Any thread (the sleep recheck, S2/W2/D3 after their fence): only
     * shared words are read. Outside a drop, every sender with a message we
     * have not consumed and that did not see the sleeper has its bit set
     * (shm_region.h, "Doorbell"): the bits and tails decide; the summary is
     * an early answer (docs/waiting.md, model/region.pml MUT_PENDSUM). */
    for (uint32_t k = 0; k < x->l.nsum; k++)
        if (LD_ACQUIRE(&x->sum[k]))
            return true;
    return fb_senders(x, NULL, 1, NULL) != 0 || /* the fast boxes: their senders set no bit */
           ring_senders(x, NULL, 1, NULL) != 0;
}

/* Any thread, after its fence (the park rule, xport.h): rx_pending without
 * the summary's early answer (a parked sender's bit keeps it set), the
 * parked senders' request rings and lanes left out. The same sources
 * decide as for rx_pending: every other sender with a message has its bit
 * set or rang (model/region.pml's region-pendsum), or has it in a lane. */
static bool shm_rx_pending_beyond(struct pt_xport *x, const uint32_t *parked_s, uint32_t n)
{
    struct shm_park pk = {parked_s, n};
    return fb_senders(x, NULL, 1, &pk) != 0 || ring_senders(x, NULL, 1, &pk) != 0;
}

/* Cold path (the engine's backstop: are rx_pending's senders still on
 * their way to our bell?). */
static uint32_t shm_rx_pending_from(struct pt_xport *x, uint32_t *peers, uint32_t max)
{
    uint32_t n = ring_senders(x, peers, max, NULL);
    return n + fb_senders(x, peers + n, max - n, NULL);
}

/* Cold path (the backstop's verdict): each of rx_pending's sources, as it
 * reads them, so that a report tells a summary bit that no sender's bit
 * backs (nothing to receive) from a message. */
static void shm_rx_describe(struct pt_xport *x, char *buf, size_t len)
{
    uint32_t sums = 0, bits = 0;
    for (uint32_t k = 0; k < x->l.nsum; k++)
        sums += LD_ACQUIRE(&x->sum[k]) != 0;
    for (uint32_t wi = 0; wi < x->l.nwords; wi++)
        bits += (uint32_t)__builtin_popcountll(LD_ACQUIRE(&x->words[wi]));
    snprintf(buf, len, "summary words set %u, sender bits %u, box senders %u, ring senders %u",
             sums, bits, fb_senders(x, NULL, UINT32_MAX, NULL),
             ring_senders(x, NULL, UINT32_MAX, NULL));
}

/* CMA names a task, and a process whose leader has exited (main called
 * pthread_exit) while other threads run has a zombie there with no memory:
 * ESRCH though the peer lives (an adversarial client's rank failed every
 * rendezvous with PTL_NI_PEER_DIED). Then one of its live threads is named
 * instead (they share the memory), found in /proc and kept for the peer
 * with the pid it belongs to. A kept thread is used only while /proc still
 * lists it under that pid (one look per transfer, for such peers only): a
 * thread id that ended may name another process's thread later.
 * cma_thread: the thread to name for peer (whose process is `pid`), or 0
 * (none kept, or no longer valid). cma_retarget, after an ESRCH on
 * `tried`: a live thread other than it, kept, or 0 (the process is gone):
 * the ESRCH stands. Cold: /proc only for such peers. */
static pid_t cma_thread(struct pt_xport *x, uint32_t peer, pid_t pid)
{
    if (!x->cma_tid)
        return 0;
    struct shm_cma_tid *c = &x->cma_tid[peer];
    pid_t t = LD_RELAXED(&c->tid);
    if (t <= 0 || LD_RELAXED(&c->pid) != pid)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d", (int)pid, (int)t);
    if (access(path, F_OK) == 0)
        return t;
    ST_RELAXED(&c->tid, 0);
    return 0;
}

static pid_t cma_retarget(struct pt_xport *x, uint32_t peer, pid_t pid, pid_t tried)
{
    if (!x->cma_tid)
        return 0;
    pid_t t = pt_proc_live_thread(pid, tried);
    ST_RELAXED(&x->cma_tid[peer].pid, (int32_t)pid);
    ST_RELAXED(&x->cma_tid[peer].tid, (int32_t)t);
    return t;
}

/* Guest slot `peer` (its ospid just read with acquire) is still held by the
 * owner our engine took last (x->gen, shm_peer_moved): every transfer our
 * engine has with the slot is that owner's, since a change fails them all
 * first (engine/nic.c, pt_nic_guest_moved). Else the owner left (DETACHED
 * or CLAIMING) or another claimed the slot since: its process is not the
 * transfer's peer, and a step must not read or write it (before, a pull
 * under way when the slot changed hands while we were stopped took the new
 * owner's bytes and reported PTL_NI_OK, and a cooperative push wrote into
 * the new owner's memory: mp_join rndvmove). Race-free against a claim:
 * ospid first (acquire), then the state (acquire), then gen. A claimer
 * replaces the ospid only after the last owner's DETACHED (and its ospid
 * 0), and stores gen before its CLAIMING's release (G-GEN): a pid read of a
 * later owner's comes with DETACHED, CLAIMING or that owner's ATTACHED, and
 * then with its gen. A claim after the check does not change the pid the
 * step names: the last owner's, whose process left the NI (its flush gave
 * up on us) or ended (ESRCH). Not covered: an owner that died without
 * PtlNIFini (no DETACHED; the job fails), whose slot stays ATTACHED with its
 * gen: a claimer's CAS of the dead pid (G-CLAIM) publishes the new pid
 * before its G-GEN, so between the two a load of the pid here, then of the
 * state and gen, reads the new pid with the old owner's ATTACHED and gen.
 * A two-step claim would close it (a negative pid while claiming, the pid
 * stored with release after G-GEN; every reader of a guest's ospid would
 * have to read a negative one as held). Nor a pid the kernel reused, as
 * for a rank. */
static bool cma_owner_same(struct pt_xport *x, uint32_t peer)
{
    struct pt_shm_rank *rec = &x->ranks[peer];
    if (LD_ACQUIRE(&rec->state) != PT_SHM_R_ATTACHED)
        return false;
    return LD_RELAXED(&rec->gen) == x->gen[peer];
}

/* CMA between this process and a peer: read its memory into local iovecs
 * (pull) or write local iovecs into its memory (push, the cooperative
 * rendezvous: wire.h). */
static ssize_t shm_cma(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                       const struct iovec *remote, int nremote, bool write)
{
    if (peer >= x->np)
        return -EINVAL;
    if (peer == x->me) /* own memory: no CMA */
        return write ? pt_iov_copy_local(remote, nremote, local, nlocal)
                     : pt_iov_copy_local(local, nlocal, remote, nremote);
    if (!x->cma_allowed) {
        pt_log_once(PT_LOG_WARN, "CMA disabled by PTL_CMA=0: rendezvous data is copied "
                                 "through the job region");
        return -EPERM;
    }
    pid_t ospid = LD_ACQUIRE(&x->ranks[peer].ospid); /* before cma_owner_same's loads */
    if (ospid <= 0 || (peer >= x->n && !cma_owner_same(x, peer)))
        return -ESRCH; /* the peer's process is gone: PTL_NI_PEER_DIED */
    pid_t pid = cma_thread(x, peer, ospid);
    if (pid <= 0)
        pid = ospid;
    ssize_t n;
    int e;
    for (int tries = 0;; tries++) {
        n = write ? process_vm_writev(pid, local, (unsigned long)nlocal, remote,
                                      (unsigned long)nremote, 0)
                  : process_vm_readv(pid, local, (unsigned long)nlocal, remote,
                                     (unsigned long)nremote, 0);
        if (n >= 0)
            return n;
        e = errno;
        pid_t t = e == ESRCH && tries < 4 ? cma_retarget(x, peer, ospid, pid) : 0;
        if (t <= 0)
            break;
        pid = t;
    }
    if (e == EPERM)
        pt_log_once(PT_LOG_WARN, "CMA refused (EPERM: Yama ptrace_scope or a non-dumpable "
                                 "peer, rank %u pid %d): copying through the job region",
                    peer, (int)pid);
    else if (e == ENOSYS)
        pt_log_once(PT_LOG_WARN, "CMA unavailable (ENOSYS: kernel or seccomp): copying "
                                 "through the job region");
    return -e;
}

static ssize_t shm_pull(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote, uint64_t desc)
{
    (void)desc; /* CMA reads any address of the peer's */
    return shm_cma(x, peer, local, nlocal, remote, nremote, false);
}

static ssize_t shm_push(struct pt_xport *x, uint32_t peer, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote)
{
    return shm_cma(x, peer, local, nlocal, remote, nremote, true);
}

_Static_assert(PT_SHM_COOP_WORDS == PT_XPORT_COOP_WORDS, "claim words: the region and xport.h agree");

static _Atomic uint32_t *shm_coop_word(struct pt_xport *x, uint32_t owner, uint32_t k)
{
    if (owner >= x->np || k >= PT_SHM_COOP_WORDS)
        return NULL;
    return pt_shm_coop(x->base, &x->l, owner) + k;
}

static struct pt_flagslot *shm_flag_lines(struct pt_xport *x, uint32_t owner)
{
    return owner < x->np ? pt_shm_flags(x->base, &x->l, owner) : NULL;
}

static bool shm_peer_left(struct pt_xport *x, uint32_t peer)
{
    /* pairs with the orderly close's ST_RELEASE(DETACHED) (R-ATT's partner) */
    return peer < x->np && LD_ACQUIRE(&x->ranks[peer].state) == PT_SHM_R_DETACHED;
}

static bool shm_peer_alive(struct pt_xport *x, uint32_t peer)
{
    if (peer >= x->np)
        return false;
    struct pt_shm_rank *rec = &x->ranks[peer];
    if (LD_RELAXED(&rec->dead)) /* set by the launcher when it reaped a failure */
        return false;
    /* A guest slot its owner left (PtlNIFini, which counted the departure):
     * nothing answers for that owner any more, whether or not its process
     * lives on. A new claimer makes the slot CLAIMING, then ATTACHED. */
    if (peer >= x->n && peer != x->me && LD_ACQUIRE(&rec->state) == PT_SHM_R_DETACHED)
        return false;
    pid_t p = LD_RELAXED(&rec->ospid);
    if (p <= 0 || peer == x->me)
        return true; /* not started or not attached yet: nothing says it died */
    /* The engine asks on every poll while a queue to the peer is full: ask
     * the kernel at most every PT_SHM_ALIVE_NS per peer while it lives. A
     * peer that left in order is asked each time (the engine asks once per
     * departure counted, and a count by shm_watch.c comes right after the
     * process ended: a cached "alive" from just before it left a get to it
     * waiting for ever, mp_pmix_departed_auto). */
    if (x->exited && LD_RELAXED(&x->exited[peer]))
        return false;
    uint64_t now = pt_now_ns();
    if (now < x->alive_until[peer] && LD_ACQUIRE(&rec->state) != PT_SHM_R_DETACHED)
        return true;
    if (!pt_shm_pid_alive(p))
        return false;
    x->alive_until[peer] = now + PT_SHM_ALIVE_NS;
    return true;
}

/* Guest slot `peer` claimed again since our engine last took its owner
 * (shm_region.h, G-GEN): true once per change, which it takes now. The
 * state's acquire first (A-ATT: a claimer's gen precedes its CLAIMING's
 * release; the departure sweep reads nothing else of the slot before).
 * Ranks, ourselves: never. Engine (token holder) only: x->gen is ours. */
static bool shm_peer_moved(struct pt_xport *x, uint32_t peer)
{
    if (peer < x->n || peer >= x->np || peer == x->me)
        return false;
    struct pt_shm_rank *rec = &x->ranks[peer];
    (void)LD_ACQUIRE(&rec->state);
    uint32_t g = LD_RELAXED(&rec->gen);
    if (PT_LIKELY(g == x->gen[peer]))
        return false;
    x->gen[peer] = g;
    return true;
}

static struct pt_waitword *shm_doorbell(struct pt_xport *x) { return &x->ranks[x->me].bell; }

static pid_t shm_peer_ospid(struct pt_xport *x, uint32_t peer)
{
    return peer < x->np ? LD_RELAXED(&x->ranks[peer].ospid) : 0;
}

static int shm_rank_of(struct pt_xport *x, uint32_t nid, uint32_t pid)
{
    if (pid < x->n && x->pids[pid] == pid && x->nids[pid] == nid)
        return (int)pid; /* the usual map: pid of rank r is r */
    for (uint32_t r = 0; r < x->n; r++)
        if (x->pids[r] == pid && x->nids[r] == nid)
            return (int)r;
    /* Not a rank: a guest, which may have joined after we attached. Its
     * record is live (claimed and freed at run time): read it every time.
     * A guest that left (PtlNIFini) keeps its id until its slot is claimed
     * again, as a rank that left keeps its own: what is sent to it waits in
     * its queues (and is dropped by the next claimer), no error. */
    for (uint32_t g = x->n; g < x->np; g++) {
        struct pt_shm_rank *rec = &x->ranks[g];
        uint32_t st = LD_ACQUIRE(&rec->state); /* A-ATT pairs with R-ATT */
        if ((st == PT_SHM_R_ATTACHED || st == PT_SHM_R_DETACHED) &&
            LD_RELAXED(&rec->pid) == pid && LD_RELAXED(&rec->nid) == nid)
            return (int)g;
    }
    return -1;
}

static void shm_id_of(struct pt_xport *x, uint32_t rank, uint32_t *nid_p, uint32_t *pid_p)
{
    if (rank < x->n) {
        *nid_p = x->nids[rank];
        *pid_p = x->pids[rank];
    } else if (rank < x->np) { /* a guest slot: whoever holds it now */
        *nid_p = LD_RELAXED(&x->ranks[rank].nid);
        *pid_p = LD_RELAXED(&x->ranks[rank].pid);
    } else {
        *nid_p = 0xffffffffu;
        *pid_p = 0xffffffffu;
    }
}

static uint32_t shm_job_failed(struct pt_xport *x)
{
    return LD_RELAXED(&x->hdr->job_failed); /* monotonic flag; see shm_region.h */
}

static uint32_t shm_departures(struct pt_xport *x)
{
    return LD_RELAXED(&x->hdr->departed); /* monotonic count; see shm_region.h */
}

void pt_shm_xport_free(struct pt_xport *x)
{
    free(x->cma_tid);
    if (x->rsock >= 0)
        close(x->rsock);
    if (x->peer_bytes)
        munmap(x->peer_mem, x->peer_bytes);
    free(x);
}

/* What this transport can do towards one peer (xport.h, PT_XPEER_*): push
 * and the claim words always; CMA only with a peer that takes part in it
 * (its record's `cma`). Cold path: a rendezvous or a cooperative offer. */
static uint32_t shm_peer_caps(struct pt_xport *x, uint32_t peer)
{
    if (peer != x->me && (peer >= x->np || !LD_RELAXED(&x->ranks[peer].cma)))
        return PT_XPEER_NOCMA;
    return PT_XPEER_PUSH;
}

static void shm_close(struct pt_xport *x)
{
    pt_shm_watch_stop(x); /* it reads the region */
    if (pt_wrap_n()) /* PTL_TEST_WRAP: where the counters ended (a run crossed 0?) */
        for (uint32_t p = 0; p < x->n; p++) {
            if (p == x->me)
                continue;
            const struct shm_tx *t = &x->out[p * 2];
            const struct shm_fbtx *f = &x->fbtx[p];
            const struct shm_rx *q = &x->in[p * 2];
            pt_log(PT_LOG_INFO,
                   "PTL_TEST_WRAP: to %u: tails %u %u, box %s lanes %u %u count %u; from %u: "
                   "heads %u %u, next stamp %u; bell seq %u",
                   p, t[0].tail, t[1].tail, f->state == 1 ? "yes" : "no",
                   f->state == 1 ? f->tail[0] : 0, f->state == 1 ? f->tail[1] : 0, f->cnt, p,
                   q[0].head, q[1].head, x->rxo[p].next, LD_RELAXED(&x->ranks[x->me].bell.seq));
        }
    /* Orderly finish: detached, not dead. The launcher judges the exit status.
     * Only by the process that attached: a child of fork() that closes its
     * parent's NI must not detach the parent (api/ni.c never does). */
    struct pt_shm_rank *rec = &x->ranks[x->me];
    if (x->ospid == getpid() && LD_RELAXED(&rec->ospid) == x->ospid) {
        ST_RELAXED(&rec->cma, 0); /* (a guest slot's next claimer writes its own) */
        ST_RELAXED(&rec->af, 0);
        ST_RELEASE(&rec->state, PT_SHM_R_DETACHED); /* R-ATT's partner for readers */
        pt_shm_leave_name(x);
        if (x->me >= x->n) {
            ST_RELEASE(&rec->ospid, 0); /* a guest slot is free again (G-CLAIM) */
            /* A guest's departure: nobody reaps it (the launcher counts a
             * rank's once it ended), and nothing of ours answers from now
             * on, so we count it ourselves: engines then fail what they still
             * wait for from us (shm_peer_alive: a DETACHED guest slot is
             * gone). Before, a get or an ACK-ed put to a guest that had left
             * waited for ever (shm_region.h, `departed`). */
            RMW_ADD(&x->hdr->departed, 1);
            FENCE_FULL(); /* the count before the sleepers' words (D1's pairing) */
            pt_shm_ring_everyone(x);
        }
    }
    munmap(x->base, x->size);
    pt_shm_xport_free(x);
}

/* AF (xport.h af_offer; shm_region.h `af`): peers read our mark at each
 * fast-box commit to us. */
static bool shm_af_offer(struct pt_xport *x, bool on)
{
    bool ok = on && x->af_reg;
    ST_RELEASE(&x->ranks[x->me].af, ok ? 1u : 0u); /* after pt_wait_set_af (AF) */
    return ok;
}

static const struct pt_xport_ops g_shm_ops = {
    .name = "shm",
    .reserve = shm_reserve,
    .commit = shm_commit,
    .peek = shm_peek,
    .unhold_all = shm_unhold_all,
    .release = shm_release,
    .defer = shm_defer,
    .rx_pending = shm_rx_pending,
    .rx_describe = shm_rx_describe,
    .rx_pending_beyond = shm_rx_pending_beyond,
    .rx_pending_from = shm_rx_pending_from,
    .pull = shm_pull,
    .push = shm_push,
    .coop_word = shm_coop_word,
    .flag_lines = shm_flag_lines,
    .peer_left = shm_peer_left,
    .peer_alive = shm_peer_alive,
    .peer_moved = shm_peer_moved,
    .peer_caps = shm_peer_caps,
    .doorbell = shm_doorbell,
    .af_offer = shm_af_offer,
    .ring_fd = pt_shm_ring_fd,
    .peer_ospid = shm_peer_ospid,
    .rank_of = shm_rank_of,
    .id_of = shm_id_of,
    .job_failed = shm_job_failed,
    .departures = shm_departures,
    .close = shm_close,
    .stall_counter = shm_stall_counter,
    .stall_clear = shm_stall_clear,
    .stall_armed = shm_stall_armed,
    .rx_done = shm_rx_done,
    .tx_hold = shm_tx_hold,
    .tx_flush = shm_tx_flush,
};

const struct pt_xport_ops *pt_shm_ops(void) { return &g_shm_ops; }

uint32_t pt_shm_queue_depth(struct pt_xport *x) { return x->qslots; }

bool pt_shm_rank_attached(struct pt_xport *x, uint32_t rank)
{
    return rank < x->n && LD_ACQUIRE(&x->ranks[rank].state) == PT_SHM_R_ATTACHED; /* A-ATT */
}

_Static_assert(PT_SHM_EP_NAME_MAX == sizeof(((struct pt_shm_rank *)0)->ep_name),
               "PT_SHM_EP_NAME_MAX is the rank record's name field");

int pt_shm_ep_publish(struct pt_xport *x, const void *name, size_t len)
{
    if (len == 0 || len > PT_SHM_EP_NAME_MAX)
        return -E2BIG;
    struct pt_shm_rank *rec = &x->ranks[x->me];
    ST_RELEASE(&rec->ep_len, 0);
    memcpy(rec->ep_name, name, len);
    RMW_ADD(&rec->ep_gen, 1);
    ST_RELEASE(&rec->ep_len, (uint32_t)len); /* R-EP pairs with A-EP */
    return 0;
}

int pt_shm_ep_lookup(struct pt_xport *x, uint32_t rank, void *name, size_t *len, uint32_t *gen)
{
    if (rank >= x->n)
        return -EINVAL;
    struct pt_shm_rank *rec = &x->ranks[rank];
    uint32_t n = LD_ACQUIRE(&rec->ep_len); /* A-EP pairs with R-EP */
    if (n == 0 || n > PT_SHM_EP_NAME_MAX)
        return -EAGAIN;
    if (n > *len)
        return -ENOBUFS;
    memcpy(name, rec->ep_name, n);
    *gen = LD_RELAXED(&rec->ep_gen);
    FENCE_FULL(); /* the copy before the second look */
    if (LD_ACQUIRE(&rec->ep_len) != n)
        return -EAGAIN;
    *len = n;
    return 0;
}
