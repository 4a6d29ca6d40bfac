#!/usr/bin/env bash
# What OpenBLAS's kernel choice does to Spindle's work, same run: the DLRM of
# bench/dlrm_vs_torch.sh (26 tables x 128, 13-512-256-128 / 479-1024-1024-512-256-1)
# served twice at once, one server on the kernels OpenBLAS picks by CPU model
# (OPENBLAS_CORETYPE unset: on a CPU it does not know, Prescott) and one on the
# kernels spindle picks by CPU features, driven in turns over Cap'n Proto (batch
# 256, 2 calls in flight); and the MLPs' GEMMs alone (bench/dlrm_gemm_limit) on each.
#   usage: bench/blas_kernels_ab.sh SPINDLE [ROUNDS=3] [BATCH=256]
set -euo pipefail
spindle=$(readlink -f "$1")
rounds=${2:-3}
batch=${3:-256}
root=$(cd "$(dirname "$0")/.." && pwd)
limit=$(dirname "$spindle")/../bench/dlrm_gemm_limit
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done; rm -rf "$work"' EXIT
unset OPENBLAS_CORETYPE
/usr/bin/python3 "$root/bench/torch_baseline/dlrm_torch.py" "$work/m" --write --rows 10000
picked=$("$spindle" devices | sed -n 's/^BLAS kernels: \([A-Za-z0-9]*\).*/\1/p')
own=$(/usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0")
l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())')
echo "kernels: OpenBLAS by CPU model: $own; spindle by CPU features: $picked"
start() {  # name, OPENBLAS_CORETYPE or "" (spindle's pick); sets $door (no subshell: the trap stops it)
  env ${2:+OPENBLAS_CORETYPE=$2} "$spindle" serve --rec-model "ctr=$work/m" --rec-workers 2 \
    --listen 127.0.0.1:0 > "$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 600); do grep -qs '^listening ' "$work/$1.log" && break; sleep 0.2; done
  door=$(sed -n 's/^listening //p' "$work/$1.log")
  [ -n "$door" ] || { echo "the $1 server did not listen"; tail "$work/$1.log"; exit 1; }
}
start model "$own"
door_model=$door
start features ""
door_features=$door
served() {
  "$spindle" client --connect "$1" --model ctr load --batch "$batch" --clients 2 --requests 300 \
    --warmup 5 --json | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.0f %.1f" % (j["samples_per_s"], j["latency_ms"]["p99"]))'
}
gemm() {
  env OPENBLAS_CORETYPE="$1" "$limit" "$work/m" "$batch" 2 2 |
    /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.0f %.1f" % (j["gemm_samples_per_s"], j["gflops"]))'
}
echo "| round | kernels | served samples/s (p99 ms) | GEMM-only samples/s (GFLOP/s) |"
echo "|---|---|---|---|"
for r in $(seq "$rounds"); do
  for k in model features; do
    if [ "$k" = model ]; then door=$door_model core=$own; else door=$door_features core=$picked; fi
    read -r sps p99 <<< "$(served "$door")"
    read -r gsps gf <<< "$(gemm "$core")"
    echo "| $r | $core (by CPU $k) | $sps ($p99) | $gsps ($gf) |"
  done
done
