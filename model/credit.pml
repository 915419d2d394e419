/*
 * credit.pml - SPIN model of the credit wait (docs/waiting.md, "Stalled on
 * credits: the credit wait"): a sender whose only work is stalled on room
 * towards a peer sleeps, and the receiver that frees the room rings it.
 * Code: transport/shm.c (shm_reserve -> tx_arm, shm_release, shm_rx_done,
 * shm_stall_armed), engine/nic.c (drain_cmds records the stall,
 * pt_nic_local_work skips a stalled-and-armed command ring), engine/wait.c
 * (S2, the sleep itself).
 *
 * One sender s (its engine: the NIC thread, or a host-mode waiter, it makes
 * no difference here: one engine holder that may sleep on s's bell) sends M
 * messages to one receiver r over a descriptor ring of D entries. The
 * receiver (r's engine holder) consumes them and may sleep on r's bell. Both
 * sleep on a futex with no timeout. M > D, so the sender must stall.
 *
 * The rule, as built (named steps, the same names at each fence in the code):
 *   sender, reserve finds the ring full (after A-HEAD):
 *     C-ARM     want_at = the head it saw + HALF (ST_RELAXED), then
 *               want = 1 (ST_RELEASE; the ring's first line)
 *     C-FENCE   FENCE_FULL
 *     C-HEAD    reload the consumer head (A-HEAD): room -> retry now
 *               (the mark stays set: a spurious ring at worst)
 *     else the command stays at the head of its command ring, recorded
 *     as stalled (the engine's stall_at)
 *   sender, a later poll (drain_cmds):
 *     C-SKIP    while every mark armed for the stall is still set, the
 *               command is not retried (at most PT_STALL_SKIPS polls in a
 *               row in the code; unbounded here): it waits for R-CLR
 *   sender, going to sleep (S2):
 *     read seq; sleepers++ (RMW: full fence);
 *     C-RECHECK: the stalled command is work again unless every ring it
 *     armed still has want set (any other work counts as always)
 *   receiver, a poll pass:
 *     consume, R-HEAD (ST_RELEASE of the head) for each message; at the
 *     end of a pass that advanced any head:
 *     R-FENCE   FENCE_FULL (one per pass)
 *     R-WANT    load want of every ring advanced in the pass (LD_ACQUIRE);
 *               if set, load want_at: a head short of it leaves the mark
 *               set (the ring holds messages up to the tail, which is at
 *               least want_at, so a pass that moves the head there comes
 *               unless r stops draining); else:
 *     R-CLR     RMW_XCHG(want, 0); if it was set:
 *     R-RING    load the sender's bell.sleepers; if any: pt_wake_all (seq
 *               bump + FUTEX_WAKE)
 *   plus D1 for the data (the sender's commit rings r when r sleeps; the
 *   full version of that is region.pml's).
 *
 * Two store-buffering pairs:
 *   C-PAIR  (C-ARM, C-FENCE, C-HEAD / R-HEAD, R-FENCE, R-WANT): either the
 *           sender's reload sees the room, or the receiver sees the mark.
 *   W-PAIR  (R-CLR, R-RING's load / sleepers++, C-RECHECK): either the
 *           receiver sees the sleeper and rings, or the sleeper's recheck
 *           sees the mark cleared and runs again.
 *
 * Checks (safety run; `timeout` = nobody can move):
 *   - no lost wake-up: when nobody can move, all M messages were committed
 *     and consumed; the only valid end of the receiver is its sleep, and a
 *     sender asleep at the end is an invalid end state;
 *   - every message delivered once, in order (assert at each consumption).
 *
 * Mutants (tests/model/run-spin requires a counterexample for each):
 *   MUT_CFENCE    no C-FENCE: C-HEAD's load passes the C-ARM store
 *   MUT_RFENCE    no R-FENCE: R-WANT's load passes the last R-HEAD store
 *   MUT_RBEFORE   the receiver looks at the mark before it consumes (R-WANT
 *                 before R-HEAD, at the start of the pass)
 *   MUT_NORELOAD  the sender does not reload the head after C-ARM
 *   MUT_RECHECK   the sleeper's recheck loads want before sleepers++
 *   MUT_THRESH    the threshold beyond the tail (HALF = D + 1): r never
 *                 gets there
 * HALF = (D + 1) / 2: r rings once it freed half the ring (one wake-up per
 * D/2 messages, not one per message, when r frees a slot per pass).
 * The head carried back in r's own ring messages (P-HEAD, shm_region.h) is
 * a value hd had when r sent them: the reload with room below, taken at
 * that moment, covers it (the sender takes back no more than a load of hd
 * would have given then).
 */

#ifndef M
#define M 3                    /* messages                                  */
#endif
#ifndef D
#define D 1                    /* ring entries                              */
#endif
#ifdef MUT_THRESH
#define HALF (D + 1)           /* a threshold beyond the tail: wrong        */
#else
#define HALF ((D + 1) / 2)     /* r rings once it freed half the ring       */
#endif

/* ---- shared ----------------------------------------------------------------- */
byte tl;                /* ring tail: written by s (R-TAIL), read by r     */
byte hd;                /* r's consumer head: written by r (R-HEAD), read by s */
byte ent[M];            /* entry at position p (no wrap needed: M entries,
                         * the D bound is the credit check)                */
bit want;               /* the ring's mark: set by s (C-ARM), cleared by r (R-CLR) */
byte want_at;           /* the head position at which r rings: written by s
                         * (C-ARM, before want), read by r (after R-WANT)  */
byte sl_s, sl_r;        /* bell.sleepers of s and of r                     */
bit seq_s, seq_r;       /* the futex words: 1 = read by the sleeper and not
                         * bumped since (pt_wake_all clears it)            */
bit sdone;

inline ring_s() { seq_s = 0 }
inline ring_r() { seq_r = 0 }

proctype Sender()
{
    byte m = 1;
    byte rec = 0;       /* the head the sender last loaded (reclaimed)   */
    byte lh, ls;
    bit lw;
    do
    :: m > M -> break
    :: m <= M ->
        /* reserve: ask where r is when the ring looks full (A-HEAD); or,
         * with room, at any time (the reuse of shm_reserve: after an answer,
         * to fill the buffer just read again) */
        if
        :: tl - rec >= D -> lh = hd; rec = lh
        :: tl - rec < D && tl != rec -> lh = hd; rec = lh
        :: tl - rec < D -> skip
        fi;
        if
        :: tl - rec < D ->
            /* commit: the entry, R-TAIL; F-SND; D1 */
            d_step { ent[tl] = m; tl++ };
            ls = sl_r;
            if :: ls > 0 -> ring_r() :: else fi;
            ls = 0;
            m++
        :: else ->
            /* C-ARM: the threshold, then the mark; a retry that finds the
             * mark set with this threshold stores nothing (tx_arm) */
            if
            :: want == 1 && want_at == rec + HALF -> skip
            :: else ->
            want_at = rec + HALF;
#if defined(MUT_CFENCE)
            lh = hd;                      /* C-HEAD passes the buffered C-ARM */
            want = 1;
            rec = lh
            fi;
#elif defined(MUT_NORELOAD)
            want = 1                      /* C-ARM, no C-HEAD */
            fi;
#else
            want = 1                      /* C-ARM (ST_RELEASE) */
            fi;
            /* C-FENCE */
            lh = hd;                      /* C-HEAD (A-HEAD) */
            rec = lh;
#endif
            lh = 0;
            if
            :: tl - rec < D -> skip       /* room: retry now */
            :: else ->
                /* stalled and armed: the engine has no other work. It may
                 * spin on (poll again) or go to sleep: S2. */
                if
                :: true -> skip           /* spin: next poll retries */
                :: true ->
                    /* C-SKIP: spin without retrying while the mark stays
                     * set (drain_cmds, stall_holds: bounded there, not
                     * here); the next poll after r cleared it retries */
                    (want == 0)
                :: true ->
                    seq_s = 1;            /* read seq */
#ifdef MUT_RECHECK
                    lw = want;            /* C-RECHECK passes the announcement */
                    sl_s++;
#else
                    sl_s++;               /* RMW_ADD: full fence */
                    lw = want;            /* C-RECHECK */
#endif
                    if
                    :: !lw -> sl_s--      /* the mark was cleared: work again */
                    :: else ->
                        (seq_s == 0);     /* futex_wait(seq), no timeout */
                        sl_s--
                    fi;
                    lw = 0
                fi
            fi
        fi
    od;
    sdone = 1
}

proctype Receiver()
{
    byte lt, ls;
    bit lw, adv;
    do
    :: /* a poll pass */
       adv = 0;
#ifdef MUT_RBEFORE
       lw = want;                         /* R-WANT first: wrong */
#endif
       do
       :: lt = tl;                         /* A-TAIL */
          if
          :: lt != hd ->
#ifdef MUT_RFENCE
              /* R-WANT passes this (possibly the last) R-HEAD */
              d_step { assert(ent[hd] == hd + 1) };
              lw = want;
              hd++;                       /* R-HEAD */
#else
              d_step {
                  assert(ent[hd] == hd + 1);   /* once, in order */
                  hd++                          /* R-HEAD */
              };
#endif
              adv = 1
          :: else -> break
          fi
       :: adv -> break                     /* the pass ends (batch limit) */
       od;
       lt = 0;
       if
       :: adv ->
#if !defined(MUT_RBEFORE) && !defined(MUT_RFENCE)
           /* R-FENCE */
           lw = want;                     /* R-WANT */
#endif
           if
           :: lw -> ls = want_at;         /* after R-WANT (its acquire) */
               if
               :: hd >= ls -> skip        /* freed up to the threshold */
               :: else -> lw = 0          /* not yet: the mark stays set */
               fi;
               ls = 0
           :: else
           fi;
           if
           :: lw ->
               d_step { lw = want; want = 0 };   /* R-CLR: RMW_XCHG */
               if
               :: lw -> ls = sl_s; if :: ls > 0 -> ring_s() :: else fi  /* R-RING */
               :: else
               fi
           :: else
           fi;
           lw = 0; ls = 0
       :: else ->
           /* nothing consumed: S2 for r (D1's other half) */
           seq_r = 1;
           sl_r++;                        /* RMW_ADD: full fence */
           lt = tl;
           if
           :: lt != hd -> sl_r--
           :: else ->
end_R:         (seq_r == 0);              /* futex_wait(seq), no timeout */
               sl_r--
           fi;
           lt = 0;
           lw = 0
       fi
    od
}

active proctype Monitor()
{
end_M:
    timeout ->
    assert(sdone && tl == M && hd == M)
}

init
{
    atomic {
        run Sender();
        run Receiver()
    }
}
