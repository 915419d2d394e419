/*
 * mp_mixtune - ranks of one job whose protocol tunables differ (each rank
 * sets its own before PtlInit, as a wrapper script per rank would): every
 * transfer must still arrive whole and end PTL_NI_OK.
 *
 *   mp_mixtune cma (2 ranks): rank 1 runs with PTL_CMA=0. Each rank puts
 *     SIZE bytes (ACK asked) to the other and gets SIZE bytes from it, for
 *     SIZE 8 KiB, 64 KiB and 1 MiB. Before, the rank with CMA chose a
 *     rendezvous that the other could not pull: PUT_END, SEND_END, the ACK
 *     and GET_END with PTL_NI_FAIL, the data never written (an adversarial
 *     client). Now a peer that takes no part in CMA is asked for by the
 *     transport (PT_XPEER_NOCMA) and those transfers copy through the queues.
 *
 *   mp_mixtune replies (2 ranks): rank 0 runs with PTL_RNDV_CMA_MIN=0 (it
 *     replies by CMA rendezvous from the eager limit up), rank 1 with
 *     PTL_MAX_OPS=2 (one op for replies). Rank 1 gets 5,000 bytes (a copy-mode
 *     reply by its own tunables: no op promised), then three times 64 KiB
 *     (rendezvous: the op promised each in turn). Before, rank 0 answered the
 *     first by rendezvous; it waited in rank 1's queue for room in the
 *     replies' budget, which was promised to the reply queued behind it, and
 *     rank 1's engine spun for ever (an adversarial client). Now a get that
 *     promised no op is answered eagerly or in copy mode (PT_WF_REPLY_OP).
 *     Bound: every REPLY_END within MP_WAIT_MS.
 *
 *   mp_mixtune transport (2 ranks): rank 1 runs with PTL_TRANSPORT=ofi (on
 *     loopback), rank 0 on the job region. mp_mixtune provider: both over
 *     ofi, rank 1 with PTL_OFI_PROVIDER=net, rank 0 with "tcp;ofi_rxm".
 *     Before, every message between them waited for ever without a word
 *     (an adversarial client: the region's rings towards a rank that reads
 *     only libfabric; endpoint names the other provider cannot parse). Now
 *     PtlNIInit fails (PTL_FAIL, saying why) on the rank that attaches last
 *     (on both, when they attach at once): it prints "refused" and exits 3.
 *     A rank whose PtlNIInit passed puts to the other and must see the put
 *     end (failed: the job fails with the refused rank) within 8 s. Under
 *     mpirun (provider): every rank compares what the others said in the
 *     PMIx fence, and each refuses.
 */
#include "mp_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_X (MP_PT_USER + 9)
#define NSIZES 3
static const uint64_t sizes[NSIZES] = {8192, 65536, 1u << 20};

/* Every event of n expected kinds, all PTL_NI_OK (mp_expect_all). */
static void expect(ptl_handle_eq_t eq, const ptl_event_kind_t *k, int n, const char *what)
{
    mp_expect_all(eq, k, n, NULL, what);
}

static int cma(void)
{
    if (getenv("PTL_MY_RID") && !strcmp(getenv("PTL_MY_RID"), "1"))
        setenv("PTL_CMA", "0", 1);
    struct mp m;
    mp_init(&m, 2);
    unsigned peer = 1 - m.rank;
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    uint64_t max = sizes[NSIZES - 1];
    uint8_t *in = malloc(max), *out = malloc(max), *exp = malloc(max), *got = malloc(max);
    if (!in || !out || !exp || !got)
        mp_die("out of memory");
    for (int s = 0; s < NSIZES; s++) {
        uint64_t n = sizes[s];
        memset(in, 0, n);
        memset(got, 0, n);
        mp_fill(out, n, m.rank, 1 + (unsigned)s, 0);
        mp_fill(exp, n, m.rank, 20 + (unsigned)s, 0);
        /* bits 10s + 1: the peer's put lands here; 10s + 2: the peer gets `exp` */
        const unsigned o = PTL_MD_EVENT_START_DISABLE;
        const ptl_match_bits_t bp = 10u * (unsigned)s + 1, bg = bp + 1;
        mp_post(&m, PT_X, bp, in, n, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | o, eq, PTL_RETAIN, NULL);
        mp_post(&m, PT_X, bg, exp, n, PTL_MD_THRESH_INF, PTL_MD_OP_GET | o, eq, PTL_RETAIN, NULL);
        mp_barrier(&m);
        ptl_handle_md_t pm = mp_bind(&m, out, n, PTL_MD_THRESH_INF, o, eq);
        ptl_handle_md_t gm = mp_bind(&m, got, n, PTL_MD_THRESH_INF, o, eq);
        MP_CHECK(PtlPut(pm, PTL_ACK_REQ, m.ids[peer], PT_X, 0, bp, 0, n));
        MP_CHECK(PtlGet(gm, m.ids[peer], PT_X, 0, bg, 0));
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_END, PTL_EVENT_ACK,
                                             PTL_EVENT_REPLY_END, PTL_EVENT_PUT_END,
                                             PTL_EVENT_GET_END};
        char what[64];
        snprintf(what, sizeof what, "%llu bytes", (unsigned long long)n);
        expect(eq, k, 5, what);
        if (mp_check_pattern(in, n, peer, 1 + (unsigned)s, 0) >= 0 ||
            mp_check_pattern(got, n, peer, 20 + (unsigned)s, 0) >= 0)
            mp_die("%s: the data differs", what);
        mp_barrier(&m);
    }
    printf("rank %u (PTL_CMA %s): every put and get of 8 KiB to 1 MiB arrived whole, both "
           "ways\n", m.rank, m.rank == 1 ? "0" : "default");
    mp_fini(&m);
    free(in);
    free(out);
    free(exp);
    free(got);
    return 0;
}

#define NBIG 3

static int replies(void)
{
    const char *rid = getenv("PTL_MY_RID");
    if (rid && !strcmp(rid, "0"))
        setenv("PTL_RNDV_CMA_MIN", "0", 1);
    else
        setenv("PTL_MAX_OPS", "2", 1);
    struct mp m;
    mp_init(&m, 2);
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 256, PTL_EQ_HANDLER_NONE, &eq));
    const uint64_t small = 5000, big = 65536;
    uint8_t *exposed = malloc(big), *a = malloc(small), *b = malloc(NBIG * big);
    if (!exposed || !a || !b)
        mp_die("out of memory");
    mp_fill(exposed, big, m.rank, 7, 0);
    if (m.rank == 0)
        mp_post(&m, PT_X, 4, exposed, big, PTL_MD_THRESH_INF,
                PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_EVENT_START_DISABLE,
                PTL_EQ_NONE, PTL_RETAIN, NULL);
    mp_barrier(&m);
    if (m.rank == 1) {
        const unsigned o = PTL_MD_EVENT_START_DISABLE;
        MP_CHECK(PtlGet(mp_bind(&m, a, small, 1, o, eq), m.ids[0], PT_X, 0, 4, 0));
        for (int i = 0; i < NBIG; i++)
            MP_CHECK(PtlGet(mp_bind(&m, b + i * big, big, 1, o, eq), m.ids[0], PT_X, 0, 4, 0));
        for (int i = 0; i < 1 + NBIG; i++)
            (void)mp_expect(eq, PTL_EVENT_REPLY_END, "a reply");
        if (mp_check_pattern(a, small, 0, 7, 0) >= 0)
            mp_die("the 5,000-byte reply differs");
        for (int i = 0; i < NBIG; i++)
            if (mp_check_pattern(b + i * big, big, 0, 7, 0) >= 0)
                mp_die("64 KiB reply %d differs", i);
        printf("rank 1 (PTL_MAX_OPS 2): all %d replies, every byte right\n", 1 + NBIG);
    }
    mp_barrier(&m);
    mp_fini(&m);
    free(exposed);
    free(a);
    free(b);
    return 0;
}

static int wire(bool provider)
{
    const char *rid = getenv("PTL_MY_RID");
    if (!rid)
        rid = getenv("PMIX_RANK"); /* under mpirun */
    bool one = rid && !strcmp(rid, "1");
    if (provider) {
        setenv("PTL_OFI_PROVIDER", one ? "net" : "tcp;ofi_rxm", 1);
        setenv("FI_NET_IFACE", "lo", 1);
    } else if (one) {
        setenv("PTL_TRANSPORT", "ofi", 1);
        setenv("FI_TCP_IFACE", "lo", 1);
    }
    unsigned rank, size;
    mp_rank_init(2, &rank, &size);
    ptl_handle_ni_t ni;
    int rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni);
    if (rc != PTL_OK) {
        printf("rank %u: PtlNIInit refused: %s\n", rank, PtlErrorStr(rc));
        fflush(stdout); /* said, whatever ends the process after */
        PtlFini();
        return rc == PTL_FAIL ? 3 : 1;
    }
    ptl_process_id_t peer;
    MP_CHECK(PtlGetRankId(ni, 1 - rank, &peer));
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(ni, 16, PTL_EQ_HANDLER_NONE, &eq));
    static char src[8] = "mixwire";
    ptl_handle_md_t md;
    ptl_md_t d = {.start = src, .length = 8, .threshold = 1,
                  .options = PTL_MD_EVENT_START_DISABLE, .eq_handle = eq};
    MP_CHECK(PtlMDBind(ni, d, PTL_UNLINK, &md));
    MP_CHECK(PtlPut(md, PTL_NOACK_REQ, peer, MP_PT_USER, 0, 1, 0, 0));
    /* SEND_END (failed once the other rank's refusal failed the job), or the
     * wait's own PTL_FAIL: either way, not for ever */
    for (uint64_t t0 = mp_now_ms();;) {
        ptl_event_t ev;
        int which;
        rc = PtlEQPoll(&eq, 1, 100, &ev, &which);
        if ((rc == PTL_OK || rc == PTL_EQ_DROPPED) && ev.type == PTL_EVENT_SEND_END) {
            printf("rank %u: told: its put ended (ni_fail_type %u)\n", rank, ev.ni_fail_type);
            break;
        }
        if (rc == PTL_FAIL) {
            printf("rank %u: told: PtlEQPoll failed (the job failed)\n", rank);
            break;
        }
        if (mp_now_ms() - t0 > 8000) {
            printf("rank %u: STUCK: no end of its put in 8 s (last rc %s)\n", rank,
                   PtlErrorStr(rc));
            return 1;
        }
    }
    PtlNIFini(ni);
    PtlFini();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "transport") || !strcmp(argv[1], "provider")))
        return wire(!strcmp(argv[1], "provider"));
    if (argc > 1 && !strcmp(argv[1], "cma"))
        return cma();
    if (argc > 1 && !strcmp(argv[1], "replies"))
        return replies();
    mp_die("usage: mp_mixtune cma|replies|transport|provider");
}
