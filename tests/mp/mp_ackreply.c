/*
 * mp_ackreply - acknowledgements, replies, thresholds and unlinking across
 * two processes (rank 0 initiates, rank 1 is the target; other ranks only
 * join the barriers). Spec sections 6.4, 6.6, 6.7, 6.12.
 *
 *   1. target MD threshold 2 + PTL_UNLINK: two puts with ACK are accepted
 *      (ACK with mlength), the MD unlinks (UNLINK after the 2nd PUT_END), the
 *      third put is dropped: no ACK, the target's drop count goes up by one.
 *   2. PTL_MD_ACK_DISABLE on the target: PUT events there, no ACK here.
 *   3. truncation: 64 bytes into a 32-byte PTL_MD_TRUNCATE MD: PUT_END and ACK
 *      carry mlength 32.
 *   4. get with a local and a remote offset: REPLY with mlength/offset, data
 *      checked; the target MD (threshold 1, unlink) goes away, a second get is
 *      dropped (no REPLY).
 *   5. explicit PtlMDUnlink on the target: a later put is dropped, no event on
 *      either side but SEND_*.
 *   6. initiator MD threshold 1 + PTL_UNLINK, put with ACK: SEND_START,
 *      SEND_END, UNLINK; the ACK is discarded.
 */
#include "mp_util.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PT_T (MP_PT_USER + 3)
#define QUIET_MS 200

static void check_len(const ptl_event_t *ev, uint64_t mlen, const char *what)
{
    if (ev->mlength != mlen)
        mp_die("%s: %s mlength %llu, expected %llu", what, PtlEventKindStr(ev->type),
               (unsigned long long)ev->mlength, (unsigned long long)mlen);
}

int main(void)
{
    struct mp m;
    mp_init(&m, 2);
    const bool ini = m.rank == 0, tgt = m.rank == 1;
    const ptl_process_id_t target = m.ids[1];
    ptl_handle_eq_t eq;
    MP_CHECK(PtlEQAlloc(m.ni, 128, PTL_EQ_HANDLER_NONE, &eq));
    uint8_t src[128], dst[128];
    for (int i = 0; i < 128; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    ptl_handle_md_t imd = PTL_INVALID_HANDLE;
    if (ini)
        imd = mp_bind(&m, src, 64, PTL_MD_THRESH_INF, 0, eq);
    ptl_sr_value_t d0 = 0;

    /* 1. threshold 2, auto-unlink, third put dropped */
    if (tgt) {
        memset(dst, 0, sizeof dst);
        mp_post(&m, PT_T, 1, dst, 64, 2, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_UNLINK,
                NULL);
        d0 = mp_drops(&m);
    }
    mp_barrier(&m);
    if (ini) {
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END,
                                             PTL_EVENT_ACK};
        ptl_event_t ev[3];
        for (int i = 0; i < 2; i++) {
            MP_CHECK(PtlPut(imd, PTL_ACK_REQ, target, PT_T, 0, 1, 0, 100 + i));
            mp_expect_all(eq, k, 3, ev, "1: put with ack");
            check_len(&ev[2], 64, "1: ack");
        }
        MP_CHECK(PtlPut(imd, PTL_ACK_REQ, target, PT_T, 0, 1, 0, 102));
        mp_expect_all(eq, k, 2, ev, "1: third put");
        mp_expect_none(eq, QUIET_MS, "1: third put (dropped: no ACK)");
    }
    if (tgt) {
        for (int i = 0; i < 2; i++) {
            mp_expect(eq, PTL_EVENT_PUT_START, "1: put");
            ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "1: put");
            check_len(&ev, 64, "1: put");
            if (ev.hdr_data != 100u + (unsigned)i || ev.md.threshold != 1 - i)
                mp_die("1: PUT_END hdr_data %llu threshold %d", (unsigned long long)ev.hdr_data,
                       ev.md.threshold);
        }
        mp_expect(eq, PTL_EVENT_UNLINK, "1: auto-unlink after threshold 2");
        if (memcmp(dst, src, 64) != 0)
            mp_die("1: data differs");
    }
    mp_barrier(&m); /* the barrier's messages follow the third put on the same queue */
    if (tgt) {
        ptl_sr_value_t d = mp_drops(&m);
        if (d != d0 + 1)
            mp_die("1: drop count went from %llu to %llu, expected +1", (unsigned long long)d0,
                   (unsigned long long)d);
        mp_expect_none(eq, 20, "1: target after the dropped put");
    }

    /* 2. ACK disabled by the target */
    if (tgt)
        mp_post(&m, PT_T, 2, dst, 64, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_ACK_DISABLE, eq, PTL_UNLINK, NULL);
    mp_barrier(&m);
    if (ini) {
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END};
        MP_CHECK(PtlPut(imd, PTL_ACK_REQ, target, PT_T, 0, 2, 0, 0));
        mp_expect_all(eq, k, 2, NULL, "2: put to an ACK_DISABLE MD");
        mp_expect_none(eq, QUIET_MS, "2: put to an ACK_DISABLE MD (no ACK)");
    }
    if (tgt) {
        mp_expect(eq, PTL_EVENT_PUT_START, "2: put");
        ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "2: put");
        check_len(&ev, 64, "2: put");
    }
    mp_barrier(&m);

    /* 3. truncation: ACK carries the target's mlength */
    if (tgt) {
        memset(dst, 0xEE, sizeof dst);
        mp_post(&m, PT_T, 3, dst, 32, PTL_MD_THRESH_INF,
                PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE | PTL_MD_TRUNCATE, eq, PTL_UNLINK, NULL);
    }
    mp_barrier(&m);
    if (ini) {
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END,
                                             PTL_EVENT_ACK};
        ptl_event_t ev[3];
        MP_CHECK(PtlPut(imd, PTL_ACK_REQ, target, PT_T, 0, 3, 0, 0));
        mp_expect_all(eq, k, 3, ev, "3: truncated put");
        check_len(&ev[1], 64, "3: SEND_END");
        check_len(&ev[2], 32, "3: ACK of a truncated put");
    }
    if (tgt) {
        mp_expect(eq, PTL_EVENT_PUT_START, "3: put");
        ptl_event_t ev = mp_expect(eq, PTL_EVENT_PUT_END, "3: put");
        check_len(&ev, 32, "3: truncated put");
        if (ev.rlength != 64)
            mp_die("3: PUT_END rlength %llu, expected 64", (unsigned long long)ev.rlength);
        if (memcmp(dst, src, 32) != 0 || dst[32] != 0xEE)
            mp_die("3: truncated data wrong (or written past the MD)");
    }
    mp_barrier(&m);

    /* 4. get with offsets; threshold-1 target MD unlinks; second get dropped */
    if (tgt) {
        for (int i = 0; i < 128; i++)
            dst[i] = (uint8_t)(255 - i);
        mp_post(&m, PT_T, 4, dst, 100, 1, PTL_MD_OP_GET | PTL_MD_MANAGE_REMOTE, eq, PTL_UNLINK,
                NULL);
        d0 = mp_drops(&m);
    }
    mp_barrier(&m);
    if (ini) {
        uint8_t got[80];
        memset(got, 0, sizeof got);
        ptl_handle_md_t gmd = mp_bind(&m, got, sizeof got, PTL_MD_THRESH_INF, 0, eq);
        static const ptl_event_kind_t k[] = {PTL_EVENT_REPLY_START, PTL_EVENT_REPLY_END};
        ptl_event_t ev[2];
        MP_CHECK(PtlGetRegion(gmd, 10, 50, target, PT_T, 0, 4, 20));
        mp_expect_all(eq, k, 2, ev, "4: get");
        check_len(&ev[1], 50, "4: REPLY_END");
        if (ev[1].offset != 10)
            mp_die("4: REPLY_END offset %llu, expected the local offset 10",
                   (unsigned long long)ev[1].offset);
        for (int i = 0; i < 80; i++) {
            uint8_t want = i >= 10 && i < 60 ? (uint8_t)(255 - (i - 10 + 20)) : 0;
            if (got[i] != want)
                mp_die("4: byte %d of the reply is %u, expected %u", i, got[i], want);
        }
        MP_CHECK(PtlGetRegion(gmd, 0, 50, target, PT_T, 0, 4, 0));
        mp_expect_none(eq, QUIET_MS, "4: get from an unlinked MD (dropped: no REPLY)");
        /* The get is outstanding until the target's NACK comes back (no
         * event): the MD is in use until then, which a loaded machine can
         * stretch past QUIET_MS. */
        int rc;
        uint64_t t0 = mp_now_ms();
        while ((rc = PtlMDUnlink(gmd)) == PTL_MD_IN_USE && mp_now_ms() - t0 < 10000)
            usleep(1000);
        MP_CHECK(rc);
    }
    if (tgt) {
        mp_expect(eq, PTL_EVENT_GET_START, "4: get");
        ptl_event_t ev = mp_expect(eq, PTL_EVENT_GET_END, "4: get");
        check_len(&ev, 50, "4: GET_END");
        if (ev.offset != 20)
            mp_die("4: GET_END offset %llu, expected 20", (unsigned long long)ev.offset);
        mp_expect(eq, PTL_EVENT_UNLINK, "4: auto-unlink after threshold 1");
    }
    mp_barrier(&m);
    if (tgt && mp_drops(&m) != d0 + 1)
        mp_die("4: the second get was not counted as dropped");

    /* 5. explicit unlink on the target */
    ptl_handle_md_t tmd = PTL_INVALID_HANDLE;
    if (tgt)
        tmd = mp_post(&m, PT_T, 5, dst, 64, PTL_MD_THRESH_INF,
                      PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE, eq, PTL_UNLINK, NULL);
    mp_barrier(&m);
    if (tgt) {
        MP_CHECK(PtlMDUnlink(tmd));
        d0 = mp_drops(&m);
    }
    mp_barrier(&m);
    if (ini) {
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END};
        MP_CHECK(PtlPut(imd, PTL_ACK_REQ, target, PT_T, 0, 5, 0, 0));
        mp_expect_all(eq, k, 2, NULL, "5: put after the target unlinked");
        mp_expect_none(eq, QUIET_MS, "5: put after the target unlinked (no ACK)");
    }
    mp_barrier(&m);
    if (tgt) {
        mp_expect_none(eq, 20, "5: explicit unlink (no event)");
        if (mp_drops(&m) != d0 + 1)
            mp_die("5: the put to the unlinked MD was not counted as dropped");
    }

    /* 6. initiator MD threshold 1 + unlink: the ACK finds no MD */
    if (tgt)
        mp_post(&m, PT_T, 6, dst, 64, PTL_MD_THRESH_INF, PTL_MD_OP_PUT | PTL_MD_MANAGE_REMOTE,
                eq, PTL_UNLINK, NULL);
    mp_barrier(&m);
    if (ini) {
        ptl_handle_md_t one;
        ptl_md_t d = {src, 64, 1, 0, 0, NULL, eq};
        MP_CHECK(PtlMDBind(m.ni, d, PTL_UNLINK, &one));
        MP_CHECK(PtlPut(one, PTL_ACK_REQ, target, PT_T, 0, 6, 0, 0));
        static const ptl_event_kind_t k[] = {PTL_EVENT_SEND_START, PTL_EVENT_SEND_END,
                                             PTL_EVENT_UNLINK};
        mp_expect_all(eq, k, 3, NULL, "6: put from a threshold-1 MD");
        mp_expect_none(eq, QUIET_MS, "6: the ACK to an unlinked MD is discarded");
    }
    if (tgt) {
        mp_expect(eq, PTL_EVENT_PUT_START, "6: put");
        mp_expect(eq, PTL_EVENT_PUT_END, "6: put");
    }
    mp_barrier(&m);
    if (m.rank == 0)
        printf("mp_ackreply: ACK/REPLY/threshold/unlink across processes OK\n");
    mp_fini(&m);
    return 0;
}
