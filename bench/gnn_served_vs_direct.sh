#!/usr/bin/env bash
# The GNN served path against the pipeline called directly and against a plain
# NumPy + PyTorch script, same run, same dataset (R-MAT, 128 features,
# GraphSAGE 128-256-47 [25,10], single-seed calls drawn by out-degree):
#   - direct: build/bench/serving_sweep --direct-only (batches of 64, no actors,
#     two pipelines on two threads: the ceiling the served path is held to);
#   - served: `spindle serve` behind its Cap'n Proto door, driven by `spindle
#     client load` in its own process, closed loop with 64 calls in flight
#     (throughput and p99), then one call in flight (idle p50);
#   - plain script: bench/torch_baseline/serve_torch.py at batch 64 (OpenBLAS,
#     2 threads, OMP_WAIT_POLICY=PASSIVE).
# Every process runs the OpenBLAS kernels spindle runs (bench/blas_kernels.sh).
# On a 2-core machine the load generator takes CPU from the server: the ratio
# to the direct pipeline counts that too.
#   usage: bench/gnn_served_vs_direct.sh SPINDLE [DATASET_DIR=/tmp/sweep20] [REQUESTS=40000]
set -euo pipefail
spindle=$(readlink -f "$1")
data=${2:-/tmp/sweep20}
requests=${3:-40000}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(dirname "$(dirname "$spindle")")
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
export SPINDLE_PROGRESS=0
. "$root/bench/blas_kernels.sh" "$spindle"  # the direct pipeline and the peer: Spindle's kernels
if [ ! -f "$data/metadata.json" ]; then
  echo "generating R-MAT scale 20 into $data (once)"
  "$spindle" generate --scale 20 --feature-dim 128 --seed 1 --out "$data" > /dev/null
fi

direct=$("$build/bench/serving_sweep" 20 "$data" --direct-only |
  sed -n 's/.*no actors): \([0-9]*\) req\/s on 1 thread, \([0-9]*\) on 2.*/\2/p')
[ -n "$direct" ] || { echo "serving_sweep printed no direct figure"; exit 1; }

. "$root/bench/gnn_server.sh"
start_gnn_server "$spindle" "$data" "$work"
load() {  # prints req/s, p50, p99 and the load generator's CPU per call (us)
  "$spindle" client --connect "$door" load --seeds "degree:$data" --json "$@" |
    /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.0f %.3f %.3f %.1f" % (j["throughput_rps"], j["latency_ms"]["p50"], j["latency_ms"]["p99"], j["client_cpu_us_per_call"]))'
}
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
load --requests 4000 --warmup 0 --clients 64 > /dev/null  # warm-up
s0=$(cpu_s "$server")
read -r served p50 p99 client_us < <(load --requests "$requests" --warmup 0 --clients 64)
s1=$(cpu_s "$server")
[ -n "${served:-}" ] && [ "${served%.*}" -gt 0 ] || { echo "the load run served nothing"; exit 1; }
# The server's calls per core-second: its CPU over the calls (the client's
# start-up, drawing seeds while the server idles, counts in neither), and the
# cores it used while they ran (its CPU over the loop's time, calls / req/s).
read -r server_us per_core server_cores < <(awk -v a="$s1" -v b="$s0" -v n="$requests" -v r="$served" \
  'BEGIN {cpu = a - b; printf "%.1f %.0f %.2f\n", cpu / n * 1e6, (cpu > 0 ? n / cpu : 0), cpu * r / n}')
read -r _ idle50 idle99 _ < <(load --requests 2000 --warmup 200 --clients 1)
kill "$server"; wait "$server" 2> /dev/null || true; server=""

# Its table: "batch | seeds/s | p50 ms p99 ms"; the row of batch 64.
torch=$(OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$root/bench/torch_baseline/serve_torch.py" "$data" --batches 40 2>/dev/null |
  awk -F'|' '$1 + 0 == 64 {gsub(/ /, "", $2); print $2}')
[ -n "$torch" ] || torch=0

echo "R-MAT $(basename "$data"), GraphSAGE 128-256-47 [25,10], single-seed calls by out-degree"
echo "| path | req/s | p50 ms | p99 ms | vs direct | vs plain script |"
echo "|---|---|---|---|---|---|"
ratio() { /usr/bin/python3 -c "print('%.2f' % ($1 / $2) if $2 > 0 else '-')"; }
echo "| direct pipeline, 2 threads, batch 64 (no actors, no RPC) | $direct | - | - | 1.00 | $(ratio "$direct" "$torch") |"
echo "| served: Cap'n Proto door, client in its own process, 64 in flight | $served | $p50 | $p99 | $(ratio "$served" "$direct") | $(ratio "$served" "$torch") |"
echo "| served, 1 in flight (idle latency) | - | $idle50 | $idle99 | - | - |"
echo "| plain NumPy + PyTorch script, batch 64 | $torch | - | - | $(ratio "$torch" "$direct") | 1.00 |"
echo
echo "The server used $server_cores cores while serving 64 in flight (the load generator the rest):"
echo "$per_core calls per server core-second, against the direct pipeline's $((direct / 2)) per core:" \
  "$(ratio "$per_core" "$((direct / 2))")x"
print_cpu_ceiling "$server_us" "$client_us" "$served" "$torch"
