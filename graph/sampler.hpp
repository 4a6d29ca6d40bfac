// k-hop neighbour sampling for GNN serving (PyG NeighborLoader semantics):
// hop k samples up to fanouts[k-1] neighbours of each node first reached at
// hop k-1; on a typed graph, that many (or typed_fanouts[k-1][t]) of each edge
// type t in the node's row, as NeighborLoader does on HeteroData. Two executors share one interface: inline (the calling thread) and
// pooled (a hop's frontier split over a thread pool). Output is identical for
// both and deterministic for a given seed. Executors are safe to call from
// many threads at once; each call owns its output.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "core/thread_pool.hpp"
#include "graph/csr.hpp"

namespace spindle::graph {

struct sample_options {
  std::vector<int> fanouts{25, 10};  // per hop; -1 takes all neighbours
  bool weighted = false;             // draw by edge_weight (graph must have weights)
  std::uint64_t seed = 0;            // same seed, same sample
  /// Typed graphs only: [hop][edge type] neighbours per edge type (-1 all, 0
  /// none), one row per hop of `fanouts` (which still sets the hop count).
  /// Empty: fanouts[k-1] applies to each edge type separately.
  std::vector<std::vector<int>> typed_fanouts;
  /// Record each sampled edge's CSR position (sampled_subgraph::edge_ids), for
  /// models reading edge attributes. Off: nothing recorded, nothing spent. Refused
  /// through a graph delta (its changed rows have no positions in the base CSR).
  bool edge_ids = false;
};

/// One layer's message-flow graph: dst nodes are local ids [0, num_dst), src
/// nodes are [0, num_src) (dst first, as PyG/DGL expect), edges in CSR by dst.
struct block_view {
  std::int64_t num_dst = 0, num_src = 0;
  std::span<const std::int64_t> indptr;   // num_dst + 1
  std::span<const std::int32_t> indices;  // local src ids
  std::span<const std::int16_t> edge_types;  // one per edge on a typed graph, else empty
};

/// The sampled subgraph of one batch.
struct sampled_subgraph {
  /// Global ids of every node, in discovery order: unique seeds, then nodes new at hop 1, ...
  std::vector<std::int64_t> nodes;
  /// hop_end[k]: how many nodes were discovered up to and including hop k (size K+1).
  std::vector<std::int64_t> hop_end;
  /// Local id of each input seed (duplicated seeds share one local id).
  std::vector<std::int32_t> seed_local;
  /// Sampled edges as CSR over rows [0, hop_end[K-1]): row r lists the local
  /// ids of the neighbours sampled for node r (at the hop after it was found).
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> indices;
  /// Edge type of each sampled edge (parallel to indices) on a typed graph; empty otherwise.
  std::vector<std::int16_t> edge_types;
  /// With sample_options::edge_ids: each sampled edge's position in the graph's
  /// CSR (parallel to indices: its row of dataset::edge_attr()); empty otherwise.
  std::vector<std::int64_t> edge_ids;

  int num_hops() const { return static_cast<int>(hop_end.size()) - 1; }
  std::int64_t num_edges() const { return static_cast<std::int64_t>(indices.size()); }
  /// Rows expanded at hop k (1-based): [hop_begin(k), hop_end[k-1]).
  std::int64_t hop_begin(int k) const { return k == 1 ? 0 : hop_end[k - 2]; }
  /// Edges sampled at hop k.
  std::int64_t hop_edges(int k) const { return indptr[hop_end[k - 1]] - indptr[hop_begin(k)]; }
  /// Block for GNN layer `layer` (0 = first, input side; K-1 = output layer).
  block_view layer_block(int layer) const;
};

/// Error naming the first seed outside [0, num_nodes).
status validate_seeds(const csr_view& g, std::span<const std::int64_t> seeds);
/// Error when the options do not fit the graph (weighted without weights, no
/// hops, typed_fanouts of the wrong shape or on an untyped graph, edge_ids read
/// through a graph delta).
status validate_sample_options(const csr_view& g, const sample_options& options);

class sampling_executor {
 public:
  virtual ~sampling_executor() = default;
  virtual std::string_view name() const = 0;
  /// Samples the k-hop subgraph of `seeds` into `out`, reusing its capacity (a
  /// serving pipeline keeps one `out` across batches, so steady-state sampling
  /// allocates nothing). Validates seeds and options first.
  virtual status sample_into(const csr_view& g, std::span<const std::int64_t> seeds,
                             const sample_options& options, sampled_subgraph& out) = 0;
  /// Samples into a new subgraph.
  expected<sampled_subgraph> sample(const csr_view& g, std::span<const std::int64_t> seeds,
                                    const sample_options& options) {
    sampled_subgraph out;
    SPINDLE_TRY(sample_into(g, seeds, options, out));
    return out;
  }
};

/// A whole hop's neighbour draws made elsewhere (the CUDA sampling kernel):
/// for each global id of `frontier` (the rows expanded at `hop`), append its
/// sampled neighbours' global ids to `globals` and their count to `row_sizes`,
/// as gpu/kernels/sample_draw.hpp's draw_row picks them.
using hop_drawer =
    std::function<status(std::span<const std::int64_t> frontier, int hop, int fanout,
                         std::vector<std::int64_t>& globals, std::vector<std::int64_t>& row_sizes)>;

/// The inline executor's frame (validation, seeds, local ids, CSR) with every
/// hop drawn by `draw`: what a device executor runs. Same draws, same subgraph.
/// Untyped graphs only (a typed one is refused), without edge_ids (refused: the
/// drawer returns neighbours, not their CSR positions).
status sample_with_drawer(const csr_view& g, std::span<const std::int64_t> seeds,
                          const sample_options& options, const hop_drawer& draw,
                          sampled_subgraph& out);

/// Runs on the calling thread: lowest latency for small batches.
class inline_executor final : public sampling_executor {
 public:
  std::string_view name() const override { return "inline"; }
  status sample_into(const csr_view& g, std::span<const std::int64_t> seeds,
                     const sample_options& options, sampled_subgraph& out) override;
};

/// Splits each hop's frontier over `pool` (the caller helps): higher throughput
/// on large batches. The pool must outlive the executor.
class pooled_executor final : public sampling_executor {
 public:
  explicit pooled_executor(thread_pool& pool, std::int64_t min_rows_per_task = 64)
      : pool_(pool), grain_(min_rows_per_task) {}
  std::string_view name() const override { return "pooled"; }
  status sample_into(const csr_view& g, std::span<const std::int64_t> seeds,
                     const sample_options& options, sampled_subgraph& out) override;

 private:
  thread_pool& pool_;
  std::int64_t grain_;
};

}  // namespace spindle::graph
