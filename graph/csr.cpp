#include "graph/csr.hpp"

#include <algorithm>
#include <cmath>

namespace spindle::graph {

csr_view csr_graph::view() const {
  csr_view v;
  v.num_nodes = num_nodes;
  v.indptr = indptr;
  v.indices32 = indices32;
  v.indices64 = indices64;
  v.edge_weight = edge_weight;
  v.edge_types = edge_types;
  v.num_edge_types = num_edge_types;
  return v;
}

namespace {

status validate_indptr(const csr_view& g, std::int64_t num_indices) {
  if (static_cast<std::int64_t>(g.indptr.size()) != g.num_nodes + 1)
    return make_error(errc::corrupt_data, "indptr.npy: has {} entries, expected num_nodes+1={}",
                      g.indptr.size(), g.num_nodes + 1);
  if (g.indptr[0] != 0)
    return make_error(errc::corrupt_data, "indptr.npy: indptr[0]={}, expected 0", g.indptr[0]);
  for (std::int64_t v = 0; v < g.num_nodes; ++v) {
    if (g.indptr[v + 1] < g.indptr[v])
      return make_error(errc::corrupt_data, "indptr.npy: not monotone: indptr[{}]={} > indptr[{}]={}",
                        v, g.indptr[v], v + 1, g.indptr[v + 1]);
  }
  if (g.indptr[g.num_nodes] != num_indices)
    return make_error(errc::corrupt_data, "indptr.npy: indptr[{}]={} but indices.npy has {} entries",
                      g.num_nodes, g.indptr[g.num_nodes], num_indices);
  return status::ok();
}

template <class Index>
status validate_indices(std::span<const Index> indices, std::int64_t num_nodes) {
  for (std::size_t e = 0; e < indices.size(); ++e) {
    auto u = static_cast<std::int64_t>(indices[e]);
    if (u < 0 || u >= num_nodes)
      return make_error(errc::corrupt_data, "indices.npy: indices[{}]={} out of range (num_nodes={})",
                        e, u, num_nodes);
  }
  return status::ok();
}

status validate_weights(const csr_view& g) {
  if (!g.weighted()) return status::ok();
  if (static_cast<std::int64_t>(g.edge_weight.size()) != g.num_edges())
    return make_error(errc::corrupt_data, "edge_weight.npy: has {} entries, expected num_edges={}",
                      g.edge_weight.size(), g.num_edges());
  for (std::size_t e = 0; e < g.edge_weight.size(); ++e) {
    float w = g.edge_weight[e];
    if (!std::isfinite(w) || w < 0)
      return make_error(errc::corrupt_data,
                        "edge_weight.npy: edge_weight[{}]={} must be finite and >= 0", e, w);
  }
  return status::ok();
}

// Edge types: one per edge, in range, ascending within each row (the sampler
// reads a row's types as contiguous segments).
status validate_edge_types(const csr_view& g) {
  if (!g.typed()) return status::ok();
  if (static_cast<std::int64_t>(g.edge_types.size()) != g.num_edges())
    return make_error(errc::corrupt_data, "edge_types.npy: has {} entries, expected num_edges={}",
                      g.edge_types.size(), g.num_edges());
  for (std::int64_t v = 0; v < g.num_nodes; ++v)
    for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
      const std::int16_t t = g.edge_types[std::size_t(e)];
      if (t < 0 || t >= g.num_edge_types)
        return make_error(errc::corrupt_data,
                          "edge_types.npy: edge_types[{}]={} out of range (num_edge_types={})", e,
                          t, g.num_edge_types);
      if (e > g.indptr[v] && t < g.edge_types[std::size_t(e - 1)])
        return make_error(errc::corrupt_data,
                          "edge_types.npy: edge_types[{}]={} after {} (row {} must be sorted by "
                          "edge type)",
                          e, t, g.edge_types[std::size_t(e - 1)], v);
    }
  return status::ok();
}

}  // namespace

status validate_csr(const csr_view& g) {
  if (g.num_nodes < 0)
    return make_error(errc::corrupt_data, "num_nodes={} is negative", g.num_nodes);
  if (!g.indices32.empty() && !g.indices64.empty())
    return make_error(errc::internal, "csr has both 32- and 64-bit indices");
  auto num_indices = static_cast<std::int64_t>(g.wide() ? g.indices64.size() : g.indices32.size());
  SPINDLE_TRY(validate_indptr(g, num_indices));
  SPINDLE_TRY(with_indices(g, [&](auto idx) { return validate_indices(idx, g.num_nodes); }));
  SPINDLE_TRY(validate_weights(g));
  return validate_edge_types(g);
}

std::vector<std::int64_t> in_degrees(const csr_view& g) {
  std::vector<std::int64_t> deg(g.num_nodes, 0);
  with_indices(g, [&](auto idx) {
    for (auto v : idx) ++deg[v];
  });
  return deg;
}

edge_shape inspect_edge_shape(const csr_view& g) {
  edge_shape out;
  with_indices(g, [&](auto idx) {
    auto row = [&](std::int64_t v) { return idx.subspan(g.indptr[v], g.indptr[v + 1] - g.indptr[v]); };
    auto has = [&](std::int64_t v, std::int64_t u) {
      auto r = row(v);
      return std::is_sorted(r.begin(), r.end())
                 ? std::binary_search(r.begin(), r.end(), u)
                 : std::find(r.begin(), r.end(), u) != r.end();
    };
    for (std::int64_t v = 0; v < g.num_nodes; ++v)
      for (auto u : row(v)) {
        if (std::int64_t(u) == v) continue;
        ++out.edges;
        out.below += std::int64_t(u) < v;
        out.reciprocated += has(std::int64_t(u), v);
      }
  });
  return out;
}

}  // namespace spindle::graph
