// A GNN described as a stack of operations (model.toml `arch = "stack"` with
// one `[[op]]` table per operation), as a user's PyG module computes it:
// message-passing layers (each consumes one sampled hop), node-wise layers
// (Linear, BatchNorm, LayerNorm, activations) and joins (residual add, JK cat
// and max). spindle_client.export writes it from a live PyG module; anything
// it does not describe is refused, never approximated. Plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace spindle::config {

enum class op_kind {
  sage,        // PyG SAGEConv: aggr mean|sum|max|min, normalize, root_weight, project, bias
  gcn,         // PyG GCNConv: add_self_loops, normalize, improved, bias; degrees of the graph or block
  gat,         // PyG GATConv: heads, concat, negative_slope, add_self_loops, bias
  gin,         // PyG GINConv's aggregation (1 + eps) x_i + sum_j x_j (eps: <prefix>.eps); its nn follows as ops
  linear,      // torch.nn.Linear (bias optional)
  batch_norm,  // BatchNorm1d in eval mode (running statistics, affine optional)
  layer_norm,  // torch.nn.LayerNorm over the last dimension (affine optional)
  relu, elu, leaky_relu, gelu, tanh, sigmoid, prelu,
  add,         // residual: the sum of its inputs (each input's first rows)
  cat,         // JumpingKnowledge cat: inputs side by side
  max,         // JumpingKnowledge max: elementwise maximum of the inputs
  log_softmax, softmax,
  mul,         // elementwise product of its inputs (each input's first rows): a Hadamard decoder
  gatv2,       // PyG GATv2Conv: heads, concat, negative_slope, add_self_loops, bias (lin_l, lin_r, att)
  transformer, // PyG TransformerConv: heads, concat, beta, root_weight, bias, edge_dim
  res_gated,   // PyG ResGatedGraphConv with its sigmoid gate: root_weight, bias
  gcn_propagate,  // D^-1/2 (A [+ I]) D^-1/2 x without weights: one hop of SGConv or TAGConv
  scale,       // alpha * x (to_hetero's mean over edge types: their sum over the count)
  mean,        // elementwise mean of the inputs (HeteroConv's aggr="mean")
  gine,        // PyG GINEConv's (1 + eps) x_i + sum_j ReLU(x_j + e_ji); edge_dim; nn follows as ops
};
std::string_view to_string(op_kind k);
bool is_message_passing(op_kind k);
/// Kinds that normalise by GCN's degrees (gcn, gcn_propagate).
bool is_gcn_normalised(op_kind k);

/// How GCNConv normalises: by the graph's degrees (PyG's full-graph answer when
/// every neighbour is sampled; the default) or by degrees inside the sampled block.
enum class gcn_norm { graph, block };

struct gnn_op {
  op_kind kind = op_kind::relu;
  std::string name;                 // the value it produces (default "op<i>")
  std::vector<std::string> inputs;  // values it reads; default: the previous op's ("x": features)
  std::string prefix;               // tensor names: <prefix>.weight, <prefix>.lin_l.weight, ...
  int in = 0, out = 0;              // widths (out per head for GAT)
  std::string aggr = "mean";        // sage
  bool normalize = false, root_weight = true, project = false, bias = true;  // sage, gcn, linear
                                                                             // (gcn: normalize true)
  bool add_self_loops = true, improved = false;                              // gcn, gat
  gcn_norm norm = gcn_norm::graph;                                           // gcn
  int heads = 1;                                                             // gat
  bool concat = true;                                                        // gat, gatv2, transformer
  bool beta = false;                                                         // transformer
  bool qkv_bias = true;  // transformer, res_gated: their key/query/value Linears have biases
  float negative_slope = 0.2f;  // gat (0.2); leaky_relu (0.01 unless given)
  float alpha = 1.0f;           // elu
  float eps = 1e-5f;  // batch_norm, layer_norm; gin's eps when <prefix>.eps is absent (0 unless given)
  bool affine = true;           // batch_norm, layer_norm
  bool approximate_tanh = false;  // gelu(approximate="tanh")
  int channels = 1;               // prelu: 1 or the width
  /// gine: GINEConv's edge_dim, the edge attributes' width (e_ji = lin(edge_attr),
  /// tensors <prefix>.lin.weight and .lin.bias); 0: e_ji = edge_attr, as wide as x.
  /// gat, gatv2, transformer: their edge_dim (<prefix>.lin_edge.weight, no bias;
  /// gat also att_edge); with add_self_loops a self-loop's attributes are the mean
  /// of its target's other edges' (PyG's fill_value="mean", the only one served).
  int edge_dim = 0;
  int width = 0;                  // the width it produces (filled by validate_ops)
  /// Typed models (config/model_types.hpp): the model's edge type whose edges this
  /// message-passing op reads (-1: every edge). With two inputs it is bipartite:
  /// inputs[0] the source type's value, inputs[1] the target type's.
  int relation = -1;
  int in_dst = 0;  // a bipartite op's target input width (filled by validation)
  int layer = -1;  // typed models: the sampled block it consumes (filled by validation)
  std::string node_type;  // typed models: the node type of its value's rows (filled by validation)
};

/// Whether `op` reads a separate target value (a typed model's bipartite op).
inline bool is_bipartite(const gnn_op& op) { return op.relation >= 0 && op.inputs.size() == 2; }

/// Checks names, inputs and widths along the stack (features are `in` wide),
/// fills each op's `width`, and returns how many message-passing ops (hops) there are.
/// The last op must produce `out` columns.
expected<int> validate_ops(std::vector<gnn_op>& ops, int in, int out);
/// A link model's decoder (`[[decoder_op]]` tables): node-wise ops reading the
/// pair's embeddings "z_src" and "z_dst" (`width` wide each; the first op reads
/// z_src unless it names its inputs), ending in one column, the score. Fills widths.
status validate_decoder_ops(std::vector<gnn_op>& ops, int width);
/// Whether any op reads edge attributes.
bool reads_edge_attr(const std::vector<gnn_op>& ops);
/// gine, and attention ops with edge_dim.
bool reads_edge_attr(const gnn_op& op);
/// Checks a validated stack's edge-attribute ops against the served graph's
/// attributes (`cols` wide, 0: the dataset has none, `dataset` naming it): each
/// op reading them needs them, edge_dim (gine without it: its input width) wide.
status check_edge_attr(const std::vector<gnn_op>& ops, std::int64_t cols,
                       std::string_view dataset);
/// The `[[table]]` tables of `ops` (what to_toml writes for a stack model: "op",
/// and a link model's "decoder_op").
std::string ops_to_toml(const std::vector<gnn_op>& ops, std::string_view table = "op");

}  // namespace spindle::config
