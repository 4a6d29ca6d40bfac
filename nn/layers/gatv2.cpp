// PyG GATv2Conv: x_l = lin_l(x) for sources, x_r = lin_r(x) for targets, the
// logit a . LeakyReLU(x_l_j + x_r_i) per head ("dynamic" attention), softmax
// over each target's edges with one self-loop (add_self_loops), messages x_l_j,
// heads concatenated or averaged, then the bias. share_weights=True exports
// lin_r as lin_l's copy. With edge_dim lin_edge(e_ji) joins the LeakyReLU's sum.
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  const std::int64_t hc = std::int64_t(op.heads) * op.out;
  s.add("lin_l.weight", {hc, in}, "source projection");
  if (op.bias) s.add("lin_l.bias", {hc}, "source projection bias");
  s.add("lin_r.weight", {hc, in}, "target projection");
  if (op.bias) s.add("lin_r.bias", {hc}, "target projection bias");
  s.add("att", {1, op.heads, op.out}, "attention");
  if (op.bias) s.add("bias", {op.concat ? hc : op.out}, "bias");
  add_edge_projection(op, s);
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  const std::int64_t hc = std::int64_t(op.heads) * op.out, c = op.out;
  const tensor& h = *x.in[0];
  SPINDLE_ASSIGN_OR_RETURN(auto xl, x.linear(h, "lin_l.weight", "lin_l.bias", hc));
  SPINDLE_ASSIGN_OR_RETURN(auto xr, x.linear(h.head(x.b->num_dst), "lin_r.weight", "lin_r.bias", hc));
  const gpu::attention_inputs in{xl.data(), xr.data(), x.weight("att").data(), hc, c,
                                 op.negative_slope, gpu::attention_score::gatv2};
  tensor e;  // edge_dim: lin_edge(e_ji), inside each edge's LeakyReLU
  if (op.edge_dim > 0) {
    SPINDLE_ASSIGN_OR_RETURN(e, project_edge_attr(x, hc));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto y, attend(x.a, *x.b, xl, op.heads, in, op.add_self_loops,
                                          edge_terms{op.edge_dim > 0 ? &e : nullptr, false},
                                          x.pool));
  if (!op.concat && op.heads > 1) {
    SPINDLE_ASSIGN_OR_RETURN(y, mean_heads(x.a, y, op.heads));
  }
  add_bias_rows(y, x.weight("bias"));
  return y;
}

layer_memory memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  auto m = attention_memory(op, in, hop);
  add_edge_memory(op, hop, m);
  return m;
}

}  // namespace

const layer_kind gatv2{&weights, &forward, &memory};

}  // namespace spindle::nn::layers
