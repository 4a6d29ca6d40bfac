#!/usr/bin/env bash
# Quiver §6 on emulated links (root; scripts/netns-cluster.sh): a 3-rank cluster,
# one rank per network namespace, links shaped to 1, 10 and 25 Gbit/s (tbf), UCX
# over TCP, serving R-MAT (SCALE, 128 features) partitioned by FAP or by hash
# placement, every rank with its own door. The load (`spindle client load`,
# closed loop, IN_FLIGHT calls, spread over the three doors) runs in this
# namespace. Printed per link rate and policy: throughput, p50/p99, CPU seconds
# per 1,000 calls of each rank (no funnel through rank 0) and the feature bytes
# read from other ranks per call (admin stats' feature_rows); beside it,
# in the same run, one process serving the whole dataset on loopback.
#   usage: bench/netns_cluster.sh SPINDLE [SCALE=16] [REQUESTS=4000] [IN_FLIGHT=16]
set -euo pipefail
spindle=$(readlink -f "$1")
scale=${2:-16}
requests=${3:-4000}
in_flight=${4:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$spindle" generate --scale "$scale" --edge-factor 16 --feature-dim 128 --seed 1 --out "$work/whole" > /dev/null 2>&1
"$spindle" model init --arch graphsage --in 128 --hidden 256 --classes 47 --seed 1 --out-dir "$work/m" > /dev/null
rows=$((1 << scale))
memory=$((rows * 128 * 4 * 45 / 100))  # each server holds about 45% of the feature rows

load() {  # load DOORS: one JSON report
  "$spindle" client --connect "$1" --model graphsage load --seeds "uniform:$rows" \
    --requests "$requests" --warmup 200 --clients "$in_flight" --json 2> /dev/null
}
cpu_s() {  # utime + stime of a pid, seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}
remote_rows() {  # remote feature rows read so far, summed over the doors (admin stats)
  local total=0 d
  for d in $(echo "$1" | tr ',' ' '); do
    local n
    n=$("$spindle" client --connect "$d" --token-file "$work/t" admin stats 2> /dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["models"]["graphsage"].get("feature_rows", {}).get("remote", 0))' 2> /dev/null || echo 0)
    total=$((total + n))
  done
  echo "$total"
}
summary() {  # summary JSON: "req/s p50 p99"
  python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print("%.0f %.2f %.2f %d" % (j["throughput_rps"], j["latency_ms"]["p50"], j["latency_ms"]["p99"], j["answered_ok"]))'
}

"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
one_pid=$!
for _ in $(seq 300); do grep -q '^listening ' "$work/one.log" && break; sleep 0.2; done
one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
read -r tput p50 p99 ok < <(load "$one" | summary)
kill -TERM "$one_pid"; wait "$one_pid" 2> /dev/null || true
echo "R-MAT scale $scale, GraphSAGE 128-256-47 [25,10], $requests calls, $in_flight in flight, closed loop"
echo "| setup | req/s | p50 ms | p99 ms | ok | CPU s per 1k calls: rank 0 / 1 / 2 | remote KiB per call |"
echo "|---|---|---|---|---|---|---|"
echo "| one process, loopback | $tput | $p50 | $p99 | $ok | - | 0 |"

bench_rate() {  # inside the bed: both policies at this rate
  local subnet=$SPINDLE_NETNS_SUBNET rate=$1
  for policy in fap hash; do
    "$root/scripts/netns-cluster.sh" toml "$SPINDLE_NETNS" 3 "$memory" 7700 > "$work/c.toml"
    "$spindle" partition "$work/whole" --config "$work/c.toml" --out "$work/p-$policy" --policy "$policy" --force > /dev/null
    "$spindle" launch --config "$work/c.toml" --dataset "$work/p-$policy" --model "$work/m" \
      --listen "${subnet}.1:7700" --admin-token-file "$work/t" > "$work/launch.log" 2>&1 &
    local launch=$!
    for _ in $(seq 600); do
      [ "$(grep -c '\] listening ' "$work/launch.log")" -ge 3 ] && break
      sleep 0.2
    done
    local pids=() before=() after=()
    for r in 0 1 2; do pids+=("$(pgrep -f "node --config $work/c.toml --rank $r" | head -1)"); done
    local doors="${subnet}.1:7700,${subnet}.2:7700,${subnet}.3:7700" rows0 rows1
    rows0=$(remote_rows "$doors")
    for p in "${pids[@]}"; do before+=("$(cpu_s "$p")"); done
    read -r tput p50 p99 ok < <(load "$doors" | summary)
    for p in "${pids[@]}"; do after+=("$(cpu_s "$p")"); done
    rows1=$(remote_rows "$doors")
    local kib
    kib=$(awk -v a="$rows1" -v b="$rows0" -v n="$((requests + 200))" 'BEGIN {printf "%.1f", (a - b) * 512 / 1024 / n}')
    local cpu=""
    for i in 0 1 2; do
      cpu+=$(awk -v a="${after[$i]}" -v b="${before[$i]}" -v n="$requests" 'BEGIN {printf "%.2f", (a - b) * 1000 / n}')
      [ $i -lt 2 ] && cpu+=" / "
    done
    echo "| 3 namespaces, $rate links, $policy placement | $tput | $p50 | $p99 | $ok | $cpu | $kib |"
    kill -TERM "$launch"; wait "$launch" 2> /dev/null || true
  done
}
export -f bench_rate load cpu_s summary remote_rows
export spindle work memory rows requests in_flight root
for rate in 1gbit 10gbit 25gbit; do
  "$root/scripts/netns-cluster.sh" run "spn$$" 3 "$rate" -- bash -c "bench_rate $rate" 2> /dev/null
done
