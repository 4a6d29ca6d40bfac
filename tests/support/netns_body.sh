# Sourced by the network-namespace tests. netns_probe TEST exits 77 (skipped)
# where namespaces cannot be made (it needs $name, the test's prefix). body() runs the test's checks() in the
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

netns_probe() {
  if ! ip netns add "${name}-probe" 2> /dev/null; then
    echo "$1: skipped: cannot create network namespaces here (needs root and iproute2)"
    exit 77
  fi
  ip netns del "${name}-probe"
}

# mpirun_netns_probe TEST: netns_probe, and exits 77 without mpirun or UTS
# namespaces (the mpirun tests' rsh agent names each namespace's host).
mpirun_netns_probe() {
  if ! command -v mpirun > /dev/null; then
    echo "$1: skipped: no mpirun here (Debian's Open MPI: apt-get install openmpi-bin)"
    exit 77
  fi
  netns_probe "$1"
  if ! unshare --uts true 2> /dev/null; then
    echo "$1: skipped: cannot create UTS namespaces here"
    exit 77
  fi
}
