#!/usr/bin/env bash
# `spindle launch` when a rank cannot serve (before: it waited for rank 0's 60 s
# member timeout, exited 0, and a SIGTERM meanwhile went unanswered):
#   - a rank that refuses to start (here rank 2, through the TOML's launcher,
#     handed a cluster token too short to use) is reported with its error, the
#     other ranks are stopped and launch exits non-zero within seconds;
#   - SIGTERM while rank 0 waits for a member that never joins (rank 2 is a
#     `sleep` through the launcher) stops every rank and launch within seconds.
# Prints how long each took.
#   usage: launch_stops_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_and_cleanup
read -r p0 p1 p2 <<< "$(free_ports 3)"
"$spindle" generate --scale 10 --edge-factor 8 --feature-dim 16 --seed 3 --out "$work/g" \
  > /dev/null 2>&1 || fail "generate"
"$spindle" model init --arch graphsage --in 16 --hidden 16 --classes 4 --seed 1 \
  --out-dir "$work/m" > /dev/null || fail "model init"
toml() {  # LAUNCHER: ranks 0 and 1 here, rank 2 on 127.0.0.2 through LAUNCHER
  cat <<TOML
coordinator = "s0"
token_file = "cluster.token"
launcher = "$1"
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
[[server]]
name = "s2"
host = "127.0.0.2"
port = $p2
memory = 1000000
TOML
}
now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
gone() {  # no process of the cluster TOML $1 left
  for _ in $(seq 50); do pgrep -f -- "--config $1" > /dev/null || return 0; sleep 0.1; done
  return 1
}

toml "env SPINDLE_CLUSTER_TOKEN=tooshort" > "$work/refuses.toml"
t0=$(now)
timeout 60 "$spindle" launch --config "$work/refuses.toml" > "$work/refuses.log" 2>&1
rc=$?
took=$(since "$t0")
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "launch exited with $rc (0: the refusal went unseen; 124: it hung)"
cp "$work/refuses.log" "$work/launch.log"  # what fail shows
grep -q "^\[rank 2@127.0.0.2\] .*SPINDLE_CLUSTER_TOKEN holds 8 characters" "$work/launch.log" ||
  fail "rank 2's error was not relayed"
grep -q "exited with 1 before it started: .*SPINDLE_CLUSTER_TOKEN holds 8 characters" "$work/launch.log" ||
  fail "launch's own error does not name rank 2's"
grep -q "^\[rank 0\] exited with" "$work/launch.log" || fail "rank 0 was not stopped"
gone "$work/refuses.toml" || fail "a rank outlived launch"
echo "a rank that refused to start: launch exited with $rc after ${took} s: $(tail -1 "$work/launch.log")"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 9 else 1)" "$took" ||
  fail "launch took ${took} s (a rank had to be killed after the 10 s grace)"

toml "sleep 600; :" > "$work/waits.toml"
: > "$work/launch.log"
"$spindle" launch --config "$work/waits.toml" --dataset "$work/g" --model "$work/m" \
  --listen 127.0.0.1:0 > "$work/launch.log" 2>&1 &
launch=$!
bg+=("$launch")
for _ in $(seq 600); do
  grep -q "^\[rank 0\] ready" "$work/launch.log" && break
  sleep 0.1
done
grep -q "^\[rank 0\] ready" "$work/launch.log" || fail "rank 0 never started"
sleep 2  # ranks 0 and 1 now wait for rank 2's shard, which never comes
t0=$(now)
kill -TERM "$launch"
for _ in $(seq 300); do kill -0 "$launch" 2> /dev/null || break; sleep 0.1; done
kill -0 "$launch" 2> /dev/null && fail "launch still runs 30 s after SIGTERM"
took=$(since "$t0")
wait "$launch"
echo "SIGTERM while rank 0 waited for a member: launch and its ranks stopped in ${took} s (exit $?)"
gone "$work/waits.toml" || fail "a rank outlived launch"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 9 else 1)" "$took" ||
  fail "stopping took ${took} s (a rank had to be killed after the 10 s grace)"
