#!/usr/bin/env bash
# Serve a prepared graph with a GraphSAGE model and query it: the path a new
# user copies. With an edge list argument (SNAP "src dst" lines, .gz allowed) it
# prepares that graph (a graph without a feature file gets one-hot degree
# features, PyG's OneHotDegree); without one it generates an R-MAT graph.
# An undirected edge list (each edge once, as SNAP's ego-Facebook is) needs
# UNDIRECTED=1; `prepare` warns when a file looks like one.
#   [UNDIRECTED=1] examples/serve-graphsage/run.sh [EDGES [FEATURES.npy | degree | onehot-degree:MAX | random:DIM]]
set -euo pipefail
spindle="${SPINDLE:-build/apps/spindle}"
work="${WORK:-serve-graphsage}"
mkdir -p "$work"
if [ $# -ge 1 ]; then
  features=(--features "${2:-onehot-degree:32}")
  "$spindle" prepare --input "$1" "${features[@]}" ${UNDIRECTED:+--undirected} --force --out "$work/graph" --fanouts 25,10
else
  [ -f "$work/graph/metadata.json" ] || "$spindle" generate --scale 14 --feature-dim 32 --seed 1 --out "$work/graph"
fi
width=$("$spindle" info "$work/graph" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["feature_dim"])')
# Your trained weights go here instead: see docs/models.md (the PyG exporter).
[ -f "$work/model/model.toml" ] || "$spindle" model init --arch graphsage --in "$width" --hidden 64 --classes 8 \
  --seed 1 --out-dir "$work/model"
"$spindle" serve --dataset "$work/graph" --model "$work/model" --name sage --listen 127.0.0.1:0 \
  --admin-token-file "$work/admin.token" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server; wait $server || true' EXIT
until grep -q '^listening ' "$work/serve.log"; do sleep 0.2; done
endpoint=$(sed -n 's/^listening //p' "$work/serve.log")
"$spindle" client --connect "$endpoint" --model sage infer --seeds 0,1,2
python3 "$(dirname "$0")/query.py" "$endpoint" "$work/admin.token" || echo "(pip install pycapnp for the Python example)"
