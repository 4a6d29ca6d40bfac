#!/usr/bin/env bash
# The front door in `make demo`: starts `spindle serve` with the Cap'n Proto
# server, the Prometheus endpoint and the DLRM, drives load with `spindle
# client` and one KServe v2 call with curl, changes a policy live with `spindle shell`, shows the effect in stats
# and metrics, and stops the server.
set -euo pipefail
spindle="$1"; dir="$2"
log="$dir/serve.log"
"$spindle" serve --dataset "$dir/rmat16" --model "$dir/sage" --name sage \
  --calibration "$dir/psgs-calibration.json" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 \
  --http 127.0.0.1:0 --grpc 127.0.0.1:0 \
  --admin-token-file "$dir/admin.token" --dlrm-model "$dir/dlrm" --dlrm-name ctr --pdb "$dir/dlrm-pdb" \
  > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q '^listening ' "$log" && break; sleep 0.1; done
endpoint=$(sed -n 's/^listening //p' "$log")
metrics=$(sed -n 's/^metrics //p' "$log")
http=$(sed -n 's/^http //p' "$log")
echo "server at $endpoint, metrics at $metrics, KServe v2 at $http"
# The KServe v2 door: any Triton/KServe client, or curl.
curl -s -X POST "$http/models/sage/infer" \
  -d '{"inputs": [{"name": "seeds", "datatype": "INT64", "shape": [3], "data": [1, 2, 3]}]}'
echo
"$spindle" client --connect "$endpoint" --model sage infer --seeds 1,2,3
"$spindle" client --connect "$endpoint" --model sage load --requests 5000 --clients 16 \
  --seeds "degree:$dir/rmat16" --plot "$dir/latency-cdf.png"
"$spindle" shell --connect "$endpoint" --token-file "$dir/admin.token" \
  -c 'tunables sage; set sage routing_policy loose; set sage max_batch 32; tunables sage'
"$spindle" client --connect "$endpoint" --model sage load --requests 5000 --rate 2000 --seeds "degree:$dir/rmat16"
"$spindle" shell --connect "$endpoint" --token-file "$dir/admin.token" -c 'watch stats 1 1'
curl -s "$metrics" | grep -E '^spindle_(responses_total|queue_depth)' | head -8
