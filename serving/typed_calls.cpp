#include "serving/typed_calls.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "graph/compact.hpp"
#include "serving/gnn_pipeline.hpp"

namespace spindle::serving {

expected<std::vector<int>> relation_map(const graph::dataset& ds, const config::model_desc& d) {
  if (d.typed() && !ds.typed())
    return make_error(errc::invalid_argument,
                      "model '{}' reads a typed graph (node types {}...); dataset '{}' has one "
                      "node type",
                      d.name, d.types.node_types.front().name, ds.metadata().name);
  if (!d.typed() && ds.typed())
    return make_error(errc::invalid_argument,
                      "model '{}' reads one node type; dataset '{}' is typed: export the model "
                      "with to_hetero or HeteroConv",
                      d.name, ds.metadata().name);
  if (!d.typed()) return std::vector<int>{};
  std::vector<std::array<std::string, 3>> edges;
  for (const auto& e : ds.edge_types_info()) edges.push_back({e.src, e.rel, e.dst});
  std::vector<std::string> names;
  std::vector<std::int64_t> widths, counts;
  for (const auto& n : ds.node_types()) {
    names.push_back(n.name);
    widths.push_back(n.feature_dim);
    counts.push_back(n.count - graph::added_while_served(ds.metadata(), n.name));
  }
  auto map = config::bind_edge_types(d.types, edges, names, widths, counts);
  if (!map)
    return std::move(map).error().with_context(
        fmt::format("model '{}' on dataset '{}': ", d.name, ds.metadata().name));
  return map;
}

std::vector<std::int16_t> model_node_types(const graph::dataset& ds, const config::model_desc& d) {
  std::vector<std::int16_t> out;
  for (const auto& n : ds.node_types()) {
    std::int16_t k = -1;
    for (std::size_t i = 0; i < d.types.node_types.size(); ++i)
      if (d.types.node_types[i].name == n.name) k = std::int16_t(i);
    out.push_back(k);
  }
  return out;
}

void sampled_row_types(const graph::dataset& ds, const graph::graph_delta* d,
                       std::span<const std::int16_t> model_type_of,
                       std::span<const std::int64_t> nodes, bool ids,
                       std::vector<std::int16_t>& row_types, std::vector<std::int64_t>& row_ids) {
  row_types.resize(nodes.size());
  row_ids.resize(ids ? nodes.size() : 0);
  const auto types = ds.node_types();
  const std::int64_t base = ds.num_nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::int64_t v = nodes[i];
    // Nodes added while serving (past the base) carry their type in the delta.
    const int t = v < base ? ds.node_type_of(v) : graph::node_type_at(types, d, v);
    row_types[i] = t < 0 ? std::int16_t(-1) : model_type_of[std::size_t(t)];
    if (ids)
      row_ids[i] = v < base ? v - types[std::size_t(t)].offset : graph::local_id_at(types, d, v);
  }
}

std::vector<std::vector<int>> typed_fanouts(const config::model_desc& d,
                                            std::span<const int> relation_of_type,
                                            std::span<const int> fanouts) {
  std::vector<std::vector<int>> out(fanouts.size(),
                                    std::vector<int>(relation_of_type.size(), 0));
  for (std::size_t hop = 0; hop < fanouts.size(); ++hop)
    for (std::size_t t = 0; t < relation_of_type.size(); ++t) {
      const int r = relation_of_type[t];
      if (r < 0) continue;
      const auto& own = d.types.edge_types[std::size_t(r)].fanouts;
      out[hop][t] = own.size() > hop ? own[hop] : fanouts[hop];
    }
  return out;
}

namespace {

// Seeds numbered within node type `name` as graph ids; `step`/`first` pick the
// positions (every one, or one end of each pair).
// Counts the nodes added while serving (the live graph's current delta).
status within_type(const graph::dataset& ds, const std::string& name,
                   std::vector<std::int64_t>& seeds, std::size_t first, std::size_t step) {
  SPINDLE_ASSIGN_OR_RETURN(int t, ds.find_node_type(name));
  const auto& info = ds.node_types()[std::size_t(t)];
  const auto delta = ds.live() ? ds.live()->current() : nullptr;
  const std::int64_t count = graph::type_count_at(ds.node_types(), delta.get(), t);
  for (std::size_t i = first; i < seeds.size(); i += step) {
    if ((seeds[i] < 0 || seeds[i] >= count) && step == 2)
      return make_error(errc::invalid_argument,
                        "pairs[{}][{}] = {} out of range for node type '{}' ({} nodes)", i / 2,
                        i % 2, seeds[i], info.name, count);
    if (seeds[i] < 0 || seeds[i] >= count)
      return make_error(errc::invalid_argument,
                        "seed {} (position {}) out of range for node type '{}' ({} nodes)",
                        seeds[i], i, info.name, count);
    const std::int64_t g = graph::global_id_at(ds.node_types(), delta.get(), t, seeds[i]);
    if (delta && delta->is_removed(g) && step == 2)
      return make_error(errc::invalid_argument,
                        "pairs[{}][{}] = {} of node type '{}' was removed from the graph", i / 2,
                        i % 2, seeds[i], info.name);
    if (delta && delta->is_removed(g))
      return make_error(errc::invalid_argument,
                        "seed {} (position {}) of node type '{}' was removed from the graph",
                        seeds[i], i, info.name);
    seeds[i] = g;
  }
  return status::ok();
}

status pair_graph_ids(const graph::dataset& ds, const config::model_desc& d,
                      const std::string& node_type, std::vector<std::int64_t>& seeds) {
  const auto& pair = d.types.pair_types;
  if (pair.size() != 2)
    return make_error(errc::invalid_argument,
                      "model '{}' answers nodes (task \"node\"): pairs are scored by a model "
                      "exported with task=\"link\"",
                      d.name);
  if (!node_type.empty())
    return make_error(errc::invalid_argument,
                      "model '{}' scores ({}, {}) pairs, each end numbered within its node type: "
                      "give pairs without node_type ('{}')",
                      d.name, pair[0], pair[1], node_type.substr(0, 64));
  if (seeds.size() % 2 != 0)
    return make_error(errc::invalid_argument,
                      "pairs: {} node ids do not make pairs (give u0 v0 u1 v1 ..., [k, 2])",
                      seeds.size());
  SPINDLE_TRY(within_type(ds, pair[0], seeds, 0, 2));
  return within_type(ds, pair[1], seeds, 1, 2);
}

}  // namespace

status to_graph_ids(const graph::dataset& ds, const config::model_desc& d,
                    const std::string& node_type, std::vector<std::int64_t>& seeds, bool pairs) {
  if (pairs && d.typed()) return pair_graph_ids(ds, d, node_type, seeds);
  if (!d.typed()) {
    if (node_type.empty()) return status::ok();
    return make_error(errc::invalid_argument,
                      "model '{}' serves one node type; node_type '{}' names none", d.name,
                      node_type.substr(0, 64));
  }
  std::vector<std::string> answered;
  for (const auto& o : d.types.outputs) answered.push_back(o.node_type);
  if (node_type.empty())
    return make_error(errc::invalid_argument,
                      "model '{}' serves a typed graph: name the seeds' node type (node_type: "
                      "one of {})",
                      d.name, fmt::join(answered, ", "));
  SPINDLE_TRY(config::find_output(d.types, node_type).error_or_ok());
  return within_type(ds, node_type, seeds, 0, 1);
}

expected<std::size_t> typed_output(const graph::dataset& ds, const graph::graph_delta* delta,
                                   const config::model_desc& d, const std::string& node_type,
                                   std::span<const std::int64_t> seeds) {
  SPINDLE_ASSIGN_OR_RETURN(auto out, config::find_output(d.types, node_type));
  SPINDLE_ASSIGN_OR_RETURN(int t, ds.find_node_type(node_type));
  for (std::size_t i = 0; i < seeds.size(); ++i)
    if (graph::node_type_at(ds.node_types(), delta, seeds[i]) != t)
      return make_error(errc::invalid_argument, "seed {} (position {}) is not a '{}' node",
                        seeds[i], i, node_type.substr(0, 64));
  return out;
}

expected<std::pair<std::size_t, std::size_t>> typed_pair_outputs(
    const graph::dataset& ds, const graph::graph_delta* delta, const config::model_desc& d,
    std::span<const std::int64_t> seeds) {
  const auto& pair = d.types.pair_types;
  if (pair.size() != 2)
    return make_error(errc::invalid_argument, "model '{}' scores no typed pairs", d.name);
  std::pair<std::size_t, std::size_t> out;
  SPINDLE_ASSIGN_OR_RETURN(out.first, config::find_output(d.types, pair[0]));
  SPINDLE_ASSIGN_OR_RETURN(out.second, config::find_output(d.types, pair[1]));
  for (std::size_t end = 0; end < 2; ++end) {
    SPINDLE_ASSIGN_OR_RETURN(int t, ds.find_node_type(pair[end]));
    for (std::size_t i = end; i < seeds.size(); i += 2)
      if (graph::node_type_at(ds.node_types(), delta, seeds[i]) != t)
        return make_error(errc::invalid_argument, "pair {}: node {} is not a '{}' node", i / 2,
                          seeds[i], pair[end].substr(0, 64));
  }
  return out;
}

// The fanouts a model is served with (gnn_pipeline.hpp).
expected<std::vector<int>> served_fanouts(const config::model_desc& model,
                                          const graph::dataset_metadata& ds) {
  if (!model.fanouts.empty()) {
    SPINDLE_TRY(config::validate_fanouts(model.fanouts, model.layers, "fanouts"));
    return model.fanouts;
  }
  const auto& edges = model.types.edge_types;
  if (model.typed() && std::all_of(edges.begin(), edges.end(),
                                   [](const auto& e) { return !e.fanouts.empty(); }))
    return std::vector<int>(std::size_t(model.layers), -1);  // each edge type has its own
  if (int(ds.fanouts.size()) == model.layers) return ds.fanouts;
  return make_error(errc::invalid_argument,
                    "model '{}' has {} layers but no fanouts of its own, and the dataset's "
                    "fanouts are [{}]: set fanouts = [...] (one per layer) in model.toml or pass "
                    "--fanouts",
                    model.name, model.layers, fmt::join(ds.fanouts, ", "));
}

// Part of gnn_pipeline:  A typed model's request names a node type its seeds all have (its output
// index into `output`); an untyped model's names none.
status gnn_pipeline::typed_request(const gnn_request& r, const graph::graph_delta* delta,
                                   std::size_t& output, std::size_t& pair_output) const {
  if (!model_.desc().typed()) {
    if (r.node_type.empty()) return status::ok();
    return make_error(errc::invalid_argument, "model '{}' serves one node type; node_type '{}' "
                      "names none", model_.desc().name, r.node_type.substr(0, 64));
  }
  if (r.pairs) {
    SPINDLE_ASSIGN_OR_RETURN(auto ends, typed_pair_outputs(ds_, delta, model_.desc(), r.seeds));
    output = ends.first;
    pair_output = ends.second;
    return status::ok();
  }
  SPINDLE_ASSIGN_OR_RETURN(output, typed_output(ds_, delta, model_.desc(), r.node_type, r.seeds));
  for (const auto& name : r.outputs) {  // each a value of the seeds' node type
    if (name == "output") continue;
    const auto& ops = model_.desc().ops;
    const auto op = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.name == name; });
    if (op != ops.end() && op->node_type != r.node_type)
      return make_error(errc::invalid_argument,
                        "output '{}' holds node type '{}' rows; the call's seeds are '{}'",
                        name.substr(0, 64), op->node_type, r.node_type.substr(0, 64));
  }
  return status::ok();
}

namespace {

// Graph id `g` as an id within node type `name`: its own id when of that type,
// else a fixed spread over the type (the generator only needs valid ids).
std::int64_t within(const graph::dataset& ds, const std::string& name, std::int64_t g) {
  auto t = ds.find_node_type(name);
  if (!t) return g;  // the model's load refused such a type already
  const auto& info = ds.node_types()[std::size_t(*t)];
  if (info.count <= 0) return 0;
  if (g >= info.offset && g < info.offset + info.count) return g - info.offset;
  return std::int64_t(std::uint64_t(g) * 0x9E3779B97F4A7C15ull % std::uint64_t(info.count));
}

}  // namespace

void shape_workload(const graph::dataset& ds, const config::model_desc& d,
                    std::vector<gnn_request>& requests) {
  const bool typed = d.typed() && ds.typed();
  for (auto& r : requests) {
    if (r.seeds.size() != 1) continue;
    const std::int64_t g = r.seeds[0];
    if (d.scores_links()) {
      const auto& pt = d.types.pair_types;
      const std::int64_t n = std::max<std::int64_t>(1, ds.graph().num_nodes);
      const std::int64_t other = std::int64_t((std::uint64_t(g) * 0x9E3779B97F4A7C15ull + 1) % std::uint64_t(n));
      r.seeds = typed && pt.size() == 2 ? std::vector<std::int64_t>{within(ds, pt[0], g), within(ds, pt[1], other)}
                                        : std::vector<std::int64_t>{g, other};
      r.pairs = true;
    } else if (typed && !d.types.outputs.empty()) {
      r.node_type = d.types.outputs.front().node_type;
      r.seeds[0] = within(ds, r.node_type, g);
    } else {
      continue;
    }
    // The batcher takes graph ids, as the door hands them on (a call that cannot
    // be so numbered is left to fail and be counted).
    (void)to_graph_ids(ds, d, r.pairs ? std::string() : r.node_type, r.seeds, r.pairs);
  }
}

}  // namespace spindle::serving
