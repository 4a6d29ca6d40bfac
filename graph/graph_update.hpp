// One batch of changes to a served graph, as a door, the Python client or a
// stream entry carries it: edges to add and remove, new nodes with their feature
// rows, feature rows to replace, nodes to remove; on a typed graph, each named by
// its edge or node type with ids local to the type. live_graph.hpp applies it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spindle::graph {

/// A typed graph's edges of one edge type: `type` is "src,rel,dst" (or its
/// relation when no other edge type has it); src and dst are ids local to its
/// source and destination node types.
struct typed_edges {
  std::string type;
  std::vector<std::int64_t> src, dst;
  std::vector<float> weight;  // one per added edge on a weighted graph (else empty)
};

/// A typed graph's changes to the nodes of one node type, by local id: `add`
/// nodes (ids: the type's count, then on, in order) with `add_rows` (add x the
/// type's feature width), rows to replace, nodes to remove.
struct typed_nodes {
  std::string type;
  std::int64_t add = 0;
  std::vector<float> add_rows;
  std::vector<std::int64_t> set_ids;
  std::vector<float> set_rows;  // set_ids.size() x the type's feature width
  std::vector<std::int64_t> remove;
};

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
  /// A typed graph's changes (the fields above stay empty there): nodes are
  /// added in the order of `nodes`, before any edge is; new ids come back local.
  std::vector<typed_edges> add_typed, remove_typed;
  std::vector<typed_nodes> nodes;
  /// Where a batch read from a stream came from (empty for a door's batch): the
  /// stream and its entry id, logged with the batch so a redelivered entry is
  /// recognised after a restart.
  std::string source_stream, source_id;

  bool typed() const { return !add_typed.empty() || !remove_typed.empty() || !nodes.empty(); }
  bool empty() const {
    return add_src.empty() && remove_src.empty() && add_nodes == 0 && set_ids.empty() &&
           remove_nodes.empty() && !typed_changes();
  }
  bool typed_changes() const {
    for (const auto& e : add_typed)
      if (!e.src.empty()) return true;
    for (const auto& e : remove_typed)
      if (!e.src.empty()) return true;
    for (const auto& n : nodes)
      if (n.add != 0 || !n.set_ids.empty() || !n.remove.empty()) return true;
    return false;
  }
};

}  // namespace spindle::graph
