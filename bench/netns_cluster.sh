#!/usr/bin/env bash
# Quiver §6 on emulated links (root; scripts/netns-cluster.sh): clusters of 2, 3
# and 4 ranks, one rank per network namespace, links shaped to 1, 10 and 25
# Gbit/s (tbf), UCX over TCP, serving R-MAT (SCALE, 128 features) partitioned by
# FAP, by hash, or by degree (PaGraph: the highest-degree rows that fit
# replicated on every rank, the rest hashed), every rank with its own door.
# Cluster memory is 1.35x the feature table, split evenly. The load (`spindle
# client load`, closed loop, IN_FLIGHT calls, spread over every door) runs in
# this namespace. Printed per size, link rate and policy: throughput, p50/p99,
# CPU seconds per 1,000 calls of each rank (no funnel through rank 0) and the
# feature bytes read from other ranks per call (admin stats' feature_rows);
# beside it, in the same run, one process serving the whole dataset on loopback.
# Each row also gives the p99 at a fixed offered load (open loop, Poisson
# FIXED_RATE calls/s, default 2,000, over the same doors).
# Then the per-call CPU cost is fitted as C0 + CR x remote rows over every row,
# and build/bench/cluster_projection projects 8 and 32 servers with it.
#   usage: bench/netns_cluster.sh SPINDLE [SCALE=16] [REQUESTS=4000] [IN_FLIGHT=16] [SIZES="2 3 4"] [RATES="1gbit 10gbit 25gbit"]
set -euo pipefail
spindle=$(readlink -f "$1")
scale=${2:-16}
requests=${3:-4000}
in_flight=${4:-16}
sizes=${5:-2 3 4}
rates=${6:-1gbit 10gbit 25gbit}
fixed_rate=${FIXED_RATE:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$spindle" generate --scale "$scale" --edge-factor 16 --feature-dim 128 --seed 1 --out "$work/whole" > /dev/null 2>&1
"$spindle" model init --arch graphsage --in 128 --hidden 256 --classes 47 --seed 1 --out-dir "$work/m" > /dev/null
rows=$((1 << scale))
memory_of() { echo $((rows * 128 * 4 * 135 / 100 / $1)); }  # 1.35x the table over N ranks

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
fixed_p99() {  # fixed_p99 DOORS: p99 ms of an open loop at $fixed_rate calls/s
  "$spindle" client --connect "$1" --model graphsage load --seeds "uniform:$rows" \
    --requests "$requests" --warmup 200 --clients "$in_flight" --rate "$fixed_rate" --json 2> /dev/null |
    python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["latency_ms"]["p99"])'
}
summary() {  # summary JSON: "req/s p50 p99"
  python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print("%.0f %.2f %.2f %d" % (j["throughput_rps"], j["latency_ms"]["p50"], j["latency_ms"]["p99"], j["answered_ok"]))'
}

"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
one_pid=$!
for _ in $(seq 300); do grep -q '^listening ' "$work/one.log" && break; sleep 0.2; done
one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
read -r tput p50 p99 ok < <(load "$one" | summary)
fixed=$(fixed_p99 "$one")
kill -TERM "$one_pid"; wait "$one_pid" 2> /dev/null || true
echo "R-MAT scale $scale, GraphSAGE 128-256-47 [25,10], $requests calls, $in_flight in flight, closed loop"
echo "| setup | req/s | p50 ms | p99 ms | ok | p99 ms at $fixed_rate/s | CPU s per 1k calls, each rank | remote KiB per call |"
echo "|---|---|---|---|---|---|---|---|"
echo "| one process, loopback | $tput | $p50 | $p99 | $ok | $fixed | - | 0 |"
: > "$work/fit.txt"  # "cpu_us_per_call remote_rows_per_call" per cluster row

bench_rate() {  # inside the bed: every policy at this size and rate
  local subnet=$SPINDLE_NETNS_SUBNET n=$1 rate=$2
  for policy in fap hash degree; do
    "$root/scripts/netns-cluster.sh" toml "$SPINDLE_NETNS" "$n" "$(memory_of "$n")" 7700 > "$work/c.toml"
    "$spindle" partition "$work/whole" --config "$work/c.toml" --out "$work/p-$policy" --policy "$policy" --force > /dev/null
    # Each "machine" of the bed has its own disk: the data, the TOML and the
    # Admin token on every one (and launch's own copy of the TOML).
    local data d
    data=$("$root/scripts/netns-cluster.sh" data "$SPINDLE_NETNS")
    for d in "$data" $(for ((r = 0; r < n; ++r)); do "$root/scripts/netns-cluster.sh" rank-dir "$SPINDLE_NETNS" "$r"; done); do
      rm -rf "$d/p" "$d/m"
      cp -r "$work/p-$policy" "$d/p" && cp -r "$work/m" "$d/m" && cp "$work/c.toml" "$d/c.toml"
      (umask 077; [ -e "$work/t" ] || od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$work/t"; cp "$work/t" "$d/t")
    done
    "$spindle" launch --config "$data/c.toml" --dataset "$data/p" --model "$data/m" \
      --listen "${subnet}.1:7700" --admin-token-file "$data/t" > "$work/launch.log" 2>&1 &
    local launch=$!
    for _ in $(seq 600); do
      [ "$(grep -c '\] listening ' "$work/launch.log")" -ge "$n" ] && break
      sleep 0.2
    done
    local pids=() before=() after=() doors="" r
    for ((r = 0; r < n; ++r)); do
      pids+=("$(pgrep -f "node --config $data/c.toml --rank $r" | head -1)")
      doors+="${doors:+,}${subnet}.$((r + 1)):7700"
    done
    local rows0 rows1
    rows0=$(remote_rows "$doors")
    for p in "${pids[@]}"; do before+=("$(cpu_s "$p")"); done
    read -r tput p50 p99 ok < <(load "$doors" | summary)
    for p in "${pids[@]}"; do after+=("$(cpu_s "$p")"); done
    rows1=$(remote_rows "$doors")
    local fixed
    fixed=$(fixed_p99 "$doors")
    local kib per_call cpu="" total=0
    kib=$(awk -v a="$rows1" -v b="$rows0" -v n="$((requests + 200))" 'BEGIN {printf "%.1f", (a - b) * 512 / 1024 / n}')
    per_call=$(awk -v a="$rows1" -v b="$rows0" -v n="$((requests + 200))" 'BEGIN {printf "%.2f", (a - b) / n}')
    for ((r = 0; r < n; ++r)); do
      cpu+=$(awk -v a="${after[$r]}" -v b="${before[$r]}" -v n="$requests" 'BEGIN {printf "%.2f", (a - b) * 1000 / n}')
      total=$(awk -v t="$total" -v a="${after[$r]}" -v b="${before[$r]}" 'BEGIN {print t + a - b}')
      [ $r -lt $((n - 1)) ] && cpu+=" / "
    done
    echo "| $n namespaces, $rate links, $policy placement | $tput | $p50 | $p99 | $ok | $fixed | $cpu | $kib |"
    awk -v t="$total" -v n="$requests" -v rr="$per_call" 'BEGIN {printf "%.2f %s\n", t * 1e6 / n, rr}' >> "$work/fit.txt"
    kill -TERM "$launch"; wait "$launch" 2> /dev/null || true
  done
}
export -f bench_rate load cpu_s summary remote_rows memory_of fixed_p99
export spindle work rows requests in_flight root fixed_rate
for n in $sizes; do
  for rate in $rates; do
    "$root/scripts/netns-cluster.sh" run "spn$$" "$n" "$rate" -- bash -c "bench_rate $n $rate" 2> /dev/null
  done
done

# CPU per call = C0 + CR x remote rows per call, least squares over every row above.
read -r c0 cr < <(python3 -c '
import sys
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
n = len(pts); mx = sum(p[1] for p in pts) / n; my = sum(p[0] for p in pts) / n
sxx = sum((p[1] - mx) ** 2 for p in pts); sxy = sum((p[1] - mx) * (p[0] - my) for p in pts)
cr = sxy / sxx if sxx > 0 else 0.0
print("%.2f %.4f" % (my - cr * mx, cr))' "$work/fit.txt")
echo
echo "fitted cost per call over the rows above: ${c0} us + ${cr} us per remote row (CPU, all ranks)"
projection="$(dirname "$spindle")/../bench/cluster_projection"
if [ -x "$projection" ]; then
  "$projection" "$root/examples" "$work/whole" "$c0" "$cr" 2
else
  echo "(build/bench/cluster_projection not built: no projection)"
fi
