#!/usr/bin/env bash
# One request at a time on an idle server, end to end through the Cap'n Proto
# front door and the KServe gRPC door (`spindle client load --clients 1`, the
# client sleeping until each answer as a user's would; on the Cap'n Proto door
# also polling for it, `--poll-us 300`, so the door's own latency shows without
# the client's wake-up), same server, same run:
# run to completion on the door's thread (the express lane, the default),
# then every call through the batcher and a pipeline thread (tunable
# express_max_requests 0), alternating twice; then with work_conserving false
# as well (every lone request waits for the 2 ms batch deadline: the behaviour
# in earlier releases).
#   usage: bench/idle_latency.sh SPINDLE DATASET_DIR [REQUESTS=2000]
set -euo pipefail
spindle="$1"; data="$2"; n="${3:-2000}"
work=$(mktemp -d)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
export SPINDLE_PROGRESS=0
"$spindle" model init --arch graphsage --in "$(python3 -c "import json;print(json.load(open('$data/metadata.json'))['feature_dim'])")" \
  --hidden 256 --classes 47 --seed 1 --out-dir "$work/sage" > /dev/null
"$spindle" calibrate "$data" --model "$work/sage" --out "$work/cal.json" --plot "" --batches 60 > /dev/null
"$spindle" serve --dataset "$data" --model "$work/sage" --name sage --calibration "$work/cal.json" \
  --listen 127.0.0.1:0 --grpc 127.0.0.1:0 --admin-token-file "$work/admin.token" > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 600); do
  grep -q '^listening ' "$work/serve.log" && grep -q '^grpc ' "$work/serve.log" && break
  sleep 0.1
done
endpoint=$(sed -n 's/^listening //p' "$work/serve.log")
grpc=$(sed -n 's/^grpc \([^ ]*\).*/\1/p' "$work/serve.log" | head -1)
load() {  # [grpc | ARGS...]: through the KServe gRPC door, or with more load arguments
  local at=$endpoint door=capnp
  [ "${1:-}" = grpc ] && at=$grpc door=grpc && shift
  "$spindle" client --connect "$at" --model sage load --door "$door" --requests "$n" --warmup 200 \
    --clients 1 --seeds "degree:$data" --json "$@" |
    python3 -c "import json,sys; j=json.load(sys.stdin); l=j['latency_ms']; print(f\"p50 {l['p50']:.3f} ms  p99 {l['p99']:.3f} ms  ({j['throughput_rps']:.0f} req/s)\")"
}
set_tunable() {
  "$spindle" shell --connect "$endpoint" --token-file "$work/admin.token" -c "set sage $1 $2" > /dev/null
}
express_batches() {
  "$spindle" shell --connect "$endpoint" --token-file "$work/admin.token" -c 'stats' |
    python3 -c "import json,sys; print(json.load(sys.stdin)['models']['sage']['express']['batches'])"
}
echo "idle server, one request in flight, $n requests, $data"
for round in 1 2; do
  set_tunable express_max_requests 1
  before=$(express_batches)
  echo "  run to completion on the door (default):    $(load)  [$(( $(express_batches) - before )) express batches]"
  echo "    the same, the client polling (--poll-us):  $(load --poll-us 300)"
  before=$(express_batches)
  echo "    the same over KServe gRPC:                $(load grpc)  [$(( $(express_batches) - before )) express batches]"
  set_tunable express_max_requests 0
  echo "  through the batcher and a pipeline thread:  $(load)"
  echo "    the same over KServe gRPC:                $(load grpc)"
done
set_tunable work_conserving false
echo "  deadline-bound batcher (2 ms, as before):   $(load)"
