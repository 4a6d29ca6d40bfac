#!/usr/bin/env bash
# Overload at the front door: the server pinned to core 0,
# the load generator to core 1. Measures the model's capacity (closed loop, 32
# in flight), then Poisson open loops at 0.5x and 2x capacity with the SLO
# admission limit (default: 30 ms SLO), and, same server and run, 2x capacity
# with slo_ms 0 (only max_queue 1024, as before). Each row: ok answers' p50/p99
# end to end (from each request's scheduled send time), refusals' p50/p99, and
# goodput as a share of capacity. Baseline row: the same open loop answered
# `bad_request` at once (unknown model): this machine's front-door round trip.
#   usage: bench/overload.sh SPINDLE DATASET_DIR [REQUESTS=100000]
set -euo pipefail
spindle="$1"; data="$2"; n="${3:-100000}"
work=$(mktemp -d)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
export SPINDLE_PROGRESS=0
server_cpu=0; client_cpu=1
if [ "$(nproc)" -lt 2 ]; then echo "warning: fewer than 2 cores: server and client share one"; client_cpu=0; fi
"$spindle" model init --arch graphsage --in "$(python3 -c "import json;print(json.load(open('$data/metadata.json'))['feature_dim'])")" \
  --hidden 256 --classes 47 --seed 1 --out-dir "$work/sage" > /dev/null
"$spindle" calibrate "$data" --model "$work/sage" --out "$work/cal.json" --plot "" --batches 60 > /dev/null
taskset -c $server_cpu "$spindle" serve --dataset "$data" --model "$work/sage" --name sage \
  --calibration "$work/cal.json" --listen 127.0.0.1:0 --admin-token-file "$work/admin.token" \
  > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do grep -q '^listening ' "$work/serve.log" && break; sleep 0.1; done
endpoint=$(sed -n 's/^listening //p' "$work/serve.log")
rss() { awk '/VmRSS/ {printf "%.0f MB", $2/1024}' /proc/$server/status; }
client() { taskset -c $client_cpu "$spindle" client --connect "$endpoint" --model "$1" load --seeds "degree:$data" --json "${@:2}"; }
capacity=$(client sage --requests 20000 --warmup 2000 --clients 32 |
  python3 -c "import json,sys; print(round(json.load(sys.stdin)['throughput_rps']))")
row() {  # label model rate
  client "$2" --requests "$n" --warmup 1000 --rate "$3" | python3 -c "
import json,sys
j=json.load(sys.stdin); l=j['latency_ms']; r=j.get('refused_latency_ms',{})
ok=f\"ok p50 {l['p50']:6.2f} p99 {l['p99']:6.2f} ms\" if j['answered_ok'] else 'ok  (none)                 '
ref='  '.join(f\"{k} {v['p50']:.3f}/{v['p99']:.3f} ms (p50/p99) x{j['status'][k]}\" for k,v in r.items())
print(f\"  {'$1':<34} {ok}  goodput {j['throughput_rps']/$capacity:5.2f}x  {ref}\")"
}
echo "overload at the front door: $data, server on cpu $server_cpu, client on cpu $client_cpu, $n requests per row"
echo "  capacity (closed loop, 32 in flight): $capacity req/s; server RSS $(rss)"
row "baseline: refused at once, 2x rate" nosuch $((2 * capacity))
row "0.5x capacity, SLO 30 ms" sage $((capacity / 2))
row "2x capacity, SLO 30 ms (default)" sage $((2 * capacity))
"$spindle" shell --connect "$endpoint" --token-file "$work/admin.token" -c 'set sage slo_ms 0' > /dev/null
row "2x capacity, max_queue 1024 only" sage $((2 * capacity))
echo "  server RSS after: $(rss)"
