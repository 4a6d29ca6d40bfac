#!/usr/bin/env bash
# `mpirun` starting a cluster across network namespaces (scripts/netns-cluster.sh,
# 1 Gbit/s tbf links), with no `spindle launch`: Open MPI's rsh agent is
# scripts/netns-mpirun-agent.sh, which runs each host's daemon in namespace N
# (hosts ns0..ns2), as ssh would on three machines, each with its own disk (the
# bed's private data folder and /tmp). Every `spindle node` takes its rank from
# OMPI_COMM_WORLD_RANK, the token from SPINDLE_CLUSTER_TOKEN (mpirun -x; no token
# file anywhere); only rank 0's disk holds the partitions and the model, which
# ranks 1 and 2 fetch from rank 0's file door (--fetch-from); every rank serves
# its partition with UCX over TCP between the namespaces, and opens its door on
# 0.0.0.0:7700 of its namespace.
# Seeded calls through every rank's door equal one process's answers.
# Skipped (77) without mpirun or where namespaces cannot be made.
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/netns_body.sh"
name="spm$$"
mpirun_netns_probe mpirun_netns_test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

checks() {
  local subnet=$SPINDLE_NETNS_SUBNET
  "$spindle" generate --scale 12 --edge-factor 8 --feature-dim 32 --seed 3 --out "$work/whole" > /dev/null 2>&1 || return 1
  "$spindle" model init --arch graphsage --in 32 --hidden 32 --classes 8 --seed 1 --out-dir "$work/m" > /dev/null || return 1
  "$root/scripts/netns-cluster.sh" toml "$SPINDLE_NETNS" 3 240000 > "$work/cluster.toml"
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" > /dev/null || return 1
  local bed="$root/scripts/netns-cluster.sh" data r dirs=()
  data=$("$bed" data "$SPINDLE_NETNS")
  for r in 0 1 2; do dirs+=("$("$bed" rank-dir "$SPINDLE_NETNS" "$r")"); done
  cp -r "$work/parts" "$work/m" "${dirs[0]}/"
  for r in 0 1 2; do cp "$work/cluster.toml" "${dirs[$r]}/"; done
  SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  export SPINDLE_CLUSTER_TOKEN SPINDLE_PROGRESS=0
  mpirun_cluster_start || return 1
  grep -E "rank [0-9] of 3 from OMPI_COMM_WORLD_RANK|\(rank [0-9]\) listening on|fetched" "$work/mpirun.log" | head -10
  for r in 1 2; do
    [ -e "${dirs[$r]}/parts/rank-$r/metadata.json" ] && [ ! -e "${dirs[$r]}/parts/rank-0" ] ||
      { echo "FAIL: rank $r did not fetch exactly its partition"; return 1; }
  done
  judge_three_doors graphsage "$one" "mpirun across 3 namespaces (1 Gbit/s links, UCX over tcp, no launch, no token file, data only on rank 0's disk)" || return 1
  for r in 0 1 2; do
    [ ! -e "${dirs[$r]}/${SPINDLE_NETNS}.token" ] || { echo "FAIL: rank $r wrote the TOML's token file"; return 1; }
  done
}
export -f body checks mpirun_cluster_start judge_three_doors
export spindle work root
"$root/scripts/netns-cluster.sh" run "$name" 3 1gbit -- bash -c body
