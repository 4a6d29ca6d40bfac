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
status launch_plan_servers(const std::string& exe, const config::topology& topo,
                           const std::string& path, std::vector<launched_rank>& ranks,
                           plan_routes& routes);

/// The `--forward NAME=HOST:PORT,...` flags that send each model's calls to its
/// plan servers.
std::vector<std::string> forward_flags(const plan_routes& routes);

}  // namespace spindle::runtime
