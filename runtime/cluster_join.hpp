// A rank joining a running cluster (`spindle node --join HOST:PORT`): reaches
// rank 0 through its token gate, reads the member list, and picks its rank
// (--rank, or the next past every live one) and its own address, before it
// opens its dataset. Rank 0 then checks the rank again at the join itself.
#pragma once

#include <caf/all.hpp>
#include <string>

#include "config/topology.hpp"
#include "core/status.hpp"
#include "runtime/cluster_link.hpp"
#include "runtime/cluster_node.hpp"

namespace spindle::runtime {

struct join_target {
  int rank = -1;
  config::server_spec me;  // its name ("rank-R"), host and port (--address)
  std::string address;     // --address as announced to rank 0
  remote_link link;        // to rank 0's actor, through its gate
};

/// Connects to rank 0 at `a.join` with `token` (10 s), reads its members and
/// checks what it can before the join: errors name the --join address (no
/// answer, a refused token), the rank (a live member holds it, or it is the
/// TOML's) and --address.
expected<join_target> prepare_join(caf::actor_system& sys, const config::topology& topo,
                                   const node_args& a, const std::string& token);

}  // namespace spindle::runtime
