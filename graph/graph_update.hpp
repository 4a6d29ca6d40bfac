// One batch of changes to a served graph, as a door, the Python client or a
// stream entry carries it: edges to add and remove, new nodes with their feature
// rows, feature rows to replace, nodes to remove. live_graph.hpp applies it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  /// Where a batch read from a stream came from (empty for a door's batch): the
  /// stream and its entry id, logged with the batch so a redelivered entry is
  /// recognised after a restart.
  std::string source_stream, source_id;

  bool empty() const {
    return add_src.empty() && remove_src.empty() && add_nodes == 0 && set_ids.empty() &&
           remove_nodes.empty();
  }
};

}  // namespace spindle::graph
