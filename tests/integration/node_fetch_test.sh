#!/usr/bin/env bash
# `spindle node --fetch-from` on loopback, as an operator meets it: a rank whose
# disk lacks its partition and the model fetches them from rank 0's file door
# (--files, paced with --files-rate so the fetch takes seconds); a rank with
# another cluster's token is refused at once, naming the door and the folder,
# with nothing written; a port that accepts and stays silent is refused within
# seconds as not a file door; a rank killed (kill -9) mid-fetch leaves no partition
# folder, only its hidden staging folder, and started again continues from the
# bytes on disk and serves a partition equal to rank 0's copy, file by file.
set -uo pipefail
spindle=$1
source "$(dirname "$0")/../support/loopback_cluster.sh"
scratch_and_cleanup
read -r p0 p1 files silent < <(free_ports 4)
"$spindle" generate --scale 13 --edge-factor 8 --feature-dim 128 --seed 3 --out "$work/whole" > /dev/null 2>&1 || fail "generate"
"$spindle" model init --arch graphsage --in 128 --hidden 32 --classes 8 --seed 1 --out-dir "$work/m" > /dev/null || fail "model init"
cat > "$work/cluster.toml" <<TOML
coordinator = "s0"
[[server]]
name = "s0"
host = "127.0.0.1"
port = $p0
memory = 8000000
[[server]]
name = "s1"
host = "127.0.0.1"
port = $p1
memory = 8000000
TOML
"$spindle" partition "$work/whole" --config "$work/cluster.toml" --out "$work/parts" > /dev/null || fail "partition"
export SPINDLE_CLUSTER_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') SPINDLE_PROGRESS=0
# Rank 0 holds everything and sends at most 8 Mbit/s.
"$spindle" node --config "$work/cluster.toml" --rank 0 --dataset "$work/parts" --model "$work/m" \
  --files "127.0.0.1:$files" --files-rate 8 > "$work/rank0.log" 2>&1 &
bg+=($!)
for _ in $(seq 300); do grep -qs "^files 127.0.0.1:$files" "$work/rank0.log" && break; sleep 0.1; done
grep -q "^files 127.0.0.1:$files" "$work/rank0.log" || fail "rank 0's file door: $(tail -5 "$work/rank0.log")"
rank1() {  # rank 1 with its own (empty) disk under $work/r1; $token1: another token
  exec env SPINDLE_CLUSTER_TOKEN="${token1:-$SPINDLE_CLUSTER_TOKEN}" "$spindle" node --config "$work/cluster.toml" --rank 1 --dataset "$work/r1/parts" --model "$work/r1/m" \
    --fetch-from "127.0.0.1:$files" --fetch-wait-s 10 "$@"
}

out=$(token1=another-clusters-token-0123456789; rank1 2>&1) &&
  fail "a rank with another token ran: $out"
grep -q "file door 127.0.0.1:$files refused the cluster token" <<< "$out" && grep -q -- "--dataset $work/r1/parts" <<< "$out" ||
  fail "the refusal names neither the door nor the folder: $out"
[ ! -e "$work/r1/parts/rank-1" ] || fail "a refused fetch wrote the partition"
echo "another token: $(grep -m1 -o 'error: .*' <<< "$out")"

# A port that accepts and never speaks is not a file door: refused in seconds,
# not after all of --fetch-wait-s.
python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
held = []
while True:
    held.append(s.accept()[0])' "$silent" &
bg+=($!)
start=$(date +%s)
out=$(timeout 60 env SPINDLE_CLUSTER_TOKEN="$SPINDLE_CLUSTER_TOKEN" "$spindle" node --config "$work/cluster.toml" \
  --rank 1 --dataset "$work/r1/parts" --model "$work/r1/m" --fetch-from "127.0.0.1:$silent" --fetch-wait-s 50 2>&1) &&
  fail "a rank fetching from a silent port ran: $out"
took=$(( $(date +%s) - start ))
grep -q "127.0.0.1:$silent accepted the connection but sent no challenge .*: it is not a Spindle file door" <<< "$out" ||
  fail "the refusal does not name the silent port as no file door: $out"
[ "$took" -lt 20 ] || fail "a silent port kept the rank $took s (--fetch-wait-s 50)"
echo "silent port: refused in $took s: $(grep -m1 -o 'error: .*' <<< "$out")"

(rank1) > "$work/rank1.log" 2>&1 &  # the subshell execs the node: $! is its pid
pid=$!
staging="$work/r1/parts/.rank-1.fetching"
for _ in $(seq 200); do
  [ -n "$(find "$staging" -name '*.part' -size +300k 2> /dev/null)" ] && break
  sleep 0.05
done
kill -9 "$pid"; wait "$pid" 2> /dev/null
[ -d "$staging" ] || fail "no staging folder after the kill: $(ls -a "$work/r1/parts" 2>&1)"
[ ! -e "$work/r1/parts/rank-1" ] || fail "a half-fetched partition is in place"
bytes_in() { find "$1" -type f -printf '%s\n' | awk '{n += $1} END {print n + 0}'; }
held=$(bytes_in "$staging")
echo "killed mid-fetch: $held bytes in $staging, no rank-1 folder"

(rank1) > "$work/rank1.log" 2>&1 &
bg+=($!)
for _ in $(seq 600); do grep -q "^ready" "$work/rank1.log" && break; sleep 0.1; done
grep -q "^ready" "$work/rank1.log" || fail "rank 1 did not start again: $(tail -5 "$work/rank1.log")"
line=$(grep -m1 "fetched dataset" "$work/rank1.log")
resumed=$(sed -n 's/.*(\([0-9]*\) bytes of partial files resumed.*/\1/p' <<< "$line")
[ -n "$resumed" ] || fail "no fetch report: $line"
kept=$(sed -n 's/.*: \([0-9]*\) files, .*/\1/p' <<< "$line")
echo "started again: ${line#*] }"
diff -r "$work/parts/rank-1" "$work/r1/parts/rank-1" > /dev/null || fail "the fetched partition differs from rank 0's"
diff -r "$work/m" "$work/r1/m" > /dev/null || fail "the fetched model differs from rank 0's"
[ ! -e "$staging" ] || fail "the staging folder is still there"
# Continued, not fetched again: the bytes received now are exactly those the
# killed rank had not written (partial files continued, whole ones kept).
total=$(bytes_in "$work/parts/rank-1")
got=$(sed -n 's/.*files, \([0-9]*\) bytes (.*/\1/p' <<< "$line")
[ "$got" -eq $((total - held)) ] || fail "received $got bytes of $total with $held on disk ($line)"
echo "node fetch: refused with another token; after kill -9 with $held of $total bytes on disk, $got received ($resumed of them continuing partial files): partition and model equal rank 0's"
