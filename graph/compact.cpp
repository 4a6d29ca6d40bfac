#include "graph/compact.hpp"

#include <algorithm>
#include <filesystem>

#include "graph/live_graph.hpp"

namespace spindle::graph {
namespace {

// The CSR at `d`: every row read through the delta (removed nodes: empty rows).
csr_graph csr_at(const csr_view& base, const graph_delta& d) {
  csr_graph g;
  g.num_nodes = d.num_nodes;
  g.indptr.reserve(std::size_t(d.num_nodes) + 1);
  g.indptr.push_back(0);
  const bool wide = needs_wide_indices(d.num_nodes);
  std::vector<std::int64_t> scratch;
  std::vector<float> scratch_w;
  std::int64_t edges = 0;
  for (std::int64_t v = 0; v < d.num_nodes; ++v) {
    if (!d.is_removed(v)) {
      const auto r = read_row(base, d, v, scratch, scratch_w);
      for (auto n : r.neighbours) {
        if (wide)
          g.indices64.push_back(n);
        else
          g.indices32.push_back(std::int32_t(n));
      }
      if (base.weighted()) g.edge_weight.insert(g.edge_weight.end(), r.weights.begin(), r.weights.end());
      edges += std::int64_t(r.neighbours.size());
    }
    g.indptr.push_back(edges);
  }
  return g;
}

}  // namespace

std::uint64_t base_version(const dataset_metadata& m) {
  auto it = m.build.find(kGraphVersionKey);
  return it == m.build.end() ? 0 : std::stoull(it->second);
}

std::int64_t added_while_served(const dataset_metadata& m, const std::string& type) {
  auto it = m.build.find(std::string(kAddedWhileServed) + type);
  return it == m.build.end() ? 0 : std::stoll(it->second);
}

std::map<std::string, std::string> base_sources(const dataset_metadata& m) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : m.build)
    if (key.starts_with(kGraphSourcePrefix)) out[key.substr(kGraphSourcePrefix.size())] = value;
  return out;
}

status compact_dataset(const dataset& original, const graph_delta& d,
                       const std::map<std::string, std::string>& sources,
                       const std::string& out_dir) {
  const dataset& ds = d.base ? *d.base : original;  // the base d overlays
  if (ds.edge_attr_cols() > 0)  // the compacted CSR would lose them
    return make_error(errc::unsupported,
                      "{}: graph updates on a graph with edge attributes are not served yet "
                      "(nothing to compact)",
                      ds.dir());
  if (ds.typed()) return compact_typed_dataset(ds, d, sources, out_dir);
  const bool added = d.num_nodes > ds.num_nodes();
  if (added && !ds.node_ids().empty())
    return make_error(errc::unsupported,
                      "{}: names its nodes by input ids, and the {} added nodes have none",
                      ds.dir(), d.num_nodes - ds.num_nodes());
  if (added && std::filesystem::exists(ds.dir() + "/node_names.txt"))
    return make_error(errc::unsupported,
                      "{}: names its nodes (node_names.txt), and the {} added nodes have none",
                      ds.dir(), d.num_nodes - ds.num_nodes());
  dataset_metadata meta = ds.metadata();
  meta.arrays.clear();
  meta.fanouts.clear();
  meta.hop_mass.clear();
  meta.build[kGraphVersionKey] = std::to_string(d.version);
  meta.build["compacted_from"] = ds.dir();
  for (const auto& [stream, id] : sources) meta.build[std::string(kGraphSourcePrefix) + stream] = id;
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::create(out_dir, meta));
  const csr_graph g = csr_at(ds.graph(), d);
  SPINDLE_TRY(w.write_graph(g.view()));
  const std::int64_t f = ds.feature_dim();
  SPINDLE_TRY(w.write_features(d.num_nodes, f, [&](std::int64_t lo, std::int64_t hi, float* out) {
    for (std::int64_t v = lo; v < hi; ++v, out += f) feature_row_at(ds, d, v, out);
  }));
  if (!ds.labels().empty()) {
    std::vector<std::int64_t> labels(ds.labels().begin(), ds.labels().end());
    labels.resize(std::size_t(d.num_nodes), -1);
    SPINDLE_TRY(w.write_labels(labels, ds.metadata().num_classes));
  }
  if (!ds.node_ids().empty()) SPINDLE_TRY(w.write_node_ids(ds.node_ids()));
  std::vector<std::int64_t> removed;
  d.removed.for_each([&](std::int64_t v, std::uint64_t) { removed.push_back(v); });
  d.retired.for_each([&](std::int64_t v, std::uint64_t) { removed.push_back(v); });
  std::sort(removed.begin(), removed.end());
  if (!removed.empty()) SPINDLE_TRY(w.write_removed_nodes(removed));
  SPINDLE_TRY(copy_node_names(ds, out_dir));
  return w.finish();
}

void feature_row_at(const dataset& ds, const graph_delta& d, std::int64_t v, float* out) {
  const std::int64_t f = ds.feature_dim();
  if (const auto* row = d.features.find(v))
    std::copy((*row)->begin(), (*row)->end(), out);
  else if (v < ds.num_nodes())
    std::copy(ds.feature_row(v), ds.feature_row(v) + f, out);
  else
    std::fill(out, out + f, 0.0f);
}

status copy_node_names(const dataset& ds, const std::string& out_dir) {
  if (!ds.metadata().build.count("node_names")) return status::ok();
  std::error_code ec;
  std::filesystem::copy_file(ds.dir() + "/node_names.txt", out_dir + "/node_names.txt",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return make_error(errc::io_error, "{}/node_names.txt: copy: {}", out_dir, ec.message());
  return status::ok();
}

}  // namespace spindle::graph
