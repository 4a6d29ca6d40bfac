// The layer registry: every op kind has its own unit, a kind outside the
// enumeration is refused by name rather than computed, and a unit's tensors
// and forward pass are the ones the stack interpreter runs.
#include <gtest/gtest.h>

#include <set>

#include "nn/layers/layer.hpp"

namespace spindle::nn {
namespace {

using config::op_kind;

constexpr int kKinds = 27;  // config/model_ops.hpp's op_kind enumerators

TEST(layers_test, every_kind_has_its_own_unit) {
  std::set<const layer_kind*> units;
  const layer_kind* stray = &layer_of(op_kind(250));
  for (int k = 0; k < kKinds; ++k) {
    const auto* u = &layer_of(op_kind(k));
    EXPECT_NE(u, stray) << config::to_string(op_kind(k)) << " has no unit";
    units.insert(u);
  }
  EXPECT_EQ(int(units.size()), kKinds);
}

TEST(layers_test, a_kind_outside_the_enumeration_is_refused) {
  heap_allocator a;
  config::gnn_op op;
  op.kind = op_kind(250);
  auto x = tensor::zeros(a, {2, 3});
  ASSERT_TRUE(x.has_value());
  std::vector<tensor*> in{&*x};
  std::vector<bool> owned{false};
  const std::map<std::string, tensor> params;
  const layer_input input{a, op, nullptr, {}, in, owned, nullptr, params};
  auto y = layer_of(op.kind).forward(input);
  ASSERT_FALSE(y.has_value());
  EXPECT_NE(y.error().message().find("op kind 250 has no layer"), std::string::npos);
}

TEST(layers_test, a_unit_names_its_tensors_under_the_prefix) {
  config::gnn_op op;
  op.kind = op_kind::sage;
  op.prefix = "convs.0";
  op.out = 4;
  op.project = true;
  std::vector<param_spec> specs;
  weight_list w(op, 0, specs);
  layer_of(op.kind).weights(op, 3, w);
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"convs.0.lin.weight", "convs.0.lin.bias",
                                             "convs.0.lin_l.weight", "convs.0.lin_l.bias",
                                             "convs.0.lin_r.weight"}));
  EXPECT_EQ(specs[2].shape, (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(specs[2].purpose, "op 0 sage: mean-aggregated neighbours");
}

TEST(layers_test, an_in_place_activation_copies_an_input_still_needed) {
  heap_allocator a;
  config::gnn_op op;
  op.kind = op_kind::relu;
  auto x = tensor::zeros(a, {1, 2});
  ASSERT_TRUE(x.has_value());
  x->row(0)[0] = -1.0f;
  x->row(0)[1] = 2.0f;
  std::vector<tensor*> in{&*x};
  std::vector<bool> owned{false};  // read again later: must not change
  const std::map<std::string, tensor> params;
  const layer_input input{a, op, nullptr, {}, in, owned, nullptr, params};
  auto y = layer_of(op.kind).forward(input);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(y->row(0)[0], 0.0f);
  EXPECT_EQ(y->row(0)[1], 2.0f);
  EXPECT_EQ(x->row(0)[0], -1.0f);
}

}  // namespace
}  // namespace spindle::nn
