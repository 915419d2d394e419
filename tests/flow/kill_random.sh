#!/usr/bin/env bash
# kill_random.sh PTLRUN PROG [RUNS] [extra ptlrun options] - run kill_random
# with RUNS seeds (default 50). Every run must: exit with the victim's 137,
# finish within 15 s, have every survivor return from its waits by itself
# (it prints "survivor"; ptlrun never had to terminate anyone), and leave
# nothing of the job in /dev/shm.
set -u
ptlrun=$1 prog=$2 runs=${3:-50}
shift 3 || shift $#
fail=0
for seed in $(seq 1 "$runs"); do
  start=$(date +%s%N)
  outf=$(mktemp)
  "$ptlrun" --timeout 60 -n 3 --grace 10 "$@" -- "$prog" "$seed" >"$outf" 2>&1 &
  job=$!
  wait $job
  rc=$?
  out=$(cat "$outf")
  rm -f "$outf"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  survivors=$(grep -c "survivor" <<<"$out")
  # this job's own entries only (ptl-<uid>-<ptlrun pid>*): other jobs may run
  after=$(ls /dev/shm 2>/dev/null | grep -c "^ptl-$(id -u)-$job" || true)
  why=""
  [ "$rc" = 137 ] || why="$why exit=$rc(want 137)"
  [ "$ms" -le 15000 ] || why="$why took=${ms}ms"
  [ "$survivors" = 2 ] || why="$why survivors=$survivors(want 2)"
  grep -q "terminating" <<<"$out" && why="$why ptlrun-had-to-terminate"
  [ "$after" = 0 ] || why="$why shm-residue"
  if [ -n "$why" ]; then
    fail=$((fail + 1))
    echo "seed $seed (victim $((seed % 3)), phase $(( (seed / 3) % 3 ))): FAIL:$why"
    echo "$out" | sed 's/^/    /' | tail -8
  else
    echo "seed $seed (victim $((seed % 3)), phase $(( (seed / 3) % 3 ))): ok in ${ms} ms"
  fi
done
echo "$((runs - fail)) passed, $fail failed"
[ "$fail" = 0 ]
