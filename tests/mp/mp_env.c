/*
 * mp_env - the process environment an application brings (an adversarial
 * tester's findings, 2026-12-05):
 *
 *   mp_env stdfd (any ranks): the application closed its standard
 *     descriptors 0, 1 and 2 before PtlInit, as a daemon does. Before, the
 *     library's launcher-watch pidfd and eventfd landed on 1 and 2: an
 *     8-byte write to "stderr" raised the eventfd, and the watch thread then
 *     polled for ever at full CPU (the job region's memfd was already kept
 *     off them). Each rank puts to its right neighbour and to itself, waits
 *     for both, and checks that 0, 1 and 2 are still closed: the library
 *     took none of them. Reports through a descriptor it kept (dup of 2).
 *
 *   mp_env vanish (2 ranks, ptlrun --named): rank 0 attaches, then removes
 *     the job's name from /dev/shm, as another launcher in another PID
 *     namespace or a cleaner did; rank 1 waits for that and calls
 *     PtlNIInit. Before, it made a region of its own under the job's name
 *     and waited in it alone until the launcher's timeout. Now its
 *     PtlNIInit fails saying the region is gone ("refused", exit 3), and
 *     rank 0 learns of the failed job within 8 s.
 *
 *   mp_env segv (2 ranks): rank 1 installs a SIGSEGV handler and attaches
 *     a receive MD over read-only memory (its own fault); rank 0 puts 8 B
 *     into it. The copy faults in whichever thread of rank 1 runs it: its
 *     handler must run (exit 42). Before, the library's threads blocked
 *     every signal, and a fault in the NIC thread (about half the offload
 *     runs) killed the process without the handler.
 *
 *   mp_env unreadable (2 ranks): a 64 KiB put from a send MD over PROT_NONE
 *     memory, then a 64 KiB get served from a target MD over PROT_NONE
 *     memory: both sides' END (and the ACK) fail PTL_NI_FAIL within 10 s.
 *     Before, over ofi, the healthy rank waited for ever.
 *
 *   mp_env mode600 (2 ranks, ptlrun --named under umask 0277): the region
 *     file is 0600 whatever the umask (before: 0400, and as any user but
 *     root every rank's open was refused). Rank 0 looks before it attaches
 *     (the last rank to attach unlinks the name).
 */
#include "mp_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPORT 100 /* the descriptor stdfd reports through */

static int stdfd(void)
{
    if (dup2(2, REPORT) != REPORT)
        return 2;
    close(0);
    close(1);
    close(2);
    struct mp m; /* (its failures go to the closed stderr; the exit status says) */
    mp_init(&m, 1);
    unsigned right = (m.rank + 1) % m.size;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    static char in[2][8], out[8] = "stdfd!";
    const unsigned o = PTL_MD_EVENT_START_DISABLE;
    mp_post(&m, MP_PT_USER, 7, in, sizeof in, PTL_MD_THRESH_INF,
            PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | o, eq, PTL_RETAIN, NULL);
    mp_barrier(&m);
    ptl_handle_md_t src = mp_bind(&m, out, 8, PTL_MD_THRESH_INF, o, eq);
    MP_CHECK(PtlPut(src, PTL_NOACK_REQ, m.ids[right], MP_PT_USER, 0, 7, 0, 0));
    MP_CHECK(PtlPut(src, PTL_NOACK_REQ, m.ids[m.rank], MP_PT_USER, 0, 7, 0, 0));
    int sends = 0, puts = 0;
    uint64_t t0 = mp_now_ms();
    while (sends < 2 || puts < 2) {
        ptl_event_t ev;
        int rc = PtlEQGet(eq, &ev);
        if (rc == PTL_OK || rc == PTL_EQ_DROPPED) {
            if (ev.ni_fail_type != PTL_NI_OK) {
                dprintf(REPORT, "stdfd: rank %u: %s failed (%u)\n", m.rank,
                        PtlEventKindStr(ev.type), ev.ni_fail_type);
                return 1;
            }
            sends += ev.type == PTL_EVENT_SEND_END;
            puts += ev.type == PTL_EVENT_PUT_END;
        } else if (rc != PTL_EQ_EMPTY) {
            dprintf(REPORT, "stdfd: PtlEQGet: %s\n", PtlErrorStr(rc));
            return 1;
        } else if (mp_now_ms() - t0 > 10000) {
            dprintf(REPORT, "stdfd: rank %u: STUCK (%d SEND_END, %d PUT_END)\n", m.rank, sends,
                    puts);
            return 1;
        }
    }
    if (memcmp(in[0], out, 8) || memcmp(in[1], out, 8)) {
        dprintf(REPORT, "stdfd: rank %u: the data differs\n", m.rank);
        return 1;
    }
    int bad = 0;
    for (int fd = 0; fd <= 2; fd++) {
        errno = 0;
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
            char l[256] = "";
            char p[32];
            snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(p, l, sizeof l - 1);
            l[n > 0 ? n : 0] = '\0';
            dprintf(REPORT, "stdfd: rank %u: descriptor %d is open (%s): the library took it\n",
                    m.rank, fd, l);
            bad = 1;
        }
    }
    mp_barrier(&m);
    mp_fini(&m);
    if (!bad)
        dprintf(REPORT, "stdfd: rank %u: the library took none of 0, 1, 2\n", m.rank);
    return bad;
}

static void region_path(char *buf, size_t len)
{
    const char *job = getenv("PTL_JOB");
    if (!job)
        mp_die("run me with ptlrun --named (no PTL_JOB)");
    snprintf(buf, len, "/dev/shm/ptl-%u-%s", (unsigned)getuid(), job);
}

static int vanish(void)
{
    char path[256];
    region_path(path, sizeof path);
    const char *rid = getenv("PTL_MY_RID");
    bool zero = rid && !strcmp(rid, "0");
    unsigned rank, size;
    mp_rank_init(2, &rank, &size);
    if (!zero) {
        uint64_t t0 = mp_now_ms();
        while (access(path, F_OK) == 0) { /* rank 0 removes it */
            if (mp_now_ms() - t0 > 10000)
                mp_die("rank %u: %s still there after 10 s", rank, path);
            usleep(10000);
        }
    }
    ptl_handle_ni_t ni;
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
    if (rc != PTL_OK) {
        printf("rank %u: PtlNIInit refused: %s\n", rank, PtlErrorStr(rc));
        fflush(stdout);
        PtlFini();
        return 3;
    }
    if (!zero) {
        printf("rank %u: STUCK: PtlNIInit passed without the job's region\n", rank);
        return 1;
    }
    if (unlink(path) != 0)
        mp_die("unlink %s: %s", path, strerror(errno));
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    for (uint64_t t0 = mp_now_ms();;) {
        ptl_event_t ev;
        int which;
        rc = PtlEQPoll(&eq, 1, 100, &ev, &which);
        if (rc == PTL_FAIL) {
            printf("rank %u: told: the job failed\n", rank);
            break;
        }
        if (mp_now_ms() - t0 > 8000) {
            printf("rank %u: STUCK: no word of the job's failure in 8 s\n", rank);
            return 1;
        }
    }
    PtlNIFini(ni);
    PtlFini();
    return 0;
}

static int mode600(void)
{
    char path[256];
    region_path(path, sizeof path);
    /* before our own attach: the last rank to attach unlinks the name */
    const char *rid = getenv("PTL_MY_RID");
    bool zero = rid && !strcmp(rid, "0");
    struct stat st;
    if (zero && stat(path, &st) != 0)
        mp_die("stat %s: %s", path, strerror(errno));
    if (zero && (st.st_mode & 07777) != 0600)
        mp_die("%s has mode %04o, not 0600", path, (unsigned)(st.st_mode & 07777));
    struct mp m;
    mp_init(&m, 2);
    mp_barrier(&m);
    if (m.rank == 0)
        printf("mode600: the region file is 0600\n");
    mp_fini(&m);
    return 0;
}

/* The fault's handler: async-signal-safe words, then the status the test
 * expects (the default action would be 139). */
static void on_segv(int sig)
{
    (void)sig;
    static const char msg[] = "segv: the application's SIGSEGV handler ran\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(42);
}

static int segv(void)
{
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    if (m.rank == 1) {
        /* the client's fault: a receive MD over read-only memory */
        char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ro == MAP_FAILED)
            mp_die("mmap: %s", strerror(errno));
        struct sigaction sa = {.sa_handler = on_segv};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        mp_post(&m, MP_PT_USER, 5, ro, 4096, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN, NULL);
    }
    mp_barrier(&m);
    if (m.rank == 0) {
        static char out[8] = "fault!";
        ptl_handle_md_t src = mp_bind(&m, out, 8, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
        MP_CHECK(PtlPut(src, PTL_NOACK_REQ, m.ids[1], MP_PT_USER, 0, 5, 0, 0));
    }
    /* rank 1 faults (in whichever of its threads copies the put) and exits
     * 42 from its handler; rank 0 waits to hear that the job failed */
    for (uint64_t t0 = mp_now_ms();;) {
        ptl_event_t ev;
        int which;
        if (PtlEQPoll(&eq, 1, 100, &ev, &which) == PTL_FAIL)
            break;
        if (mp_now_ms() - t0 > 8000) {
            printf("rank %u: STUCK: no fault and no failed job in 8 s\n", m.rank);
            return 1;
        }
    }
    return 0;
}

/* The next event of kind k, within 10 s, failed (PTL_NI_FAIL). */
static void expect_failed(ptl_handle_eq_t eq, ptl_event_kind_t k, unsigned rank)
{
    uint64_t t0 = mp_now_ms();
    for (;;) {
        ptl_event_t e;
        int which, rc = PtlEQPoll(&eq, 1, 100, &e, &which);
        if (rc == PTL_EQ_EMPTY && mp_now_ms() - t0 < 10000)
            continue;
        if (rc == PTL_EQ_EMPTY)
            mp_die("unreadable: STUCK: no %s within 10 s", PtlEventKindStr(k));
        if (rc != PTL_OK)
            mp_die("unreadable: PtlEQPoll: %s", PtlErrorStr(rc));
        if (e.type != k)
            continue;
        if (e.ni_fail_type != PTL_NI_FAIL)
            mp_die("unreadable: %s ni_fail_type %u, want PTL_NI_FAIL", PtlEventKindStr(k),
                   e.ni_fail_type);
        printf("rank %u: %s failed, as it must\n", rank, PtlEventKindStr(k));
        return;
    }
}

/* A rendezvous whose source the faulty rank cannot read (PROT_NONE: the
 * client's fault): a put from it, and a get served from it. Both sides end
 * PTL_NI_FAIL. Over ofi the puller's read never completed before (the
 * provider failed it inside and told nobody): the healthy rank waited for
 * ever (an adversarial client). */
static int unreadable(void)
{
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    const size_t L = 65536;
    for (int get = 0; get < 2; get++) {
        char *mem = mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            mp_die("mmap: %s", strerror(errno));
        memset(mem, 1, L);
        bool faulty = get ? m.rank == 1 : m.rank == 0;
        if (faulty)
            mprotect(mem, L, PROT_NONE);
        const ptl_match_bits_t bits = 20u + (unsigned)get;
        ptl_handle_md_t h = PTL_INVALID_HANDLE;
        if (m.rank == 1)
            mp_post(&m, MP_PT_USER, bits, mem, L, PTL_MD_THRESH_INF,
                    PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_EVENT_START_DISABLE, eq, PTL_RETAIN,
                    NULL);
        else
            h = mp_bind(&m, mem, L, PTL_MD_THRESH_INF, PTL_MD_EVENT_START_DISABLE, eq);
        mp_barrier(&m);
        if (m.rank == 0 && get) {
            MP_CHECK(PtlGet(h, m.ids[1], MP_PT_USER, 0, bits, 0));
            expect_failed(eq, PTL_EVENT_REPLY_END, m.rank);
        } else if (m.rank == 0) {
            MP_CHECK(PtlPut(h, PTL_ACK_REQ, m.ids[1], MP_PT_USER, 0, bits, 0, 0));
            expect_failed(eq, PTL_EVENT_ACK, m.rank);
        } else {
            expect_failed(eq, get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END, m.rank);
        }
        mp_barrier(&m);
    }
    printf("rank %u: unreadable: every transfer ended PTL_NI_FAIL\n", m.rank);
    mp_fini(&m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "unreadable"))
        return unreadable();
    if (argc > 1 && !strcmp(argv[1], "segv"))
        return segv();
    if (argc > 1 && !strcmp(argv[1], "stdfd"))
        return stdfd();
    if (argc > 1 && !strcmp(argv[1], "vanish"))
        return vanish();
    if (argc > 1 && !strcmp(argv[1], "mode600"))
        return mode600();
    mp_die("usage: mp_env stdfd|vanish|mode600|segv|unreadable");
}
