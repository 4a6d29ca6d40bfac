// BatchNorm1d in eval mode (running statistics, affine optional) and LayerNorm
// over the last dimension (affine optional), both in place.
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void affine(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  if (!op.affine) return;
  s.add("weight", {in}, "scale");
  s.add("bias", {in}, "shift");
}

void batch_norm_weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  affine(op, in, s);
  s.add("running_mean", {in}, "running mean (eval)");
  s.add("running_var", {in}, "running variance (eval)");
  s.add("num_batches_tracked", {}, "training counter, unused at inference", true, false);
}

expected<tensor> batch_norm_forward(const layer_input& x) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, x.own_first());
  batch_norm_(y, x.weight("running_mean"), x.weight("running_var"), x.weight("weight"),
              x.weight("bias"), x.op.eps);
  return y;
}

expected<tensor> layer_norm_forward(const layer_input& x) {
  SPINDLE_ASSIGN_OR_RETURN(auto y, x.own_first());
  layer_norm_(y, x.weight("weight"), x.weight("bias"), x.op.eps);
  return y;
}

}  // namespace

const layer_kind batch_norm{&batch_norm_weights, &batch_norm_forward, &no_memory};
const layer_kind layer_norm{&affine, &layer_norm_forward, &no_memory};

}  // namespace spindle::nn::layers
