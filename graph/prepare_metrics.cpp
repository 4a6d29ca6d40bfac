// The PSGS/FAP a dataset carries: which request seeds they are computed for
// (its seed distribution, restricted to seed node types on a typed graph), and
// their computation when a dataset is written or its metrics recomputed (typed
// graphs per edge type, graph/typed_metrics.hpp).
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "core/progress.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_json.hpp"
#include "graph/metrics.hpp"
#include "graph/prepare.hpp"
#include "graph/typed_metrics.hpp"

namespace spindle::graph {

metrics_request recorded_metrics_request(const dataset_metadata& meta) {
  metrics_request m;
  m.fanouts = meta.fanouts;
  m.seeds = config::parse_seed_distribution(
      meta.seed_distribution.empty() ? "uniform" : meta.seed_distribution);
  m.seed_node_types = meta.seed_node_types;
  return m;
}

namespace {

// p0 restricted to the request's seed node types (a typed graph's), renormalised.
status restrict_to_types(const dataset_metadata& meta, const metrics_request& m,
                         std::vector<double>& p0) {
  if (m.seed_node_types.empty()) return status::ok();
  if (meta.node_types.empty())
    return make_error(errc::invalid_argument,
                      "--seed-node-type {}: the graph is untyped (no node types)",
                      m.seed_node_types.front());
  std::vector<double> kept(p0.size(), 0.0);
  for (const auto& name : m.seed_node_types) {
    const auto t = std::find_if(meta.node_types.begin(), meta.node_types.end(),
                                [&](const auto& n) { return n.name == name; });
    if (t == meta.node_types.end()) {
      std::vector<std::string> names;
      for (const auto& n : meta.node_types) names.push_back(n.name);
      return make_error(errc::invalid_argument,
                        "--seed-node-type {}: no such node type (the graph has {})", name,
                        fmt::join(names, ", "));
    }
    for (std::int64_t v = t->offset; v < t->offset + t->count; ++v)
      kept[std::size_t(v)] = p0[std::size_t(v)];
  }
  const double total = std::accumulate(kept.begin(), kept.end(), 0.0);
  if (total <= 0)
    return make_error(errc::invalid_argument,
                      "--seed-node-type: the seed distribution gives those node types no seeds");
  for (auto& x : kept) x /= total;
  p0.swap(kept);
  return status::ok();
}

}  // namespace

expected<std::vector<double>> request_seed_probabilities(const csr_view& g,
                                                         const dataset_metadata& meta,
                                                         const metrics_request& m) {
  SPINDLE_ASSIGN_OR_RETURN(auto p0, seed_probabilities(g, m.seeds));
  SPINDLE_TRY(restrict_to_types(meta, m, p0));
  return p0;
}

status write_metrics_for(dataset_writer& w, const csr_view& g, const metrics_request& m,
                         thread_pool& pool) {
  SPINDLE_ASSIGN_OR_RETURN(auto p0, request_seed_probabilities(g, w.metadata(), m));
  progress prog("computing PSGS and FAP",
                static_cast<std::uint64_t>(g.num_edges()) * m.fanouts.size(), "edges");
  // A typed graph is sampled per edge type: its metrics count each row's segments.
  auto metrics = g.typed() ? compute_typed_metrics(g, per_edge_type(m.fanouts, g.num_edge_types),
                                                   p0, pool, &prog)
                           : compute_metrics(g, m.fanouts, p0, pool, &prog);
  if (!metrics) return std::move(metrics).error();
  prog.finish();
  return w.write_metrics(*metrics, m.fanouts, m.seeds.to_string(), m.seed_node_types);
}

status recompute_metrics(const std::string& dir, const metrics_request& m, thread_pool& pool) {
  SPINDLE_ASSIGN_OR_RETURN(auto d, dataset::open(dir));
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::update(dir));
  SPINDLE_TRY(write_metrics_for(w, d.graph(), m, pool));
  return w.finish();
}

}  // namespace spindle::graph
