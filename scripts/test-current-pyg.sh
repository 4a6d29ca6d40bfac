#!/usr/bin/env bash
# Runs the exporter's tests with the current torch and torch_geometric from the
# package index, in a cached virtual environment (default ~/.cache/spindle/venv-pyg-current;
# the first run downloads about 4 GB: torch's wheel and its CUDA libraries, which
# `import torch` needs even on a machine without a GPU). Usage:
#   scripts/test-current-pyg.sh [BUILD_DIR]      (TORCH=2.15.0 PYG=2.8.1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
torch_version=${TORCH:-2.15.0}
pyg_version=${PYG:-2.8.1}
venv=${SPINDLE_PYG_VENV:-$HOME/.cache/spindle/venv-pyg-current}
if ! "$venv/bin/python" -c "import torch, torch_geometric as g, sys
sys.exit(torch.__version__.split('+')[0] != '$torch_version' or g.__version__ != '$pyg_version')" 2>/dev/null; then
  echo "spindle: installing torch $torch_version and torch_geometric $pyg_version into $venv" >&2
  start=$(date +%s)
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "torch==$torch_version" numpy pytest
  "$venv/bin/pip" install --quiet --no-deps "torch_geometric==$pyg_version"
  "$venv/bin/pip" install --quiet tqdm jinja2 requests pyparsing psutil aiohttp xxhash
  echo "spindle: installed in $(( $(date +%s) - start )) s" >&2
fi
# The graph-update test drives a server through the Python client.
"$venv/bin/python" -c 'import capnp' 2>/dev/null || "$venv/bin/pip" install --quiet pycapnp
"$venv/bin/python" -c 'import torch, torch_geometric as g; print(f"torch {torch.__version__}, torch_geometric {g.__version__}")'
cd python
SPINDLE_BINARY="$(realpath "../$build/apps/spindle")" exec "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  tests/test_export.py tests/test_export_checked.py tests/test_export_torch.py tests/test_graph_updates.py \
  tests/test_link_prediction.py tests/test_export_layers.py tests/test_export_hetero.py tests/test_export_hetero_embedding.py tests/test_export_hetero_link.py tests/test_export_edge_attr.py tests/test_export_norms.py \
  tests/test_graph_save.py
