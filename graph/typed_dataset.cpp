// The typing of a heterogeneous dataset: node types as contiguous id ranges,
// an edge type per stored edge (edge_types.npy). Checks metadata.json's
// node_types/edge_types and that every edge joins the node types its type names.
#include <algorithm>
#include <set>

#include "graph/dataset.hpp"

namespace spindle::graph {
namespace {

status validate_node_types(const dataset_metadata& m) {
  std::set<std::string_view> names;
  std::int64_t next = 0, widest = 0;
  for (std::size_t i = 0; i < m.node_types.size(); ++i) {
    const auto& t = m.node_types[i];
    if (t.name.empty())
      return make_error(errc::corrupt_data, "metadata.json: node_types[{}].name is empty", i);
    if (!names.insert(t.name).second)
      return make_error(errc::corrupt_data, "metadata.json: node_types[{}].name '{}' repeats", i,
                        t.name);
    if (t.offset != next)
      return make_error(errc::corrupt_data,
                        "metadata.json: node_types[{}].offset = {}, expected {} (offsets are "
                        "cumulative in list order)",
                        i, t.offset, next);
    if (t.count < 0 || t.feature_dim < 0)
      return make_error(errc::corrupt_data,
                        "metadata.json: node_types[{}] ('{}'): count {} and feature_dim {} must "
                        "be >= 0",
                        i, t.name, t.count, t.feature_dim);
    next += t.count;
    widest = std::max(widest, t.feature_dim);
  }
  if (next != m.num_nodes)
    return make_error(errc::corrupt_data,
                      "metadata.json: node_types' counts sum to {}, but num_nodes is {}", next,
                      m.num_nodes);
  if (widest != m.feature_dim)
    return make_error(errc::corrupt_data,
                      "metadata.json: feature_dim is {}, but the widest node type has {}",
                      m.feature_dim, widest);
  return status::ok();
}

status validate_edge_types(const dataset_metadata& m) {
  if (std::int64_t(m.edge_types.size()) > kMaxEdgeTypes)
    return make_error(errc::corrupt_data, "metadata.json: {} edge_types (at most {})",
                      m.edge_types.size(), kMaxEdgeTypes);
  auto known = [&](const std::string& name) {
    return std::any_of(m.node_types.begin(), m.node_types.end(),
                       [&](const node_type_info& t) { return t.name == name; });
  };
  std::int64_t total = 0;
  for (std::size_t i = 0; i < m.edge_types.size(); ++i) {
    const auto& t = m.edge_types[i];
    for (const auto& [field, name] : {std::pair{"src", &t.src}, std::pair{"dst", &t.dst}})
      if (!known(*name))
        return make_error(errc::corrupt_data,
                          "metadata.json: edge_types[{}].{} '{}' is not a node type", i, field,
                          *name);
    if (t.rel.empty())
      return make_error(errc::corrupt_data, "metadata.json: edge_types[{}].rel is empty", i);
    if (t.count < 0)
      return make_error(errc::corrupt_data, "metadata.json: edge_types[{}].count {} is negative", i,
                        t.count);
    total += t.count;
  }
  if (total != m.num_edges)
    return make_error(errc::corrupt_data,
                      "metadata.json: edge_types' counts sum to {}, but num_edges is {}", total,
                      m.num_edges);
  return status::ok();
}

int type_at(const std::vector<node_type_info>& types, std::int64_t v) {
  auto it = std::upper_bound(types.begin(), types.end(), v,
                             [](std::int64_t x, const node_type_info& t) { return x < t.offset; });
  return it == types.begin() ? 0 : int(it - types.begin()) - 1;
}

}  // namespace

status validate_types(const dataset_metadata& m) {
  if (!m.typed()) {
    if (!m.edge_types.empty())
      return make_error(errc::corrupt_data, "metadata.json: edge_types given without node_types");
    return status::ok();
  }
  SPINDLE_TRY(validate_node_types(m));
  return validate_edge_types(m);
}

int dataset::node_type_of(std::int64_t v) const { return type_at(meta_.node_types, v); }

expected<int> dataset::find_node_type(std::string_view name) const {
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < meta_.node_types.size(); ++i) {
    if (meta_.node_types[i].name == name) return int(i);
    names.push_back(meta_.node_types[i].name);
  }
  if (names.empty())
    return make_error(errc::invalid_argument, "node type '{}': {} is an untyped graph", name, dir_);
  return make_error(errc::invalid_argument, "node type '{}' is not one of {}'s: {}", name, dir_,
                    fmt::join(names, ", "));
}

status dataset::open_types() {
  const bool stored = meta_.arrays.count("edge_types") > 0;
  if (!meta_.typed()) {
    if (stored)
      return make_error(errc::corrupt_data,
                        "edge_types.npy is present but metadata.json has no node_types");
    return status::ok();
  }
  if (!stored)
    return make_error(errc::corrupt_data,
                      "metadata.json: a typed graph (node_types) needs arrays.edge_types");
  const array_record& r = meta_.arrays.at("edge_types");
  if (r.type != dtype::i16 || r.shape != std::vector<std::int64_t>{meta_.num_edges})
    return make_error(errc::corrupt_data, "{}: {} [{}], expected int16 [{}]", r.file,
                      to_string(r.type), fmt::join(r.shape, ", "), meta_.num_edges);
  SPINDLE_ASSIGN_OR_RETURN(graph_.edge_types, files_.at("edge_types").as<std::int16_t>());
  graph_.num_edge_types = std::int32_t(meta_.edge_types.size());
  return status::ok();
}

status dataset::check_edge_endpoints() const {
  if (!typed()) return status::ok();
  const auto& types = meta_.node_types;
  std::vector<int> src(meta_.edge_types.size()), dst(meta_.edge_types.size());
  for (std::size_t t = 0; t < src.size(); ++t) {
    src[t] = *find_node_type(meta_.edge_types[t].src);
    dst[t] = *find_node_type(meta_.edge_types[t].dst);
  }
  std::vector<std::int64_t> seen(src.size(), 0);
  for (auto t : graph_.edge_types) ++seen[std::size_t(t)];
  for (std::size_t t = 0; t < seen.size(); ++t)
    if (seen[t] != meta_.edge_types[t].count)
      return make_error(
          errc::corrupt_data,
          "edge_types.npy: {} edges of type {} but metadata.json: edge_types[{}].count "
          "says {}",
          seen[t], t, t, meta_.edge_types[t].count);
  for (std::int64_t v = 0; v < graph_.num_nodes; ++v) {
    const int d = type_at(types, v);
    for (std::int64_t e = graph_.indptr[v]; e < graph_.indptr[v + 1]; ++e) {
      const auto t = std::size_t(graph_.edge_types[std::size_t(e)]);
      const std::int64_t u = graph_.neighbour(e);
      const int s = type_at(types, u);
      if (s == src[t] && d == dst[t]) continue;
      const auto& et = meta_.edge_types[t];
      return make_error(errc::corrupt_data,
                        "edge_types.npy: edge_types[{}]={} ({}, {}, {}) but the edge joins node {} "
                        "({}) to node {} ({})",
                        e, t, et.src, et.rel, et.dst, u, types[std::size_t(s)].name, v,
                        types[std::size_t(d)].name);
    }
  }
  return status::ok();
}

}  // namespace spindle::graph
