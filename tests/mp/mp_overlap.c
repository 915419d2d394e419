/*
 * mp_overlap - rendezvous descriptors of overlapping memory in flight at once
 * (an adversarial audit, 2026-11-30).
 *
 *   usage (under ptlrun, 2 ranks or more): mp_overlap get|put OFF:LEN ...
 *
 *   get: rank 1 issues a PtlGetRegion of each window OFF:LEN of rank 0's
 *        exposed 16 MiB buffer, all at once, then waits for every reply.
 *   put: rank 0 binds one MD per window of its 16 MiB buffer (so the MDs
 *        overlap) and puts each (ACK) to rank 1, back to back, all at once.
 * Ranks from 2 on only meet the barriers. Data and events are checked.
 *
 * Over ofi the puller chose a peer's registration key by the first byte it
 * read: with a 64 KiB and a 1 MiB window from offset 0 in flight, a step of
 * the 1 MiB transfer read with the 64 KiB window's key, past its end ("out
 * of registered range" at the target, whose tcp reset the connection, and
 * the job failed with PTL_NI_PEER_DIED between live ranks): 4 of 4 runs.
 */
#include "mp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT 5
#define BIG (16u << 20)
#define MAXW 32

static struct mp m;

/* dst holds the windows back to back: window i must be rank 0's pattern
 * from byte off[i] on. */
static void check_windows(const char *what, const uint8_t *dst, const uint64_t *off,
                          const uint64_t *len, int nw)
{
    uint64_t at = 0;
    for (int i = 0; i < nw; at += len[i], i++) {
        int64_t b = mp_check_pattern(dst + at, len[i], 0, 7, off[i]);
        if (b >= 0)
            mp_die("%s window %d (%llu:%llu): byte %lld wrong", what, i,
                   (unsigned long long)off[i], (unsigned long long)len[i], (long long)b);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        mp_die("usage: mp_overlap get|put OFF:LEN ...");
    int isget = !strcmp(argv[1], "get");
    int nw = argc - 2;
    if (nw > MAXW)
        mp_die("at most %d windows", MAXW);
    uint64_t off[MAXW], len[MAXW], tot = 0;
    for (int i = 0; i < nw; i++) {
        char *c;
        off[i] = strtoull(argv[i + 2], &c, 0);
        if (*c != ':')
            mp_die("window %s: OFF:LEN", argv[i + 2]);
        len[i] = strtoull(c + 1, NULL, 0);
        if (!len[i] || off[i] + len[i] > BIG)
            mp_die("window %s: 1 or more bytes inside %u", argv[i + 2], BIG);
        tot += len[i];
    }
    mp_init(&m, 2);
    uint8_t *big = malloc(BIG);
    uint8_t *dst = malloc(tot);
    if (!big || !dst)
        mp_die("out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 1024, PTL_EQ_HANDLER_NONE, &eq));
    ptl_handle_me_t me;
    if (isget) {
        if (m.rank == 0) {
            mp_fill(big, BIG, 0, 7, 0);
            mp_post(&m, PT, 1, big, BIG, PTL_MD_THRESH_INF,
                    PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, &me);
        }
        mp_barrier(&m);
        if (m.rank == 1) {
            memset(dst, 0xEE, tot);
            ptl_handle_md_t md = mp_bind(&m, dst, tot, PTL_MD_THRESH_INF, 0, eq);
            uint64_t lo = 0;
            for (int i = 0; i < nw; i++) {
                MP_CHECK(PtlGetRegion(md, lo, len[i], m.ids[0], PT, 0, 1, off[i]));
                lo += len[i];
            }
            int ends = 0, starts = 0;
            while (ends < nw) {
                ptl_event_t ev;
                if (!mp_poll(eq, &ev, 30000))
                    mp_die("get: only %d of %d REPLY_END", ends, nw);
                if (ev.ni_fail_type != PTL_NI_OK)
                    mp_die("get: %s failed ni_fail_type %u (mlength %llu offset %llu)",
                           PtlEventKindStr(ev.type), ev.ni_fail_type,
                           (unsigned long long)ev.mlength, (unsigned long long)ev.offset);
                if (ev.type == PTL_EVENT_REPLY_START)
                    starts++;
                else if (ev.type == PTL_EVENT_REPLY_END) {
                    ends++;
                    /* find which window: by offset */
                    uint64_t l2 = 0;
                    int w = -1;
                    for (int i = 0; i < nw; l2 += len[i], i++)
                        if (l2 == ev.offset && len[i] == ev.mlength) { w = i; break; }
                    if (w < 0)
                        mp_die("get: REPLY_END offset %llu mlength %llu rlength %llu matches no window",
                               (unsigned long long)ev.offset, (unsigned long long)ev.mlength,
                               (unsigned long long)ev.rlength);
                } else
                    mp_die("get: unexpected %s", PtlEventKindStr(ev.type));
            }
            check_windows("get", dst, off, len, nw);
            printf("mp_overlap get: %d windows OK\n", nw);
        }
        mp_barrier(&m);
    } else {
        if (m.rank == 1) {
            memset(dst, 0xEE, tot);
            mp_post(&m, PT, 1, dst, tot, PTL_MD_THRESH_INF,
                    PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_RETAIN, &me);
        }
        mp_barrier(&m);
        if (m.rank == 0) {
            mp_fill(big, BIG, 0, 7, 0);
            ptl_handle_md_t md[MAXW];
            uint64_t ro = 0;
            for (int i = 0; i < nw; i++) {
                md[i] = mp_bind(&m, big + off[i], len[i], PTL_MD_THRESH_INF, 0, eq);
                MP_CHECK(PtlPut(md[i], PTL_ACK_REQ, m.ids[1], PT, 0, 1, ro, i));
                ro += len[i];
            }
            int acks = 0, sends = 0;
            while (acks < nw || sends < nw) {
                ptl_event_t ev;
                if (!mp_poll(eq, &ev, 30000))
                    mp_die("put: only %d acks %d send_ends of %d", acks, sends, nw);
                if (ev.ni_fail_type != PTL_NI_OK)
                    mp_die("put: %s failed ni_fail_type %u", PtlEventKindStr(ev.type),
                           ev.ni_fail_type);
                if (ev.type == PTL_EVENT_ACK) {
                    acks++;
                    int i = -1;
                    for (int k = 0; k < nw; k++)
                        if (ev.md_handle == md[k]) i = k;
                    if (i < 0 || ev.mlength != len[i])
                        mp_die("put: ACK md %d mlength %llu", i, (unsigned long long)ev.mlength);
                } else if (ev.type == PTL_EVENT_SEND_END)
                    sends++;
            }
            for (int i = 0; i < nw; i++)
                MP_CHECK(PtlMDUnlink(md[i]));
            printf("mp_overlap put: %d windows OK at initiator\n", nw);
        }
        mp_barrier(&m);
        if (m.rank == 1) {
            check_windows("put", dst, off, len, nw);
            printf("mp_overlap put: %d windows OK at target\n", nw);
        }
    }
    mp_barrier(&m);
    mp_fini(&m);
    free(big);
    free(dst);
    return 0;
}
