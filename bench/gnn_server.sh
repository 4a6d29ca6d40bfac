# Sourced by the GNN serving benchmarks: start_gnn_server SPINDLE DATA WORK
# starts `spindle serve` of a GraphSAGE 128-256-47 (seed 1) on DATA behind a
# Cap'n Proto door on loopback, its log in WORK/serve.log; sets $server (pid)
# and $door (HOST:PORT), or exits naming why.
start_gnn_server() {
  "$1" model init --arch graphsage --in 128 --hidden 256 --classes 47 --seed 1 \
    --out-dir "$3/m" > /dev/null
  "$1" serve --dataset "$2" --model "$3/m" --listen 127.0.0.1:0 > "$3/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do grep -q '^listening ' "$3/serve.log" && break; sleep 0.2; done
  door=$(sed -n 's/^listening //p' "$3/serve.log")
  [ -n "$door" ] || { echo "the server did not listen"; tail "$3/serve.log"; exit 1; }
}
