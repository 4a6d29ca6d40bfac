#!/usr/bin/env bash
# A DLRM served by Spindle beside the same model in plain PyTorch, same run,
# same machine: 26 tables (ROWS rows each) x 128, 13 dense, bottom
# 13-512-256-128, top 479-1024-1024-512-256-1, one Zipf-1.2 key per table per
# sample. Spindle: `spindle serve --rec-model` (tables in memory, 2 workers,
# intra-call parallelism on) driven by `spindle client load` over each door
# (Cap'n Proto, KServe HTTP with binary tensors, KServe gRPC), 1 and 2 calls
# in flight; and the same weights through the parameter server
# (`--dlrm-model`, tables in RocksDB behind the VDB and L1 cache, warmed at
# start) over Cap'n Proto; and the same model with precision = "bf16" (its MLPs
# in bfloat16 on AMX / AVX-512 BF16, summed in float32) over Cap'n Proto; and the
# same model with table_precision = "int8" (its tables row-wise int8 in memory;
# `spindle model info` prints both models' table bytes) over Cap'n Proto; and the
# same model with precision = "int8" (path int8mlp: its MLPs' products in int8 on
# VNNI, each input row quantised on the fly, sums in int32) over Cap'n Proto. PyTorch: bench/torch_baseline/dlrm_torch.py on
# Debian's OpenBLAS, 2 threads, OMP_WAIT_POLICY=PASSIVE, batches back to back,
# with the same OpenBLAS kernels as Spindle (OPENBLAS_CORETYPE as `spindle
# devices` reports them: OpenBLAS takes CPUs it does not know for Prescott, and
# Spindle restarts itself with the kernels the CPU allows). Beside them, the
# GEMM-only limit (build/bench/dlrm_gemm_limit: the MLPs' products alone, sgemm or at
# a few samples per-sample sgemv, whichever is faster, on the same OpenBLAS and cores; in brackets the model's whole forward in one process, no
# serving) and each row as a fraction of the limit.
# First checks that both give the same scores for one batch.
#   usage: bench/dlrm_vs_torch.sh SPINDLE [ROWS=10000] [BATCHES=1,64,256,1024] [DOORS="capnp http grpc ps bf16 int8 int8mlp"]
set -euo pipefail
spindle=$(readlink -f "$1")
rows=${2:-10000}
batches=${3:-1,64,256,1024}
doors=${4:-capnp http grpc ps bf16 int8 int8mlp}
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
gemm_limit=${SPINDLE_GEMM_LIMIT:-$(dirname "$spindle")/../bench/dlrm_gemm_limit}
work=$(mktemp -d)
. "$root/bench/blas_kernels.sh" "$spindle"  # the peer gets the kernels Spindle runs
server=""
trap '[ -n "$server" ] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT
"$py" "$root/bench/torch_baseline/dlrm_torch.py" "$work/m" --write --rows "$rows"
cp -r "$work/m" "$work/m16"
sed -i '/^\[model\]/a precision = "bf16"' "$work/m16/model.toml"
cp -r "$work/m" "$work/m8"
sed -i '/^\[model\]/a table_precision = "int8"' "$work/m8/model.toml"
cp -r "$work/m" "$work/mq"
sed -i '/^\[model\]/a precision = "int8"' "$work/mq/model.toml"
"$spindle" model info "$work/m" | grep '^table_precision'
"$spindle" model info "$work/m8" | grep '^table_precision'
"$spindle" serve --rec-model "ctr=$work/m" --rec-model "ctr16=$work/m16" \
  --rec-model "ctr8=$work/m8" --rec-model "ctrq=$work/mq" --rec-workers 2 --listen 127.0.0.1:0 \
  --http 127.0.0.1:0 --grpc 127.0.0.1:0 \
  --dlrm-model "$work/m" --dlrm-name ctr_ps --pdb "$work/pdb" > "$work/log" 2>&1 &
server=$!
for _ in $(seq 600); do grep -qs '^listening ' "$work/log" && break; sleep 0.2; done
door=$(sed -n 's/^listening //p' "$work/log")
http=$(sed -n 's#^http http://\([^/]*\)/v2#\1#p' "$work/log")
grpc=$(sed -n 's/^grpc //p' "$work/log")

# The same scores: one batch of 64 through Spindle and through PyTorch.
"$py" - "$work/m" "$work/batch.json" <<'PY'
import json, sys, numpy as np
rng = np.random.default_rng(7)
m = __import__("tomllib").load(open(sys.argv[1] + "/model.toml", "rb"))["model"]
dense = rng.standard_normal((64, 13)).round(4).tolist()
sparse = [[[int(rng.integers(0, r))] for r in m["table_rows"]] for _ in range(64)]
json.dump({"dense": dense, "sparse": sparse}, open(sys.argv[2], "w"))
PY
"$spindle" client --connect "$door" --model ctr rec --input "$work/batch.json" --json > "$work/scores.json"
"$spindle" client --connect "$door" --model ctr16 rec --input "$work/batch.json" --json > "$work/scores16.json"
"$spindle" client --connect "$door" --model ctr8 rec --input "$work/batch.json" --json > "$work/scores8.json"
"$spindle" client --connect "$door" --model ctrq rec --input "$work/batch.json" --json > "$work/scoresq.json"
"$py" - "$work/m" "$work/batch.json" "$work/scores.json" "$root" "$work/scores16.json" "$work/scores8.json" "$work/scoresq.json" <<'PY'
import json, sys, torch
sys.path.insert(0, sys.argv[4] + "/bench/torch_baseline")
import dlrm_torch as d
m = __import__("tomllib").load(open(sys.argv[1] + "/model.toml", "rb"))["model"]
model = d.DLRM(m["dense_in"], m["bottom"], m["top"], m["table_rows"], m["embedding_dim"]).eval()
model.load_state_dict(d.load_safetensors(sys.argv[1] + "/weights.safetensors"))
b = json.load(open(sys.argv[2]))
dense = torch.tensor(b["dense"], dtype=torch.float32)
idx = [torch.tensor([s[t][0] for s in b["sparse"]]) for t in range(len(m["table_rows"]))]
off = [torch.arange(len(b["dense"])) for _ in idx]
want = model(dense, idx, off).detach().numpy().ravel()
got = json.load(open(sys.argv[3]))["scores"]
print("same scores: max |Spindle - PyTorch| = %.2e over %d samples" % (max(abs(g - w) for g, w in zip(got, want)), len(got)))
got16 = json.load(open(sys.argv[5]))["scores"]
print("bf16 scores: max |Spindle bf16 - PyTorch FP32| = %.2e over %d samples" % (max(abs(g - w) for g, w in zip(got16, want)), len(got16)))
got8 = json.load(open(sys.argv[6]))["scores"]
print("int8 scores: max |Spindle int8 tables - PyTorch FP32| = %.2e over %d samples" % (max(abs(g - w) for g, w in zip(got8, want)), len(got8)))
gotq = json.load(open(sys.argv[7]))["scores"]
print("int8mlp scores: max |Spindle int8 MLPs - PyTorch FP32| = %.2e over %d samples" % (max(abs(g - w) for g, w in zip(gotq, want)), len(gotq)))
PY

# Each batch size's baselines are measured just before its rows (on a shared,
# noisy machine a baseline taken minutes apart from its rows is another machine).
baselines() {  # batch -> "torch_sps torch_p50 gemm_sps forward_sps"
  local t g
  t=$(OMP_WAIT_POLICY=PASSIVE "$py" "$root/bench/torch_baseline/dlrm_torch.py" "$work/m" --batches "$1" \
        --threads 2 | "$py" -c 'import json,sys; j=json.load(sys.stdin); print("%.0f %.2f" % (j["samples_per_s"], j["p50_ms"]))')
  g="0 0"
  if [ -x "$gemm_limit" ]; then
    g=$("$gemm_limit" "$work/m" "$1" 2 2 | "$py" -c 'import json,sys; j=json.load(sys.stdin); print("%.0f %.0f" % (j["gemm_samples_per_s"], j["forward_samples_per_s"]))')
  fi
  echo "$t $g"
}

echo "| batch | path | calls in flight | Spindle samples/s | p50 ms | p99 ms | PyTorch samples/s (p50 ms) | ratio | GEMM-only limit (in-process forward) | of limit |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for b in ${batches//,/ }; do
  read -r tsps tp50 gsps fsps <<< "$(baselines "$b")"
  requests=$(( 120000 / b + 20 ))  # about 1.5-2 s a row at batch 64-256: shorter rows swung 15%
  [ "$requests" -gt 3000 ] && requests=3000
  for path in $doors; do
    case $path in
      capnp) args=(--connect "$door" --model ctr load) ;;
      http) args=(--connect "$http" --model ctr load --door http) ;;
      grpc) args=(--connect "$grpc" --model ctr load --door grpc) ;;
      ps) args=(--connect "$door" --model ctr_ps load) ;;
      bf16) args=(--connect "$door" --model ctr16 load) ;;
      int8) args=(--connect "$door" --model ctr8 load) ;;
      int8mlp) args=(--connect "$door" --model ctrq load) ;;
      *) echo "unknown path $path (capnp http grpc ps bf16 int8 int8mlp)" >&2; exit 2 ;;
    esac
    for clients in 1 2; do
      "$spindle" client "${args[@]}" --batch "$b" --clients "$clients" \
        --requests "$requests" --warmup 5 --json > "$work/load.json"
      "$py" - "$work/load.json" "$b" "$path" "$clients" "$tsps" "$tp50" "$gsps" "$fsps" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t, g, f = float(sys.argv[5]), float(sys.argv[7]), float(sys.argv[8])
of = "%.0f%%" % (100 * j["samples_per_s"] / g) if g > 0 else "-"
print("| %s | %s | %s | %.0f | %.2f | %.2f | %.0f (%s) | %.2f | %s | %s |" % (sys.argv[2], sys.argv[3], sys.argv[4],
      j["samples_per_s"], j["latency_ms"]["p50"], j["latency_ms"]["p99"], t, sys.argv[6], j["samples_per_s"] / t,
      "%.0f (%.0f)" % (g, f) if g > 0 else "-", of))
PY
    done
  done
done
