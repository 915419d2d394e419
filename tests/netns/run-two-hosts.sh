#!/bin/sh
# run-two-hosts.sh - one job on two "hosts" (issue 17 item 4, docs/ofi.md):
# two network namespaces joined by a veth pair, Open MPI's mpirun started in
# the first, its remote-launch agent (nsagent.sh) starting orted in the
# second, ranks in both (PMIx wire-up). The transport is PTL_TRANSPORT=auto
# (ranks of one namespace through their "host"'s region, the others over
# tcp;ofi_rxm: transport/mix.c), or NETNS_TRANSPORT (ofi: every peer over
# libfabric; shm: PtlNIInit must refuse, case shmrefused).
#
#   usage: run-two-hosts.sh <case> <mp_exchange|netns_kill|mp_kill|mp_liveness> <mp_driver>
#          run-two-hosts.sh job <program> <mp_driver> <np> <stdout-has> [args...]
#
#   job       any job program (the multi-process scenarios of tests/mp, the
#             client patterns of mp_patterns --check) on <np> ranks: 4 as 2
#             per namespace, 3 as 2+1, 2 as 1+1, placed round robin
#             (--map-by node: ranks 0 and 1, 2 and 3 on different "hosts",
#             so the pairs of the pattern tests cross); the job must exit 0 within
#             90 s, and its stdout contain <stdout-has> unless that is empty.
#             NETNS_JOB_ENV="VAR=value ..." is passed to every rank (-x).
#             NETNS_MAP=slot places them in order instead (4: ranks 0 and 1
#             on the first "host", 2 and 3 on the second: the pairs of the
#             pattern tests talk through their host's region).
#   alltoall  4 ranks (2 per namespace): mp_exchange's all-to-all with data
#             checks at 8 B, 64 KiB and 1 MiB.
#   late      the same over a second veth pair (ptl1) whose far end comes up
#             only once the ranks have started: libfabric offers only
#             loopback until the interface runs, and a rank must wait for it
#             rather than publish 127.0.0.1 (transport/ofi.c, open_fabric:
#             the cause of the intermittent "fi_send ... Invalid argument").
#   shmrefused
#             PTL_TRANSPORT=shm with 2 ranks per namespace: PtlNIInit refuses
#             (the peers on the other "host" cannot be reached through a
#             region), saying so, and the job ends.
#   loref     the ranks of the second namespace see only loopback
#             (FI_TCP_IFACE=lo): their PtlNIInit must fail saying why, and
#             the job must end, instead of hanging on unreachable names.
#   kill      2 ranks (1 per namespace), netns_kill: rank 1 (second
#             namespace) SIGKILLs itself while rank 0's engine pulls 256 MiB
#             from it; rank 0 must report the failure (a failed REPLY_END or
#             PtlEQPoll error) within seconds. mpirun runs with
#             --enable-recovery so that it lets the survivor report instead of
#             ending it at once.
#   kill_target, kill_initiator
#             2 ranks (1 per namespace), mp_kill: rank 1 is SIGKILLed as the
#             target (resp. initiator) of a 64 MiB put; rank 0 must report it.
#   live      3 ranks, 0 and 1 in the first namespace, 2 alone in the
#             second: mp_liveness kill, rank 2 is SIGKILLed while nobody has
#             anything in flight to it; ranks 0 and 1 (the other "host") must
#             each see their NI fail within 10 s.
#   livenode  4 ranks (2 per namespace, in order), mp_liveness kill: rank 3
#             dies beside rank 2, which shares its node region: rank 2 (the
#             region's watch thread) and ranks 0 and 1 (the other "host":
#             ofi's probe) must each see their NI fail within 10 s.
#   livespin  as livenode, mp_liveness killspin: the survivors spin on
#             PtlEQGet instead of blocking in PtlEQPoll; each must get
#             PTL_FAIL (in host mode only the spinner's naps read the probe's
#             timer: engine/wait.c, pt_wait_polled_empty).
#   livefini  4 ranks (2 per namespace), mp_liveness fini: rank 3 (second
#             namespace) leaves in order (PtlNIFini) while nobody has anything
#             in flight to it: no survivor's NI may fail (the probe must not
#             take an orderly exit for a death). (mp_liveness kill with 4
#             ranks, the victim beside a survivor in the second namespace:
#             every survivor saw the death in 3.1-3.8 s, but Open MPI 4.1.4's
#             mpirun --enable-recovery then never ended: not a case here.)
#   livefinilate
#             as livefini, and rank 2 (beside rank 3) puts to rank 3 once it
#             has left: that late send must not hold up rank 2's probes to
#             the live ranks (mp_liveness finilate; quiet for 6 s).
#   livestop  4 ranks (2 per namespace), mp_liveness stop: rank 3 stops
#             (SIGSTOP) right after PtlNIInit, before its connections exist,
#             and is continued 5 s later: a stopped process is alive, nobody
#             may take it for dead (the probe's verdict is the kernel's answer
#             at its address: accepted).
#             These run under --enable-recovery and pmix_recovery.sh
#             (tests/mp) counts the survivors' lines.
#
# The mode comes from PTL_OFFLOAD (passed to every rank). Namespaces and veth
# ends carry this shell's PID, so parallel runs do not collide; the addresses
# (10.213.0.0/24, 10.213.1.0/24) exist only inside the two namespaces, no
# default route. The job runs under mp_driver (time bound, output checks, no
# process left behind) in a mount namespace of its own with a fresh /dev/shm,
# which must still be empty at the end. Everything is removed on exit (trap).
# Where namespaces cannot be made: a SKIP line and exit 77 (SKIP_RETURN_CODE).
set -u
what=${1:?usage: run-two-hosts.sh <case> <program> <mp_driver>}
prog=${2:?program}
drv=${3:?mp_driver}
shift 3
here=$(cd "$(dirname "$0")" && pwd)

skip() {
    echo "SKIP: run-two-hosts.sh: $*" >&2
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
command -v unshare >/dev/null 2>&1 || skip "no 'unshare' command (util-linux)"
mpirun=${PTL_MPIRUN:-$(command -v mpirun)}
[ -n "$mpirun" ] || skip "no mpirun"

tag=$$
nsa=ptlA$tag
nsb=ptlB$tag
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptl-netns.XXXXXX") || exit 1
waiter=
cleanup() {
    [ -n "$waiter" ] && kill $waiter 2>/dev/null
    for ns in $nsa $nsb; do
        if [ -e /run/netns/$ns ]; then
            pids=$(ip netns pids $ns 2>/dev/null)
            [ -n "$pids" ] && kill -9 $pids 2>/dev/null
            ip netns del $ns 2>/dev/null
        fi
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add $nsa 2>/dev/null || skip "cannot create a network namespace (ip netns add)"
ip netns add $nsb || skip "cannot create a second network namespace"
# Veth pairs, one end in each namespace, both ends of pair k named ptl<k> (so
# that one FI_TCP_IFACE names the right interface on both "hosts"): ptl0
# (10.213.0.0/24) for ORTE and the job; ptl1 (10.213.1.0/24, case late) for the
# job, its second end left down until the ranks run.
pairs=0
[ $what = late ] && pairs="0 1"
for k in $pairs; do
    ip link add ptla$k.$tag netns $nsa type veth peer name ptlb$k.$tag netns $nsb ||
        skip "cannot create a veth pair"
    ip -n $nsa link set ptla$k.$tag name ptl$k || exit 1
    ip -n $nsb link set ptlb$k.$tag name ptl$k || exit 1
    ip -n $nsa addr add 10.213.$k.1/24 dev ptl$k || exit 1
    ip -n $nsb addr add 10.213.$k.2/24 dev ptl$k || exit 1
done
for ns in $nsa $nsb; do
    ip -n $ns link set lo up && ip -n $ns link set ptl0 up || exit 1
done
[ $what = late ] && { ip -n $nsa link set ptl1 up || exit 1; }
# ptl0 running (operational state UP: carrier seen by the kernel's link
# watch) on both sides before the job starts.
ok=0
for i in $(seq 1 100); do
    if ip -n $nsa -br link show ptl0 | grep -q " UP " &&
        ip -n $nsb -br link show ptl0 | grep -q " UP "; then
        ok=1
        break
    fi
    sleep 0.1
done
[ $ok = 1 ] || { echo "run-two-hosts.sh: the veth pair did not come up" >&2; exit 1; }

export NSAGENT_HOSTS="10.213.0.1=$nsa 10.213.0.2=$nsb"
export PTL_TRANSPORT="${NETNS_TRANSPORT:-auto}" PTL_OFI_PROVIDER="${PTL_OFI_PROVIDER:-tcp;ofi_rxm}"
export FI_TCP_IFACE=ptl0 FI_SOCKETS_IFACE=ptl0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_orte_tmpdir_base="$tmp"
export PTL_OFFLOAD="${PTL_OFFLOAD:-1}"
mpi="$mpirun --mca plm_rsh_agent $here/nsagent.sh --mca plm_rsh_no_tree_spawn 1"
mpi="$mpi --mca oob_tcp_if_include 10.213.0.0/24 --mca btl self"
# The two "hosts" share this machine's cores, but each orted binds as if it
# were alone (--bind-to core, Open MPI's default for 2 ranks): rank 0 and
# rank 1 land on the same core 0, with their NIC threads, and the kernel's
# group scheduling can leave one of them runnable but unscheduled for 5-40 s
# while the other spins on PtlEQGet (seen in /proc/<pid>/task/*/schedstat:
# run time frozen, every thread R). Real hosts have cores of their own.
mpi="$mpi --bind-to none"
mpi="$mpi -x PTL_TRANSPORT -x PTL_OFFLOAD -x PTL_OFI_PROVIDER -x FI_TCP_IFACE -x FI_SOCKETS_IFACE"
np4="-H 10.213.0.1:2,10.213.0.2:2 -np 4"
drv="$drv --no-residue --settle 5"
case $what in
job)
    np=${1:?job: number of ranks}
    has=${2?job: stdout-has (may be empty)}
    shift 2
    case $np in
    4) hosts=10.213.0.1:2,10.213.0.2:2 ;;
    3) hosts=10.213.0.1:2,10.213.0.2:1 ;;
    2) hosts=10.213.0.1:1,10.213.0.2:1 ;;
    *) echo "run-two-hosts.sh: job: 2, 3 or 4 ranks, not $np" >&2; exit 2 ;;
    esac
    xenv=
    for kv in ${NETNS_JOB_ENV:-}; do xenv="$xenv -x $kv"; done
    job="$drv --within 90"
    [ -n "$has" ] && job="$job --stdout-has \"$has\""
    job="$job -- $mpi$xenv -H $hosts --map-by ${NETNS_MAP:-node} -np $np $prog $*"
    ;;
alltoall)
    job="$drv --within 90 --stdout-has \"all pairs OK\" -- $mpi $np4 $prog 8 65536 1048576"
    ;;
late)
    job="$drv --within 90 --stdout-has \"all pairs OK\" --"
    job="$job $mpi -x FI_TCP_IFACE=ptl1 $np4 $prog 8 65536 1048576"
    # ptl1's second end comes up once the four ranks exist (then a second
    # more, in PtlNIInit by then), from the initial namespace
    (
        for i in $(seq 1 300); do
            na=$(for p in $(ip netns pids $nsa); do cat /proc/$p/comm; done 2>/dev/null |
                grep -c '^mp_exchange$')
            nb=$(for p in $(ip netns pids $nsb); do cat /proc/$p/comm; done 2>/dev/null |
                grep -c '^mp_exchange$')
            [ "$na" = 2 ] && [ "$nb" = 2 ] && break
            sleep 0.1
        done
        sleep 1
        ip -n $nsb link set ptl1 up
    ) &
    waiter=$!
    ;;
shmrefused)
    # PTL_TRANSPORT=shm in a job with ranks on two hosts: every PtlNIInit
    # fails saying why (after the wire-up fence, so all four), the job ends
    export PTL_TRANSPORT=shm
    job="$drv --nonzero --within 60 --stderr-has \"shared-memory transport cannot reach\""
    job="$job -- $mpi $np4 $prog"
    ;;
loref)
    job="$drv --nonzero --within 60 --stderr-has \"offers only loopback addresses\" --"
    job="$job $mpi -H 10.213.0.1:2,10.213.0.2:2 -np 2 $prog : -np 2 env FI_TCP_IFACE=lo $prog"
    ;;
kill)
    # (mpirun's status under --enable-recovery says nothing: reported, not judged)
    job="$drv --within 45 --stderr-has \"rank 1: raising SIGKILL while rank 0 pulls\""
    job="$job --stdout-has \"rank 0: saw rank 1's death\" -- /bin/sh -c"
    job="$job '$mpi --enable-recovery -H 10.213.0.1:1,10.213.0.2:1 -np 2 $prog;"
    job="$job echo mpirun exited \$? >&2'"
    ;;
kill_target | kill_initiator | live | livenode | livespin | livefini | livefinilate | livestop)
    # under --enable-recovery, the survivors' lines counted by pmix_recovery.sh
    # (docs/ofi.md, "Peer death in a PMIx job")
    rec="/bin/sh $here/../mp/pmix_recovery.sh \"\$NETNS_RE\""
    case $what in
    kill_*)
        export NETNS_RE="^rank 0: (PtlEQPoll: PTL_|.* ni_fail_type PTL_NI_(PEER_DIED|FAIL|UNDELIVERABLE|DROPPED))"
        rec="$rec 1 $mpi --enable-recovery -H 10.213.0.1:1,10.213.0.2:1 -np 2 $prog ${what#kill_}"
        ;;
    live)
        export NETNS_RE="saw the death: PtlEQPoll PTL_FAIL"
        rec="$rec 2 $mpi --enable-recovery -H 10.213.0.1:2,10.213.0.2:1 -np 3 $prog kill"
        ;;
    livenode)
        export NETNS_RE="saw the death: PtlEQPoll PTL_FAIL"
        rec="$rec 3 $mpi --enable-recovery $np4 $prog kill"
        ;;
    livespin)
        export NETNS_RE="saw the death: PtlEQGet PTL_FAIL"
        rec="$rec 3 $mpi --enable-recovery $np4 $prog killspin"
        ;;
    livefini)
        export NETNS_RE="no false death"
        rec="$rec 3 $mpi --enable-recovery $np4 $prog fini"
        ;;
    livefinilate)
        export NETNS_RE="no false death"
        rec="$rec 3 $mpi --enable-recovery $np4 $prog finilate"
        ;;
    livestop)
        export NETNS_RE="no false death"
        rec="$rec 4 $mpi --enable-recovery $np4 $prog stop"
        ;;
    esac
    job="$drv --within 60 --stdout-has \"pmix_recovery: OK\" -- $rec"
    ;;
*)
    echo "run-two-hosts.sh: unknown case $what" >&2
    exit 2
    ;;
esac
# The job, in a mount namespace with an empty /dev/shm of its own (the
# namespaces' processes inherit it): it must still be empty afterwards.
out="$tmp/job.out"
err="$tmp/job.err"
ip netns exec $nsa unshare -m --propagation private /bin/sh -c "
    mount -t tmpfs -o mode=1777 ptl-netns-shm /dev/shm || exit 1
    $job
    rc=\$?
    left=\$(ls -A /dev/shm)
    if [ -n \"\$left\" ]; then echo \"run-two-hosts.sh: left in /dev/shm: \$left\" >&2; rc=1; fi
    exit \$rc" >"$out" 2>"$err"
rc=$?
cat "$out"
cat "$err" >&2
if [ $rc = 0 ] && [ $what = loref ]; then
    # both ranks of the second namespace refused; the first two did not
    n=$(grep -c "offers only loopback addresses" "$err")
    if [ "$n" != 2 ]; then
        echo "run-two-hosts.sh: $n ranks refused loopback, expected 2" >&2
        rc=1
    fi
fi
[ $rc = 0 ] && echo "run-two-hosts.sh $what: OK"
exit $rc
