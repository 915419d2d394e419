/*
 * wait.pml - SPIN model of libportals' waiting protocol (engine/wait.[ch],
 * the transport's D1 in transport/shm.c and util/futex.h).
 *
 * Two ranks. Each rank has NAPP application threads and, in offload mode
 * (OFFLOAD=1), a NIC thread. Application thread a of rank 0 ping-pongs ROUNDS
 * times with application thread a of rank 1: it posts a put command, waits
 * for the event of the answer; rank 1's thread waits for the ping's event and
 * posts the answer. Then rank 0 gets from rank 1, whose application does not
 * wait for it (see App). Whoever holds a rank's engine token polls: a command
 * becomes a message in the peer's receive queue (D1), a received message
 * becomes an event in its thread's EQ (D6), a get request is answered.
 *
 * What SPIN checks (safety run, with `timeout` as "nobody can move"):
 *   - mutual exclusion: the engine runs on one thread at a time (assert in
 *     poll);
 *   - no lost wake-up: the system never reaches a state where nobody can
 *     move while a command, a message or an event is pending, or while an
 *     application has not finished (the `timeout` monitor and invalid end
 *     states: only a NIC thread asleep on its doorbell is a valid end);
 *   - every application finishes all ROUNDS (done == 2 * NAPP at the end).
 *
 * Memory model. SPIN interleaves statements sequentially consistently; every
 * shared access below is one statement, as in the code (one load or store or
 * RMW each). The code's full fences (FENCE_FULL, or an RMW used as one) are
 * what make x86-TSO and C11 behave like this interleaving at each
 * store->load pair. To show that each fence is needed, the build defines
 * MUT_<label> remove one: the store is then made visible only after the loads
 * that follow it (what a store buffer does), and SPIN must find a lost
 * wake-up. tests/model/run-spin runs the model in both modes and every
 * mutant, and fails if a mutant passes.
 *
 * Labels (engine/wait.h): S1-S3 NIC thread, W1-W3 API waiter, D1-D6 rules.
 *
 * FDWAIT=1: the transport has a wait descriptor (the ofi transport,
 * docs/waiting.md "Sleeping on a descriptor"). Peers never ring: a publish
 * makes the receiver's descriptor readable (fdrdy, libfabric's CQ wait fd
 * after a successful fi_trywait), an engine poll reads the CQ (clears it),
 * and the S2/W2/D3 checks see arrivals through has_work (rx_pending's
 * fi_trywait). Rings by the rank itself bump seq and write its eventfd
 * (evfdw); engine sleepers drain it, compare seq, then block until fdrdy or
 * evfdw (ppoll: the wait does not look at seq). MUT_FDDRAIN drains after the
 * comparison: SPIN must find the lost wake-up (host mode, two threads: an
 * event post's ring between a waiter's comparison and its drain).
 *
 * FDWAIT=1 in offload mode: the CQ belongs to the thread that holds the
 * engine. A NIC thread whose S2 finds the token held does not poll the
 * descriptor (the holder reads the CQ; its readiness would only spin the
 * NIC thread): it sleeps on the eventfd alone (S3b). The holder's release
 * (D3/D4, kick) then owes it the descriptor: it rings (D5), and the NIC
 * thread comes back to S1/S2 and, the token free, polls the descriptor
 * after its own fi_trywait. Every sleep is marked (F1, before its
 * announcement: fdless[r]), on the descriptor too. The mark holds the seq
 * S2 read: a releaser rings only while it is current (no ring has reached
 * that sleep yet), once per sleep, and looks for no work first (the woken
 * NIC thread's S2 does). For a sleep on the descriptor the look it spares
 * is fi_trywait, which armed the wait object again at every release while
 * an application thread polled (a signal per completion). Mutants:
 * MUT_FDLEAVE (the holder leaves without the hand-over ring), MUT_FDSLEEP
 * (the NIC thread sleeps on the eventfd alone even when nobody holds the
 * token), MUT_F1 (the fdless mark stored after the token's load, as a store
 * buffer would let it pass the RMW's load), MUT_FDMARK (the mark made with
 * a seq read before S2's: releasers take a ring of the last sleep for one
 * of this one and skip theirs).
 *
 * LEASE=1 (offload without FDWAIT, as in the code: the default there): the
 * poll lease (docs/waiting.md "The poll lease"). A waiter that leaves with its event offers its count in
 * polled as the rank's one lease (L1: CAS lease 0->1, then the load of
 * `untimed`; set: take it back and lower polled as D4). The next waiter
 * adopts it in W1 (L2: CAS 1->0, no RMW on polled). The NIC thread stores
 * untimed = 1 before S2's fence (T1) and loads `lease` after it; it sleeps
 * with a timeout (tmd) if it saw a lease, and otherwise as it likes (in the
 * code: a waiter polling, or busy lately); only then may a lease end its
 * sleep, and the NIC thread ends the lease (L2: CAS 1->0, polled--), then
 * goes straight to S2. Ending a lease early is always allowed (it is D4
 * done by the NIC thread), so the model lets the NIC thread end one at any
 * wake from a timed sleep. Mutants: MUT_L1 (the waiter's load of untimed
 * passes its CAS), MUT_T1 (the NIC thread's store of untimed passes its
 * load of lease), MUT_TIMED (the NIC thread sleeps without a timeout even
 * with a lease out): each leaves a lease that nobody will end (the Monitor
 * asserts none is left: peers would never ring that rank again).
 *
 * POLLEASE=1 (LEASE; the code's LP, a NIC thread with a core of its own,
 * PTL_NIC_LEASE_POLL): before S2 the NIC thread that sees a lease out polls
 * for it (back to S1, no announcement; at most PL times in a row, the
 * code's lease_max_ns), goes on to S2 leaving it out (a lease younger than
 * a period, or the token held: T1 then sleeps timed), or ends it (L2: CAS
 * 1->0, polled--) and goes on to S2; a timed wake leaves the lease to that
 * step (the code's sleep-on while the lease is renewed is one longer timed
 * sleep here). Ages and stamps are not modelled: any choice at any time. Polling is never a
 * hazard (the NIC thread stays awake); ending the lease is, and mutant
 * MUT_LPEND (it ends the lease but leaves its count in polled) leaves
 * peers that never ring this rank again.
 *
 * SPINGET=1: a waiter may also leave after a look that found nothing,
 * offering its count as the lease (L1), and look again (W1, adopting it):
 * the PtlEQGet spinner (pt_wait_look), whose every look leaves a lease.
 *
 * DEFER=1 (the code when the job has more ranks than cores; then LEASE=0 and
 * FDWAIT=0, as there): S2W. The NIC thread loads `want` after S2's fence and
 * sleeps despite pending work while an API thread wants the engine: that
 * thread takes the token and does the work, and when it leaves it drops
 * want, then D4/D3 (an RMW or fence before its load of sleepers) and kicks.
 * The pair is a store-buffering pair like S2/D3: the NIC thread's announce
 * and its load of want against the waiter's want-- and its load of
 * sleepers. Mutant MUT_S2W (the load of want before the fence): the NIC
 * thread sees an old want, the waiter an old sleepers count, and the work
 * waits for ever.
 *
 * D1R (util/futex.h; model/region.pml checks it with several senders): D1
 * rings only if the bell's `rung` was clear, set by the same RMW_XCHG (the
 * code's load before it reads what the XCHG would); every announcement on
 * the bell clears it first (pt_announce: S2, and W2 in host mode, whose
 * event sleepers are the bell's). Mutant MUT_RUNGW2: W2 does not clear it.
 *
 * NOINLINE=1 (offload, PTL_CMD_INLINE 0: the NIC thread has a core of its
 * own): submit never runs the engine; it posts the command, fences (D2) and
 * rings the NIC thread if it announced a sleep and nobody holds the engine.
 * D2 pairs with S2 as in the inline submit, whose try_take is replaced by
 * the loads of sleepers and token. Mutants MUT_NI: submit never rings (the
 * command waits for a NIC thread asleep without a timeout); MUT_D2NI: the
 * loads pass the commit (no D2).
 *
 * SOLO=1 (host mode, one application thread per rank: the code's SO,
 * engine/life.h "One API thread"): the process's only API thread takes the
 * token with a plain load and store (two steps, no RMW) and releases it
 * without D3's fence, and its polls skip D6's fence: the loads of D3 and D6
 * pass the stores before them, as in mutants MUT_D3 and MUT_D6. The model
 * must still pass: those fences pair only with other application threads of
 * the same rank (S2/W2 on the bell, W2W), and there are none. kick's own
 * release (its drain) is this thread's token alone too; no other thread
 * loads it, so its order is not observable. The revocation when a second
 * thread starts (SO-V, SO-F, SO-A) is the L-E/L-F pattern of life.h and is
 * not modelled. Mutant MUT_SOLO2: SO with two application threads per rank
 * (no revocation): SPIN must find the lost wake-up.
 *
 * ASYM=1 (host mode: the code's AF, transport/shm.c "F-SND, asymmetric";
 * docs/waiting.md "D1 without the sender's fence"): a sender's D1 has no
 * fence, so its loads of the receiver's sleepers and polled may pass its
 * publish, as in mutant MUT_D1; the sender is "in the window" (win[r])
 * from those early loads until its publish lands. Every announcement on
 * the bell (W2: the host-mode engine sleepers) is followed by a global
 * membarrier (AF-M) before its recheck: every sender of the job runs a
 * full barrier, so a publish still in its store buffer lands first. Here:
 * the membarrier step waits until the other rank is out of its window
 * (its publish is one step, never blocked). Every publish is modelled so,
 * the ring's (which keeps its fence in the code) too: a superset of the
 * code's reorderings. Mutant MUT_AFM: no membarrier after W2's
 * announcement (that is MUT_D1): SPIN must find the lost wake-up.
 */

#ifndef OFFLOAD
#define OFFLOAD 1
#endif
#ifndef NAPP
#define NAPP 1
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef GET
#define GET 1                  /* rank 0 ends with a get rank 1 never waits for */
#endif
#ifndef FDWAIT
#define FDWAIT 0               /* 1: sleep on the transport's descriptor */
#endif
#ifndef LEASE
#define LEASE (OFFLOAD && !FDWAIT) /* the poll lease (offload mode, no descriptor) */
#endif
#ifndef POLLEASE
#define POLLEASE 0             /* 1: LP, the NIC thread polls while a lease is out (LEASE) */
#endif
#ifndef PL
#define PL 2                   /* POLLEASE: S1 rounds in a row for one lease */
#endif
#ifndef SPINGET
#define SPINGET 0              /* 1: waiters may also leave after an empty look (PtlEQGet) */
#endif
#ifndef SPINFD
#define SPINFD 0               /* FDWAIT, offload: D5T, the spinner rule. The NIC thread's S2
                                * may (the spin_look hint, read before its mark) sleep on the
                                * eventfd alone with a timeout and mark the sleep timed
                                * (fdless 3); releasers skip the hand-over for it. SPINT
                                * such sleeps per NIC thread (the spinner stops looking) */
#endif
#ifndef SPINT
#define SPINT 2
#endif
#ifndef NOINLINE
#define NOINLINE 0             /* 1: PTL_CMD_INLINE 0 (a core of its own): submit
                                * posts and rings a sleeping NIC thread, never
                                * runs the engine itself (OFFLOAD) */
#endif
#ifndef DEFER
#define DEFER 0                /* 1: S2W, ranks outnumber cores (then no lease, no descriptor):
                                * the NIC thread sleeps at S2 despite work while an API thread
                                * wants the engine (want, read after S2's fence); that thread
                                * kicks it when it leaves (want--, then D4/D3) */
#endif
#ifndef SOLO
#define SOLO 0                 /* 1: SO, the only API thread's plain token, no D3/D6 fence */
#endif
#if SOLO
#if (OFFLOAD || NAPP != 1) && !defined(MUT_SOLO2)
#error "SOLO: host mode, one application thread per rank"
#endif
#define MUT_D3                 /* not a mutant here: SO's release has no fence */
#define MUT_D6                 /* nor its posts' D6 */
#endif
#ifndef ASYM
#define ASYM 0                 /* 1: AF, D1 without the sender's fence, W2 then a membarrier */
#endif
#if ASYM
#if OFFLOAD || FDWAIT
#error "ASYM: host mode over shared memory"
#endif
#define MUT_D1                 /* not a mutant here: the sender's loads pass its publish */
#endif
#define KICK_ROUNDS 1          /* PT_WAIT_KICK_ROUNDS (4 in the code) */
#define NT (2 * NAPP)          /* application threads in the job      */
#define Q(r, a) ((r) * NAPP + (a))

/* ---- shared state ---------------------------------------------------------- */
byte token[2];         /* 0 free, else holder's _pid + 1              */
byte want[2];
byte sleepers[2];      /* bell.sleepers (in the job region)           */
byte polled[2];        /* bell.polled                                 */
bit rung[2];           /* bell.rung (D1R)                             */
byte seq[2];           /* bell.seq as a futex: bit t set = thread t (by
                        * _pid) has read seq and not been woken since; a
                        * wake clears every bit (pt_wake_all: seq bump +
                        * FUTEX_WAKE); a sleeper blocks while its bit is
                        * set. Same behaviour as comparing against a
                        * counter, without the counter's states. */
byte evsl[2];          /* evw.sleepers (offload)                      */
byte evseq[2];         /* evw.seq, likewise                           */
byte cmdq[NT];         /* commands in thread (r,a)'s ring             */
bool cmdget[NT];       /* the pending command is a get (else a put)   */
byte getq[NT];         /* get requests for thread (r,a)'s MD in rank r's
                        * queues: the engine answers them itself      */
byte rxq[NT];          /* messages for thread (r,a) in rank r's queues */
byte evq[NT];          /* events in thread (r,a)'s EQ                 */
byte eqw[NT];          /* W2W: sleepers watching thread (r,a)'s EQ (pt_eqo.watchers):
                        * D6 rings only when an EQ it posted to has one */
byte in_engine[2];     /* threads inside poll (must stay <= 1)        */
byte done;             /* application threads finished                */
bool fdrdy[2];         /* FDWAIT: the transport's descriptor is readable */
bool evfdw[2];           /* FDWAIT: the rank's eventfd holds a ring         */
bool poller[2];        /* FDWAIT: an engine sleeper polls the descriptors (P1/P2,
                        * wait.c fd_wait); the others sleep on the futex       */
byte fdless[2];        /* FDWAIT, offload: the NIC thread's sleep mark (F1, every
                        * sleep: on the eventfd alone, or on the descriptor).
                        * The code's mark holds the seq its S2 read; here 2
                        * while that seq is current, 1 once the bell's seq
                        * has moved since (every bump of seq[r] turns 2 into
                        * 1: SEQ_BUMP), 0 no mark; SPINFD: 3 current and
                        * timed (PT_FDLESS_TIMED), turned into 1 likewise */
bool lease[2];         /* LEASE: polled[r] holds one count no waiter holds   */
bool untimed[2];       /* LEASE: the NIC thread may sleep without a timeout  */
bool win[2];           /* ASYM: rank r's engine did D1's loads, its publish not landed */

#if OFFLOAD
#define EVS(r)   evsl[r]
#define EVSEQ(r) evseq[r]
#define EVFD(r)  skip          /* evw is a plain futex */
#else
#define EVS(r)   sleepers[r]   /* host mode: event sleepers are the bell's */
#define EVSEQ(r) seq[r]
#define EVFD(r)  if :: FDWAIT -> evfdw[r] = 1 :: else fi  /* pt_wait_ring on the bell */
#endif

/* A bump of the bell's seq (pt_wake_all): every futex sleeper woken; an
 * fdless mark no longer current (the code compares the mark's seq with the
 * bell's: D5). One step, as the code's RMW. */
#if FDWAIT && OFFLOAD
#define SEQ_BUMP(r) d_step { seq[r] = 0; if :: fdless[r] >= 2 -> fdless[r] = 1 :: else fi }
#else
#define SEQ_BUMP(r) seq[r] = 0
#endif

/* The engine sleepers' wait on the bell (wait.c bell_wait): the futex, or
 * with FDWAIT fd_wait: one sleeper of the rank at a time takes the poller
 * role (P1, a CAS); it drains the eventfd, compares seq, and blocks in
 * ppoll until the descriptor or the eventfd is readable; then it gives the
 * role back (P2, an RMW) and, other sleepers announced, bumps seq (one of
 * them takes the descriptors over). The others wait on the futex. MUT_P1:
 * every sleeper polls (the code before the role): a ring drained by one
 * poller that read seq after it is lost to another asleep in ppoll. */
/* T1: a NIC thread asleep with a timeout (tmd) while a lease is out wakes
 * (the code: after PTL_WAIT_LEASE_US). */
#if LEASE
#define T1_WAKE(r) (tmd && lease[r])
#elif SPINFD && !defined(MUT_D5T)
#define T1_WAKE(r) tmd                   /* D5T: its timeout, any time */
#else
#define T1_WAKE(r) false
#endif

#if FDWAIT
#ifdef MUT_FDDRAIN
#define DRAIN_BEFORE(r)
#define DRAIN_AFTER(r)  evfdw[r] = 0;
#else
#define DRAIN_BEFORE(r) evfdw[r] = 0;
#define DRAIN_AFTER(r)
#endif
#ifdef MUT_P1
#define TAKE_POLLER(r) took = 1
#define GIVE_POLLER(r) skip
#else
#define TAKE_POLLER(r) d_step { if :: !poller[r] -> poller[r] = 1; took = 1 :: else -> took = 0 fi }
#define GIVE_POLLER(r) poller[r] = 0; if :: sleepers[r] > 1 -> SEQ_BUMP(r) :: else fi
#endif
#define FD_WAIT(r, lbl, rdy) \
    TAKE_POLLER(r); \
    if \
    :: took -> \
        DRAIN_BEFORE(r) \
        if \
        :: (seq[r] & BIT) == 0 -> skip \
        :: else -> DRAIN_AFTER(r) lbl: (rdy || evfdw[r] || T1_WAKE(r)) \
        fi; \
        GIVE_POLLER(r) \
    :: else -> lbl##f: (FUTEX_WAIT(seq[r]) || T1_WAKE(r)) \
    fi; \
    took = 0
#define BELL_WAIT(r, lbl) FD_WAIT(r, lbl, fdrdy[r])
/* S3b: the same wait without the descriptor (ppoll on the eventfd alone). */
#define BELL_ONLY_WAIT(r, lbl) FD_WAIT(r, lbl, false)
#else
#define BELL_WAIT(r, lbl) lbl: (FUTEX_WAIT(seq[r]) || T1_WAKE(r))
#endif

#define ME (_pid + 1)
/* F1: the mark with the seq S2 read: current unless a bump came since. */
#define FDMARK(r) d_step { if :: (seq[r] & BIT) != 0 -> fdless[r] = 2 + tmd :: else -> fdless[r] = 1 fi }

/* work(r): commands or messages pending (pt_nic_has_work). One snapshot:
 * the sources are read after the caller's fence, and each source's producer
 * fences before its own check, so the order of the reads does not matter. */
inline has_work(r, w) {
    d_step {
        w = 0;
        i = 0;
        do
        :: i < NAPP -> if :: cmdq[Q(r, i)] > 0 || rxq[Q(r, i)] > 0 || getq[Q(r, i)] > 0 -> w = 1 :: else fi; i++
        :: i >= NAPP -> break
        od;
        i = 0
    }
}

/* KL's look (pt_nic_local_work): commands not yet taken, nothing inbound. */
inline has_local_work(r, w) {
    d_step {
        w = 0;
        i = 0;
        do
        :: i < NAPP -> if :: cmdq[Q(r, i)] > 0 -> w = 1 :: else fi; i++
        :: i >= NAPP -> break
        od;
        i = 0
    }
}

inline ring(r) {                        /* pt_wait_ring: seq bump + FUTEX_WAKE */
    SEQ_BUMP(r);
#if FDWAIT
    evfdw[r] = 1                          /* ... then the eventfd write */
#endif
}
#define BIT (1 << _pid)
#define READ_SEQ(word) word = word | BIT   /* seq = LD_ACQUIRE(&w->seq)   */
#define FUTEX_WAIT(word) ((word & BIT) == 0) /* returns once woken after the read */

/* D1's check, after the engine of rank r published a message to rank p
 * (p == 2: nothing was sent). */
inline d1_check(p) {
    if
    :: p < 2 && FDWAIT -> skip   /* the publish made the descriptor readable */
    :: p < 2 && !FDWAIT ->
#ifndef MUT_D1
        /* D1: FENCE_FULL (shm_commit's F-SND), then pt_wake_if_sleeping_fenced's loads */
        ls = sleepers[p];
        lp = polled[p];
#endif
        if
        :: ls > 0 && lp == 0 ->
            d_step { lp = rung[p]; rung[p] = 1 };   /* D1R: RMW_XCHG */
            if :: !lp -> ring(p) :: else fi
        :: else
        fi;
        ls = 0; lp = 0
    :: else
    fi
}

/* pt_nic_poll_once: caller holds the token. Commands first (a put becomes a
 * message, a get a request in the peer's queues, then D1), then receive (a
 * message becomes an event; a get request is answered with a message back,
 * then D1), then D6 for the events it posted. The engine's own bookkeeping
 * between two shared accesses is folded into one step; with MUT_D1 the loads
 * of D1 pass the buffered publish (they are done before it). */
inline poll(r, n) {
    n = 0;
    j = 0;
#if FDWAIT
    fdrdy[r] = 0;        /* fi_cq_read: what arrived is in the CQ (rxq/getq) now */
#endif
    do
    :: j < NAPP ->
#if ASYM
        /* the loads of D1 pass the buffered publish; from them on the
         * publish is in the store buffer, which AF-M drains (one step: an
         * interrupt between them re-executes the loads after its barrier) */
        atomic { ls = sleepers[1 - r]; lp = polled[1 - r]; win[r] = 1 };
#elif defined(MUT_D1)
        /* the loads of D1 pass the buffered publish: done before it */
        ls = sleepers[1 - r];
        lp = polled[1 - r];
#endif
        atomic {
            assert(token[r] == ME);
#if ASYM
            win[r] = 0;
#endif
            in_engine[r]++;
            assert(in_engine[r] == 1);
            if
            :: cmdq[Q(r, j)] > 0 ->
                cmdq[Q(r, j)]--;
                p = 1 - r;
                n++;
                if                               /* spsc_commit_seq: release store */
                :: cmdget[Q(r, j)] -> getq[Q(p, j)]++
                :: else -> rxq[Q(p, j)]++
                fi;
                if :: FDWAIT -> fdrdy[p] = 1 :: else fi
            :: else -> p = 2
            fi;
            in_engine[r]--
        };
#ifdef MUT_D1
        if :: p == 2 -> ls = 0; lp = 0 :: else fi;
#endif
        d1_check(p);
#if ASYM
        atomic { ls = sleepers[1 - r]; lp = polled[1 - r]; win[r] = 1 };
#elif defined(MUT_D1)
        ls = sleepers[1 - r];
        lp = polled[1 - r];
#endif
        atomic {
            assert(token[r] == ME);
#if ASYM
            win[r] = 0;
#endif
            if
            :: getq[Q(r, j)] > 0 && !so ->   /* so: pt_nic_poll_send, no receive side */
                getq[Q(r, j)]--;
                p = 1 - r;
                n++;
                rxq[Q(p, j)]++;                  /* the REPLY */
                if :: FDWAIT -> fdrdy[p] = 1 :: else fi
            :: else -> p = 2
            fi
        };
#ifdef MUT_D1
        if :: p == 2 -> ls = 0; lp = 0 :: else fi;
#endif
        d1_check(p);
        j++
    :: j >= NAPP -> break
    od;
#ifdef MUT_D6
    le = EVS(r);     /* the load of D6 passes the buffered event stores */
#endif
#ifdef MUT_D6W
    /* the loads of the watchers pass the buffered event stores */
    lw = 0; j = 0;
    do :: j < NAPP -> lw = lw | ((eqw[Q(r, j)] > 0) << j); j++ :: j >= NAPP -> break od;
#endif
    atomic {
        assert(token[r] == ME);
        j = 0;
        do
        :: j < NAPP && !so ->
            if :: rxq[Q(r, j)] > 0 -> rxq[Q(r, j)]--; evq[Q(r, j)]++; posted = posted | (1 << j); n++ :: else fi; j++
        :: j < NAPP && so -> j = NAPP
        :: j >= NAPP -> break
        od;
        j = 0; p = 0
    };
    if
    :: posted ->
        /* D6: FENCE_FULL, then wake event sleepers if one of the EQs posted
         * to has a watcher (W2W; pt_wait_events_posted) */
#ifndef MUT_D6
        le = EVS(r);
#endif
        if
        :: le > 0 ->
#ifndef MUT_D6W
            lw = 0; j = 0;   /* the watchers, read after the sleepers (as the code) */
            do :: j < NAPP -> lw = lw | ((eqw[Q(r, j)] > 0) << j); j++ :: j >= NAPP -> break od;
#endif
            j = 0;
            if :: lw & posted -> EVSEQ(r) = 0; EVFD(r) :: else fi
        :: else
        fi
    :: else
    fi;
    le = 0;
    lw = 0;
    posted = 0
}

inline try_take(r, got) {
#if SOLO
    got = (token[r] == 0);            /* SO: a plain load, then a plain store */
    if :: got -> token[r] = ME :: else fi
#else
    atomic { if :: token[r] == 0 -> token[r] = ME; got = 1 :: else -> got = 0 fi }
#endif
}

inline poll_quiet(r) {
    do
    :: poll(r, n); if :: n <= 1 -> break :: else fi
    od
}

/* D3/D4 action (wait.c kick): drain ourselves, else ring. A marked NIC
 * thread (FDWAIT, offload: every sleep, on the eventfd alone or on the
 * descriptor), D5 first: ring it unless a ring reached that sleep already
 * (the mark no longer current), and look for no work: the woken NIC
 * thread's S2 rechecks. MUT_FDLEAVE: no hand-over ring. */
inline kick(r) {
    k = 0;
    do
    :: ls = sleepers[r];
       lt = token[r];
       if
       :: ls > 0 && lt == 0 ->
#if FDWAIT && OFFLOAD
           lf = fdless[r];
           if
           :: lf == 2 ->
#ifndef MUT_FDLEAVE
               ring(r);                    /* D5: the hand-over */
#endif
               lf = 0; break
           :: lf == 3 -> lf = 0; break     /* D5T: a timed sleep, its timeout ends it */
           :: lf == 1 -> lf = 0; break     /* rung since its look: its wait returns */
           :: else
           fi;
#endif
#if LEASE
           /* KL: a lease out (read after D3/D4's fence): inbound work waits
            * for the lease's end (the next waiter adopts it and polls, or
            * the NIC thread, asleep timed while it is out, ends it and looks);
            * only local work (commands) is handed over. MUT_KL: never look
            * at the inbound queues, lease or not. */
#ifdef MUT_KL
           kl = 1;
#else
           kl = lease[r];
#endif
           if
           :: kl -> has_local_work(r, w)
           :: else -> has_work(r, w)
           fi;
           kl = 0;
#else
           has_work(r, w);
#endif
           if
           :: w && k >= KICK_ROUNDS -> ring(r); break
           :: w && k < KICK_ROUNDS ->
               try_take(r, got);
               if
               :: got ->
                   do :: poll(r, n); if :: n == 0 -> break :: else fi od;
                   token[r] = 0;   /* then FENCE_FULL, check again */
                   k++
               :: else -> ring(r); break
               fi
           :: else -> break
           fi
       :: else -> break
       fi
    od;
    k = 0; ls = 0; lt = 0; w = 0; got = 0; n = 0
}

/* D3: pt_wait_release. */
inline release(r) {
#ifdef MUT_D3
    ls = sleepers[r];
    token[r] = 0;
#else
    token[r] = 0;                 /* R-TOK */
    /* FENCE_FULL */
    ls = sleepers[r];
#endif
    if :: ls > 0 -> kick(r) :: else fi
}

/* pt_nic_submit. */
inline submit(r, a) {
#if OFFLOAD && NOINLINE
    /* PTL_CMD_INLINE 0: the ring, D2, then pt_wait_progress_cmd's NI: ring
     * an announced NIC thread when nobody holds the engine (sleeper_left);
     * a holder finds the command at its next poll or its release (D3), a
     * NIC thread that announces later at its recheck (S2). MUT_NI: no ring. */
#ifdef MUT_D2NI
    ls = sleepers[r];             /* D2 missing: the loads pass the commit */
    lt = token[r];
    cmdq[Q(r, a)]++;
#else
    cmdq[Q(r, a)]++;              /* spsc_commit */
    /* FENCE_FULL: D2 */
    ls = sleepers[r];
    lt = token[r];
#endif
#ifndef MUT_NI
    if :: ls > 0 && lt == 0 -> ring(r) :: else fi;
#endif
    got = 0;
#elif OFFLOAD
    /* the direct dispatch, as in host mode: our ring empty, the engine free
     * (the dispatch is the poll below finding our command); else the ring,
     * D2, and the engine inline when it is free by then */
    try_take(r, got);
    if
    :: got -> cmdq[Q(r, a)]++
    :: else ->
#ifdef MUT_D2
        lt = token[r];
        cmdq[Q(r, a)]++;
        if :: lt == 0 -> try_take(r, got) :: else -> got = 0 fi
#else
        cmdq[Q(r, a)]++;          /* spsc_commit */
        /* FENCE_FULL: D2 */
        try_take(r, got)
#endif
    fi;
#else
    /* host: direct dispatch when our ring is empty and the engine free
     * (the dispatch is the poll below finding our command) */
    try_take(r, got);
    cmdq[Q(r, a)]++;
    if
    :: !got ->
        /* FENCE_FULL: D2; pt_wait_progress_host */
        do
        :: try_take(r, got); if :: got -> break :: else fi
        :: cmdq[Q(r, a)] == 0 -> break      /* the holder took ours */
        od
    :: else
    fi;
#endif
    /* pt_wait_progress_cmd / the direct dispatch: the first poll sends our
     * command and looks at the receive side only every 16th time
     * (pt_nic_poll_send: so = 1); polls until quiet if it did more than
     * that. The receive side left for later is found by whoever polls next,
     * or by the kick of our release (D3: has_work looks at the queues). */
    if
    :: got ->
        if :: so = 1 :: so = 0 fi;
        poll(r, n);
        so = 0;
        if :: n > 1 -> poll_quiet(r) :: else fi;
        release(r)
    :: else
    fi;
    got = 0; lt = 0; n = 0
}

/* pt_wait_until(eq_ready) for thread (r,a), with waiter_leave (D4 then D3)
 * written once: `ex` says whether the waiter leaves for good (ready) or to
 * sleep (W2). */
inline wait_event(r, a) {
    holding = 0; wanted = 0; polling = 0;
    do
    :: /* W1 */
#if OFFLOAD
       if
       :: !polling ->
#if LEASE
           atomic { if :: lease[r] -> lease[r] = 0; polling = 1 :: else fi };  /* L2: adopt */
#endif
           if :: !polling -> polled[r]++; polling = 1 :: else fi
       :: else
       fi;
#endif
       atomic {   /* eq_ready: pt_eq_get claims an event */
           if
           :: evq[Q(r, a)] > 0 -> evq[Q(r, a)]--; ex = 1
           :: else -> ex = 0
           fi
       };
       if
       :: ex == 0 ->
           if
           :: !holding ->
               try_take(r, got);
               if
               :: got -> holding = 1;
                         if :: wanted -> want[r]--; wanted = 0 :: else fi
               :: !got && OFFLOAD && !wanted -> want[r]++; wanted = 1
               :: else
               fi
           :: else
           fi;
           if :: holding -> poll(r, n) :: else fi;
           if
           :: skip                  /* spin on */
           :: ex = 2                /* W2: spun long enough */
#if SPINGET
           :: ex = 3                /* a look that found nothing (PtlEQGet): leave, look again */
#endif
           fi
       :: else
       fi;
       if
       :: ex > 0 ->
           /* waiter_leave */
           if :: wanted -> want[r]--; wanted = 0 :: else fi;
           ls = 0;
#if LEASE
           if
           :: polling && (ex == 1 || ex == 3) ->
               /* L1: offer the count as the lease */
#ifdef MUT_L1
               lu = untimed[r];                      /* the load passes the CAS */
               atomic { if :: !lease[r] -> lease[r] = 1; lg = 1 :: else -> lg = 0 fi };
#else
               atomic { if :: !lease[r] -> lease[r] = 1; lg = 1 :: else -> lg = 0 fi };  /* CAS: full fence */
               lu = untimed[r];
#endif
               if
               :: lg && lu -> atomic { if :: lease[r] -> lease[r] = 0; lg = 0 :: else fi }  /* take it back */
               :: else
               fi;
               if :: lg -> polling = 0 :: else fi;   /* the lease's now (or whoever took it) */
               lg = 0; lu = 0
           :: else
           fi;
#endif
           if
           :: polling ->
#ifdef MUT_D4
               ls = sleepers[r];
               polled[r]--;          /* D4 (a plain store in this mutant) */
#else
               polled[r]--;          /* D4: RMW, full fence */
               ls = sleepers[r];
#endif
               polling = 0
           :: else
           fi;
           if
           :: holding ->
               holding = 0;
#ifdef MUT_D3
               ls = sleepers[r];
               token[r] = 0;
#else
               token[r] = 0;         /* R-TOK, then FENCE_FULL: D3 */
               ls = sleepers[r];
#endif
           :: else
           fi;
           if :: ls > 0 -> kick(r) :: else fi;
           ls = 0
       :: else
       fi;
       if
       :: ex == 1 -> break
       :: ex == 2 ->
           READ_SEQ(EVSEQ(r));
#ifndef MUT_W2W
           eqw[Q(r, a)]++;          /* W2W: RMW, full fence (before W2's) */
#endif
#if !OFFLOAD && !defined(MUT_RUNGW2)
           rung[r] = 0;             /* pt_announce: D1R's clear (host mode: the bell) */
#endif
#ifdef MUT_W2
           lq = evq[Q(r, a)];
           EVS(r)++;
#else
           EVS(r)++;                /* W2: RMW, full fence */
#if ASYM && !defined(MUT_AFM)
           (win[1 - r] == 0);       /* AF-M: membarrier, the peer's buffered publish lands */
#endif
           lq = evq[Q(r, a)];
#endif
#ifdef MUT_W2W
           eqw[Q(r, a)]++;          /* the watcher counted only after the recheck */
#endif
           if
           :: lq > 0 -> EVS(r)--; eqw[Q(r, a)]--; evq[Q(r, a)]--; lq = 0; break
           :: else ->
               skipped = 0;
#if !OFFLOAD
               lt = token[r];
               if :: lt == 0 -> has_work(r, w); skipped = w :: else fi;
               lt = 0; w = 0;
#endif
               if
               :: skipped -> EVS(r)--; eqw[Q(r, a)]--; skipped = 0
               :: else ->
#if OFFLOAD || !FDWAIT
W3:                FUTEX_WAIT(EVSEQ(r));   /* futex_wait(ev, seq, forever) */
#else
                   BELL_WAIT(r, W3);       /* host mode: ev is the bell */
#endif
                   EVS(r)--;
                   eqw[Q(r, a)]--
               fi
           fi
       :: else
       fi
    od;
    n = 0; got = 0; ex = 0
}

/* The scenario. Thread (0,a): ROUNDS put ping-pongs, then a get that
 * thread (1,a)'s application never waits for: rank 1's engine must answer
 * it on its own (offload: the NIC thread, after the application finished;
 * host mode: the application waiting for rank 0's last put, the "bye").
 * Rank 0 posts the bye and finishes without waiting: in offload mode only
 * its NIC thread can send it (D2), and rank 1's NIC thread delivers it. */
proctype App(byte r; byte a)
{
    byte n, p, ls, lp, lt, lq, k, i, j, got, w, posted, skipped, ex, le, lw;
#if FDWAIT && OFFLOAD
    byte lf;             /* kick's load of fdless (D5) */
#endif
    bool so;             /* poll's send-only flag (submit) */
    bool holding, wanted, polling, took, lg, lu;
    bool kl;             /* kick's load of lease (KL) */
    byte round = 0;
    do
    :: round < ROUNDS ->
        if
        :: r == 0 -> cmdget[Q(r, a)] = 0; submit(r, a); wait_event(r, a)
        :: r == 1 -> wait_event(r, a); submit(r, a)
        fi;
        round++
    :: round >= ROUNDS -> break
    od;
    if
    :: !GET -> skip
    :: GET && r == 0 ->
        cmdget[Q(r, a)] = 1; submit(r, a); wait_event(r, a);   /* the get */
        cmdget[Q(r, a)] = 0; submit(r, a)                      /* the bye: not waited for */
    :: GET && r == 1 ->
#if !OFFLOAD
        wait_event(r, a)       /* host: progress needs a caller; it waits for the bye */
#else
        skip                   /* offload: the NIC thread answers the get, takes the bye */
#endif
    fi;
    done++
}

#if OFFLOAD
proctype Nic(byte r)
{
    byte n, p, ls, lp, lt, i, j, got, w, posted, k, le, lw;
#if FDWAIT && OFFLOAD
    byte lf;             /* kick's load of fdless (D5) */
#endif
    bool so;             /* poll's send-only flag: never set here */
    bool took, handed, tmd, ll;
#if SPINFD
    byte spint = SPINT;  /* D5T: timed sleeps left (the spinner looks that long) */
#endif
#if POLLEASE
    byte pl = PL;        /* LP: polls left for the lease out */
#endif
top:
    do
    :: /* S1 (not after S3b: straight to S2, whose recheck comes back here
        * with work) */
       if :: handed -> got = 0; handed = 0 :: else -> try_take(r, got) fi;
       if
       :: got ->
           do
           :: poll(r, n);
              if
              :: n == 0 -> break          /* idle for PTL_NIC_SPIN_US */
              :: want[r] > 0 -> break     /* PTL_NIC_YIELD */
              :: else
              fi
           od;
           token[r] = 0                   /* plain R-TOK: S2 rechecks */
       :: else
       fi;
#if POLLEASE
       /* LP: a lease out -> poll for it (S1 again), go on to S2 with it out
        * (young, or the token held: T1 sleeps a period), or end it (L2) */
       if
       :: lease[r] && pl > 0 -> pl--; goto top
       :: lease[r] -> skip
       :: true ->
           atomic { if :: lease[r] -> lease[r] = 0; ll = 1 :: else fi };
#ifdef MUT_LPEND
           if :: ll -> pl = PL :: else fi;                /* the count stays up */
#else
           if :: ll -> polled[r]--; pl = PL :: else fi;   /* as D4: RMW, full fence */
#endif
           ll = 0
       fi;
#endif
       /* S2 */
#if SPINFD
       /* D5T: the spin_look hint, read before the mark (any value: a hint) */
       if :: spint > 0 -> tmd = 1; spint-- :: true -> tmd = 0 fi;
#endif
#if FDWAIT && defined(MUT_FDMARK)
       FDMARK(r);                         /* the mark's seq read before S2's */
#endif
       READ_SEQ(seq[r]);
#if FDWAIT && !defined(MUT_F1) && !defined(MUT_FDMARK)
       FDMARK(r);                         /* F1: before the announcement */
#endif
#if LEASE && !defined(MUT_T1)
       untimed[r] = 1;                    /* T1: before the announcement */
#endif
#if DEFER && defined(MUT_S2W)
       lw = want[r];                      /* the load of want passes S2's fence */
#endif
       rung[r] = 0;                       /* pt_announce: D1R's clear */
#ifdef MUT_S2
       lt = token[r];
       has_work(r, w);
       sleepers[r]++;
#else
       sleepers[r]++;                     /* RMW: full fence */
       lt = token[r];
       if :: lt == 0 -> has_work(r, w) :: else -> w = 0 fi;
#endif
#if DEFER && !defined(MUT_S2W)
       lw = want[r];                      /* S2W: after the fence */
#endif
#if DEFER
       if :: lw > 0 -> w = 0 :: else fi;  /* S2W: the API thread that wants the engine does it */
       lw = 0;
#endif
#if FDWAIT && defined(MUT_F1)
       FDMARK(r);                         /* the mark passes the token's load */
#endif
       if
       :: lt == 0 && w -> sleepers[r]--; lt = 0; w = 0; untimed[r] = 0
       :: else ->
#if LEASE
           ll = lease[r];                 /* after the fence: L1's other half */
#ifdef MUT_T1
           untimed[r] = 1;                /* the mark passes the lease's load */
#endif
           if
#ifndef MUT_TIMED
           :: ll -> tmd = 1
#endif
           :: else -> if :: tmd = 1 :: tmd = 0 fi   /* a waiter polls, or busy lately */
           fi;
           if :: tmd -> untimed[r] = 0 :: else fi;
           ll = 0;
#endif
#if FDWAIT
           w = 0;
           if
#ifdef MUT_FDSLEEP
           :: true ->
#else
           :: lt != 0 || tmd ->   /* held, or D5T: timed beside a spinner */
#endif
               /* [S3b] the holder reads the CQ and owes us the descriptor (D5) */
               lt = 0;
               BELL_ONLY_WAIT(r, end_S3b);
               handed = 1
           :: else ->
               /* our own fi_trywait (has_work) armed the descriptor; the
                * mark stays: releasers ring this sleep once too (D5) */
               BELL_WAIT(r, end_S3)
           fi;
#else
           lt = 0; w = 0;
           BELL_WAIT(r, end_S3);          /* bell_wait(bell, seq, forever or T1) */
#endif
           untimed[r] = 0;
           sleepers[r]--;
#if LEASE
           if
           :: tmd ->
               /* T1's timeout (or any wake of a timed sleep): end the lease,
                * then straight to S2 (POLLEASE: LP looks at it first) */
#if !POLLEASE
               atomic { if :: lease[r] -> lease[r] = 0; ll = 1 :: else fi };
               if :: ll -> polled[r]-- :: else fi;   /* as D4: RMW, full fence */
#endif
               ll = 0; tmd = 0;
               handed = 1
           :: else
           fi
#endif
       fi
    od
}
#endif

/* When nobody can move: everything was delivered and consumed. */
active proctype Monitor()
{
    byte x;
end_M:
    timeout ->
    x = 0;
    do
    :: x < NT ->
        assert(cmdq[x] == 0 && rxq[x] == 0 && getq[x] == 0);
        /* every event consumed, but the bye that rank 1 never waits for in
         * offload mode, which its NIC thread must have delivered */
        assert(evq[x] == ((OFFLOAD && GET && x >= NAPP) -> 1 : 0));
        x++
    :: x >= NT -> break
    od;
    assert(done == NT);
    /* no lease left behind with nobody to end it: peers would never ring
     * this rank again (the lease mutants fail here) */
#ifndef NO_LEASE_ASSERT
    assert(!lease[0] && !lease[1])
#endif
}

init
{
    byte r, a;
    atomic {
        r = 0;
        do
        :: r < 2 ->
            a = 0;
            do
            :: a < NAPP -> run App(r, a); a++
            :: a >= NAPP -> break
            od;
#if OFFLOAD
            run Nic(r);
#endif
            r++
        :: r >= 2 -> break
        od
    }
}
