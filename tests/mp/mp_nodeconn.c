/*
 * mp_nodeconn - a PMIx job on two "hosts" (tests/netns/run-two-hosts.sh,
 * PTL_TRANSPORT=auto): the ranks of one host talk through its node region,
 * the others over libfabric (transport/mix.c). libfabric must then make no
 * connection of its own to a node peer: neither host mode's connections in
 * PtlNIInit, nor the liveness probe, which runs every PTL_OFI_PROBE_MS (run
 * with a short period). Before, a full node of N ranks held N x (N - 1) TCP
 * connections that never carried a message.
 *
 * Each rank runs its engine for `ms` (default 1500) after a barrier, then
 * counts its own established TCP connections whose two ends have one
 * address that is not loopback (the host's own interface: its node peers'
 * endpoints; PMIx's connection to its local server is on loopback, and
 * those to the other host have another address), prints
 * "mp_nodeconn: rank R: N connections to node peers", and fails when N > 0.
 *
 *   usage (under a PMIx launcher): mp_nodeconn [ms]
 *                                   mp_nodeconn remote N
 *
 * remote: right after PtlNIInit, before any message, each rank counts its
 * established TCP connections between two different addresses that are not
 * loopback (to the other host's ranks) and fails below N (the ranks there).
 * PtlNIInit makes them in both modes (transport/ofi_open.c, connect_all): in
 * offload mode the first probe, mid run, made them and rxm zeroed its send
 * buffers there, 90 ms of the NIC thread with the engine held.
 */
#include "mp_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SOCKS 4096

/* The inodes of this process's sockets. */
static unsigned my_sockets(unsigned long *ino, unsigned max)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        mp_die("opendir /proc/self/fd");
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        char path[300], link[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, link, sizeof link - 1);
        if (k <= 0)
            continue;
        link[k] = '\0';
        if (sscanf(link, "socket:[%lu]", &ino[n]) == 1)
            n++;
    }
    closedir(d);
    return n;
}

/* 127.x.y.z, ::ffff:127.x.y.z, ::1 (words in host order, hex) */
static bool is_loop(const char *a, bool v6)
{
    if (!v6)
        return !strncmp(a + 6, "7F", 2);
    if (!strncmp(a, "0000000000000000FFFF0000", 24))
        return !strncmp(a + 30, "7F", 2);
    return !strcmp(a, "00000000000000000000000001000000");
}

/* Established connections of ours in one /proc/net table whose local and
 * remote addresses are the same non-loopback address (cross: two different
 * addresses, neither loopback). */
static unsigned count_table(const char *table, bool v6, const unsigned long *ino, unsigned nino,
                            bool cross)
{
    FILE *f = fopen(table, "r");
    if (!f)
        return 0; /* (no IPv6) */
    char line[512];
    unsigned n = 0;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        char la[40], ra[40];
        unsigned lp, rp, st, slot;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
                   &slot, la, &lp, ra, &rp, &st, &inode) != 7)
            continue;
        if (st != 0x01 || (strcmp(la, ra) != 0) != cross)
            continue; /* not established, or not the kind of pair counted */
        if (is_loop(la, v6) || is_loop(ra, v6))
            continue;
        for (unsigned k = 0; k < nino; k++)
            if (ino[k] == inode) {
                n++;
                break;
            }
    }
    fclose(f);
    return n;
}

static unsigned count(bool cross)
{
    static unsigned long ino[MAX_SOCKS];
    unsigned nino = my_sockets(ino, MAX_SOCKS);
    return count_table("/proc/self/net/tcp", false, ino, nino, cross) +
           count_table("/proc/self/net/tcp6", true, ino, nino, cross);
}

int main(int argc, char **argv)
{
    struct mp m;
    mp_init(&m, 2);
    if (argc > 2 && !strcmp(argv[1], "remote")) {
        unsigned want = (unsigned)strtoul(argv[2], NULL, 0), n = count(true);
        printf("mp_nodeconn: rank %u: %u connections to the other host after PtlNIInit "
               "(want %u)\n", m.rank, n, want);
        fflush(stdout);
        mp_barrier(&m);
        mp_fini(&m);
        return n >= want ? 0 : 1;
    }
    unsigned ms = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 1500;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    mp_barrier(&m);
    /* the engine runs (host mode: only inside a Portals call) while the
     * probe takes its periods */
    ptl_event_t ev;
    for (uint64_t t0 = mp_now_ms(), t; (t = mp_now_ms() - t0) < ms;)
        (void)mp_poll(eq, &ev, (unsigned)(ms - t));
    unsigned n = count(false);
    printf("mp_nodeconn: rank %u: %u connections to node peers\n", m.rank, n);
    fflush(stdout);
    mp_barrier(&m);
    MP_CHECK(PtlEQFree(eq));
    mp_fini(&m);
    return n ? 1 : 0;
}
