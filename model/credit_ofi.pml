/*
 * credit_ofi.pml - SPIN model of the credit wait over libfabric
 * (docs/waiting.md, "Stalled on credits", "Over ofi"): a sender whose only
 * work is a command stalled on credits sleeps on the CQ's descriptor, and
 * the credits' return, a message from the receiver, wakes it.
 * Code: transport/ofi.c (ofi_reserve: CE-ARM; take_credits and
 * pt_ofi_mark_dead: CE-BUMP; ofi_stall_armed: CE-LOOK; ofi_stall_clear;
 * ofi_rx_pending: the trywait), engine/nic.c (drain_cmds: C-SKIP and the
 * retry; pt_nic_local_work: C-RECHECK), engine/wait.c (the sleep, D3).
 *
 * Two threads of the sending process (the NIC thread and an application
 * thread: either may hold the engine token, either may sleep) send M
 * messages to a receiver with D credits. The receiver returns one credit per
 * message it consumed, as a message: it lands in the sender's CQ (cq) and
 * signals the CQ's wait object (below). A
 * thread holding the token runs passes; a pass reads the CQ (CE-BUMP for
 * credits taken) and then drains the command (C-SKIP, or stall_clear and a
 * retry: send, or CE-ARM). Leaving, the holder releases the token (D3's
 * fence) and rechecks for work; it sleeps (S2, then C-RECHECK with its
 * trywait) only when there is none.
 *
 * The rule, as built:
 *   CE-ARM   reserve, no credits after its CQ read: if nothing is armed
 *            since stall_clear, arm = the epoch now (ST_RELEASE); NULL
 *   CE-BUMP  a CQ read that takes credits: epoch++ (ST_RELEASE)
 *   CE-LOOK  stall_armed: armed and arm's epoch == epoch (LD_ACQUIRE both)
 *   work     a command not stalled, or stalled and not CE-LOOK; or the CQ
 *            not empty (rx_pending: fi_trywait refuses the sleep)
 * Memory model: sequentially consistent. The fences that make the code so
 * are the sleepers' S2 RMW and the releaser's D3 (model/wait.pml models
 * them with store buffering and their mutants); this model checks the
 * epoch rule itself.
 *
 * Checks (safety run): when nobody can move, all M messages were sent and
 * every credit came home (the Monitor); a thread asleep then, with a message
 * unsent, is a lost wake-up.
 *
 * The CQ's descriptor (rxm's wait object): a completion written to the CQ
 * signals it (sig = 1); only a trywait resets it, and fi_trywait refuses
 * (the sleeper has work) while the CQ holds a completion. A CQ read leaves
 * the signal alone.
 *
 * Mutants (tests/model/run-spin requires a counterexample for each):
 *   MUT_NOBUMP   credits taken without CE-BUMP: the stall still looks armed
 *   MUT_ARMLATE  reserve arms after its CQ read without looking at the
 *                credits again (a credit that read brought is slept on)
 *   MUT_NOCQ     the trywait resets the signal without looking at the CQ
 */

#ifndef M
#define M 3                    /* messages                                  */
#endif
#ifndef D
#define D 1                    /* credits                                   */
#endif

byte cq;                /* credit messages in the sender's CQ, unread     */
byte cred = D;          /* credits the sender holds (token holder)        */
byte sent;              /* messages sent (token holder)                   */
byte ret;               /* credits the receiver returned                  */
byte epoch;             /* CE-BUMP: raised as credits are taken           */
bit armed;              /* CE-ARM: a stall armed since stall_clear ...    */
byte aep;               /* ... at this epoch                              */
bit stalled;            /* the command at the ring's head is stalled (stall_at) */
bit token;              /* the engine token                               */
bit sig;                /* the CQ's wait object is signalled              */

/* CE-LOOK: a command to send that is not stalled-and-armed
 * (pt_nic_local_work; the CQ is rx_pending's, below) */
#define CMDWORK (sent < M && !(stalled && armed && aep == epoch))

inline cq_read()
{
    do
    :: cq > 0 ->
        d_step {
            cq--;
            cred++;
#ifndef MUT_NOBUMP
            epoch++             /* CE-BUMP */
#endif
        }
    :: else -> break
    od
}

inline pass()
{
    cq_read();                                  /* ofi_peek's CQ read */
    /* drain_cmds */
    if
    :: sent >= M -> skip
    :: sent < M && stalled && armed && aep == epoch -> skip      /* C-SKIP */
    :: else ->
        armed = 0;                                               /* stall_clear */
        /* the retry: ofi_reserve */
        if
        :: cred > 0 -> cred--; sent++; stalled = 0               /* sent */
        :: else ->
#ifdef MUT_ARMLATE
            cq_read();                          /* its CQ read, then no new look */
#else
            cq_read();                          /* its CQ read ... */
            if
            :: cred > 0 -> cred--; sent++; stalled = 0; goto done /* ... brought one */
            :: else -> skip
            fi;
#endif
            if
            :: !armed -> armed = 1; aep = epoch                   /* CE-ARM */
            :: else -> skip
            fi;
            stalled = 1
        fi
    fi;
done:
    skip
}

proctype Thread()
{
    bit w;
    do
    :: atomic { token == 0 -> token = 1 };      /* take the engine (CAS) */
       pass();
       /* leave: D3 (release, fence), then the releaser's recheck */
       token = 0;
       w = CMDWORK || cq > 0;
       if
       :: w -> skip                             /* work left: take it again */
       :: else ->
           /* S2: announce (RMW: full fence); C-RECHECK; then rx_pending's
            * fi_trywait, one step under the provider's CQ lock: it refuses
            * while a completion is queued, else resets the signal */
           if
           :: CMDWORK -> skip
           :: else ->
#ifdef MUT_NOCQ
               d_step { sig = 0; w = 0 };       /* resets without a look */
#else
               d_step { if :: cq > 0 -> w = 1 :: else -> sig = 0; w = 0 fi };
#endif
               if
               :: w -> skip
               :: else ->
end_T:             (sig == 1)                   /* poll() on the descriptor */
               fi
           fi
       fi;
       w = 0
    od
}

proctype Receiver()
{
    do
    :: ret < sent -> d_step { ret++; cq++; sig = 1 }   /* a credit returned by message */
    :: ret == M -> break
    od
}

active proctype Monitor()
{
end_M:
    timeout ->
    assert(sent == M && ret == M && cq == 0)
}

init
{
    atomic {
        run Thread();
        run Thread();
        run Receiver()
    }
}
