// PyG TransformerConv: per head, softmax over each target's edges (as given: no
// self-loops added) of q_i . k_j / sqrt(C), messages v_j (with edge_dim, k_j and
// v_j each plus lin_edge(e_ji)); heads concatenated or averaged; then with root_weight the skip
// x_r = lin_skip(x_i), added, or with beta mixed as b x_r + (1 - b) out where
// b = sigmoid(lin_beta([out, x_r, out - x_r])).
#include <cmath>

#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

std::int64_t width_of(const config::gnn_op& op) {
  return op.concat ? std::int64_t(op.heads) * op.out : op.out;
}

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  const std::int64_t hc = std::int64_t(op.heads) * op.out, w = width_of(op);
  for (const char* lin : {"lin_query", "lin_key", "lin_value"}) {
    s.add(std::string(lin) + ".weight", {hc, in}, lin);
    if (op.qkv_bias) s.add(std::string(lin) + ".bias", {hc}, lin);
  }
  add_edge_projection(op, s);
  if (!op.root_weight) return;
  s.add("lin_skip.weight", {w, in}, "root (the node itself)");
  if (op.bias) s.add("lin_skip.bias", {w}, "root bias");
  if (op.beta) s.add("lin_beta.weight", {1, 3 * w}, "gate between root and messages (beta)");
}

// out = b x_r + (1 - b) out per row, b its gpu::beta_gate.
void mix_beta(tensor& out, const tensor& xr, std::span<const float> w) {
  const std::int64_t n = out.cols();
  for (std::int64_t r = 0; r < out.rows(); ++r) {
    float* o = out.row(r);
    const float* s = xr.row(r);
    const float b = gpu::beta_gate(o, s, w.data(), n);
    for (std::int64_t q = 0; q < n; ++q) o[q] = b * s[q] + (1.0f - b) * o[q];
  }
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  const std::int64_t hc = std::int64_t(op.heads) * op.out, c = op.out, nd = x.b->num_dst;
  const tensor& h = *x.in[0];
  auto project = [&](const char* lin, const tensor& rows, std::int64_t out) {
    return x.linear(rows, std::string(lin) + ".weight", std::string(lin) + ".bias", out);
  };
  SPINDLE_ASSIGN_OR_RETURN(auto query, project("lin_query", h.head(nd), hc));
  SPINDLE_ASSIGN_OR_RETURN(auto key, project("lin_key", h, hc));
  SPINDLE_ASSIGN_OR_RETURN(auto value, project("lin_value", h, hc));
  const gpu::attention_inputs in{key.data(), query.data(), nullptr, hc, c,
                                 1.0f / std::sqrt(float(c)), gpu::attention_score::dot};
  tensor e;  // edge_dim: lin_edge(e_ji), added to each edge's key and value
  if (op.edge_dim > 0) {
    SPINDLE_ASSIGN_OR_RETURN(e, project_edge_attr(x, hc));
  }
  SPINDLE_ASSIGN_OR_RETURN(auto y, attend(x.a, *x.b, value, op.heads, in, false,
                                          edge_terms{op.edge_dim > 0 ? &e : nullptr, true},
                                          x.pool));
  if (!op.concat && op.heads > 1) {
    SPINDLE_ASSIGN_OR_RETURN(y, mean_heads(x.a, y, op.heads));
  }
  if (!op.root_weight) return y;
  SPINDLE_ASSIGN_OR_RETURN(auto xr, project("lin_skip", h.head(nd), width_of(op)));
  if (op.beta)
    mix_beta(y, xr, x.weight("lin_beta.weight"));
  else
    add_(y, xr);
  return y;
}

// Besides the hop's: queries of the targets, keys and values of the sources.
layer_memory memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  auto m = attention_memory(op, in, hop);
  if (hop) m.temp.push_back({hop->num_src, 2 * std::int64_t(op.heads) * op.out});
  add_edge_memory(op, hop, m);
  return m;
}

}  // namespace

const layer_kind transformer{&weights, &forward, &memory};

}  // namespace spindle::nn::layers
