#include "features/feature_tiers.hpp"

#include <algorithm>
#include <numeric>

namespace spindle::features {

namespace {

double score_of(std::span<const double> fap, std::int64_t v) {
  return std::size_t(v) < fap.size() ? fap[std::size_t(v)] : 0.0;
}

// The `count` highest-FAP nodes, ties by id.
std::vector<std::int64_t> hottest(std::span<const double> fap, std::int64_t num_nodes,
                                  std::int64_t count) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(num_nodes));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::partial_sort(order.begin(), order.begin() + count, order.end(),
                    [&](std::int64_t a, std::int64_t b) {
                      const double sa = score_of(fap, a), sb = score_of(fap, b);
                      return sa != sb ? sa > sb : a < b;
                    });
  order.resize(std::size_t(count));
  return order;
}

std::int64_t rows_fitting(std::size_t bytes, std::int64_t dim, std::int64_t num_nodes) {
  const std::size_t row_bytes = std::size_t(std::max<std::int64_t>(dim, 1)) * sizeof(float);
  return std::int64_t(std::min<std::size_t>(bytes / row_bytes, std::size_t(num_nodes)));
}

// Tiers holding exactly `nodes` on the device (in that row order), the rest on the host.
feature_tiers tiers_holding(std::span<const double> fap, std::int64_t num_nodes,
                            std::span<const std::int64_t> nodes) {
  feature_tiers t;
  t.tier.assign(std::size_t(num_nodes), 1);
  t.row.resize(std::size_t(num_nodes));
  std::iota(t.row.begin(), t.row.end(), std::int64_t{0});
  double total = 0, kept = 0;
  for (std::int64_t v = 0; v < num_nodes; ++v) total += score_of(fap, v);
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    const std::int64_t v = nodes[r];
    t.tier[std::size_t(v)] = 0;
    t.row[std::size_t(v)] = std::int64_t(r);
    t.device_nodes.push_back(v);
    kept += score_of(fap, v);
  }
  t.device_fap_share = total > 0 ? kept / total : 0;
  return t;
}

}  // namespace

feature_tiers plan_feature_tiers(std::span<const double> fap, std::int64_t num_nodes,
                                 std::int64_t dim, std::size_t device_bytes) {
  const auto order = hottest(fap, num_nodes, rows_fitting(device_bytes, dim, num_nodes));
  return tiers_holding(fap, num_nodes, order);
}

gpu_tiers plan_gpu_tiers(std::span<const double> fap, std::int64_t num_nodes, std::int64_t dim,
                         std::size_t device_bytes_per_gpu, int gpus, bool partition) {
  gpu_tiers out;
  gpus = std::max(gpus, 1);
  if (!partition || gpus == 1) {
    auto t = plan_feature_tiers(fap, num_nodes, dim, device_bytes_per_gpu);
    out.device_fap_share = t.device_fap_share;
    out.per_gpu.assign(std::size_t(gpus), t);
    return out;
  }
  const std::int64_t per_gpu = rows_fitting(device_bytes_per_gpu, dim, num_nodes);
  const auto order = hottest(fap, num_nodes, std::min(num_nodes, per_gpu * gpus));
  std::vector<std::vector<std::int64_t>> held(static_cast<std::size_t>(gpus));
  out.owner.assign(std::size_t(num_nodes), -1);
  for (std::size_t r = 0; r < order.size(); ++r) {  // dealt in FAP order: balanced mass
    const int g = int(r % std::size_t(gpus));
    held[std::size_t(g)].push_back(order[r]);
    out.owner[std::size_t(order[r])] = g;
  }
  for (int g = 0; g < gpus; ++g) {
    out.per_gpu.push_back(tiers_holding(fap, num_nodes, held[std::size_t(g)]));
    out.device_fap_share += out.per_gpu.back().device_fap_share;
  }
  return out;
}

}  // namespace spindle::features
