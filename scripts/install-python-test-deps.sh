#!/usr/bin/env bash
# Installs what the Python tests need, only when missing:
#  - pycapnp, pytest, numpy, tritonclient from PyPI into the python3 on PATH (the client tests);
#  - the exporter's tests: Debian's python3-torch (1.13) for /usr/bin/python3 and
#    torch_geometric 2.3.1 from PyPI (pure Python, --no-deps). A machine that cannot
#    install them skips python_export_test with a message saying so.
# Debian's system python refuses plain pip installs (PEP 668), so that case
# retries with --break-system-packages.
set -euo pipefail
cd "$(dirname "$0")/.."

pip_install() {  # python, then pip arguments
  local py=$1; shift
  "$py" -m pip install --quiet "$@" 2>/dev/null || "$py" -m pip install --quiet --break-system-packages "$@"
}

if ! python3 -c 'import capnp, pytest, numpy, tritonclient.http, tritonclient.grpc' 2>/dev/null; then
  echo "spindle: installing Python test packages: $(tr '\n' ' ' < python/requirements-test.txt)" >&2
  pip_install python3 -r python/requirements-test.txt
fi

deb=(python3-torch python3-scipy python3-tqdm python3-jinja2 python3-requests python3-pyparsing
     python3-psutil python3-pytest python3-numpy)
missing=()
for p in "${deb[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "spindle: installing the exporter's test packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  { $sudo apt-get update -qq >/dev/null &&
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    echo "spindle: warning: could not install ${missing[*]}; python_export_test will skip" >&2
fi
# The graph-update test drives a server from /usr/bin/python3 (beside torch_geometric).
if ! /usr/bin/python3 -c 'import capnp' 2>/dev/null; then
  pip_install /usr/bin/python3 pycapnp ||
    echo "spindle: warning: could not install pycapnp for /usr/bin/python3; test_graph_updates will fail" >&2
fi
if ! /usr/bin/python3 -c 'import torch_geometric' 2>/dev/null; then
  echo "spindle: installing torch_geometric 2.3.1 for /usr/bin/python3 (--no-deps)" >&2
  pip_install /usr/bin/python3 --no-deps torch_geometric==2.3.1 ||
    echo "spindle: warning: could not install torch_geometric; python_export_test will skip" >&2
fi
exit 0
