/*
 * mp_finiflight - PtlNIFini with an operation in flight (§6.15: a started
 * operation completes; a completed one never touches the memory again).
 * Rank 0 starts a put (ACK asked) or a get towards rank 1 and at once calls
 * PtlNIFini and PtlFini, then overwrites its buffer (the application owns it
 * again) and lives on for a while. Rank 1 must see the operation end with
 * PTL_NI_OK within seconds and, for a put, hold exactly rank 0's bytes from
 * before PtlNIFini. Before PtlNIFini waited for peers in its memory, a
 * rendezvous put's target pulled the bytes written after PtlNIFini returned
 * (reported PTL_NI_OK), and a cooperative part rank 0 had claimed, or a
 * rendezvous reply it had not pulled, left rank 1 waiting for ever
 * (an adversarial client, both modes).
 *
 * "burst": rank 0 posts 40 puts (ACK asked) of `bytes` each and at once
 * calls PtlNIFini; rank 1 stays out of the library for 300 ms, then counts
 * them. Run with PTL_QUEUE_SLOTS=4, most of the puts still wait in rank 0's
 * command ring for credits when PtlNIFini begins: the flush sends them all
 * (before, it left out commands stalled on credits: 3-8 of 40 arrived,
 * PtlNIFini returned PTL_OK at once).
 *
 *   usage (under ptlrun -n 2): mp_finiflight put|get|burst bytes
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_IN (MP_PT_USER + 0)

#define BURST 40

static int burst(struct mp *m, size_t len)
{
    unsigned char *buf = malloc(len * BURST);
    if (!buf || !len)
        mp_die("bad length or out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m->ni, 4 * BURST + 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m->rank == 1) {
        memset(buf, 0, len * BURST);
        mp_post(m, PT_IN, 1, buf, len * BURST, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
                NULL);
    } else {
        mp_fill(buf, len * BURST, 0, 1, 0);
    }
    mp_barrier(m);
    if (m->rank == 0) {
        ptl_handle_md_t md = mp_bind(m, buf, len * BURST, PTL_MD_THRESH_INF, 0, PTL_EQ_NONE);
        for (int i = 0; i < BURST; i++)
            MP_CHECK(PtlPutRegion(md, len * (size_t)i, len, PTL_ACK_REQ, m->ids[1], PT_IN, 0, 1,
                                  len * (size_t)i, 0));
        mp_fini_alone(m); /* every put accepted: all must arrive */
        usleep(500 * 1000);
        printf("mp_finiflight: rank 0 OK\n");
        free(buf);
        return 0;
    }
    usleep(300 * 1000); /* out of the library: in host mode our engine does not run */
    int n = 0;
    ptl_event_t ev;
    while (n < BURST && mp_poll(eq, &ev, 10000))
        n += ev.type == PTL_EVENT_PUT_END;
    if (n < BURST)
        mp_die("%d of the %d puts rank 0 made before its PtlNIFini arrived", n, BURST);
    int64_t bad = mp_check_pattern(buf, len * BURST, 0, 1, 0);
    if (bad >= 0)
        mp_die("byte %lld of the puts differs", (long long)bad);
    printf("mp_finiflight: OK burst of %d puts of %zu B, all arrived\n", BURST, len);
    mp_fini_alone(m);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (argc < 3 || (strcmp(argv[1], "put") && strcmp(argv[1], "get") && strcmp(argv[1], "burst")))
        mp_die("usage: mp_finiflight put|get|burst bytes");
    int get = !strcmp(argv[1], "get");
    size_t len = strtoul(argv[2], NULL, 0);
    if (!strcmp(argv[1], "burst"))
        return burst(&m, len);
    unsigned char *buf = malloc(len);
    if (!buf || !len)
        mp_die("bad length or out of memory");
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 1) {
        if (get)
            mp_fill(buf, len, 1, 1, 0);
        else
            memset(buf, 0, len);
        mp_post(&m, PT_IN, 1, buf, len, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET, eq,
                PTL_RETAIN, NULL);
    } else if (!get) {
        mp_fill(buf, len, 0, 1, 0);
    }
    mp_barrier(&m);
    if (m.rank == 0) {
        ptl_handle_md_t md = mp_bind(&m, buf, len, PTL_MD_THRESH_INF, 0, eq);
        MP_CHECK(get ? PtlGet(md, m.ids[1], PT_IN, 0, 1, 0)
                     : PtlPut(md, PTL_ACK_REQ, m.ids[1], PT_IN, 0, 1, 0, 0));
        mp_fini_alone(&m);
        memset(buf, 0xA5, len); /* ours again: a peer must not read this */
        if (get) {                /* nor write after PtlNIFini returned */
            usleep(500 * 1000);
            for (size_t i = 0; i < len; i++)
                if (buf[i] != 0xA5)
                    mp_die("byte %zu of the get's buffer changed after PtlNIFini returned", i);
        } else {
            usleep(1500 * 1000); /* alive: a late pull would still read memory */
        }
        printf("mp_finiflight: rank 0 OK\n");
        free(buf);
        return 0;
    }
    ptl_event_kind_t end = get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END;
    uint64_t t0 = mp_now_ms();
    for (;;) {
        ptl_event_t ev;
        if (!mp_poll(eq, &ev, 20000))
            mp_die("no %s within 20 s of rank 0's PtlNIFini", PtlEventKindStr(end));
        if (ev.ni_fail_type != PTL_NI_OK)
            mp_die("%s failed (%u)", PtlEventKindStr(ev.type), ev.ni_fail_type);
        if (ev.type != end)
            continue;
        if (ev.mlength != len)
            mp_die("%s of %llu bytes, %zu expected", PtlEventKindStr(end),
                   (unsigned long long)ev.mlength, len);
        break;
    }
    if (!get) {
        int64_t bad = mp_check_pattern(buf, len, 0, 1, 0);
        if (bad >= 0)
            mp_die("byte %lld of the put is not what rank 0 put (0x%02x): read after its "
                   "PtlNIFini returned", (long long)bad, buf[bad]);
    }
    printf("mp_finiflight: OK %s of %zu B ended %llu ms after the start\n", argv[1], len,
           (unsigned long long)(mp_now_ms() - t0));
    mp_fini_alone(&m);
    free(buf);
    return 0;
}
