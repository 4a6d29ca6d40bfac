# Sourced by the network-namespace tests. netns_probe TEST exits 77 (skipped)
# where namespaces cannot be made (it needs $name, the test's prefix). body() runs the test's checks() in the
# namespaces' shell and stops the processes it started in the background
# (their pids in bg) there, before the namespaces go. Export both with
# `export -f body checks` and run `netns-cluster.sh run ... -- bash -c body`.
body() {
  bg=()
  checks
  local rc=$?
  for p in "${bg[@]}"; do kill -TERM "$p" 2> /dev/null; done
  for p in "${bg[@]}"; do wait "$p" 2> /dev/null; done
  return $rc
}

netns_probe() {
  if ! ip netns add "${name}-probe" 2> /dev/null; then
    echo "$1: skipped: cannot create network namespaces here (needs root and iproute2)"
    exit 77
  fi
  ip netns del "${name}-probe"
}

# mpirun_netns_probe TEST: netns_probe, and exits 77 without mpirun or UTS
# namespaces (the mpirun tests' rsh agent names each namespace's host).
mpirun_netns_probe() {
  if ! command -v mpirun > /dev/null; then
    echo "$1: skipped: no mpirun here (Debian's Open MPI: apt-get install openmpi-bin)"
    exit 77
  fi
  netns_probe "$1"
  if ! unshare --uts true 2> /dev/null; then
    echo "$1: skipped: cannot create UTS namespaces here"
    exit 77
  fi
}

# mpirun_cluster_start [NODE_ARGS...]: inside body, mpirun -n 3 starts `spindle
# node` on machines ns0..ns2 of the bed (data in the bed's data folder: the TOML,
# parts/, m/; ranks 1 and 2 fetch from rank 0's file door) and one process of
# $work/whole and $work/m beside them on loopback; waits for the three doors and
# the one, whose address it leaves in $one. Output in $work/mpirun.log.
mpirun_cluster_start() {
  local subnet=$SPINDLE_NETNS_SUBNET data opened=0
  data=$("$root/scripts/netns-cluster.sh" data "$SPINDLE_NETNS")
  # Open MPI's own links on the bed's bridge subnet; the daemons through the
  # agent; the ranks' UCX over TCP only (no shared memory between "machines").
  UCX_TLS=tcp,self mpirun --allow-run-as-root --host ns0,ns1,ns2 --map-by node -n 3 --tag-output \
    --mca plm_rsh_agent "$root/scripts/netns-mpirun-agent.sh" \
    --mca oob_tcp_if_include "${subnet}.0/24" --mca btl self,tcp --mca btl_tcp_if_include "${subnet}.0/24" \
    -x SPINDLE_CLUSTER_TOKEN -x UCX_TLS -x SPINDLE_PROGRESS \
    "$spindle" node --config "$data/cluster.toml" --dataset "$data/parts" --model "$data/m" \
    --files 0.0.0.0:7800 --fetch-from "${subnet}.1:7800" \
    --listen 0.0.0.0:7700 --admin-token-file "$data/admin.token" "$@" < /dev/null > "$work/mpirun.log" 2>&1 &
  local job=$!
  bg+=($job)
  "$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
  bg+=($!)
  one=""
  for _ in $(seq 900); do
    [ -z "$one" ] && one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
    opened=$(grep -c "^\[1,[0-2]\]<stdout>:listening 0.0.0.0:7700" "$work/mpirun.log")
    [ -n "$one" ] && [ "$opened" = 3 ] && return 0
    kill -0 "$job" 2> /dev/null || break  # a rank failed: mpirun stopped the job
    sleep 0.2
  done
  echo "FAIL: $opened of 3 doors opened (one process: '${one}')"
  tail -40 "$work/mpirun.log"
  return 1
}

# judge_three_doors MODEL ONE WHAT: inside body, 9 seeded calls of MODEL, 3 through
# each of the bed's doors (SUBNET.1-3:7700), each judged against the process at
# ONE (tests/support/judge_answer.py); prints "WHAT: N of 9 ..." and fails unless
# all 9 answer as one process.
judge_three_doors() {
  local model=$1 one=$2 what=$3 right=0 i seed door a b
  for i in $(seq 1 9); do
    seed=$(( (i * 337) % 4096 )); door="${SPINDLE_NETNS_SUBNET}.$((i % 3 + 1)):7700"
    a=$("$spindle" client --connect "$door" --model "$model" infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
    b=$("$spindle" client --connect "$one" --model "$model" infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
    if [ "$(python3 "$root/tests/support/judge_answer.py" "$a" "$b")" = right ]; then
      right=$((right + 1))
    else
      echo "FAIL: $what: call $i of $model (seed $seed) through $door: cluster $a; one process $b"
    fi
  done
  echo "$what: $right of 9 seeded calls of $model, 3 through each rank's door, answered as one process"
  [ "$right" -eq 9 ]
}
