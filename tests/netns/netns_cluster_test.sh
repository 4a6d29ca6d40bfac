#!/usr/bin/env bash
# A cluster across network namespaces (scripts/netns-cluster.sh): three ranks,
# each in its own namespace behind a tbf-shaped 1 Gbit/s veth link and with a
# private data folder and /tmp, started by `spindle launch` through the bed's
# launcher, UCX over TCP only (no shared memory between the namespaces), serving
# a partitioned dataset that only rank 0's disk holds (`launch --files`: the
# other ranks fetch their partition and the model from rank 0's file door).
# Requests with a sampler seed through rank 0's door and rank 1's own door (on
# their namespace addresses) must answer exactly as one process does; with rank 2
# killed and restarted (launch --restart) while calls go on, every call is
# answered as one process answers it or refused, never wrong. Skipped (77) where namespaces cannot
# be made (not root, no iproute2).
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/netns_body.sh"
name="spn$$"
netns_probe netns_cluster_test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

checks() {
  local subnet=$SPINDLE_NETNS_SUBNET bed="$root/scripts/netns-cluster.sh" data r0
  data=$("$bed" data "$SPINDLE_NETNS")  # outside the bed: launch's own folder
  r0=$("$bed" rank-dir "$SPINDLE_NETNS" 0)
  "$spindle" generate --scale 12 --edge-factor 8 --feature-dim 32 --seed 3 --out "$work/whole" > /dev/null 2>&1 || return 1
  "$spindle" model init --arch graphsage --in 32 --hidden 32 --classes 8 --seed 1 --out-dir "$work/m" > /dev/null || return 1
  # Ranks 1 and 2 open their own doors on port 7701.
  "$root/scripts/netns-cluster.sh" toml "$SPINDLE_NETNS" 3 240000 7701 > "$work/cluster.toml"
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" || return 1
  cp -r "$work/parts" "$work/m" "$r0/"
  for d in "$data" "$r0" "$("$bed" rank-dir "$SPINDLE_NETNS" 1)" "$("$bed" rank-dir "$SPINDLE_NETNS" 2)"; do
    cp "$work/cluster.toml" "$d/"
  done
  "$spindle" launch --config "$data/cluster.toml" --dataset "$data/parts" --model "$data/m" \
    --files "${subnet}.1:7800" \
    --listen "${subnet}.1:7700" --admin-token-file "$data/admin.token" --restart \
    > "$work/launch.log" 2>&1 &
  bg+=($!)
  "$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
  bg+=($!)
  local one="" door="" door2=""
  for _ in $(seq 600); do
    [ -z "$one" ] && one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
    grep -q "^\[rank 0@${subnet}.1\] listening " "$work/launch.log" && door="${subnet}.1:7700"
    grep -q "^\[rank 1@${subnet}.2\] listening " "$work/launch.log" && door2="${subnet}.2:7701"
    [ -n "$one" ] && [ -n "$door" ] && [ -n "$door2" ] && break
    sleep 0.2
  done
  if [ -z "$door" ] || [ -z "$door2" ] || [ -z "$one" ]; then
    echo "FAIL: no door (rank 0: '${door}', rank 1: '${door2}', one process: '${one}')"
    cat "$work/launch.log"; return 1
  fi
  grep "@" "$work/launch.log" | grep -E "ready|listening|fetched" | head -8
  local same=0
  for i in $(seq 1 12); do
    local seed=$(( (i * 337) % 4096 ))
    local through=$door
    [ $((i % 2)) = 0 ] && through=$door2  # every other call through rank 1's own door
    a=$("$spindle" client --connect "$through" --model graphsage infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
    b=$("$spindle" client --connect "$one" --model graphsage infer --seeds "$seed" --sampler-seed "$i" --json 2>&1)
    if python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); sys.exit(0 if a["status"]=="ok" and a["outputs"]==b["outputs"] else 1)' "$a" "$b"; then
      same=$((same + 1))
    else
      echo "FAIL: request $i (seed $seed) differs: cluster $a; one process $b"
    fi
  done
  echo "netns cluster: $same of 12 answers through rank 0's and rank 1's doors equal one process's (3 namespaces, 1 Gbit/s tbf links, UCX over tcp)"
  [ "$same" -eq 12 ] || return 1
  # Rank 2 killed (kill -9) while calls go on, restarted by launch --restart: every
  # call is answered as one process answers it or refused, never wrong.
  local rank2 right=0 refused=0 wrong=0
  rank2=$(pgrep -f "node --config $data/cluster.toml --rank 2" | head -1)
  [ -n "$rank2" ] || { echo "FAIL: no rank 2 process"; return 1; }
  local killed_at
  killed_at=$(date +%s.%N)
  kill -9 "$rank2"
  for i in $(seq 1 40); do
    local seed=$(( (i * 911) % 4096 ))
    a=$("$spindle" client --connect "$door" --model graphsage infer --seeds "$seed" --sampler-seed "$((i + 100))" --json 2>&1)
    b=$("$spindle" client --connect "$one" --model graphsage infer --seeds "$seed" --sampler-seed "$((i + 100))" --json 2>&1)
    case $(python3 "$root/tests/support/judge_answer.py" "$a" "$b") in
      right) right=$((right + 1)) ;;
      refused) refused=$((refused + 1)) ;;
      *) wrong=$((wrong + 1)); echo "WRONG answer to request $i: $a vs $b" ;;
    esac
  done
  local back=""
  for _ in $(seq 300); do
    if [ "$(grep -c "^\[rank 2@${subnet}.3\] ready" "$work/launch.log")" -ge 2 ]; then
      back=$(python3 -c "import time; print('%.1f' % (time.time() - $killed_at))"); break
    fi
    sleep 0.1
  done
  echo "rank 2 killed and restarted under calls: $right answered as one process, $refused refused, $wrong wrong; rank 2 ready again ${back:-never} s after the kill"
  [ "$wrong" -eq 0 ] && [ "$right" -gt 0 ] && [ -n "$back" ]
}
export -f body checks
export spindle work root
"$root/scripts/netns-cluster.sh" run "$name" 3 1gbit -- bash -c body
