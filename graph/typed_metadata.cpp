// metadata.json's typing of a heterogeneous dataset: node types as contiguous
// id ranges in list order, edge types naming them. Pure checks of the parsed
// metadata (graph/metadata.cpp calls them on every read).
#include <algorithm>
#include <set>
#include <string>

#include "core/checksum.hpp"
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

}  // namespace

std::uint64_t typing_checksum(const dataset_metadata& m) {
  // One line per type, its fields each ended by a NUL (names may hold any other byte).
  std::string text;
  auto put = [&](std::string_view field) {
    text.append(field);
    text.push_back('\0');
  };
  for (const auto& t : m.node_types) {
    for (std::string_view f : {std::string_view("n"), std::string_view(t.name)}) put(f);
    for (std::int64_t v : {t.offset, t.count, t.feature_dim}) put(std::to_string(v));
    text.push_back('\n');
  }
  for (const auto& t : m.edge_types) {
    for (std::string_view f : {std::string_view("e"), std::string_view(t.src),
                               std::string_view(t.rel), std::string_view(t.dst)})
      put(f);
    put(std::to_string(t.count));
    text.push_back('\n');
  }
  return checksum(text.data(), text.size());
}

status validate_types(const dataset_metadata& m) {
  if (!m.typed()) {
    if (!m.edge_types.empty())
      return make_error(errc::corrupt_data, "metadata.json: edge_types given without node_types");
    return status::ok();
  }
  SPINDLE_TRY(validate_node_types(m));
  return validate_edge_types(m);
}

}  // namespace spindle::graph
