#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "../graph/test_util.hpp"
#include "colocation/pmc_check.hpp"

namespace spindle::colocation {
namespace {

// A model of `arch` in a scratch directory, removed when the test binary exits.
std::string model_dir(config::model_arch arch, int layers) {
  static struct sweeper {
    std::vector<std::filesystem::path> dirs;
    ~sweeper() {
      for (const auto& d : dirs) std::filesystem::remove_all(d);
    }
  } made;
  auto dir = std::filesystem::temp_directory_path() /
             ("spindle_pmc_" + std::string(config::to_string(arch)) + std::to_string(::getpid()));
  made.dirs.push_back(dir);
  config::model_desc d;
  d.arch = arch;
  d.in = 32, d.hidden = 64, d.out = 8, d.layers = layers, d.heads = 4;
  EXPECT_TRUE(nn::init_model(d, 3, dir.string()).is_ok());
  return dir.string();
}

// GNNSched §3.3: the estimate tracks the measured peak within 8% and, after the
// safety factor, never falls below it.
TEST(pmc_test, estimate_matches_the_measured_peak_for_every_model_and_block_size) {
  auto g = graph::testing::rmat_graph(12, 8);
  graph::inline_executor sampler;
  for (auto arch : {config::model_arch::graphsage, config::model_arch::gcn, config::model_arch::gat,
                    config::model_arch::gin}) {
    auto dir = model_dir(arch, 2);
    for (std::size_t batch : {1, 16, 256}) {
      std::vector<std::int64_t> seeds(batch);
      for (std::size_t i = 0; i < batch; ++i) seeds[i] = std::int64_t(i * 37 % 4096);
      auto sub = sampler.sample(g.view(), seeds, {{10, 5}, false, 1});
      ASSERT_TRUE(sub.has_value());
      auto c = check_pmc(dir, *sub);
      ASSERT_TRUE(c.has_value()) << c.error().to_string();
      EXPECT_LT(std::abs(c->relative_error()), 0.08)
          << config::to_string(arch) << " batch " << batch << ": estimate "
          << c->estimate.peak_bytes << " measured " << c->measured_peak;
      EXPECT_GE(c->estimate.pmc_bytes, c->measured_peak);
      EXPECT_EQ(c->estimate.pmc_bytes % 512, 0u);
    }
  }
}

TEST(pmc_test, temporaries_and_outputs_are_released_by_lifetime) {
  // Two ops: A (out 1024, temp 4096), B consumes A (out 512). Peak = A's out + temp.
  pmc_graph g;
  g.input_bytes = 512;
  g.ops.push_back({"a", 1024, 1024, 4096, {-1}});
  g.ops.push_back({"b", 0, 512, 0, {0}});
  g.ops.push_back({"c", 0, 2048, 0, {1}});
  auto e = estimate_pmc(g, 1.0);
  EXPECT_EQ(e.weight_bytes, 1024u);
  // live: w 1024 + in 512 = 1536; a: +1024+4096 = 6656 (peak); -4096 = 2560; b: +512 = 3072,
  // a freed -> 2048; c: +2048 = 4096, b freed.
  EXPECT_EQ(e.peak_bytes, 6656u);
  EXPECT_EQ(estimate_pmc(g, 1.1).pmc_bytes, (std::uint64_t(6656 * 1.1) + 1 + 511) / 512 * 512);
}

// A stack model's estimate, op by op, as GNNSched counts it: a message-passing
// op's two projections of (width + 1) x in and the rows of every source node
// (GAT: also its scores and messages over edges plus self-loops), a Linear's
// out x (in + 1), node-wise ops nothing besides their output.
TEST(pmc_test, a_stack_model_is_estimated_op_by_op_from_its_layers) {
  auto d = config::parse_model_desc(R"(
[model]
name = "s"
arch = "stack"
in = 8
out = 3
fanouts = [10, 5]
[[op]]
kind = "sage"
prefix = "convs.0"
in = 8
out = 16
[[op]]
kind = "relu"
[[op]]
kind = "gat"
prefix = "convs.1"
in = 16
out = 4
heads = 2
[[op]]
kind = "linear"
prefix = "head"
in = 8
out = 3
)",
                                    "stack.toml");
  ASSERT_TRUE(d.has_value()) << d.error().to_string();
  const std::vector<block_dims> blocks = {{40, 200, 600}, {10, 40, 120}};
  const auto g = gnn_graph(*d, blocks);
  auto padded = [](std::int64_t r, std::int64_t c) {
    return (std::uint64_t(r * c) * 4 + 511) / 512 * 512;
  };
  ASSERT_EQ(g.ops.size(), 5u);  // four ops and the output
  EXPECT_EQ(g.ops[0].weight_bytes, 2 * padded(17, 8));
  EXPECT_EQ(g.ops[0].temp_bytes, padded(200, 16));
  EXPECT_EQ(g.ops[0].output_bytes, padded(40, 16));
  EXPECT_EQ(g.ops[1].weight_bytes + g.ops[1].temp_bytes, 0u);
  EXPECT_EQ(g.ops[2].weight_bytes, 2 * padded(9, 16));
  EXPECT_EQ(g.ops[2].temp_bytes, padded(40, 16) + padded(130, 2) + padded(130, 8));
  EXPECT_EQ(g.ops[3].weight_bytes, padded(3, 9));
  EXPECT_EQ(g.ops[3].temp_bytes, 0u);
}

}  // namespace
}  // namespace spindle::colocation

namespace spindle::colocation {
namespace {

// DLRM's tables are budgeted as held: float32, or row-wise int8 (dim + 8 bytes
// a row) and int4 (ceil(dim / 2) + 4), as nn/quantized_rows.hpp stores them.
TEST(pmc_test, quantised_tables_are_budgeted_at_the_bytes_they_hold) {
  config::model_desc d;
  d.arch = config::model_arch::dlrm;
  d.dense_in = 13, d.bottom = {64, 16}, d.top = {32, 1}, d.embedding_dim = 16;
  d.table_rows = {1000, 250};
  const auto tables = [&](const std::string& precision) {
    d.table_precision = precision;
    std::uint64_t sum = 0;
    for (const auto& op : dlrm_graph(d, 8).ops)
      if (op.name.starts_with("emb_l.")) sum += op.weight_bytes;
    return sum;
  };
  EXPECT_EQ(tables("fp32"), 1250u * 16 * 4);
  EXPECT_EQ(tables("int8"), 1250u * (16 + 8));
  EXPECT_EQ(tables("int4"), 1250u * (8 + 4));
  d.table_precision = "int8";
  const auto e8 = estimate_pmc(dlrm_graph(d, 8));
  d.table_precision = "fp32";
  EXPECT_EQ(estimate_pmc(dlrm_graph(d, 8)).weight_bytes - e8.weight_bytes,
            1250u * 16 * 4 - 1250u * 24);
}

}  // namespace
}  // namespace spindle::colocation
