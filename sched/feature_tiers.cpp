#include "sched/feature_tiers.hpp"

#include <algorithm>
#include <numeric>

namespace spindle::sched {

feature_tiers plan_feature_tiers(std::span<const double> fap, std::int64_t num_nodes,
                                 std::int64_t dim, std::size_t device_bytes) {
  feature_tiers t;
  t.tier.assign(std::size_t(num_nodes), 1);
  t.row.resize(std::size_t(num_nodes));
  std::iota(t.row.begin(), t.row.end(), std::int64_t{0});
  const std::size_t row_bytes = std::size_t(std::max<std::int64_t>(dim, 1)) * sizeof(float);
  const auto fits =
      std::int64_t(std::min<std::size_t>(device_bytes / row_bytes, std::size_t(num_nodes)));
  std::vector<std::int64_t> order(static_cast<std::size_t>(num_nodes));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  auto score = [&](std::int64_t v) {
    return std::size_t(v) < fap.size() ? fap[std::size_t(v)] : 0.0;
  };
  std::partial_sort(order.begin(), order.begin() + fits, order.end(),
                    [&](std::int64_t a, std::int64_t b) {
                      return score(a) != score(b) ? score(a) > score(b) : a < b;
                    });
  double total = 0, kept = 0;
  for (std::int64_t v = 0; v < num_nodes; ++v) total += score(v);
  for (std::int64_t r = 0; r < fits; ++r) {
    const std::int64_t v = order[std::size_t(r)];
    t.tier[std::size_t(v)] = 0;
    t.row[std::size_t(v)] = r;
    t.device_nodes.push_back(v);
    kept += score(v);
  }
  t.device_fap_share = total > 0 ? kept / total : 0;
  return t;
}

}  // namespace spindle::sched
