// PyG GATConv: a shared projection, per-head attention over the edges and one
// self-loop per target (add_self_loops), heads concatenated or averaged
// (concat=False), then the bias. Bipartite on a typed graph's edge type: the
// targets' scores come from their own projection (lin_dst). With edge_dim each
// edge's score adds att_edge . lin_edge(e_ji) (ops.hpp's propagate_gat).
#include "gpu/kernels/gat_row.hpp"
#include "nn/layers/units.hpp"

namespace spindle::nn::layers {
namespace {

void weights(const config::gnn_op& op, std::int64_t in, weight_list& s) {
  const std::int64_t out = op.out, heads = op.heads;
  s.add("lin_src.weight", {heads * out, in}, "shared projection");
  if (config::is_bipartite(op)) s.add("lin_dst.weight", {heads * out, op.in_dst}, "target projection");
  s.add("att_src", {1, heads, out}, "source attention");
  s.add("att_dst", {1, heads, out}, "target attention");
  if (op.bias) s.add("bias", {op.concat ? heads * out : out}, "bias");
  add_edge_projection(op, s);
  if (op.edge_dim > 0) s.add("att_edge", {1, heads, out}, "edge attention");
}

// edge_dim's score of every block edge per head: att_edge . lin_edge(e_ji).
expected<tensor> edge_scores(const layer_input& x) {
  const auto& op = x.op;
  const std::int64_t hc = std::int64_t(op.heads) * op.out;
  SPINDLE_ASSIGN_OR_RETURN(auto e, project_edge_attr(x, hc));
  SPINDLE_ASSIGN_OR_RETURN(auto s, tensor::empty(x.a, {e.rows(), op.heads}));
  const auto att = x.weight("att_edge");
  for (std::int64_t r = 0; r < e.rows(); ++r)
    for (int k = 0; k < op.heads; ++k)
      s.row(r)[k] = gpu::gat_node_score(e.data(), hc, op.out, att.data(), r, k);
  return s;
}

expected<tensor> forward(const layer_input& x) {
  const auto& op = x.op;
  SPINDLE_ASSIGN_OR_RETURN(
      auto h, x.linear(*x.in[0], "lin_src.weight", "", op.heads * op.out));
  tensor h_dst;  // a bipartite edge type's targets, projected on their own
  if (config::is_bipartite(op)) {
    SPINDLE_ASSIGN_OR_RETURN(h_dst, x.linear(x.in[1]->head(x.b->num_dst), "lin_dst.weight", "", op.heads * op.out));
  }
  tensor scores;  // edge_dim's per-edge scores
  if (op.edge_dim > 0) {
    SPINDLE_ASSIGN_OR_RETURN(scores, edge_scores(x));
  }
  SPINDLE_ASSIGN_OR_RETURN(
      auto y, propagate_gat(x.a, *x.b, h, op.heads, x.weight("att_src"), x.weight("att_dst"),
                            op.negative_slope, op.add_self_loops,
                            config::is_bipartite(op) ? &h_dst : nullptr,
                            op.edge_dim > 0 ? std::span<const float>(scores.data(), std::size_t(scores.rows() * op.heads))
                                            : std::span<const float>{}));
  if (!op.concat && op.heads > 1) {
    SPINDLE_ASSIGN_OR_RETURN(y, mean_heads(x.a, y, op.heads));
  }
  add_bias_rows(y, x.weight("bias"));
  return y;
}

}  // namespace

expected<tensor> mean_heads(allocator& a, const tensor& y, int heads) {
  const std::int64_t c = y.cols() / heads;
  SPINDLE_ASSIGN_OR_RETURN(auto m, tensor::zeros(a, {y.rows(), c}));
  for (std::int64_t r = 0; r < y.rows(); ++r)
    for (int k = 0; k < heads; ++k)
      for (std::int64_t q = 0; q < c; ++q) m.row(r)[q] += y.row(r)[k * c + q] / float(heads);
  return m;
}

// Besides a message-passing op's projections and rows: the attention scores and
// weighted messages over the block's edges plus one self-loop per target.
layer_memory attention_memory(const config::gnn_op& op, std::int64_t in, const hop_dims* hop) {
  auto m = hop_memory(op, in, hop);
  if (!hop) return m;
  const std::int64_t pairs = hop->num_edges + hop->num_dst;
  m.temp.push_back({pairs, op.heads});
  m.temp.push_back({pairs, std::int64_t(op.heads) * op.out});
  add_edge_memory(op, hop, m);
  return m;
}

const layer_kind gat{&weights, &forward, &attention_memory};

}  // namespace spindle::nn::layers
