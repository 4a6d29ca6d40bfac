#!/usr/bin/env bash
# Where a served GNN call's CPU goes: `spindle serve` behind its Cap'n Proto door,
# driven by `spindle client load` in its own process (64 in flight), the same
# model and calls as bench/gnn_served_vs_direct.sh. Prints the server's CPU per
# call by thread name (rpc-server, caf.multiplexer, caf.clock, spindle-pipe, ...,
# from /proc/PID/task/*/stat), its context switches per call (perf stat, when
# perf is installed) and the load generator's own CPU per call.
#   usage: bench/served_cpu_per_call.sh SPINDLE [DATASET_DIR=/tmp/sweep20] [REQUESTS=40000]
set -euo pipefail
spindle=$(readlink -f "$1")
data=${2:-/tmp/sweep20}
requests=${3:-40000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
export SPINDLE_PROGRESS=0
. "$root/bench/blas_kernels.sh" "$spindle"
. "$root/bench/gnn_server.sh"
start_gnn_server "$spindle" "$data" "$work"
load() { "$spindle" client --connect "$door" load --seeds "degree:$data" --json "$@"; }
# CPU ticks by thread name, summed over threads of one name.
ticks() {
  for t in /proc/"$server"/task/*; do echo "$(tr ' ' _ < "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
    awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
load --requests 4000 --warmup 0 --clients 64 > /dev/null  # warm-up
ticks > "$work/t0"
perf_pid=""
if command -v perf > /dev/null; then
  perf stat -e context-switches -p "$server" -x, -o "$work/cs" 2> /dev/null &
  perf_pid=$!
fi
"$spindle" client --connect "$door" load --seeds "degree:$data" --json --requests "$requests" \
  --warmup 0 --clients 64 > "$work/load.json"
[ -n "$perf_pid" ] && { kill -INT "$perf_pid"; wait "$perf_pid" 2> /dev/null || true; }
ticks > "$work/t1"
hz=$(getconf CLK_TCK)
echo "$requests calls, 64 in flight: $(/usr/bin/python3 -c "import json; j=json.load(open('$work/load.json')); print('%.0f req/s, p99 %.2f ms' % (j['throughput_rps'], j['latency_ms']['p99']))")"
echo "server CPU per call by thread (us):"
join "$work/t0" "$work/t1" | awk -v hz="$hz" -v n="$requests" \
  '{us = ($3 - $2) / hz / n * 1e6; total += us; if (us >= 0.05) printf "  %-16s %6.1f\n", $1, us}
   END {printf "  %-16s %6.1f\n", "total", total}' | tee "$work/by_thread"
server_us=$(awk '$1 == "total" {print $2}' "$work/by_thread")
if [ -s "$work/cs" ]; then
  awk -F, -v n="$requests" '/context-switches/ {printf "server context switches per call: %.2f\n", $1 / n}' "$work/cs"
fi
# The client's own CPU over its measured loop (not its start-up: reading the
# dataset to draw seeds), as `client load --json` reports it.
client_us=$(/usr/bin/python3 -c "import json; print('%.1f' % json.load(open('$work/load.json'))['client_cpu_us_per_call'])")
echo "load generator CPU per call: $client_us us"
served=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/load.json'))['throughput_rps'])")
print_cpu_ceiling "$server_us" "$client_us" "$served"
