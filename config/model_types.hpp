// Typed (heterogeneous) stack models: the node types a model reads, with their
// feature widths, the edge types (src, relation, dst) its message-passing ops
// read by index, and the value answering each node type's seeds: model.toml's
// [[node_type]], [[edge_type]] and [[output]] tables, as export_pyg writes them
// from PyG's to_hetero and HeteroConv modules. Plain values.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/model_ops.hpp"
#include "core/status.hpp"

namespace spindle::config {

struct node_type_desc {
  std::string name;
  int in = 0;  // its feature width: the first `in` columns of its rows
  /// A featureless type's learnt table (PyG's nn.Embedding): the tensor holding
  /// one `in`-wide row per node of the type, row i for its node i; the type's
  /// value is read from it instead of the graph's features. Empty: none.
  std::string embedding;
  std::int64_t embedding_rows = 0;  // the table's rows: the graph's node count of the type
};

struct edge_type_desc {
  std::string src, rel, dst;
  std::vector<int> fanouts;  // per hop; empty: the model's fanouts
};

/// The value whose rows answer seeds of `node_type`.
struct typed_output {
  std::string node_type, value;
};

struct model_types {
  std::vector<node_type_desc> node_types;
  std::vector<edge_type_desc> edge_types;
  std::vector<typed_output> outputs;
  /// A typed link model's pair (model.toml `pair_types = ["user", "movie"]`): a
  /// pair's first node is of pair_types[0], its second of pair_types[1], each
  /// numbered within its type; both are answered types. Empty: not a link model.
  std::vector<std::string> pair_types;
  bool empty() const { return node_types.empty(); }
};

/// The value a typed model's ops read for `node_type`'s features: "x.<name>".
std::string type_input(std::string_view node_type);

/// Checks a typed stack: names, widths and each value's node type along the ops
/// (a message-passing op names an edge type and reads its source type's value,
/// and its target type's when bipartite; joins join one type), fills each op's
/// width and `layer` (the sampled block it consumes: the message-passing depth
/// of its inputs) and returns the number of hops. Every output must be `out` wide.
expected<int> validate_typed_ops(std::vector<gnn_op>& ops, const model_types& t, int out);
/// Each edge type's fanouts (one per hop, 1..100000 or -1) when given.
status validate_type_fanouts(const model_types& t, int hops);

/// For each of a graph's edge types (src, rel, dst), the model's edge type it is
/// (-1: one the model does not read). Refuses, by name, a model edge type or a
/// node type the graph lacks and a node type wider in the model than in the graph
/// (`graph_widths[i]` is graph node type i's feature width), and a type read from
/// an embedding table whose rows are not the graph's node count of the type
/// (`graph_counts[i]`; empty: not checked).
expected<std::vector<int>> bind_edge_types(const model_types& t,
                                           std::span<const std::array<std::string, 3>> graph_edges,
                                           std::span<const std::string> graph_node_types,
                                           std::span<const std::int64_t> graph_widths,
                                           std::span<const std::int64_t> graph_counts = {});
/// The index in `t.outputs` answering `node_type`; the error lists those there are.
expected<std::size_t> find_output(const model_types& t, std::string_view node_type);

/// The [[node_type]], [[edge_type]] and [[output]] tables of `t`.
std::string types_to_toml(const model_types& t);

}  // namespace spindle::config
