// PyG ResGatedGraphConv (its default sigmoid gate): out_i = sum_j
// sigmoid(k_i + q_j) * v_j over the edges as given, with k = lin_key(x_i),
// q = lin_query(x_j), v = lin_value(x_j); plus lin_skip(x_i) (root_weight, no
// bias) and the bias.
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  for (const char* lin : {"lin_key", "lin_query", "lin_value"}) {
    s.add(std::string(lin) + ".weight", {op.out, in}, lin);
    if (op.qkv_bias) s.add(std::string(lin) + ".bias", {op.out}, lin);
  }
  if (op.root_weight) s.add("lin_skip.weight", {op.out, in}, "root (the node itself)");
  if (op.bias) s.add("bias", {op.out}, "bias");
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  const std::int64_t nd = x.b->num_dst;
  const tensor& h = *x.in[0];
  auto project = [&](const char* lin, const tensor& rows) {
    return x.linear(rows, std::string(lin) + ".weight", std::string(lin) + ".bias", op.out);
  };
  SPINDLE_ASSIGN_OR_RETURN(auto k, project("lin_key", h.head(nd)));
  SPINDLE_ASSIGN_OR_RETURN(auto q, project("lin_query", h));
  SPINDLE_ASSIGN_OR_RETURN(auto v, project("lin_value", h));
  SPINDLE_ASSIGN_OR_RETURN(auto y, gated_sum(x.a, *x.b, k, q, v, x.pool));
  if (op.root_weight)
    SPINDLE_TRY(x.linear_accumulate(y, h.head(nd), "lin_skip.weight"));
  add_bias_rows(y, x.weight("bias"));
  return y;
}

// Besides the hop's: keys of the targets, queries and values of the sources.
layer_memory memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  auto m = hop_memory(op, in, hop);
  if (hop) m.temp.push_back({hop->num_src, 2 * std::int64_t(op.out)});
  return m;
}

}  // namespace

const layer_kind res_gated{&weights, &forward, &memory};

}  // namespace spindle::nn::layers
