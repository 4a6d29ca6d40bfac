// PyG GINConv's aggregation: (1 + eps) x_i + sum_j x_j (eps: the <prefix>.eps
// buffer, else model.toml's); the conv's nn follows as ops of its own.
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op&, std::int64_t, weight_list& s) {
  s.add("eps", {1}, "eps (model.toml's when absent)", true);
}

expected<tensor> forward(const layer_input& x) {
  const tensor& h = *x.in[0];
  SPINDLE_ASSIGN_OR_RETURN(auto z, propagate(x.a, *x.b, h, reduce_op::sum, x.pool));
  const auto eps = x.weight("eps");
  const float scale = 1.0f + (eps.empty() ? x.op.eps : eps[0]);
  for (std::int64_t r = 0; r < x.b->num_dst; ++r)
    for (std::int64_t c = 0; c < h.cols(); ++c) z.row(r)[c] += scale * h.row(r)[c];
  return z;
}

}  // namespace

const layer_kind gin{&weights, &forward, &hop_memory};

}  // namespace spindle::nn::layers
