# Sourced by the network-namespace tests: body() runs the test's checks() in the
# namespaces' shell and stops the processes it started in the background
# (their pids in bg) there, before the namespaces go. Export both with
# `export -f body checks` and run `netns-cluster.sh run ... -- bash -c body`.
body() {
  bg=()
  checks
  local rc=$?
  for p in "${bg[@]}"; do kill -TERM "$p" 2> /dev/null; done
  for p in "${bg[@]}"; do wait "$p" 2> /dev/null; done
  return $rc
}
