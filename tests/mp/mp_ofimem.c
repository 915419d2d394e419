/*
 * mp_ofimem - what an NI over libfabric costs a rank in memory, and that the
 * library leaves the environment as it found it (PTL_TRANSPORT=ofi,
 * tcp;ofi_rxm; transport/ofi_open.c rxm_buffer_size_set, docs/ofi.md "rxm's
 * buffers").
 *
 * ofi_rxm gives an endpoint a receive and a send pool of 1,024 buffers of
 * FI_OFI_RXM_BUFFER_SIZE bytes and writes zeros over each when it fills it
 * (the receive pool at fi_enable, the send pool at the first send that is
 * no inject). With rxm's default 16 KiB that is 2 x 17 MB resident per rank;
 * the library sizes them to its largest message (~4.2 KiB) unless the user
 * set the variable.
 *
 * Each rank reads its resident set (VmRSS) before PtlNIInit and again once
 * it has put 4 KiB (no inject) to every other rank, with data checks, and
 * received theirs; it fails when the growth is above `mb` MiB, and when
 * FI_OFI_RXM_BUFFER_SIZE is in its environment after PtlNIInit without
 * having been there before (a program the rank starts would inherit it).
 * Prints "mp_ofimem: rank R: resident set +K KiB over PtlNIInit and the
 * first messages".
 *
 *   usage (under ptlrun, PTL_TRANSPORT=ofi): mp_ofimem mb
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA MP_PT_USER
#define LEN 4096u
#define MAXR 64u

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        mp_die("cannot open /proc/self/status");
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    if (kb < 0)
        mp_die("no VmRSS in /proc/self/status");
    return kb;
}

static uint8_t in[MAXR * LEN], out[LEN];

int main(int argc, char **argv)
{
    long mb = argc > 1 ? strtol(argv[1], NULL, 0) : 0;
    if (mb <= 0)
        mp_die("usage: mp_ofimem mb (the largest growth of the resident set, MiB)");
    bool had = getenv("FI_OFI_RXM_BUFFER_SIZE") != NULL;
    long before = rss_kib();
    struct mp m;
    mp_init(&m, 2);
    if (!had && getenv("FI_OFI_RXM_BUFFER_SIZE"))
        mp_die("FI_OFI_RXM_BUFFER_SIZE=%s left in the environment by PtlNIInit",
               getenv("FI_OFI_RXM_BUFFER_SIZE"));
    const unsigned n = m.size, me = m.rank;
    if (n > MAXR)
        mp_die("at most %u ranks", MAXR);
    ptl_handle_eq_t req, seq;
    MP_CHECK(PtlEQAlloc(m.ni, 2 * MAXR, PTL_EQ_HANDLER_NONE, &req));
    MP_CHECK(PtlEQAlloc(m.ni, 2 * MAXR, PTL_EQ_HANDLER_NONE, &seq));
    mp_post(&m, PT_DATA, 0, in, (ptl_size_t)n * LEN, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, req, PTL_RETAIN,
            NULL);
    mp_fill(out, LEN, me, 7, 0);
    ptl_handle_md_t smd =
        mp_bind(&m, out, LEN, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, seq);
    mp_barrier(&m);
    for (unsigned p = 0; p < n; p++)
        if (p != me)
            MP_CHECK(PtlPut(smd, PTL_NO_ACK_REQ, m.ids[p], PT_DATA, 0, 0, (ptl_size_t)me * LEN,
                            0));
    for (unsigned k = 0; k + 1 < n; k++) {
        mp_expect(seq, PTL_EVENT_SEND_END, "a put's SEND_END");
        mp_expect(req, PTL_EVENT_PUT_END, "a peer's put");
    }
    for (unsigned p = 0; p < n; p++) {
        int64_t bad = p == me ? -1 : mp_check_pattern(in + (size_t)p * LEN, LEN, p, 7, 0);
        if (bad >= 0)
            mp_die("the put from rank %u: byte %lld wrong", p, (long long)bad);
    }
    long grew = rss_kib() - before;
    printf("mp_ofimem: rank %u: resident set +%ld KiB over PtlNIInit and the first messages "
           "(at most %ld MiB)\n", me, grew, mb);
    fflush(stdout);
    mp_barrier(&m);
    mp_fini(&m);
    if (grew > mb * 1024)
        mp_die("the resident set grew by %ld KiB, more than %ld MiB", grew, mb);
    return 0;
}
