// A served graph that takes updates while it is read: the mapped dataset stays
// the base and each update batch becomes a new graph_delta, published whole
// (a batch is applied entirely or refused entirely, the refusal naming its
// first bad item). Readers take the current delta once per call without a
// lock held while they sample; one writer at a time applies batches in order.
// Edge direction follows the dataset: "in" (PyG's message flow) adds u to v's
// row for an edge u -> v, "out" adds v to u's row, an undirected graph both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "graph/csr.hpp"
#include "graph/graph_delta.hpp"

namespace spindle::graph {

/// One batch of changes, as a door receives it. Ids are row ids (the ids seeds
/// use); new nodes get the ids after the current last one, in order.
struct graph_update {
  std::vector<std::int64_t> add_src, add_dst;
  std::vector<float> add_weight;  // one per added edge on a weighted graph (else empty)
  std::vector<std::int64_t> remove_src, remove_dst;
  std::int64_t add_nodes = 0;            // how many nodes to add
  std::vector<float> add_node_features;  // add_nodes x feature_dim
  std::vector<std::int64_t> set_ids;     // nodes whose feature rows to replace
  std::vector<float> set_rows;           // set_ids.size() x feature_dim
  std::vector<std::int64_t> remove_nodes;

  bool empty() const {
    return add_src.empty() && remove_src.empty() && add_nodes == 0 && set_ids.empty() &&
           remove_nodes.empty();
  }
};

struct update_result {
  std::uint64_t version = 0;
  std::vector<std::int64_t> new_ids;  // the added nodes' ids
};

/// How the base's rows relate to an input edge u -> v.
enum class row_direction { in, out, both };

struct live_graph_options {
  row_direction direction = row_direction::in;
  std::int64_t feature_dim = 0;
  std::uint64_t base_version = 0;  // the version the base holds (a compacted dataset's)
  /// Called with each accepted batch and its version before it is published
  /// (the write-ahead log); an error refuses the batch. Unset: not durable.
  std::function<status(const graph_update&, std::uint64_t version)> log;
};

class live_graph {
 public:
  /// Nodes one batch may add.
  static constexpr std::int64_t kMaxNodesPerBatch = std::int64_t{1} << 31;

  live_graph(csr_view base, live_graph_options options);

  /// The delta every call admitted now reads (never null; version 0: none).
  std::shared_ptr<const graph_delta> current() const;
  std::uint64_t version() const { return current()->version; }

  /// Checks the whole batch against the current graph, logs it, then publishes
  /// it as the next version. An empty batch is refused.
  expected<update_result> apply(const graph_update& u);

  /// Applies a batch read back from the log at its recorded version (replay):
  /// the same checks, no logging.
  status replay(const graph_update& u, std::uint64_t version);

  const csr_view& base() const { return base_; }
  const live_graph_options& options() const { return options_; }

 private:
  expected<std::shared_ptr<graph_delta>> build(const graph_delta& from, const graph_update& u,
                                               update_result& result) const;

  csr_view base_;
  live_graph_options options_;
  std::mutex write_mu_;  // one batch at a time
  std::shared_ptr<const graph_delta> current_;  // read and swapped atomically
};

}  // namespace spindle::graph
