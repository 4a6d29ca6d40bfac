#!/usr/bin/env bash
# GNN models loaded and unloaded at run time on a loopback cluster (3 ranks, a
# partitioned dataset, doors on rank 0 and rank 1), through either door:
#   - a model loaded through rank 1's door is served at rank 0's door too
#     within seconds, and both answer seeded calls as one process serving that
#     model over the whole dataset does;
#   - unloaded through rank 0's door, it leaves rank 1's door too;
#   - the GNN the ranks started with cannot be unloaded (refused by name);
#   - a load of a directory that is no model is refused by name, and the doors
#     go on serving;
#   - a recommendation model (NCF) loaded through rank 0's door is served at
#     rank 1's with the same scores, and unloaded through rank 1's leaves both;
#   - on a cluster of recommendation models only (no dataset on any rank), a
#     load and an unload through either door reach the other; a GNN load there
#     is refused by name.
# Prints how long each change took to reach the other door.
#   usage: cluster_models_test.sh SPINDLE
set -uo pipefail
spindle=$1
source "$(dirname "$0")/../support/loopback_cluster.sh"  # sets $root
export SPINDLE_PROGRESS=0
scratch_cluster "$spindle"
"$spindle" model init --arch gcn --in 32 --hidden 16 --classes 5 --seed 9 --name late --out-dir "$work/late" > /dev/null || fail "model init late"
"$spindle" model init --arch ncf --tables 10,20,10,20 --seed 4 --out-dir "$work/ncf" > /dev/null || fail "model init ncf"
"$spindle" launch --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m" \
  --listen "127.0.0.1:$door0" --admin-token-file "$work/admin.token" > "$work/launch.log" 2>&1 &
bg+=($!)
# --policy fixed: the small executor, as the cluster's doors run a loaded model
# (GCN's pooled pass may sum in another order: equal to 1e-7, not bit for bit).
"$spindle" serve --dataset "$work/whole" --model "$work/late" --name late --policy fixed \
  --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
bg+=($!)
wait_for_doors "$work" || fail "the cluster or the single process did not start"
d0="127.0.0.1:$door0"; d1="127.0.0.1:$door1"
admin() { "$spindle" client --connect "$1" --token-file "$work/admin.token" admin "${@:2}" 2>&1; }
serves() { "$spindle" client --connect "$1" --model "$2" infer --seeds 1 --json 2> /dev/null | grep -q '"status": *"ok"'; }
gone() { ! serves "$1" "$2"; }
seconds_until() {  # CMD...: seconds until CMD succeeds (at most 20)
  local t0; t0=$(date +%s.%N)
  for _ in $(seq 200); do
    if "$@"; then python3 -c "import time; print('%.2f' % (time.time() - $t0))"; return 0; fi
    sleep 0.1
  done
  return 1
}

out=$(admin "$d1" load late "$work/late") || fail "load through rank 1's door: $out"
took=$(seconds_until serves "$d0" late) || fail "rank 0's door never served the model loaded at rank 1"
echo "loaded through rank 1's door; rank 0's door served it ${took} s later"
judge_alternating "$spindle" late "$d0" "$d1"
echo "10 of 10 seeded calls through both doors answered as one process serving it"

out=$(admin "$d0" unload graphsage) && fail "the cluster's own GNN was unloaded: $out"
grep -q "cannot be unloaded" <<< "$out" || fail "no refusal naming why: $out"
out=$(admin "$d0" load broken "$work/parts") && fail "a dataset directory loaded as a model: $out"
echo "refused: $(echo "$out" | tail -1)"

out=$(admin "$d0" unload late) || fail "unload through rank 0's door: $out"
took=$(seconds_until gone "$d1" late) || fail "rank 1's door still serves the unloaded model"
echo "unloaded through rank 0's door; rank 1's door dropped it ${took} s later"
for door in "$d0" "$d1"; do
  serves "$door" graphsage || fail "$door stopped serving the cluster's GNN"
done
echo "both doors still serve the cluster's GNN"

rec() { "$spindle" client --connect "$1" --model ncf rec --sparse 1 --sparse 2 --sparse 3 --sparse 4 --json 2> /dev/null; }
rec_served() { rec "$1" | grep -q '"status": *"ok"'; }
rec_gone() { ! rec_served "$1"; }
out=$(admin "$d0" load ncf "$work/ncf") || fail "recommendation load through rank 0's door: $out"
took=$(seconds_until rec_served "$d1") || fail "rank 1's door never served the NCF loaded at rank 0"
echo "NCF loaded through rank 0's door; rank 1's door served it ${took} s later"
a=$(rec "$d0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["scores"])')
b=$(rec "$d1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["scores"])')
[ "$a" = "$b" ] || fail "NCF scores differ between the doors: $a vs $b"
out=$(admin "$d1" unload ncf) || fail "recommendation unload through rank 1's door: $out"
took=$(seconds_until rec_gone "$d0") || fail "rank 0's door still serves the unloaded NCF"
echo "NCF unloaded through rank 1's door; rank 0's door dropped it ${took} s later"

# A cluster of recommendation models only: two ranks, no dataset, a door each.
read -r q0 q1 e0 e1 <<< "$(free_ports 4)"
printf 'coordinator = "t0"\ntoken_file = "rec.token"\n[[server]]\nname = "t0"\nhost = "127.0.0.1"\nport = %s\nmemory = 100000\n[[server]]\nname = "t1"\nhost = "127.0.0.1"\nport = %s\nmemory = 100000\n' \
  "$q0" "$q1" > "$work/rec.toml"
"$spindle" node --config "$work/rec.toml" --rank 0 --listen "127.0.0.1:$e0" --rec-model "ctr=$work/ncf" \
  --admin-token-file "$work/admin.token" > "$work/r0.log" 2>&1 &
bg+=($!)
for _ in $(seq 300); do grep -q '^listening ' "$work/r0.log" && break; sleep 0.1; done
"$spindle" node --config "$work/rec.toml" --rank 1 --listen "127.0.0.1:$e1" --rec-model "ctr=$work/ncf" \
  --admin-token-file "$work/admin.token" > "$work/r1.log" 2>&1 &
bg+=($!)
for _ in $(seq 300); do grep -q '^listening ' "$work/r1.log" && break; sleep 0.1; done
grep -q '^listening ' "$work/r1.log" || fail "the recommendation-only cluster did not open its doors"
r0="127.0.0.1:$e0"; r1="127.0.0.1:$e1"
out=$(admin "$r0" load ncf "$work/ncf") || fail "load on the recommendation-only cluster: $out"
took=$(seconds_until rec_served "$r1") || fail "rank 1 of the recommendation-only cluster never served it"
echo "recommendation-only cluster: loaded through rank 0's door, served at rank 1's ${took} s later"
out=$(admin "$r1" unload ncf) || fail "unload on the recommendation-only cluster: $out"
took=$(seconds_until rec_gone "$r0") || fail "rank 0 of the recommendation-only cluster still serves it"
echo "recommendation-only cluster: unloaded through rank 1's door, gone at rank 0's ${took} s later"
out=$(admin "$r1" load late "$work/late") && fail "a GNN loaded on a node without a shard: $out"
grep -q "holds no shard" <<< "$out" || fail "no refusal naming why: $out"

