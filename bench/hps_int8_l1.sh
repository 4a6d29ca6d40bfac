#!/usr/bin/env bash
# The parameter server's L1 with float32 rows against row-wise int8 rows
# (model.toml table_precision = "int8"), same run, same DLRM (26 tables x 128 of
# ROWS rows, bench/torch_baseline/dlrm_torch.py's shape), same PDB, driven by
# `spindle serve-dlrm --workload` (Zipf 1.2 keys, batch 256, 2 instances):
#   fp32 at --cache-fraction F; int8 at F (the same rows in a quarter of the
#   bytes); int8 at F x 512 / 136 (the same bytes, 3.8x the rows).
# Prints, rounds alternated, each run's L1 bytes (slots x row bytes, slots
# rounded up to whole 64-slot sets), mean hit rate, samples/s and batch p99.
#   usage: bench/hps_int8_l1.sh SPINDLE [ROWS=100000] [F=0.05] [BATCHES=400] [ROUNDS=2]
set -euo pipefail
spindle=$(readlink -f "$1")
rows=${2:-100000}
fraction=${3:-0.05}
batches=${4:-400}
rounds=${5:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SPINDLE_PROGRESS=0
. "$root/bench/blas_kernels.sh" "$spindle"
/usr/bin/python3 "$root/bench/torch_baseline/dlrm_torch.py" "$work/m" --write --rows "$rows" > /dev/null
cp -r "$work/m" "$work/m8"
sed -i '/^\[model\]/a table_precision = "int8"' "$work/m8/model.toml"
same_bytes=$(python3 -c "print(min(1.0, $fraction * 512 / 136))")
run() {  # LABEL MODEL FRACTION BITS
  "$spindle" serve-dlrm --model "$2" --pdb "$work/pdb" --cache-fraction "$3" --workload "$batches" \
    --json 2> /dev/null | python3 -c '
import json, math, sys
j = json.load(sys.stdin)
label, fraction, bits, rows = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
slots = math.ceil(math.ceil(rows * fraction) / 64) * 64
row_bytes = 128 * 4 if bits == 32 else 128 + 8
print("| %s | %.3f | %.1f MiB | %.3f | %.0f | %.1f |" % (label, fraction,
      26 * slots * row_bytes / 2**20, j["mean_hit_rate"], j["samples_per_s"],
      j["batch_latency_ms"]["p99"]))' "$1" "$3" "$4" "$rows"
}
"$spindle" serve-dlrm --model "$work/m" --pdb "$work/pdb" --workload 1 > /dev/null 2>&1  # fills the PDB
echo "26 tables x $rows rows x 128, batch 256, $batches batches a run; $(date -u '+%F %H:%M'), load $(cut -d' ' -f1 /proc/loadavg)"
echo "| L1 rows | cache fraction | L1 bytes | mean hit rate | samples/s | batch p99 ms |"
echo "|---|---|---|---|---|---|"
for _ in $(seq "$rounds"); do
  run "fp32" "$work/m" "$fraction" 32
  run "int8, same rows" "$work/m8" "$fraction" 8
  run "int8, same bytes" "$work/m8" "$same_bytes" 8
done
