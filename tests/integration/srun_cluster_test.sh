#!/usr/bin/env bash
# A cluster started by Slurm, with no `spindle launch`: `srun -n 3` runs `spindle
# node` three times; each takes its rank and the world size from Slurm's
# environment (SLURM_PROCID / SLURM_NTASKS, no --rank) and the cluster token from
# SPINDLE_CLUSTER_TOKEN (srun passes the environment on), serves its partition,
# opens its own door on 127.0.0.1:0 and prints `listening HOST:PORT`. Seeded
# calls through every rank's door are answered as one process answers them.
# Then `srun -n 2` on the 3-rank TOML is refused by every rank, naming
# SLURM_NTASKS and the TOML. Slurm: the one named by SLURM_CONF when it answers,
# else a one-node Slurm on loopback started here (scripts/slurm-local.sh, as
# root) and stopped after. Skipped (77) without Slurm (Debian: slurm-wlm).
#   usage: srun_cluster_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
answers=""
sinfo -h -o %t 2> /dev/null | grep -Eq 'idle|mix' && answers=1
if [ -z "$answers" ] && { ! command -v slurmctld > /dev/null || [ "$(id -u)" != 0 ]; }; then
  echo "srun_cluster_test: skipped: no Slurm answers here and none can be started (root and Debian's slurm-wlm needed)"
  exit 77
fi
scratch_cluster "$spindle"
if [ -z "$answers" ]; then
  started=$("$root/scripts/slurm-local.sh" start "$work/slurm") || fail "no local Slurm: $started"
  eval "$started"
  local_slurm=1
fi
job=spindle-srun-test-$$
# At exit: the job's steps cancelled (their ranks stopped by slurmstepd) before
# anything else, then the local Slurm stopped, then the rest.
trap 'scancel --name "$job" 2> /dev/null
      for _ in $(seq 100); do pgrep -f "node --config $work/" > /dev/null || break; sleep 0.1; done
      [ -n "${local_slurm:-}" ] && "$root/scripts/slurm-local.sh" stop "$work/slurm"
      for p in "${bg[@]}"; do kill -TERM "$p" 2> /dev/null; done
      for p in "${bg[@]}"; do wait "$p" 2> /dev/null; done; rm -rf "$work"' EXIT
SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export SPINDLE_CLUSTER_TOKEN
# Three ranks on this host's cores: -O (overcommit); --label tags each line "R: ".
run=(srun -J "$job" -O --label --kill-on-bad-exit=1)
node=("$spindle" node --config "$work/cluster.toml" --dataset "$work/parts" --model "$work/m"
  --listen 127.0.0.1:0)
"${run[@]}" -n 3 "${node[@]}" < /dev/null > "$work/launch.log" 2>&1 &
bg+=($!)
"$spindle" serve --dataset "$work/whole" --model "$work/m" --listen 127.0.0.1:0 > "$work/one.log" 2>&1 &
bg+=($!)

launched_doors "$work" '%d: '
grep -E "rank [0-9] of 3 from SLURM_PROCID" "$work/launch.log" | head -3
grep -q "rank [0-9] of 3 from SLURM_PROCID" "$work/launch.log" || fail "no rank said it took its rank from SLURM_PROCID"
echo "srun started 3 ranks with no launch; doors: ${doors[*]}"

judge_doors "$spindle"

out=$(timeout 120 "${run[@]}" -n 2 "${node[@]}" < /dev/null 2>&1) && fail "srun -n 2 on a 3-rank TOML ran: $out"
grep -q "SLURM_NTASKS = 2, but $work/cluster.toml has 3 ranks" <<< "$out" ||
  fail "no refusal naming the world size: $out"
echo "refused: $(grep -m1 "SLURM_NTASKS = 2" <<< "$out")"
