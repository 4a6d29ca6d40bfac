#!/usr/bin/env bash
# Chaos: overload on every door of one `spindle serve` (Cap'n Proto, KServe
# HTTP, KServe gRPC), driven by `spindle client load --door D`. The model's
# admission cap is lowered to 16 calls in flight (`max_queue`), then each door
# gets an open loop at 2x the capacity measured on it, from 64 connections:
# more calls than admitted arrive. Every call must come back answered or
# refused as `overloaded` (HTTP 429, gRPC RESOURCE_EXHAUSTED): none lost, no
# other error. A seeded call answers the same before and after, and the door
# then serves again. Prints, per door, capacity, admitted p50/p99, refusals and
# their p50/p99 (from each call's due time; on 2 cores the client has its own
# core, the server the other).
#   usage: overload_test.sh SPINDLE
set -uo pipefail
spindle=$1
work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2> /dev/null && wait "$server" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export SPINDLE_PROGRESS=0
fail() { echo "FAIL: $*"; [ -f "$work/serve.log" ] && tail -20 "$work/serve.log"; exit 1; }

server_cpu=""; client_cpu=""
if [ "$(nproc)" -ge 2 ]; then server_cpu="taskset -c 0"; client_cpu="taskset -c 1"; fi
"$spindle" generate --scale 12 --feature-dim 32 --seed 1 --out "$work/g" > /dev/null 2>&1 || fail generate
"$spindle" model init --arch graphsage --in 32 --hidden 64 --classes 8 --seed 1 \
  --out-dir "$work/m" > /dev/null || fail "model init"
$server_cpu "$spindle" serve --dataset "$work/g" --model "$work/m" --name sage \
  --listen 127.0.0.1:0 --http 127.0.0.1:0 --grpc 127.0.0.1:0 \
  --admin-token-file "$work/admin.token" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do grep -q '^listening ' "$work/serve.log" && break; sleep 0.1; done
capnp=$(sed -n 's/^listening //p' "$work/serve.log")
http=$(sed -n 's#^http http://\([^/]*\)/v2#\1#p' "$work/serve.log")
grpc=$(sed -n 's/^grpc //p' "$work/serve.log")
[ -n "$capnp" ] && [ -n "$http" ] && [ -n "$grpc" ] || fail "the server did not open its three doors"

seeded() {  # one call with a sampler seed: its outputs, as text
  "$spindle" client --connect "$capnp" --model sage infer --seeds 7,99 --sampler-seed 5 --json |
    python3 -c "import json,sys; j=json.load(sys.stdin); print(j['status'], j['outputs'])"
}
before=$(seeded) || fail "a seeded call before the overload"
load() {  # door endpoint args...: the JSON report
  $client_cpu "$spindle" client --connect "$2" --model sage load --door "$1" \
    --seeds uniform:4096 --json "${@:3}"
}
declare -A capacity
for door in capnp http grpc; do
  capacity[$door]=$(load "$door" "${!door}" --requests 4000 --warmup 500 --clients 32 |
    python3 -c "import json,sys; print(round(json.load(sys.stdin)['throughput_rps']))") ||
    fail "$door: capacity"
done
"$spindle" shell --connect "$capnp" --token-file "$work/admin.token" -c 'set sage max_queue 16' \
  > /dev/null || fail "set max_queue"

echo "overload, 2x each door's capacity, 64 connections, admission cap 16 calls in flight:"
for door in capnp http grpc; do
  rate=$((2 * capacity[$door]))
  load "$door" "${!door}" --requests 8000 --warmup 200 --clients 64 --rate "$rate" \
    > "$work/$door.json" || fail "$door: the load failed"
  python3 - "$work/$door.json" "$door" "${capacity[$door]}" <<'EOF' || fail "$door: see above"
import json, sys
j = json.load(open(sys.argv[1])); door, cap = sys.argv[2], int(sys.argv[3])
st = j["status"]; ok = st.get("ok", 0); refused = st.get("overloaded", 0)
lat = j["latency_ms"]; rl = j.get("refused_latency_ms", {}).get("overloaded", {"p50": 0, "p99": 0})
print(f"  {door:<5} capacity {cap:6d}/s  admitted {ok:5d} p50 {lat['p50']:7.2f} p99 {lat['p99']:7.2f} ms"
      f"  refused {refused:5d} p50 {rl['p50']:6.2f} p99 {rl['p99']:6.2f} ms")
other = {k: v for k, v in st.items() if k not in ("ok", "overloaded")}
if other: sys.exit(f"{door}: answers other than ok/overloaded: {other} ({j.get('first_error')})")
if ok + refused != j["requests"]: sys.exit(f"{door}: {j['requests'] - ok - refused} calls lost")
if ok == 0 or refused == 0: sys.exit(f"{door}: expected both admitted and refused calls, got {st}")
EOF
done
after=$(seeded) || fail "a seeded call after the overload"
[ "$before" = "$after" ] || fail "the seeded answer changed: before $before, after $after"
curl -sf -o /dev/null "http://$http/v2/health/ready" || fail "the HTTP door is not ready after"
kill -0 "$server" 2> /dev/null || fail "the server died"
echo "all doors answered or refused every call; the seeded answer is unchanged"
