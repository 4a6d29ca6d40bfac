// Update batches on a typed graph: each item names its edge or node type and
// ids local to that type; the batch is lowered to the untyped form (global ids,
// rows padded to the dataset's width) with each edge's and added node's type,
// and built as any batch is (live_graph.cpp), its rows kept sorted by type.
#include <fmt/format.h>

#include <cmath>

#include <set>

#include "graph/detail/lowered_types.hpp"
#include "graph/live_graph.hpp"

namespace spindle::graph {
namespace {

// Nodes one typed batch may add (a featureless type's are a bare count).
constexpr std::int64_t kMaxTypedNodesPerBatch = std::int64_t{1} << 20;

// A type lookup's refusal prefixed with the item it names.
expected<int> named(expected<int> found, const std::string& what) {
  if (!found) return std::move(found).error().with_context(what + ": ");
  return found;
}

// The first item of the untyped form on a typed graph, or of the typed form on
// an untyped one, refused by name.
status check_form(const graph_update& u, bool typed) {
  if (!typed) {
    if (u.typed())
      return make_error(
          errc::invalid_argument,
          "{}: the graph is untyped: give its changes without node or edge types",
          !u.add_typed.empty()      ? "add_edges['" + u.add_typed[0].type.substr(0, 64) + "']"
          : !u.remove_typed.empty() ? "remove_edges['" + u.remove_typed[0].type.substr(0, 64) + "']"
                                    : "nodes['" + u.nodes[0].type.substr(0, 64) + "']");
    return status::ok();
  }
  const char* untyped = !u.add_src.empty() || !u.add_dst.empty()           ? "add_edges"
                        : !u.remove_src.empty() || !u.remove_dst.empty()   ? "remove_edges"
                        : u.add_nodes != 0 || !u.add_node_features.empty() ? "add_nodes"
                        : !u.set_ids.empty() || !u.set_rows.empty()        ? "set_features"
                        : !u.remove_nodes.empty()                          ? "remove_nodes"
                                                                           : nullptr;
  if (!u.add_weight.empty())
    return make_error(errc::invalid_argument,
                      "add_weights: a typed batch gives no weights apart from its edges (the "
                      "typed graph is unweighted)");
  if (untyped)
    return make_error(errc::invalid_argument,
                      "{}: the graph is typed: name each change's edge or node type, with ids "
                      "local to it (Python: add_edges={{(\"user\", \"pays\", \"merchant\"): "
                      "(src, dst)}}; CLI: graph update --edge-type user,pays,merchant, or "
                      "--node-type user; HTTP: fields keyed by type)",
                      untyped);
  return status::ok();
}

// Appends `n` rows of width `width` to `out`, each padded with zeros to `dim`
// (a featureless type's rows: all zeros).
void append_padded(std::vector<float>& out, std::span<const float> rows, std::int64_t n,
                   std::int64_t width, std::int64_t dim) {
  for (std::int64_t r = 0; r < n; ++r) {
    out.insert(out.end(), rows.begin() + r * width, rows.begin() + (r + 1) * width);
    out.insert(out.end(), std::size_t(dim - width), 0.0f);
  }
}

// Resolves a batch's local ids to global ones at `from` plus the nodes the
// batch adds, refusing ids out of their type's range and removed nodes by name.
struct local_ids {
  std::span<const node_type_info> types;
  const graph_delta& from;
  std::vector<std::vector<std::int64_t>> added;  // per type: globals this batch adds
  std::set<std::int64_t> removing;

  expected<std::int64_t> operator()(int t, std::int64_t local, std::string_view what,
                                    std::size_t i) const {
    const std::int64_t base = type_count_at(types, &from, t);
    const auto& mine = added[std::size_t(t)];
    const auto& name = types[std::size_t(t)].name;
    std::int64_t g = -1;
    if (local >= 0 && local < base)
      g = global_id_at(types, &from, t, local);
    else if (local >= base && local - base < std::int64_t(mine.size()))
      g = mine[std::size_t(local - base)];
    if (g < 0)
      return make_error(errc::invalid_argument,
                        "{}[{}]: {} {} out of range (node type '{}' has {} nodes)", what, i, name,
                        local, name, base + std::int64_t(mine.size()));
    if (from.is_removed(g) || removing.count(g))
      return make_error(errc::invalid_argument, "{}[{}]: {} {} is removed", what, i, name, local);
    return g;
  }
};

// The batch's added nodes, in its order: each one's global id (after the last
// one), type and local id (after its type's last one), its row padded to `dim`.
// Each field's type is resolved where the field is used, so a refusal names it.
status lower_added(std::span<const node_type_info> nt, std::int64_t dim, const graph_update& u,
                   local_ids& ids, graph_update& flat, std::vector<std::int32_t>& types,
                   std::vector<std::int64_t>& locals) {
  std::int64_t next = ids.from.num_nodes;
  for (const auto& n : u.nodes) {
    if (n.add == 0 && n.add_rows.empty()) continue;
    const std::string what = fmt::format("add_nodes['{}']", n.type.substr(0, 64));
    SPINDLE_ASSIGN_OR_RETURN(const int t, named(find_node_type(nt, n.type), what));
    // A count costs a few bytes on the wire and a padded row and map entries
    // each here (and in every replay of the log): counts are capped to what a
    // batch's rows would carry, so a small request cannot take the memory.
    if (n.add < 0 || n.add > kMaxTypedNodesPerBatch - flat.add_nodes)
      return make_error(errc::invalid_argument,
                        "{}: {} nodes (0 to {} a batch, all types together; send more in "
                        "further batches)",
                        what, n.add, kMaxTypedNodesPerBatch);
    const std::int64_t width = nt[std::size_t(t)].feature_dim;
    SPINDLE_TRY(detail::check_rows(n.add_rows, std::size_t(n.add), width, what));
    append_padded(flat.add_node_features, n.add_rows, n.add, width, dim);
    auto& mine = ids.added[std::size_t(t)];
    for (std::int64_t k = 0; k < n.add; ++k) {
      locals.push_back(type_count_at(nt, &ids.from, t) + std::int64_t(mine.size()));
      types.push_back(t);
      mine.push_back(next++);
    }
    flat.add_nodes += n.add;
  }
  return status::ok();
}

// The batch's removed nodes and replaced rows (padded to `dim`), in global ids.
status lower_node_changes(std::span<const node_type_info> nt, std::int64_t dim,
                          const graph_update& u, local_ids& ids, graph_update& flat) {
  for (const auto& n : u.nodes) {
    if (n.remove.empty()) continue;
    const std::string what = fmt::format("remove_nodes['{}']", n.type.substr(0, 64));
    SPINDLE_ASSIGN_OR_RETURN(const int t, named(find_node_type(nt, n.type), what));
    std::set<std::int64_t> listed;
    for (std::size_t i = 0; i < n.remove.size(); ++i) {
      if (!listed.insert(n.remove[i]).second)
        return make_error(errc::invalid_argument, "{}[{}]: {} {} is listed twice", what, i,
                          n.type.substr(0, 64), n.remove[i]);
      SPINDLE_ASSIGN_OR_RETURN(const std::int64_t g, ids(t, n.remove[i], what, i));
      ids.removing.insert(g);
      flat.remove_nodes.push_back(g);
    }
  }
  for (const auto& n : u.nodes) {
    if (n.set_ids.empty() && n.set_rows.empty()) continue;
    const std::string what = fmt::format("set_features['{}']", n.type.substr(0, 64));
    SPINDLE_ASSIGN_OR_RETURN(const int t, named(find_node_type(nt, n.type), what));
    const std::int64_t width = nt[std::size_t(t)].feature_dim;
    if (width == 0)
      return make_error(errc::invalid_argument,
                        "{}: node type '{}' has no features (a model reads it from an "
                        "embedding table, or not at all): nothing to set",
                        what, n.type.substr(0, 64));
    SPINDLE_TRY(detail::check_rows(n.set_rows, n.set_ids.size(), width, what));
    for (std::size_t i = 0; i < n.set_ids.size(); ++i) {
      SPINDLE_ASSIGN_OR_RETURN(const std::int64_t g, ids(t, n.set_ids[i], what, i));
      flat.set_ids.push_back(g);
    }
    append_padded(flat.set_rows, n.set_rows, std::int64_t(n.set_ids.size()), width, dim);
  }
  return status::ok();
}

// One kind of edge change (added or removed), each group's ends resolved by its
// edge type's node types; `at` records each flat edge's (group, index).
struct edge_lowering {
  std::span<const edge_type_info> edge_types;
  std::span<const node_type_info> node_types;
  bool weighted = false;

  status operator()(const std::vector<typed_edges>& groups, std::string_view verb,
                    const local_ids& ids, graph_update& flat, bool adding,
                    std::vector<std::int16_t>& types,
                    std::vector<std::pair<std::size_t, std::size_t>>* at) const {
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& e = groups[gi];
      const std::string what = fmt::format("{}['{}']", verb, e.type.substr(0, 64));
      SPINDLE_ASSIGN_OR_RETURN(const int t, named(find_edge_type(edge_types, e.type), what));
      if (e.src.size() != e.dst.size())
        return make_error(errc::invalid_argument, "{}: {} sources for {} targets", what,
                          e.src.size(), e.dst.size());
      SPINDLE_TRY(check_weights(e, what, adding));
      const auto& info = edge_types[std::size_t(t)];
      SPINDLE_ASSIGN_OR_RETURN(const int s, find_node_type(node_types, info.src));
      SPINDLE_ASSIGN_OR_RETURN(const int d, find_node_type(node_types, info.dst));
      for (std::size_t i = 0; i < e.src.size(); ++i) {
        SPINDLE_ASSIGN_OR_RETURN(const std::int64_t u, ids(s, e.src[i], what + ".src", i));
        SPINDLE_ASSIGN_OR_RETURN(const std::int64_t v, ids(d, e.dst[i], what + ".dst", i));
        (adding ? flat.add_src : flat.remove_src).push_back(u);
        (adding ? flat.add_dst : flat.remove_dst).push_back(v);
        types.push_back(std::int16_t(t));
        if (at) at->emplace_back(gi, i);
      }
      if (adding) flat.add_weight.insert(flat.add_weight.end(), e.weight.begin(), e.weight.end());
    }
    return status::ok();
  }

  status check_weights(const typed_edges& e, std::string_view what, bool adding) const {
    if (adding && weighted && e.weight.size() != e.src.size())
      return make_error(errc::invalid_argument,
                        "{}: the graph is weighted: give one weight per edge ({} for {})", what,
                        e.weight.size(), e.src.size());
    if ((!adding || !weighted) && !e.weight.empty())
      return make_error(errc::invalid_argument, "{}: weights given, but {}", what,
                        adding ? "the graph has none" : "removals take none");
    for (std::size_t i = 0; i < e.weight.size(); ++i)
      if (!(std::isfinite(e.weight[i]) && e.weight[i] >= 0))  // as a dataset's edge_weight
        return make_error(errc::invalid_argument, "{}.weight[{}]: {} must be finite and >= 0",
                          what, i, e.weight[i]);
    return status::ok();
  }
};

}  // namespace

expected<std::shared_ptr<graph_delta>> live_graph::build(const graph_delta& from,
                                                         const graph_update& u,
                                                         update_result& result) const {
  const bool typed = !options_.node_types.empty();
  SPINDLE_TRY(check_form(u, typed));
  if (!typed) return build_flat(from, u, nullptr, result);
  graph_update flat;
  lowered_types types;
  SPINDLE_TRY(lower_typed(from, u, flat, types));
  SPINDLE_ASSIGN_OR_RETURN(auto d, build_flat(from, flat, &types, result));
  result.new_ids = std::move(types.new_local);
  return d;
}

status live_graph::lower_typed(const graph_delta& from, const graph_update& u, graph_update& flat,
                               lowered_types& out) const {
  const auto& nt = options_.node_types;
  out.original = &u;
  local_ids ids{nt, from, std::vector<std::vector<std::int64_t>>(nt.size()), {}};
  // Nodes first: edges of this batch may name them.
  SPINDLE_TRY(lower_added(nt, options_.feature_dim, u, ids, flat, out.nodes, out.new_local));
  SPINDLE_TRY(lower_node_changes(nt, options_.feature_dim, u, ids, flat));
  const edge_lowering edges{options_.edge_types, nt, base_of(from).weighted()};
  SPINDLE_TRY(edges(u.add_typed, "add_edges", ids, flat, true, out.add, nullptr));
  return edges(u.remove_typed, "remove_edges", ids, flat, false, out.remove, &out.remove_at);
}

}  // namespace spindle::graph
