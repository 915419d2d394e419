/*
 * bench_util.h - what every libportals benchmark in bench/ shares: job setup
 * through the rank runtime (PtlSetRank(PTL_INVALID_HANDLE, -1, -1), so the
 * programs run under ptlrun or alone as a job of one), a start-up handshake
 * that survives puts dropped before a peer has posted its match entries, a
 * barrier, a gather of doubles to rank 0 and a broadcast from it, statistics, data patterns, size
 * lists, CSV output and fatal-error helpers.
 *
 * Portal indices 1-3 are used here; benchmarks use 8 and up.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <portals3.h>
#include <p3rt/p3rt.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PB_PT_HELLO 1
#define PB_PT_BAR 2
#define PB_PT_GATHER 3
#define PB_PT_BCAST 4
#define PB_PT_FIRST_FREE 8

#define PB_GATHER_MAX 64 /* doubles per rank in one pb_gather */

typedef struct {
    ptl_handle_ni_t ni;
    unsigned rank, nranks;
    ptl_process_id_t me;
    ptl_process_id_t *ids; /* process id of every rank */
    int offload;           /* 1: NIC thread (PTL_OFFLOAD unset or != 0), 0: host matching */
    const char *mode;      /* "offload" or "host" */
    const char *impl;      /* "ptl-offload" or "ptl-host" (CSV column) */
    /* control plane */
    ptl_handle_eq_t bar_eq, gat_eq, gsend_eq, bc_eq;
    ptl_handle_md_t zero_md;  /* 0-byte source, no events */
    double *gat_buf;          /* rank 0: nranks * PB_GATHER_MAX */
    double bc_buf[PB_GATHER_MAX];
    ptl_sr_value_t drops0;    /* PTL_SR_DROP_COUNT after start-up (the handshake drops some) */
} pb_ctx;

/* Fatal unless x == PTL_OK: prints the call, the error, the rank, exits 1. */
#define PB_CHECK(x)                                                                  \
    do {                                                                             \
        int rc_ = (x);                                                               \
        if (rc_ != PTL_OK)                                                           \
            pb_die_rc(#x, rc_, __FILE__, __LINE__);                                  \
    } while (0)

void pb_die_rc(const char *what, int rc, const char *file, int line);
void pb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Initialise Portals, the NI, the rank map and the control plane; handshake
 * with every peer (bounded by 60 s). Exits on failure. */
void pb_init(pb_ctx *c);
/* Barrier, then reports (rank 0, stderr) messages dropped by any target since
 * start-up (there should be none), then closes everything. Returns the total
 * dropped. */
long pb_fini(pb_ctx *c);
/* Messages this rank dropped since start-up. */
long pb_drops(pb_ctx *c);
void pb_barrier(pb_ctx *c);
/* Post a reusable receive on portal pt: an ME matching anything, an MD over
 * [buf, buf+len) for puts at the sender's offset (MANAGE_REMOTE), no START
 * events, events to eq. */
void pb_post_recv(pb_ctx *c, ptl_pt_index_t pt, void *buf, size_t len, ptl_handle_eq_t eq);
/* Every rank contributes n (<= PB_GATHER_MAX) doubles; on rank 0, out gets
 * nranks * n doubles, rank r's at out[r * n]. out may be NULL elsewhere. */
void pb_gather(pb_ctx *c, const double *vals, int n, double *out);
/* Rank 0's n (<= PB_GATHER_MAX) doubles in vals reach every rank's vals. */
void pb_bcast(pb_ctx *c, double *vals, int n);

/* Hang detector: a thread that ends the process (exit status 3) with a
 * diagnostic when one event-queue wait (any, barriers included) has lasted
 * longer than max(PB_WATCHDOG_S, 3 * phase_s + 10) seconds, where phase_s is
 * the longest a rank may legitimately wait (e.g. the benchmark's time per
 * size). PB_WATCHDOG_S: environment, default 20; 0 disables. dump (may be
 * NULL) prints the benchmark's counters. */
void pb_watchdog_start(pb_ctx *c, void (*dump)(FILE *f), double phase_s);

/* Wait for one event; dies on PTL_EQ_DROPPED (the EQ was too small) or on a
 * failed event (ni_fail_type != PTL_NI_OK). */
void pb_eq_wait(ptl_handle_eq_t eq, ptl_event_t *ev);

/* Time. */
double pb_now_ns(void);
static inline double pb_now_us(void) { return pb_now_ns() / 1000.0; }

/* Statistics over n samples (sorts v in place). Outliers: > 10x p50. */
typedef struct {
    long n;
    double p50, mean, p99, min, max;
    long outliers;
} pb_stats;
void pb_stats_of(double *v, long n, pb_stats *s);

/* Data patterns: fill/check len bytes derived from seed (and the offset). */
void pb_fill(void *buf, size_t len, uint64_t seed);
/* Returns the number of wrong bytes (0 = verified). */
size_t pb_check(const void *buf, size_t len, uint64_t seed);

/* Sizes: parse "0,8,1K,4M,4K-3" (suffixes K, M, G are powers of 1024; +N/-N
 * adjusts). Returns the count, or -1 on a parse error. */
int pb_parse_sizes(const char *s, size_t *out, int max);
/* Powers of two from lo to hi (lo 0 adds 0 first; lo 1 starts at 1), with the
 * NetPIPE perturbations p-3 and p+3 when perturb; sorted, deduplicated,
 * clipped to [lo, hi]. Returns the count. */
int pb_size_list(size_t lo, size_t hi, int perturb, size_t *out, int max);
int pb_parse_size(const char *s, size_t *v);

/* Allocation: page-aligned, zeroed, touched; dies on failure. */
void *pb_alloc(size_t len);

/* CSV: opens path (NULL: no CSV), writes header if the file is new/empty. */
FILE *pb_csv_open(const char *path, const char *header);

/* Current CPU of the calling thread and its affinity as text ("0" or "0-1"). */
void pb_affinity(char *buf, size_t len);

/* Pretty size: "8", "4K", "1M+3". */
const char *pb_size_str(size_t s, char *buf, size_t len);

/* Option helpers. */
double pb_atof_or_die(const char *opt, const char *s);
long pb_atol_or_die(const char *opt, const char *s);

/* Event counters of the streaming benchmarks (ptl_bw, ptl_msgrate,
 * ptl_overlap): data puts arrive on portal data_pt, one control message per
 * round (ack or go) on ctl_pt; the last data put of a phase has bit 0 of
 * hdr_data set and its round in the other bits. */
typedef struct {
    long n_send, n_recv, n_ctl, sends_posted;
    long stop_round; /* round of the flagged put (0: not yet) */
    int stop_seen;   /* the flagged put arrived */
} pb_flow;
/* Wait for one event on eq and count it. */
void pb_flow_pump(ptl_handle_eq_t eq, pb_flow *f, ptl_pt_index_t data_pt, ptl_pt_index_t ctl_pt);
/* The watchdog's line about the counters (ctl: what the control messages are). */
void pb_flow_print(FILE *out, unsigned rank, const pb_flow *f, const char *ctl);

#endif
