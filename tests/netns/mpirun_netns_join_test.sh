#!/usr/bin/env bash
# A cluster of "real hosts" that grows and shrinks under load: `mpirun -n 3`
# starts three ranks in three namespaces of scripts/netns-cluster.sh (each its
# own disk: a private data folder and /tmp; 1 Gbit/s links; UCX over TCP), as
# in mpirun_netns_test, serving a partitioned Cora whose partitions and model
# are on rank 0's disk only (ranks 1 and 2 fetch theirs from its file door).
# While a load of seeded calls runs through the doors (each answer compared
# with one process's answer to the same call), a fourth rank on a fourth
# machine whose disk holds the TOML only fetches rank 0's partition and the
# model from rank 0's file door, joins (`node --join`), opens its door and
# answers; then it leaves (`cluster-leave`, exit 0); it joins again and is
# killed (kill -9), and the cluster re-plans without it and answers on.
# 0 wrong answers throughout; calls refused only while the dead rank's rows are
# re-planned, and only as `unavailable`; every door answers at the end.
# Usage: mpirun_netns_join_test.sh SPINDLE TEST_DATA_DIR. Skipped (77) without
# mpirun, namespaces or the test data folder's Cora.
set -uo pipefail
spindle=$1
data_dir=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/netns_body.sh"
name="spm$$"
if [ ! -e "$data_dir/cora/cora.cites" ]; then
  echo "mpirun_netns_join_test: skipped: no cora/cora.cites in the test data folder ('$data_dir')"
  exit 77
fi
mpirun_netns_probe mpirun_netns_join_test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bed="$root/scripts/netns-cluster.sh"

# Cora whole (one process's), a GraphSAGE model, a 3-rank TOML for the bed and
# its partition (40% of the 15.5 MB feature table per rank).
prepare_cora() {
  "$spindle" prepare --input "$data_dir/cora/cora.cites" --features "$data_dir/cora/cora.content.gz" \
    --undirected --out "$work/whole" > /dev/null 2>&1 || { echo "FAIL: spindle prepare"; return 1; }
  "$spindle" model init --arch graphsage --in 1433 --hidden 32 --classes 7 --seed 1 \
    --out-dir "$work/m" > /dev/null || return 1
  "$bed" toml "$SPINDLE_NETNS" 3 6500000 > "$work/cluster.toml"
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" > /dev/null ||
    { echo "FAIL: spindle partition"; return 1; }
}

# mpirun -n 3 on machines 0..2 (as mpirun_netns_test), one process beside them;
# then one process's answers to the load's seeded calls (want.json). The doors
# admit up to --max-queue calls (--slo-ms 0): on two busy cores the latency
# objective's limit would refuse some of the load as `overloaded`.
start_ranks() {
  mpirun_cluster_start --slo-ms 0 || return 1
  local i wants=()
  for i in $(seq 1 12); do
    wants+=("$("$spindle" client --connect "$one" --model graphsage infer --seeds $(( (i * 337) % 2708 )) \
      --sampler-seed "$i" --json)")
  done
  printf '%s\n' "${wants[@]}" | python3 -c 'import json, sys
ws = [json.loads(l) for l in sys.stdin]
assert all(w["status"] == "ok" for w in ws), ws
json.dump([{"seed": (i * 337) % 2708, "sampler_seed": i, "outputs": w["outputs"]}
           for i, w in enumerate(ws, 1)], open(sys.argv[1], "w"))' "$work/want.json" ||
    { echo "FAIL: one process did not answer"; return 1; }
}

# Two loaders of seeded calls through the doors (door_load.py), and beside them
# an open loop of 80 calls/s through rank 0's door (`client load`, answers not
# compared: its statuses are judged) in runs of 4 s until the test stops it,
# each with the phases it began and ended in.
start_load() {
  local subnet=$SPINDLE_NETNS_SUBNET l
  echo "${subnet}.1:7700 ${subnet}.2:7700 ${subnet}.3:7700" > "$work/doors"
  echo three > "$work/phase"
  loaders=()
  for l in 0 1; do
    python3 "$root/tests/support/door_load.py" "$spindle" "$work/want.json" "$work/doors" \
      "$work/phase" "$work/stop" "$work/tally-$l.json" $((l * 7)) &
    loaders+=($!)
    bg+=($!)
  done
  local n=0
  while [ ! -e "$work/stop" ]; do
    n=$((n + 1))
    cat "$work/phase" > "$work/pressure-$n.phases"
    "$spindle" client --connect "${subnet}.1:7700" --model graphsage load --rate 80 --requests 320 \
      --warmup 0 --reproducible --seeds "degree:$work/whole" --json > "$work/pressure-$n.json" 2>&1
    cat "$work/phase" >> "$work/pressure-$n.phases"
  done &
  loaders+=($!)
  bg+=($!)
}

calls_in() {  # PHASE: the calls the loaders have made in it so far
  python3 -c 'import json, sys
n = 0
for f in sys.argv[2:]:
    try:
        t = json.load(open(f)).get(sys.argv[1], {})
    except (OSError, ValueError):
        t = {}
    n += sum(d["right"] + d["wrong"] + d["refused"] for d in t.values())
print(n)' "$1" "$work"/tally-*.json
}

phase() {  # NAME N: the load's calls from now on count under NAME; waits for N of them
  echo "$1" > "$work/phase"
  for _ in $(seq 600); do
    [ "$(calls_in "$1")" -ge "$2" ] && return 0
    sleep 0.2
  done
  echo "FAIL: the load made fewer than $2 calls in phase $1 within 120 s"
  return 1
}

# Machine 3 (its disk: the TOML) runs a rank that joins through rank 0's gate,
# fetching rank 0's partition and the model from rank 0's file door; once its
# door opens, the load calls it too.
join_rank() {  # LABEL
  local subnet=$SPINDLE_NETNS_SUBNET data t0 t1
  data=$("$bed" data "$SPINDLE_NETNS")
  t0=$(date +%s.%N)
  "$bed" exec "$SPINDLE_NETNS" 3 -- env UCX_TLS=tcp,self "$spindle" node \
    --config "$data/cluster.toml" --join "${subnet}.1:7600" --address "${subnet}.4:7600" \
    --dataset "$data/parts" --model "$data/m" --fetch-from "${subnet}.1:7800" \
    --listen 0.0.0.0:7700 --slo-ms 0 --admin-token-file "$data/admin.token" \
    < /dev/null > "$work/rank3-$1.out" 2> "$work/rank3-$1.log" &
  joiner=$!
  bg+=($joiner)
  for _ in $(seq 1800); do
    grep -q "^listening 0.0.0.0:7700" "$work/rank3-$1.out" && break
    kill -0 "$joiner" 2> /dev/null || break
    sleep 0.1
  done
  if ! grep -q "^listening 0.0.0.0:7700" "$work/rank3-$1.out"; then
    echo "FAIL: rank 3 ($1 join) did not open its door"; tail -30 "$work/rank3-$1.log"; return 1
  fi
  t1=$(date +%s.%N)
  printf 'rank 3 (%s join) serves its door %.2f s after its start\n' "$1" "$(echo "$t1 - $t0" | bc)"
  grep -hE "fetched|equal to file door|joining the cluster|shard of placement epoch [0-9]+ ready" \
    "$work/rank3-$1.log" | sed 's/^/  rank 3: /'
  echo "${subnet}.1:7700 ${subnet}.2:7700 ${subnet}.3:7700 ${subnet}.4:7700" > "$work/doors"
}

# Rank 0's member list until N live members are ready and read one epoch past
# the one they read when asked (`epoch`; -1 at first), with no old shard kept and
# no placement error (120 s); `epoch` is then that epoch.
members_serving() {  # N
  local token listed
  token="$("$bed" rank-dir "$SPINDLE_NETNS" 0)/admin.token"
  for _ in $(seq 600); do
    listed=$("$spindle" client --connect "${SPINDLE_NETNS_SUBNET}.1:7700" --token-file "$token" \
      admin members --json 2> /dev/null)
    if python3 -c 'import json, sys
ms = [m for m in json.loads(sys.argv[1])["members"] if m.get("alive")]
e = ms[0].get("epoch") if ms else None
ok = len(ms) == int(sys.argv[2]) and e > int(sys.argv[3]) and all(m.get("ready")
    and m.get("epoch") == e and m.get("reading") == e and m.get("old_epoch") == -1
    and not m.get("placement_error") for m in ms)
sys.exit(0 if ok else 1)' "$listed" "$1" "$epoch" 2> /dev/null; then
      epoch=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["members"][0]["epoch"])' "$listed")
      echo "$1 ranks serve placement epoch $epoch"
      return 0
    fi
    sleep 0.2
  done
  echo "FAIL: rank 0 never listed $1 ranks serving an epoch past $epoch: $listed"
  return 1
}

stop_load() {
  touch "$work/stop"
  wait "${loaders[@]}"
}

# Every phase's tally: 0 wrong; refused only after the kill, as `unavailable`;
# every phase answered; rank 3's door answered while it served. The open loop:
# every call answered ok or refused as `unavailable`.
judge_load() {
  python3 "$root/tests/support/judge_load.py" "${SPINDLE_NETNS_SUBNET}.4:7700" "$work"
}

every_door_answers() {
  local r i right=0 a b
  for r in 0 1 2; do
    for i in 1 2 3; do
      local seed=$(( (i * 991 + r) % 2708 )) door="${SPINDLE_NETNS_SUBNET}.$((r + 1)):7700"
      a=$("$spindle" client --connect "$door" --model graphsage infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
      b=$("$spindle" client --connect "$one" --model graphsage infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
      if [ "$(python3 "$root/tests/support/judge_answer.py" "$a" "$b")" = right ]; then
        right=$((right + 1))
      else
        echo "FAIL: seed $seed through $door at the end: cluster $a; one process $b"
      fi
    done
  done
  echo "at the end: $right of 9 calls, 3 through each rank's door, answered as one process"
  [ "$right" = 9 ]
}

checks() {
  local subnet=$SPINDLE_NETNS_SUBNET data r dirs=() t0 t1 rc
  data=$("$bed" data "$SPINDLE_NETNS")
  for r in 0 1 2 3; do dirs+=("$("$bed" rank-dir "$SPINDLE_NETNS" "$r")"); done
  prepare_cora || return 1
  cp -r "$work/parts" "$work/m" "${dirs[0]}/"
  for r in 0 1 2 3; do cp "$work/cluster.toml" "${dirs[$r]}/"; done
  SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  export SPINDLE_CLUSTER_TOKEN SPINDLE_PROGRESS=0
  start_ranks || return 1
  epoch=-1
  start_load
  phase three 12 || return 1

  phase joining 0
  join_rank first || return 1
  members_serving 4 || return 1
  phase joined 16 || return 1
  [ -e "${dirs[3]}/parts/rank-0/metadata.json" ] && [ -e "${dirs[3]}/m/model.toml" ] ||
    { echo "FAIL: rank 3 did not fetch rank 0's partition and the model"; return 1; }

  # It leaves; its door is taken off the load first (it closes as the rank exits).
  echo "${subnet}.1:7700 ${subnet}.2:7700 ${subnet}.3:7700" > "$work/doors"
  phase leaving 2 || return 1
  t0=$(date +%s.%N)
  "$spindle" cluster-leave --config "$work/cluster.toml" --rank 3 > "$work/leave.out" 2>&1 ||
    { echo "FAIL: cluster-leave --rank 3"; cat "$work/leave.out"; return 1; }
  wait "$joiner"
  rc=$?
  t1=$(date +%s.%N)
  [ "$rc" = 0 ] || { echo "FAIL: rank 3 exited $rc after cluster-leave"; tail -20 "$work/rank3-first.log"; return 1; }
  printf 'rank 3 left (exit 0) %.2f s after cluster-leave\n' "$(echo "$t1 - $t0" | bc)"
  members_serving 3 || return 1
  phase left 9 || return 1

  # Joined again (its disk now holds what it fetched), then lost: kill -9 under load.
  phase rejoining 0
  join_rank again || return 1
  members_serving 4 || return 1
  phase rejoined 8 || return 1
  echo "${subnet}.1:7700 ${subnet}.2:7700 ${subnet}.3:7700" > "$work/doors"
  phase lost 2 || return 1
  kill -9 "$joiner"
  wait "$joiner" 2> /dev/null
  members_serving 3 || return 1
  phase after 12 || return 1
  stop_load
  judge_load || return 1
  every_door_answers
}
export -f body checks mpirun_cluster_start prepare_cora start_ranks start_load calls_in phase join_rank \
  members_serving stop_load judge_load every_door_answers
export spindle work root data_dir bed
"$bed" run "$name" 4 1gbit -- bash -c body
