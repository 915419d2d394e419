/*
 * mp_late - a rank of a PMIx job reaches PtlNIInit late (issue 17 hardening,
 * docs/ofi.md "PMIx wire-up"): the others' PtlNIInit must fail within
 * PTL_PMIX_TIMEOUT_S, not wait for it until the launcher kills the job.
 *
 *   usage (2 ranks or more, under mpirun): mp_late <delay s> <most ms>
 *
 * The last rank sleeps <delay> seconds before its PtlNIInit. Every other rank
 * calls PtlNIInit at once: it must return an error, not PTL_OK, within <most>
 * ms. It prints "rank R: PtlNIInit without the late rank: <code> after N ms"
 * on stdout and exits 0 (PtlFini first); PTL_OK (the fence waited for the
 * late rank: the bound is gone) or an error later than <most> ms: it says so
 * and exits 1.
 *
 * The late rank's own PtlNIInit may fail (its fence is bounded too) or succeed
 * (the server may still hold the others' parts of the fence; they have left,
 * and nothing is sent to them): either way it returns within its bound. It
 * prints "rank R (late): PtlNIInit: <code> after N ms", closes what it opened
 * and exits 0: the job as a whole must end by itself, in bounded time.
 */
#include "mp_util.h"

#include <p3api/misc.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3 || atoi(argv[1]) < 0 || atoi(argv[2]) <= 0)
        mp_die("usage: mp_late <delay s> <most ms>");
    unsigned delay_s = (unsigned)atoi(argv[1]);
    uint64_t most_ms = (uint64_t)atoll(argv[2]);
    unsigned rank, size;
    mp_rank_init(2, &rank, &size);
    bool late = rank == size - 1;
    if (late) {
        fprintf(stderr, "rank %u: sleeping %u s before PtlNIInit\n", rank, delay_s);
        fflush(stderr);
        sleep(delay_s);
    }
    ptl_handle_ni_t ni;
    uint64_t t0 = mp_now_ms();
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
    uint64_t took = mp_now_ms() - t0;
    if (late) {
        printf("rank %u (late): PtlNIInit: %s after %llu ms\n", rank, PtlErrorStr((unsigned)rc),
               (unsigned long long)took);
        fflush(stdout);
        if (rc == PTL_OK)
            MP_CHECK(PtlNIFini(ni));
        PtlFini();
        return 0;
    }
    if (rc == PTL_OK) {
        fprintf(stderr, "rank %u: PtlNIInit returned PTL_OK after %llu ms: it waited for the "
                        "late rank instead of failing within PTL_PMIX_TIMEOUT_S\n",
                rank, (unsigned long long)took);
        PtlNIFini(ni);
        PtlFini();
        return 1;
    }
    if (took > most_ms) {
        fprintf(stderr, "rank %u: PtlNIInit failed (%s), but only after %llu ms (at most %llu "
                        "allowed)\n", rank, PtlErrorStr((unsigned)rc), (unsigned long long)took,
                (unsigned long long)most_ms);
        PtlFini();
        return 1;
    }
    printf("rank %u: PtlNIInit without the late rank: %s after %llu ms\n", rank,
           PtlErrorStr((unsigned)rc), (unsigned long long)took);
    fflush(stdout);
    PtlFini();
    return 0;
}
