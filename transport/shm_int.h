/*
 * shm_int.h - what the files of the shared-memory transport share and no one
 * else sees: the rank's transport state (struct pt_xport: the data path in
 * shm.c reads and writes it, shm_attach.c builds it) and the helpers one file
 * defines for another. The region itself (what other processes share with
 * us) is shm_region.h; the public side is shm.h.
 *
 *   shm_region.c  layout, creation (memfd or named), validation, liveness of
 *                 a pid, whether a region is in use
 *   cma.c         the CMA probe (can a peer read us?)
 *   shm_launch.c  the launcher's side (ptlrun): child pids, deaths, job
 *                 failure, stale segment cleanup
 *   shm_attach.c  the rank's side of opening: finding or creating the job,
 *                 claiming a rank or guest slot, building struct pt_xport
 *   shm.c         the data path and the ops table
 */
#ifndef PT_SHM_INT_H
#define PT_SHM_INT_H

#include "shm.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SHM_DIR "/dev/shm"          /* where glibc's shm_open() keeps names       */
#define SHM_STALE_AGE_S 60          /* headerless segments older than this: stale */
#define PT_SHM_TMP_SEP '~'          /* a creator's private name: <name>~<pid>; no
                                     * job name has it (pt_shm_name)            */
#define PT_SHM_ALIVE_NS 10000000ull /* peer_alive: re-ask the kernel after 10 ms  */

#define SHM_NOBUF 0xffffu  /* a ring position whose buffer we do not take back */

/* Receiving: the peek's limits (shm.c; tests/mp/mp_xorder.c checks the
 * bound that PT_SHM_STREAM_PEEKS and PT_SHM_RSP_ALWAYS give).
 * rx_drop's hysteresis: idle senders are unlisted after this many empty
 * peeks in a row, or at every empty peek while more than DROP_LISTED are
 * listed (a long active list costs every peek) beside the fast-box senders
 * (listed for good, at most PT_SHM_FBOXES). */
#define PT_SHM_DROP_PEEKS  64
#define PT_SHM_DROP_LISTED 8
/* shm_peek: with more senders listed than this, the response queues are
 * looked at first only at every PT_SHM_RSP_EVERY-th peek (or while they
 * yield responses), else after the requests (docs/architecture.md). */
#define PT_SHM_RSP_ALWAYS  8
#define PT_SHM_RSP_EVERY   16
/* shm_peek: a streaming sender's ring is served this many times in a row
 * without the full look (stream_next), so other senders, responses, newly
 * listed senders and boxes wait at most that many messages. */
#define PT_SHM_STREAM_PEEKS 16
/* shm_peek: with at most this many senders listed, a peek first asks
 * whether anything at all is there (rx_quiet) before the full look. */
#define PT_SHM_QUIET_LISTED 8

/* Receiving, per (sender s, class c): private to the token holder. */
struct shm_rx {
    struct pt_shm_ring *ring;     /* s's ring to us (shared; s writes)             */
    _Atomic uint32_t *hd;         /* our consumer head of it (shared; we write)    */
    char *pool;                   /* s's pool of class c                           */
    uint32_t head;                /* next position to consume                      */
    uint32_t ctail;               /* the tail last read (A-TAIL), checked          */
    uint32_t ord;                 /* the order stamp of the message peek returned
                                   * (xport.h, "Order")                          */
    uint32_t adv;                 /* on the advanced list (release; rx_done)       */
    uint32_t lane;                /* the message peek last looked at here is the
                                   * fast-box lane's, not the ring's              */
};

/* Fast boxes (shm_region.h, "Fast boxes"): private to the token holder. */
#define PT_SHM_FB_MAXMSG (PT_XPORT_HDR_BYTES + PT_SHM_FB_HEAD_BYTES + \
                          (PT_SHM_FB_MAXLN - 1) * PT_SHM_FB_CONT_BYTES)
#define PT_SHM_FB_AFTER  16u  /* messages to a peer before we claim a box there */

/* Receiving: box k of our block, claimed by sender s. */
struct shm_fbrx {
    struct pt_shm_fbox *box;
    uint32_t s;
    uint32_t head[PT_CLS_NR];     /* next line to consume, per lane                 */
    uint32_t dec[PT_CLS_NR];      /* lines of the message decoded into out[c] and
                                   * not released yet (0: none)                   */
    uint64_t out[PT_CLS_NR][(PT_SHM_FB_MAXMSG + 7) / 8]; /* what peek returns (8-aligned) */
};

/* Sending: our box at receiver r. */
struct shm_fbtx {
    struct pt_shm_fbox *box;      /* NULL: none (yet, or never: state)              */
    uint32_t state;               /* 0 not tried, 1 box, 2 none to be had           */
    uint32_t tail[PT_CLS_NR];     /* next line to fill, per lane                     */
    uint32_t head[PT_CLS_NR];     /* r's head as last read (FB-HEAD-A)              */
    uint32_t cnt;                 /* messages sent through the box (order stamps)   */
    uint32_t reset[PT_CLS_NR];    /* the next message restarts r's base (re-attach) */
    uint32_t last_nl[PT_CLS_NR];  /* lines the lane's last message took (reserve's
                                   * guess of the next one's)                     */
};

/* Sending, per (receiver r, class c): private to the token holder. */
struct shm_tx {
    struct pt_shm_ring *ring;     /* our ring to r (shared; we write)              */
    _Atomic uint32_t *hd;         /* r's consumer head of it (shared; r writes)    */
    uint16_t *map;                /* [pos & mask]: the buffer we put there         */
    uint32_t tail;                /* next position to fill                         */
    uint32_t rec;                 /* positions before it: buffers taken back       */
    /* Pacing hint: messages sent since the peer last sent us one (a stream);
     * see shm_commit. */
    uint32_t streak;
    uint32_t last_len;            /* our last message's bytes, when it took the
                                   * ring (0: the lane): shm_reserve's prefetch  */
    uint32_t armed;               /* on the armed list (tx_arm; stall_clear)       */
    uint32_t want_at;             /* the threshold we last stored (tx_arm)          */
    /* P-HEAD (shm_region.h): r's head of this ring as its ring messages to
     * us carry it (16 bits each), extended to a position that is never past
     * the one r had when it sent the message; and the first position of r's
     * ring to us whose messages may be read for it (those before were sent
     * before this attach's head read). */
    uint32_t pig;
    uint32_t pig_from;
};

/* Per sender, receiving: the stamp due next in order (the one after the last
 * message released), and whether its head request was deferred. */
struct shm_rx_ord {
    uint32_t next;
    uint32_t req_waits;
    uint32_t held;                /* defer: peek skips the sender until unhold_all  */
    _Atomic uint32_t bad;         /* its ring held a value no sender writes: never
                                   * read again (token holder writes once; any
                                   * thread reads, rx_pending)                   */
};

#define PT_SHM_TX_HOLD_MAX 32 /* held commits between two rings (tx_hold) */

struct pt_xport {
    struct pt_shm_layout l;       /* our checked copy of the region's geometry      */
    struct shm_rx *in;            /* [s * 2 + c]: ring s -> me (we consume)        */
    struct shm_tx *out;           /* [r * 2 + c]: ring me -> r (we produce)        */
    struct pt_shm_rank *ranks;    /* the region's process records (ranks, guests)  */
    struct pt_shm_hdr *hdr;
    uint32_t me, n;               /* my process slot; the job's ranks              */
    uint32_t np;                  /* process slots: ranks + guests                 */
    uint32_t mask, slot_size;     /* ring entries - 1; buffer bytes                */
    pid_t ospid;                  /* the process that attached (fork: not us)     */
    /* Our pools: free buffers, a private stack per class (no atomics). */
    char *pool[PT_CLS_NR];
    uint16_t *freel[PT_CLS_NR];
    uint32_t nfree[PT_CLS_NR];
    /* Receivers that may still hold buffers of ours (positions not taken
     * back): the only peers a pool refill looks at. */
    uint32_t *holders, nholders;
    uint8_t *holding;             /* [r]: r is in holders                          */
    /* The credit wait (docs/waiting.md, "Stalled on credits"). Sending: the
     * rings (r * 2 + c) whose mark we set since stall_clear; written by the
     * token holder, read by any thread (stall_armed: the count first, then
     * entries below it, each a valid ring index whatever the race). */
    _Atomic uint32_t *armed, narmed;
    uint32_t stall_ctr;           /* reserve failures that armed (token holder)    */
    /* Receiving: the rings (s * 2 + c) whose head we moved since rx_done. */
    uint32_t *advl, nadv;
    /* Batched doorbells (tx_hold .. tx_flush; token holder): while
     * tx_hold, commit leaves F-SND and what follows it to tx_flush, for the
     * ntxdue receivers in txdue; txdue_f[r]: 1 listed, 2 listed and a ring
     * (not the lane) was used (D-BIT due). */
    bool tx_held;
    uint32_t *txdue, ntxdue;
    uint32_t ntxheld;             /* commits held since the last ring (at most
                                   * PT_SHM_TX_HOLD_MAX, then they ring)         */
    uint8_t *txdue_f;
    /* Senders with work: our bitmap (shared), our bit in everyone's. */
    _Atomic uint64_t *words, *sum;
    uint64_t my_bit, my_sbit;     /* our bit in a receiver's word, and its summary */
    uint32_t my_word, my_sword;
    /* The active list: senders peek polls (round robin from rr, per class). */
    uint32_t *act, nact;
    uint8_t *listed;              /* [s]: s is in act                              */
    uint32_t idle_peeks;          /* peeks in a row that found nothing (rx_drop)   */
    uint32_t rsp_skip;            /* peeks since the last look at every response queue */
    bool rsp_seen;                /* that look found a response (shm_peek)         */
    uint32_t rr;                  /* peek: where a full look starts, in either class
                                   * (after the act index a full look served last) */
    uint32_t fast_s, fast_c;      /* peek: the ring or lane the last full look served */
    struct shm_fbrx *fast_b;      /* (the lane's box; NULL: the ring) ...           */
    uint32_t fast_left;           /* ... and how many more stream_next may serve    */
    uint32_t *held_list, nheld;   /* senders with rxo[s].held set, to clear them     */
    struct shm_rx_ord *rxo;       /* [s]: order state of sender s's two rings        */
    /* Fast boxes. Receiving: the boxes of our block we listed, fbrx_of[s]
     * (index + 1, 0: none) for sender s; fb_seen: the directory's count
     * when we last looked. Sending: fbtx[r] towards rank r. */
    struct pt_shm_fbdir *fbdir;
    struct shm_fbrx *fbrx;
    uint32_t nfbrx, fb_seen;
    uint32_t fb_looked;           /* bit k: box k's owner was judged (listed or not;
                                   * an owner is written once, at its claim)       */
    uint16_t *fbrx_of;
    struct shm_fbtx *fbtx;
    /* PTL_SHM_FBOX_STREAK (0: none): a stream (messages sent since the peer
     * last sent us one) takes the rings from this many on. Through a lane,
     * whose receiver polls the very lines we write, a stream made the
     * offload message rate half the rings' (bench/results-notes.md, "Fast
     * boxes"); an answer, or the start of a burst, is the latency case the
     * lanes are for. */
    uint32_t fb_streak;
    uint32_t *nids, *pids;        /* private copy of the ranks' (immutable) ids     */
    uint64_t *alive_until;        /* peer_alive: last "alive" answer valid until    */
    uint32_t *gen;                /* [slot]: a guest slot's claim generation as our
                                   * engine last took it (shm_peer_moved; attach
                                   * reads them all). Our engine only.          */
    void *peer_mem;               /* the mapping that holds the per-peer arrays     */
    size_t peer_bytes;
    bool cma_allowed;             /* PTL_CMA != 0                                   */
    bool af_reg;                  /* AF: PTL_ASYM_FSND and registered for the global
                                   * membarrier (its IPIs reach us): we may skip F-SND
                                   * to a peer that advertises AF, and offer it      */
    /* Per peer: the thread CMA names instead of the peer's pid once its
     * leader has exited, and the pid it is a thread of (shm_cma,
     * cma_retarget; tid 0: the pid). NULL if the allocation failed. Written
     * and read by our engine (the token holder). */
    struct shm_cma_tid {
        _Atomic int32_t pid, tid;
    } *cma_tid;
    uint32_t qslots;              /* the region's queue depth                       */
    void *base;
    uint64_t size;
    /* The ring socket (pt_shm_ring_socket): a job whose engines sleep in
     * poll() on another transport's descriptor too (transport/mix.c) wants
     * every ring of a peer's bell to make that peer's socket readable as
     * well. -1: off (rings are the futex's alone). The peers' names are
     * rname (an abstract address) + their process slot in decimal. */
    int rsock;
    struct pt_shm_watch *watch;   /* shm_watch.c: liveness without a launcher, or NULL */
    _Atomic uint8_t *exited;      /* [slot]: its process ended (the watch saw its pidfd:
                                   * a zombie still answers kill(pid, 0)); NULL
                                   * without a watch. Watch writes, any reads.   */
    struct sockaddr_un rname;
    uint32_t rname_len;           /* bytes of rname.sun_path before the slot     */
};

/* ---- shared between the files (shm_int.h's table above) -------------------- */

/* shm_region.c */
bool pt_shm_pid_alive(pid_t p);
int pt_shm_region_check(void *base, uint64_t size, struct pt_shm_hdr *id,
                        struct pt_shm_layout *l, const char **why);
/* A named region is in use while a process of its job lives: its creator
 * and every process that opened it by name hold a shared flock(2) on the
 * file for as long as they live (pt_shm_region_held: someone does), and its
 * records name live pids. The lock is what a launcher in another PID
 * namespace (a container sharing /dev/shm) can see: by pids alone it took a
 * running job's region for a dead one's and removed it (an adversarial
 * environment). fd: the region's file, or -1 (pids only). */
bool pt_shm_region_held(int fd);
bool pt_shm_region_in_use(void *base, uint64_t size, int fd);
int pt_shm_open_nb(const char *name, int flags, struct stat *st);
int pt_shm_map_fd(int fd, uint64_t size, void **base_p);
/* The name of the region this process opened by name, and the file's
 * identity (the watch unlinks the name only while it still names that file).
 * false: not opened by name. Takes the attach lock: not from an open. */
bool pt_shm_named_ident(char *name, size_t len, dev_t *dev_p, ino_t *ino_p);
/* shm_close, a rank of a named region after its DETACHED store: when not
 * every rank has attached and no other process is attached and alive, the
 * region's name goes (while it still names our region's file). */
void pt_shm_leave_name(struct pt_xport *x);
/* Unlink a region's name only while it still names the file (dev, ino) we
 * know: a later job may have made one of the same name. Logs why. */
void pt_shm_unlink_same(const char *name, dev_t dev, ino_t ino, const char *why);
const char *pt_shm_file_refusal(const struct stat *st, char *buf, size_t len);

/* shm.c */
void pt_shm_rx_list(struct pt_xport *x, uint32_t s);
/* Ring every process's bell (and ring socket, where bound): after a failure
 * or a departure every sleeper must recheck. Cold path. */
void pt_shm_ring_everyone(struct pt_xport *x);
void pt_shm_fb_tx_resume(struct pt_xport *x, uint32_t r, uint32_t k);
void pt_shm_xport_free(struct pt_xport *x);

#endif /* PT_SHM_INT_H */
