#!/usr/bin/env bash
# A model repository with versions on a loopback cluster (3 ranks, a partitioned
# dataset, doors on rank 0 and rank 1), every rank given `--model-repository`:
#   - both doors serve the repository's model at start, answering seeded calls
#     as one process serving the same repository over the whole dataset does;
#   - a new version put in the repository and loaded without a directory through
#     rank 1's door is served at rank 0's door too (each rank re-reads its own
#     repository), the old version retired by the latest-version policy, and
#     both doors answer as the single process serving version 2;
#   - a version that cannot serve is refused at load and changes no door; fixed
#     and loaded again, it reaches every door;
#   - an unload through rank 0's door leaves rank 1's too;
#   - a node given --model-repository without --dataset and --model is refused
#     by name.
# Prints how long the new version took to reach the other door.
#   usage: cluster_repository_test.sh SPINDLE
set -uo pipefail
spindle=$1
source "$(dirname "$0")/../support/loopback_cluster.sh"  # sets $root
export SPINDLE_PROGRESS=0
scratch_cluster "$spindle"
version() {  # VERSION SEED: a GCN as version VERSION of the repository's model 'late'
  "$spindle" model init --arch gcn --in 32 --hidden 16 --classes 5 --seed "$2" --name late \
    --out-dir "$work/repo/late/$1" > /dev/null || fail "model init version $1"
}
version 1 9
"$spindle" launch --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m" \
  --model-repository "$work/repo" --listen "127.0.0.1:$door0" \
  --admin-token-file "$work/admin.token" > "$work/launch.log" 2>&1 &
bg+=($!)
# --policy fixed: the small executor, as the cluster's doors run a loaded model.
"$spindle" serve --dataset "$work/whole" --model-repository "$work/repo" --policy fixed \
  --listen 127.0.0.1:0 --admin-token-file "$work/admin.token" > "$work/one.log" 2>&1 &
bg+=($!)
wait_for_doors "$work" || fail "the cluster or the single process did not start"
d0="127.0.0.1:$door0"; d1="127.0.0.1:$door1"
admin() { "$spindle" client --connect "$1" --token-file "$work/admin.token" admin "${@:2}" 2>&1; }

judge_both() {  # WHAT: 10 seeded calls of 'late' through both doors, each as one process answers
  judge_alternating "$spindle" late "$d0" "$d1"
  echo "$1: 10 of 10 seeded calls through both doors answered as one process serving it"
}
judge_both "version 1 at start"

answer() {  # DOOR: the outputs of a seeded call of 'late' (fails unless it is answered)
  "$spindle" client --connect "$1" --model late infer --seeds 5 --sampler-seed 1 --json 2> /dev/null |
    python3 -c 'import json,sys; a = json.load(sys.stdin); assert a["status"] == "ok"; print(a["outputs"])'
}
v1=$(answer "$d0")
[ -n "$v1" ] || fail "no answer from rank 0's door"
version 2 10
out=$(admin "$one" load late) || fail "the single process did not load version 2: $out"
v2=$(answer "$one")
[ "$v2" != "$v1" ] || fail "version 2 answers as version 1 does: the test cannot tell them apart"
out=$(admin "$d1" load late) || fail "load without a directory through rank 1's door: $out"
[ "$(answer "$d1")" = "$v2" ] || fail "rank 1's door does not serve version 2 after its load"
t0=$(date +%s.%N)
for _ in $(seq 200); do
  [ "$(answer "$d0")" = "$v2" ] && break
  sleep 0.1
done
[ "$(answer "$d0")" = "$v2" ] || fail "rank 0's door never served version 2"
echo "version 2 loaded through rank 1's door; rank 0's door served it" \
  "$(python3 -c "import time; print('%.2f' % (time.time() - $t0))") s later"
judge_both "version 2 after the load"
grep -q "version 1 of 'late' drained and unloaded" "$work/launch.log" ||
  fail "no door retired version 1"
# A version that cannot serve (16 inputs on a 32-feature graph): its load is refused
# and the cluster's list is left as it was; both doors go on answering version 2.
"$spindle" model init --arch gcn --in 16 --hidden 16 --classes 5 --seed 11 --name late \
  --out-dir "$work/repo/late/3" > /dev/null || fail "model init bad version 3"
out=$(admin "$d1" load late) && fail "a version of the wrong width loaded: $out"
sleep 1
[ "$(answer "$d0")" = "$v2" ] && [ "$(answer "$d1")" = "$v2" ] ||
  fail "a refused load changed what a door serves"
# Fixed, and loaded again through the same door: every door re-reads its
# repository (the list names the same versions a refused load named before).
rm -rf "$work/repo/late/3"
version 3 12
out=$(admin "$one" load late) || fail "the single process did not load version 3: $out"
v3=$(answer "$one")
out=$(admin "$d1" load late) || fail "load of the fixed version 3 through rank 1's door: $out"
for _ in $(seq 200); do
  [ "$(answer "$d0")" = "$v3" ] && break
  sleep 0.1
done
[ "$(answer "$d0")" = "$v3" ] || fail "rank 0's door never served the fixed version 3"
judge_both "version 3 after a refused load"

out=$(admin "$d0" unload late) || fail "unload through rank 0's door: $out"
serves() { "$spindle" client --connect "$1" --model late infer --seeds 1 --json 2> /dev/null | grep -q '"status": *"ok"'; }
for _ in $(seq 200); do
  serves "$d1" || break
  sleep 0.1
done
serves "$d1" && fail "rank 1's door still serves 'late' after its unload at rank 0"
echo "unloaded through rank 0's door; rank 1's door dropped it"

kill -TERM "${bg[0]}"
wait "${bg[0]}"
bg=("${bg[@]:1}")
out=$(timeout 60 "$spindle" node --config "$work/cluster.toml" --rank 0 --listen 127.0.0.1:0 \
  --rec-model "ctr=$root/tests/nn/golden/dlrm" --model-repository "$work/repo" 2>&1) &&
  fail "a node without a dataset took --model-repository: $out"
grep -q -- "--model-repository $work/repo: its GNNs run over this rank's shard" <<< "$out" ||
  fail "no refusal naming --model-repository: $out"
echo "refused: $(echo "$out" | tail -1)"
