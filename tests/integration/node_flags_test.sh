#!/usr/bin/env bash
# `spindle node` flags that only rank 0 honours (--workload, --expect,
# --replan-drift, --replan-min-requests) are refused by name on any other rank,
# whether the rank comes from --rank or from the launcher's environment; rank 0
# takes them. --calibration and --calibrate without the GNN they route, and the
# door's flags (--metrics, --http, --rec-model, ...) without --listen, and the
# typed tables' flags (--type-table-*) without a typed GNN, are refused by name. `node --help` says which ranks honour each flag.
#   usage: node_flags_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_and_cleanup
read -r p0 p1 p2 <<< "$(free_ports 3)"
cat > "$work/cluster.toml" <<TOML
coordinator = "s0"
token_file = "cluster.token"
[[server]]
name = "s0"
host = "127.0.0.1"
port = $p0
memory = 1000000
[[server]]
name = "s1"
host = "127.0.0.1"
port = $p1
memory = 1000000
[[server]]
name = "s2"
host = "127.0.0.1"
port = $p2
memory = 1000000
TOML
export SPINDLE_CLUSTER_TOKEN=0123456789abcdef0123456789abcdef

# refused WHY EXPECTED ARGS...: `spindle node ARGS` exits non-zero within 20 s
# (124, a member waiting for its coordinator, is not a refusal) printing EXPECTED.
refused() {
  local why=$1 expected=$2 out rc
  shift 2
  out=$(timeout 20 "$spindle" node --config "$work/cluster.toml" "$@" 2>&1)
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$why: exited with $rc: $out"
  grep -qF -- "$expected" <<< "$out" || fail "$why: no refusal naming it: $out"
  echo "refused ($why): $(grep -m1 -F -- "$expected" <<< "$out")"
}

only0="honoured by rank 0 (the coordinator) only"
refused "rank 1 --expect" "--expect is $only0, and this is rank 1" --rank 1 --expect 2
refused "rank 2 --workload" "--workload is $only0, and this is rank 2" --rank 2 --workload 10
refused "rank 1 --replan-drift" "--replan-drift is $only0" --rank 1 --replan-drift 0.05
refused "rank 1 --replan-min-requests" "--replan-min-requests is $only0" \
  --rank 1 --replan-min-requests 100
SPINDLE_RANK=2 SPINDLE_WORLD_SIZE=3 refused "rank 2 from SPINDLE_RANK" \
  "--expect, --replan-drift are $only0, and this is rank 2" --expect 2 --replan-drift 0.1
refused "--calibration without a model" \
  "--calibration $work/c.json routes this node's GNN batches: it needs --dataset and --model" \
  --rank 1 --calibration "$work/c.json"
refused "--calibrate without a model" "--calibrate routes this node's GNN batches" \
  --rank 2 --calibrate

refused "--device cuda without a model" "--device cuda: this rank serves no GNN" \
  --rank 1 --device cuda
refused "--device-feature-mb without --device cuda" "it needs --device cuda" \
  --rank 1 --device-feature-mb 64
refused "--device cuda with graph updates" "--graph-updates with --device cuda" \
  --rank 1 --device cuda --graph-updates --graph-stream 127.0.0.1:1

# The typed tables' flags on a rank serving no typed GNN are refused by name,
# before anything is created in the folder.
refused "--type-table-pdb without a GNN" \
  "--type-table-pdb, --type-table-cache: this server serves no GNN" \
  --rank 1 --type-table-pdb "$work/pdb" --type-table-cache 0.5
[ ! -e "$work/pdb" ] || fail "--type-table-pdb created its folder on a refused rank"

# The door's flags without --listen (no door opens) are refused by name, on any rank.
nodoor="without --listen HOST:PORT no door opens"
refused "rank 1 --metrics without --listen" "--metrics configures this node's door, and $nodoor" \
  --rank 1 --metrics 127.0.0.1:0
refused "rank 0 KServe without --listen" "--http, --grpc configure this node's door, and $nodoor" \
  --rank 0 --http 127.0.0.1:0 --grpc 127.0.0.1:0
refused "rank 2 door limits without --listen" \
  "--admin-token-file, --max-connections-per-peer, --max-queue configure this node's door" \
  --rank 2 --max-queue 8 --admin-token-file "$work/admin.token" --max-connections-per-peer 4
refused "rank 1 --rec-model without --listen" "--rec-model configures this node's door" \
  --rank 1 --rec-model "r=$work/rec"
# With --listen the same flags pass this check (rank 1 then waits for its coordinator).
out=$(timeout 5 "$spindle" node --config "$work/cluster.toml" --rank 1 --listen 127.0.0.1:0 \
  --metrics 127.0.0.1:0 2>&1)
! grep -qF "$nodoor" <<< "$out" || fail "--metrics refused with --listen: $out"
echo "the door's flags are refused without --listen, taken with it"

# Rank 0 takes them: it starts and waits for its members (stopped here by timeout).
out=$(timeout 5 "$spindle" node --config "$work/cluster.toml" --rank 0 --expect 2 \
  --replan-drift 0.05 --replan-min-requests 100 2>&1)
rc=$?
[ "$rc" -eq 124 ] || [ "$rc" -eq 0 ] || fail "rank 0 refused its own flags ($rc): $out"
grep -q "ready" <<< "$out" || fail "rank 0 did not start: $out"
! grep -qF "$only0" <<< "$out" || fail "rank 0 refused its own flags: $out"
echo "rank 0 took --expect, --replan-drift and --replan-min-requests"

# The help says which ranks honour each flag.
help=$("$spindle" node --help 2>&1)
for flag in --workload --expect --replan-drift --replan-min-requests; do
  grep -A1 -- "^ *$flag" <<< "$help" | tr -s ' \n' ' ' | grep -q "Rank 0 only (other ranks refuse it)" ||
    fail "node --help does not say $flag is rank 0's only"
done
for flag in --metrics --http --grpc --admin-token-file --max-queue --slo-ms; do
  grep -A1 -- "^ *$flag" <<< "$help" | tr -s ' \n' ' ' | grep -q "Any rank's door" ||
    fail "node --help does not say every rank's door honours $flag"
done
! grep -q "Rank 0:" <<< "$help" || fail "node --help still says 'Rank 0:': $(grep "Rank 0:" <<< "$help")"
echo "node --help names the ranks that honour each flag"
echo "PASS"
