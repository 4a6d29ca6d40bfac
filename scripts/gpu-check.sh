#!/usr/bin/env bash
# `make gpu-check`: on a machine with an NVIDIA GPU, builds Spindle for the local
# GPU's architecture (build-gpu/), runs the unit tests and tests/gpu/gpu_check
# (each CUDA kernel, the device executor and GNNSched's device pool against the
# host path on the same inputs) and prints its table, then the serving sweep
# (bench/serving_sweep) with the CUDA executor beside the host's, same run.
# Without a GPU it says so and exits 0: nothing is claimed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi $(command -v nvidia-smi > /dev/null \
    && echo 'lists no device' || echo 'not found')); nothing was run on a GPU."
  if [ -x build/tests/gpu/gpu_check ]; then build/tests/gpu/gpu_check; fi
  exit 0
fi
nvidia-smi -L
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPINDLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=native
cmake --build build-gpu
(cd build-gpu && ctest -L unit --output-on-failure)
build-gpu/tests/gpu/gpu_check
# The serving sweep, same data, same run: PSGS's large executor on the host
# pool, then on the GPU (SCALE overrides the R-MAT scale, default 18).
scale="${SCALE:-18}"
for device in host cuda; do
  echo "== serving_sweep $scale, --device $device"
  build-gpu/bench/serving_sweep "$scale" "/tmp/spindle-gpu-check-s$scale" --device "$device" |
    tee "/tmp/spindle-gpu-check-sweep-$device.txt"
done
# Side by side: each routing policy's highest throughput with p99 under 30 ms.
echo "| policy | host req/s (p99<30ms) | cuda req/s (p99<30ms) | cuda / host |"
echo "|---|---|---|---|"
join <(awk -F'|' '/^(PSGS|fixed|inline|pooled)/ {split($2, a, " "); gsub(/ /, "", $1); print $1, a[2]}' \
         /tmp/spindle-gpu-check-sweep-host.txt | sort) \
     <(awk -F'|' '/^(PSGS|fixed|inline|pooled)/ {split($2, a, " "); gsub(/ /, "", $1); print $1, a[2]}' \
         /tmp/spindle-gpu-check-sweep-cuda.txt | sort) |
  awk '{printf "| %s | %s | %s | %.2f |\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}'
