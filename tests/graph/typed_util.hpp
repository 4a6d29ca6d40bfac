// Small typed (heterogeneous) graphs for the typed dataset and sampler tests.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "graph/csr.hpp"

namespace spindle::graph::testing {

/// A typed edge u -> v of edge type t.
struct typed_edge {
  std::int64_t u, v;
  std::int16_t t;
};

/// CSR in direction "in" (row v lists u for u -> v), rows sorted by (type, u),
/// as `spindle prepare` stores a typed graph.
inline csr_graph make_typed_graph(std::int64_t n, std::int32_t num_types,
                                  std::vector<typed_edge> edges) {
  std::sort(edges.begin(), edges.end(), [](const typed_edge& a, const typed_edge& b) {
    return std::tuple(a.v, a.t, a.u) < std::tuple(b.v, b.t, b.u);
  });
  csr_graph c;
  c.num_nodes = n;
  c.num_edge_types = num_types;
  c.indptr.assign(std::size_t(n + 1), 0);
  for (const auto& e : edges) {
    ++c.indptr[std::size_t(e.v + 1)];
    c.indices32.push_back(std::int32_t(e.u));
    c.edge_types.push_back(e.t);
  }
  for (std::int64_t v = 0; v < n; ++v) c.indptr[std::size_t(v + 1)] += c.indptr[std::size_t(v)];
  return c;
}

}  // namespace spindle::graph::testing
