#include "features/dataset_placement.hpp"

#include <algorithm>

#include "graph/metrics.hpp"
#include "graph/prepare.hpp"

namespace spindle::features {

std::uint64_t row_bytes_of(const graph::dataset& ds) {
  return std::uint64_t(ds.feature_dim()) * sizeof(float);
}

expected<placement_plan> place_dataset(const graph::dataset& ds, const config::topology& topo,
                                       std::string_view policy, std::uint64_t seed) {
  if (ds.feature_dim() <= 0 || (ds.features().empty() && !ds.partitioned()))
    return make_error(errc::invalid_argument, "{}: dataset has no features to place", ds.dir());
  if (!ds.has_metrics())
    return make_error(errc::invalid_argument,
                      "{}: dataset has no FAP; run `spindle prepare {}` first", ds.dir(), ds.dir());
  SPINDLE_ASSIGN_OR_RETURN(auto p, make_policy(policy));
  auto degree = graph::in_degrees(ds.graph());
  return p->place(topo, {ds.fap(), degree, row_bytes_of(ds), seed});
}

expected<placement_plan> replace_dataset(const graph::dataset& ds, const config::topology& topo,
                                         std::span<const double> fap,
                                         std::span<const std::int32_t> home) {
  if (fap.size() != std::size_t(ds.num_nodes()))
    return make_error(errc::invalid_argument, "{}: observed FAP has {} entries, the graph {} nodes",
                      ds.dir(), fap.size(), ds.num_nodes());
  if (!home.empty() && home.size() != fap.size())
    return make_error(errc::invalid_argument, "{}: {} previous homes for {} nodes", ds.dir(),
                      home.size(), fap.size());
  SPINDLE_ASSIGN_OR_RETURN(auto p, make_policy("fap"));
  auto degree = graph::in_degrees(ds.graph());
  placement_input in{fap, degree, row_bytes_of(ds), 1};
  in.previous_server = home;
  return p->place(topo, in);
}

std::uint64_t rows_moved(const placement_plan& a, const placement_plan& b) {
  const auto n = std::min(a.lookup.num_nodes(), b.lookup.num_nodes());
  std::uint64_t moved = 0;
  std::vector<shard_index> sa, sb;
  for (std::uint64_t v = 0; v < n; ++v) {
    sa.clear();
    sb.clear();
    for (const auto& o : a.lookup.locate(v).owners) sa.push_back(o.shard);
    for (const auto& o : b.lookup.locate(v).owners) sb.push_back(o.shard);
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    moved += sa != sb;
  }
  return moved;
}

expected<eval_result> evaluate_dataset(const graph::dataset& ds, const config::topology& topo,
                                       const placement_plan& plan, eval_options options) {
  if (options.fanouts.empty()) options.fanouts = ds.metadata().fanouts;
  if (options.fanouts.empty())
    return make_error(errc::invalid_argument, "{}: no fanouts recorded; pass --fanouts", ds.dir());
  SPINDLE_ASSIGN_OR_RETURN(auto p0, graph::request_seed_probabilities(
                                         ds.graph(), ds.metadata(),
                                         graph::recorded_metrics_request(ds.metadata())));
  return evaluate_placement(topo, plan, ds.graph(), p0, options);
}

}  // namespace spindle::features
