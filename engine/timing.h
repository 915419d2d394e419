/*
 * timing.h - per-stage instrumentation (PTL_TIMING=1), the QsNet paper's
 * Table 1 (initiator) and Table 2 (NIC thread) measured for real.
 *
 * Each thread accumulates into its own struct (no locks, no shared lines):
 * the NIC-side table lives in the engine ([E], written by the token holder);
 * the initiator table is thread-local in the API layer. A stage is timed with
 * PT_TM_BEGIN/PT_TM_STAGE, which cost one predictable branch when off.
 */
#ifndef PT_TIMING_H
#define PT_TIMING_H

#include "clock.h"
#include <stdbool.h>
#include <stdint.h>

enum pt_nic_stage {
    PT_ST_DEQUEUE = 0,   /* take the message from the receive queue       */
    PT_ST_HEADER,        /* inspect the header, portal and ACL checks     */
    PT_ST_MATCH,         /* walk the match list                           */
    PT_ST_HOUSEKEEP,     /* offset, threshold, MD bookkeeping             */
    PT_ST_COPY,          /* move the payload into the MD                  */
    PT_ST_EVENT,         /* write the event(s)                            */
    PT_ST_UNLINK,        /* unlink / response / release the slot          */
    PT_ST_NR
};

enum pt_init_stage {
    PT_IS_POST_RECV = 0, /* PtlMEAttach/MDAttach: post the receive for the pong */
    PT_IS_SEND,          /* PtlPut: send the ping                                */
    PT_IS_WAIT_SEND,     /* PtlEQWait until SEND_END                             */
    PT_IS_WAIT_RECV,     /* PtlEQWait until PUT_END of the pong                  */
    PT_IS_NR
};

struct pt_timing {
    uint64_t ticks[PT_ST_NR];
    uint64_t count[PT_ST_NR];
    uint64_t msgs;
    /* Engine passes (poll_once, whichever thread ran them): all of them,
     * those that found work, the work they did (commands taken, messages
     * received, ...), their ticks, and those of the passes over the command
     * rings that held their doorbells (PTL_SHM_RING_BATCH) and took
     * commands, with the commands they took. Which stage of a pipeline is saturated: an
     * engine whose busy passes take most of its thread's time. */
    uint64_t polls, busy_polls, busy_work, busy_ticks, t0;
    uint64_t held_passes, held_cmds;
};

#if defined(PTL_NO_TIMING)
/* Compiled out (cmake -DPTL_INSTRUMENT=OFF): the baseline against which the
 * cost of the runtime switch is measured (bench/RESULTS.md). */
#define g_pt_timing_on false
#else
extern bool g_pt_timing_on;   /* set once from PTL_TIMING at PtlInit */
#endif

#define PT_TM_BEGIN(var) uint64_t var = g_pt_timing_on ? pt_tsc() : 0
#define PT_TM_STAGE(tm, var, st)                       \
    do {                                               \
        if (g_pt_timing_on) {                          \
            uint64_t now_ = pt_tsc();                  \
            (tm)->ticks[st] += now_ - (var);           \
            (tm)->count[st]++;                         \
            (var) = now_;                              \
        }                                              \
    } while (0)

const char *pt_nic_stage_name(int st);
const char *pt_init_stage_name(int st);

#endif
