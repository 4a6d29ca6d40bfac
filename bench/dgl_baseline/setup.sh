#!/usr/bin/env bash
# Sets up the DGL/PyTorch serving baseline of bench/serving_sweep in a
# virtualenv. Run by hand, not in CI: it downloads about 3 GB from PyPI.
#   bench/dgl_baseline/setup.sh [VENV=/tmp/spindle-dgl]
# PyPI's torch wheel is the CUDA build (its CPU kernels use MKL, not OpenBLAS;
# download.pytorch.org's CPU-only wheels were not reachable from this machine).
# DGL 2.1.0 ships graphbolt for torch <= 2.2.1, hence the pins.
set -euo pipefail
venv="${1:-/tmp/spindle-dgl}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q "torch==2.2.1" "dgl==2.1.0" "torchdata==0.7.1" "numpy<2" \
  pandas pyyaml pydantic psutil tqdm scipy requests networkx
"$venv/bin/python" -c "import torch, dgl; print('torch', torch.__version__, 'dgl', dgl.__version__)"
echo "run: OMP_WAIT_POLICY=PASSIVE $venv/bin/python bench/dgl_baseline/serve_dgl.py DATASET_DIR"
echo "or:  SPINDLE_DGL_PYTHON=$venv/bin/python make bench   (adds the DGL row after the sweeps)"
