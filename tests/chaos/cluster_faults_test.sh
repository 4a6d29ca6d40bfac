#!/usr/bin/env bash
# Chaos on a loopback cluster under `spindle launch --restart` (3 ranks, a
# partitioned dataset, doors on rank 0 and rank 1) while calls with sampler
# seeds go on, each compared with one process serving the whole dataset:
#   1. a member killed (kill -9) and restarted by launch;
#   2. a member frozen (SIGSTOP) for 3 s, then woken (SIGCONT);
#   3. the coordinator killed (kill -9) and restarted, calls going to rank 1's door.
# Every call must be answered as one process answers it, or refused: 0 wrong.
# Prints, per fault, the calls right / refused / wrong and the time to serve again.
#   usage: cluster_faults_test.sh SPINDLE
set -uo pipefail
spindle=$1
source "$(dirname "$0")/../support/loopback_cluster.sh"  # sets $root
scratch_cluster "$spindle"
"$spindle" launch --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m" \
  --listen "127.0.0.1:$door0" --restart > "$work/launch.log" 2>&1 &
bg+=($!)
"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
bg+=($!)
wait_for_doors "$work" || { echo "FAIL: no cluster"; cat "$work/launch.log"; exit 1; }

# calls DOOR N FIRST: N seeded calls; prints "right refused wrong".
calls() {
  local door=$1 n=$2 first=$3 right=0 refused=0 wrong=0
  for i in $(seq "$first" $((first + n - 1))); do
    case $(judge_pair "$spindle" graphsage "$door" "$one" $(( (i * 911) % 4096 )) "$i") in
      right) right=$((right + 1)) ;;
      refused) refused=$((refused + 1)) ;;
      *) wrong=$((wrong + 1)) ;;
    esac
  done
  echo "$right $refused $wrong"
}

# until_right DOOR: seconds until a call through DOOR is answered right again.
until_right() {
  local door=$1 t0 i=1000
  t0=$(date +%s.%N)
  for _ in $(seq 150); do
    read -r r _ _ <<< "$(calls "$door" 1 $i)"
    [ "$r" = 1 ] && { python3 -c "import time; print('%.1f' % (time.time() - $t0))"; return; }
    i=$((i + 1))
    sleep 0.2
  done
  echo never
}

read -r r f w <<< "$(calls "127.0.0.1:$door0" 12 1)"
echo "before any fault: $r of 12 right through rank 0's door ($f refused, $w wrong)"
[ "$r" = 12 ] || { echo "FAIL: the cluster does not answer as one process"; exit 1; }
status=0
pid_of() { pgrep -f "node --config $work/cluster.toml --rank $1" | head -1; }

# 1. A member killed.
kill -9 "$(pid_of 2)"
read -r r f w <<< "$(calls "127.0.0.1:$door0" 20 100)"
back=$(until_right "127.0.0.1:$door0")
echo "member kill -9: $r right, $f refused, $w wrong; answered right again after ${back} s"
[ "$w" = 0 ] || status=1

# 2. A member frozen for 3 s.
sleep 2
frozen=$(pid_of 2)
kill -STOP "$frozen"
read -r r f w <<< "$(calls "127.0.0.1:$door0" 10 200)"
sleep 1
kill -CONT "$frozen"
read -r r2 f2 w2 <<< "$(calls "127.0.0.1:$door0" 10 300)"
echo "member SIGSTOP 3 s then SIGCONT: $((r + r2)) right, $((f + f2)) refused, $((w + w2)) wrong"
[ "$w" = 0 ] && [ "$w2" = 0 ] || status=1

# 3. The coordinator killed: rank 1's own door goes on answering (or refusing).
sleep 2
kill -9 "$(pid_of 0)"
read -r r f w <<< "$(calls "127.0.0.1:$door1" 20 400)"
back=$(until_right "127.0.0.1:$door0")
echo "coordinator kill -9: through rank 1's door $r right, $f refused, $w wrong; rank 0's door answered right again after ${back} s"
[ "$w" = 0 ] || status=1
[ "$back" != never ] || status=1
[ "$status" = 0 ] || tail -40 "$work/launch.log"
exit "$status"
