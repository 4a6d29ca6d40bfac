// Placement evaluator: replays a request stream (seeds drawn from p_0, k-hop
// sampled by the real sampler) against a plan and the topology's link model, and
// estimates each request's feature-aggregation latency as Quiver's "last feature"
// latency: the slowest link used, where one link's time is its latency plus the
// bytes read over it divided by its bandwidth (reads on one link are batched).
// Pure; thread-safe for distinct plans.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "config/topology.hpp"
#include "core/status.hpp"
#include "features/placement.hpp"
#include "graph/csr.hpp"

namespace spindle::features {

struct eval_options {
  std::size_t requests = 1000;       // requests replayed
  std::size_t batch = 64;            // seeds per request
  std::vector<int> fanouts{25, 10};  // the sampler's fanouts
  std::uint64_t seed = 1;            // seeds and sampling are deterministic per seed
};

struct eval_result {
  std::vector<double> latency_us;  // per request
  double p50_us = 0, p99_us = 0, mean_us = 0;
  std::array<std::uint64_t, config::kLinkKinds> rows_per_link{};
  std::array<std::uint64_t, config::kLinkKinds> bytes_per_link{};
  std::uint64_t rows = 0;  // feature rows fetched over all requests
  /// Share of rows served over link `k` (local, nvlink, ...).
  double share(config::link_kind k) const;
};

/// Readers are the topology's devices taken round-robin, one per request (a
/// server with no devices reads from its host process). Each row comes from its
/// nearest owner (lowest single-row cost). `p0` must sum to 1 over the graph's nodes.
expected<eval_result> evaluate_placement(const config::topology& topo, const placement_plan& plan,
                                         const graph::csr_view& g, std::span<const double> p0,
                                         const eval_options& options);

}  // namespace spindle::features
