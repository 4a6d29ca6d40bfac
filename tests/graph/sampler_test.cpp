#include "graph/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/graph_delta.hpp"
#include "graph/rmat.hpp"
#include "gpu/kernels/sample_draw.hpp"
#include "test_util.hpp"

namespace spindle::graph {
namespace {

class sampler_test : public ::testing::Test {
 protected:
  void SetUp() override { graph_ = testing::rmat_graph(10, 8); }
  std::vector<std::int64_t> seeds(int n) {
    std::vector<std::int64_t> s;
    for (int i = 0; i < n; ++i) s.push_back((i * 37) % graph_.num_nodes);
    return s;
  }
  thread_pool pool_{2};
  csr_graph graph_;
};

bool is_neighbour(const csr_view& g, std::int64_t v, std::int64_t u) {
  for (auto e = g.indptr[v]; e < g.indptr[v + 1]; ++e)
    if (g.neighbour(e) == u) return true;
  return false;
}

TEST_F(sampler_test, samples_distinct_real_neighbours_up_to_the_fanout) {
  inline_executor ex;
  auto g = graph_.view();
  sample_options o{{15, 5}, false, 42};
  auto s = ex.sample(g, seeds(64), o).value();
  ASSERT_EQ(s.num_hops(), 2);
  for (int k = 1; k <= 2; ++k) {
    for (auto r = s.hop_begin(k); r < s.hop_end[k - 1]; ++r) {
      std::int64_t v = s.nodes[r];
      std::set<std::int64_t> picked;
      for (auto e = s.indptr[r]; e < s.indptr[r + 1]; ++e) {
        std::int64_t u = s.nodes[s.indices[e]];
        EXPECT_TRUE(is_neighbour(g, v, u)) << v << " -> " << u;
        picked.insert(u);
      }
      EXPECT_EQ(static_cast<std::int64_t>(picked.size()), s.indptr[r + 1] - s.indptr[r]);
      EXPECT_EQ(s.indptr[r + 1] - s.indptr[r], std::min<std::int64_t>(g.degree(v), o.fanouts[k - 1]));
    }
  }
}

TEST_F(sampler_test, nodes_are_unique_and_layer_blocks_nest) {
  inline_executor ex;
  auto s = ex.sample(graph_.view(), seeds(32), {{10, 10}, false, 1}).value();
  std::set<std::int64_t> unique(s.nodes.begin(), s.nodes.end());
  EXPECT_EQ(unique.size(), s.nodes.size());
  for (int layer = 0; layer < 2; ++layer) {
    block_view b = s.layer_block(layer);
    EXPECT_LE(b.num_dst, b.num_src);
    for (auto idx : b.indices) EXPECT_LT(idx, b.num_src);
  }
  EXPECT_EQ(s.layer_block(1).num_dst, 32);  // output layer: the seeds
}

TEST_F(sampler_test, duplicate_seeds_share_a_local_id) {
  inline_executor ex;
  std::vector<std::int64_t> dup{5, 9, 5};
  auto s = ex.sample(graph_.view(), dup, {{3}, false, 0}).value();
  EXPECT_EQ(s.hop_end[0], 2);
  EXPECT_EQ(s.seed_local, (std::vector<std::int32_t>{0, 1, 0}));
}

TEST_F(sampler_test, same_seed_same_sample_and_executors_agree) {
  inline_executor inl;
  pooled_executor pooled(pool_, 8);
  sample_options o{{25, 10}, false, 7};
  auto a = inl.sample(graph_.view(), seeds(512), o).value();
  auto b = inl.sample(graph_.view(), seeds(512), o).value();
  auto c = pooled.sample(graph_.view(), seeds(512), o).value();
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.nodes, c.nodes);
  EXPECT_EQ(a.indptr, c.indptr);
  EXPECT_EQ(a.indices, c.indices);
  o.seed = 8;
  auto d = inl.sample(graph_.view(), seeds(512), o).value();
  EXPECT_NE(a.indices, d.indices);
}

// An unchanged graph with an (empty) live delta samples row by row (sample_row);
// without one, the common case draws every row first and reads after: both
// must give the same subgraph, on either executor, for each kind of draw (the
// whole row, Floyd's, a partial shuffle past Floyd's largest fanout).
TEST_F(sampler_test, the_two_pass_hop_draws_what_the_row_by_row_path_draws) {
  graph_delta empty;
  empty.num_nodes = empty.base_nodes = graph_.num_nodes;
  csr_view row_by_row = graph_.view();
  row_by_row.delta = &empty;
  inline_executor inl;
  pooled_executor pooled(pool_, 8);
  for (std::vector<int> fanouts : {std::vector<int>{25, 10}, std::vector<int>{-1, 3},
                                   std::vector<int>{gpu::kMaxFloydFanout + 8, 2}}) {
    sample_options o{fanouts, false, 11};
    auto want = inl.sample(row_by_row, seeds(512), o).value();
    ASSERT_GT(want.num_edges(), 0);
    for (sampling_executor* ex :
         {static_cast<sampling_executor*>(&inl), static_cast<sampling_executor*>(&pooled)}) {
      auto got = ex->sample(graph_.view(), seeds(512), o).value();
      EXPECT_EQ(got.nodes, want.nodes) << fanouts[0];
      EXPECT_EQ(got.indptr, want.indptr) << fanouts[0];
      EXPECT_EQ(got.indices, want.indices) << fanouts[0];
    }
  }
}

TEST_F(sampler_test, out_of_range_seed_is_a_clear_error) {
  inline_executor ex;
  std::vector<std::int64_t> bad{1, 5000};
  auto s = ex.sample(graph_.view(), bad, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(), "seed 5000 (position 1) out of range (num_nodes=1024)");
  EXPECT_FALSE(ex.sample(graph_.view(), bad, {{}, false, 0}).has_value());
  EXPECT_FALSE(ex.sample(graph_.view(), std::vector<std::int64_t>{1}, {{5}, true, 0}).has_value());
}

TEST_F(sampler_test, all_neighbours_fanout_takes_every_edge) {
  inline_executor ex;
  std::vector<std::int64_t> one{3};
  auto s = ex.sample(graph_.view(), one, {{-1}, false, 0}).value();
  EXPECT_EQ(s.num_edges(), graph_.view().degree(3));
}

TEST(weighted_sampler_test, draws_by_weight_and_never_picks_zero_weight) {
  // Node 0 has neighbours 1..4 with weights 0, 1, 1, 8.
  edge_list e;
  e.src = {0, 0, 0, 0};
  e.dst = {1, 2, 3, 4};
  e.weight = {0, 1, 1, 8};
  build_options b;
  b.relabel = relabel_mode::never;
  auto g = build_csr(std::move(e), b).value().csr;
  inline_executor ex;
  std::vector<int> count(5, 0);
  std::vector<std::int64_t> seed{0};
  for (std::uint64_t t = 0; t < 4000; ++t) {
    auto s = ex.sample(g.view(), seed, {{1}, true, t}).value();
    ASSERT_EQ(s.num_edges(), 1);
    count[s.nodes[s.indices[0]]]++;
  }
  EXPECT_EQ(count[1], 0);
  EXPECT_NEAR(count[4] / 4000.0, 0.8, 0.03);  // 8 / (1 + 1 + 8)
}

}  // namespace
}  // namespace spindle::graph

namespace spindle::graph {
namespace {

// Each sampled edge's recorded CSR position is an edge of its row's node, to
// the neighbour sampled.
void expect_edge_ids_match(const csr_view& g, const sampled_subgraph& s) {
  ASSERT_EQ(s.edge_ids.size(), s.indices.size());
  for (std::int64_t r = 0; r + 1 < std::int64_t(s.indptr.size()); ++r) {
    const std::int64_t v = s.nodes[std::size_t(r)];
    for (auto e = s.indptr[r]; e < s.indptr[r + 1]; ++e) {
      const std::int64_t id = s.edge_ids[std::size_t(e)];
      ASSERT_GE(id, g.indptr[v]);
      ASSERT_LT(id, g.indptr[v + 1]);
      EXPECT_EQ(g.neighbour(id), s.nodes[std::size_t(s.indices[std::size_t(e)])]);
    }
  }
}

TEST(sampler_edge_ids_test, are_off_by_default_and_cost_nothing) {
  const auto graph = testing::rmat_graph(9, 8);
  inline_executor ex;
  auto s = ex.sample(graph.view(), std::vector<std::int64_t>{1, 2, 3}, {{5, 5}, false, 3}).value();
  EXPECT_TRUE(s.edge_ids.empty());
}

TEST(sampler_edge_ids_test, name_each_sampled_edge_and_inline_equals_pooled) {
  const auto graph = testing::rmat_graph(10, 8);
  thread_pool pool{2};
  inline_executor inl;
  pooled_executor pooled(pool, 8);
  std::vector<std::int64_t> seeds;
  for (int i = 0; i < 512; ++i) seeds.push_back((i * 37) % graph.num_nodes);
  for (std::vector<int> fanouts : {std::vector<int>{25, 10}, std::vector<int>{-1, 3}}) {
    sample_options o{fanouts, false, 7};
    o.edge_ids = true;
    auto a = inl.sample(graph.view(), seeds, o).value();
    auto b = pooled.sample(graph.view(), seeds, o).value();
    expect_edge_ids_match(graph.view(), a);
    EXPECT_EQ(a.indices, b.indices);
    EXPECT_EQ(a.edge_ids, b.edge_ids);
    o.edge_ids = false;  // the sample itself is the same with or without them
    EXPECT_EQ(inl.sample(graph.view(), seeds, o).value().indices, a.indices);
  }
}

TEST(sampler_edge_ids_test, are_refused_by_name_through_a_delta_and_by_a_device_drawer) {
  const auto graph = testing::rmat_graph(8, 4);
  sample_options o{{3}, false, 0};
  o.edge_ids = true;
  graph_delta delta;
  delta.num_nodes = delta.base_nodes = graph.num_nodes;
  csr_view live = graph.view();
  live.delta = &delta;
  inline_executor ex;
  auto through = ex.sample(live, std::vector<std::int64_t>{1}, o);
  ASSERT_FALSE(through.has_value());
  EXPECT_NE(through.error().message().find("edge_ids: a graph with live updates"),
            std::string::npos);
  sampled_subgraph out;
  const hop_drawer never = [](auto, int, int, auto&, auto&) { return status::ok(); };
  auto drawn = sample_with_drawer(graph.view(), std::vector<std::int64_t>{1}, o, never, out);
  ASSERT_FALSE(drawn.is_ok());
  EXPECT_NE(drawn.message().find("edge_ids: the device draw"), std::string::npos);
}

}  // namespace
}  // namespace spindle::graph
