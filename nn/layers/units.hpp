// Internal to nn/layers: every kind's unit (one file each, or one file for a
// family: norms, activations, joins) and what several of them share.
#pragma once

#include <algorithm>

#include "nn/layers/layer.hpp"

namespace spindle::nn::layers {

extern const layer_kind sage, gcn, gat, gin;                            // message passing
extern const layer_kind linear_layer;                                   // linear.cpp
extern const layer_kind batch_norm, layer_norm;                         // norms.cpp
extern const layer_kind relu, elu, leaky_relu, gelu, tanh_layer, sigmoid, prelu, log_softmax,
    softmax;                                                            // activations.cpp
extern const layer_kind add, cat, max, mul;                             // joins.cpp

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
