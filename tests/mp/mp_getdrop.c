/*
 * mp_getdrop - a get's reply that its MD can no longer take is dropped whole
 * (§6.2: counted in PTL_SR_DROP_COUNT, no event, the MD untouched), also when
 * it comes in copy mode, its data in DATA fragments after the header.
 *
 * Rank 1 binds a get MD of threshold 1 (PTL_UNLINK or PTL_RETAIN, argv) and
 * issues two gets from rank 0 while rank 0 is stopped (SIGSTOP, then
 * SIGCONT: both leave before any reply can come): the first reply uses the threshold up
 * and the second is dropped. Before the fix only the second reply's header
 * was dropped; its fragments then found no stream and each was counted as a
 * malformed or forged header (the dump's "bad headers": 260 for 1 MiB), as if
 * a hostile process wrote the queues. Checked: REPLY_START and REPLY_END once
 * (then UNLINK for PTL_UNLINK), the MD holds the first reply's bytes, one
 * drop, "bad headers 0" in the NI's own dump (PtlNIEqDump, read back from
 * stderr), and a third get from the same peer into a new MD completes with
 * the right bytes. Prints "mp_getdrop: OK".
 *
 *   usage (under ptlrun -n 2; PTL_RNDV_MODE=2 for copy mode): mp_getdrop BYTES unlink|retain
 */
#include "mp_util.h"

#include <p3api/debug.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_G (MP_PT_USER + 5)
#define B_G 0x61
#define B_PID 0x62

/* The NI's dump counts headers it dropped as malformed: "bad headers N". */
static unsigned long long bad_headers(struct mp *m)
{
    char path[] = "/tmp/mp_getdrop.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        mp_die("mkstemp");
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    if (saved < 0 || dup2(fd, 2) < 0)
        mp_die("dup2");
    int rc = PtlNIEqDump(m->ni);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (rc != PTL_OK)
        mp_die("PtlNIEqDump: %s", PtlErrorStr((unsigned)rc));
    char buf[8192];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n <= 0)
        mp_die("the NI dump wrote nothing");
    buf[n] = 0;
    const char *p = strstr(buf, "bad headers ");
    unsigned long long v;
    if (!p || sscanf(p, "bad headers %llu", &v) != 1)
        mp_die("no \"bad headers\" in the NI dump:\n%s", buf);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "unlink") && strcmp(argv[2], "retain"))) {
        fprintf(stderr, "usage: mp_getdrop BYTES unlink|retain\n");
        return 2;
    }
    uint64_t len = strtoull(argv[1], NULL, 0);
    bool ul = !strcmp(argv[2], "unlink");
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t *buf = malloc(2 * len + 1);
    if (!buf)
        mp_die("malloc");
    static uint64_t peer_pid;
    mp_post(&m, PT_G, B_PID, &peer_pid, sizeof peer_pid, 1, PTL_MD_OP_PUT, eq, PTL_RETAIN, NULL);
    if (m.rank == 0) {
        mp_fill(buf, 2 * len, 0, 1, 0);
        mp_post(&m, PT_G, B_G, buf, 2 * len, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, PTL_EQ_NONE, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    pid_t peer = mp_pid_swap(&m, PT_G, B_PID, eq, &peer_pid);
    mp_barrier(&m);
    if (m.rank == 0) {
        mp_fini(&m); /* its barrier: rank 1 is done */
        free(buf);
        return 0;
    }
    unsigned long long bad0 = bad_headers(&m);
    ptl_sr_value_t d0 = mp_drops(&m);
    memset(buf, 0, 2 * len);
    ptl_md_t d = {buf, len, 1, 0, 0, NULL, eq};
    ptl_handle_md_t md;
    MP_CHECK(PtlMDBind(m.ni, d, ul ? PTL_UNLINK : PTL_RETAIN, &md));
    /* Rank 0 stopped: no reply can use the MD up before both gets left. */
    mp_stop_peer(peer, "rank 0");
    MP_CHECK(PtlGet(md, m.ids[0], PT_G, 0, B_G, 0));
    MP_CHECK(PtlGet(md, m.ids[0], PT_G, 0, B_G, len)); /* finds the MD used up */
    if (kill(peer, SIGCONT))
        mp_die("kill(rank 0, SIGCONT)");
    ptl_event_t ev = mp_expect(eq, PTL_EVENT_REPLY_START, "the first get");
    ev = mp_expect(eq, PTL_EVENT_REPLY_END, "the first get");
    if (ev.mlength != len)
        mp_die("first reply: mlength %llu", (unsigned long long)ev.mlength);
    if (ul)
        mp_expect(eq, PTL_EVENT_UNLINK, "the used-up MD");
    /* the second reply is dropped once it has come: no event, one drop */
    uint64_t t0 = mp_now_ms();
    while (mp_drops(&m) == d0) {
        if (mp_now_ms() - t0 > MP_WAIT_MS)
            mp_die("the second reply was not dropped in %d ms", MP_WAIT_MS);
        if (mp_poll(eq, &ev, 1))
            mp_die("an event (%s) for the second reply", PtlEventKindStr(ev.type));
    }
    /* a third get from the same peer (after the dropped stream) */
    ptl_md_t d3 = {buf + len, len, 1, 0, 0, NULL, eq};
    ptl_handle_md_t md3;
    MP_CHECK(PtlMDBind(m.ni, d3, PTL_RETAIN, &md3));
    MP_CHECK(PtlGet(md3, m.ids[0], PT_G, 0, B_G, len));
    mp_expect(eq, PTL_EVENT_REPLY_START, "the third get");
    ev = mp_expect(eq, PTL_EVENT_REPLY_END, "the third get");
    if (ev.mlength != len || mp_check_pattern(buf + len, len, 0, 1, len) >= 0)
        mp_die("the third get's bytes are wrong");
    if (mp_check_pattern(buf, len, 0, 1, 0) >= 0)
        mp_die("the first MD does not hold the first reply's bytes");
    ptl_sr_value_t drops = mp_drops(&m) - d0;
    if (drops != 1)
        mp_die("%lld drops, want 1", (long long)drops);
    unsigned long long bad = bad_headers(&m) - bad0;
    if (bad)
        mp_die("the dropped reply's data counted as %llu bad headers", bad);
    int rc = PtlMDUnlink(md);
    if (rc != (ul ? PTL_MD_INVALID : PTL_OK))
        mp_die("PtlMDUnlink of the used-up MD: %s", PtlErrorStr((unsigned)rc));
    mp_fini(&m);
    free(buf);
    printf("mp_getdrop: OK\n");
    return 0;
}
