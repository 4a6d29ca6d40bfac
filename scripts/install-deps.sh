#!/usr/bin/env bash
# Installs the Debian packages Spindle builds and tests with. Idempotent and
# quiet: it runs `apt-get update` and `apt-get install` only when something is
# missing. Used by every top-level make target.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache python3 python3-pip python3-venv python3-numpy
  gnuplot-nox
  libcaf-dev libucx-dev ucx-utils libcapnp-dev capnproto libfmt-dev
  libgtest-dev libtomlplusplus-dev libcli11-dev libeigen3-dev libopenblas-dev libdnnl-dev
  libxxhash-dev nlohmann-json3-dev zlib1g-dev libssl-dev
  libjemalloc-dev libhiredis-dev redis-server librocksdb-dev libabsl-dev libcpp-httplib-dev libedit-dev curl clang-14 libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus  # promtool: the metrics test checks the exposition format with it
  openmpi-bin python3-yaml  # mpirun_cluster_test starts ranks with mpirun; deploy_kubernetes_test reads YAML
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "spindle: installing missing packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
