// A cluster simulator over profile tables (Hera §VII, Figs. 11 and 15
// analogues): how many servers four model-selection policies need to serve
// target QPS per model, and their mean EMU. Hera is Algorithm 2; Hera-Random
// pairs each low-scalability model with a random high one; Random pairs a
// model still short of its target with any other model at random;
// DeepRecSys-style gives every model servers of its own. Co-located QPS is
// estimated as in colocated_qps (the simulator's model of interference).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "colocation/hera/colocation.hpp"

namespace spindle::colocation::hera {

enum class selection { hera, hera_random, random, isolation };
std::string_view to_string(selection s);

struct simulation {
  selection policy = selection::hera;
  std::size_t servers = 0;
  double mean_emu = 0;  // Σ over servers of Σ qps/isolated_qps, / servers
};

/// Servers and EMU of `policy` for `targets` (QPS per model); `seed` drives the
/// random policies.
expected<simulation> simulate(const profile_table& t, const std::map<std::string, double>& targets,
                              selection policy, std::uint64_t seed = 1,
                              double min_gain = kDefaultMinGain);

/// Targets for a cluster of about `servers` isolated servers: each model's
/// share of `mix` (weights) of that many servers' worth of its isolated QPS.
std::map<std::string, double> targets_for(const profile_table& t,
                                          const std::map<std::string, double>& mix,
                                          std::size_t servers);

}  // namespace spindle::colocation::hera
