// A live graph's PSGS upkeep (live_graph::refresh_psgs): the PSGS of the rows a
// batch changed and of the nodes it added, recomputed exactly through the delta
// by the rule the dataset's metrics used (graph/metrics.hpp untyped,
// graph/typed_metrics.hpp per edge-type segment on a typed graph).
#include "graph/live_graph.hpp"
#include "graph/metrics.hpp"
#include "graph/typed_metrics.hpp"

namespace spindle::graph {

void live_graph::refresh_psgs(graph_delta& d, const std::vector<std::int64_t>& nodes) const {
  if (options_.psgs_fanouts.empty()) return;
  constexpr std::int64_t kBudget = std::int64_t{1} << 20;  // neighbours read per node
  std::vector<std::int64_t> scratch;
  std::vector<float> scratch_w;
  const csr_view base = base_of(d);
  auto keep = [&](std::int64_t v, double q) {  // a negative q: past the budget, kept stale
    if (q < 0)
      ++d.psgs_stale;
    else
      d.psgs.set(v, q);
  };
  if (!options_.node_types.empty()) {  // per edge-type segment, as the typed sampler takes them
    std::vector<std::int16_t> scratch_t;
    auto row = [&](std::int64_t v, std::vector<std::int64_t>& out, std::vector<std::int16_t>& t) {
      const auto r = read_row(base, d, v, scratch, scratch_w, &scratch_t);
      out.assign(r.neighbours.begin(), r.neighbours.end());
      t.assign(r.types.begin(), r.types.end());
    };
    auto segments = [&](std::int64_t v, std::vector<std::int64_t>& sizes) {
      if (d.removed.empty() && v < base.num_nodes && !d.rows.find(v)) {  // the base's, in place
        const auto b = base.indptr[v];
        return segment_sizes({base.edge_types.data() + b, std::size_t(base.indptr[v + 1] - b)}, sizes);
      }
      segment_sizes(read_row(base, d, v, scratch, scratch_w, &scratch_t).types, sizes);
    };
    for (std::int64_t v : nodes) keep(v, typed_node_psgs(v, options_.psgs_fanouts, row, segments, kBudget));
    return;
  }
  auto degree = [&](std::int64_t v) { return degree_at(d, v); };
  auto neighbours = [&](std::int64_t v, std::vector<std::int64_t>& out) {
    const auto r = read_row(base, d, v, scratch, scratch_w);
    out.assign(r.neighbours.begin(), r.neighbours.end());
  };
  for (std::int64_t v : nodes) keep(v, node_psgs(v, options_.psgs_fanouts, degree, neighbours, kBudget));
}

}  // namespace spindle::graph
