#!/bin/sh
# env_ns.sh PTLRUN MP_RING - ptlrun in the environments a container gives it
# (an adversarial tester's findings, 2026-12-05). Each case runs in a mount
# namespace of its own with a private /dev/shm, so nothing it does reaches
# another job's segments. Skipped (77) where namespaces cannot be made.
#   room:    --named with a /dev/shm too small for the region: ptlrun says
#            "No space left on device" and exits 1 (before: the sparse file
#            was made, and ranks died of SIGBUS mid-run);
#   pid1:    ptlrun as PID 1 of a PID namespace (a container's entrypoint):
#            the ranks watch it (before: "PTL_LAUNCHER_PID=1 is not a process
#            id", and no watch);
#   otherns: a ptlrun --named started in another PID namespace while a job
#            runs: it must not take the job's region for a dead job's (its
#            pids are not visible there) and remove it; the job completes
#            (before: removed, and the late rank hung alone in a new one).
set -u
PTLRUN=$1
RING=$2
unshare -m true 2>/dev/null || { echo "env_ns: SKIP (no mount namespaces)"; exit 77; }
unshare -m -pf --mount-proc true 2>/dev/null || { echo "env_ns: SKIP (no PID namespaces)"; exit 77; }
fail() { echo "env_ns: FAIL: $*" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# room
unshare -m sh -c 'mount -t tmpfs -o size=1M tmpfs /dev/shm && exec "$0" -n 4 --named --timeout 30 -- "$1" 5' \
  "$PTLRUN" "$RING" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 1 ] || fail "room: ptlrun exited $rc, expected 1"
grep -q "No space left on device" "$out" || fail "room: no 'No space left on device'"
grep -q "signal" "$out" && fail "room: a rank was killed by a signal"

# pid1
unshare -m -pf --mount-proc sh -c 'mount -t tmpfs -o size=64M tmpfs /dev/shm && exec "$0" -n 2 --timeout 30 -- "$1" 20' \
  "$PTLRUN" "$RING" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "pid1: the job exited $rc"
grep -q "not a process id" "$out" && fail "pid1: the ranks do not watch a launcher that is PID 1"

# otherns: job A's rank 1 attaches 2 s late; job B starts meanwhile in a PID
# namespace of its own (it sees none of A's pids) on the same /dev/shm
unshare -m sh -c '
  mount -t tmpfs -o size=64M tmpfs /dev/shm || exit 9
  "$0" -n 2 --named --timeout 40 -- sh -c "[ \"\$PTL_MY_RID\" = 1 ] && sleep 2; exec \"$1\" 20" &
  a=$!
  sleep 0.7
  unshare -pf --mount-proc "$0" -n 1 --named --timeout 20 -- true || exit 8
  wait $a' "$PTLRUN" "$RING" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "otherns: job A (or B) exited $rc"
grep -q "removed stale" "$out" && fail "otherns: job B removed job A's region"
echo "env_ns: OK"
