#!/bin/sh
# shm_cleanup_names.sh PTLRUN MP_RING - ptlrun's start-up clean-up removes
# only what it can prove is its own and stale (issue 12 item 14):
#   1. a live named job whose name looks like an old-style creator's
#      temporary (<job>.c<pid of an exited process>) keeps its segment while
#      another ptlrun starts, and then completes;
#   2. (root) such a name owned by another uid is left alone;
#   3. a creator's temporary (<job>~<pid>) whose creator is gone is removed.
# Every name it makes is removed before it exits.
set -u
PTLRUN=$1
RING=$2
uid=$(id -u)
dead=$(sh -c 'echo $$') # a process that has exited
job=live$$.c$dead
seg=/dev/shm/ptl-$uid-$job
foreign=/dev/shm/ptl-$uid-foreign$$.c$dead
# The temporary's creator stays alive until just before our ptlrun starts:
# every other ptlrun of a parallel ctest run cleans stale names at its start,
# and would remove a temporary of a dead creator under our setup.
sleep 60 &
holder=$!
tmpseg=/dev/shm/ptl-$uid-stale$$~$holder
r0=
cleanup() {
  [ -n "$r0" ] && kill -9 "$r0" 2>/dev/null
  [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
  rm -f "$seg" "$foreign" "$tmpseg"
}
fail() { echo "shm_cleanup_names: FAIL: $*" >&2; cleanup; exit 1; }

# rank 0 of 2 creates the segment and waits for rank 1
PTL_JOB=$job PTL_NRANKS=2 PTL_MY_RID=0 PTL_NIDMAP=0:0 PTL_PIDMAP=0:1 "$RING" 20 &
r0=$!
i=0
while [ ! -e "$seg" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$seg" ] || fail "rank 0 did not create $seg"
if [ "$uid" -eq 0 ]; then
  : >"$foreign" && chown 65534:65534 "$foreign" && chmod 600 "$foreign" \
    || fail "cannot make $foreign (test setup)"
fi
(umask 077 && : >"$tmpseg") || fail "cannot make $tmpseg (test setup)"
kill -9 "$holder"
wait "$holder" 2>/dev/null
holder=

"$PTLRUN" -v -n 1 -- /bin/true || fail "ptlrun -n 1 /bin/true failed"
[ -e "$seg" ] || fail "ptlrun's clean-up removed $seg of a live job"
[ "$uid" -ne 0 ] || [ -e "$foreign" ] || fail "ptlrun's clean-up removed uid 65534's $foreign"
[ -e "$tmpseg" ] && fail "ptlrun left the stale temporary $tmpseg"

PTL_JOB=$job PTL_NRANKS=2 PTL_MY_RID=1 PTL_NIDMAP=0:0 PTL_PIDMAP=0:1 "$RING" 20 \
  || fail "rank 1 of job $job failed"
wait "$r0" || { r0=; fail "rank 0 of job $job failed"; }
r0=
[ -e "$seg" ] && fail "$seg left behind after the job"
cleanup
echo "shm_cleanup_names: OK"
exit 0
