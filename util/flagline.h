/*
 * flagline.h - a process's flag slots: single-writer lines in the memory the
 * processes of one node share (the shm job region, transport/shm_region.h),
 * through which the collective library runs a blocking barrier and a small
 * allreduce, reduce or bcast among members on one node without a message (coll/flag.c,
 * docs/coll.md "Flag path").
 *
 * The transport only places them (PT_FLAG_SLOTS slots of
 * sizeof(struct pt_flagslot) per process, zeroed at creation) and hands out
 * their address (xport.h flag_lines); coll/ alone reads and writes them.
 *
 * Who writes, who reads (slot s of process P):
 *   seq    P only (ST_RELEASE, F-SEQ, after val): how many flag calls P has
 *          entered on this slot, over all the groups that ever used it (never
 *          reset). Members read it (LD_ACQUIRE, A-SEQ): seq >= base + c says
 *          P entered the group's call c, and val[(base + c) & 1] holds P's
 *          value of that call.
 *   sleep  P only (ST_RELAXED, then FENCE_FULL: F-ANN; 0 again after the
 *          wait): P may sleep until the members it waits for entered the
 *          call whose seq (P's numbering) this is. A member that stored its
 *          own seq of call c (FENCE_FULL: F-WAKE) and reads P's sleep at or
 *          below P's seq of call c sends P a wake message (Dekker: either
 *          P's recheck after F-ANN sees the member's seq, or the member
 *          sees the announcement).
 *   val    P only, before F-SEQ: P's contribution to a call. Two buffers:
 *          before P writes a buffer again it waits until every member
 *          entered the call after the one that last wrote it (F-REUSE): a
 *          member enters a call only after it read everything of the one
 *          before.
 *   tag    P only: the group id that uses the slot (0: none), stored with
 *          base before the group's hello (the hello's messages publish
 *          them); members look P's slot up by it after the hello.
 *   base   P only: seq when the slot was taken for the current group.
 *   caps   P only, with base: PT_FLAG_SPIN if P's waits spin (a core of its
 *          own); the members agree on what needs every member's bit.
 *   calls  P only (ST_RELAXED; 0 when the slot is taken, with base): how
 *          many calls of the group P has entered, on every path (flag,
 *          persistent, per-call: coll_int.h pt_coll_enter). P's close (the
 *          release a member's A-LEFT acquires: xport.h peer_left) comes
 *          after every store, so a member that saw P leave and reads calls
 *          below c knows P never entered call c (coll/req.c,
 *          pt_coll_ct_wait).
 *   done   P only (ST_RELEASE): seq when P freed its group (every call of it
 *          complete here). A slot whose group was freed is taken again only
 *          when every member of that group shows done past that group's last
 *          call, so that no member still reads its val.
 * What a reader trusts: nothing beyond the job's ranks being cooperative, as
 * for the claim words; a value read is only ever combined, never used as an
 * index or a length.
 */
#ifndef PT_FLAGLINE_H
#define PT_FLAGLINE_H

#include "pt_atomic.h"

#include <stdint.h>

#define PT_FLAG_SLOTS 32u  /* flag slots per process                     */
#define PT_FLAG_VAL   16u  /* bytes of one call's value (allreduce)       */
#define PT_FLAG_SPIN  1u   /* caps: the owner's waits spin               */

struct pt_flagslot {
    /* line 0: what every call writes and every member polls */
    _Atomic uint64_t seq;
    _Atomic uint64_t sleep;
    uint64_t pad0[2];
    unsigned char val[2][PT_FLAG_VAL];
    /* line 1: set-up and teardown only */
    _Atomic uint64_t tag;
    _Atomic uint64_t base;
    _Atomic uint64_t done;
    _Atomic uint64_t caps;
    _Atomic uint64_t calls;
    uint64_t pad1[3];
};
_Static_assert(sizeof(struct pt_flagslot) == 2 * PT_CACHELINE, "a flag slot is two lines");

#endif
