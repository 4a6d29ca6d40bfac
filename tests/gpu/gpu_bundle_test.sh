#!/usr/bin/env bash
# The packed GPU bundle (make gpu-bundle) runs from its folder in a clean
# environment (env -i: no library path beyond the bundle's and glibc's): every
# binary loads with its libraries from the bundle, the folder is under 60 MiB,
# and without a GPU the outcome is the clean "nothing was run on a GPU". Builds
# nothing; skips (77) when gpu-bundle/ is absent.
set -uo pipefail
root="$1"
bundle="$root/gpu-bundle"
if [ ! -x "$bundle/run.sh" ]; then
  echo "gpu_bundle_test: skipped: no $bundle (run 'make gpu-bundle' first)"
  exit 77
fi
size=$(du -sb "$bundle" | cut -f1)
limit=$((60 * 1048576))
echo "gpu-bundle: $size bytes (limit $limit)"
[ "$size" -le "$limit" ] || { echo "FAIL: $bundle is over 60 MiB"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
env -i /bin/bash "$bundle/run.sh" "$out" > "$out/run.txt" 2>&1
rc=$?
cat "$out/run.txt"
[ $rc = 0 ] || { echo "FAIL: run.sh exited $rc"; exit 1; }
loads=$(grep -c '^PASS  loads: ' "$out/run.txt")
binaries=$(xz -dc "$bundle/spindle-gpu.tar.xz" | tar -tf - | grep -c '^bin/.')
[ "$loads" -eq "$binaries" ] || { echo "FAIL: $loads of $binaries binaries loaded"; exit 1; }
grep -q '^FAIL' "$out/run.txt" && { echo "FAIL: a check failed"; exit 1; }
[ -s "$out/summary.txt" ] || { echo "FAIL: no summary.txt in OUT_DIR"; exit 1; }
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  grep -q 'no GPU here.*nothing was run on a GPU' "$out/run.txt" ||
    { echo "FAIL: no clean 'no GPU' outcome"; exit 1; }
fi
echo "gpu_bundle_test: $binaries binaries load from the bundle; $(tail -1 "$out/run.txt")"
