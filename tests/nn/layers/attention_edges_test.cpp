// The attention units with edge_dim (PyG GATConv, GATv2Conv, TransformerConv
// reading edge attributes) against hand computations on one-column features:
// each edge's projected attributes join its logit (and TransformerConv's
// message), and a self-loop's are the mean of its target's other edges'.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/layer.hpp"

namespace spindle::nn {
namespace {

struct edge_case {
  heap_allocator a;
  std::vector<float> x{1, 2, 3};                 // 3 src nodes x 1 column
  std::vector<std::int64_t> indptr{0, 3, 4};     // dst 0 <- 1, 2 and itself; dst 1 <- 0
  std::vector<std::int32_t> indices{1, 2, 0, 0};
  std::vector<float> attr{0.5f, -1, 7, 2};       // the 0 -> 0 edge's 7 is dropped with self-loops
  float one = 1, zero = 0;
  std::map<std::string, tensor> params;
  config::gnn_op op;

  explicit edge_case(config::op_kind kind) {
    op.kind = kind;
    op.prefix = "conv";
    op.in = op.out = op.heads = 1;
    op.edge_dim = 1;
    op.bias = false;
    op.qkv_bias = false;
    op.root_weight = false;
    for (const char* n : {"lin_src.weight", "att_src", "att_edge", "lin_edge.weight", "lin_l.weight",
                          "lin_r.weight", "att", "lin_query.weight", "lin_key.weight",
                          "lin_value.weight"})
      params[std::string("conv.") + n] = tensor::borrow(&one, {1, 1});
    params["conv.att_dst"] = tensor::borrow(&zero, {1, 1});
  }
  std::vector<float> run(std::int64_t cols = 1) {
    block b{2, 3, indptr, indices, {}, attr, cols};
    auto xt = tensor::borrow(x.data(), {3, 1});
    std::vector<tensor*> in{&xt};
    std::vector<bool> owned{false};
    const layer_input input{a, op, &b, {}, in, owned, nullptr, params};
    auto y = layer_of(op.kind).forward(input);
    EXPECT_TRUE(y.has_value()) << y.error().message();
    if (!y) return {};
    return {y->data(), y->data() + y->numel()};
  }
};

// Σ softmax(logits)_t values_t.
float softmax_sum(std::vector<float> logits, std::vector<float> values) {
  float mx = logits[0], sum = 0, out = 0;
  for (float l : logits) mx = std::max(mx, l);
  for (float l : logits) sum += std::exp(l - mx);
  for (std::size_t t = 0; t < logits.size(); ++t) out += std::exp(logits[t] - mx) / sum * values[t];
  return out;
}

TEST(attention_edges_test, gat_adds_edge_scores_and_fills_self_loops_with_their_mean) {
  edge_case c(config::op_kind::gat);  // score = x_j + att_edge . e (att_dst 0), slope unused
  const auto y = c.run();
  ASSERT_EQ(y.size(), 2u);
  // dst 0: 1 -> 0 (2 + 0.5), 2 -> 0 (3 - 1), self-loop (1 + mean(0.5, -1))
  EXPECT_NEAR(y[0], softmax_sum({2.5f, 2, 0.75f}, {2, 3, 1}), 1e-6);
  EXPECT_NEAR(y[1], softmax_sum({3, 4}, {1, 2}), 1e-6);  // dst 1: 0 -> 1 (1 + 2), self (2 + 2)
}

TEST(attention_edges_test, gat_without_self_loops_takes_edges_as_given) {
  edge_case c(config::op_kind::gat);
  c.op.add_self_loops = false;
  const auto y = c.run();
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], softmax_sum({2.5f, 2, 8}, {2, 3, 1}), 1e-6);  // the 0 -> 0 edge with its 7
  EXPECT_NEAR(y[1], 1, 1e-6);
}

TEST(attention_edges_test, gatv2_adds_projected_attributes_inside_its_activation) {
  edge_case c(config::op_kind::gatv2);  // logit = x_j + x_i + e, message x_j
  const auto y = c.run();
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], softmax_sum({3.5f, 3, 1.75f}, {2, 3, 1}), 1e-6);
  EXPECT_NEAR(y[1], softmax_sum({5, 6}, {1, 2}), 1e-6);
}

TEST(attention_edges_test, transformer_adds_them_to_keys_and_values) {
  edge_case c(config::op_kind::transformer);  // logit = q_i (k_j + e), message v_j + e
  const auto y = c.run();
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], softmax_sum({2.5f, 2, 8}, {2.5f, 2, 8}), 1e-5);  // no self-loops added
  EXPECT_NEAR(y[1], 3, 1e-6);
}

TEST(attention_edges_test, attributes_of_another_width_are_refused_by_name) {
  edge_case c(config::op_kind::transformer);
  block b{2, 3, c.indptr, c.indices, {}, c.attr, 2};
  auto xt = tensor::borrow(c.x.data(), {3, 1});
  std::vector<tensor*> in{&xt};
  std::vector<bool> owned{false};
  const layer_input input{c.a, c.op, &b, {}, in, owned, nullptr, c.params};
  auto y = layer_of(c.op.kind).forward(input);
  ASSERT_FALSE(y.has_value());
  EXPECT_NE(y.error().message().find("transformer (conv): its block has 4 edges"),
            std::string::npos)
      << y.error().message();
}

}  // namespace
}  // namespace spindle::nn
