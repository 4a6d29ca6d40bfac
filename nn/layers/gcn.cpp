// PyG GCNConv: propagate(norm, x W) + b, normalised by the graph's or the
// sampled block's degrees (add_self_loops, improved, normalize as PyG's); and
// gcn_propagate, the same propagation without weights (one hop of SGConv, whose
// Linear follows its K hops, or of TAGConv, whose K + 1 Linears read every hop).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  s.add("lin.weight", {op.out, in}, "projection");
  if (op.bias) s.add("bias", {op.out}, "bias");
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  SPINDLE_ASSIGN_OR_RETURN(auto h, x.linear(*x.in[0], "lin.weight", "", op.out));
  gcn_options o{op.add_self_loops, op.improved, op.normalize};
  SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gcn(x.a, *x.b, h, x.degree, o, x.pool));
  add_bias_rows(y, x.weight("bias"));
  return y;
}

expected<tensor> propagate_forward(const layer_input& x) {
  gcn_options o{x.op.add_self_loops, false, x.op.normalize};
  return propagate_gcn(x.a, *x.b, *x.in[0], x.degree, o, x.pool);
}

// No weights: only the propagated rows.
layer_memory propagate_memory(const config::gnn_op& op, std::int64_t, const hop_dims* hop) {
  if (!hop) return {};
  return {{}, {{hop->num_dst, op.width}}};
}

}  // namespace

const layer_kind gcn{&weights, &forward, &hop_memory};
const layer_kind gcn_propagate{&no_weights, &propagate_forward, &propagate_memory};

}  // namespace spindle::nn::layers
