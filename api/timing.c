/*
 * timing.c - the per-stage tables (PTL_TIMING=1), printed at PtlNIFini:
 *   Table 1 "ping-pong timing for initiator": the calling thread's time in
 *     posting the receive (PtlMDAttach), sending (PtlPut), waiting for
 *     SEND_END and waiting for the pong's PUT_END (PtlEQWait/Poll);
 *   Table 2 "NIC thread timing": the engine's time per stage for each
 *     arriving request (whichever thread ran the engine).
 * Output: PTL_TIMING_OUT.rank<R> when PTL_TIMING_OUT is set, else stderr.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>

void pt_api_timing_dump(struct pt_nic *nic)
{
    if (!g_pt_timing_on)
        return;
    const char *out = getenv("PTL_TIMING_OUT");
    FILE *f = stderr;
    char path[4096];
    if (out && *out) {
        snprintf(path, sizeof path, "%s.rank%u", out, nic->xi.rank);
        f = fopen(path, "w");
        if (!f)
            f = stderr;
    }
    const char *mode = nic->offload ? "offload" : "host-matching";
    fprintf(f, "# libportals stage timing, rank %u of %u, %s mode\n", nic->xi.rank,
            nic->xi.nranks, mode);
    fprintf(f, "## Table 1: ping-pong timing for initiator (%s)\n", mode);
    fprintf(f, "| stage | us per call | calls |\n|---|---|---|\n");
    double total = 0;
    for (int s = 0; s < PT_IS_NR; s++) {
        double us = tls_pt_itm.count[s]
                        ? pt_tsc_to_ns(tls_pt_itm.ticks[s]) / 1000.0 / (double)tls_pt_itm.count[s]
                        : 0.0;
        total += us;
        fprintf(f, "| %s | %.3f | %llu |\n", pt_init_stage_name(s), us,
                (unsigned long long)tls_pt_itm.count[s]);
    }
    fprintf(f, "| total | %.3f | |\n", total);
    fprintf(f, "## Table 2: NIC thread timing per arriving message (%s)\n", mode);
    fprintf(f, "| stage | us per message | samples |\n|---|---|---|\n");
    total = 0;
    for (int s = 0; s < PT_ST_NR; s++) {
        double us = nic->tm.msgs /* per message: a stage may run twice (START and END events) */
                        ? pt_tsc_to_ns(nic->tm.ticks[s]) / 1000.0 / (double)nic->tm.msgs
                        : 0.0;
        total += us;
        fprintf(f, "| %s | %.3f | %llu |\n", pt_nic_stage_name(s), us,
                (unsigned long long)nic->tm.count[s]);
    }
    fprintf(f, "| total | %.3f | %llu messages |\n", total, (unsigned long long)nic->tm.msgs);
    const struct pt_timing *t = &nic->tm;
    double life = pt_tsc_to_ns(pt_tsc() - t->t0);
    fprintf(f, "## Engine passes (%s): which stage of a pipeline is saturated\n", mode);
    fprintf(f, "| passes | with work | work per busy pass | ns per busy pass | busy share of "
               "the NI's life | passes that held doorbells | commands per held pass |\n"
               "|---|---|---|---|---|---|---|\n");
    fprintf(f, "| %llu | %llu | %.2f | %.1f | %.1f%% | %llu | %.2f |\n",
            (unsigned long long)t->polls, (unsigned long long)t->busy_polls,
            t->busy_polls ? (double)t->busy_work / (double)t->busy_polls : 0.0,
            t->busy_polls ? pt_tsc_to_ns(t->busy_ticks) / (double)t->busy_polls : 0.0,
            life > 0 ? 100.0 * pt_tsc_to_ns(t->busy_ticks) / life : 0.0,
            (unsigned long long)t->held_passes,
            t->held_passes ? (double)t->held_cmds / (double)t->held_passes : 0.0);
    if (f != stderr)
        fclose(f);
}
