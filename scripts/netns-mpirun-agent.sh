#!/bin/sh
# mpirun's rsh agent for the namespace test bed (scripts/netns-cluster.sh): as
# ssh would start Open MPI's daemon on machine N, `mpirun --host ns0,ns1,...
# --mca plm_rsh_agent THIS` starts it in namespace $SPINDLE_NETNS-N, with its
# own mounts (the bed's private data folder and /tmp) and a UTS namespace of its
# own named nsN. Open MPI calls it as `THIS HOST COMMAND...`
# (COMMAND a shell line, as ssh takes it).
set -eu
host=$1
shift
case "$host" in
  ns[0-9]*) ;;
  *) echo "netns-mpirun-agent: host '$host' is not nsN" >&2; exit 2 ;;
esac
# Machine N of the bed: its network namespace and its own mounts (a private
# data folder and /tmp, scripts/netns-cluster.sh exec).
exec "$(dirname "$0")/netns-cluster.sh" exec "${SPINDLE_NETNS:?run under scripts/netns-cluster.sh}" "${host#ns}" -- \
  unshare --uts sh -c "hostname $host && $*"
