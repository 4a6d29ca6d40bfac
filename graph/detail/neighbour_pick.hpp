// Choosing which neighbours of one node a hop samples: uniform without
// replacement (Floyd's algorithm) and edge-weighted without replacement
// (Efraimidis-Spirakis exponential keys). Pure; callers own the scratch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/detail/rng.hpp"

namespace spindle::graph::detail {

/// Appends min(deg, fanout) distinct positions in [0, deg) to `out`, each
/// subset equally likely. fanout < 0 takes every position.
inline void pick_uniform(rng& r, std::int64_t deg, int fanout, std::vector<std::int64_t>& out) {
  if (fanout < 0 || deg <= fanout) {
    for (std::int64_t i = 0; i < deg; ++i) out.push_back(i);
    return;
  }
  if (fanout >
      gpu::kMaxFloydFanout) {  // Floyd's membership scan is O(l^2): use a partial shuffle instead
    std::vector<std::int64_t> pos(static_cast<std::size_t>(deg));
    for (std::int64_t i = 0; i < deg; ++i) pos[i] = i;
    for (std::int64_t i = 0; i < fanout; ++i) {
      std::swap(pos[i],
                pos[i + static_cast<std::int64_t>(r.below(static_cast<std::uint64_t>(deg - i)))]);
      out.push_back(pos[i]);
    }
    return;
  }
  // Floyd's draw, the very function the CUDA sampling kernel runs.
  const std::size_t base = out.size();
  out.resize(base + static_cast<std::size_t>(fanout));
  gpu::floyd_draw(r, deg, fanout, out.data() + base);
}

/// Appends up to `fanout` positions drawn without replacement with probability
/// proportional to weight (A-ES keys u^(1/w)); zero-weight edges are never drawn.
inline void pick_weighted(rng& r, const float* weights, std::int64_t deg, int fanout,
                          std::vector<std::pair<double, std::int64_t>>& keys,
                          std::vector<std::int64_t>& out) {
  keys.clear();
  for (std::int64_t i = 0; i < deg; ++i)
    if (weights[i] > 0) keys.emplace_back(std::log(r.unit_open0()) / weights[i], i);
  std::size_t take = fanout < 0 ? keys.size() : std::min<std::size_t>(keys.size(), fanout);
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(take), keys.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < take; ++i) out.push_back(keys[i].second);
}

}  // namespace spindle::graph::detail
