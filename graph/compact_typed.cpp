// Offline compaction of a typed graph (graph/compact.hpp). A typed dataset
// holds each node type as one contiguous range of global ids, but nodes added
// while serving sit past the base's last id, whatever their type. Compaction
// numbers every type's nodes anew, its base nodes first, then its added ones in
// the order they were added: each node keeps its type and its id within the
// type (what calls, updates and embedding tables name), and only the global ids
// (the server's own) change. Rows are renumbered and sorted by (edge type,
// neighbour), as `spindle prepare` writes them.
#include <algorithm>
#include <fstream>
#include <numeric>
#include <tuple>

#include "graph/compact.hpp"
#include "graph/live_graph.hpp"
#include "graph/metrics.hpp"
#include "graph/typing.hpp"

namespace spindle::graph {
namespace {

// Global ids at d, old -> new and new -> old, and the node types' new ranges.
struct renumbering {
  std::vector<std::int64_t> to_new, to_old;
  std::vector<node_type_info> types;
};

expected<renumbering> renumber(std::span<const node_type_info> types, const graph_delta& d) {
  renumbering r;
  r.to_new.assign(std::size_t(d.num_nodes), -1);
  r.to_old.reserve(std::size_t(d.num_nodes));
  for (int t = 0; t < int(types.size()); ++t) {
    node_type_info info = types[std::size_t(t)];
    info.offset = std::int64_t(r.to_old.size());
    info.count = type_count_at(types, &d, t);  // removed nodes keep their ids
    for (std::int64_t local = 0; local < info.count; ++local) {
      const std::int64_t v = global_id_at(types, &d, t, local);
      if (v < 0 || v >= d.num_nodes || r.to_new[std::size_t(v)] >= 0)
        return make_error(errc::internal, "node type '{}' id {}: global id {} is not a node of "
                          "the graph at version {}", info.name, local, v, d.version);
      r.to_new[std::size_t(v)] = std::int64_t(r.to_old.size());
      r.to_old.push_back(v);
    }
    r.types.push_back(std::move(info));
  }
  if (std::int64_t(r.to_old.size()) != d.num_nodes)
    return make_error(errc::internal, "the node types hold {} of the graph's {} nodes at version {}",
                      r.to_old.size(), d.num_nodes, d.version);
  return r;
}

// The CSR at d in the new numbering; each edge type's count into `edge_types`.
csr_graph renumbered_csr(const csr_view& base, const graph_delta& d, const renumbering& r,
                         std::vector<edge_type_info>& edge_types) {
  csr_graph g;
  g.num_nodes = d.num_nodes;
  g.num_edge_types = base.num_edge_types;
  g.indptr.reserve(std::size_t(d.num_nodes) + 1);
  g.indptr.push_back(0);
  const bool wide = needs_wide_indices(d.num_nodes), weighted = base.weighted();
  for (auto& e : edge_types) e.count = 0;
  std::vector<std::int64_t> scratch;
  std::vector<float> scratch_w;
  std::vector<std::int16_t> scratch_t;
  std::vector<std::tuple<std::int16_t, std::int64_t, float>> row;
  for (std::int64_t w = 0; w < d.num_nodes; ++w) {
    const std::int64_t v = r.to_old[std::size_t(w)];
    row.clear();
    if (!d.is_removed(v)) {
      const auto rr = read_row(base, d, v, scratch, scratch_w, &scratch_t);
      for (std::size_t i = 0; i < rr.neighbours.size(); ++i)
        row.emplace_back(rr.types[i], r.to_new[std::size_t(rr.neighbours[i])],
                         weighted ? rr.weights[i] : 0.0f);
    }
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    for (const auto& [t, n, weight] : row) {
      if (wide)
        g.indices64.push_back(n);
      else
        g.indices32.push_back(std::int32_t(n));
      g.edge_types.push_back(t);
      if (weighted) g.edge_weight.push_back(weight);
      ++edge_types[std::size_t(t)].count;
    }
    g.indptr.push_back(g.indptr.back() + std::int64_t(row.size()));
  }
  return g;
}

// Labels, removed nodes and features in the new numbering.
status write_rows(dataset_writer& w, const dataset& ds, const graph_delta& d,
                  const renumbering& r) {
  const std::int64_t f = ds.feature_dim();
  SPINDLE_TRY(w.write_features(d.num_nodes, f, [&](std::int64_t lo, std::int64_t hi, float* out) {
    for (std::int64_t n = lo; n < hi; ++n, out += f)
      feature_row_at(ds, d, r.to_old[std::size_t(n)], out);
  }));
  if (!ds.labels().empty()) {
    std::vector<std::int64_t> labels(std::size_t(d.num_nodes), -1);
    for (std::int64_t n = 0; n < d.num_nodes; ++n) {
      const std::int64_t v = r.to_old[std::size_t(n)];
      if (v < ds.num_nodes()) labels[std::size_t(n)] = ds.labels()[std::size_t(v)];
    }
    SPINDLE_TRY(w.write_labels(labels, ds.metadata().num_classes));
  }
  std::vector<std::int64_t> removed;
  auto add = [&](std::int64_t v, std::uint64_t) { removed.push_back(r.to_new[std::size_t(v)]); };
  d.removed.for_each(add);
  d.retired.for_each(add);
  std::sort(removed.begin(), removed.end());
  if (!removed.empty()) SPINDLE_TRY(w.write_removed_nodes(removed));
  return status::ok();
}

// A seed file names global ids: where the renumbering moved any, its ids are
// written renumbered into the new dataset (kRenumberedSeeds).
status renumber_seed_file(const dataset_metadata& meta, const renumbering& r,
                          const std::string& out) {
  if (meta.seed_distribution.empty()) return status::ok();  // no metrics
  const auto dist = config::parse_seed_distribution(meta.seed_distribution);
  if (dist.kind != config::seed_distribution_kind::file) return status::ok();
  bool moved = false;
  for (std::size_t v = 0; v < r.to_new.size() && !moved; ++v) moved = r.to_new[v] != std::int64_t(v);
  if (!moved) return status::ok();
  SPINDLE_ASSIGN_OR_RETURN(auto ids, read_seed_file(dist.path));
  const std::string path = out + "/" + kRenumberedSeeds;
  std::ofstream f(path, std::ios::trunc);
  for (auto v : ids)  // an id out of range stays, for the metrics to refuse by name
    f << (v >= 0 && v < std::int64_t(r.to_new.size()) ? r.to_new[std::size_t(v)] : v) << "\n";
  f.flush();
  if (!f) return make_error(errc::io_error, "{}: cannot write", path);
  return status::ok();
}

}  // namespace

status compact_typed_dataset(const dataset& ds, const graph_delta& d,
                             const std::map<std::string, std::string>& sources,
                             const std::string& out_dir) {
  const bool named = !ds.node_ids().empty() || ds.metadata().build.count("node_names") > 0;
  if (d.num_nodes > ds.num_nodes() && named)
    return make_error(errc::unsupported,
                      "{}: names its nodes by input ids, and the {} added nodes have none",
                      ds.dir(), d.num_nodes - ds.num_nodes());
  SPINDLE_ASSIGN_OR_RETURN(const auto r, renumber(ds.node_types(), d));
  dataset_metadata meta = ds.metadata();
  meta.arrays.clear();
  meta.fanouts.clear();
  meta.hop_mass.clear();
  meta.node_types = r.types;
  for (std::size_t t = 0; t < r.types.size(); ++t) {  // kept across compactions
    const auto& name = r.types[t].name;
    const std::int64_t added = added_while_served(ds.metadata(), name) + r.types[t].count -
                               ds.node_types()[t].count;
    if (added > 0) meta.build[std::string(kAddedWhileServed) + name] = std::to_string(added);
  }
  meta.build[kGraphVersionKey] = std::to_string(d.version);
  meta.build["compacted_from"] = ds.dir();
  for (const auto& [stream, id] : sources) meta.build[std::string(kGraphSourcePrefix) + stream] = id;
  const csr_graph g = renumbered_csr(ds.graph(), d, r, meta.edge_types);
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::create(out_dir, meta));
  SPINDLE_TRY(w.write_graph(g.view()));
  SPINDLE_TRY(write_rows(w, ds, d, r));
  SPINDLE_TRY(renumber_seed_file(ds.metadata(), r, out_dir));
  // Names only where no node was added (above): the numbering is then the old one.
  if (!ds.node_ids().empty()) SPINDLE_TRY(w.write_node_ids(ds.node_ids()));
  SPINDLE_TRY(copy_node_names(ds, out_dir));
  return w.finish();
}

}  // namespace spindle::graph
