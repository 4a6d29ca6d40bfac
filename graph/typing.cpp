#include "graph/typing.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "graph/graph_delta.hpp"

namespace spindle::graph {

int base_type_of(std::span<const node_type_info> types, std::int64_t v) {
  auto it = std::upper_bound(types.begin(), types.end(), v,
                             [](std::int64_t x, const node_type_info& t) { return x < t.offset; });
  return it == types.begin() ? 0 : int(it - types.begin()) - 1;
}

int node_type_at(std::span<const node_type_info> types, const graph_delta* d, std::int64_t v) {
  if (v < 0 || types.empty()) return -1;
  const std::int64_t base = d ? d->base_nodes : types.back().offset + types.back().count;
  if (v < base) return base_type_of(types, v);
  if (!d) return -1;
  const added_node* a = d->added.find(v);
  return a ? a->type : -1;
}

std::int64_t local_id_at(std::span<const node_type_info> types, const graph_delta* d,
                         std::int64_t v) {
  const int t = node_type_at(types, d, v);
  if (t < 0) return -1;
  const auto& info = types[std::size_t(t)];
  if (v < info.offset + info.count) return v - info.offset;
  return d->added.find(v)->local;
}

std::int64_t type_count_at(std::span<const node_type_info> types, const graph_delta* d, int t) {
  if (t < 0 || std::size_t(t) >= types.size()) return 0;
  const std::int64_t added =
      d && std::size_t(t) < d->added_per_type.size() ? d->added_per_type[std::size_t(t)] : 0;
  return types[std::size_t(t)].count + added;
}

std::int64_t global_id_at(std::span<const node_type_info> types, const graph_delta* d, int t,
                          std::int64_t local) {
  if (local < 0 || local >= type_count_at(types, d, t)) return -1;
  const auto& info = types[std::size_t(t)];
  if (local < info.count) return info.offset + local;
  const std::int64_t* g = d->added_globals.find(graph_delta::added_key(t, local - info.count));
  return g ? *g : -1;
}

std::string edge_type_name(const edge_type_info& e) {
  return fmt::format("{},{},{}", e.src, e.rel, e.dst);
}

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

expected<int> find_edge_type(std::span<const edge_type_info> types, std::string_view name) {
  std::vector<std::string> known;
  for (const auto& e : types) known.push_back(edge_type_name(e));
  const auto first = name.find(','), last = name.rfind(',');
  if (first != std::string_view::npos && first != last) {
    const auto src = trimmed(name.substr(0, first));
    const auto rel = trimmed(name.substr(first + 1, last - first - 1));
    const auto dst = trimmed(name.substr(last + 1));
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i].src == src && types[i].rel == rel && types[i].dst == dst) return int(i);
  } else if (first == std::string_view::npos) {
    int found = -1, matches = 0;
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i].rel == trimmed(name)) found = int(i), ++matches;
    if (matches == 1) return found;
    if (matches > 1)
      return make_error(errc::invalid_argument,
                        "edge type '{}': {} edge types have this relation; name it as "
                        "\"src,rel,dst\" (one of {})",
                        name.substr(0, 64), matches, fmt::join(known, "; "));
  }
  if (types.empty())
    return make_error(errc::invalid_argument, "edge type '{}': the graph is untyped",
                      name.substr(0, 64));
  return make_error(errc::invalid_argument, "edge type '{}' is not one of the graph's: {}",
                    name.substr(0, 64), fmt::join(known, "; "));
}

expected<int> find_node_type(std::span<const node_type_info> types, std::string_view name) {
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i].name == name) return int(i);
    names.push_back(types[i].name);
  }
  if (names.empty())
    return make_error(errc::invalid_argument, "node type '{}': the graph is untyped",
                      name.substr(0, 64));
  return make_error(errc::invalid_argument, "node type '{}' is not one of the graph's: {}",
                    name.substr(0, 64), fmt::join(names, ", "));
}

}  // namespace spindle::graph
