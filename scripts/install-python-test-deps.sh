#!/usr/bin/env bash
# Installs what the Python tests need (pycapnp, pytest, numpy, tritonclient) from PyPI into
# the python3 on PATH, only when missing. Debian's system python refuses plain
# pip installs (PEP 668), so that case retries with --break-system-packages.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import capnp, pytest, numpy, tritonclient.http, tritonclient.grpc' 2>/dev/null && exit 0
echo "spindle: installing Python test packages: $(tr '\n' ' ' < python/requirements-test.txt)" >&2
python3 -m pip install --quiet -r python/requirements-test.txt 2>/dev/null ||
  python3 -m pip install --quiet --break-system-packages -r python/requirements-test.txt
