// The typing of an opened heterogeneous dataset: edge_types.npy mapped into
// the graph, every edge checked against the node types its type names, and
// the lookups by node id and type name (metadata: graph/typed_metadata.cpp).
#include <algorithm>
#include <set>

#include "graph/dataset.hpp"

namespace spindle::graph {

int dataset::node_type_of(std::int64_t v) const { return base_type_of(meta_.node_types, v); }

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
    const int d = base_type_of(types, v);
    for (std::int64_t e = graph_.indptr[v]; e < graph_.indptr[v + 1]; ++e) {
      const auto t = std::size_t(graph_.edge_types[std::size_t(e)]);
      const std::int64_t u = graph_.neighbour(e);
      const int s = base_type_of(types, u);
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
