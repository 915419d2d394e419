/*
 * fbox.pml - SPIN model of the fast boxes (transport/shm.c: fb_claim,
 * fb_send, shm_commit, fb_pickup, fb_look, rx_look, fb_release, fb_senders;
 * transport/shm_region.h, "Fast boxes") with the sleep/ring half of the
 * waiting protocol's D1 (docs/waiting.md).
 *
 * One sender s and one receiver r (r's NIC thread, the only engine holder).
 * s commits M messages, stamped 0 .. M-1 (the order stamps of xport.h,
 * "Order"). The first AFTER go through the ring; then s claims box 0 of r's
 * directory (FB-CLAIM, FB-COUNT) and from then on each message goes through
 * the lane when it fits (the model chooses: a message too large for a lane
 * takes the ring) and the lane has room (else the ring: a lane never stalls
 * a sender). Every commit ends with F-SND and D1: ring r's bell iff r
 * announced a sleeper.
 *
 * r peeks: it lists the box when the directory's count moved (FB-COUNT,
 * then the owner), looks at the ring (A-TAIL when its cached tail is used
 * up), at the directory again when the ring's head is not the message due
 * and no box is listed, then at the lane (FB-SEQ-A), looks at the ring a
 * second time when it was empty and the lane's head is not the message due
 * (the last three: FB-ORDER), and
 * takes the earlier of the two heads. It consumes what it takes (ring:
 * R-HEAD; lane: the body is read before FB-HEAD). When a peek finds
 * nothing r either peeks again or arms: reads seq, announces itself
 * (sleepers++, an RMW), rechecks with rx_pending (the ring's tail, then the
 * directory and the lane's head line: fb_senders), and sleeps on seq (a
 * futex wait, no timeout) unless work is pending.
 *
 * Simplifications (each keeps every interleaving the code has):
 *   - one class: the two lanes of a box are two copies of this one, and the
 *     two classes' order across each other is order_pick's (xport.h,
 *     "Order"), which looks at the other class after it saw this one, as
 *     FB-ORDER does;
 *   - the ring is deep enough (M entries) and always polled: the
 *     senders-with-work bitmap that makes r poll it is region.pml's, and a
 *     box sender stays listed for good (rx_drop);
 *   - a message takes one line (a longer one writes its further lines before
 *     the first line's body and FB-SEQ: more of the same store);
 *   - a line's sequence word is the position + 1 (the code's 2pos+1, odd,
 *     so that a further line's 0 never matches): positions stay below 255.
 *
 * What SPIN checks (safety run, `timeout` as "nobody can move"):
 *   - exactly once, in order: every message r takes is the one due next
 *     (assert stamp == next), whichever queue it came from; a lane line r
 *     reads is the message it announced (the body is that lap's);
 *   - no lost wake-up: when nobody can move, s has committed all M and r
 *     has taken all M (the Monitor); r's only valid end is its sleep;
 *   - no livelock: once s is done, r's recheck may say "pending" only a
 *     bounded number of times (LATE_MAX), so a message rx_pending sees and
 *     peek never finds (a box r never lists) fails.
 *
 * Memory model: as wait.pml and region.pml. Each MUT_<name> removes one
 * ordering or step the code relies on; tests/model/run-spin requires a
 * counterexample for each:
 *   MUT_FBSEQ     FB-SEQ before the body: r may read the line's last lap
 *   MUT_FBHEAD    r publishes FB-HEAD before it reads the body: s may
 *                 write the line again under it
 *   MUT_HEADA     s writes the lane without looking at r's head (no room
 *                 check): it overwrites a line r has not read
 *   MUT_FSND      no F-SND after a lane commit: D1's load of sleepers
 *                 passes FB-SEQ
 *   MUT_PENDFB    rx_pending ignores the lanes
 *   MUT_COUNT     FB-COUNT before FB-CLAIM: r sees the count move, finds no
 *                 owner and never lists the box
 *   MUT_ORDER     no second look at the ring (FB-ORDER)
 *   MUT_PICKUP    a ring head that is not the message due does not make r
 *                 look at the directory again (FB-ORDER): a box claimed
 *                 before that head, and not listed yet, is passed over
 *   MUT_LANEFIRST the lane is looked at before the ring (and the second
 *                 look is at the lane)
 *   MUT_RUNG      D1R (region.pml) without the sleeper's clear of `rung`
 *
 * ASYM=1: AF (docs/waiting.md, "D1 without the sender's fence"): a lane
 * commit has no F-SND (its D1 load passes FB-SEQ, as in MUT_FSND; from that
 * load until FB-SEQ lands s is "in the window", win), and r runs AF-M, a
 * global membarrier, after its announcement and before rx_pending: it
 * returns once s's buffered FB-SEQ has landed (here: it waits until s is
 * out of the window). The ring's commit keeps its fence, as in the code.
 * Mutant MUT_AFM: no AF-M (then it is MUT_FSND): SPIN must find the lost
 * wake-up.
 */

#ifndef M
#define M 4                    /* messages                                   */
#endif
#ifndef AFTER
#define AFTER 1                /* messages through the ring before the claim */
#endif
#ifndef LL
#define LL 2                   /* lines per lane                             */
#endif
#ifndef LATE_MAX
#define LATE_MAX (M + 3)
#endif
#ifndef ASYM
#define ASYM 0
#endif
#define NONE 255

/* ---- shared (the job region) ---------------------------------------------- */
byte rtail;             /* ring s -> r: written by s (R-TAIL)              */
byte rhd;               /* r's ring head (R-HEAD)                          */
byte rent[M];           /* ring entries: stamps                            */
byte owner;             /* r's directory: box 0's owner (FB-CLAIM)         */
byte nclaimed;          /* r's directory count (FB-COUNT)                  */
byte lseq[LL];          /* the lane's lines: sequence word (FB-SEQ) ...    */
byte lbody[LL];         /* ... and body: the stamp                         */
byte lhead;             /* r's lane head (FB-HEAD)                         */
byte sleepers;          /* r's bell.sleepers                               */
bit rung;               /* r's bell.rung (D1R, region.pml)                 */
byte seq;               /* r's bell.seq as a futex (wait.pml's encoding)   */
bool sdone;
bool win;               /* ASYM: s loaded sleepers, its FB-SEQ not landed  */
byte taken;             /* messages r took (the Monitor's view)          */

#define BIT (1 << _pid)
#define READ_SEQ seq = seq | BIT
#define FUTEX_WAIT ((seq & BIT) == 0)

inline ring() {          /* pt_wake_all: seq bump + FUTEX_WAKE */
    seq = 0
}

/* ---- sender --------------------------------------------------------------- */

proctype Sender()
{
    byte ord = 0, ltail = 0, chead = 0, ls;
    bool claimed = 0, lane;
    do
    :: ord < M ->
        lane = 0;
        if
        :: claimed ->
            if
            :: true ->                            /* fits a lane: room? */
#ifndef MUT_HEADA
                if
                :: ltail + 1 - chead > LL -> chead = lhead   /* FB-HEAD-A */
                :: else
                fi;
                if :: ltail + 1 - chead <= LL -> lane = 1 :: else fi
#else
                lane = 1
#endif
            :: true -> skip                       /* too large: the ring */
            fi
        :: else
        fi;
        if
        :: lane ->
#if defined(MUT_FBSEQ)
            lseq[ltail % LL] = ltail + 1;        /* FB-SEQ first ... */
            lbody[ltail % LL] = ord;             /* ... the body after */
            ls = sleepers;
#elif defined(MUT_FSND)
            lbody[ltail % LL] = ord;
            ls = sleepers;                       /* D1's load passes FB-SEQ */
            lseq[ltail % LL] = ltail + 1;
#elif ASYM
            lbody[ltail % LL] = ord;
            atomic { ls = sleepers; win = 1 };   /* AF: no F-SND, the load passes FB-SEQ */
            atomic { lseq[ltail % LL] = ltail + 1; win = 0 };  /* FB-SEQ lands */
#else
            lbody[ltail % LL] = ord;             /* the body */
            lseq[ltail % LL] = ltail + 1;        /* FB-SEQ: ST_RELEASE */
            ls = sleepers;                       /* F-SND (FENCE_FULL), then D1's load */
#endif
            ltail++
        :: else ->
            d_step { rent[rtail] = ord; rtail++ };    /* R-TAIL */
            ls = sleepers                        /* F-SND, then D1's load */
        fi;
        if                                        /* D1R: rung's load, then XCHG */
        :: ls > 0 && !rung -> d_step { ls = rung; rung = 1 };
                              if :: !ls -> ring() :: else fi
        :: else
        fi;
        ls = 0;
        if
        :: !claimed && ord + 1 >= AFTER ->      /* fb_claim after this commit */
#ifdef MUT_COUNT
            nclaimed++;                          /* the count before the claim */
            owner = 1;
#else
            owner = 1;                           /* FB-CLAIM: RMW_CAS */
            nclaimed++;                          /* FB-COUNT: RMW_ADD */
#endif
            claimed = 1
        :: else
        fi;
        ord++
    :: ord >= M -> break
    od;
    sdone = 1
}

/* ---- receiver ------------------------------------------------------------- */

/* rx_look's ring half (ring_look): A-TAIL when the cached tail is used up. */
inline ring_look(r) {
    if
    :: rhd == ctail -> ctail = rtail                  /* A-TAIL */
    :: else
    fi;
    if
    :: rhd != ctail -> r = rent[rhd]
    :: else -> r = NONE
    fi
}

/* fb_look: the line at our head carries the sequence due, then its body. */
inline fb_look(f) {
    f = NONE;
    if
    :: listed && !dec ->
        lv = lseq[fhead % LL];                        /* FB-SEQ-A */
        if
        :: lv == fhead + 1 ->
#ifdef MUT_FBHEAD
            lhead = fhead + 1;                        /* FB-HEAD before the read */
#endif
            dbody = lbody[fhead % LL];                /* the body (decode) */
            dec = 1
        :: else
        fi;
        lv = 0
    :: else
    fi;
    if :: dec -> f = dbody :: else fi
}

/* fb_pickup: the directory's count moved: list the box. */
inline fb_pickup() {
    lv = nclaimed;                                    /* FB-COUNT's reader */
    if
    :: lv != seen ->
        seen = lv;
        lv = owner;                                   /* LD_ACQUIRE */
        if :: lv -> listed = 1; fhead = lhead :: else fi
    :: else
    fi;
    lv = 0
}

proctype Nic()
{
    byte seen = 0, fhead = 0, ctail = 0, next = 0, lv, dbody, r, f, late = 0;
    bool listed = 0, dec = 0, found, w;
    do
    :: /* S1: run the engine */
       do
       :: /* shm_peek */
          found = 0;
          fb_pickup();
          /* rx_look */
#ifdef MUT_LANEFIRST
          fb_look(f);
          ring_look(r);
          if :: r != NONE && f == NONE && r != next -> fb_look(f) :: else fi;
#else
          ring_look(r);
#ifndef MUT_PICKUP
          if
          :: !listed && r != NONE && r != next -> fb_pickup() /* FB-ORDER: a box claimed before r */
          :: else
          fi;
#endif
          fb_look(f);
#ifndef MUT_ORDER
          if :: f != NONE && r == NONE && f != next -> ring_look(r) :: else fi; /* FB-ORDER */
#endif
#endif
          if
          :: f != NONE && (r == NONE || f < r) ->      /* the lane's: consume */
              d_step {
                  assert(f == next);                   /* in order, once, that lap's body */
                  next++;
                  taken++;
                  fhead++;
                  dec = 0;
                  dbody = 0
              };
#ifndef MUT_FBHEAD
              lhead = fhead;                           /* FB-HEAD: ST_RELEASE */
#endif
              found = 1
          :: r != NONE && (f == NONE || r < f) ->      /* the ring's: consume */
              d_step {
                  assert(r == next);
                  next++;
                  taken++;
                  rhd++                                /* R-HEAD */
              };
              found = 1
          :: else
          fi;
          r = 0; f = 0;
          if
          :: found -> skip
          :: else ->
              if
              :: true -> break                         /* idle: arm */
              :: true -> skip                          /* spin on */
              fi
          fi
       od;
       /* S2 */
       READ_SEQ;
#ifndef MUT_RUNG
       rung = 0;                                       /* pt_announce: D1R's clear */
#endif
       sleepers++;                                     /* RMW_ADD: full fence */
#if ASYM && !defined(MUT_AFM)
       (!win);                                         /* AF-M: membarrier: s's FB-SEQ lands */
#endif
       /* rx_pending: the ring, then fb_senders */
       w = 0;
       lv = rtail;                                     /* A-TAIL */
       if :: lv != rhd -> w = 1 :: else fi;
#ifndef MUT_PENDFB
       if
       :: !w ->
           lv = nclaimed;
           if
           :: lv ->
               lv = owner;
               if
               :: lv ->
                   lv = lhead;                         /* LD_RELAXED: ours */
                   if :: lseq[lv % LL] == lv + 1 -> w = 1 :: else fi  /* LD_ACQUIRE */
               :: else
               fi
           :: else
           fi
       :: else
       fi;
#endif
       lv = 0;
       if
       :: w ->
           sleepers--;
           if
           :: sdone -> late++; assert(late <= LATE_MAX)
           :: else
           fi;
           w = 0
       :: else ->
end_S3:    FUTEX_WAIT;                                 /* futex_wait(seq), no timeout */
           sleepers--
       fi
    od
}

/* When nobody can move: every message committed and taken. */
active proctype Monitor()
{
end_M:
    timeout ->
    assert(sdone);
    assert(taken == M);
    assert(rtail == rhd)
}

init
{
    atomic {
        run Sender();
        run Nic()
    }
}
