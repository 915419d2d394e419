/*
 * park.pml - SPIN model of the park rule (docs/waiting.md, "Parked for a
 * match"): a request that arrived before the match entry it is meant for
 * waits in its queue (PTL_NOMATCH_WAIT_US) and is no work for the engine's
 * sleepers until a command that can change what it matches has run, while
 * every other arrival still is.
 * Code: engine/target.c (pt_req_handle: pt_nic_park_note), engine/nic.c
 * (drain_rx: park_publish; rx_work in pt_nic_has_work), engine/cmd.c
 * (match_gen), transport/shm.c (shm_rx_pending_beyond), engine/wait.c
 * (S2, D2, D3 as in wait.pml).
 *
 * One receiving rank: its NIC thread E (offload) or, with -DHOST=1, no NIC
 * thread (its application thread is the engine's only sleeper). Two
 * senders of other ranks: A sends NA requests that match only once the
 * receiver's application has attached their entry; B sends one request
 * that matches at once. The receiver's application P attaches the entry
 * (one command) and, with -DHOST=1, then waits for every request to be
 * delivered. Nobody's sleep has a timeout: the wait of a parked request
 * never ends here, so the command alone must get it delivered (with its
 * end, the real engine also sleeps no longer than the wait: not modelled,
 * a stronger property without).
 *
 * The rule, as built:
 *   holder, a pass (poll_once): drain_cmds: a command runs, match_gen++
 *     (a matching command); drain_rx (skipped in a send poll, the
 *     application's pt_nic_poll_send: -DSENDPOLL=1 lets P's passes skip
 *     it): the oldest request of each sender is handled or, unmatched,
 *     parked (pt_nic_park_note); at the end park_publish writes park_gen =
 *     match_gen, then park_n = the count (relaxed stores; a sleeper may
 *     read them torn, its fence before them like every other work source)
 *   sleeper's recheck (S2, W2, D3's kick), after its full fence: rx_work:
 *     park_n != 0 and park_gen == match_gen: arrivals but A's requests
 *     (rx_pending_beyond); else every arrival (rx_pending). Commands are
 *     work of their own (pt_nic_local_work).
 *   D1 (senders): commit, F-SND, load sleepers, ring if any.
 *   D2 (P's command): commit, fence, then take the engine and run it (then
 *     R-TOK, D3: fence, load sleepers, recheck, ring) or load sleepers and
 *     ring if any.
 *
 * Checks (safety run; `timeout` = nobody can move): every request was
 * delivered, exactly once and in its sender's order; the NIC thread is
 * asleep then (its valid end), the application has ended.
 *
 * Mutants (tests/model/run-spin requires a counterexample for each):
 *   MUT_NOGEN    the recheck ignores match_gen: a park stays no work after
 *                the command that can match it ran in a pass without
 *                drain_rx (a send poll), so nobody runs it again
 *   MUT_ALLRX    with a park, no arrival is work (B's request beside A's
 *                parked one is lost to a sleeper that announced after B
 *                looked for sleepers)
 *   MUT_GENLATE  the park is published after the engine is released, with
 *                match_gen read then: a command another holder ran in
 *                between looks run before the park (offload: in host mode
 *                the application is the only holder)
 * and SHOW_SLEEP, which must fail too: the NIC thread does go to sleep with
 * A's request parked (the rule is not vacuous).
 */

#ifndef NA
#define NA 2                   /* A's requests                               */
#endif
#ifndef HOST
#define HOST 0                 /* 1: no NIC thread; P is the engine sleeper  */
#endif
#ifndef BFIRST
#define BFIRST 1               /* P waits for B's request before it attaches */
#endif
#ifndef SENDPOLL
#define SENDPOLL 1             /* P's own passes may skip drain_rx           */
#endif

/* ---- shared ----------------------------------------------------------------- */
byte ta, ha;            /* A's request queue: tail (A), head (the holder)   */
bit tb, hb;             /* B's: one request                                 */
bit cmdq;               /* P's command ring: the attach, not yet run        */
bit attached;           /* [E] the entry exists (the command ran)           */
byte gen;               /* [E] match_gen                                    */
byte park_gen;          /* [E] park_gen                                     */
bit park_n;             /* [E] park_n (A alone can be parked)               */
bit token;              /* the engine token                                 */
byte sl;                /* the engine bell's sleepers                       */
bit seq;                /* the bell's futex word: 1 = read by a sleeper and
                         * not bumped since (pt_wake_all clears it)         */
bit pdone;

inline ring() { seq = 0 }

/* Work for a sleeper, after its fence (pt_nic_has_work). */
inline has_work(w)
{
    if
    :: cmdq -> w = 1
    :: else ->
        lp = park_n;
        lg = park_gen;
        if
#ifdef MUT_NOGEN
        :: lp ->                                 /* match_gen not compared */
#else
        :: lp && lg == gen ->
#endif
#ifdef MUT_ALLRX
            w = 0
#else
            w = (tb != hb)                       /* rx_pending_beyond: A left out */
#endif
        :: else -> w = (ta != ha || tb != hb)   /* rx_pending */
        fi;
        lp = 0; lg = 0
    fi
}

/* A pass of the engine by its holder (poll_once). withrx: drain_rx runs;
 * np: it parked A's request (its park_publish: publish() below). */
inline pass(withrx)
{
    if
    :: cmdq -> d_step { attached = 1; cmdq = 0 }; gen++   /* drain_cmds; match_gen */
    :: else
    fi;
    np = 2;                                             /* 2: no drain_rx */
    if
    :: withrx ->
        np = 0;
        if
        :: ta != ha ->                                      /* A's oldest request */
            if
            :: attached -> d_step { assert(ha < NA); ha++ }  /* delivered, in order */
            :: else -> np = 1                               /* parked */
            fi
        :: else
        fi;
        if
        :: tb != hb -> hb = 1                               /* B's: delivered */
        :: else
        fi
    :: else
    fi
}

/* park_publish, at the end of drain_rx: match_gen, then the count. */
inline publish()
{
    if
    :: np < 2 && (np || park_n) ->
        park_gen = gen;
        park_n = np
    :: else
    fi;
    np = 0
}

/* pass, publish, release: the engine run once by a holder (GENLATE: the
 * publish after the release; R-TOK then D3 in release()). */
inline run_engine(withrx, d3)
{
    pass(withrx);
#ifdef MUT_GENLATE
    token = 0;
    publish();
    if :: d3 -> release_d3() :: else fi
#else
    publish();
    token = 0;
    if :: d3 -> release_d3() :: else fi
#endif
}

/* D3, after R-TOK: fence, sleepers, recheck, ring. */
inline release_d3()
{
    /* FENCE_FULL (D3) */
    if
    :: sl > 0 && token == 0 ->
        has_work(w);
        if :: w -> ring() :: else fi;
        w = 0
    :: else
    fi
}

proctype SenderA()
{
    byte ls;
    do
    :: ta < NA ->
        ta++;                                   /* commit (R-TAIL) */
        /* F-SND */
        ls = sl;
        if :: ls > 0 -> ring() :: else fi;      /* D1 */
        ls = 0
    :: else -> break
    od
}

proctype SenderB()
{
    byte ls;
    tb = 1;
    ls = sl;
    if :: ls > 0 -> ring() :: else fi;
    ls = 0
}

/* The receiver's application. BFIRST: it first waits for B's request (as
 * mp_nomatch park's rank 2 does), then attaches the entry; with HOST=1 it
 * then waits for every request. Waiting in offload mode is not the
 * engine's (its waiters sleep on the event word, rung by the engine: D6);
 * in host mode it is W1 (run the engine) and W2 (announce, recheck, sleep)
 * of the engine's only sleeper. */
inline app_wait(cond)
{
#if HOST
    do
    :: cond -> break
    :: else ->
        if
        :: atomic { token == 0 -> token = 1 } ->
            run_engine(1, 1)
        :: true ->
            seq = 1;
            sl++;                               /* W2: full fence */
            if
            :: cond -> sl--                     /* the event came */
            :: else ->
                if
                :: token == 0 -> has_work(w)
                :: else -> w = 0
                fi;
                if
                :: w -> sl--
                :: else ->
                    (seq == 0);                 /* futex_wait, no timeout */
                    sl--
                fi;
                w = 0
            fi
        fi
    od
#else
    (cond)                                      /* PtlEQWait, rung by D6 */
#endif
}

proctype App()
{
    bit w, lp, withrx;
    byte lg, ls, np;
#if BFIRST
    app_wait(hb);
#endif
    cmdq = 1;                                   /* commit */
    /* fence (D2) */
    if
    :: atomic { token == 0 -> token = 1 } ->    /* D2 take: run it ourselves */
        if
        :: SENDPOLL -> withrx = 0               /* pt_nic_poll_send */
        :: true -> withrx = 1
        fi;
        run_engine(withrx, 1)
#if !HOST
    :: true ->                                  /* D2: ring a sleeper */
        ls = sl;
        if :: ls > 0 -> ring() :: else fi;
        ls = 0
#endif
    fi;
#if HOST
    app_wait(ha == NA && hb);
#endif
    pdone = 1
}

#if !HOST
/* The NIC thread: S1 (take, run), S2 (announce, recheck), S3 (sleep). */
proctype Nic()
{
    bit w, lp, held;
    byte lg, np;
    do
    :: /* S1 */
        if
        :: atomic { token == 0 -> token = 1 } ->
            run_engine(1, 0)                    /* plain R-TOK: S2 rechecks */
        :: else
        fi;
        /* S2 */
        seq = 1;
        sl++;                                   /* full fence */
        held = token;
        if
        :: !held -> has_work(w)
        :: else -> w = 0
        fi;
        if
        :: w -> sl--
        :: else ->
#ifdef SHOW_SLEEP
            /* must fail: the NIC thread does sleep with A's request parked
             * (the rule is not vacuous) */
            assert(!(ta != ha && !attached));
#endif
end_S3:     (seq == 0);                         /* S3: no timeout */
            sl--
        fi;
        w = 0; held = 0
    od
}
#endif

active proctype Monitor()
{
end_M:
    timeout ->
    assert(pdone && ta == NA && ha == NA && tb && hb)
}

init
{
    atomic {
        run SenderA();
        run SenderB();
        run App();
#if !HOST
        run Nic()
#endif
    }
}
