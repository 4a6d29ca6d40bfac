#!/usr/bin/env bash
# gpu-bundle/run.sh [OUT_DIR]: Spindle's GPU check on a bare accelerator machine
# (written by `make gpu-bundle`, scripts/gpu-bundle.sh). Unpacks the bundle to a
# temporary folder, finds cuBLAS, cuBLASLt and NCCL on this machine (CUDA
# toolkit or Python's nvidia/*/lib wheels), then runs, each under a time limit:
#   1. gpu_check: every CUDA kernel, the device executor and layers, GNNSched's
#      device pool, the HPS device cache and NCCL against the host path;
#   2. the test binaries that run device code (gpu_test, serving_test, colocation_test, features_test, hps_test);
#   3. serving_sweep on R-MAT (SCALE, default 20) with --device host, then cuda,
#      for PSGS-Loose and pooled-only (POLICIES), and the same-run ratio table;
#   4. profile: device_breakdown on that R-MAT, --device cuda then host: each
#      stage's time per batch, and how pipelines sharing the GPU scale;
#   5. served: `spindle serve --device cuda --pipelines PIPELINES` behind its
#      Cap'n Proto door, `spindle client load` in its own process (64 and 256
#      calls in flight, then 1), the server's cores used;
#   6. peer: serve_torch.py --device cuda (a plain PyTorch script: sampling in
#      torch ops on the GPU, gather, forward) on the same files;
#   7. cluster: 2 ranks of `spindle node --device cuda` on loopback, seeded calls
#      through both doors against one host process, and a load over both.
# STEPS (default "check tests sweep profile served peer cluster") picks the steps;
# TESTS picks the test binaries; DATA names the R-MAT folder (generated there when absent, so two runs can share it);
# BIN_DIR=DIR: binaries in DIR replace the bundle's of the same name (another
# build, stripped, compared on the same machine with the bundle's libraries).
# Writes summary.txt (one line per check: PASS/FAIL/SKIP and its figure) and
# every log to OUT_DIR when given. Without a GPU: checks that every binary
# loads, says that nothing ran on a GPU and exits 0. Exit status 1 if any
# comparison or test fails (or a binary cannot load).
set -uo pipefail
export PATH="${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-}"
scale="${SCALE:-20}"
work=$(mktemp -d "${TMPDIR:-/tmp}/spindle-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
logs="$work/logs"
mkdir -p "$logs"
[ -n "$out" ] && mkdir -p "$out"
failed=0
summary="$logs/summary.txt"
: > "$summary"

note() { printf '%s\n' "$*" | tee -a "$summary"; }
# The logs so far to OUT_DIR: after every result, so a run cut short (a lent
# machine's command limit, a signal) still returns what it measured.
save_logs() { [ -n "$out" ] && cp -r "$logs"/. "$out"/ 2> /dev/null; return 0; }
result() {  # result PASS|FAIL|SKIP NAME FIGURE
  [ "$1" = FAIL ] && failed=1
  printf '%-4s  %-58s  %s\n' "$1" "$2" "$3" | tee -a "$summary"
  save_logs
}
trap 'note "run.sh: stopped by a signal"; save_logs; exit 1' TERM INT
finish() {
  save_logs
  echo "run.sh: $([ $failed = 0 ] && echo 'all checks passed' || echo 'SOME CHECKS FAILED')" \
       "$([ -n "$out" ] && echo "(summary and logs in $out)")"
  exit $failed
}

# --- unpack ---------------------------------------------------------------
if command -v xz > /dev/null; then
  xz -dc "$here/spindle-gpu.tar.xz" | tar -C "$work" -xf - || { echo "run.sh: cannot unpack" >&2; exit 1; }
else  # Python's lzma where xz is missing
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
    "$here/spindle-gpu.tar.xz" "$work" || { echo "run.sh: cannot unpack (no xz, python3 failed)" >&2; exit 1; }
fi
note "bundle: $(head -2 "$work/MANIFEST" | tr '\n' ';' | sed 's/;$//')"
if [ -n "${BIN_DIR:-}" ]; then
  [ -d "$BIN_DIR" ] || { echo "run.sh: BIN_DIR $BIN_DIR is not a folder" >&2; exit 1; }
  for f in "$BIN_DIR"/*; do [ "${f##*/}" = COMMIT ] || cp "$f" "$work/bin/"; done
  chmod +x "$work"/bin/*
  note "binaries from $BIN_DIR: $(cat "$BIN_DIR/COMMIT" 2>/dev/null) $(ls "$BIN_DIR" | grep -v COMMIT | tr '\n' ' ')"
fi
note "date: $(date -u +%Y-%m-%dT%H:%MZ), host $(uname -n), $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1))"

# --- the large CUDA libraries, from this machine ----------------------------
search_dirs=("${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64
             /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu)
for py in python3 python; do
  command -v "$py" > /dev/null || continue
  while read -r sp; do
    for d in "$sp"/nvidia/*/lib; do [ -d "$d" ] && search_dirs+=("$d"); done
  done < <("$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
done
lib_path="$work/lib"
for soname in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=""
  for d in "${search_dirs[@]}"; do
    if [ -e "$d/$soname" ]; then found="$d"; break; fi
  done
  if [ -n "$found" ]; then
    note "library: $soname from $found"
    case ":$lib_path:" in *":$found:"*) ;; *) lib_path="$lib_path:$found" ;; esac
  else
    note "library: $soname MISSING (looked in ${search_dirs[*]})"
  fi
done

# --- glibc: the target's when it is new enough, else the bundle's loader ---------
need=$(sed -n 's/^glibc needed //p' "$work/MANIFEST")
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
loader=()
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  loader=("$work/glibc/ld-linux-x86-64.so.2" --library-path "$work/glibc:$lib_path")
  note "glibc: this machine's ${have:-unknown} is older than the $need needed: the bundle's loader and glibc"
else
  note "glibc: this machine's $have (needs $need)"
fi
export UCX_MODULE_DIR="$work/ucx"
# The whole run ends within 9 minutes (a lent machine's command may run 10): each
# step gets its own limit or what is left, and a step that finds none is skipped.
deadline=$(( $(date +%s) + ${RUN_SECONDS:-540} ))
bundled() {  # bundled [timeout ARGS... --] BINARY ARGS...: a bundled binary with its libraries
  local pre=()
  if [ "$1" = timeout ]; then while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift; fi
  local bin="$work/bin/$1"; shift
  if [ ${#loader[@]} -gt 0 ]; then
    "${pre[@]}" "${loader[@]}" "$bin" "$@"
  else
    LD_LIBRARY_PATH="$lib_path" "${pre[@]}" "$bin" "$@"
  fi
}
bundled_bg() {  # bundled_bg BINARY ARGS...: the same in the background; $! is its own pid
  if [ ${#loader[@]} -gt 0 ]; then "${loader[@]}" "$work/bin/$1" "${@:2}" &
  else LD_LIBRARY_PATH="$lib_path" "$work/bin/$1" "${@:2}" &
  fi
}
left_s() { echo $(( deadline - $(date +%s) )); }  # seconds the run has left
limited() {  # limited SECONDS LOG BINARY ARGS...: a bundled binary under a time limit
  local secs=$1 log=$2; shift 2
  local left
  left=$(left_s)
  [ "$left" -lt "$secs" ] && secs=$left
  if [ "$secs" -le 5 ]; then echo "skipped: the run's time is spent" > "$log"; return 125; fi
  bundled timeout -k 10 "$secs" -- "$@" > "$log" 2>&1
}
steps=" ${STEPS:-check tests sweep profile served peer cluster} "
has_step() { [[ "$steps" == *" $1 "* ]]; }

# --- every binary loads (the loader resolves every library it needs) ------------
sys_loader=/lib64/ld-linux-x86-64.so.2
for b in "$work"/bin/*; do
  name=${b##*/}
  if [ ${#loader[@]} -gt 0 ]; then
    "${loader[@]}" --list "$b" > "$logs/load-$name.log" 2>&1
  else
    LD_LIBRARY_PATH="$lib_path" "$sys_loader" --list "$b" > "$logs/load-$name.log" 2>&1
  fi
  rc=$?
  # Libraries that came from outside the bundle, other than glibc, the driver's and
  # the large CUDA ones run.sh looked up above: the bundle would be incomplete.
  outside=$(awk '$2 == "=>" {print $1, $3}' "$logs/load-$name.log" | grep -v " $work/" |
    grep -Ev '^(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64|libcuda|libnvidia-|libcublas|libcublasLt|libnccl)[.-]' |
    awk '{print $1}' | tr '\n' ' ')
  if grep -q 'not found' "$logs/load-$name.log"; then
    result FAIL "loads: $name" "$(grep 'not found' "$logs/load-$name.log" | awk '{print $1}' | tr '\n' ' ')missing"
  elif [ $rc != 0 ]; then
    result FAIL "loads: $name" "exit status $rc: $(tail -1 "$logs/load-$name.log")"
  elif [ -n "$outside" ]; then
    result FAIL "loads: $name" "not from the bundle: $outside"
  else
    result PASS "loads: $name" "$(grep -c '=>' "$logs/load-$name.log") libraries resolved"
  fi
done

# --- the GPU ----------------------------------------------------------------
gpus=""
if command -v nvidia-smi > /dev/null; then
  gpus=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)
fi
if [ -z "$gpus" ]; then
  note "no GPU here (nvidia-smi $(command -v nvidia-smi > /dev/null && echo 'lists no device' || echo 'not found')): nothing was run on a GPU"
  limited 120 "$logs/gpu_check.log" gpu_check
  note "gpu_check: $(grep -m1 'no GPU' "$logs/gpu_check.log" || tail -1 "$logs/gpu_check.log")"
  finish
fi
while IFS= read -r g; do note "gpu: $g"; done <<< "$gpus"
ngpus=$(grep -c . <<< "$gpus")
note "cuda driver: $(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)"

# 1. gpu_check, one summary line per comparison.
if has_step check; then
limited 120 "$logs/gpu_check.log" gpu_check; rc=$?
while IFS= read -r line; do
  kernel=$(awk -F'|' '{gsub(/^ +| +$/, "", $2); print $2}' <<< "$line")
  res=$(awk -F'|' '{gsub(/^ +| +$/, "", $4); print $4}' <<< "$line")
  case "$res" in
    same:*) result PASS "gpu_check: $kernel" "${res#same: }" ;;
    skip*|SKIP*) result SKIP "gpu_check: $kernel" "$res" ;;
    *) result FAIL "gpu_check: $kernel" "$res" ;;
  esac
done < <(grep '^| ' "$logs/gpu_check.log" | grep -v '^| kernel\|^|---')
[ $rc = 124 ] || [ $rc = 137 ] && result FAIL "gpu_check" "stopped at its time limit: $(tail -1 "$logs/gpu_check.log")"
[ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && ! grep -q 'FAILED' "$logs/gpu_check.log" &&
  result FAIL "gpu_check" "exit status $rc: $(tail -1 "$logs/gpu_check.log")"

if [ "$ngpus" -lt 2 ]; then
  result SKIP "gpu_check: NCCL broadcast / peer exchange" "not compared: needs 2 or more GPUs; this machine has $ngpus"
fi
fi

# 2. The test binaries that run device code.
has_step tests && for t in ${TESTS:-gpu_test serving_test colocation_test features_test hps_test}; do
  limited 60 "$logs/$t.log" "$t" --gtest_brief=1; rc=$?
  passed=$(grep -c '^\[       OK \]' "$logs/$t.log")
  fails=$(grep '^\[  FAILED  \] [a-z_]*\.' "$logs/$t.log" | awk '{print $4}' | sort -u | tr '\n' ' ')
  if [ $rc = 0 ]; then result PASS "test: $t" "$(grep -m1 'tests ran' "$logs/$t.log" | sed 's/\[==========\] //')"
  elif [ $rc = 125 ]; then result SKIP "test: $t" "no time left"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then result FAIL "test: $t" "stopped at its time limit"
  else result FAIL "test: $t" "exit $rc; failed: ${fails:-see $t.log}"; fi
done

# 3. The serving sweep, host then GPU, same generated data.
data="${DATA:-$work/rmat$scale}"
has_step sweep && for device in host cuda; do
  limited 130 "$logs/sweep-$device.log" serving_sweep "$scale" "$data" --device "$device" \
    --policies "${POLICIES:-PSGS-Loose,pooled-only}"; rc=$?
  if [ $rc = 0 ]; then result PASS "serving_sweep --device $device" "see sweep-$device.log"
  elif [ $rc = 125 ]; then result SKIP "serving_sweep --device $device" "no time left"
  elif [ $rc = 124 ] || [ $rc = 137 ]; then
    result FAIL "serving_sweep --device $device" "stopped at its time limit: $(tail -1 "$logs/sweep-$device.log")"
  else result FAIL "serving_sweep --device $device" "exit $rc: $(tail -1 "$logs/sweep-$device.log")"; fi
done
if has_step sweep; then
best() { awk -F'|' '/^(PSGS|fixed|inline|pooled)/ {split($2, a, " "); gsub(/ /, "", $1); print $1, a[2]}' "$1" | sort; }
{
  echo "| policy | host req/s (p99<30ms) | cuda req/s (p99<30ms) | cuda / host |"
  echo "|---|---|---|---|"
  join <(best "$logs/sweep-host.log") <(best "$logs/sweep-cuda.log") |
    awk '{printf "| %s | %s | %s | %.2f |\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}'
} | tee "$logs/sweep-ratio.md" | tee -a "$summary"
fi
. "$here/run-served.sh"
finish
