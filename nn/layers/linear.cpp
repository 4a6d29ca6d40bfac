// torch.nn.Linear (bias optional).
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  s.add("weight", {op.out, in}, "weight");
  if (op.bias) s.add("bias", {op.out}, "bias");
}

layer_memory memory(const config::gnn_op& op, std::int64_t in, const hop_dims*) {
  return {{{op.out, in + 1}}, {}};
}

expected<tensor> forward(const layer_input& x) {
  return x.linear(*x.in[0], "weight", "bias", x.op.out);
}

}  // namespace

const layer_kind linear_layer{&weights, &forward, &memory};

}  // namespace spindle::nn::layers
