/*
 * fuzz_rx.c - libFuzzer target: arbitrary bytes as wire messages (both
 * classes) and as data-plane commands, fed straight to the engine's decoding
 * (pt_rx_dispatch, pt_cmd_dispatch) of a real NI in host-matching mode with a
 * few MEs/MDs posted. The engine must never read or write outside an MD or a
 * slot, whatever a header claims; ASan/UBSan turn any such access into a crash.
 *
 * Input: records of [kind:1][len:2 little endian][len bytes]
 *   kind & 3 == 0: a request-class message; 1: a response-class message
 *   kind & 3 == 2: a command (op from the first byte, the rest overlays the
 *                  argument union; handles are mapped onto live objects)
 *   kind & 3 == 3: run the engine until quiet and drain the EQ
 */
#include "api_int.h"
#include "nic.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct pt_nic *g_nic;
static ptl_handle_eq_t g_eq;
static ptl_handle_md_t g_mds[8];
static int g_nmd;
static unsigned char g_bufs[8][4096];
static unsigned char *g_slot;

static void setup(void)
{
    int n;
    setenv("PTL_OFFLOAD", "0", 1);
    setenv("PTL_LOG_LEVEL", "0", 1);
    PtlInit(&n);
    ptl_handle_ni_t ni;
    if (PtlNIInit(PTL_IFACE_DEFAULT, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK)
        abort();
    g_nic = pt_api_ni(ni);
    PtlEQAlloc(ni, 64, PTL_EQ_HANDLER_NONE, &g_eq);
    PtlACEntry(ni, 1, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY}, PTL_UID_ANY, PTL_JID_ANY,
               PTL_PT_INDEX_ANY);
    static const unsigned opts[] = {
        PTL_MD_OP_PUT | PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE,
        PTL_MD_OP_PUT | PTL_MD_OP_GET,
        PTL_MD_OP_PUT | PTL_MD_MAX_SIZE | PTL_MD_TRUNCATE,
        PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE,
    };
    for (int i = 0; i < 4; i++) {
        ptl_handle_me_t me;
        PtlMEAttach(ni, (ptl_pt_index_t)i, (ptl_process_id_t){PTL_NID_ANY, PTL_PID_ANY},
                    (ptl_match_bits_t)i, i == 3 ? ~0ull : 0, PTL_RETAIN, PTL_INS_AFTER, &me);
        ptl_md_t md = {g_bufs[i], sizeof g_bufs[i], PTL_MD_THRESH_INF, 512, opts[i], NULL, g_eq};
        PtlMDAttach(me, md, PTL_RETAIN, &g_mds[g_nmd++]);
    }
    for (int i = 4; i < 8; i++) {
        ptl_md_t md = {g_bufs[i], sizeof g_bufs[i], PTL_MD_THRESH_INF, 0, 0, NULL, g_eq};
        PtlMDBind(ni, md, PTL_RETAIN, &g_mds[g_nmd++]);
    }
    g_slot = aligned_alloc(64, g_nic->slot_size);
}

static void drain(void)
{
    for (int i = 0; i < 64 && pt_nic_poll_once(g_nic); i++)
        ;
    ptl_event_t ev;
    while (pt_eq_get(pt_eqo_lookup(g_nic, g_eq)->q, &ev) != PT_EQ_EMPTY)
        ;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_nic)
        setup();
    while (!pt_wait_try_take(&g_nic->w))
        ;
    size_t i = 0;
    while (i + 3 <= size) {
        uint8_t kind = data[i];
        size_t len = (size_t)data[i + 1] | ((size_t)data[i + 2] << 8);
        i += 3;
        if (len > size - i)
            len = size - i;
        switch (kind & 3) {
        case 0:
        case 1: {
            memset(g_slot, 0, g_nic->slot_size);
            memcpy(g_slot, data + i, len < g_nic->slot_size ? len : g_nic->slot_size);
            struct pt_wire_hdr *h = (struct pt_wire_hdr *)g_slot;
            /* Aim handle fields at live MDs half the time, so deep paths run. */
            if (kind & 4)
                h->init_md = g_mds[h->init_md % (uint32_t)g_nmd];
            if (kind & 8)
                h->tgt_md = g_mds[h->tgt_md % (uint32_t)g_nmd];
            /* ... and answers at requests that wait for one (nic.h, pt_ireq). */
            struct pt_ireq *rq = &g_nic->ireqs[h->req & (g_nic->ireq_n - 1)];
            if ((kind & 16) && rq->live) {
                h->req = rq->id;
                h->init_md = rq->md;
            }
            pt_rx_dispatch(g_nic, h, 0, (kind & 3) ? PT_CLS_RSP : PT_CLS_REQ);
            break;
        }
        case 2: {
            struct pt_cmd c;
            memset(&c, 0, sizeof c);
            memcpy(&c, data + i, len < sizeof c ? len : sizeof c);
            c.op = (uint16_t)(c.op % 3); /* PUT, GET, GETPUT: the by-value commands */
            c.done = NULL;
            c.flags = 0; /* only the API arms triggered operations (with a reserved slot) */
            c.h = g_mds[c.h % (uint32_t)g_nmd];
            c.u.mv.md2 = g_mds[c.u.mv.md2 % (uint32_t)g_nmd];
            if (kind & 4)
                c.u.mv.target = g_nic->id;
            /* The API validates ranges before posting; model that contract. */
            struct pt_md *md = pt_md_lookup(g_nic, c.h);
            uint64_t mlen = md ? md->mem.len : 0;
            c.u.mv.local_offset %= mlen + 1;
            c.u.mv.length %= mlen - c.u.mv.local_offset + 1;
            if (c.op == PT_CMD_GETPUT) {
                c.u.mv.length %= 65;
                struct pt_md *pmd = pt_md_lookup(g_nic, c.u.mv.md2);
                uint64_t plen = pmd ? pmd->mem.len : 0;
                if (c.u.mv.length > plen)
                    c.u.mv.length = plen;
                c.u.mv.put_offset %= plen - c.u.mv.length + 1;
            }
            pt_cmd_dispatch(g_nic, &c);
            break;
        }
        default:
            drain();
            break;
        }
        i += len;
    }
    drain();
    pt_wait_give(&g_nic->w);
    return 0;
}
