#!/usr/bin/env bash
# Join and leave on a loopback cluster: three ranks serve a graph (Cora, or a
# SNAP edge list with random features) from a `spindle
# partition` run (--policy fap or hash), rank 0's door under an open loop at half
# the rate it sustains; a fourth rank joins (`node --join`) during one measured run
# and leaves (`cluster-leave`) during another. Prints one table row per move: the
# time until the joiner's door opens (or the leaver exits), the rows it built and
# their rate, the rows moved in the cluster, and the served p50/p99 and failures
# of the run during the move beside a run without one.
# With a link RATE (tc syntax: 1gbit, 10gbit; root) the same runs on the network
# namespace bed (scripts/netns-cluster.sh): ranks 0-2 on machines 0-2, the joiner on
# machine 3, every link shaped to RATE, UCX over TCP, each machine with the
# partitions, the model and the TOML on its own disk (the joiner's rows still come
# from their owners over the links); the load runs outside the bed. JOIN_FETCH=1:
# machine 3's disk holds the TOML only, and the joiner fetches rank 0's partition
# and the model from rank 0's file door (`--fetch-from`) before it joins.
# With `capacity` as the fourth argument it measures instead what a join adds:
# closed loops of 16 calls (the door's limit in flight) through rank 0's door,
# alternating three ranks and four (a fourth joins, is measured, leaves; CYCLES
# times, default 3, then three ranks once more), and prints each run's req/s,
# p50/p99 and the batches each rank's pipelines took, then the medians and their ratio.
# SOURCE: Cora's folder (cora.cites, cora.content.gz), or a SNAP edge list
# (.txt or .txt.gz, e.g. soc-Slashdot0902) given FEATURE_DIM (default 128) random
# features; each rank's memory is sized to hold 42% of the rows (as for Cora).
# Usage: scripts/bench-join.sh SOURCE [fap|hash] [SPINDLE] [moves|capacity] [RATE]
set -euo pipefail
src=$(realpath "${1:?usage: bench-join.sh SOURCE [fap|hash] [SPINDLE] [moves|capacity] [RATE]}")
policy=${2:-fap}
bin=$(realpath "${3:-build/apps/spindle}")
mode=${4:-moves}
rate_of_links=${5:-}
bed=$(cd "$(dirname "$0")" && pwd)/netns-cluster.sh
if [[ -n $rate_of_links && -z ${SPINDLE_NETNS:-} ]]; then  # again, inside a 4-machine bed
  exec "$bed" run "spn$$" 4 "$rate_of_links" -- "$0" "$src" "$policy" "$bin" "$mode" "$rate_of_links"
fi
work=$(mktemp -d /tmp/bench-join.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export SPINDLE_STATE_DIR=$work/state SPINDLE_PROGRESS=0
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [[ -d $src ]]; then  # Cora
  "$bin" prepare --input "$src/cora.cites" --features "$src/cora.content.gz" --undirected \
    --out "$work/data" >/dev/null
else
  "$bin" prepare --input "$src" --features "random:${FEATURE_DIM:-128}" --undirected \
    --out "$work/data" >/dev/null
fi
read -r nodes dim <<< "$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))
print(m["num_nodes"], m["feature_dim"])' "$work/data/metadata.json")"
memory=$((nodes * dim * 4 * 42 / 100))  # each rank holds 42% of the rows' bytes
echo "$(basename "$src"): $nodes nodes x $dim features, $memory bytes a rank"
"$bin" model init --arch graphsage --in "$dim" --hidden 32 --classes 7 --out-dir "$work/sage" >/dev/null
if [[ -n $rate_of_links ]]; then
  "$bed" toml "$SPINDLE_NETNS" 3 "$memory" >"$work/c.toml"
else
  {
    printf 'coordinator = "coord"\n[links]\nintra = "shm"\ninter = "infiniband"\n'
    for name in coord shard-a shard-b; do
      printf '[[server]]\nname = "%s"\nhost = "127.0.0.1"\nport = %s\nmemory = %s\n' \
        "$name" "$(free_port)" "$memory"
    done
  } >"$work/c.toml"
fi
"$bin" partition "$work/data" --config "$work/c.toml" --out "$work/parts" --policy "$policy" >/dev/null
if [[ -n $rate_of_links ]]; then
  # Every machine's own disk: the partitions, the model, the TOML; the token in
  # the environment. Rank R runs on machine R; doors and gates on its address.
  at=$("$bed" data "$SPINDLE_NETNS")
  for r in 0 1 2 3; do cp "$work/c.toml" "$("$bed" rank-dir "$SPINDLE_NETNS" "$r")/"; done
  for r in 0 1 2 $([[ ${JOIN_FETCH:-0} == 1 ]] || echo 3); do
    cp -r "$work/parts" "$work/sage" "$("$bed" rank-dir "$SPINDLE_NETNS" "$r")/"
  done
  rank0_files=(--files "$SPINDLE_NETNS_SUBNET.1:7800")
  joiner_fetch=()
  [[ ${JOIN_FETCH:-0} == 1 ]] && joiner_fetch=(--fetch-from "$SPINDLE_NETNS_SUBNET.1:7800")
  SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  export SPINDLE_CLUSTER_TOKEN
  on() { local r=$1; shift; exec "$bed" exec "$SPINDLE_NETNS" "$r" -- env UCX_TLS=tcp,self "$@"; }
  host_of() { echo "$SPINDLE_NETNS_SUBNET.$(($1 + 1))"; }
  admin=$("$bed" rank-dir "$SPINDLE_NETNS" 0)/admin
  port0=7600
else
  at=$work
  on() { shift; exec "$@"; }  # only in the background: it replaces its shell
  host_of() { echo 127.0.0.1; }
  admin=$work/admin
  rank0_files=() joiner_fetch=()
  port0=$(grep -m1 '^port' "$work/c.toml" | awk '{print $3}')
fi
node() {  # R ARGS...: rank R's `spindle node` on its machine (in the background)
  local r=$1; shift
  on "$r" "$bin" node --config "$at/c.toml" --dataset "$at/parts" --model "$at/sage" "$@"
}
for r in 1 2; do node "$r" --rank "$r" 2>"$work/rank-$r.log" >/dev/null & pids+=($!); done
node 0 --rank 0 --workload 0 --expect 2 --listen "$(host_of 0):0" --admin-token-file "$at/admin" "${rank0_files[@]}" \
  >"$work/rank-0.out" 2>"$work/rank-0.log" & pids+=($!)
for _ in $(seq 600); do grep -q '^listening ' "$work/rank-0.out" && break; sleep 0.2; done
door=$(grep -m1 '^listening ' "$work/rank-0.out" | awk '{print $2}')

load() {  # ARGS...: one load run through rank 0's door, its JSON report
  "$bin" client --connect "$door" --model graphsage load --seeds "degree:$work/data" --json "$@"
}
join_rank() {  # OUT: starts rank 3 with --join and waits until its door is open
  node 3 --join "$(host_of 0):$port0" --address "$(host_of 3):0" --listen "$(host_of 3):0" \
    --admin-token-file "$at/admin" "${joiner_fetch[@]}" >"$work/$1.out" 2>"$work/$1.log" & joiner=$!
  pids+=($joiner)
  for _ in $(seq 1200); do grep -qs '^listening ' "$work/$1.out" && break; sleep 0.05; done
}

if [[ $mode == capacity ]]; then
  by_rank() {  # the batches of rank 0's queue each rank's pipelines answered, as JSON
    "$bin" client --connect "$door" --token-file "$admin" admin stats | python3 -c \
      'import json,sys; print(json.dumps(json.load(sys.stdin)["models"]["graphsage"].get("batches_by_rank", {})))'
  }
  measure() {  # LABEL: one closed loop, a table row with each rank's share; req/s to rps.txt
    local before after
    before=$(by_rank)
    load --clients 16 --requests 30000 --warmup 3000 >"$work/run.json"
    after=$(by_rank)
    python3 -c 'import json,sys
j = json.load(open(sys.argv[2])); b, a = json.loads(sys.argv[3]), json.loads(sys.argv[4])
share = " ".join("%s:%d" % (r, a[r] - b.get(r, 0)) for r in sorted(a))
bad = j["requests"] - j["answered_ok"]
print("| %s | %.0f | %.2f | %.2f | %d | %s |" % (sys.argv[1], j["throughput_rps"],
      j["latency_ms"]["p50"], j["latency_ms"]["p99"], bad, share))
open(sys.argv[5], "a").write("%s %.1f\n" % (sys.argv[1][0], j["throughput_rps"]))' \
      "$1" "$work/run.json" "$before" "$after" "$work/rps.txt"
  }
  echo "policy $policy, $(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "| ranks fed by rank 0's queue | req/s | p50 ms | p99 ms | not ok | batches by rank |"
  echo "|---|---|---|---|---|---|"
  for cycle in $(seq "${CYCLES:-3}"); do
    measure "3 (starting ranks)"
    join_rank "rank-3.$cycle"
    sleep 2  # every rank reads the 4-rank plan
    measure "4 (rank 3 joined)"
    "$bin" cluster-leave --config "$work/c.toml" --rank 3 >/dev/null
    wait "$joiner"
    sleep 2
  done
  measure "3 (starting ranks)"
  python3 -c 'import statistics,sys
runs = [l.split() for l in open(sys.argv[1])]
three = [float(r) for n, r in runs if n == "3"]; four = [float(r) for n, r in runs if n == "4"]
m3, m4 = statistics.median(three), statistics.median(four)
print("median req/s: 3 ranks %.0f (%d runs), 4 ranks %.0f (%d runs), ratio %.2f" %
      (m3, len(three), m4, len(four), m4 / m3))' "$work/rps.txt"
  exit 0
fi
capacity=$(load --clients 8 --requests 3000 --warmup 500 | python3 -c \
  'import json,sys; print(int(json.load(sys.stdin)["throughput_rps"]))')
rate=$((capacity / 2))
requests=$((rate * 8))  # an 8 s run: the move happens inside it
echo "policy $policy, links ${rate_of_links:-loopback}, $(date -u +%F), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rank 0's door sustains $capacity req/s; runs at $rate req/s, $requests calls"
summary() {  # REPORT.json: p50 p99 failed
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); l=j["latency_ms"]
bad = {k: v for k, v in j["status"].items() if k != "ok"}
print("%.2f %.2f %d" % (l["p50"], l["p99"], j["requests"] - j["answered_ok"]))
print(sys.argv[1].split("/")[-1], "calls not ok by status:", bad or "none", file=sys.stderr)' "$1"
}
load --rate "$rate" --requests "$requests" >"$work/quiet.json"
read -r q50 q99 qfail < <(summary "$work/quiet.json")

load --rate "$rate" --requests "$requests" >"$work/join.json" & loader=$!
sleep 2
t0=$(date +%s.%N)
join_rank rank-3
t1=$(date +%s.%N)
wait "$loader"
read -r j50 j99 jfail < <(summary "$work/join.json")
built=$(grep -m1 'shard of placement epoch 1 ready' "$work/rank-3.log")
rows=$(sed -E 's/.*ready: ([0-9]+) rows.*/\1/' <<<"$built")
secs=$(sed -E 's/.* ([0-9.]+) s$/\1/' <<<"$built")
moved=$(sed -E 's/.*\), ([0-9]+) rows moved.*/\1/' <<<"$built")
if [[ ${JOIN_FETCH:-0} == 1 ]]; then  # from its join's first log line to its model fetched
  python3 -c 'import re, sys
t = lambda l: sum(float(x) * m for x, m in zip(re.search(r"\[I (\d+):(\d+):([\d.]+)\]", l).groups(), (3600, 60, 1)))
lines = open(sys.argv[1]).read().splitlines()
start = next(l for l in lines if "joining the cluster" in l)
got = [l for l in lines if re.search(r"fetched (dataset|model)", l)]
size = sum(int(re.search(r"(\d+) bytes \(", l).group(1)) for l in got)
print("joiner fetched %.1f MB from rank 0 in %.2f s of its start" % (size / 1e6, t(got[-1]) - t(start)))' "$work/rank-3.log"
fi
sleep 3  # every rank reads epoch 1 and frees epoch 0

load --rate "$rate" --requests "$requests" >"$work/leave.json" & loader=$!
sleep 2
t2=$(date +%s.%N)
"$bin" cluster-leave --config "$work/c.toml" --rank 3 >/dev/null
wait "$joiner"
t3=$(date +%s.%N)
wait "$loader"
read -r l50 l99 lfail < <(summary "$work/leave.json")
left=0
for r in 0 1 2; do
  n=$(grep -m1 'shard of placement epoch 2 ready' "$work/rank-$r.log" |
    sed -E 's/.* ([0-9]+) fetched from their owners.*/\1/')
  left=$((left + ${n:-0}))
done
lsecs=$(grep -h 'shard of placement epoch 2 ready' "$work"/rank-[012].log |
  sed -E 's/.* ([0-9.]+) s$/\1/' | sort -n | tail -1)

printf '| move | policy | time to serve / leave s | rows built | build s | rows/s | rows moved in cluster | p50 ms quiet -> move | p99 ms quiet -> move | not ok quiet -> move |\n'
printf '| join 3->4 | %s%s | %.2f | %s | %s | %.0f | %s | %s -> %s | %s -> %s | %s |\n' "$policy" \
  "${rate_of_links:+, $rate_of_links}" "$(echo "$t1 - $t0" | bc)" "$rows" "$secs" "$(echo "$rows / $secs" | bc -l)" "$moved" \
  "$q50" "$j50" "$q99" "$j99" "$qfail -> $jfail"
printf '| leave 4->3 | %s%s | %.2f | %s | %s | %.0f | - | %s -> %s | %s -> %s | %s |\n' "$policy" \
  "${rate_of_links:+, $rate_of_links}" "$(echo "$t3 - $t2" | bc)" "$left" "$lsecs" "$(echo "$left / $lsecs" | bc -l)" \
  "$q50" "$l50" "$q99" "$l99" "$qfail -> $lfail"
