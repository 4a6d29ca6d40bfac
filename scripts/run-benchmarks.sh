#!/usr/bin/env bash
# Runs every benchmark in bench/ and prints their tables (make bench).
set -euo pipefail
build="${1:-build}"
echo "== sampling (bench/sampling_bench) =="
"$build/bench/sampling_bench" 20 1.0
echo
echo "== PSGS + FAP precompute (bench/metrics_bench) =="
"$build/bench/metrics_bench" 22
