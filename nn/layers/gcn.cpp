// PyG GCNConv: propagate(norm, x W) + b, normalised by the graph's or the
// sampled block's degrees (add_self_loops, improved, normalize as PyG's).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  s.add("lin.weight", {op.out, in}, "projection");
  if (op.bias) s.add("bias", {op.out}, "bias");
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  SPINDLE_ASSIGN_OR_RETURN(auto h, linear(x.a, *x.in[0], x.weight("lin.weight"), {}, op.out, x.pool));
  gcn_options o{op.add_self_loops, op.improved, op.normalize};
  SPINDLE_ASSIGN_OR_RETURN(auto y, propagate_gcn(x.a, *x.b, h, x.degree, o, x.pool));
  add_bias_rows(y, x.weight("bias"));
  return y;
}

}  // namespace

const layer_kind gcn{&weights, &forward, &hop_memory};

}  // namespace spindle::nn::layers
