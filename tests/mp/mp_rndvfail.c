/*
 * mp_rndvfail - a rendezvous pull that fails reaches both sides' END events
 * (issue 12 item 6). Rank 0 initiates, rank 1 is the target; other ranks only
 * join the barriers.
 *
 *   usage (under ptlrun): mp_rndvfail size
 *   (size: a multiple of two pages, above PTL_EAGER_MAX and at least
 *   PTL_RNDV_CMA_MIN in auto mode, so that the target pulls it with CMA)
 *
 * The pulled memory is made unreadable or unwritable after the MD was bound
 * or attached (mprotect PROT_NONE), or is not mapped at all; process_vm_readv
 * then fails with EFAULT (for a half-readable source, after the readable half).
 *   put  src-unmapped    initiator MD over unmapped memory  SEND_END, ACK fail; ACK mlength 0
 *   put  src-half        its second half PROT_NONE      ACK mlength <= size/2, = what arrived
 *   put  dst-protected   target MD PROT_NONE            SEND_END, ACK fail; ACK mlength 0
 *   get  src-protected   target MD PROT_NONE            REPLY_END and GET_END fail
 *   get  dst-protected   initiator MD PROT_NONE         REPLY_END and GET_END fail
 *   put, get  readable                                  everything PTL_NI_OK, full length
 * The target's PUT_END fails in every failing put; START events never fail;
 * no other event follows. After each put the initiator reads the target's
 * buffer back: the ACK's mlength bytes arrived, nothing after them. Before the fix the initiator's SEND_END and ACK, and
 * the target's GET_END, said PTL_NI_OK (ACK mlength: the full size).
 *
 * Only the CMA pull can fail this way: in copy mode the initiator itself
 * copies its MD (a fault there is the process's own SIGSEGV). Without CMA
 * (refused, or PTL_CMA=0) the test exits 77: skipped.
 */
#include "mp_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PT_F (MP_PT_USER + 8)
#define FILLER 0xEE
#define QUIET_MS 100
#define CHECK_BIT (1ull << 32) /* the target's second ME over a put's buffer, for reading it back */

enum bad { NONE, SRC_UNMAPPED, SRC_HALF, DST_PROTECTED, SRC_PROTECTED };

struct round {
    const char *name;
    bool get;
    enum bad bad;
};

static const struct round rounds[] = {
    {"put src-unmapped", false, SRC_UNMAPPED},
    {"put src-half", false, SRC_HALF},
    {"put dst-protected", false, DST_PROTECTED},
    {"get src-protected", true, SRC_PROTECTED},
    {"get dst-protected", true, DST_PROTECTED},
    {"put readable", false, NONE},
    {"get readable", true, NONE},
};

static uint8_t *map(uint64_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        mp_die("mmap %llu bytes: %s", (unsigned long long)n, strerror(errno));
    return p;
}

/* n bytes of address space that nothing maps, now or later in the run: low,
 * far below where mmap (top down from near the stack) and the heap (above
 * the executable) hand memory out. An munmap'ed buffer is no such thing:
 * the next mapping of the process lands in its hole (top down: a 32 KiB one
 * fills the upper half of a 64 KiB hole), and a pull or the initiator's push
 * of that part then reads whatever lives there. That happened in CI (the
 * perturbation stage): the cooperative push of the upper half succeeded. */
static uint8_t *unmapped(uint64_t n)
{
    for (uintptr_t a = 0x10000000u; a < 0x100000000u; a += 0x10000000u) {
        void *p = mmap((void *)a, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (p == MAP_FAILED)
            continue; /* something lives there (or the kernel refuses): the next */
        if (p != (void *)a) { /* an old kernel took it as a hint */
            munmap(p, n);
            continue;
        }
        if (munmap(p, n) != 0)
            mp_die("munmap: %s", strerror(errno));
        return p;
    }
    mp_die("no unmapped %llu bytes below 4 GiB", (unsigned long long)n);
}

static void protect(void *p, uint64_t n, int prot)
{
    if (mprotect(p, n, prot) != 0)
        mp_die("mprotect: %s", strerror(errno));
}

/* The next event: kind k, failed or not as `fail` says. */
static ptl_event_t next(ptl_handle_eq_t eq, ptl_event_kind_t k, bool fail, const char *what)
{
    ptl_event_t ev;
    if (!mp_poll(eq, &ev, MP_WAIT_MS))
        mp_die("%s: no %s within %d ms", what, PtlEventKindStr(k), MP_WAIT_MS);
    if (ev.type != k)
        mp_die("%s: expected %s, got %s (ni_fail_type %s)", what, PtlEventKindStr(k),
               PtlEventKindStr(ev.type), PtlNIFailStr(PTL_INVALID_HANDLE, ev.ni_fail_type));
    if ((ev.ni_fail_type != PTL_NI_OK) != fail)
        mp_die("%s: %s with ni_fail_type %s, expected %s", what, PtlEventKindStr(k),
               PtlNIFailStr(PTL_INVALID_HANDLE, ev.ni_fail_type),
               fail ? "a failure" : "PTL_NI_OK");
    return ev;
}

static void check_mlen(const ptl_event_t *ev, uint64_t want, const char *what)
{
    if (ev->mlength != want)
        mp_die("%s: %s mlength %llu, expected %llu", what, PtlEventKindStr(ev->type),
               (unsigned long long)ev->mlength, (unsigned long long)want);
}

static void one(struct mp *m, ptl_handle_eq_t eq, uint64_t S, const struct round *r,
                unsigned tag)
{
    const bool ini = m->rank == 0, tgt = m->rank == 1;
    const bool fail = r->bad != NONE;
    uint8_t *buf = NULL;
    ptl_handle_me_t me = PTL_INVALID_HANDLE, me2 = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    bool mapped = true;

    /* The source holds its owner's pattern, the destination the filler. */
    if (tgt) {
        buf = map(S);
        if (r->get)
            mp_fill(buf, S, 1, tag, 0);
        else
            memset(buf, FILLER, S);
        mp_post(m, PT_F, tag, buf, S, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_OP_GET, eq,
                PTL_RETAIN, &me);
        if (!r->get) /* no EQ: its events would disturb the ones checked */
            mp_post(m, PT_F, tag | CHECK_BIT, buf, S, PTL_MD_THRESH_INF, PTL_MD_OP_GET,
                    PTL_EQ_NONE, PTL_RETAIN, &me2);
        if (r->bad == (r->get ? SRC_PROTECTED : DST_PROTECTED))
            protect(buf, S, PROT_NONE);
    } else if (ini && r->bad == SRC_UNMAPPED) {
        buf = unmapped(S);
        mapped = false;
        md = mp_bind(m, buf, S, PTL_MD_THRESH_INF, 0, eq);
    } else if (ini) {
        buf = map(S);
        if (r->get)
            memset(buf, FILLER, S);
        else
            mp_fill(buf, S, 0, tag, 0);
        md = mp_bind(m, buf, S, PTL_MD_THRESH_INF, 0, eq);
        if (r->bad == SRC_HALF) {
            protect(buf + S / 2, S / 2, PROT_NONE);
        } else if (r->get && r->bad == DST_PROTECTED) {
            protect(buf, S, PROT_NONE);
        }
    }
    mp_barrier(m);

    uint64_t got = 0; /* bytes that reached the destination */
    if (ini) {
        mp_doing(r->name);
        if (r->get) {
            MP_CHECK(PtlGet(md, m->ids[1], PT_F, 0, tag, 0));
            next(eq, PTL_EVENT_REPLY_START, false, r->name);
            ptl_event_t e = next(eq, PTL_EVENT_REPLY_END, fail, r->name);
            check_mlen(&e, S, r->name);
        } else {
            MP_CHECK(PtlPut(md, PTL_ACK_REQ, m->ids[1], PT_F, 0, tag, 0, 0));
            next(eq, PTL_EVENT_SEND_START, false, r->name);
            next(eq, PTL_EVENT_SEND_END, fail, r->name);
            ptl_event_t a = next(eq, PTL_EVENT_ACK, fail, r->name);
            if (r->bad == SRC_HALF) {
                if (a.mlength > S / 2)
                    mp_die("%s: ACK mlength %llu, but only the first %llu bytes are readable",
                           r->name, (unsigned long long)a.mlength, (unsigned long long)S / 2);
            } else {
                check_mlen(&a, fail ? 0 : S, r->name);
            }
            got = a.mlength;
        }
        mp_expect_none(eq, QUIET_MS, r->name);
        if (mapped)
            protect(buf, S, PROT_READ | PROT_WRITE);
        if (r->get) {
            int64_t bad = mp_check_pattern(buf, S, 1, tag, 0);
            if (!fail && bad >= 0)
                mp_die("%s: byte %lld of the reply is wrong", r->name, (long long)bad);
            got = bad < 0 ? S : (uint64_t)bad;
        }
    } else if (tgt) {
        mp_doing(r->name);
        ptl_event_kind_t ks = r->get ? PTL_EVENT_GET_START : PTL_EVENT_PUT_START;
        ptl_event_kind_t ke = r->get ? PTL_EVENT_GET_END : PTL_EVENT_PUT_END;
        next(eq, ks, false, r->name);
        ptl_event_t e = next(eq, ke, fail, r->name);
        check_mlen(&e, S, r->name);
        mp_expect_none(eq, QUIET_MS, r->name);
        protect(buf, S, PROT_READ | PROT_WRITE);
        if (r->get) {
            if (mp_check_pattern(buf, S, 1, tag, 0) >= 0)
                mp_die("%s: the get changed its source", r->name);
        } else {
            int64_t bad = mp_check_pattern(buf, S, 0, tag, 0);
            got = bad < 0 ? S : (uint64_t)bad;
            if (!fail && got != S)
                mp_die("%s: byte %llu is wrong", r->name, (unsigned long long)got);
            if (got > (r->bad == SRC_HALF ? S / 2 : fail ? 0 : S))
                mp_die("%s: %llu bytes arrived from memory that cannot be read", r->name,
                       (unsigned long long)got);
            for (uint64_t j = got; j < S; j++)
                if (buf[j] != FILLER)
                    mp_die("%s: byte %llu written past the %llu bytes delivered (0x%02x; "
                           "the source's byte there: 0x%02x)",
                           r->name, (unsigned long long)j, (unsigned long long)got, buf[j],
                           mp_pattern(0, tag, j));
        }
    }
    mp_barrier(m); /* the target's buffer is readable again */
    if (ini && !r->get) {
        uint8_t *cb = map(S);
        ptl_handle_md_t cmd = mp_bind(m, cb, S, PTL_MD_THRESH_INF, 0, eq);
        MP_CHECK(PtlGet(cmd, m->ids[1], PT_F, 0, tag | CHECK_BIT, 0));
        mp_expect(eq, PTL_EVENT_REPLY_START, "reading the target's buffer back");
        mp_expect(eq, PTL_EVENT_REPLY_END, "reading the target's buffer back");
        int64_t bad = mp_check_pattern(cb, got, 0, tag, 0);
        if (bad >= 0)
            mp_die("%s: the ACK says %llu bytes arrived, but byte %lld is wrong", r->name,
                   (unsigned long long)got, (long long)bad);
        for (uint64_t j = got; j < S; j++)
            if (cb[j] != FILLER)
                mp_die("%s: the ACK says %llu bytes arrived, but byte %llu was written too",
                       r->name, (unsigned long long)got, (unsigned long long)j);
        MP_CHECK(PtlMDUnlink(cmd));
        if (munmap(cb, S) != 0)
            mp_die("munmap: %s", strerror(errno));
    }
    if (ini || (tgt && !r->get))
        printf("mp_rndvfail: rank %u: %s: %s, %llu of %llu bytes moved\n", m->rank, r->name,
               fail ? "failed as expected" : "OK", (unsigned long long)got,
               (unsigned long long)S);
    else if (tgt)
        printf("mp_rndvfail: rank %u: %s: %s\n", m->rank, r->name,
               fail ? "GET_END failed as expected" : "OK");
    mp_barrier(m);
    if (tgt)
        MP_CHECK(PtlMEUnlink(me));
    if (tgt && !r->get)
        MP_CHECK(PtlMEUnlink(me2));
    if (ini)
        MP_CHECK(PtlMDUnlink(md));
    if (buf && mapped && munmap(buf, S) != 0)
        mp_die("munmap: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (!mp_cma_works()) {
        printf("mp_rndvfail: skipped: the CMA pull is off or refused here\n");
        return 77;
    }
    struct mp m;
    mp_init(&m, 2);
    char *end = NULL;
    uint64_t S = argc == 2 ? strtoull(argv[1], &end, 0) : 0;
    if (!end || *end || S == 0 || S % (2 * page) || S > (64ull << 20))
        mp_die("usage: mp_rndvfail size (a multiple of %llu)", (unsigned long long)(2 * page));
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    unsigned tag = 300;
    for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++)
        one(&m, eq, S, &rounds[i], tag++);
    if (m.rank == 0)
        printf("mp_rndvfail: %llu bytes: failed pulls reported on both sides OK\n",
               (unsigned long long)S);
    mp_fini(&m);
    return 0;
}
