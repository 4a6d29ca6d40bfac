#!/usr/bin/env bash
# `spindle launch` gives every door KServe and metrics: rank 0's from launch's
# --http/--grpc/--metrics, a member's from its [[server]]'s http/grpc/metrics
# beside its door. The cluster serves recommendation models only (no GNN
# dataset or model): --listen is taken (before: refused, "--listen needs
# --dataset and --model", and a member's door had no KServe or metrics). A
# [[server]] with a KServe port but no door is refused by name, and so is a door
# on another host that Hera's plan servers (on this machine's loopback) cannot serve.
#   usage: launch_doors_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_and_cleanup
read -r p0 p1 door1 <<< "$(free_ports 3)"
toml() {  # EXTRA: keys added to s1's [[server]]
  cat <<TOML
coordinator = "s0"
token_file = "cluster.token"
[[server]]
name = "s0"
host = "127.0.0.1"
port = $p0
memory = 1000000
[[server]]
name = "s1"
host = "127.0.0.1"
port = $p1
memory = 1000000
$1
TOML
}
toml "door = \"127.0.0.1:$door1\"
http = \"127.0.0.1:0\"
grpc = \"127.0.0.1:0\"
metrics = \"127.0.0.1:0\"" > "$work/cluster.toml"
"$spindle" launch --config "$work/cluster.toml" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
  --metrics 127.0.0.1:0 --rec-model "ctr=$root/tests/nn/golden/dlrm" --max-queue 64 \
  > "$work/launch.log" 2>&1 &
bg+=($!)

# url RANK KIND: the URL rank RANK printed for KIND (http, metrics), once it did.
url() { sed -n "s|^\[rank $1\] $2 \(http://127\.0\.0\.1:[0-9]*\).*|\1|p" "$work/launch.log" | head -1; }
for _ in $(seq 600); do
  [ -n "$(url 0 http)" ] && [ -n "$(url 1 http)" ] && [ -n "$(url 1 metrics)" ] &&
    grep -q "^\[rank 1\] grpc 127.0.0.1:" "$work/launch.log" && break
  grep -q "exited with" "$work/launch.log" && fail "a rank exited"
  sleep 0.2
done
for r in 0 1; do
  [ -n "$(url $r http)" ] || fail "rank $r's door has no KServe HTTP"
  [ -n "$(url $r metrics)" ] || fail "rank $r's door has no metrics"
done
grep -q "^\[rank 1\] grpc 127.0.0.1:[1-9]" "$work/launch.log" || fail "rank 1's door has no KServe gRPC"
rank1=$(pgrep -f -- "node --config $work/cluster.toml --rank 1" | head -1)
grep -q -- "--max-queue 64" <<< "$(tr '\0' ' ' < "/proc/$rank1/cmdline")" ||
  fail "rank 1 was not given --max-queue"
for r in 0 1; do
  meta=$(curl -sf --max-time 10 "$(url $r http)/v2/models/ctr") || fail "rank $r: KServe metadata of ctr"
  grep -q '"name" *: *"ctr"' <<< "$meta" || fail "rank $r: metadata $meta"
  curl -sf --max-time 10 -o /dev/null "$(url $r http)/v2/models/ctr/ready" || fail "rank $r: ctr not ready"
  text=$(curl -sf --max-time 10 "$(url $r metrics)/metrics") || fail "rank $r: no metrics page"
  grep -q "^spindle_" <<< "$text" || fail "rank $r: no spindle_ metrics: $text"
  echo "rank $r's door: KServe $(url $r http) serves ctr, metrics at $(url $r metrics)"
done
kill -TERM "${bg[0]}"
wait "${bg[0]}"
bg=()

# A KServe port with no door to serve it on is refused, naming the server and key.
toml "http = \"127.0.0.1:0\"" > "$work/no-door.toml"
out=$(timeout 60 "$spindle" launch --config "$work/no-door.toml" --listen 127.0.0.1:0 \
  --rec-model "ctr=$root/tests/nn/golden/dlrm" 2>&1) && fail "launch ran with http and no door: $out"
grep -q "server 1 (s1) has http = '127.0.0.1:0' but no door" <<< "$out" || fail "no refusal: $out"
# --listen with nothing to serve is refused by name.
out=$(timeout 60 "$spindle" launch --config "$work/cluster.toml" --listen 127.0.0.1:0 2>&1) &&
  fail "launch --listen with nothing to serve ran: $out"
grep -q "launch: --listen 127.0.0.1:0 serves nothing" <<< "$out" || fail "no refusal: $out"
# --device reaches the ranks (`node` checks it there): with no GNN to run on a GPU,
# every rank refuses it by name and launch stops, naming the first rank to exit
# (either one: they start together).
out=$(timeout 60 "$spindle" launch --config "$work/cluster.toml" --listen 127.0.0.1:0 \
  --rec-model "ctr=$root/tests/nn/golden/dlrm" --device cuda 2>&1) &&
  fail "launch --device cuda with no GNN ran: $out"
grep -qE "rank [01] exited with 1 before it started: .*--device cuda: this rank serves no GNN" <<< "$out" ||
  fail "--device did not reach the ranks: $out"
# Plan servers listen on this machine's loopback ranks: a door on another host
# is refused by name before anything starts (before: given --forward to 127.x).
cat > "$work/remote-door.toml" <<TOML
coordinator = "s0"
token_file = "cluster.token"
launcher = ""
[[server]]
name = "s0"
host = "127.0.0.1"
port = $p0
memory = 1000000
[[server]]
name = "s1"
host = "10.255.255.1"
port = $p1
memory = 1000000
door = "10.255.255.1:$door1"
[colocation]
profiles = "$root/examples/hera-profile-handmade.json"
[[colocation.model]]
name = "N"
dir = "$root/tests/nn/golden/ncf"
qps = 100
TOML
out=$(timeout 60 "$spindle" launch --config "$work/remote-door.toml" 2>&1) &&
  fail "launch ran with a remote door and loopback plan servers: $out"
grep -q "rank 1 (s1) opens a door on 10.255.255.1, but the \[colocation\] plan servers listen on this machine's loopback ranks" <<< "$out" ||
  fail "no refusal naming the remote door: $out"
! grep -q -- "--forward" <<< "$out" || fail "a --forward was handed out: $out"
echo "refused: $(grep -m1 "opens a door on" <<< "$out")"
echo "PASS"
