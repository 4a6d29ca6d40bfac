# Sourced by gpu-bundle/run.sh (copied there as run-served.sh): steps 4-6 of the
# GPU check, the served path on the GPU beside a plain PyTorch peer, same files.
# Uses run.sh's bundled, bundled_bg, limited, note, result, $data, $logs, $work and $here.
pipelines="${PIPELINES:-8}"  # SERVE_ARGS: more `spindle serve` flags; LOAD_PROCS: see load_row

# runs_now STEP SECONDS: the step is asked for and the run's deadline leaves it SECONDS.
runs_now() {
  has_step "$1" || return 1
  [ $(( deadline - $(date +%s) )) -ge "$2" ] && return 0
  result SKIP "$1" "no time left (RUN_SECONDS)"
  return 1
}

ensure_data() {  # the R-MAT the steps share (generated once, with this bundle's spindle)
  [ -f "$data/metadata.json" ] && return 0
  limited 180 "$logs/generate.log" spindle generate --scale "$scale" --feature-dim 128 --seed 1 \
    --out "$data" || { result FAIL "generate R-MAT $scale" "$(tail -1 "$logs/generate.log")"; return 1; }
}

cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
# "NAME TICKS" per thread of process $1 (the name without its number: CAF's
# workers, the pipelines and the door add up by kind).
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr -d '0-9 ' < "$t/comm")" "$(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')"
  done 2> /dev/null | awk '{n[$1] += $2} END {for (k in n) print k, n[k]}' | sort
}
# The CPU seconds this shell's waited-for children used so far (bash's `times`,
# run in this shell, not in a $(...) subshell, whose children are its own).
children_cpu() {
  times > "$work/times"
  tail -1 "$work/times" | tr 'ms' '  ' | awk '{print $1 * 60 + $2 + $3 * 60 + $4}'
}

# `spindle client load` in its own process, or LOAD_PROCS of them sharing the
# calls in flight (is the load generator the limit?).
load_row() {  # load_row LOG REQUESTS CLIENTS: prints "req/s p50 p99 refused" (req/s: answered ok)
  local log=$1 requests=$2 clients=$3 procs=${LOAD_PROCS:-1} i pids=() secs
  [ "$clients" -lt "$procs" ] && procs=1
  secs=$(( $(left_s) - 15 ))  # within the run's deadline, whatever the row
  [ "$secs" -gt 120 ] && secs=120
  if [ "$secs" -le 5 ]; then echo "0 - - -"; return 0; fi
  for i in $(seq "$procs"); do
    bundled timeout -k 5 "$secs" -- spindle client --connect "$door" load --seeds "degree:$data" \
      --json --requests $((requests / procs)) --warmup 100 --clients $((clients / procs)) \
      --seed "$i" > "$log.$i" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  python3 -c 'import json,sys
js=[json.load(open(f)) for f in sys.argv[1:]]
print("%.0f %.3f %.3f %d" % (sum(j["answered_ok"] / j["wall_s"] for j in js),
      sum(j["latency_ms"]["p50"] for j in js) / len(js), max(j["latency_ms"]["p99"] for j in js),
      sum(j["requests"] - j["answered_ok"] for j in js)))' \
    $(seq -f "$log.%g" "$procs") 2> /dev/null || echo "0 - - -"
}

# 4. Where a batch's time goes on the GPU, and how pipelines sharing it scale.
if has_step profile && ensure_data; then
  for device in ${PROFILE_DEVICES:-cuda host}; do
    limited 150 "$logs/profile-$device.log" device_breakdown "$data" --device "$device" \
      --threads "${PROFILE_THREADS:-1,2,4,8,16}" --batches 40; rc=$?
    if [ $rc = 0 ]; then result PASS "profile --device $device" "see profile-$device.log"
    else result FAIL "profile --device $device" "exit $rc: $(tail -1 "$logs/profile-$device.log")"; fi
  done
fi

# 5. `spindle serve --device cuda`, the load generator in its own process: as
# started (PSGS routes each batch by its calibration), then every batch on the GPU.
served_rows() {  # served_rows LABEL: 64, 256 and 1 calls in flight
  local clients requests s0 s1 t0 t1 c0 c1 rps p50 p99 cores client stats
  for clients in 64 256 1; do
    if [ "$(left_s)" -lt 30 ]; then  # the run's deadline: the row skipped, said
      echo "| $1 | $clients | skipped: no time left (RUN_SECONDS) | | | | | |"
      continue
    fi
    requests=$([ "$clients" = 1 ] && echo 2000 || echo 30000)
    thread_ticks "$server" > "$work/ticks0"
    children_cpu > "$work/c0"
    s0=$(cpu_seconds "$server"); t0=$(date +%s.%N)
    load_row "$logs/served-$1-$clients.json" "$requests" "$clients" > "$work/row"
    read -r rps p50 p99 refused < "$work/row"
    [ "$refused" = 0 ] || p99="$p99 ($refused refused)"
    s1=$(cpu_seconds "$server"); t1=$(date +%s.%N)
    children_cpu > "$work/c1"
    c0=$(cat "$work/c0"); c1=$(cat "$work/c1")
    thread_ticks "$server" > "$work/ticks1"
    cores=$(awk -v a="$s1" -v b="$s0" -v x="$t1" -v y="$t0" 'BEGIN {printf "%.2f", (a - b) / (x - y)}')
    client=$(awk -v a="$c1" -v b="$c0" -v n="$requests" 'BEGIN {printf "%.1f", (a - b) / (n + 100) * 1e6}')
    # The server's threads by kind: cores each kind used during the row.
    join "$work/ticks0" "$work/ticks1" | awk -v hz="$(getconf CLK_TCK)" -v x="$t1" -v y="$t0" \
      '{c = ($3 - $2) / hz / (x - y); if (c >= 0.01) printf "%s %.2f; ", $1, c}' \
      > "$logs/served-$1-$clients-threads.txt"
    bundled timeout 20 -- spindle client --connect "$door" --token-file "$work/admin-token" \
      admin stats > "$logs/served-$1-$clients-stats.json" 2>&1
    stats=$(python3 -c 'import json,sys
m=json.load(open(sys.argv[1]))["models"]["graphsage"]
print("%d/%d" % (m["large_executor_batches"], m["small_executor_batches"]))' \
      "$logs/served-$1-$clients-stats.json" 2> /dev/null || echo -)
    echo "| $1 | $clients | $rps | $p50 | $p99 | $cores | $client | $stats |"
    save_logs
  done
}
if runs_now served 60 && ensure_data; then
  bundled spindle model init --arch graphsage --in 128 --hidden 256 --classes 47 --seed 1 \
    --out-dir "$work/model" > /dev/null 2>&1
  bundled_bg spindle serve --dataset "$data" --model "$work/model" --device cuda \
    --pipelines "$pipelines" --admin-token-file "$work/admin-token" ${SERVE_ARGS:-} \
    --listen 127.0.0.1:0 > "$logs/served-server.log" 2>&1
  server=$!
  for _ in $(seq 300); do grep -q '^listening ' "$logs/served-server.log" && break; sleep 0.2; done
  door=$(sed -n 's/^listening //p' "$logs/served-server.log")
  if [ -z "$door" ]; then
    result FAIL "served --device cuda" "did not listen: $(tail -1 "$logs/served-server.log")"
  else
    load_row "$logs/served-warm.json" 4000 64 > /dev/null
    {
      echo "| routing | calls in flight | req/s | p50 ms | p99 ms | server cores used | load generator us CPU per call | large/small executor batches so far |"
      echo "|---|---|---|---|---|---|---|---|"
      served_rows calibrated
      bundled timeout 20 -- spindle client --connect "$door" --token-file "$work/admin-token" \
        admin set graphsage psgs_threshold 0 > /dev/null 2>&1
      served_rows all-gpu
    } > "$logs/served.md"
    result PASS "served --device cuda, $pipelines pipelines" "$(sed -n 3p "$logs/served.md")"
    tee -a "$summary" < "$logs/served.md"
  fi
  kill "$server" 2> /dev/null; wait "$server" 2> /dev/null
fi

# 6. The plain PyTorch peer on the same files, on the GPU.
if runs_now peer 60 && ensure_data; then
  if OMP_WAIT_POLICY=PASSIVE timeout -k 10 240 python3 "$here/serve_torch.py" "$data" \
      --device cuda --batches 40 > "$logs/peer-torch-cuda.log" 2>&1; then
    result PASS "peer: PyTorch on the GPU" "see peer-torch-cuda.log"
    tee -a "$summary" < "$logs/peer-torch-cuda.log"
  else
    result FAIL "peer: PyTorch on the GPU" "$(tail -1 "$logs/peer-torch-cuda.log")"
  fi
fi

# 7. A cluster on this machine: 2 ranks of `spindle node --device cuda` (CLUSTER_DEVICE),
# each with its door, the whole dataset on each, a device tier of CLUSTER_DEVICE_MB. 9 seeded calls through the two doors
# against one `spindle serve --device host` process (equal within 1e-5 of the output
# scale: float sums in another order), then a load spread over both doors.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
door_of() {  # door_of LOG: the HOST:PORT its process prints once listening (60 s at most)
  for _ in $(seq 300); do grep -q '^listening ' "$1" && break; sleep 0.2; done
  sed -n 's/^listening //p' "$1" | head -1
}
if runs_now cluster 60 && ensure_data; then
  cdev=${CLUSTER_DEVICE:-cuda}
  [ -d "$work/model" ] || bundled spindle model init --arch graphsage --in 128 --hidden 256 \
    --classes 47 --seed 1 --out-dir "$work/model" > /dev/null 2>&1
  {
    echo 'coordinator = "s0"'
    echo 'token_file = "cluster.token"'
    for r in 0 1; do
      printf '[[server]]\nname = "s%s"\nhost = "127.0.0.1"\nport = %s\nmemory = 4000000000\n' \
        "$r" "$(free_port)"
    done
  } > "$work/cluster.toml"
  export SPINDLE_CLUSTER_TOKEN
  SPINDLE_CLUSTER_TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  cpids=()
  for r in 0 1; do
    extra=(); [ "$r" = 0 ] && extra=(--expect 1)
    # A device tier of an eighth of the rows: the rest come through the shards per batch.
    [ "$cdev" = cuda ] && extra+=(--device-feature-mb "${CLUSTER_DEVICE_MB:-64}")
    bundled_bg spindle node --config "$work/cluster.toml" --rank "$r" --dataset "$data" \
      --model "$work/model" --device "$cdev" --pipelines 4 --listen 127.0.0.1:0 "${extra[@]}" \
      --admin-token-file "$work/cluster-admin-$r" \
      > "$logs/cluster-rank$r.log" 2>&1
    cpids+=($!)
  done
  bundled_bg spindle serve --dataset "$data" --model "$work/model" --device host \
    --listen 127.0.0.1:0 > "$logs/cluster-one.log" 2>&1
  cpids+=($!)
  d0=$(door_of "$logs/cluster-rank0.log"); d1=$(door_of "$logs/cluster-rank1.log")
  one=$(door_of "$logs/cluster-one.log")
  if [ -z "$d0" ] || [ -z "$d1" ] || [ -z "$one" ]; then
    result FAIL "cluster: 2 ranks --device $cdev" "doors '$d0' '$d1' '$one': see cluster-rank*.log"
  else
    right=0
    for i in $(seq 1 9); do
      seed=$(( (i * 337) % 4096 )); door=$([ $((i % 2)) = 0 ] && echo "$d0" || echo "$d1")
      bundled timeout 30 -- spindle client --connect "$door" --model graphsage infer --seeds "$seed" \
        --sampler-seed "$i" --json > "$work/a.json" 2>&1
      bundled timeout 30 -- spindle client --connect "$one" --model graphsage infer --seeds "$seed" \
        --sampler-seed "$i" --json > "$work/b.json" 2>&1
      python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
x, y = a["outputs"], b["outputs"]
def flat_all(v):
    return [w for u in v for w in flat_all(u)] if isinstance(v, list) else [v]
x, y = flat_all(x), flat_all(y)
scale = max(abs(e) for e in y) or 1.0
ok = a.get("status") == "ok" and len(x) == len(y) and max(abs(p - q) for p, q in zip(x, y)) <= 1e-5 * scale
sys.exit(0 if ok else 1)' "$work/a.json" "$work/b.json" 2>> "$logs/cluster-judge.log" && right=$((right + 1)) ||
        echo "call $i (seed $seed) through $door: $(head -c 300 "$work/a.json"); one process: $(head -c 300 "$work/b.json")" >> "$logs/cluster-judge.log"
    done
    door="$d0,$d1"  # 16 in flight: 8 at each door, within a node door's admission limit
    load_row "$logs/cluster-load.json" 20000 16 > "$work/row"
    read -r rps p50 p99 refused < "$work/row"
    if [ "$right" = 9 ]; then res=PASS; else res=FAIL; fi
    result "$res" "cluster: 2 ranks --device $cdev, 4 pipelines each" \
      "$right of 9 seeded calls as one host process; 16 in flight over both doors: $rps answered/s, p50 $p50 ms, p99 $p99 ms, $refused refused"
    for r in 0 1; do  # where each door's batches ran
      bundled timeout 20 -- spindle client --connect "$([ $r = 0 ] && echo "$d0" || echo "$d1")" \
        --token-file "$work/cluster-admin-$r" admin stats > "$logs/cluster-stats-$r.json" 2>&1
      note "cluster rank $r's door: $(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["models"]["graphsage"]
print("%d batches on the large executor, %d on the small" % (m["large_executor_batches"], m["small_executor_batches"]))' \
        "$logs/cluster-stats-$r.json" 2>&1 | tail -1)"
    done
    grep -h "GPU executor\|no CUDA\|device tier filled" "$logs"/cluster-rank*.log | head -4 |
      tee -a "$summary"
  fi
  for p in "${cpids[@]}"; do kill "$p" 2> /dev/null; done
  for p in "${cpids[@]}"; do wait "$p" 2> /dev/null; done
fi
