#!/usr/bin/env bash
# Every door folder over the network alone: mpirun -n 3 into three namespaces
# that share nothing but the network (scripts/netns-cluster.sh), one command line
# for every rank with --model-repository and --rec-model besides the dataset and
# the model, all on rank 0's disk only. Ranks 1 and 2 fetch the repository's
# versions and the recommendation model from rank 0's file door with their
# partition; every door then answers the repository's GNN and the NCF as one
# process serving the same folders. A version 2 put on rank 0's disk alone and
# loaded through rank 1's door is fetched by rank 1 at the load and by rank 2
# as it follows the list: all three doors answer as one process serving version 2.
# A GNN and a recommendation model loaded at run time from plain folders on
# rank 0's disk only are fetched by ranks 1 and 2 as they follow the load.
# A DLRM (--dlrm-model, also on rank 0's disk only) is fetched too, each rank's
# parameter server filled from it, and rows published to the Redis Stream on
# machine 0 (--updates) reach the answers of all three doors alike.
# Skipped (77) without mpirun or where namespaces cannot be made.
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/netns_body.sh"
name="spf$$"
mpirun_netns_probe mpirun_netns_folders_test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

late() {  # DIR VERSION SEED: a GCN as version VERSION of the repository's model 'late'
  "$spindle" model init --arch gcn --in 32 --hidden 16 --classes 5 --seed "$3" --name late \
    --out-dir "$1/late/$2" > /dev/null
}

judge_late() {  # WHAT: 9 seeded calls of 'late', 3 through each door, each as one process answers
  judge_three_doors late "$repo_one" "$1"
}

ctr() {  # DOOR: the DLRM's score for the golden batch's first sample (key 2 in table 1)
  "$spindle" client --connect "$1" --model ctr rec --dense "$(seq -s, 0.1 0.1 1.3)" \
    --sparse 1 --sparse 2 --sparse 3 --json 2> /dev/null |
    python3 -c 'import json,sys; a = json.load(sys.stdin); assert a["status"] == "ok"; print("%.6f" % a["scores"][0])'
}

scores() {  # DOOR [MODEL]: an NCF's scores for one sample (default the start's, ncf)
  "$spindle" client --connect "$1" --model "${2:-ncf}" rec --sparse 1 --sparse 2 --sparse 3 --sparse 4 --json 2> /dev/null |
    python3 -c 'import json,sys; a = json.load(sys.stdin); assert a["status"] == "ok"; print(a["scores"])'
}

checks() {
  local subnet=$SPINDLE_NETNS_SUBNET bed="$root/scripts/netns-cluster.sh" data r dirs=()
  "$spindle" generate --scale 12 --edge-factor 8 --feature-dim 32 --seed 3 --out "$work/whole" > /dev/null 2>&1 || return 1
  "$spindle" model init --arch graphsage --in 32 --hidden 32 --classes 8 --seed 1 --out-dir "$work/m" > /dev/null || return 1
  "$spindle" model init --arch ncf --tables 10,20,10,20 --seed 4 --out-dir "$work/ncf" > /dev/null || return 1
  late "$work/repo" 1 9 || return 1
  "$bed" toml "$SPINDLE_NETNS" 3 240000 > "$work/cluster.toml"
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" > /dev/null || return 1
  data=$("$bed" data "$SPINDLE_NETNS")
  for r in 0 1 2; do dirs+=("$("$bed" rank-dir "$SPINDLE_NETNS" "$r")"); done
  cp -r "$work/parts" "$work/m" "$work/ncf" "$work/repo" "${dirs[0]}/"
  cp -r "$root/tests/nn/golden/dlrm" "${dirs[0]}/"
  "$bed" exec "$SPINDLE_NETNS" 0 -- redis-server --bind "${subnet}.1" --port 6379 --protected-mode no --save "" \
    --appendonly no --dir /tmp > "$work/redis.log" 2>&1 &
  bg+=($!)
  for r in 0 1 2; do cp "$work/cluster.toml" "${dirs[$r]}/"; done
  SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  export SPINDLE_CLUSTER_TOKEN SPINDLE_PROGRESS=0
  # One process serving the same folders (--policy fixed: the small executor, as
  # the cluster's doors run a loaded model).
  "$spindle" serve --dataset "$work/whole" --model-repository "$work/repo" --policy fixed \
    --rec-model "ncf=$work/ncf" --listen 127.0.0.1:0 --admin-token-file "$work/admin.token" \
    > "$work/repo_one.log" 2>&1 &
  bg+=($!)
  for _ in $(seq 100); do
    [ "$(redis-cli -h "${subnet}.1" -p 6379 PING 2> /dev/null)" = PONG ] && break
    sleep 0.1
  done
  mpirun_cluster_start --model-repository "$data/repo" --rec-model "ncf=$data/ncf" \
    --dlrm-model "$data/dlrm" --dlrm-name ctr --pdb "$data/pdb" --updates "${subnet}.1:6379" \
    --updates-group g --refresh-ms 100 || return 1
  repo_one=""
  for _ in $(seq 300); do
    repo_one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/repo_one.log" | head -1)
    [ -n "$repo_one" ] && break
    sleep 0.2
  done
  [ -n "$repo_one" ] || { echo "FAIL: the single process did not start"; tail -5 "$work/repo_one.log"; return 1; }
  grep -E "fetched (rec-model|model-repository)|model-repository:? .*versions at the file door" "$work/mpirun.log" | head -8
  for r in 1 2; do
    [ -e "${dirs[$r]}/repo/late/1/model.toml" ] && [ -e "${dirs[$r]}/ncf/model.toml" ] ||
      { echo "FAIL: rank $r's disk lacks the repository or the NCF: $(ls -R "${dirs[$r]}" | head -20)"; return 1; }
  done
  judge_late "version 1, fetched by ranks 1 and 2" || return 1
  local want got
  want=$(scores "$repo_one")
  for r in 1 2 3; do
    got=$(scores "${subnet}.$r:7700")
    [ -n "$want" ] && [ "$got" = "$want" ] || { echo "FAIL: NCF at door $r: '$got', one process '$want'"; return 1; }
  done
  echo "NCF fetched by ranks 1 and 2: the three doors score as one process ($want)"
  local before after=""
  before=$(ctr "${subnet}.1:7700")
  for r in 2 3; do
    [ -n "$before" ] && [ "$(ctr "${subnet}.$r:7700")" = "$before" ] ||
      { echo "FAIL: DLRM at door $r differs from rank 0's ($before)"; return 1; }
  done
  python3 -c 'import numpy as np, sys
np.save(sys.argv[1] + "/k.npy", np.array([2], dtype=np.int64))
np.save(sys.argv[1] + "/v.npy", np.full((1, 8), 3.0, dtype=np.float32))' "$work" || return 1
  "$spindle" hps publish --redis "${subnet}.1:6379" --table emb1 --keys "$work/k.npy" \
    --vectors "$work/v.npy" > /dev/null || { echo "FAIL: publish"; return 1; }
  for r in 1 2 3; do
    for _ in $(seq 200); do
      got=$(ctr "${subnet}.$r:7700")
      [ -n "$got" ] && [ "$got" != "$before" ] && break
      sleep 0.1
    done
    [ "$got" != "$before" ] && [ -z "$after" -o "$got" = "$after" ] ||
      { echo "FAIL: DLRM at door $r after the update: $got (before $before, rank 0 $after)"; return 1; }
    after=$got
  done
  echo "DLRM fetched by ranks 1 and 2: a row published on machine 0's Redis changed all three doors' score alike ($before -> $after)"
  # Version 2 on rank 0's disk (and the single process's) only, loaded through rank 1's door.
  late "${dirs[0]}/repo" 2 10 && late "$work/repo" 2 10 || return 1
  "$spindle" client --connect "$repo_one" --token-file "$work/admin.token" admin load late > /dev/null ||
    { echo "FAIL: the single process did not load version 2"; return 1; }
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$("$spindle" client --connect "${subnet}.2:7700" --token-file "${dirs[1]}/admin.token" admin load late 2>&1) ||
    { echo "FAIL: load through rank 1's door: $out"; return 1; }
  t1=$(date +%s.%N)
  for _ in $(seq 200); do
    [ -e "${dirs[2]}/repo/late/2/model.toml" ] && break
    sleep 0.1
  done
  local reached
  reached=$(python3 -c "import time; print('%.2f' % (time.time() - $t1))")
  [ -e "${dirs[1]}/repo/late/2/model.toml" ] && [ -e "${dirs[2]}/repo/late/2/model.toml" ] ||
    { echo "FAIL: version 2 did not reach ranks 1 and 2"; tail -20 "$work/mpirun.log"; return 1; }
  sleep 2  # rank 2's follower loads it after the fetch
  echo "version 2 on rank 0's disk, loaded through rank 1's door (fetched, loaded, warmed, version 1" \
    "retired: $(python3 -c "print('%.2f' % ($t1 - $t0))") s): on rank 2's disk" \
    "$reached s after the load returned"
  judge_late "version 2, fetched at the load" || { tail -20 "$work/mpirun.log"; return 1; }
  # A model loaded at run time from a plain folder on rank 0's disk only (`admin
  # load NAME DIR` through rank 0's door): ranks 1 and 2 fetch the folder from
  # rank 0's file door as they follow the load, then answer as one process.
  "$spindle" model init --arch graphsage --in 32 --hidden 16 --classes 5 --seed 12 \
    --out-dir "${dirs[0]}/plain" > /dev/null && cp -r "${dirs[0]}/plain" "$work/plain" || return 1
  "$spindle" client --connect "$repo_one" --token-file "$work/admin.token" admin load plain \
    "$work/plain" > /dev/null || { echo "FAIL: the single process did not load 'plain'"; return 1; }
  out=$("$spindle" client --connect "${subnet}.1:7700" --token-file "${dirs[0]}/admin.token" \
    admin load plain "$data/plain" 2>&1) || { echo "FAIL: load through rank 0's door: $out"; return 1; }
  for _ in $(seq 300); do
    [ -e "${dirs[1]}/plain/model.toml" ] && [ -e "${dirs[2]}/plain/model.toml" ] &&
      grep -q "\[1,2\]<stderr>:.*fetched model 'plain'" "$work/mpirun.log" && break
    sleep 0.1
  done
  [ -e "${dirs[1]}/plain/model.toml" ] && [ -e "${dirs[2]}/plain/model.toml" ] ||
    { echo "FAIL: 'plain' did not reach ranks 1 and 2"; tail -20 "$work/mpirun.log"; return 1; }
  grep -E "fetched model 'plain'" "$work/mpirun.log" | head -2
  for _ in $(seq 100); do  # each follower loads it after its fetch
    "$spindle" client --connect "${subnet}.3:7700" --model plain infer --seeds 1 > /dev/null 2>&1 && break
    sleep 0.1
  done
  judge_three_doors plain "$repo_one" "a plain folder on rank 0's disk only, loaded at run time" ||
    { tail -20 "$work/mpirun.log"; return 1; }
  # The same for a recommendation model (its kind is read from the folder, so the
  # folder comes first).
  "$spindle" model init --arch ncf --tables 10,20,10,20 --seed 14 --out-dir "${dirs[0]}/ncf2" \
    > /dev/null && cp -r "${dirs[0]}/ncf2" "$work/ncf2" || return 1
  "$spindle" client --connect "$repo_one" --token-file "$work/admin.token" admin load ncf2 \
    "$work/ncf2" > /dev/null || { echo "FAIL: the single process did not load 'ncf2'"; return 1; }
  out=$("$spindle" client --connect "${subnet}.1:7700" --token-file "${dirs[0]}/admin.token" \
    admin load ncf2 "$data/ncf2" 2>&1) || { echo "FAIL: load of ncf2 through rank 0's door: $out"; return 1; }
  want=$(scores "$repo_one" ncf2)
  for r in 1 2 3; do
    got=""
    for _ in $(seq 150); do  # each follower fetches, then loads it
      got=$(scores "${subnet}.$r:7700" ncf2) && [ -n "$got" ] && break
      sleep 0.2
    done
    [ -n "$want" ] && [ "$got" = "$want" ] ||
      { echo "FAIL: ncf2 at door $r: '$got', one process '$want'"; tail -20 "$work/mpirun.log"; return 1; }
  done
  grep -E "fetched model 'ncf2'" "$work/mpirun.log" | head -2
  echo "a recommendation model's folder on rank 0's disk only, loaded at run time: the three doors score as one process ($want)"
}
export -f body checks mpirun_cluster_start judge_three_doors late judge_late scores ctr
export spindle work root
"$root/scripts/netns-cluster.sh" run "$name" 3 1gbit -- bash -c body
