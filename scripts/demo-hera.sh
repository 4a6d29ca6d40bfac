#!/usr/bin/env bash
# Hera in `make demo`: two Table I models (NCF, DIN) profiled briefly, served on
# one server with their own worker pools under Hera's node manager, queried,
# a third (Wide & Deep) loaded and unloaded live, and the manager's decisions
# shown from stats. Small tables, short runs: a tour, not a measurement.
set -euo pipefail
spindle="$1"; dir="$2/hera"
mkdir -p "$dir"
"$spindle" model init --arch ncf --tables 20000,20000,20000,20000 --out-dir "$dir/ncf" > /dev/null
"$spindle" model init --arch din --tables 20000,20000,20000,20000 --out-dir "$dir/din" > /dev/null
"$spindle" model init --arch wnd --tables 5000,5000,5000 --out-dir "$dir/wnd" > /dev/null
"$spindle" profile --model ncf="$dir/ncf" --model din="$dir/din" --workers 2 --lookups 3 \
  --seconds 0.2 --steps 3 --out "$dir/profile.json"
"$spindle" colocate affinity --profiles "$dir/profile.json"
log="$dir/serve.log"
"$spindle" serve --rec-model ncf="$dir/ncf" --rec-model din="$dir/din" --rec-workers 1 \
  --node-manager hera --profiles "$dir/profile.json" --listen 127.0.0.1:0 \
  --admin-token-file "$dir/admin.token" > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q '^listening ' "$log" && break; sleep 0.1; done
endpoint=$(sed -n 's/^listening //p' "$log")
client=("$spindle" client --connect "$endpoint" --token-file "$dir/admin.token")
"${client[@]}" --model ncf rec --sparse 1 --sparse 2 --sparse 3 --sparse 4
"${client[@]}" --model din rec --sparse 1 --sparse 2 --sparse 3,4,5 --sparse 6
"${client[@]}" admin set ncf manager_period_ms 200
for i in $(seq 1 20); do
  "${client[@]}" --model ncf rec --sparse "$i" --sparse 2 --sparse 3 --sparse 4 > /dev/null
done
"${client[@]}" admin load wd "$dir/wnd"
"${client[@]}" --model wd rec --dense 0,0,0,0,0,0,0,0,0,0,0,0,0 --sparse 1 --sparse 2 --sparse 3
"${client[@]}" admin unload wd
"${client[@]}" admin models
sleep 0.5
echo "node manager (Hera, Algorithm 3) as stats shows it:"
"${client[@]}" admin stats | grep -E '"(ncf|din)"|"policy"|"workers"|"decision"|"slack"' | head -12
