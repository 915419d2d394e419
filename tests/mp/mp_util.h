/*
 * mp_util.h - shared helper of the multi-process tests (tests/mp), which run
 * under ptlrun. Public API and p3rt only.
 *
 * Every wait is bounded: a missing event makes the program print what it was
 * waiting for and exit 1, so a broken library fails the test instead of
 * hanging it. Messages are prefixed with the rank.
 *
 * Start-up race: a put can reach a rank before that rank attached its ME.
 * mp_barrier() is built from Portals itself and tolerates that: every rank
 * posts its MEs, then calls mp_barrier(); rank r != 0 puts an "arrived"
 * message to rank 0 and waits for rank 0's "go", re-sending "arrived" with a
 * growing interval while no "go" comes (only the first barrier can lose
 * messages: rank 0 posts the ME of barrier g+1 before it sends the "go" of
 * barrier g, and every rank's "go" ME exists before its first "arrived").
 */
#ifndef MP_UTIL_H
#define MP_UTIL_H

#include <portals3.h>
#include <p3rt/p3rt.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MP_PT_BARRIER 1       /* portal index the barrier uses                    */
#define MP_PT_USER    2       /* first portal index left to the tests             */
#define MP_WAIT_MS    30000   /* longest wait for an expected event               */

struct mp {
    ptl_handle_ni_t ni;
    unsigned rank, size;
    ptl_process_id_t self;
    ptl_process_id_t *ids;    /* [size]: Portals id of every rank (PtlGetRankId) */
    ptl_ni_limits_t limits;
    /* barrier state */
    ptl_handle_eq_t beq;
    ptl_handle_md_t bsend;    /* 8-byte send MD, no EQ                          */
    ptl_handle_me_t bme[2];   /* rank 0: arrival MEs of generations g, g+1      */
    ptl_handle_me_t bsink;    /* rank 0: after them, late duplicates (no event)  */
    uint64_t bgen;
    uint64_t *seen;           /* rank 0: [size] latest generation arrived, + 1  */
    uint64_t bbuf[2], gobuf, sendbuf;
    ptl_sr_value_t drops0;    /* rank 0: PTL_SR_DROP_COUNT once the sink is attached */
};

/* Print "rank R: ..." and exit 1. */
void mp_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Say what the rank is doing (a static string): reported if ptlrun has to
 * terminate it. */
void mp_doing(const char *what);
/* Print "rank R: ..." on stderr. */
void mp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* MP_CHECK(call): anything but PTL_OK prints the call and the code, exits 1. */
#define MP_CHECK(expr) mp_check_at(__FILE__, __LINE__, #expr, (int)(expr))
void mp_check_at(const char *file, int line, const char *what, int rc);

/* PtlInit, PtlSetRank(PTL_INVALID_HANDLE, -1, -1), PtlGetRank, PtlNIInit
 * (PTL_IFACE_DEFAULT, PTL_PID_ANY), PtlGetId, every rank's id, the barrier's
 * own MEs. Exits 1 (with a message) when the job has fewer than min_size
 * ranks. */
void mp_init(struct mp *m, unsigned min_size);
/* The runtime alone, for a program that opens its NI itself (or not at all):
 * PtlInit, PtlSetRank from the launcher, PtlGetRank. Exits 1 (with a
 * message) when the job has fewer than min_size ranks. */
void mp_rank_init(unsigned min_size, unsigned *rank, unsigned *size);
/* The same for the epoch-th NI of this process (after an mp_fini): barrier
 * messages of an earlier NI that are still queued cannot match this one's. */
void mp_init_epoch(struct mp *m, unsigned min_size, unsigned epoch);
void mp_barrier(struct mp *m);
/* Barrier, then PtlNIFini and PtlFini. */
void mp_fini(struct mp *m);
/* The same without the barrier: a rank that leaves while the others go on. */
void mp_fini_alone(struct mp *m);

/* Next event on eq within ms (PtlEQPoll); false on timeout. PTL_EQ_DROPPED
 * and any other error are fatal. */
bool mp_poll(ptl_handle_eq_t eq, ptl_event_t *ev, unsigned ms);
/* Next event must arrive within MP_WAIT_MS and be of kind k (what names the
 * operation in the message); its ni_fail_type must be PTL_NI_OK. */
ptl_event_t mp_expect(ptl_handle_eq_t eq, ptl_event_kind_t k, const char *what);
/* The next n events must be exactly the kinds in kinds[] (in any order, each
 * once), all PTL_NI_OK, each within MP_WAIT_MS. out[i] (if out) receives the
 * event of kinds[i]. */
void mp_expect_all(ptl_handle_eq_t eq, const ptl_event_kind_t *kinds, int n, ptl_event_t *out,
                   const char *what);
/* No event may arrive on eq within ms. */
void mp_expect_none(ptl_handle_eq_t eq, unsigned ms, const char *what);

/* Attach an ME (match_id any, given bits, PTL_RETAIN) + MD to portal pt. */
ptl_handle_md_t mp_post(struct mp *m, ptl_pt_index_t pt, ptl_match_bits_t bits, void *buf,
                        ptl_size_t len, int threshold, unsigned options, ptl_handle_eq_t eq,
                        ptl_unlink_t unlink, ptl_handle_me_t *me_out);
/* Two ranks that signal each other around Portals (mp_died, mp_rfin_died):
 * SIGUSR1 blocked before any thread starts (every thread inherits it), and
 * every rank but 0 in host matching mode (PTL_OFFLOAD=0, set before PtlInit):
 * its engine runs only inside its own Portals calls, so once it stops
 * calling, nothing on it answers or pulls. Call first in main. */
void mp_usr1_block_host_peers(void);
/* The next SIGUSR1 within MP_WAIT_MS, or die naming what was awaited. */
void mp_usr1_wait(const char *what);
/* After the barrier that follows posting an ME over *peer_pid (bits, portal
 * pt, events on eq): send our OS pid to rank 1 - m->rank the same way and
 * wait for both; returns the peer's pid. */
pid_t mp_pid_swap(struct mp *m, ptl_pt_index_t pt, ptl_match_bits_t bits, ptl_handle_eq_t eq,
                  const uint64_t *peer_pid);

/* Whether the shared-memory transport's rendezvous pulls with CMA here, as
 * the library probes it: not with PTL_CMA=0 or PTL_RNDV_MODE=2/copy, nor
 * where the kernel refuses (EPERM, ENOSYS); allowed: EFAULT on address 0 of
 * the launcher. */
bool mp_cma_works(void);

/* Bind a free-floating MD. */
ptl_handle_md_t mp_bind(struct mp *m, void *buf, ptl_size_t len, int threshold,
                        unsigned options, ptl_handle_eq_t eq);

/* Deterministic test pattern: byte i of a buffer that `who` fills for `tag`.
 * Every bit of who and tag reaches every byte: the seed is spread by an odd
 * multiplier before it meets the index, and the product's high and middle
 * bits make the byte, so two (who, tag) pairs agree on a byte by chance
 * (1 in 256), never on a buffer. Before (sixty-first session) who's bits
 * went to bits 40-55 and tag's above bit 0 to bits 21-35 of a word whose
 * bits 56-63 and 13-20 made the byte: buffers of different senders, and of
 * tags of one parity, were identical, and a check could not tell whose
 * data had landed (a helper found it: mp_join's owners 70 and 71). */
static inline uint8_t mp_pattern(unsigned who, unsigned tag, uint64_t i)
{
    uint64_t s = ((uint64_t)who << 32 | tag) * 0xD6E8FEB86659FD93ull;
    uint64_t x = ((i + 1) ^ s) * 0x9E3779B97F4A7C15ull;
    return (uint8_t)(x >> 56 ^ x >> 13);
}
void mp_fill(void *buf, uint64_t len, unsigned who, unsigned tag, uint64_t from);
/* First index in [0,len) where buf differs from the pattern (from offset
 * `from` of the pattern), or -1. */
int64_t mp_check_pattern(const void *buf, uint64_t len, unsigned who, unsigned tag,
                         uint64_t from);

/* Monotonic milliseconds. */
uint64_t mp_now_ms(void);

/* Is the process or thread whose /proc stat file is `path` stopped (state T
 * or t)? False when it cannot be read. mp_os_stopped: process `pid`'s. */
bool mp_stat_stopped(const char *path);
bool mp_os_stopped(pid_t pid);
/* Field `field` (1-based, as proc(5) numbers them: 3 the state, 41 the
 * policy) of the /proc stat file at path, into out; false if unreadable. */
bool mp_stat_field(const char *path, int field, char *out, size_t len);
/* SIGSTOP to pid (who names it), then wait (MP_WAIT_MS at most) until every
 * thread of it has stopped. kill() returns before that: the group stop begins
 * only when one thread of the target takes the signal, and meanwhile the
 * others run on (a peer's NIC thread answered a get sent after the kill:
 * mp_rfin_died in CI once, mp_getdrop in the sixty-fifth session). */
void mp_stop_peer(pid_t pid, const char *who);

/* A second death (3 ranks): rank 2, whose pid a put writes to *pid2 (its
 * PUT_START and PUT_END come to pid_eq), is told to die (SIGUSR1); then
 * poll_eq is polled until the NI reports PTL_FAIL (the job failed), within
 * ms. *pid2 is read once the put has ended. */
void mp_second_death(ptl_handle_eq_t pid_eq, ptl_handle_eq_t poll_eq, const uint64_t *pid2,
                     unsigned ms);

/* The NI's PTL_SR_DROP_COUNT. */
ptl_sr_value_t mp_drops(struct mp *m);
/* The job region (ptlrun's memfd: PTL_JOB_FD, PTL_JOB_SIZE) mapped read-write
 * into this rank, for the tests that play a hostile rank; dies if absent. */
char *mp_map_job_region(void);

#endif
