/*
 * netns_kill - a rank dies by SIGKILL while its peer pulls from it
 * (tests/netns/run-two-hosts.sh, case kill; docs/ofi.md).
 *
 *   usage (2 ranks, under mpirun): netns_kill [size]
 *
 * Rank 0 gets `size` bytes (default 256 MiB) from rank 1: rank 1's reply is a
 * rendezvous descriptor, and rank 0's engine pulls the data with RMA reads.
 * When rank 0 sees REPLY_START (the pull has begun) it puts 8 bytes to rank 1,
 * and rank 1 raises SIGKILL as soon as that put arrives. The pull of `size`
 * bytes lasts far longer than that round trip, so rank 1 dies while reads of
 * rank 0 are in flight, and rank 0 must see the failure: REPLY_END with a
 * ni_fail_type other than PTL_NI_OK, or PtlEQPoll failing. It prints
 * "rank 0: saw rank 1's death: ..." with the time since the put and exits 0;
 * it exits 4 when the whole reply arrived intact (the run proved nothing) or
 * nothing came within 30 s.
 */
#include "mp_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_DATA (MP_PT_USER + 6)
#define PT_NOTE (MP_PT_USER + 7)

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (m.size != 2)
        mp_die("netns_kill runs with 2 ranks, not %u", m.size);
    uint64_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 256ull << 20;
    uint8_t *buf = malloc(size);
    uint64_t note = 0;
    if (!buf)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_md_t md = PTL_INVALID_HANDLE, nmd = PTL_INVALID_HANDLE;
    if (m.rank == 1) {
        mp_fill(buf, size, 1, 7, 0);
        mp_post(&m, PT_DATA, 7, buf, size, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
        mp_post(&m, PT_NOTE, 8, &note, sizeof note, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, NULL);
    } else {
        memset(buf, 0, size);
        md = mp_bind(&m, buf, size, PTL_MD_THRESH_INF, 0, eq);
        nmd = mp_bind(&m, &note, sizeof note, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
    }
    mp_barrier(&m);

    if (m.rank == 1) {
        mp_doing("waiting for rank 0's note");
        uint64_t t0 = mp_now_ms();
        ptl_event_t ev;
        while (mp_now_ms() - t0 < 30000) {
            if (!mp_poll(eq, &ev, 1000))
                continue;
            if (ev.type == PTL_EVENT_PUT_END && ev.match_bits == 8) {
                fprintf(stderr, "rank 1: raising SIGKILL while rank 0 pulls\n");
                fflush(stderr);
                raise(SIGKILL);
            }
        }
        mp_die("no note from rank 0 within 30 s");
    }

    MP_CHECK(PtlGet(md, m.ids[1], PT_DATA, 0, 7, 0));
    uint64_t t0 = mp_now_ms(), tnote = 0;
    while (mp_now_ms() - t0 < 30000) {
        ptl_event_t ev;
        int which, rc = PtlEQPoll(&eq, 1, 1000, &ev, &which);
        if (rc == PTL_EQ_EMPTY)
            continue;
        if (rc != PTL_OK && rc != PTL_EQ_DROPPED) {
            printf("rank 0: saw rank 1's death: PtlEQPoll %s, %llu ms after the note\n",
                   PtlErrorStr((unsigned)rc), (unsigned long long)(mp_now_ms() - tnote));
            return 0;
        }
        if (ev.type == PTL_EVENT_REPLY_START && !tnote) {
            tnote = mp_now_ms(); /* (in host mode the put may drive the pull to its end) */
            MP_CHECK(PtlPut(nmd, PTL_NOACK_REQ, m.ids[1], PT_NOTE, 0, 8, 0, 0));
            continue;
        }
        if (ev.ni_fail_type != PTL_NI_OK) {
            printf("rank 0: saw rank 1's death: %s %s, %llu ms after the note\n",
                   PtlEventKindStr(ev.type), PtlNIFailStr(m.ni, ev.ni_fail_type),
                   (unsigned long long)(mp_now_ms() - tnote));
            return 0;
        }
        if (ev.type == PTL_EVENT_REPLY_END) {
            fprintf(stderr, "rank 0: the whole reply (%llu bytes) arrived%s: rank 1 died too "
                            "late to test anything\n", (unsigned long long)ev.mlength,
                    tnote ? "" : " before REPLY_START");
            return 4;
        }
    }
    fprintf(stderr, "rank 0: no failure reported within 30 s\n");
    return 4;
}
