#!/bin/sh
# ptlrun_lifecycle.sh PTLRUN MP_RING - ptlrun's clean-up guarantees:
#   1. SIGTERM to ptlrun is forwarded: it exits 143 quickly, its ranks are gone
#   2. SIGKILL to ptlrun: its ranks die with it (PR_SET_PDEATHSIG); memfd
#      mode leaves nothing in /dev/shm
#   3. a named job whose processes all died leaves /dev/shm/ptl-<uid>-<job>;
#      a new rank of the same job name replaces the stale segment, and
#      ptlrun's start-up clean-up removes such leftovers
#   4. SIGKILL to ptlrun whose ranks run behind a wrapper (sh -c "prog; ..."):
#      the Portals processes (ptlrun's grandchildren) die too (issue 12,
#      item 7: PDEATHSIG reaches only the wrappers; the library watches the
#      launcher through PTL_LAUNCHER_PID)
#   5. processes a rank leaves running (a background job, and a daemon that
#      called setsid) are ended when the last rank has ended, normally and at
#      --timeout; ptlrun names them and keeps its exit status
#   6. ptlrun started with stdout, stderr or stdin closed: the job region is
#      none of a rank's standard descriptors (a rank that printed before
#      PtlNIInit wrote over the region's header; one that closed its stdin
#      closed the region)
set -u
PTLRUN=$1
RING=$2
uid=$(id -u)
fail() { echo "ptlrun_lifecycle: FAIL: $*" >&2; exit 1; }
gone() { # pid: not running (or a zombie)
  ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null; }
# pids...: true once every one is gone, looking for up to 5 s (the ranks die of
# their parent-death signal; on a loaded machine, load average ~30, a single
# look 0.5 s after ptlrun's SIGKILL failed once)
all_gone() {
  local i k ok
  for i in $(seq 1 50); do
    ok=1
    for k in "$@"; do gone "$k" || ok=0; done
    [ $ok = 1 ] && return 0
    sleep 0.1
  done
  return 1
}

# 1. SIGTERM
"$PTLRUN" -n 2 -- /bin/sleep 30 &
p=$!
sleep 0.5
kids=$(children_of $p)
[ -n "$kids" ] || fail "no ranks under ptlrun $p"
kill -TERM $p
wait $p
rc=$?
[ $rc -eq 143 ] || fail "ptlrun exited $rc after SIGTERM, expected 143"
for k in $kids; do gone "$k" || fail "rank $k survived ptlrun's SIGTERM"; done

# 2. SIGKILL
"$PTLRUN" -n 2 -- /bin/sleep 30 &
p=$!
sleep 0.5
kids=$(children_of $p)
[ -n "$kids" ] || fail "no ranks under ptlrun $p"
kill -KILL $p
wait $p
all_gone $kids || fail "ranks $kids survived ptlrun's SIGKILL by 5 s"
ls /dev/shm | grep -q "^ptl-$uid-$p" && fail "/dev/shm entry of job $p left behind"

# 3. stale named segments
job=mpstale$$
seg=/dev/shm/ptl-$uid-$job
# rank 0 of 2 creates the segment and waits for rank 1, which never comes
PTL_JOB=$job PTL_NRANKS=2 PTL_MY_RID=0 PTL_NIDMAP=0:0 PTL_PIDMAP=0:1 \
  timeout 2 "$RING" 1 2>/dev/null
[ -e "$seg" ] || fail "expected a leftover $seg (test setup)"
# a new job of that name replaces it (its creator is dead) and unlinks it
PTL_JOB=$job PTL_NRANKS=1 PTL_MY_RID=0 PTL_NIDMAP=0 PTL_PIDMAP=0 "$RING" 5 >/dev/null \
  || fail "a new 1-rank job named $job could not replace the stale segment"
[ -e "$seg" ] && fail "$seg still there after a complete job"
# leave another one; ptlrun's start-up clean-up removes it. Another ptlrun
# of this uid (a parallel test, another session, a second ctest run on the
# same machine) may clean it up first: that is ptlrun's clean-up too, so what
# must hold is that the segment is gone once our ptlrun has started; seeing
# our own ptlrun report it is preferred (up to 5 tries) but not required.
job=mpstale2$$
seg=/dev/shm/ptl-$uid-$job
seen=0
for try in 1 2 3 4 5; do
  # a stale segment must exist when our ptlrun starts (never a vacuous check)
  PTL_JOB=$job PTL_NRANKS=2 PTL_MY_RID=0 PTL_NIDMAP=0:0 PTL_PIDMAP=0:1 \
    timeout 2 "$RING" 1 2>/dev/null
  [ -e "$seg" ] || continue # removed by another ptlrun already: set it up again
  seen=1
  out=$("$PTLRUN" -v -n 1 -- /bin/true 2>&1)
  [ -e "$seg" ] && fail "ptlrun left the stale $seg"
  echo "$out" | grep -q "removed stale.*$job" && break
  [ $try = 5 ] && echo "ptlrun_lifecycle: note: other ptlruns removed the stale segment first, 5 times"
done
[ $seen = 1 ] || fail "could not leave a stale $seg for ptlrun in 5 tries"
rm -f "$seg"
# 4. SIGKILL, ranks behind a wrapper
"$PTLRUN" -n 2 -- /bin/sh -c "\"$RING\" 10000000; true" &
p=$!
grand=""
for i in $(seq 1 50); do # until both ranks run under their wrappers
  grand=""
  for w in $(children_of $p); do grand="$grand $(children_of $w)"; done
  [ $(echo $grand | wc -w) -ge 2 ] && break
  sleep 0.1
done
[ $(echo $grand | wc -w) -ge 2 ] || fail "no ranks under the wrappers of ptlrun $p"
sleep 0.5 # attached and passing the token
kill -KILL $p
wait $p 2>/dev/null
if ! all_gone $grand; then
  kill -KILL $grand 2>/dev/null
  fail "ranks behind a wrapper survived ptlrun's SIGKILL by 5 s"
fi
# 5. leftovers of a rank: a background sleep and a setsid daemon's sleep
tmpd=$(mktemp -d)
for how in end timeout; do
  rm -f "$tmpd"/bg "$tmpd"/daemon
  if [ $how = end ]; then
    rank="sleep 300 & echo \$! > $tmpd/bg; setsid sh -c 'sleep 300 & echo \$! > $tmpd/daemon; wait' & sleep 0.5; exit 0"
    want=0 opt=
  else
    rank="sleep 300 & echo \$! > $tmpd/bg; setsid sh -c 'sleep 300 & echo \$! > $tmpd/daemon; wait' & sleep 300"
    want=124 opt="--timeout 1"
  fi
  "$PTLRUN" -n 1 $opt -- /bin/sh -c "$rank" 2>"$tmpd/err"
  rc=$?
  bg=$(cat "$tmpd"/bg 2>/dev/null) daemon=$(cat "$tmpd"/daemon 2>/dev/null)
  [ -n "$bg" ] && [ -n "$daemon" ] || { rm -rf "$tmpd"; fail "$how: the rank did not start its two processes (test setup)"; }
  [ $rc = $want ] || { kill -KILL $bg $daemon 2>/dev/null; rm -rf "$tmpd"; fail "$how: ptlrun exited $rc, expected $want"; }
  if ! all_gone $bg $daemon; then
    kill -KILL $bg $daemon 2>/dev/null
    rm -rf "$tmpd"
    fail "$how: processes left by a rank outlived the job (pids $bg $daemon)"
  fi
  grep -q "still running when the last rank ended" "$tmpd/err" ||
    { rm -rf "$tmpd"; fail "$how: ptlrun did not name the processes it ended"; }
done
rm -rf "$tmpd"
# 6. closed standard descriptors
"$PTLRUN" -n 2 -- /bin/sh -c "echo before the job; exec $RING" >&- ||
  fail "a job started with stdout closed failed (exit $?)"
"$PTLRUN" -n 2 -- /bin/sh -c "echo before the job >&2; exec $RING" 2>&- >/dev/null ||
  fail "a job started with stderr closed failed (exit $?)"
"$PTLRUN" -n 2 -- /bin/sh -c "exec $RING <&-" <&- >/dev/null ||
  fail "a job started with stdin closed, whose ranks close theirs, failed (exit $?)"
echo "ptlrun_lifecycle: OK"
exit 0
