/*
 * region.pml - SPIN model of the job region's "senders with work" bitmap
 * (transport/shm.c: shm_commit, rx_pickup, rx_drop, shm_peek,
 * shm_rx_pending; transport/shm_region.h, "Senders with work" and
 * "Doorbell") together with the sleep/ring half of the waiting protocol's D1
 * (engine/wait.c's NIC thread S2/S3, docs/waiting.md).
 *
 * One receiver r and NS senders (processes of the job). Sender s commits M
 * messages to r, one after the other, with nothing in between: each commit
 * is R-TAIL, F-SND, the load of its bit, B-SET and S-SET when the bit was
 * clear, then D1 (ring r's bell iff r announced a sleeper). The senders share
 * one bitmap word of r (bit s) and its summary word (one bit for that word).
 * The receiver is r's NIC thread, the only engine holder: it peeks
 * (rx_pickup, a scan of its private active list, rx_drop, rx_pickup again,
 * at most two passes, as shm_peek), consumes what it finds, and when a peek
 * finds nothing it either peeks again or arms: reads seq, announces itself
 * (sleepers++, an RMW), rechecks with rx_pending, and sleeps on seq (a
 * futex wait, no timeout) unless work is pending. Between messages of one
 * sender the receiver may drop it, so its bit goes set -> clear -> set.
 *
 * Simplifications (each keeps every interleaving the code has):
 *   - one ring per sender: the code's two classes share the sender's bit,
 *     rx_drop reloads both tails and rx_pending reads both, so two rings are
 *     one ring whose tail is either tail, as far as the bitmap is concerned;
 *   - the rings are deep enough (M entries): a full ring only delays a
 *     sender, it never skips a step of commit;
 *   - nobody polls for r (bell.polled = 0: D4, the offload waiters' half of
 *     D1, is checked in wait.pml) and no held (deferred) senders;
 *   - the scan visits the active list in its order (unlisting swaps the last
 *     entry in, as rx_drop does), not round-robin from the last one served.
 *
 * What SPIN checks (safety run, `timeout` as "nobody can move"):
 *   - no lost wake-up: when nobody can move, every sender has committed all
 *     its messages and the receiver has consumed all of them (the Monitor);
 *     the only valid end of the receiver is its sleep (end_S3);
 *   - no livelock: once every sender is done, the receiver's recheck may say
 *     "pending" only a bounded number of times (LATE_MAX: each must lead to
 *     a consumption or to a summary bit cleared); a receiver that spins for
 *     ever between its recheck and a peek that cannot find the message
 *     (a set bit nobody lists) fails this assertion;
 *   - exactly once, in order: a consumed entry is below the sender's tail and
 *     carries the sender's next message number;
 *   - the active list never holds a sender twice (assert in rx_list).
 *
 * Memory model: as wait.pml. Every shared access is one statement (one load,
 * store or RMW), interleaved sequentially consistently, which is what the
 * code's fences buy. Each MUT_<name> removes one ordering the code relies
 * on and makes the store in question visible only after the loads that
 * follow it (a store buffer), or drops one step; tests/model/run-spin
 * requires SPIN to find a counterexample for each:
 *   MUT_FSND     no F-SND: R-TAIL becomes visible after the load of the bit
 *                (and, if the bit was set, after the load of sleepers)
 *   MUT_BCLR     no fence after B-CLR: the tails are reloaded before the
 *                clear is visible (a clear that is not a full fence)
 *   MUT_RELOAD   rx_drop unlists without reloading the tails
 *   MUT_SWAP     rx_pickup loads the word before it clears the summary bit
 *                (S-CLR)
 *   MUT_SSET     commit sets its word bit only, never the summary (S-SET)
 *   MUT_PENDSUM  rx_pending ignores the summary word: NOT refuted, and
 *                rightly (docs/waiting.md: the bits and tails decide; the
 *                summary is an early answer); run-spin requires it to pass
 *   MUT_BSET     the summary is loaded before B-SET is visible
 *   MUT_S2       the recheck's loads pass the announcement (sleepers++)
 *   MUT_LIST     rx_list without its `listed` check
 *   MUT_RUNG     D1R without the sleeper's clear: `rung` stays set after the
 *                first ring, and every later commit leaves the ring to it
 *   MUT_RUNGLATE the sleeper clears `rung` after its recheck, not before its
 *                announcement: a commit between the two finds it still set
 *                by a ring that woke an earlier sleep
 * BATCH: each sender's M messages go in passes of the NIC thread's command
 * rings (PTL_SHM_RING_BATCH), split every way: a pass publishes its
 * messages, then F-SND, the bit and D1 once (shm_tx_flush); with MUT_FSND
 * it must fail as the lone commit does (a one-message pass suffices), and
 * MUT_EARLYBIT, a flush that looks at the bit at the pass's first publish
 * (before the later ones, with no fence) and only fences and rings at its
 * end, is refuted by a pass of several messages.
 *
 * D1R (util/futex.h, pt_wake_if_sleeping_fenced): a sender that finds
 * sleepers announced rings only if `rung` is clear, and sets it first (the
 * load, then RMW_XCHG 0 -> 1; the ring, pt_wake_all's seq bump, a separate
 * step after it: a sender preempted between the two delays the others'
 * wake-up, it never loses it). The sleeper clears `rung` after reading seq
 * and before sleepers++ (pt_announce).
 */

#ifndef NS
#define NS 2                   /* senders                                   */
#endif
#ifndef M
#define M 2                    /* messages per sender                       */
#endif
#ifndef LATE_MAX
#define LATE_MAX (NS * M + 2)  /* "pending" rechecks once the senders are done */
#endif
#define B(s) (1 << (s))
#define NONE NS                /* an empty active-list entry                */

/* ---- shared (the job region) ---------------------------------------------- */
byte tail[NS];          /* ring s -> r: written by s (R-TAIL), read by r  */
byte hd[NS];            /* r's head of ring s: written by r (R-HEAD)      */
byte ent[NS * M];       /* ring entries: message numbers, 1..M            */
byte word;              /* r's bitmap word: bit s = sender s has work     */
byte sum;               /* r's summary word: bit 0 = the word may have new bits */
byte sleepers;          /* r's bell.sleepers                              */
bit rung;               /* r's bell.rung (D1R)                            */
byte seq;               /* r's bell.seq as a futex (wait.pml's encoding:
                         * bit _pid set = read and not woken since)       */
byte sdone;             /* senders that committed all their messages      */

/* ---- the receiver's private state (x->act, x->listed, q->ctail) ------------ */
byte act[NS];
byte nact;
byte listed;            /* bit s: s is in act                             */
byte ctail[NS];         /* the tail it last loaded (q->ctail)             */

#define BIT (1 << _pid)
#define READ_SEQ seq = seq | BIT
#define FUTEX_WAIT ((seq & BIT) == 0)

inline ring() {          /* pt_wake_all: seq bump + FUTEX_WAKE */
    seq = 0
}

/* ---- sender --------------------------------------------------------------- */

/* The entry (and the buffer, private until then) and the tail's
 * ST_RELEASE: R-TAIL, one step. */
#define R_TAIL(s, m) d_step { ent[(s) * M + tail[s]] = (m); tail[s]++ }

/* shm_commit, then pt_wake_if_sleeping_fenced (D1). Under BATCH this is
 * the pass's last message and tx_flush: the earlier ones only published. */
inline commit(s, m) {
#ifdef MUT_FSND
    lb = word & B(s);                  /* loaded before R-TAIL is visible */
    if
    :: !lb ->
        R_TAIL(s, m);                  /* drained by B-SET (an RMW) */
        word = word | B(s);            /* B-SET */
        ls = sum;
        if :: !ls -> sum = 1 :: else fi;
        ls = sleepers
    :: else ->
        ls = sleepers;                 /* D1's load passes R-TAIL too */
        R_TAIL(s, m)
    fi;
#else
    R_TAIL(s, m);
    /* F-SND: FENCE_FULL */
    lb = word & B(s);
    if
    :: !lb ->
#ifdef MUT_BSET
        ls = sum;                      /* passes the buffered B-SET */
        word = word | B(s);
#else
        word = word | B(s);            /* B-SET: RMW_OR, a full fence */
        ls = sum;
#endif
#ifndef MUT_SSET
        if :: !ls -> sum = 1 :: else fi /* S-SET: RMW_OR */
#else
        skip
#endif
    :: else
    fi;
    ls = sleepers;                     /* D1, after F-SND or the RMWs */
#endif
    /* (polled is 0: nobody polls for r) D1R: the load of rung, then the
     * XCHG; ring only if it read 0 */
    if
    :: ls > 0 ->
        lb = rung;
        if
        :: !lb -> d_step { lb = rung; rung = 1 };   /* RMW_XCHG */
                  if :: !lb -> ring() :: else fi
        :: else
        fi
    :: else
    fi;
    lb = 0; ls = 0
}

proctype Sender(byte s)
{
    byte m = 1;
    byte lb, ls;
#ifdef BATCH
    /* PTL_SHM_RING_BATCH (drain_cmds' pass, shm_tx_flush): any split of
     * the M messages into passes. Within a pass the commits publish
     * (R-TAIL) with nothing else in between; its last one is followed by
     * the flush, which fences once, sets the bit and rings, as a lone
     * commit does after its R-TAIL; the last message ends a pass. Under
     * MUT_FSND a pass's last publish passes those loads. */
    bit inpass = 0;
    do
    :: m < M -> R_TAIL(s, m);
#ifdef MUT_EARLYBIT
       if :: !inpass ->
           lb = word & B(s);
           if :: !lb -> word = word | B(s); ls = sum; if :: !ls -> sum = 1 :: else fi :: else fi;
           lb = 0; ls = 0
       :: else fi;
#endif
       inpass = 1; m++     /* the pass goes on */
    :: m <= M ->
#ifdef MUT_EARLYBIT
       if :: inpass ->
           R_TAIL(s, m);
           ls = sleepers;
           if :: ls > 0 -> lb = rung; if :: !lb -> d_step { lb = rung; rung = 1 }; if :: !lb -> ring() :: else fi :: else fi :: else fi;
           lb = 0; ls = 0
       :: else -> commit(s, m)
       fi;
#else
       commit(s, m);
#endif
       inpass = 0; m++    /* the pass ends: tx_flush */
    :: m > M -> break
    od;
#else
    do
    :: m <= M -> commit(s, m); m++
    :: m > M -> break
    od;
#endif
    sdone++
}

/* ---- receiver ------------------------------------------------------------- */

inline rx_list(x) {
#ifndef MUT_LIST
    if
    :: listed & B(x) -> skip
    :: else ->
#endif
        k = 0;
        do
        :: k < nact -> assert(act[k] != x); k++   /* never listed twice */
        :: k >= nact -> break
        od;
        k = 0;
        act[nact] = x;
        nact++;
        listed = listed | B(x)
#ifndef MUT_LIST
    fi
#endif
}

/* rx_pickup: for the (one) summary bit that is set, clear it (RMW_AND) and
 * list every sender whose bit is set in the word (LD_ACQUIRE). */
inline rx_pickup(added) {
    added = nact;
    lw = sum;                                   /* LD_RELAXED */
    if
    :: lw ->
#ifdef MUT_SWAP
        lw = word;                              /* the word first ... */
        sum = 0;                                /* ... then S-CLR */
#else
        sum = 0;                                /* S-CLR: RMW_AND (D-SUM, receiver side) */
        lw = word;                              /* LD_ACQUIRE */
#endif
        x = 0;
        do
        :: x < NS -> if :: lw & B(x) -> rx_list(x) :: else fi; x++
        :: x >= NS -> break
        od;
        x = 0
    :: else
    fi;
    added = nact - added;
    lw = 0
}

/* The scan of shm_peek over the active list: rx_look (A-TAIL only when the
 * cached tail is used up), and the engine consumes what it returns
 * (shm_release: R-HEAD). */
inline rx_scan(found) {
    i = 0;
    do
    :: i < nact ->
        x = act[i];
        if
        :: hd[x] == ctail[x] -> lt = tail[x]; ctail[x] = lt    /* A-TAIL */
        :: else
        fi;
        if
        :: hd[x] != ctail[x] ->
            d_step {                                          /* consume */
                assert(hd[x] < tail[x]);                      /* committed, not consumed */
                assert(ent[x * M + hd[x]] == hd[x] + 1);      /* in order, once */
                hd[x]++                                       /* R-HEAD */
            };
            found = 1;
            break
        :: else -> i++
        fi
    :: i >= nact -> break
    od;
    i = 0; x = 0; lt = 0
}

/* rx_drop: for every listed sender whose ring looks empty: B-CLR, FENCE_FULL,
 * reload the tail; moved: set the bit again and stay listed; else unlist. */
inline rx_drop() {
    i = 0;
    do
    :: i < nact ->
        x = act[i];
        if
        :: hd[x] != ctail[x] -> i++
        :: else ->
#if defined(MUT_RELOAD)
            word = word & ~B(x);                 /* B-CLR */
            lt = hd[x];                          /* no reload: "still empty" */
#elif defined(MUT_BCLR)
            lt = tail[x];                        /* the reload passes the clear */
            word = word & ~B(x);
#else
            word = word & ~B(x);                 /* B-CLR: RMW_AND, then FENCE_FULL */
            lt = tail[x];                        /* LD_ACQUIRE (A-TAIL) */
#endif
            if
            :: lt != hd[x] -> word = word | B(x); i++   /* RMW_OR: stays listed */
            :: else ->
                d_step {
                    listed = listed & ~B(x);
                    nact--;
                    act[i] = act[nact];
                    act[nact] = NONE
                }
            fi;
            lt = 0
        fi
    :: i >= nact -> break
    od;
    i = 0; x = 0
}

/* The code drops idle senders only after PT_SHM_DROP_PEEKS empty peeks in a
 * row (or at once with more than PT_SHM_DROP_LISTED listed): an empty peek
 * may or may not drop. */
inline maybe_drop() {
    if
    :: rx_drop()
    :: skip
    fi
}

/* shm_peek: at most two passes; the second only if the pickup after the
 * drop listed somebody. */
inline peek(found) {
    found = 0;
    rx_pickup(added);
    rx_scan(found);
    if
    :: !found ->
        maybe_drop();
        rx_pickup(added);
        if
        :: added ->
            rx_scan(found);
            if
            :: !found -> maybe_drop(); rx_pickup(added)
            :: else
            fi
        :: else
        fi
    :: else
    fi;
    added = 0
}

/* shm_rx_pending: any summary bit set, or a set bit whose ring's tail is not
 * the shared head. */
inline rx_pending(w) {
    w = 0;
#ifndef MUT_PENDSUM
    lw = sum;                                   /* LD_ACQUIRE */
    if :: lw -> w = 1 :: else fi;
#endif
    if
    :: !w ->
        lw = word;                              /* LD_ACQUIRE */
        x = 0;
        do
        :: x < NS && !w ->
            if
            :: lw & B(x) -> lt = tail[x]; if :: lt != hd[x] -> w = 1 :: else fi   /* A-TAIL */
            :: else
            fi;
            x++
        :: x >= NS || w -> break
        od
    :: else
    fi;
    x = 0; lw = 0; lt = 0
}

proctype Nic()
{
    byte i, k, x, lw, lt, added, late;
    bool found, w;
    do
    :: /* S1: run the engine (the token is always free: no API thread) */
       do
       :: peek(found);
          if
          :: found -> skip
          :: else ->
              if
              :: true -> break                  /* idle: arm */
              :: true -> skip                   /* spin on (PTL_NIC_SPIN_US) */
              fi
          fi
       od;
       found = 0;
       /* S2 */
       READ_SEQ;
#if !defined(MUT_RUNG) && !defined(MUT_RUNGLATE)
       rung = 0;                                /* pt_announce: D1R's clear */
#endif
#ifdef MUT_S2
       rx_pending(w);
       sleepers++;
#else
       sleepers++;                              /* RMW_ADD: full fence */
       rx_pending(w);
#endif
#ifdef MUT_RUNGLATE
       rung = 0;
#endif
       if
       :: w ->
           sleepers--;
           if
           :: sdone == NS -> late++; assert(late <= LATE_MAX)
           :: else
           fi;
           w = 0
       :: else ->
end_S3:    FUTEX_WAIT;                           /* futex_wait(seq), no timeout */
           sleepers--
       fi
    od
}

/* When nobody can move: every message committed and consumed. */
active proctype Monitor()
{
    byte y;
end_M:
    timeout ->
    assert(sdone == NS);
    y = 0;
    do
    :: y < NS -> assert(tail[y] == M && hd[y] == M); y++
    :: y >= NS -> break
    od
}

init
{
    byte s;
    atomic {
        s = 0;
        do
        :: s < NS -> act[s] = NONE; s++
        :: s >= NS -> break
        od;
        s = 0;
        do
        :: s < NS -> run Sender(s); s++
        :: s >= NS -> break
        od;
        run Nic()
    }
}
