/*
 * mp_region_size - the job region of a running job is as large as the
 * layout says, grows linearly with the number of process slots, and meets
 * issue 13's bar of 4 MiB + 1 KiB x N per rank.
 *
 * Every rank maps the region ptlrun made (PTL_JOB_FD), takes its real size
 * with fstat, and checks it against:
 *   - the header's total_size and pt_shm_layout() of the header's geometry;
 *   - a closed form from the geometry alone, per process slot P:
 *       fixed <= size / P <= fixed + 3 pages + P x per_peer
 *     with fixed = the pools ((pool_req + pool_rsp) x slot_size), the trace
 *     area and the fast boxes (a directory and PT_SHM_FBOXES boxes: the
 *     receiver's side, claimed by its hot senders), per_peer = two rings,
 *     two heads and a bitmap bit (the parts that grow with P);
 *   - the bar: size / nranks <= 4 MiB + 1 KiB x nranks.
 * Then the ranks exchange one put each around a ring (the job works at that
 * size) and rank 0 prints the figures.
 *
 *   usage (under ptlrun -n N, memfd mode): mp_region_size
 */
#include "mp_region.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define PT_RING (MP_PT_USER + 0)

int main(void)
{
    const char *fds = getenv("PTL_JOB_FD");
    if (!fds)
        mp_die("needs ptlrun's memfd region (PTL_JOB_FD)");
    char *base = mp_map_job_region();
    struct stat st;
    if (fstat(atoi(fds), &st) != 0)
        mp_die("fstat of the region fd failed");
    const struct pt_shm_hdr *h = (const struct pt_shm_hdr *)base;
    const uint64_t size = (uint64_t)st.st_size;
    const uint64_t P = (uint64_t)h->nranks + h->nguests, N = h->nranks;
    struct pt_shm_layout l = mp_region_layout(base);
    if (size != h->total_size || size != l.total)
        mp_die("region is %llu bytes; header says %llu, layout %llu", (unsigned long long)size,
               (unsigned long long)h->total_size, (unsigned long long)l.total);
    const uint64_t fixed = (uint64_t)(h->pool_req + h->pool_rsp) * h->slot_size +
                           PT_TRACE_AREA_BYTES + sizeof(struct pt_shm_fbdir) +
                           PT_SHM_FBOXES * sizeof(struct pt_shm_fbox);
    const uint64_t ring = (8 + 2 * (uint64_t)h->qslots + 63) / 64 * 64;
    const double per_peer = 2.0 * ring + 2 * 4 + 1.0 / 8;
    const double per_slot = (double)size / P;
    if (per_slot < fixed || per_slot > fixed + 3 * 4096.0 + P * per_peer + 4096.0 / P)
        mp_die("%.0f bytes per process slot is not within [%llu, %llu + 3 pages + %llu x %.1f]",
               per_slot, (unsigned long long)fixed, (unsigned long long)fixed,
               (unsigned long long)P, per_peer);
    const double per_rank = (double)size / N, bar = 4.0 * (1 << 20) + 1024.0 * N;
    if (per_rank > bar)
        mp_die("%.0f bytes per rank is over the bar of 4 MiB + 1 KiB x %llu", per_rank,
               (unsigned long long)N);

    struct mp m;
    mp_init(&m, 2);
    uint64_t word = 0, mine = 0x5157000000000000ull | m.rank;
    ptl_handle_eq_t eq, seq;
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &eq));
    MP_CHECK(PtlEQAlloc(m.ni, 64, PTL_EQ_HANDLER_NONE, &seq));
    ptl_handle_me_t meh;
    mp_post(&m, PT_RING, 1, &word, sizeof word, 1, PTL_MD_OP_PUT | PTL_MD_EVENT_START_DISABLE, eq,
            PTL_UNLINK, &meh);
    ptl_handle_md_t md = mp_bind(&m, &mine, sizeof mine, PTL_MD_THRESH_INF,
                                 PTL_MD_EVENT_START_DISABLE, seq);
    mp_barrier(&m);
    MP_CHECK(PtlPut(md, PTL_NO_ACK_REQ, m.ids[(m.rank + 1) % m.size], PT_RING, 0, 1, 0, 0));
    mp_expect(seq, PTL_EVENT_SEND_END, "the ring put leaving");
    mp_expect(eq, PTL_EVENT_PUT_END, "the ring put arriving");
    unsigned from = (m.rank + m.size - 1) % m.size;
    if (word != (0x5157000000000000ull | from))
        mp_die("ring put from rank %u carried %#llx", from, (unsigned long long)word);
    if (m.rank == 0)
        printf("mp_region_size: %llu ranks + %llu guests: region %llu bytes = %.3f MiB per rank "
               "(bar %.3f MiB), %.1f bytes per peer; ring OK\n",
               (unsigned long long)N, (unsigned long long)(P - N), (unsigned long long)size,
               per_rank / (1 << 20), bar / (1 << 20), per_peer);
    mp_fini(&m);
    return 0;
}
