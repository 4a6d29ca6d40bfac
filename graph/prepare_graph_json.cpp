// `spindle prepare --input DIR` where DIR holds graph.json: one node type and
// one edge type make an untyped dataset (as an edge_index input does); more
// make a typed one: node types as contiguous global id ranges in graph.json's
// order, rows sorted by (edge type, neighbour), edge_types.npy beside them.
#include <algorithm>
#include <filesystem>

#include "core/log.hpp"
#include "graph/dataset.hpp"
#include "graph/graph_json.hpp"

namespace spindle::graph {
namespace {

// Flags of the edge-list inputs that mean nothing here, or that a typed graph
// cannot honour: refused by name rather than ignored.
status check_flags(const prepare_options& o, bool typed, const std::string& path) {
  auto refuse = [&](const char* flag, const char* why) {
    return make_error(errc::invalid_argument, "{} with {}: {}", flag, path, why);
  };
  if (!o.features.empty() || o.synthetic)
    return refuse("--features", "graph.json carries the features (its node types' x)");
  if (o.format) return refuse("--format", "graph.json is read as it is");
  if (o.keep_self_loops == false || o.keep_duplicates == false)
    return refuse("--drop-self-loops/--drop-duplicates",
                  "a saved PyG graph keeps every edge (PyG's layers see them all)");
  if (o.build.relabel == relabel_mode::always)
    return refuse("--relabel always", "node ids are graph.json's own");
  if (typed && o.build.undirected)
    return refuse("--undirected",
                  "a typed graph's relations are directed; add the reverse "
                  "relations (PyG's ToUndirected) before save_graph");
  if (typed && o.direction != edge_direction::in)
    return refuse("--edge-direction out",
                  "a typed graph is stored in direction in (PyG's message flow)");
  return status::ok();
}

struct staged {
  std::vector<std::int64_t> row, nbr, source;  // source: the input edge (for edge_attr)
  std::vector<std::int16_t> type;
};

staged stage_edges(const graph_json& g, const std::vector<std::int64_t>& offset, bool swap,
                   bool both) {
  staged s;
  std::int64_t input = 0;
  for (std::size_t t = 0; t < g.edge_types.size(); ++t) {
    const auto& et = g.edge_types[t];
    auto ids = *et.edge_index.as<std::int64_t>();
    const std::int64_t e = et.num_edges();
    for (std::int64_t i = 0; i < e; ++i, ++input) {
      const std::int64_t u = offset[std::size_t(et.src_type)] + ids[std::size_t(i)];
      const std::int64_t v = offset[std::size_t(et.dst_type)] + ids[std::size_t(e + i)];
      for (int r = 0; r < (both ? 2 : 1); ++r) {
        const bool to_u = swap != (r == 1);  // in: v's row lists u
        s.row.push_back(to_u ? v : u);
        s.nbr.push_back(to_u ? u : v);
        s.type.push_back(std::int16_t(t));
        s.source.push_back(input);
      }
    }
  }
  return s;
}

// CSR over the staged edges, rows sorted by (type, neighbour, input order);
// `order` gets each stored edge's staged position.
csr_graph build_rows(const staged& s, std::int64_t n, bool typed, std::int32_t num_types,
                     std::vector<std::int64_t>& order) {
  csr_graph c;
  c.num_nodes = n;
  c.indptr.assign(std::size_t(n + 1), 0);
  for (auto r : s.row) ++c.indptr[std::size_t(r + 1)];
  for (std::int64_t v = 0; v < n; ++v) c.indptr[std::size_t(v + 1)] += c.indptr[std::size_t(v)];
  order.assign(s.row.size(), 0);
  std::vector<std::int64_t> next(c.indptr.begin(), c.indptr.end() - 1);
  for (std::size_t e = 0; e < s.row.size(); ++e)
    order[std::size_t(next[std::size_t(s.row[e])]++)] = std::int64_t(e);
  auto less = [&](std::int64_t a, std::int64_t b) {
    const auto ka = std::tuple(s.type[std::size_t(a)], s.nbr[std::size_t(a)], a);
    return ka < std::tuple(s.type[std::size_t(b)], s.nbr[std::size_t(b)], b);
  };
  for (std::int64_t v = 0; v < n; ++v)
    std::sort(order.begin() + c.indptr[std::size_t(v)],
              order.begin() + c.indptr[std::size_t(v + 1)], less);
  const bool wide = needs_wide_indices(n);
  for (auto e : order) {
    if (wide)
      c.indices64.push_back(s.nbr[std::size_t(e)]);
    else
      c.indices32.push_back(std::int32_t(s.nbr[std::size_t(e)]));
    if (typed) c.edge_types.push_back(s.type[std::size_t(e)]);
  }
  c.num_edge_types = typed ? num_types : 0;
  return c;
}

// edge_attr in CSR order when every edge type has one of one width; none: empty.
expected<std::int64_t> edge_attr_width(const graph_json& g) {
  std::int64_t width = -1;
  for (const auto& t : g.edge_types) {
    const std::int64_t k = t.edge_attr ? t.edge_attr->shape()[1] : -2;
    if (width == -1) width = k;
    if (k == width) continue;
    return make_error(errc::invalid_argument,
                      "{}: edge_types' edge_attr: ({}, {}, {}) has {} but ({}, {}, {}) has {}: "
                      "every edge type needs edge_attr of one width, or none has it",
                      g.path, g.edge_types[0].src, g.edge_types[0].rel, g.edge_types[0].dst,
                      width < 0 ? "none" : std::to_string(width) + " columns", t.src, t.rel, t.dst,
                      k < 0 ? "none" : std::to_string(k) + " columns");
  }
  return std::max<std::int64_t>(width, 0);
}

std::vector<float> edge_attr_in_csr_order(const graph_json& g, const staged& s,
                                          const std::vector<std::int64_t>& order, std::int64_t k) {
  std::vector<const float*> rows;  // input edge -> its attribute row
  for (const auto& t : g.edge_types) {
    const float* base = t.edge_attr->as<float>()->data();
    for (std::int64_t i = 0; i < t.num_edges(); ++i) rows.push_back(base + i * k);
  }
  std::vector<float> out;
  out.reserve(order.size() * std::size_t(k));
  for (auto e : order) {
    const float* r = rows[std::size_t(s.source[std::size_t(e)])];
    out.insert(out.end(), r, r + k);
  }
  return out;
}

status write_node_data(dataset_writer& w, const graph_json& g,
                       const std::vector<std::int64_t>& offset, std::int64_t n) {
  std::int64_t dim = 0;
  for (const auto& t : g.node_types) dim = std::max(dim, t.x ? t.x->shape()[1] : 0);
  auto type_of = [&](std::int64_t v) {
    return std::size_t(std::upper_bound(offset.begin(), offset.end() - 1, v) - offset.begin() - 1);
  };
  if (dim > 0)
    SPINDLE_TRY(w.write_features(n, dim, [&](std::int64_t lo, std::int64_t hi, float* out) {
      for (std::int64_t v = lo; v < hi; ++v) {
        const std::size_t t = type_of(v);
        const auto& x = g.node_types[t].x;
        if (!x) continue;  // a featureless type: its rows stay 0
        const std::int64_t d = x->shape()[1];
        const float* row = x->as<float>()->data() + (v - offset[t]) * d;
        std::copy(row, row + d, out + (v - lo) * dim);
      }
    }));
  std::vector<std::int64_t> labels(std::size_t(n), -1);
  bool any = false;
  std::int64_t classes = 0;
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    if (!g.node_types[t].y) continue;
    any = true;
    auto y = *g.node_types[t].y->as<std::int64_t>();
    for (std::size_t i = 0; i < y.size(); ++i) {
      labels[std::size_t(offset[t]) + i] = y[i];
      classes = std::max(classes, y[i] + 1);
    }
  }
  return any ? w.write_labels(labels, classes) : status::ok();
}

dataset_metadata base_metadata(const prepare_options& o, const graph_json& g, bool typed,
                               const std::vector<std::int64_t>& offset, const csr_graph& c) {
  dataset_metadata m;
  const auto folder = std::filesystem::path(g.path).parent_path().filename().string();
  m.name = !o.name.empty() ? o.name : folder.empty() ? "graph" : folder;
  m.source = g.path;
  m.undirected = !typed && o.build.undirected;
  m.edge_direction = m.undirected ? "both" : std::string(to_string(o.direction));
  if (!typed) return m;
  std::vector<std::int64_t> per_type(g.edge_types.size(), 0);
  for (auto t : c.edge_types) ++per_type[std::size_t(t)];
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const auto& nt = g.node_types[t];
    m.node_types.push_back({nt.name, offset[t], nt.num_nodes, nt.x ? nt.x->shape()[1] : 0});
    m.feature_dim = std::max(m.feature_dim, m.node_types.back().feature_dim);
  }
  for (std::size_t t = 0; t < g.edge_types.size(); ++t) {
    const auto& et = g.edge_types[t];
    m.edge_types.push_back({et.src, et.rel, et.dst, per_type[t]});
  }
  return m;
}

void count_repeats(const csr_graph& c, dataset_metadata& m, std::int64_t input_edges) {
  const csr_view g = c.view();
  std::int64_t loops = 0, repeats = 0;
  for (std::int64_t v = 0; v < g.num_nodes; ++v)
    for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
      loops += g.neighbour(e) == v;
      repeats += e > g.indptr[v] && g.neighbour(e) == g.neighbour(e - 1) &&
                 (!g.typed() || g.edge_types[std::size_t(e)] == g.edge_types[std::size_t(e - 1)]);
    }
  m.build["input_edges"] = std::to_string(input_edges);
  m.build["self_loops_kept"] = std::to_string(loops);
  m.build["duplicates_kept"] = std::to_string(repeats);
  m.build["self_loops_dropped"] = m.build["duplicates_dropped"] = "0";
}

}  // namespace

status prepare_graph_json(const prepare_options& o, const std::string& path,
                          const std::string& out_dir, thread_pool& pool) {
  log::info("reading {}", path);
  SPINDLE_ASSIGN_OR_RETURN(auto g, read_graph_json(path));
  const bool typed = g.node_types.size() > 1 || g.edge_types.size() > 1;
  SPINDLE_TRY(check_flags(o, typed, path));
  std::vector<std::int64_t> offset{0};
  for (const auto& t : g.node_types) offset.push_back(offset.back() + t.num_nodes);
  const std::int64_t n = offset.back();
  SPINDLE_ASSIGN_OR_RETURN(const std::int64_t attr_width, edge_attr_width(g));
  const staged s = stage_edges(g, offset, typed || o.direction == edge_direction::in,
                               !typed && o.build.undirected);
  std::vector<std::int64_t> order;
  const csr_graph c = build_rows(s, n, typed, std::int32_t(g.edge_types.size()), order);
  const std::int64_t input_edges = s.source.empty() ? 0 : s.source.back() + 1;
  dataset_metadata meta = base_metadata(o, g, typed, offset, c);
  count_repeats(c, meta, input_edges);
  fmt::print(stderr, "spindle: {}: {} input edges -> {} stored ({} node types, {} edge types{})\n",
             path, input_edges, c.view().num_edges(), g.node_types.size(), g.edge_types.size(),
             typed ? "" : ": an untyped graph");
  SPINDLE_ASSIGN_OR_RETURN(auto w, dataset_writer::create(out_dir, meta));
  SPINDLE_TRY(w.write_graph(c.view()));
  SPINDLE_TRY(write_node_data(w, g, offset, n));
  if (attr_width > 0)
    SPINDLE_TRY(w.write_edge_attr(edge_attr_in_csr_order(g, s, order, attr_width), attr_width));
  SPINDLE_TRY(write_metrics_for(w, c.view(), o.metrics, pool));
  return w.finish();
}

}  // namespace spindle::graph
