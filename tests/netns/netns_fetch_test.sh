#!/usr/bin/env bash
# Three "machines" that share nothing but the network (scripts/netns-cluster.sh:
# a network namespace and a mount namespace each, a private data folder, /tmp
# and /dev/shm, 1 Gbit/s tbf links): only rank 0's disk holds the partitions
# and the model. Every rank is started alike, as mpirun would start it (same
# command line, rank from --rank), with the token in SPINDLE_CLUSTER_TOKEN:
# ranks 1 and 2 fetch their partition and the model from rank 0's file door,
# then every rank serves its own door. Seeded calls through the three doors
# must answer as one process over the whole dataset (0 wrong). Skipped (77)
# where namespaces cannot be made (not root, no iproute2, no unshare).
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/netns_body.sh"
name="spn$$"
netns_probe netns_fetch_test
if ! unshare --mount true 2> /dev/null; then
  echo "netns_fetch_test: skipped: cannot create mount namespaces here"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bed="$root/scripts/netns-cluster.sh"

checks() {
  local subnet=$SPINDLE_NETNS_SUBNET data r0
  data=$("$bed" data "$SPINDLE_NETNS")
  r0=$("$bed" rank-dir "$SPINDLE_NETNS" 0)
  "$spindle" generate --scale 12 --edge-factor 8 --feature-dim 32 --seed 3 --out "$work/whole" > /dev/null 2>&1 || return 1
  "$spindle" model init --arch graphsage --in 32 --hidden 32 --classes 8 --seed 1 --out-dir "$work/m" > /dev/null || return 1
  "$bed" toml "$SPINDLE_NETNS" 3 240000 > "$work/cluster.toml"
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" > /dev/null || return 1
  # Rank 0's disk: the partitions and the model; every disk: the TOML.
  cp -r "$work/parts" "$work/m" "$r0/"
  for r in 0 1 2; do cp "$work/cluster.toml" "$("$bed" rank-dir "$SPINDLE_NETNS" "$r")/"; done
  # The bed shares nothing: rank 1 sees neither rank 0's folder nor this /tmp.
  if "$bed" exec "$SPINDLE_NETNS" 1 -- sh -c "test -e '$data/parts' || test -e '$work/whole' || test -e '$r0/parts'"; then
    echo "FAIL: rank 1's machine sees another's files"; return 1
  fi
  "$bed" exec "$SPINDLE_NETNS" 0 -- test -e "$data/parts/rank-2/metadata.json" || { echo "FAIL: rank 0 has no data"; return 1; }
  SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  export SPINDLE_CLUSTER_TOKEN SPINDLE_PROGRESS=0
  for r in 0 1 2; do
    local me="${subnet}.$((r + 1))"
    "$bed" exec "$SPINDLE_NETNS" "$r" -- env UCX_TLS=tcp,self "$spindle" node \
      --config "$data/cluster.toml" --rank "$r" --dataset "$data/parts" --model "$data/m" \
      --files "$me:7800" --fetch-from "${subnet}.1:7800" --listen "$me:7700" \
      --admin-token-file "$data/admin.token" < /dev/null > "$work/rank$r.log" 2>&1 &
    bg+=($!)
  done
  "$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
  bg+=($!)
  local one="" opened=0
  for _ in $(seq 900); do
    [ -z "$one" ] && one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
    opened=$(cat "$work"/rank[012].log | grep -c "^listening ")
    [ -n "$one" ] && [ "$opened" = 3 ] && break
    sleep 0.2
  done
  if [ -z "$one" ] || [ "$opened" != 3 ]; then
    echo "FAIL: $opened of 3 doors opened (one process: '${one}')"
    tail -20 "$work"/rank[012].log; return 1
  fi
  for r in 1 2; do
    grep -h "fetched" "$work/rank$r.log" | sed "s/^/rank $r: /"
    grep -q "fetched dataset $data/parts/rank-$r from file door ${subnet}.1:7800" "$work/rank$r.log" &&
      grep -q "fetched model $data/m from file door ${subnet}.1:7800" "$work/rank$r.log" ||
      { echo "FAIL: rank $r did not fetch its partition and the model from rank 0"; return 1; }
    local own
    own=$("$bed" rank-dir "$SPINDLE_NETNS" "$r")
    [ -e "$own/parts/rank-$r/metadata.json" ] && [ ! -e "$own/parts/rank-0" ] && [ -e "$own/m/model.toml" ] ||
      { echo "FAIL: rank $r's disk holds not exactly its share: $(ls "$own/parts")"; return 1; }
  done
  judge_three_doors graphsage "$one" "3 machines sharing only the network (ranks 1, 2 fetched their partition and the model from rank 0's file door)" || return 1
}
export -f body checks judge_three_doors
export spindle work root bed
"$bed" run "$name" 3 1gbit -- bash -c body
