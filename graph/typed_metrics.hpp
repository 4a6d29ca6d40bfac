// Quiver's PSGS and FAP (graph/metrics.hpp) on a typed graph, as the typed
// sampler samples it: each hop takes up to l neighbours of each edge type of a
// node (a row's segment of that type), not l of the whole row. So a row segment
// of degree d_t contributes min(d_t, l) sampled edges and each of its neighbours
// is visited with probability min(d_t, l) / d_t. The same visit-count algebra as
// the untyped metrics, per segment; deterministic for a given pool size.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/progress.hpp"
#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/csr.hpp"
#include "graph/metrics.hpp"

namespace spindle::graph {

/// PSGS and FAP of typed graph `g` for `fanouts[hop][edge type]` (-1 all, 0 none;
/// one row per hop, one column per edge type) and seed distribution `p0`.
expected<workload_metrics> compute_typed_metrics(const csr_view& g,
                                                 const std::vector<std::vector<int>>& fanouts,
                                                 std::span<const double> p0, thread_pool& pool,
                                                 progress* progress_out = nullptr);

/// One node's typed PSGS read through callbacks instead of a CSR (a changing
/// typed graph: graph/live_graph.hpp keeps the PSGS of changed rows current).
/// The Horner rule of compute_typed_metrics over the node's (K-1)-hop
/// neighbourhood, per edge-type segment, with `fanouts[hop]` applied to every
/// edge type (the list form the dataset's metrics use). `row(j, neighbours,
/// types)` fills j's row, sorted by edge type; `segments(j, sizes)` fills the
/// sizes of j's edge-type segments (the last hop needs no more: as the untyped
/// rule reads only degrees there). Reads at most `budget` neighbours of rows
/// before the last hop; returns a negative value past it.
using typed_row_reader =
    std::function<void(std::int64_t, std::vector<std::int64_t>&, std::vector<std::int16_t>&)>;
using typed_segment_reader = std::function<void(std::int64_t, std::vector<std::int64_t>&)>;
double typed_node_psgs(std::int64_t node, const std::vector<int>& fanouts,
                       const typed_row_reader& row, const typed_segment_reader& segments,
                       std::int64_t budget);

/// The sizes of the runs of equal values of `types` (a row sorted by edge type),
/// found by binary search: O(segments x log(row)).
void segment_sizes(std::span<const std::int16_t> types, std::vector<std::int64_t>& sizes);

/// `fanouts` (one per hop) applied to each of `num_edge_types` separately, as the
/// typed sampler applies a list (NeighborLoader's list form).
std::vector<std::vector<int>> per_edge_type(const std::vector<int>& fanouts, int num_edge_types);

}  // namespace spindle::graph
