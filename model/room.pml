/*
 * room.pml - SPIN model of the room wait (engine/wait.h RW, docs/waiting.md
 * "A full command ring"): an offload API thread whose command ring is full
 * sleeps until the engine has taken half of it, and the engine holder that
 * takes the commands rings it. Code: engine/progress.c (pt_nic_submit: the
 * producer), engine/wait.c (pt_wait_room), engine/wait.h (pt_wait_room_due),
 * engine/nic.c (drain_cmds: RW-DUE at every pass; pt_nic_local_work: the
 * sleepers' recheck).
 *
 * One producer P (the API thread) commits M commands into a ring of D
 * entries; one consumer C (the engine: the NIC thread, which sleeps on the
 * bell) takes them. M > D, so P must wait for room. Both sleep on a futex
 * with no timeout (the code's 10 ms bound on P's sleep and the backstop on
 * C's are not part of the protocol; here they would hide a lost wake-up).
 *
 * The rule, as built (the same names at each step in the code):
 *   P, reserve finds the ring full (spsc_reserve, A2):
 *     seq       read the room word's seq (before the mark)
 *     RW-ARM    want = 1 (ST_RELAXED)
 *     RW-FENCE  room.sleepers++ (RMW: full fence)
 *     RW-ROOM   reload the consumer index (A2): room -> sleepers--, retry
 *     else      futex_wait(seq), then sleepers--, retry
 *   P, commit: the command, R1 (head); D2: fence, then the engine runs it
 *     (here: ring C if it announced itself: the D2/D3/S2 pairs are
 *     wait.pml's; this model needs only that C comes back for commands)
 *   C, a pass (drain_cmds): take commands, R2 (tail) each; then RW-DUE
 *     without a fence: load want (relaxed: the model lets this load pass
 *     the pass's last R2, as a store buffer would); set and at most D/2
 *     used: RW-CLR (XCHG want 0), if it was set RW-RING (seq bump, wake)
 *   C, going to sleep (S2): read seq; sleepers++ (RMW: full fence); the
 *     recheck (pt_nic_local_work): a command queued, or want set with at
 *     most D/2 used, is work (back to a pass); else futex_wait(seq)
 *
 * The store-buffering pair: RW-ARM, RW-FENCE, RW-ROOM / R2, S2's fence,
 * the recheck's load of want: either P's reload sees the room, or C's
 * recheck sees the mark (and its next pass rings).
 *
 * Checks (safety run; `timeout` = nobody can move): when nobody can move,
 * all M commands were committed and taken and P is done (a P asleep at the
 * end is a lost wake-up); every command taken once, in order (assert).
 *
 * Mutants (tests/model/run-spin requires a counterexample for each):
 *   MUT_RWFENCE  no RW-FENCE: RW-ROOM's load passes the RW-ARM store
 *   MUT_RWCHECK  C's recheck does not look at the mark (only commands)
 *   MUT_RWSEQ    P reads seq after RW-ROOM (a ring in between is lost)
 *   MUT_RWHALF   RW-DUE's threshold is never reached (the ring is never
 *                "half free"): the mark stays set, nobody rings
 */

#ifndef M
#define M 4                    /* commands                                  */
#endif
#ifndef D
#define D 2                    /* ring entries                              */
#endif
#define HALF_USED (D / 2)      /* RW-DUE: at most this many used            */

byte hd;                /* head: P's commit index (R1), read by C (A1)      */
byte tl;                /* tail: C's consumer index (R2), read by P (A2)    */
byte ent[M];            /* the command at position p (no wrap: M entries)  */
bit want;               /* the ring's mark: P sets (RW-ARM), C clears (RW-CLR) */
byte sl_p, sl_c;        /* room.sleepers and the bell's sleepers            */
bit seq_p, seq_c;       /* the futex words: 1 = read by the sleeper and not
                         * bumped since (a ring clears it)                 */
bit pdone;

inline ring_p() { seq_p = 0 }
inline ring_c() { seq_c = 0 }

#ifdef MUT_RWHALF
#define DUE(u) (false)
#else
#define DUE(u) ((u) <= HALF_USED)
#endif

proctype Producer()
{
    byte m = 1;
    byte lt, ls;
    do
    :: m > M -> break
    :: m <= M ->
        lt = tl;                          /* A2 */
        if
        :: hd - lt < D ->
            d_step { ent[hd] = m; hd++ };  /* the command, R1 */
            /* D2: fence, then the engine: C rung if it announced itself */
            ls = sl_c;
            if :: ls > 0 -> ring_c() :: else fi;
            ls = 0;
            m++
        :: else ->
            /* full: spin (retry) or the room wait */
            if
            :: true -> skip
            :: true ->
#ifndef MUT_RWSEQ
                seq_p = 1;                /* read seq, before the mark */
#endif
#ifdef MUT_RWFENCE
                lt = tl;                  /* RW-ROOM passes the buffered RW-ARM */
                want = 1;
                sl_p++;
#else
                want = 1;                 /* RW-ARM */
                sl_p++;                   /* RW-FENCE: RMW, full fence */
                lt = tl;                  /* RW-ROOM (A2) */
#endif
#ifdef MUT_RWSEQ
                seq_p = 1;                /* seq read too late */
#endif
                if
                :: hd - lt < D -> sl_p--  /* room: retry now */
                :: else ->
                    (seq_p == 0);         /* futex_wait(seq), no timeout */
                    sl_p--
                fi
            fi;
            lt = 0
        fi
    od;
    pdone = 1
}

proctype Consumer()
{
    byte lh, u;
    bit lw, took;
    do
    :: /* a pass (drain_cmds) */
       took = 0;
       do
       :: lh = hd;                         /* A1 */
          if
          :: lh != tl ->
              d_step {
                  assert(ent[tl] == tl + 1);   /* once, in order */
                  tl++                          /* R2 */
              };
              took = 1
          :: else -> break
          fi
       :: took -> break                    /* the pass ends (batch limit) */
       od;
       lh = 0;
       /* RW-DUE, no fence since C's last one: its load of want may pass
        * R2 stores of this or earlier passes (a store buffer) and so see
        * an older want. want goes 1 -> 0 only by C's own XCHG, so an older
        * value is 0 or the current one: the model lets the load see 0 at
        * any pass. S2 below is what makes the wake-up certain. */
       if
       :: lw = want
       :: lw = 0
       fi;
       u = hd - tl;
       if
       :: lw && DUE(u) ->
           d_step { lw = want; want = 0 };      /* RW-CLR: XCHG */
           if :: lw -> ring_p() :: else fi       /* RW-RING */
       :: else
       fi;
       lw = 0; u = 0;
       if
       :: took -> skip                      /* busy: another pass */
       :: else ->
           /* S2: announce, fence, recheck */
           seq_c = 1;
           sl_c++;                          /* RMW: full fence */
           lh = hd;
#ifdef MUT_RWCHECK
           lw = 0;
#else
           lw = want;
#endif
           u = hd - tl;
           if
           :: lh != tl || (lw && DUE(u)) -> sl_c--   /* work: a pass */
           :: else ->
end_C:         (seq_c == 0);               /* futex_wait(seq), no timeout */
               sl_c--
           fi;
           lh = 0; lw = 0; u = 0
       fi
    od
}

active proctype Monitor()
{
end_M:
    timeout ->
    assert(pdone && hd == M && tl == M)
}

init
{
    atomic {
        run Producer();
        run Consumer()
    }
}
