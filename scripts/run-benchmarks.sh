#!/usr/bin/env bash
# Runs every benchmark in bench/ and prints their tables (make bench).
# Real graphs come from the build's test data folder (SPINDLE_TEST_DATA_DIR in
# $build/CMakeCache.txt); prepared copies are cached in $build/bench-data.
set -euo pipefail
build="${1:-build}"
spindle="$build/apps/spindle"
data=$(sed -n 's/^SPINDLE_TEST_DATA_DIR:PATH=//p' "$build/CMakeCache.txt")
cache="$build/bench-data"
mkdir -p "$cache"
export SPINDLE_PROGRESS=0
. "$(dirname "$0")/../bench/blas_kernels.sh" "$spindle"  # every bench and peer: Spindle's kernels

prepare() {  # name, then spindle prepare/generate arguments
  local name="$1"; shift
  [ -f "$cache/$name/metadata.json" ] || "$spindle" "$@" --out "$cache/$name" > /dev/null
}

python_baseline() {  # python, heading, script: the script on the R-MAT files, OpenMP threads passive
  echo "== $2 =="
  OMP_WAIT_POLICY=PASSIVE "$1" "$3" "$cache/rmat20-f128"
  echo
}

echo "== sampling (bench/sampling_bench) =="
"$build/bench/sampling_bench" 20 1.0
echo
echo "== PSGS + FAP precompute (bench/metrics_bench) =="
"$build/bench/metrics_bench" 22
echo
echo "== feature gather (bench/gather_bench) =="
"$build/bench/gather_bench" "$spindle" 20 10 "$cache/rmat20-f128"
echo
echo "== placement evaluator (bench/placement_bench) =="
prepare cora prepare --input "$data/cora/cora.cites" --features "$data/cora/cora.content.gz" --undirected
prepare citeseer prepare --input "$data/citeseer/citeseer.cites" \
  --features "$data/citeseer/citeseer.content.gz" --undirected
prepare ego-facebook prepare --input "$data/ego-Facebook/facebook_combined.txt.gz" --undirected
prepare wiki-vote prepare --input "$data/wiki-Vote/Wiki-Vote.txt.gz"
prepare slashdot prepare --input "$data/soc-Slashdot0902/soc-Slashdot0902.txt.gz"
prepare rmat22 generate --scale 22 --feature-dim 0
"$build/bench/placement_bench" examples "$cache"/{cora,citeseer,ego-facebook,wiki-vote,slashdot,rmat22}
echo
echo "== GNNSched PMC estimate vs measured peak (bench/pmc_bench) =="
"$build/bench/pmc_bench"
echo
echo "== row kernels' dispatch on this CPU (bench/row_kernel_bench) =="
"$build/bench/row_kernel_bench" 30

echo "== model throughput vs GEMM (bench/model_bench) =="
"$build/bench/model_bench" 20
echo
echo "== GNNSched replay (bench/gnnsched_bench) =="
"$build/bench/gnnsched_bench" "$cache/cora"
echo
echo "== actor tax (bench/serving_bench) =="
"$build/bench/serving_bench" 8000
echo
echo "== throughput vs p99, one process (bench/serving_sweep) =="
"$build/bench/serving_sweep" 20 "$cache/rmat20-f128"
echo
echo "== batched core: per-stage breakdown beside same-run limits (bench/batch_breakdown) =="
"$build/bench/batch_breakdown" "$cache/rmat20-f128" 60
echo
echo "== the GNN served path (client in its own process) vs the direct pipeline vs a plain PyTorch script (bench/gnn_served_vs_direct.sh) =="
bench/gnn_served_vs_direct.sh "$spindle" "$cache/rmat20-f128"

echo "== graph updates while serving: ingest and served p99 beside the same load without updates (bench/graph_updates.py) =="
/usr/bin/python3 bench/graph_updates.py "$spindle" "$cache/rmat20-f128" 20 4
echo "== graph updates on a 3-rank cluster: visibility beside one server (bench/cluster_graph_visibility.py) =="
python3 bench/cluster_graph_visibility.py "$spindle" 200 16
echo "== the graph-update log: group commit, recovery of 1M logged edges, delta memory (graph_log_bench) =="
"$build/bench/graph_log_bench" 20
echo
echo "== one request on an idle server, work-conserving vs deadline-bound (bench/idle_latency.sh) =="
bench/idle_latency.sh "$spindle" "$cache/rmat20-f128" 2000
echo
echo "== overload at the front door: 0.5x and 2x capacity, SLO-sized admission vs max_queue only (bench/overload.sh) =="
bench/overload.sh "$spindle" "$cache/rmat20-f128" 100000
echo
torch_py=""
for py in /usr/bin/python3 python3; do  # Debian's python3-torch lives in /usr/bin/python3
  if "$py" -c "import torch" 2>/dev/null; then torch_py="$py"; break; fi
done
if [ -n "$torch_py" ]; then
  python_baseline "$torch_py" "plain NumPy + PyTorch script on the same files (bench/torch_baseline)" \
    bench/torch_baseline/serve_torch.py
fi
echo "== throughput vs p99, two processes (bench/serving_sweep ... 2) =="
"$build/bench/serving_sweep" 20 "$cache/rmat20-f128" 2 "$spindle"
echo
echo "== UCX bridge vs CAF middleman (bench/bridge_bench) =="
"$build/bench/bridge_bench" 20000
"$build/bench/bridge_bench" 2000 256 1024
echo
if [ -x "${SPINDLE_DGL_PYTHON:-}" ]; then
  python_baseline "$SPINDLE_DGL_PYTHON" \
    "DGL/PyTorch baseline on the same graph (bench/dgl_baseline, set up by hand)" \
    bench/dgl_baseline/serve_dgl.py
fi
echo "== HPS embedding cache (bench/hps_cache_bench) =="
"$build/bench/hps_cache_bench" 1000000 64 "$build/hps-warmup"
echo
echo "== HPS levels 2 and 3 (bench/hps_storage_bench) =="
"$build/bench/hps_storage_bench" 200000 64 1024
echo
echo "== DLRM through the parameter server (bench/dlrm_hps_bench) =="
"$build/bench/dlrm_hps_bench" 100000 100000
echo
echo "== KServe v2 doors vs Cap'n Proto: HTTP/JSON, HTTP binary, gRPC (bench/kserve_bench) =="
"$build/bench/kserve_bench" "$spindle" 4000
echo "== RPC tax: unified Cap'n Proto vs SplitRPC vs in-process (bench/rpc_tax_bench) =="
"$build/bench/rpc_tax_bench" 1000
echo
echo "== Hera: profiles, Fig. 14 analogue, co-location EMU vs the simulator (bench/hera_bench) =="
"$build/bench/hera_bench" "$spindle" "$build/hera-bench" 30
echo
echo "== A cluster on emulated links: FAP vs hash, 1/10/25 Gbit/s (bench/netns_cluster.sh) =="
if ip netns add spindle-bench-probe 2> /dev/null; then
  ip netns del spindle-bench-probe
  "$(dirname "$0")/../bench/netns_cluster.sh" "$spindle" 16 4000 16
else
  echo "skipped: network namespaces cannot be made here (needs root and iproute2)"
fi
echo
echo "== A DLRM (26 tables x 128, 13 dense, 512-256-128 / 1024-1024-512-256-1) vs PyTorch and its GEMM-only limit (bench/dlrm_vs_torch.sh) =="
if /usr/bin/python3 -c 'import torch' 2> /dev/null; then
  "$(dirname "$0")/../bench/dlrm_vs_torch.sh" "$spindle" 10000
else
  echo "skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)"
fi
echo
echo "== The parameter server's L1 with float32 against int8 rows (bench/hps_int8_l1.sh) =="
if /usr/bin/python3 -c 'import torch' 2> /dev/null; then
  "$(dirname "$0")/../bench/hps_int8_l1.sh" "$spindle" 100000 0.02 1500 1
else
  echo "skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)"
fi
