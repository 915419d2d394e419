/*
 * flag.pml - SPIN model of the collective library's flag path (coll/flag.c,
 * util/flagline.h, docs/coll.md "Flag path"): N members make C blocking
 * calls (barrier or small allreduce) through single-writer lines, and a
 * member that announced a sleep is woken by a message.
 *
 * Member m, call c (the code's names):
 *   val       vb[m][c % 2] = c: our value into the call's buffer
 *   F-SEQ     seq[m] = c (release: after the value)
 *   F-WAKE    fence; for every other member i: slp[i] == c -> a wake
 *             message to i (its engine counts it; every counter change
 *             rings a sleeping waiter: wait.pml's D6, assumed here)
 *   spin      look at every member's seq (A-SEQ); all >= c: done; or give
 *             up (any time: the spin's budget is a clock, not modelled)
 *   F-ANN     slp[m] = c; fence
 *   wait      pt_wait_until(ready = every seq >= c): the engine's own
 *             announcement (W2), its recheck of ready, then a sleep that a
 *             counter change ends (the waiting protocol, checked in
 *             wait.pml, as an atomic announce-then-look and a ring)
 *   read      every member's vb[k][c % 2] must still hold call c's value
 *             (the two buffers: a member writes call c + 2 only after
 *             every seq of c + 1, and a member enters c + 1 only after it
 *             read all of call c)
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

byte seq[N];            /* F-SEQ: member m's calls entered              */
byte slp[N];            /* F-ANN: the call in which m may sleep         */
byte vb[N * 2];         /* vb[m * 2 + b]: the call whose value buffer b holds */
bit asleep[N];          /* the waiting protocol's announcement (W2)     */
bit rung[N];            /* a ring since it announced                    */
byte ncalls[N];         /* calls completed                              */
chan wake[N] = [8] of { byte };

/* every member's seq >= c, each seq a load of its own (members' loads
 * interleave with the others' steps) */
inline look(c, ok)
{
    ok = 1;
    k = 0;
    do
    :: k < N ->
        if
        :: k != m && seq[k] < c -> ok = 0
        :: else
        fi;
        k++
    :: else -> break
    od;
    k = 0
}

proctype Member(byte m)
{
    byte c = 1;
    byte k, i;
    bit ok;
#ifdef MUT_FWAKE
    byte ls[N];
#endif
    do
    :: c > C -> break
    :: else ->
        vb[m * 2 + c % NB] = c;                  /* val */
#ifdef MUT_FWAKE
        i = 0;                                   /* the loads first ... */
        do :: i < N -> ls[i] = slp[i]; i++ :: else -> break od;
        seq[m] = c;                              /* ... the store after */
        i = 0;
        do
        :: i < N ->
            if :: i != m && ls[i] == c -> wake[i]!m :: else fi;
            i++
        :: else -> break
        od;
#else
        seq[m] = c;                              /* F-SEQ; F-WAKE: fence */
        i = 0;
        do
        :: i < N ->
#ifndef MUT_NOWAKE
            if :: i != m && slp[i] == c -> wake[i]!m :: else fi;
#endif
            i++
        :: else -> break
        od;
#endif
        i = 0;
        look(c, ok);                             /* the spin: one look ... */
        if
        :: ok -> skip
        :: else ->                               /* ... then give up */
#ifndef MUT_FANN
            slp[m] = c;                          /* F-ANN; fence */
#endif
            ok = 0;
            do
            :: ok -> break
            :: else ->
                atomic { asleep[m] = 1; rung[m] = 0 }  /* W2 (an RMW: a fence too) */
                look(c, ok);                     /* ready(), the recheck */
                if
                :: ok -> asleep[m] = 0
                :: else ->
#ifdef MUT_FANN
                    slp[m] = c;                  /* the store left the buffer only now */
#endif
end_sleep:          rung[m];                     /* sleep until rung */
                    asleep[m] = 0;
                    look(c, ok)
                fi
            od
        fi;
        /* read: every member's value of call c is still there */
        k = 0;
        do
        :: k < N -> assert(vb[k * 2 + c % NB] == c); k++
        :: else -> break
        od;
        k = 0;
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
