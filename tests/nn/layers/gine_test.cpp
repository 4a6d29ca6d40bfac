// The gine unit (PyG GINEConv's aggregation) against a hand computation, with
// and without edge_dim's projection, and a block without edge attributes refused.
#include <gtest/gtest.h>

#include "nn/layers/layer.hpp"

namespace spindle::nn {
namespace {

struct gine_case {
  heap_allocator a;
  std::vector<float> x{1, -2, 0.5f, 1, -3, 2};  // 3 src nodes x 2 columns
  std::vector<std::int64_t> indptr{0, 2, 3};    // dst 0 <- 1, 2; dst 1 <- 0
  std::vector<std::int32_t> indices{1, 2, 0};
  std::map<std::string, tensor> params;
  config::gnn_op op;

  expected<tensor> run(std::span<const float> attr, std::int64_t cols) {
    op.kind = config::op_kind::gine;
    op.prefix = "conv";
    block b{2, 3, indptr, indices, {}, attr, cols};
    auto xt = tensor::borrow(x.data(), {3, 2});
    std::vector<tensor*> in{&xt};
    std::vector<bool> owned{false};
    const layer_input input{a, op, &b, {}, in, owned, nullptr, params};
    return layer_of(op.kind).forward(input);
  }
};

std::vector<float> gine_values(const tensor& t) { return {t.data(), t.data() + t.numel()}; }

TEST(gine_test, sums_relu_of_neighbour_plus_edge_attributes_and_scales_the_root) {
  gine_case c;
  float eps = 0.5f;
  c.params["conv.eps"] = tensor::borrow(&eps, {1});
  const std::vector<float> attr{1, 1, 0, -5, 2, 0.5f};
  auto y = c.run(attr, 2);
  ASSERT_TRUE(y.has_value()) << y.error().message();
  // dst 0: relu(x1 + e0) + relu(x2 + e1) + 1.5 x0 = (1.5, 2) + (0, 0) + (1.5, -3)
  // dst 1: relu(x0 + e2) + 1.5 x1 = (3, 0) + (0.75, 1.5)
  EXPECT_EQ(gine_values(*y), (std::vector<float>{3, -1, 3.75f, 1.5f}));
}

TEST(gine_test, projects_edge_attributes_with_edge_dim) {
  gine_case c;
  c.op.edge_dim = 1;
  c.op.eps = 0.0f;  // model.toml's eps (parse_op's default for gine), read without the tensor
  float w[] = {2, -1}, bias[] = {0.5f, 0};
  c.params["conv.lin.weight"] = tensor::borrow(w, {2, 1});
  c.params["conv.lin.bias"] = tensor::borrow(bias, {2});
  const std::vector<float> attr{1, -1, 2};  // e = (2.5, -1), (-1.5, 1), (4.5, -2)
  auto y = c.run(attr, 1);
  ASSERT_TRUE(y.has_value()) << y.error().message();
  EXPECT_EQ(gine_values(*y), (std::vector<float>{4, 1, 6, 1}));
}

TEST(gine_test, a_block_without_edge_attributes_is_refused_by_name) {
  gine_case c;
  auto y = c.run({}, 0);
  ASSERT_FALSE(y.has_value());
  EXPECT_NE(y.error().message().find("gine (conv): its block has 3 edges"), std::string::npos)
      << y.error().message();
}

TEST(gine_test, names_its_projection_only_with_edge_dim) {
  for (int dim : {0, 5}) {
    config::gnn_op op;
    op.kind = config::op_kind::gine;
    op.prefix = "c";
    op.edge_dim = dim;
    std::vector<param_spec> specs;
    weight_list w(op, 0, specs);
    layer_of(op.kind).weights(op, 8, w);
    ASSERT_EQ(specs.size(), dim ? 3u : 1u);
    if (dim) {
      EXPECT_EQ(specs[1].shape, (std::vector<std::int64_t>{8, 5}));
    }
  }
}

}  // namespace
}  // namespace spindle::nn
