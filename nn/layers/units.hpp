// Internal to nn/layers: every kind's unit (one file each, or one file for a
// family: norms, activations, joins) and what several of them share.
#pragma once

#include <algorithm>

#include "nn/layers/layer.hpp"

namespace spindle::nn::layers {

extern const layer_kind sage, gcn, gat, gin, gine, gatv2, transformer, res_gated,
    gcn_propagate;                                                      // message passing
extern const layer_kind linear_layer;                                   // linear.cpp
extern const layer_kind batch_norm, layer_norm;                         // norms.cpp
extern const layer_kind relu, elu, leaky_relu, gelu, tanh_layer, sigmoid, prelu, scale,
    log_softmax, softmax;                                               // activations.cpp
extern const layer_kind add, cat, max, mul, mean;                       // joins.cpp

/// concat=False: the mean over heads of y [rows x heads*c] (gat.cpp).
expected<tensor> mean_heads(allocator& a, const tensor& y, int heads);

/// The memory of an attention op (gat.cpp): its hop's, plus a score and a
/// message per edge (self-loops included) and head.
layer_memory attention_memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop);

/// The block's edge attributes [edges x cols], borrowed; refused by name when the
/// block holds another width (edge_attr.cpp).
expected<tensor> block_edge_attr(const layer_input& x, std::int64_t cols);
/// An attention layer's lin_edge(e_ji) for every block edge [edges x width].
expected<tensor> project_edge_attr(const layer_input& x, std::int64_t width);
/// With edge_dim: lin_edge.weight [heads*out x edge_dim] (no bias, as PyG builds it).
void add_edge_projection(const config::gnn_op& op, weight_list& s);
/// With edge_dim: lin_edge and the projected attributes of every edge.
void add_edge_memory(const config::gnn_op& op, const hop_dims* hop, layer_memory& m);

/// Kinds without tensors.
inline void no_weights(const config::gnn_op&, std::int64_t, weight_list&) {}

/// Node-wise kinds and joins: nothing besides their output.
inline layer_memory no_memory(const config::gnn_op&, std::int64_t, const hop_dims*) { return {}; }

/// A message-passing op: its two projections, and the projected or aggregated
/// rows of every source node.
inline layer_memory hop_memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  if (!hop) return {};
  const std::int64_t w = op.width;
  return {{{w + 1, in}, {w + 1, in}}, {{hop->num_src, std::max<std::int64_t>(w, in)}}};
}

}  // namespace spindle::nn::layers
