#!/bin/sh
# nsagent.sh - Open MPI's remote-launch agent (plm_rsh_agent) for the two-"host"
# test (run-two-hosts.sh): called as `nsagent.sh [options] <host> <command...>`
# like ssh, it runs the command in the network namespace that owns <host>.
# NSAGENT_HOSTS maps the hosts: "addr=namespace addr=namespace".
while [ $# -gt 0 ]; do
    case "$1" in
    -*) shift ;;   # ssh-style options ORTE may add: not meaningful here
    *) break ;;
    esac
done
host=$1
shift
for pair in $NSAGENT_HOSTS; do
    if [ "${pair%%=*}" = "$host" ]; then
        exec ip netns exec "${pair#*=}" /bin/sh -c "$*"
    fi
done
echo "nsagent.sh: host $host is not one of NSAGENT_HOSTS ($NSAGENT_HOSTS)" >&2
exit 255
