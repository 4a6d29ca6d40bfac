#!/usr/bin/env bash
# A cluster started by Debian's Open MPI, with no `spindle launch`: `mpirun -n 3`
# runs `spindle node` three times on loopback; each takes its rank and the world
# size from Open MPI's environment (OMPI_COMM_WORLD_RANK/SIZE, no --rank) and the
# cluster token from SPINDLE_CLUSTER_TOKEN (passed with -x, no token file), serves
# its partition, opens its own door on 127.0.0.1:0 and prints `listening
# HOST:PORT`. Seeded calls through every rank's door are answered as one process
# serving the whole dataset answers them. Then `mpirun -n 2` on the 3-rank TOML
# is refused by every rank, naming OMPI_COMM_WORLD_SIZE and the TOML.
# Skipped (77) where mpirun is not installed (Debian: openmpi-bin).
#   usage: mpirun_cluster_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v mpirun > /dev/null; then
  echo "mpirun_cluster_test: skipped: no mpirun here (Debian's Open MPI: apt-get install openmpi-bin)"
  exit 77
fi
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_cluster "$spindle"
SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export SPINDLE_CLUSTER_TOKEN
# Open MPI kept on this host: its own links over loopback only; as root it
# needs --allow-run-as-root; three ranks on two cores need --oversubscribe.
mpi=(mpirun --allow-run-as-root --oversubscribe --tag-output
  --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
  -x SPINDLE_CLUSTER_TOKEN -x SPINDLE_PROGRESS)
node=("$spindle" node --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m"
  --listen 127.0.0.1:0)
"${mpi[@]}" -n 3 "${node[@]}" < /dev/null > "$work/launch.log" 2>&1 &
bg+=($!)
"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
bg+=($!)

launched_doors "$work" '\\[1,%d\\]<stdout>:'
grep -E "rank [0-9] of 3 from OMPI_COMM_WORLD_RANK" "$work/launch.log" | head -3
echo "mpirun started 3 ranks with no launch; doors: ${doors[*]}"

judge_doors "$spindle"

# A world the TOML does not describe is refused by name, by every rank.
out=$(timeout 120 "${mpi[@]}" -n 2 "${node[@]}" < /dev/null 2>&1) && fail "mpirun -n 2 on a 3-rank TOML ran: $out"
grep -q "OMPI_COMM_WORLD_SIZE = 2, but $work/cluster.toml has 3 ranks" <<< "$out" ||
  fail "no refusal naming the world size: $out"
echo "refused: $(grep -m1 "OMPI_COMM_WORLD_SIZE = 2" <<< "$out")"
