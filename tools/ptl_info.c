/*
 * ptl_info - what libportals would do on this host, and why.
 *
 * Prints the library version; the NI limits (PtlInit + PtlNIInit of a job of
 * one, the `actual` limits, PtlNIFini); every tunable with its effective value,
 * default, source and help; the core/NUMA layout; the slot geometry and job
 * region sizes the current environment gives; and whether cross-memory
 * attach (CMA, process_vm_readv) works between sibling processes here, probed
 * by a forked child reading this process, with and without PR_SET_PTRACER.
 *
 *   usage: ptl_info [-h]
 *          ptl_info --trace FILE [--last N]   decode a dump saved by ptlrun
 *                                              (--dump-file; tools/ptl_dump.h)
 */
#include "config.h"
#include "ptl_dump.h"
#include "cpu.h"
#include "shm.h"
#include "xport.h"
#ifdef PTL_WITH_OFI
#ifdef PTL_WITH_PMIX
#include "pmix_job.h"
#endif
#include "ofi.h"
#endif

#include <portals3.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTL_VERSION_STRING
#define PTL_VERSION_STRING "unknown"
#endif

/* A child reads our probe word; returns 0 or -errno, *why a static string. */
static int probe_from_child(const char **why)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        *why = "pipe failed";
        return -errno;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t c = fork();
    if (c < 0) {
        close(pfd[0]);
        close(pfd[1]);
        *why = "fork failed";
        return -EAGAIN;
    }
    if (c == 0) {
        const char *w;
        int rc = pt_cma_probe(parent, pt_cma_probe_addr(), &w); /* same image: same address */
        ssize_t ignored = write(pfd[1], &rc, sizeof rc);
        (void)ignored;
        _exit(0);
    }
    close(pfd[1]);
    int rc = -EIO;
    if (read(pfd[0], &rc, sizeof rc) != (ssize_t)sizeof rc)
        rc = -EIO;
    close(pfd[0]);
    waitpid(c, NULL, 0);
    switch (-rc) {
    case 0: *why = "works"; break;
    case EPERM: *why = "refused (EPERM): Yama ptrace_scope or a non-dumpable process"; break;
    case ENOSYS: *why = "unavailable (ENOSYS): kernel without CMA or a seccomp filter"; break;
    default: *why = "failed"; break;
    }
    return rc;
}

static void print_cma(void)
{
    char scope[32] = "absent (no Yama LSM)";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        if (fgets(scope, sizeof scope, f))
            scope[strcspn(scope, "\n")] = '\0';
        fclose(f);
    }
    printf("\nCMA (process_vm_readv between sibling ranks)\n");
    printf("  Yama ptrace_scope            %s\n", scope);
    const char *why;
    pt_cma_allow_readers(false);
    int plain = probe_from_child(&why);
    printf("  without PR_SET_PTRACER       %s\n", why);
    pt_cma_allow_readers(true);
    int allowed = probe_from_child(&why);
    printf("  with PR_SET_PTRACER_ANY      %s   (what every rank does at attach)\n", why);
    const struct pt_config *cfg = pt_config();
    if (!cfg->cma)
        printf("  verdict: CMA disabled by PTL_CMA=0: rendezvous copies through the job region\n");
    else if (allowed == 0)
        printf("  verdict: CMA works%s\n",
               plain ? " (thanks to PR_SET_PTRACER)" : "");
    else
        printf("  verdict: CMA unavailable here: rendezvous copies through the job region\n");
}

static void print_limits(void)
{
    /* A job of one, whatever the environment says about a launcher's job. */
    unsetenv("PTL_JOB_FD");
    unsetenv("PTL_JOB_SIZE");
    unsetenv("PTL_JOB");
    int maxif = 0;
    int rc = PtlInit(&maxif);
    if (rc != PTL_OK) {
        printf("NI limits: PtlInit failed: %s\n", PtlErrorStr((unsigned)rc));
        return;
    }
    ptl_handle_ni_t ni;
    ptl_ni_limits_t a;
    rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, &a, &ni);
    if (rc != PTL_OK) {
        printf("NI limits: PtlNIInit failed: %s\n", PtlErrorStr((unsigned)rc));
        PtlFini();
        return;
    }
    printf("\nNI limits (PtlNIInit actual; %d interface%s per process)\n", maxif,
           maxif == 1 ? "" : "s");
    printf("  max_mes        %d\n", a.max_mes);
    printf("  max_mds        %d\n", a.max_mds);
    printf("  max_eqs        %d\n", a.max_eqs);
    printf("  max_ac_index   %d\n", a.max_ac_index);
    printf("  max_pt_index   %d\n", a.max_pt_index);
    printf("  max_md_iovecs  %d\n", a.max_md_iovecs);
    printf("  max_me_list    %d\n", a.max_me_list);
    printf("  max_getput_md  %d\n", a.max_getput_md);
    PtlNIFini(ni);
    PtlFini();
}

static void print_tunables(void)
{
    const struct pt_tunable *t;
    int n = pt_tunables(&t);
    printf("\nTunables (set in the environment)\n");
    for (int i = 0; i < n; i++) {
        if (t[i].svalue)
            printf("  %-20s = %-10s (default \"\", from %s)\n", t[i].name,
                   t[i].svalue[0] ? t[i].svalue : "\"\"", t[i].source);
        else
            printf("  %-20s = %-10" PRId64 " (default %" PRId64 ", from %s)\n", t[i].name,
                   *t[i].value, t[i].def, t[i].source);
        printf("      %s\n", t[i].help);
    }
}

static void print_geometry(void)
{
    const struct pt_config *cfg = pt_config();
    uint32_t slot = pt_slot_size_for((uint32_t)cfg->eager_max);
    uint32_t q = pt_queue_slots_for((uint32_t)cfg->queue_slots);
    uint32_t preq = (uint32_t)cfg->pool_req, prsp = (uint32_t)cfg->pool_rsp;
    printf("\nJob region (from PTL_EAGER_MAX, PTL_QUEUE_SLOTS, PTL_POOL_REQ, PTL_POOL_RSP)\n");
    printf("  slot size      %u bytes (128-byte header + %u payload)\n", slot, slot - 128);
    printf("  pools          %u request + %u response buffers per process\n", preq, prsp);
    printf("  ring depth     %u entries per (sender, receiver, class)\n", q);
    printf("  %6s %7s %13s %13s %15s\n", "ranks", "guests", "per rank", "bar per rank",
           "per job");
    static const unsigned ns[] = {2, 16, 64, 256, 1024, 4096};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        uint32_t g = pt_shm_guests();
        uint64_t b = pt_shm_region_bytes(ns[i], g, slot, q, preq, prsp);
        if (!b) {
            printf("  %6u  too large\n", ns[i]);
            continue;
        }
        /* Per rank: the region over its process slots; the bar is
         * 4 MiB + 1 KiB x N per rank. */
        double per = (double)b / (ns[i] + g);
        double bar = 4.0 * (1 << 20) + 1024.0 * ns[i];
        printf("  %6u %7u %9.2f MiB %9.2f MiB %11.1f MiB %s\n", ns[i], g, per / (1 << 20),
               bar / (1 << 20), (double)b / (1 << 20), per <= bar ? "  within the bar" :
               "  OVER the bar");
    }
    printf("  (address space; pages are touched as they are used)\n");
}

static int decode_trace(int argc, char **argv)
{
    unsigned last = 0;
    if (argc == 5 && !strcmp(argv[3], "--last")) {
        char *end;
        long v = strtol(argv[4], &end, 10);
        if (*end || v < 0) {
            fprintf(stderr, "ptl_info: --last '%s' is not a count\n", argv[4]);
            return 2;
        }
        last = (unsigned)v;
    } else if (argc != 3) {
        fprintf(stderr, "usage: ptl_info --trace FILE [--last N]\n");
        return 2;
    }
    char err[256];
    struct ptd_snap *s = ptd_load(argv[2], err, sizeof err);
    if (!s) {
        fprintf(stderr, "ptl_info: %s\n", err);
        return 1;
    }
    ptd_print(s, stdout, last);
    ptd_free(s);
    return 0;
}

static void print_ofi(void)
{
    printf("\nlibfabric (PTL_TRANSPORT=ofi, docs/ofi.md)\n");
#ifdef PTL_WITH_OFI
    int64_t t = pt_config()->transport;
    printf("  transport      %s (PTL_TRANSPORT)\n",
           t == PT_TRANSPORT_OFI   ? "ofi: libfabric for every peer"
           : t == PT_TRANSPORT_SHM ? "shm: the job region (a PMIx job: one host only)"
                                   : "auto: a ptlrun job the region; a PMIx job the node's "
                                     "region for peers on this host, ofi beyond it");
    pt_ofi_describe(stdout);
#ifdef PTL_WITH_PMIX
    pt_pmix_describe(stdout);
#else
    printf("  pmix           not built in (CMake option PTL_WITH_PMIX; needs libpmix-dev)\n");
#endif
#else
    printf("  not built in (CMake option PTL_WITH_OFI; needs libfabric-dev)\n");
#endif
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--trace"))
        return decode_trace(argc, argv);
    if (argc > 1) {
        bool help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");
        fprintf(help ? stdout : stderr,
                "usage: ptl_info\n"
                "       ptl_info --trace FILE [--last N]\n"
                "Print the libportals version, NI limits, tunables (PTL_* environment),\n"
                "core/NUMA layout, job region geometry and whether CMA works here.\n"
                "--trace: decode a job dump saved by ptlrun --dump-file (every record,\n"
                "or the last N of each rank).\n");
        return help ? 0 : 2;
    }
#ifdef PTL_WITH_OFI
    printf("libportals %s (Portals 3.3 API, shared-memory and libfabric transports)\n",
           PTL_VERSION_STRING);
#else
    printf("libportals %s (Portals 3.3 API, shared-memory transport)\n", PTL_VERSION_STRING);
#endif
    print_limits();
    print_tunables();
    char buf[256];
    pt_cpu_describe(buf, sizeof buf);
    printf("\nCores and NUMA\n  %s\n", buf);
    print_geometry();
    print_cma();
    print_ofi();
    return 0;
}
