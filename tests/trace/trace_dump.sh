#!/bin/sh
# trace_dump.sh WHAT PTLRUN PTL_INFO TRACE_STOP MP_KILL MP_PATTERNS - the job
# dump (issue 14; "My job hangs" in README.md) says why a job hangs. The
# mode comes from PTL_OFFLOAD (0: ptlrun --host-matching); PTL_TRACE=1.
#
#   stop      3 ranks, rank 1 stops itself (SIGSTOP), ranks 0 and 2 put to
#             it for ever (tests/trace/trace_stop.c). `ptlrun --dump PID`
#             from outside, SIGUSR1 to ptlrun, and --timeout each print a
#             dump that names rank 1 STOPPED and its senders with 0 credits
#             towards it, the senders' traces end in no-credit towards rank
#             1; the saved dump (--dump-file) decodes with ptl_info --trace
#             to the same.
#   kill      rank 1 puts 64 MiB to rank 0 and dies by SIGKILL while rank 0
#             pulls it (mp_kill initiator); --dump-on-fail's dump shows the
#             job failed (by rank 1, or by rank 0 when it left first: it
#             exits without PtlNIFini once its END event failed), rank 1 dead and rank 0's failed transfer
#             from peer 1 (xfer.FAIL), and rank 0's END event failed:
#             PEER_DIED, or FAILED (PTL_NI_FAIL) when the pull failed before
#             the death was seen (the killed rank is a zombie until ptlrun
#             reaps it, and a pull from it fails at once). A run in which the
#             transfer completed before the kill landed (a loaded machine) is
#             repeated, at most 3 runs.
#   watchdog  the pattern matrix's program; rank 1 is stopped from outside
#             mid-run: rank 0's watchdog fires and asks ptlrun for a dump,
#             which is in the output (the test log) and names rank 1. A loaded
#             machine may keep rank 0 in its set-up past the stop (seen under
#             ASan in a full run): its watchdog then names the set-up step
#             (STALL) instead of a wait (HANG), and the run is repeated, at
#             most 3 runs.
# Prints "trace_dump WHAT: OK" or "FAIL: ...".
set -u
what=$1 PTLRUN=$2 INFO=$3 STOP=$4 KILL=$5 PAT=$6
hm=
[ "${PTL_OFFLOAD:-1}" = 0 ] && hm=--host-matching
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$tmp"
}
fail() {
  echo "---- ptlrun's stderr:"; cat "$tmp/err" 2>/dev/null
  echo "trace_dump $what: FAIL: $*"
  cleanup
  exit 1
}
has() { # has FILE REGEX WHAT
  grep -Eq "$2" "$1" || fail "$3 (no /$2/ in $(basename "$1"))"
}

case $what in
stop)
  "$PTLRUN" -n 3 $hm --timeout 12 --dump-records 20 --dump-file "$tmp/dump.bin" -- \
    "$STOP" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  # on demand, from outside, until the senders are out of credits
  ok=
  for i in $(seq 1 40); do
    sleep 0.25
    "$PTLRUN" --dump "$pid" >"$tmp/ondemand" 2>&1 || continue
    if grep -q "rank 0 -> rank 1 req queue full" "$tmp/ondemand" &&
       grep -q "rank 2 -> rank 1 req queue full" "$tmp/ondemand"; then ok=1; break; fi
  done
  [ -n "$ok" ] || { cp "$tmp/ondemand" "$tmp/err"; fail "ptlrun --dump never showed both senders out of credits"; }
  has "$tmp/ondemand" "^  rank 1 \(pid [0-9]+\) is STOPPED" "ptlrun --dump does not name rank 1 stopped"
  has "$tmp/ondemand" "rank 0 has 0 credits towards rank 1" "ptlrun --dump: rank 0's credits"
  # the region's guest slots (PTL_JOB joiners) are not ranks, and unused ones are not GONE
  has "$tmp/ondemand" "^job [0-9]+: 3 ranks and [0-9]+ guest slots \(0 taken\)" "ptlrun --dump: ranks and guest slots"
  if grep -Eq "^---- (rank|guest) ([3-9]|[1-9][0-9])|guest [0-9]+ \(pid|is GONE" "$tmp/ondemand"; then
    fail "ptlrun --dump lists unused guest slots (or a rank past the job's 3) or a GONE process"
  fi
  kill -USR1 "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ "$rc" = 124 ] || fail "ptlrun exited $rc, not 124 (--timeout)"
  has "$tmp/err" "job dump \(SIGUSR1 from pid" "no dump on SIGUSR1"
  has "$tmp/err" "job dump \(--timeout 12 s\)" "no dump at the timeout"
  for f in "$tmp/err"; do
    has "$f" "^  rank 1 \(pid [0-9]+\) is STOPPED" "the dump does not name rank 1 stopped"
    has "$f" "^  rank 0 -> rank 1 req queue full: rank 0 has 0 credits towards rank 1 \(32 messages" "rank 0's credits"
    has "$f" "^  rank 2 -> rank 1 req queue full: rank 2 has 0 credits towards rank 1" "rank 2's credits"
    has "$f" "^    0 -> 1 req: head [0-9]+ tail [0-9]+: 32/32, credits 0 \(FULL\)" "rank 0's queue"
    has "$f" "no-credit +req - peer 1" "the senders' traces do not end in no-credit towards rank 1"
    has "$f" "commands queued per thread ring \(1 rings\): [1-9]" "no queued commands on a sender"
  done
  "$INFO" --trace "$tmp/dump.bin" >"$tmp/decoded" 2>&1 || fail "ptl_info --trace failed"
  has "$tmp/decoded" "job dump \(--timeout 12 s\)" "the saved dump is not the timeout's"
  has "$tmp/decoded" "^  rank 1 \(pid [0-9]+\) is STOPPED" "decoded: rank 1 stopped"
  has "$tmp/decoded" "rank 2 has 0 credits towards rank 1" "decoded: rank 2's credits"
  has "$tmp/decoded" "no-credit +req - peer 1" "decoded: no-credit records"
  printf 'garbage' >"$tmp/bad.bin"
  "$INFO" --trace "$tmp/bad.bin" >"$tmp/bad" 2>&1 && fail "ptl_info --trace accepted garbage"
  has "$tmp/bad" "not a libportals dump" "ptl_info --trace: no reason for refusing garbage"
  ;;
kill)
  # Rank 1 dies at its SEND_START, but a loaded machine may keep it off the core
  # until the whole transfer is done (its engine wrote its cooperative half, rank 0
  # pulled the rest): then rank 0's PUT_END is rightly a success and there is no
  # failed transfer to show. Such a run is repeated (at most 3 runs).
  for attempt in 1 2 3; do
    "$PTLRUN" -n 2 $hm --timeout 30 --dump-on-fail --dump-records 0 -- "$KILL" initiator \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    grep -q "^rank 0: PTL_EVENT_PUT_END ni_fail_type PTL_NI_OK mlength 67108864" "$tmp/err" ||
      break
    echo "trace_dump kill: run $attempt: the transfer completed before rank 1's SIGKILL; again"
  done
  [ "$rc" = 137 ] || fail "ptlrun exited $rc, not 137"
  has "$tmp/err" "job dump \(--dump-on-fail" "no dump after the failure"
  has "$tmp/err" "job FAILED \(PTL_NI_PEER_DIED\), first dead rank [01]" "the job's failure"
  has "$tmp/err" "^  rank 1 \(pid [0-9]+\) is GONE, marked dead in the job" "rank 1 dead"
  has "$tmp/err" "^  rank 0: xfer\.FAIL peer 1, [0-9]+ bytes" "rank 0's failed transfer"
  has "$tmp/err" "xfer\.start +peer 1, 67108864 bytes" "rank 0's trace: the transfer's start"
  has "$tmp/err" "event +PTL_EVENT_PUT_END (PEER_DIED|FAILED)" "rank 0's trace: PUT_END failed"
  ;;
watchdog)
  for attempt in 1 2 3; do
    "$PTLRUN" -n 2 $hm --timeout 40 --dump-records 20 -- "$PAT" --check --watchdog 1 \
      -n 100000000 --wait eqwait >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    r1=
    for i in $(seq 1 100); do
      for c in $(pgrep -P "$pid"); do
        tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx "PTL_MY_RID=1" && r1=$c
      done
      [ -n "$r1" ] && break
      sleep 0.05
    done
    [ -n "$r1" ] || fail "rank 1 not found"
    sleep 0.5
    kill -STOP "$r1"
    wait "$pid"
    rc=$?
    pid=
    grep -Eq "watchdog: no progress outside a wait .*\(last step: setup\): STALL" "$tmp/err" ||
      break
    echo "trace_dump watchdog: run $attempt: rank 0 was still setting up at the stop; again"
  done
  [ "$rc" != 0 ] || fail "the job did not fail"
  has "$tmp/err" "watchdog: one wait .* HANG" "rank 0's watchdog did not fire"
  has "$tmp/err" "asked ptlrun \(pid [0-9]+\) for a dump" "the watchdog did not ask for a dump"
  has "$tmp/err" "job dump \(SIGUSR1 from pid [0-9]+\)" "no dump in the log"
  has "$tmp/err" "^  rank 1 \(pid $r1\) is STOPPED" "the dump does not name rank 1 stopped"
  has "$tmp/err" "^---- rank 0 \(pid [0-9]+\): .*attached" "the dump has no rank 0"
  has "$tmp/err" "^  engine: token " "the dump has no engine state"
  ;;
*)
  fail "unknown test $what"
  ;;
esac
cleanup
echo "trace_dump $what: OK"
