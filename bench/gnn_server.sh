# Sourced by the GNN serving benchmarks: start_gnn_server SPINDLE DATA WORK
# starts `spindle serve` of a GraphSAGE 128-256-47 (seed 1) on DATA behind a
# Cap'n Proto door on loopback, its log in WORK/serve.log; sets $server (pid)
# and $door (HOST:PORT), or exits naming why. print_cpu_ceiling prints what
# the machine's cores could serve at the measured CPU per call.
start_gnn_server() {
  "$1" model init --arch graphsage --in 128 --hidden 256 --classes 47 --seed 1 \
    --out-dir "$3/m" > /dev/null
  "$1" serve --dataset "$2" --model "$3/m" --listen 127.0.0.1:0 > "$3/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do grep -q '^listening ' "$3/serve.log" && break; sleep 0.2; done
  door=$(sed -n 's/^listening //p' "$3/serve.log")
  [ -n "$door" ] || { echo "the server did not listen"; tail "$3/serve.log"; exit 1; }
}

# print_cpu_ceiling SERVER_US CLIENT_US SERVED [PEER]: the calls a second this
# machine's cores could serve if every cycle went to the server and the load
# generator at these costs a call, beside what was served (and PEER's rate).
print_cpu_ceiling() {
  /usr/bin/python3 - "$1" "$2" "$3" "${4:-0}" "$(nproc)" <<'PY'
import sys
server_us, client_us, served, peer, cores = map(float, sys.argv[1:])
ceiling = cores / ((server_us + client_us) * 1e-6) if server_us + client_us > 0 else 0
vs_peer = " (%.2fx the plain script)" % (ceiling / peer) if peer > 0 else ""
print("CPU per call: server %.1f us, load generator %.1f us; at these costs %d cores serve at"
      " most %.0f calls/s%s; served %.0f, %.0f%% of it"
      % (server_us, client_us, cores, ceiling, vs_peer, served,
         100 * served / ceiling if ceiling > 0 else 0))
PY
}
