// Compressed sparse row adjacency: row v lists the out-neighbours of v.
// `csr_view` is a non-owning, trivially copyable view (over mapped files or
// vectors); `csr_graph` owns its arrays. Both are immutable once built and safe
// to read from any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::graph {

struct graph_delta;

struct csr_view {
  std::int64_t num_nodes = 0;
  std::span<const std::int64_t> indptr;     // num_nodes + 1 offsets into indices
  std::span<const std::int32_t> indices32;  // used when num_nodes < 2^31
  std::span<const std::int64_t> indices64;  // used otherwise
  std::span<const float> edge_weight;       // empty, or one weight per edge
  /// A typed graph's edge type per edge (ids in [0, num_edge_types)); within a
  /// row the edges are sorted by type. Empty: an untyped graph.
  std::span<const std::int16_t> edge_types;
  std::int32_t num_edge_types = 0;  // the typed graph's edge type count; 0 untyped
  /// Changes since this base (graph/graph_delta.hpp) that the sampler reads
  /// through; null: the base as it is. The arrays above stay the base's.
  const graph_delta* delta = nullptr;

  std::int64_t num_edges() const { return indptr.empty() ? 0 : indptr[num_nodes]; }
  std::int64_t degree(std::int64_t v) const { return indptr[v + 1] - indptr[v]; }
  bool wide() const { return !indices64.empty(); }
  bool weighted() const { return !edge_weight.empty(); }
  bool typed() const { return !edge_types.empty(); }
  /// Neighbour at edge position e (either index width).
  std::int64_t neighbour(std::int64_t e) const { return wide() ? indices64[e] : indices32[e]; }
};

/// Calls f(std::span<const Index>) with the view's typed index array, so hot
/// loops are compiled once per index width.
template <class F>
decltype(auto) with_indices(const csr_view& g, F&& f) {
  if (g.wide()) return f(g.indices64);
  return f(g.indices32);
}

/// Owning CSR arrays; exactly one of indices32/indices64 is used.
struct csr_graph {
  std::int64_t num_nodes = 0;
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> indices32;
  std::vector<std::int64_t> indices64;
  std::vector<float> edge_weight;
  std::vector<std::int16_t> edge_types;  // empty, or one per edge (typed graphs)
  std::int32_t num_edge_types = 0;

  csr_view view() const;
};

/// How a graph's stored edges look: an undirected graph listed once per edge
/// (u < v, as SNAP's undirected files are) stores every edge one way; one listed
/// in both directions stores each edge reciprocated. Self-loops are not counted.
struct edge_shape {
  std::int64_t edges = 0;         // stored edges, self-loops excluded
  std::int64_t below = 0;         // of them, neighbour id < row id
  std::int64_t reciprocated = 0;  // of them, (v, u) whose (u, v) is stored too
  bool one_way() const { return edges > 0 && reciprocated == 0 && (below == 0 || below == edges); }
  bool symmetric() const { return edges > 0 && reciprocated == edges; }
};
edge_shape inspect_edge_shape(const csr_view& g);

/// True when node ids need 64-bit indices.
inline bool needs_wide_indices(std::int64_t num_nodes) { return num_nodes >= (std::int64_t{1} << 31); }

/// Checks indptr[0]==0, monotone indptr, indptr[n]==|indices|, every index in
/// [0, num_nodes), weights finite and non-negative, and edge types (when
/// present) one per edge, in [0, num_edge_types), ascending within each row. Errors name the array
/// file and position, e.g. "indices.npy: indices[1234]=99999 out of range (num_nodes=5000)".
status validate_csr(const csr_view& g);

/// How many times each node appears as a neighbour (its in-degree).
std::vector<std::int64_t> in_degrees(const csr_view& g);

}  // namespace spindle::graph
