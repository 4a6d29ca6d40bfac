# Sourced by the loopback cluster test scripts (cluster_faults_test,
# cluster_calibrate_test, cluster_models_test): a scratch folder cleaned up at
# exit, free loopback ports, and a 3-rank cluster on loopback with its data.

# The repository's root, found from this file's own place.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# scratch_and_cleanup: a scratch folder in $work and a list $bg of background
# processes; at exit every one of them is stopped (TERM, then waited for) and
# the folder removed.
scratch_and_cleanup() {
  work=$(mktemp -d)
  bg=()
  trap 'for p in "${bg[@]}"; do kill -TERM "$p" 2> /dev/null; done
        for p in "${bg[@]}"; do wait "$p" 2> /dev/null; done
        rm -rf "$work"' EXIT
}

# fail MESSAGE...: the test fails, naming MESSAGE, with the tail of
# $work/launch.log when there is one.
fail() { echo "FAIL: $*"; [ -f "$work/launch.log" ] && tail -30 "$work/launch.log"; exit 1; }

# free_ports N: N loopback ports free now, on one line, by the Python tests' rule
# (python/tests/serving.py free_port: below the ephemeral range, probed from an
# offset hashed from the pid, so parallel tests rarely probe the same ports).
free_ports() {
  python3 -c 'import sys
sys.path.insert(0, sys.argv[2])
from serving import free_port
print(" ".join(str(free_port()) for _ in range(int(sys.argv[1]))))' "$1" "$root/python/tests"
}

# three_rank_cluster SPINDLE WORK P0 P1 P2 DOOR1: WORK/whole (R-MAT s12, 32
# features), WORK/m (GraphSAGE 32-32-8), WORK/cluster.toml (ranks s0..s2 on
# ports P0..P2, s1 with its own door on DOOR1) and WORK/parts (the dataset
# partitioned over the ranks). Returns non-zero naming the step that failed.
three_rank_cluster() {
  local spindle=$1 work=$2 p0=$3 p1=$4 p2=$5 door1=$6
  "$spindle" generate --scale 12 --edge-factor 8 --feature-dim 32 --seed 3 --out "$work/whole" \
    > /dev/null 2>&1 || { echo "generate failed"; return 1; }
  "$spindle" model init --arch graphsage --in 32 --hidden 32 --classes 8 --seed 1 \
    --out-dir "$work/m" > /dev/null || { echo "model init failed"; return 1; }
  cat > "$work/cluster.toml" <<TOML
coordinator = "s0"
token_file = "cluster.token"
[[server]]
name = "s0"
host = "127.0.0.1"
port = $p0
memory = 240000
[[server]]
name = "s1"
host = "127.0.0.1"
port = $p1
memory = 240000
door = "127.0.0.1:$door1"
[[server]]
name = "s2"
host = "127.0.0.1"
port = $p2
memory = 240000
TOML
  "$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" \
    > /dev/null || { echo "partition failed"; return 1; }
}

# wait_for_doors WORK: waits (up to 3 min) until WORK/launch.log shows rank 0's
# and rank 1's doors listening and WORK/one.log (a single process) its own;
# sets $one to that process's endpoint. Returns non-zero naming what is missing.
wait_for_doors() {
  local work=$1
  one=""
  for _ in $(seq 900); do
    [ -z "$one" ] && one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
    if [ -n "$one" ] && grep -q "^\[rank 0\] listening " "$work/launch.log" &&
      grep -q "^\[rank 1\] listening " "$work/launch.log"; then return 0; fi
    sleep 0.2
  done
  grep -q "^\[rank 1\] listening " "$work/launch.log" || { echo "the cluster's doors did not open"; return 1; }
  [ -n "$one" ] || { echo "no single process"; return 1; }
}

# launched_doors WORK TAG: waits (up to 3 min) for the single process's door in
# WORK/one.log ($one) and the three ranks' `listening` lines in WORK/launch.log,
# each prefixed by its launcher's tag for rank R (TAG: a sed pattern with %d for
# R, e.g. '\[1,%d\]<stdout>:' for mpirun --tag-output, '%d: ' for srun --label);
# sets $one and $doors (rank order), or the test fails naming what is missing.
launched_doors() {
  local work=$1 tag=$2 r d
  doors=() one=""
  for _ in $(seq 900); do
    [ -z "$one" ] && one=$(sed -n 's/^listening \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/one.log" | head -1)
    doors=()
    for r in 0 1 2; do
      # shellcheck disable=SC2059
      d=$(sed -n "s/^$(printf "$tag" "$r")listening \(127\.0\.0\.1:[0-9]*\).*/\1/p" "$work/launch.log" | head -1)
      [ -n "$d" ] && doors+=("$d")
    done
    [ -n "$one" ] && [ ${#doors[@]} = 3 ] && return 0
    sleep 0.2
  done
  [ -n "$one" ] || fail "the single process did not start"
  fail "not every rank opened its door: ${doors[*]:-none}"
}

# judge_doors SPINDLE: 9 seeded calls, 3 through each of $doors, each answered
# as the single process $one answers it; the test fails at the first that is not.
judge_doors() {
  local spindle=$1 i door verdict
  for i in $(seq 1 9); do
    door=${doors[$((i % 3))]}
    verdict=$(judge_pair "$spindle" graphsage "$door" "$one" $(( (i * 409) % 4096 )) "$i")
    [ "$verdict" = right ] || fail "call $i through $door: $verdict"
  done
  echo "9 of 9 seeded calls, 3 through each rank's door, answered as one process answers them"
}

# judge_alternating SPINDLE MODEL DOOR_A DOOR_B: 10 seeded calls of MODEL, odd ones
# through DOOR_A and even ones through DOOR_B, each answered as the single process
# $one answers it; the test fails at the first that is not.
judge_alternating() {
  local spindle=$1 model=$2 i door verdict
  for i in $(seq 1 10); do
    door=$3; [ $((i % 2)) = 0 ] && door=$4
    verdict=$(judge_pair "$spindle" "$model" "$door" "$one" $(( (i * 577) % 4096 )) "$i")
    [ "$verdict" = right ] || fail "call $i of $model through $door: $verdict"
  done
}

# judge_pair SPINDLE MODEL DOOR ONE SEED SAMPLER_SEED: one seeded call of MODEL
# to DOOR and to the single process ONE; prints right, refused or wrong (and
# the two answers to stderr when wrong).
judge_pair() {
  local spindle=$1 model=$2 door=$3 one=$4 seed=$5 sseed=$6 a b verdict
  a=$(timeout 20 "$spindle" client --connect "$door" --timeout-ms 5000 --model "$model" infer \
    --seeds "$seed" --sampler-seed "$sseed" --json 2>&1)
  b=$("$spindle" client --connect "$one" --model "$model" infer --seeds "$seed" \
    --sampler-seed "$sseed" --json 2>&1)
  verdict=$(python3 "$root/tests/support/judge_answer.py" "$a" "$b")
  [ "$verdict" = right ] || [ "$verdict" = refused ] || echo "WRONG answer to seed $seed: $a vs $b" >&2
  echo "$verdict"
}

# scratch_cluster SPINDLE: scratch_and_cleanup, five free ports ($p0 $p1 $p2
# for the ranks, $door0 $door1 for the doors) and three_rank_cluster in $work;
# the test fails naming the step that failed.
scratch_cluster() {
  scratch_and_cleanup
  read -r p0 p1 p2 door0 door1 <<< "$(free_ports 5)"
  out=$(three_rank_cluster "$1" "$work" "$p0" "$p1" "$p2" "$door1") || fail "$out"
}
