#!/usr/bin/env bash
# `spindle client load` over two doors when one goes down and comes back (two
# `spindle serve` of one model on fixed free loopback ports): while the load runs
# (open loop, about 12 s), door B is killed and restarted on the same port.
# Every call is answered ok (a call whose door died is sent once more, to the
# other door), and the restarted B takes calls again (its --access-log).
# Before: a door that failed was never used again and its calls in flight failed.
#   usage: client_failover_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_and_cleanup
read -r pa pb <<< "$(free_ports 2)"
"$spindle" generate --scale 10 --edge-factor 8 --feature-dim 8 --seed 1 --out "$work/g" \
  > /dev/null 2>&1 || fail "generate"
"$spindle" model init --arch gcn --in 8 --hidden 16 --classes 3 --seed 1 --out-dir "$work/m" \
  > /dev/null || fail "model init"
serve() {  # PORT LOG: a door on 127.0.0.1:PORT; its pid in $served
  "$spindle" serve --dataset "$work/g" --model "$work/m" --name gcn --listen "127.0.0.1:$1" \
    --access-log "$2" > "$2.out" 2>&1 &
  served=$!
  bg+=($served)
  for _ in $(seq 600); do
    grep -q "^listening " "$2.out" && return 0
    sleep 0.1
  done
  fail "the door on port $1 did not start: $(tail -5 "$2.out")"
}
serve "$pa" "$work/a.log"
serve "$pb" "$work/b.log"
b=$served

"$spindle" client --connect "127.0.0.1:$pa,127.0.0.1:$pb" --model gcn --timeout-ms 10000 load \
  --rate 250 --requests 3000 --warmup 0 --seeds uniform:1024 --json \
  > "$work/load.json" 2> "$work/load.err" &
load=$!
bg+=($load)
sleep 3
[ -s "$work/b.log" ] || fail "door B took no calls before it was killed"
kill -KILL "$b"
wait "$b" 2> /dev/null
echo "door B killed after $(wc -l < "$work/b.log") calls"
sleep 2
mv "$work/b.log" "$work/b-before.log"
serve "$pb" "$work/b.log"
echo "door B restarted on port $pb"
wait "$load" || fail "client load exited with $?: $(tail -5 "$work/load.err")"
cat "$work/load.err"
python3 - "$work/load.json" "$work/b.log" <<'PY' || fail "$(cat "$work/load.json")"
import json, sys
text = open(sys.argv[1]).read()
report = json.loads(text[text.index("{"):])
after = sum(1 for line in open(sys.argv[2]) if line.strip())
print(f"answered ok {report['answered_ok']} of {report['requests']}; statuses {report['status']}; "
      f"the restarted door B answered {after}")
assert report["answered_ok"] == report["requests"] == 3000, "a call failed while a door was down"
assert after > 0, "the restarted door took no calls"
PY
grep -q "went down" "$work/load.err" || fail "the load did not say door B went down"
grep -q "answers again" "$work/load.err" || fail "the load did not say door B answers again"
echo "PASS"
