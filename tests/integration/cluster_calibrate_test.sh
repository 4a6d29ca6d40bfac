#!/usr/bin/env bash
# A loopback cluster (3 ranks, a partitioned dataset, doors on rank 0 and rank
# 1) started by `spindle launch --calibrate --gnnsched sqtf`: every rank times
# PSGS routing over the cluster's shards at start (other ranks' rows read as
# served) and groups its pipelines' forward passes with GNNSched. Checks:
#   - each rank logs its calibration over the cluster, and rank 0 writes it
#     (--calibration-out) in the form `--calibration` reads back;
#   - seeded calls through both doors answer as one process serving the
#     whole dataset does;
#   - both doors' Admin stats show GNNSched's groups;
#   - --calibrate with --calibration, or --calibration-out alone, is refused by name;
#   - rank folders of two partition runs are refused at the join, naming both plans;
#   - a GNN loaded at run time is calibrated as it loads at every door and takes
#     `fanouts` there; the cluster's own GNN still refuses them.
#   usage: cluster_calibrate_test.sh SPINDLE
set -uo pipefail
spindle=$1
source "$(dirname "$0")/../support/loopback_cluster.sh"  # sets $root
export SPINDLE_PROGRESS=0
scratch_cluster "$spindle"

# Refusals first: they name the flags.
out=$("$spindle" node --config "$work/cluster.toml" --rank 0 --dataset "$work/parts" --model "$work/m" \
  --calibrate --calibration "$work/x.json" 2>&1) && fail "--calibrate with --calibration was accepted"
grep -q -- "--calibrate and --calibration" <<< "$out" || fail "no refusal naming both flags: $out"
out=$("$spindle" node --config "$work/cluster.toml" --rank 0 --calibration-out "$work/x.json" 2>&1) &&
  fail "--calibration-out without --calibrate was accepted"
grep -q -- "needs --calibrate" <<< "$out" || fail "no refusal naming --calibrate: $out"

# Rank folders of two `spindle partition` runs (another policy) are refused at the
# join, naming both plans, rather than served with rows read at wrong places.
"$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts-degree" \
  --policy degree > /dev/null || fail "partition --policy degree"
mkdir "$work/mixed" && cp -r "$work/parts/rank-1" "$work/parts/rank-2" "$work/parts-degree/rank-0" \
  "$work/mixed/" || fail "mixing partitions"
"$spindle" launch --config "$work/cluster.toml" --dataset "$work/mixed" --model "$work/m" \
  > "$work/mixed.log" 2>&1 &
mixed=$!
for _ in $(seq 200); do
  grep -q "placement plan .* is not rank 0's" "$work/mixed.log" && break
  sleep 0.2
done
kill -TERM "$mixed" 2> /dev/null; wait "$mixed" 2> /dev/null
grep -q "spindle: error: join: rank [12]'s placement plan .* is not rank 0's .*another \`spindle partition\` run" \
  "$work/mixed.log" || fail "mixed partitions were not refused at the join: $(tail -5 "$work/mixed.log")"
grep -q "^\[rank 0\] listening" "$work/mixed.log" && fail "a door opened over mixed partitions"
echo "mixed partitions refused at the join"

"$spindle" launch --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m" \
  --listen "127.0.0.1:$door0" --admin-token-file "$work/admin.token" \
  --calibrate --calibrate-batches 40 --calibration-out "$work/cluster-calibration.json" \
  --gnnsched sqtf > "$work/launch.log" 2>&1 &
bg+=($!)
"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
bg+=($!)
wait_for_doors "$work" || fail "the cluster or the single process did not start"

for r in 0 1 2; do
  line=$(grep "^\[rank $r\].*PSGS routing calibrated over the cluster" "$work/launch.log" | head -1)
  [ -n "$line" ] || fail "rank $r did not calibrate over the cluster"
  echo "rank $r: ${line#*calibrated over the cluster: }"
done
python3 - "$work/cluster-calibration.json" <<'EOF' || fail "the written calibration does not read back"
import json, sys
c = json.load(open(sys.argv[1]))
assert "small" in c and "large" in c, sorted(c)
EOF

right=0
for i in $(seq 1 12); do
  door="127.0.0.1:$door0"; [ $((i % 2)) = 0 ] && door="127.0.0.1:$door1"
  verdict=$(judge_pair "$spindle" graphsage "$door" "$one" $(( (i * 911) % 4096 )) "$i")
  [ "$verdict" = right ] || fail "request $i through $door: $verdict"
  right=$((right + 1))
done
echo "$right of 12 seeded calls through both doors answered as one process"

for door in "127.0.0.1:$door0" "127.0.0.1:$door1"; do
  tasks=$("$spindle" client --connect "$door" --token-file "$work/admin.token" admin stats |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["models"]["graphsage"]["gnnsched"]["tasks"])') ||
    fail "$door: no gnnsched section in Admin stats"
  [ "$tasks" -gt 0 ] || fail "$door: GNNSched ran no task"
  echo "$door: GNNSched ran $tasks tasks"
done

# A GNN loaded at run time through a door is timed over the cluster's shards as
# it loads, at every door that serves it (before: never, it routed by the fixed
# policy), and takes `fanouts` at a door, which alone serves its copy (before:
# refused as the cluster's); the GNN the ranks started with still refuses them.
"$spindle" model init --arch gcn --in 32 --hidden 16 --classes 5 --seed 9 --name late \
  --out-dir "$work/late" > /dev/null || fail "model init late"
calibrated() { grep -c "^\[rank $1\].*PSGS routing calibrated over the cluster" "$work/launch.log"; }
admin() { "$spindle" client --connect "$1" --token-file "$work/admin.token" admin "${@:2}" 2>&1; }
out=$(admin "127.0.0.1:$door1" load late "$work/late") || fail "load through rank 1's door: $out"
for _ in $(seq 300); do
  [ "$(calibrated 0)" -ge 2 ] && [ "$(calibrated 1)" -ge 2 ] && break
  sleep 0.1
done
for r in 0 1; do
  [ "$(calibrated $r)" -ge 2 ] || fail "rank $r did not calibrate the loaded model"
  echo "rank $r timed the loaded model: $(grep "^\[rank $r\].*PSGS routing calibrated over the cluster" \
    "$work/launch.log" | tail -1 | sed 's/.*calibrated over the cluster: //')"
done
[ "$(calibrated 2)" -eq 1 ] || fail "rank 2 (no door) calibrated a loaded model"
for door in "127.0.0.1:$door0" "127.0.0.1:$door1"; do
  out=$(admin "$door" set late fanouts 4,4) || fail "$door: fanouts of the loaded model refused: $out"
  "$spindle" client --connect "$door" --model late infer --seeds 7 --json 2>&1 | grep -q '"status": *"ok"' ||
    fail "$door: the loaded model did not answer after its fanouts changed"
  out=$(admin "$door" set graphsage fanouts 4,4) && fail "$door: the cluster's GNN took fanouts: $out"
  grep -q "sample with the fanouts they started with" <<< "$out" || fail "no refusal naming why: $out"
done
echo "the loaded model takes fanouts at both doors; the cluster's GNN refuses them"
