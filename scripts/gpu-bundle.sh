#!/usr/bin/env bash
# `make gpu-bundle`: packs what the GPU check needs into gpu-bundle/ (ignored,
# at most 60 MiB) so it runs on a bare accelerator machine that has the NVIDIA
# driver and the CUDA toolkit or PyTorch's CUDA wheels but none of Spindle's
# Debian packages. Built here (CUDA toolkit, no GPU needed):
#   gpu-bundle/spindle-gpu.tar.gz  bin/ (stripped: spindle, gpu_check,
#                                  serving_sweep, the test binaries that run
#                                  device code), lib/ (every shared library they
#                                  load but glibc, the loader and the driver's,
#                                  under their sonames), ucx/ (UCX's transport
#                                  modules), glibc/ (this machine's glibc and
#                                  loader, used only where the target's is older)
#   gpu-bundle/run.sh              unpacks to a temporary folder and runs the check
#   gpu-bundle/serve_torch.py      the plain PyTorch peer (run there on the GPU)
#   gpu-bundle/MANIFEST            what was packed, with sizes and the build's commit
# cuBLAS, cuBLASLt and NCCL are too large to carry: run.sh finds them on the target.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
out="${BUNDLE_DIR:-gpu-bundle}"
limit_mib=60
binaries=(apps/spindle tests/gpu/gpu_check bench/serving_sweep bench/device_breakdown tests/gpu/gpu_test
          tests/serving/serving_test tests/colocation/colocation_test
          tests/features/features_test tests/hps/hps_test)
# BUNDLE_BINARIES="apps/spindle bench/device_breakdown" packs fewer (a second,
# smaller bundle of another build, to compare two builds on one lent machine).
[ -n "${BUNDLE_BINARIES:-}" ] && read -r -a binaries <<< "$BUNDLE_BINARIES"

if ! ls "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake > /dev/null 2>&1; then
  echo "gpu-bundle: $build is not a CUDA build (no CUDA compiler configured); run 'make build'" \
       "on a machine with /usr/local/cuda" >&2
  exit 1
fi
archs=$(grep -o 'code=\[compute_[0-9a]*,sm_[0-9a]*\]' "$build/build.ninja" | sed 's/.*,sm_\([0-9a]*\)\]/\1/' | sort -u | tr '\n' ' ')
for need in 80 90; do
  if ! grep -qw "$need" <<< "$archs"; then
    echo "gpu-bundle: $build compiles SASS for '${archs:-none}'; sm_80 and sm_90 are needed" >&2
    exit 1
  fi
done
echo "gpu-bundle: building ${binaries[*]##*/} in $build (CUDA architectures $archs)"
cmake --build "$build" --target "${binaries[@]##*/}"

stage=$(mktemp -d /tmp/spindle-gpu-bundle.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/ucx" "$stage/glibc"
for b in "${binaries[@]}"; do
  strip --strip-unneeded -o "$stage/bin/${b##*/}" "$build/$b"
done

# Every library the binaries load, by soname. glibc's parts and the loader go to
# glibc/ (used by run.sh only where the target's glibc is older than this one);
# the driver's and the large CUDA libraries stay on the target.
is_glibc() { [[ "$1" =~ ^(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|ld-linux-x86-64)\.so ]]; }
on_target() { [[ "$1" =~ ^(libcuda|libnvidia-|libcublas|libcublasLt|libnccl)[.-] ]]; }
declare -A seen=()
for b in "$stage"/bin/*; do
  while read -r soname path; do
    [ -n "$path" ] && [ -z "${seen[$soname]:-}" ] || continue
    seen[$soname]=1
    if on_target "$soname"; then continue; fi
    if is_glibc "$soname"; then cp -L "$path" "$stage/glibc/$soname"; continue; fi
    strip --strip-unneeded -o "$stage/lib/$soname" "$(readlink -f "$path")"
  done < <(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {n = split($1, p, "/"); print p[n], $1}')
done
# UCX opens its transports (shared memory, TCP, CMA) as modules at run time.
ucx_modules=$(find /usr/lib/x86_64-linux-gnu/ucx -maxdepth 1 -name 'libuct_*.so*' -o -maxdepth 1 -name 'libucm_*.so*' 2>/dev/null || true)
for m in $ucx_modules; do
  name=${m##*/}
  [[ "$name" =~ (cuda|rocm|ib|rdmacm|gdrcopy|xpmem|knem) ]] && continue
  cp -L "$m" "$stage/ucx/$name"
done
# The newest glibc symbol version the binaries and libraries need: run.sh compares
# it with the target's.
need_glibc=$(objdump -T "$stage"/bin/* "$stage"/lib/* 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | sed 's/GLIBC_//')
{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!gpu-bundle' || echo '+local changes')"
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), nvcc $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), CUDA architectures $archs"
  echo "glibc needed $need_glibc"
  (cd "$stage" && find bin lib ucx glibc -type f -printf '%s %p\n' | sort -k2 |
     awk '{printf "%8.1f MiB  %s\n", $1 / 1048576, $2}')
} > "$stage/MANIFEST"

rm -rf "$out"
mkdir -p "$out"
cp "$stage/MANIFEST" "$out/MANIFEST"
tar -C "$stage" -cf - MANIFEST bin lib ucx glibc | xz -T0 -6 > "$out/spindle-gpu.tar.xz"
cp scripts/gpu-bundle-run.sh "$out/run.sh"
cp bench/torch_baseline/serve_torch.py "$out/serve_torch.py"
cp scripts/gpu-bundle-served.sh "$out/run-served.sh"
chmod +x "$out/run.sh"
size=$(du -sb "$out" | cut -f1)
echo "gpu-bundle: $out is $(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}') MiB" \
     "($(ls "$stage/bin" | wc -l) binaries, $(ls "$stage/lib" | wc -l) libraries; limit ${limit_mib} MiB)"
if [ "$size" -gt $((limit_mib * 1048576)) ]; then
  echo "gpu-bundle: $out is over ${limit_mib} MiB: it cannot be carried to a device machine" >&2
  exit 1
fi
