#!/usr/bin/env bash
# deploy/kubernetes/spindle.yaml without a Kubernetes cluster (none is run here):
#   - it parses as YAML; the StatefulSet's replicas, SPINDLE_WORLD_SIZE and the
#     ConfigMap TOML's [[server]] count agree;
#   - the TOML is a cluster file `spindle partition` takes (ranks spindle-0..2);
#   - where a UTS namespace can be made (root): `spindle node` as the pod
#     spindle-1 would run it (hostname spindle-1, KUBERNETES_SERVICE_HOST set, the
#     Secret's token file, no --rank) takes rank 1 from the pod ordinal, and with
#     SPINDLE_WORLD_SIZE=4 is refused by name.
#   usage: deploy_kubernetes_test.sh SPINDLE
set -uo pipefail
spindle=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/support/loopback_cluster.sh"
export SPINDLE_PROGRESS=0
scratch_and_cleanup
yaml="$root/deploy/kubernetes/spindle.yaml"
python3 - "$yaml" "$work/cluster.toml" <<'PY' || fail "the manifest"
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1]))}
toml = docs["ConfigMap"]["data"]["cluster.toml"]
open(sys.argv[2], "w").write(toml)
sts = docs["StatefulSet"]["spec"]
env = {e["name"]: e["value"] for e in sts["template"]["spec"]["containers"][0]["env"]}
servers = toml.count("[[server]]")
assert docs["Service"]["spec"]["clusterIP"] == "None", "the Service is not headless"
assert sts["podManagementPolicy"] == "Parallel", "ranks must start together"
assert sts["replicas"] == servers == int(env["SPINDLE_WORLD_SIZE"]), (sts["replicas"], servers, env)
print(f"spindle.yaml: {servers} ranks, headless Service, Parallel pods")
PY
"$spindle" generate --scale 9 --edge-factor 4 --feature-dim 8 --seed 1 --out "$work/g" > /dev/null 2>&1 ||
  fail "generate"
out=$("$spindle" partition "$work/g" --config "$work/cluster.toml" --out "$work/parts" 2>&1) ||
  fail "the ConfigMap's TOML: $out"
[ -d "$work/parts/rank-2" ] || fail "no partition for rank 2: $(ls "$work/parts")"
echo "the ConfigMap's TOML partitions a dataset over ranks spindle-0..2"

if ! unshare --uts true 2> /dev/null; then
  echo "deploy_kubernetes_test: the pod's hostname part skipped: cannot make a UTS namespace here"
  exit 0
fi
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$work/token"
chmod 0440 "$work/token"  # as a Secret volume under fsGroup
pod() {  # WORLD_SIZE: `spindle node` as pod spindle-1 runs it; its output
  KUBERNETES_SERVICE_HOST=10.96.0.1 SPINDLE_WORLD_SIZE=$1 SPINDLE_LOG=info timeout 60 \
    unshare --uts sh -c 'hostname spindle-1 && exec "$@"' sh "$spindle" node \
    --config "$work/cluster.toml" --token-file "$work/token" --dataset "$work/parts" 2>&1
}
out=$(pod 3)
# No DNS for the Service here: the node gets as far as its own host name.
grep -q "rank 1 of 3 from the pod ordinal of hostname spindle-1" <<< "$out" ||
  fail "the pod's rank was not its ordinal: $out"
echo "as pod spindle-1: $(grep -m1 "rank 1 of 3" <<< "$out" | sed 's/.*\(rank 1 of 3\)/\1/')"
out=$(pod 4) && fail "a world of 4 on a 3-rank TOML ran: $out"
grep -q "SPINDLE_WORLD_SIZE = 4, but $work/cluster.toml has 3 ranks" <<< "$out" ||
  fail "no refusal naming SPINDLE_WORLD_SIZE: $out"
echo "refused: $(grep -m1 "SPINDLE_WORLD_SIZE = 4" <<< "$out")"
