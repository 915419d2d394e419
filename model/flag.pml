/*
 * flag.pml - SPIN model of the collective library's flag path (coll/flag.c,
 * util/flagline.h, docs/coll.md "Flag path"): N members make C blocking
 * calls through single-writer lines, and a member that announced a sleep is
 * woken by a message.
 *
 * The calls follow a script (KIND below): allreduce (every member's value,
 * every member waits for all), bcast from root 0 (the root's value; the root
 * waits for nobody, the others for the root), reduce to root 1 (every
 * value; the root waits for all, the others for nobody). With BARONLY every
 * call is an allreduce (a barrier with values); with BCSTREAM every call a
 * bcast from root 0 (the root runs ahead as far as F-REUSE lets it); with
 * RDSTREAM every call a reduce to root 1 (the others run ahead).
 *
 * Member m, call c (the code's names):
 *   F-REUSE   if m contributes a value: the members that read the value of
 *             the call that last wrote this buffer (wr) are done once they
 *             entered call wr + 1: wait for every other member's seq >= wr + 1
 *   val       vb[m][c % 2] = c
 *   F-SEQ     seq[m] = c (release: after the value)
 *   F-WAKE    fence; every other member i with slp[i] != 0 and slp[i] <= c
 *             (i waits for a call we have entered) gets a wake message (its
 *             engine counts it; every counter change rings a sleeping
 *             waiter: wait.pml's D6, assumed here)
 *   wait      for the awaited members' seq >= c, as F-REUSE's wait:
 *     spin    a look at the seqs (A-SEQ); there: done; or give up (the
 *             spin's budget is a clock, not modelled)
 *     F-ANN   slp[m] = the call waited for; fence
 *     sleep   pt_wait_until(ready = the seqs are there): the engine's own
 *             announcement (W2), its recheck of ready, then a sleep that a
 *             counter change ends (checked in wait.pml; here an atomic
 *             announce-then-look and a ring)
 *     then    slp[m] = 0
 *   read      every value the call reads must still be its call's
 * The store-buffer pair: F-SEQ, F-WAKE's fence, the load of slp[i] / F-ANN's
 * store, its fence (and W2's), the wait's loads of seq: either the waiter's
 * look sees the seq, or the writer sees the announcement and sends the
 * message.
 *
 * Checks: when nobody can move, every member has made its C calls (a
 * member asleep for good is a lost wake-up); every value read is its call's.
 *
 * Mutants (tests/model/run-spin requires a counterexample for each):
 *   MUT_FWAKE  no F-WAKE fence: the loads of slp pass the seq store
 *   MUT_FANN   the announcement ordered before none of the wait's looks
 *              (neither F-ANN nor W2's RMW: it reaches memory only as the
 *              waiter sleeps). F-ANN alone would do, and so would W2 alone:
 *              the code has both, W2 being the waiting protocol's own
 *   MUT_NOWAKE no wake message at all (the spin alone)
 *   MUT_ONEBUF one value buffer, not two
 *   MUT_REUSE  no F-REUSE wait: a root that runs ahead overwrites a value
 *              a slow member has not read
 */

#ifndef N
#define N 2
#endif
#ifndef C
#define C 3
#endif
#ifdef MUT_ONEBUF
#define NB 1
#else
#define NB 2
#endif

#define AR 0  /* allreduce: all contribute, all wait for all */
#define BC 1  /* bcast from root 0 */
#define RD 2  /* reduce to root 1 % N */
#if defined(BARONLY)
#define KIND(c) AR
#elif defined(BCSTREAM)
#define KIND(c) BC
#elif defined(RDSTREAM)
#define KIND(c) RD
#else
#define KIND(c) (((c) % 3 == 1) -> BC : (((c) % 3 == 2) -> RD : AR))
#endif
#define ROOT(c) ((KIND(c) == BC) -> 0 : 1 % N)

byte seq[N];            /* F-SEQ: member m's calls entered              */
byte slp[N];            /* F-ANN: the call m waits for (0: none)        */
byte vb[N * 2];         /* vb[m * 2 + b]: the call whose value buffer b holds */
bit asleep[N];          /* the waiting protocol's announcement (W2)     */
bit rung[N];            /* a ring since it announced                    */
byte ncalls[N];         /* calls completed                              */
chan wake[N] = [12] of { byte };

/* the awaited members' seq >= w (only < N: that member alone; else every
 * other member), each seq a load of its own */
inline look(w, only, ok)
{
    ok = 1;
    k = 0;
    do
    :: k < N ->
        if
        :: k != m && (only == N || only == k) && seq[k] < w -> ok = 0
        :: else
        fi;
        k++
    :: else -> break
    od;
    k = 0
}

/* F-REUSE's and the call's wait */
inline wait(w, only)
{
    look(w, only, ok);                           /* the spin: one look ... */
    if
    :: ok -> skip
    :: else ->                                   /* ... then give up */
#ifndef MUT_FANN
        slp[m] = w;                              /* F-ANN; fence */
#endif
        do
        :: ok -> break
        :: else ->
            atomic { asleep[m] = 1; rung[m] = 0 }  /* W2 (an RMW: a fence too) */
            look(w, only, ok);                   /* ready(), the recheck */
            if
            :: ok -> asleep[m] = 0
            :: else ->
#ifdef MUT_FANN
                slp[m] = w;                      /* the store left the buffer only now */
#endif
end_sleep:      rung[m];                         /* sleep until rung */
                asleep[m] = 0;
                look(w, only, ok)
            fi
        od;
        slp[m] = 0
    fi;
    ok = 0
}

proctype Member(byte m)
{
    byte c = 1;
    byte k, i, a, kind, root;
    byte wr[2];
    bit ok;
#ifdef MUT_FWAKE
    byte ls[N];
#endif
    do
    :: c > C -> break
    :: else ->
        kind = KIND(c);
        root = ROOT(c);
        if
        :: kind != BC || m == root ->            /* we contribute a value */
#ifndef MUT_REUSE
            if
            :: wr[c % NB] != 0 -> wait(wr[c % NB] + 1, N)   /* F-REUSE */
            :: else
            fi;
#endif
            vb[m * 2 + c % NB] = c;              /* val */
            wr[c % NB] = c
        :: else
        fi;
#ifdef MUT_FWAKE
        i = 0;                                   /* the loads first ... */
        do :: i < N -> ls[i] = slp[i]; i++ :: else -> break od;
        seq[m] = c;                              /* ... the store after */
#else
        seq[m] = c;                              /* F-SEQ; F-WAKE: fence */
#endif
        i = 0;
        do
        :: i < N ->
#ifdef MUT_FWAKE
            a = ls[i];
#else
            a = slp[i];
#endif
#ifndef MUT_NOWAKE
            if :: i != m && a != 0 && a <= c -> wake[i]!m :: else fi;
#endif
            i++
        :: else -> break
        od;
        i = 0;
        a = 0;
        /* whom the call waits for; then what it reads */
        if
        :: kind == AR || (kind == RD && m == root) ->
            wait(c, N);
            k = 0;
            do
            :: k < N -> assert(vb[k * 2 + c % NB] == c); k++
            :: else -> break
            od;
            k = 0
        :: kind == BC && m != root ->
            wait(c, root);
            assert(vb[root * 2 + c % NB] == c)
        :: else                                  /* a bcast's root, a reduce's other members */
        fi;
        ncalls[m]++;
        c++
    od
}

/* Member m's engine: a wake message is counted, and the count rings a
 * waiter that announced itself (D6). */
proctype Engine(byte m)
{
    byte from;
end_eng:
    do
    :: wake[m]?from -> atomic { if :: asleep[m] -> rung[m] = 1 :: else fi }
    od
}

active proctype Monitor()
{
    byte j;
end_mon:
    timeout ->
    j = 0;
    do
    :: j < N -> assert(ncalls[j] == C); j++
    :: else -> break
    od
}

init
{
    byte j;
    atomic {
        j = 0;
        do
        :: j < N -> run Member(j); run Engine(j); j++
        :: else -> break
        od
    }
}
