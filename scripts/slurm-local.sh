#!/usr/bin/env bash
# A one-node Slurm on this host's loopback, for the srun test
# (tests/integration/srun_cluster_test.sh): slurmctld and slurmd as root with a
# private configuration (SLURM_CONF under DIR, nothing written to /etc/slurm),
# munge for authentication (Debian's slurm-wlm and munge packages).
#   scripts/slurm-local.sh start DIR   # prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-local.sh stop DIR
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: slurm-local.sh start|stop DIR}" && cd "$2" && pwd)
export SLURM_CONF=$dir/slurm.conf
stop() {
  local pids=()
  for d in slurmd slurmctld; do
    [ -f "$dir/$d.pid" ] && pids+=("$(cat "$dir/$d.pid")")
  done
  [ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2> /dev/null || true
  for _ in $(seq 100); do  # each exits within 10 s, or is killed
    kill -0 "${pids[@]}" 2> /dev/null || break
    sleep 0.1
  done
  [ ${#pids[@]} = 0 ] || kill -9 "${pids[@]}" 2> /dev/null || true
  # munged too, when this script started it
  if [ -f "$dir/munged.started" ] && [ -f /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2> /dev/null || true
    rm -f "$dir/munged.started"
  fi
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "slurm-local.sh: start or stop, not '$cmd'"; exit 2; }
for tool in slurmctld slurmd munged srun; do
  command -v "$tool" > /dev/null || { echo "slurm-local.sh: no $tool (apt-get install slurm-wlm)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-local.sh: slurmd must run as root"; exit 1; }
if ! munge -n > /dev/null 2>&1; then  # munged not running yet: start it as its user
  install -d -o munge -g munge /run/munge
  runuser -u munge -- /usr/sbin/munged
  touch "$dir/munged.started"
fi
ports=$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r ctld_port d_port <<< "$ports"
host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"
cat > "$SLURM_CONF" <<CONF
ClusterName=spindle-local
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
slurmctld
slurmd
for _ in $(seq 100); do
  sinfo -h -o %t 2> /dev/null | grep -Eq 'idle|mix|alloc' && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
echo "slurm-local.sh: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log"
stop
exit 1
