// Hera's plan servers under `spindle launch`: Algorithm 2 pairs the cluster
// TOML's [colocation] models onto servers, each a `spindle serve` on a local
// rank's free loopback port that every door forwards to. One thread (launch's).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/topology.hpp"
#include "core/status.hpp"
#include "runtime/launched_ranks.hpp"

namespace spindle::runtime {

/// model name -> the HOST:PORT of every plan server serving it.
using plan_routes = std::map<std::string, std::vector<std::string>>;

/// Starts the plan servers of the [colocation] section of the cluster TOML at
/// `path` (none without one) with the binary `exe`, adding them to `ranks` and
/// their addresses to `routes`; prints "[plan] server I on rank R: ..." each.
/// `doors[r]`: rank r opens a door, which forwards to the plan servers. They
/// listen on the loopback ranks of this machine: a door on a host that is not
/// loopback could not reach them, and is refused by name before any starts.
status launch_plan_servers(const std::string& exe, const config::topology& topo,
                           const std::string& path, const std::vector<bool>& doors,
                           std::vector<launched_rank>& ranks, plan_routes& routes);

/// The `--forward NAME=HOST:PORT,...` flags that send each model's calls to its
/// plan servers.
std::vector<std::string> forward_flags(const plan_routes& routes);

}  // namespace spindle::runtime
