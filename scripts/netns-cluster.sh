#!/usr/bin/env bash
# A test bed where links behave like a network (root): N network namespaces,
# each joined by a veth pair to one bridge in this namespace, every link shaped
# with tc's token bucket (tbf: bandwidth and a queue bound; this kernel has no
# netem, so no added delay, jitter or loss are emulated). A command run on
# "machine" R (`exec`, and the TOML's launcher) gets its own mount namespace
# too: a private data folder and a private /tmp, so nothing is shared but the
# network.
#
#   scripts/netns-cluster.sh up NAME N RATE   namespaces NAME-0..NAME-(N-1) at 10.77.S.1..N
#                                             (S from NAME's hash), the bridge NAME-br at
#                                             10.77.S.254, each veth shaped to RATE (tc
#                                             syntax: 1gbit, 10gbit, 25gbit); prints
#                                             "host R ADDRESS NAMESPACE" per rank
#   scripts/netns-cluster.sh down NAME        removes them and the private folders (idempotent)
#   scripts/netns-cluster.sh exec NAME R -- CMD...
#                                             CMD in namespace NAME-R and a mount namespace
#                                             of its own: rank R's private folder (empty at
#                                             `up`) at the path `data NAME` prints, the other
#                                             ranks' folders hidden, an empty tmpfs on /tmp;
#                                             gone when CMD's processes end (a kill -9 too)
#   scripts/netns-cluster.sh data NAME        the data folder's path as a rank sees it
#   scripts/netns-cluster.sh rank-dir NAME R  rank R's private folder seen from outside the
#                                             bed (to put files on "machine" R's disk)
#   scripts/netns-cluster.sh toml NAME N MEMORY [DOOR_PORT]
#                                             a cluster TOML for the bed: rank R at
#                                             10.77.S.(R+1):7600 with MEMORY bytes of
#                                             rows, started by `exec NAME R` (above)
#                                             with UCX over TCP; ranks 1.. open a door
#                                             on DOOR_PORT when given
#   scripts/netns-cluster.sh run NAME N RATE -- CMD...
#                                             up, CMD with SPINDLE_NETNS=NAME and
#                                             SPINDLE_NETNS_SUBNET=10.77.S in its
#                                             environment, then down, even on error,
#                                             SIGINT or SIGTERM
# A rank runs in its namespaces with `exec NAME {rank}` (a cluster TOML's
# launcher). Names end in the creating shell's pid: `up` first removes the beds of
# pids that no longer run (left by a kill -9), naming them.
set -euo pipefail
script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
beds=/run/spindle-netns  # private folders: ranks/NAME-R, the mount point data/ (tmpfs: gone on reboot)

subnet_of() {  # 10.77.S from the name (1..250)
  local h
  h=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo "10.77.$((h % 250 + 1))"
}

down() {
  local name=$1
  rm -rf --one-file-system "${beds:?}/${name:?}" 2>/dev/null || true
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${name}-[0-9]*$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "${name}-br" 2>/dev/null || true
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${name}h[0-9]*$" || true); do
    ip link del "$l" 2>/dev/null || true
  done
}

reap_stale() {  # beds named spn<PID> or spm<PID> whose pid is gone
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^sp[nm][0-9]+-[0-9]+$' || true); do
    local bed=${ns%%-*} pid=${ns:3}; pid=${pid%%-*}
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "netns-cluster: removing the stale test bed $bed (its pid $pid is gone)" >&2
      down "$bed"
    fi
  done
  for d in "$beds"/sp[nm][0-9]*; do  # private folders whose namespaces are gone
    [ -d "$d" ] || continue
    local pid=${d##*/}; pid=${pid:3}
    if ! kill -0 "$pid" 2>/dev/null; then rm -rf --one-file-system "$d"; fi
  done
}

up() {
  local name=$1 n=$2 rate=$3 subnet
  subnet=$(subnet_of "$name")
  reap_stale
  down "$name"
  ip link add "${name}-br" type bridge
  ip addr add "${subnet}.254/24" dev "${name}-br"
  ip link set "${name}-br" up
  mkdir -p "$beds/$name/data"
  for ((r = 0; r < n; ++r)); do
    mkdir -p "$beds/$name/ranks/${name}-${r}"
    local ns="${name}-${r}" host="${name}h${r}" peer="${name}p${r}"
    ip netns add "$ns"
    ip link add "$host" type veth peer name "$peer"
    ip link set "$peer" netns "$ns"
    ip link set "$host" master "${name}-br" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "${subnet}.$((r + 1))/24" dev "$peer"
    ip netns exec "$ns" ip link set "$peer" up
    # Both directions of the link: the namespace's egress and the bridge port's.
    ip netns exec "$ns" tc qdisc add dev "$peer" root tbf rate "$rate" burst 256kb latency 50ms
    tc qdisc add dev "$host" root tbf rate "$rate" burst 256kb latency 50ms
    echo "host $r ${subnet}.$((r + 1)) $ns"
  done
}

# CMD on "machine" R: its network namespace, and a mount namespace (private
# propagation: nothing mounted here is seen outside) where rank R's folder is
# bound at data/, a tmpfs hides every rank's folder, others are /tmp and
# /dev/shm (no shared memory between "machines" either).
exec_on() {
  local name=$1 r=$2
  shift 2
  local own="$beds/$name/ranks/${name}-${r}"
  [ -d "$own" ] || { echo "netns-cluster: no bed $name with a rank $r (run up first)" >&2; exit 2; }
  exec ip netns exec "${name}-${r}" unshare --mount --propagation private sh -c '
    mount --bind "$1" "$2" && mount -t tmpfs -o size=1m,mode=0700 bed-ranks "$3" &&
      mount -t tmpfs -o mode=1777 bed-tmp /tmp && mount -t tmpfs -o mode=1777 bed-shm /dev/shm || { echo "netns-cluster: cannot make the private folders" >&2; exit 1; }
    shift 3
    exec "$@"' sh "$own" "$beds/$name/data" "$beds/$name/ranks" "$@"
}

toml() {
  local name=$1 n=$2 memory=$3 door=${4:-} subnet r
  subnet=$(subnet_of "$name")
  echo "coordinator = \"s0\""
  echo "launcher = \"${script} exec ${name} {rank} -- env UCX_TLS=tcp,self\""
  echo "token_file = \"${name}.token\""  # beside this TOML (a scratch folder)
  printf '[links]\nintra = "shm"\ninter = "ethernet"\n'
  for ((r = 0; r < n; ++r)); do
    printf '[[server]]\nname = "s%d"\nhost = "%s.%d"\nport = 7600\nmemory = %s\n' \
      "$r" "$subnet" $((r + 1)) "$memory"
    if [ -n "$door" ] && [ "$r" -gt 0 ]; then echo "door = \"${subnet}.$((r + 1)):${door}\""; fi
  done
}

case "${1:-}" in
  up) [ $# -eq 4 ] || { echo "usage: $0 up NAME N RATE" >&2; exit 2; }; up "$2" "$3" "$4" ;;
  down) [ $# -eq 2 ] || { echo "usage: $0 down NAME" >&2; exit 2; }; down "$2" ;;
  exec)
    [ $# -ge 5 ] && [ "$4" = "--" ] || { echo "usage: $0 exec NAME R -- CMD..." >&2; exit 2; }
    name=$2 r=$3
    shift 4
    exec_on "$name" "$r" "$@"
    ;;
  data) [ $# -eq 2 ] || { echo "usage: $0 data NAME" >&2; exit 2; }; echo "$beds/$2/data" ;;
  rank-dir) [ $# -eq 3 ] || { echo "usage: $0 rank-dir NAME R" >&2; exit 2; }; echo "$beds/$2/ranks/$2-$3" ;;
  toml) [ $# -ge 4 ] || { echo "usage: $0 toml NAME N MEMORY [DOOR_PORT]" >&2; exit 2; }; toml "$2" "$3" "$4" "${5:-}" ;;
  run)
    [ $# -ge 6 ] && [ "$5" = "--" ] || { echo "usage: $0 run NAME N RATE -- CMD..." >&2; exit 2; }
    name=$2 n=$3 rate=$4
    shift 5
    trap 'down "$name"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    up "$name" "$n" "$rate" >&2
    SPINDLE_NETNS="$name" SPINDLE_NETNS_SUBNET="$(subnet_of "$name")" "$@"
    ;;
  *) echo "usage: $0 up NAME N RATE | down NAME | exec NAME R -- CMD... | data NAME | rank-dir NAME R | toml NAME N MEMORY [DOOR_PORT] | run NAME N RATE -- CMD..." >&2; exit 2 ;;
esac
