// Sampling typed graphs: fanouts per edge type (PyG NeighborLoader on
// HeteroData), both executors alike, and the options refused by name.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "graph/graph_delta.hpp"
#include "graph/sampler.hpp"
#include "test_util.hpp"
#include "typed_util.hpp"

namespace spindle::graph {
namespace {

// Users [0, 50), items [50, 150). Edge types 0 (user, likes, item): item rows
// list users; 1 (item, liked_by, user): user rows list items; 2 (item,
// similar, item): item rows list items. Every row has several of each.
csr_graph users_and_items() {
  std::vector<testing::typed_edge> e;
  for (std::int64_t u = 0; u < 50; ++u)
    for (std::int64_t k = 0; k < 12; ++k) {
      const std::int64_t i = 50 + (u * 7 + k * 13) % 100;
      e.push_back({u, i, 0});
      e.push_back({i, u, 1});
    }
  for (std::int64_t i = 50; i < 150; ++i)
    for (std::int64_t k = 1; k <= 6; ++k) e.push_back({50 + (i + k * 11) % 100, i, 2});
  return testing::make_typed_graph(150, 3, std::move(e));
}

std::vector<std::int64_t> item_seeds() {
  std::vector<std::int64_t> s;
  for (std::int64_t i = 0; i < 20; ++i) s.push_back(50 + i * 5);
  return s;
}

// Per sampled row: how many edges of each type, each checked to be a real edge
// of that type.
std::vector<std::map<int, std::int64_t>> counts_per_type(const csr_view& g,
                                                         const sampled_subgraph& s, int hop) {
  std::vector<std::map<int, std::int64_t>> out;
  for (auto r = s.hop_begin(hop); r < s.hop_end[hop - 1]; ++r) {
    std::map<int, std::int64_t> c;
    std::set<std::pair<int, std::int64_t>> seen;
    const std::int64_t v = s.nodes[std::size_t(r)];
    for (auto e = s.indptr[std::size_t(r)]; e < s.indptr[std::size_t(r + 1)]; ++e) {
      const std::int64_t u = s.nodes[std::size_t(s.indices[std::size_t(e)])];
      const int t = s.edge_types[std::size_t(e)];
      bool real = false;
      for (auto x = g.indptr[v]; x < g.indptr[v + 1]; ++x)
        real = real || (g.neighbour(x) == u && g.edge_types[std::size_t(x)] == t);
      EXPECT_TRUE(real) << v << " <- " << u << " type " << t;
      EXPECT_TRUE(seen.insert({t, u}).second) << "drawn twice: " << u;
      ++c[t];
    }
    out.push_back(c);
  }
  return out;
}

std::int64_t degree_of_type(const csr_view& g, std::int64_t v, int t) {
  std::int64_t d = 0;
  for (auto x = g.indptr[v]; x < g.indptr[v + 1]; ++x) d += g.edge_types[std::size_t(x)] == t;
  return d;
}

TEST(typed_sampler_test, draws_each_relation_up_to_its_own_fanout) {
  const csr_graph c = users_and_items();
  const csr_view g = c.view();
  sample_options o{{1, 1}, false, 7, {{4, 0, 2}, {0, 3, 0}}};
  auto s = inline_executor().sample(g, item_seeds(), o).value();
  ASSERT_EQ(s.edge_types.size(), s.indices.size());
  for (const auto& row : counts_per_type(g, s, 1)) {  // item rows: users (0) and items (2)
    EXPECT_EQ(row.count(0) ? row.at(0) : 0, 4);
    EXPECT_EQ(row.count(2) ? row.at(2) : 0, 2);
    EXPECT_EQ(row.count(1), 0u);
  }
  bool users_at_hop2 = false;
  for (auto r = s.hop_begin(2); r < s.hop_end[1]; ++r) {
    const std::int64_t v = s.nodes[std::size_t(r)];
    const std::int64_t got = s.indptr[std::size_t(r + 1)] - s.indptr[std::size_t(r)];
    if (v < 50) users_at_hop2 = true;
    EXPECT_EQ(got, v < 50 ? std::min<std::int64_t>(3, degree_of_type(g, v, 1)) : 0) << v;
  }
  EXPECT_TRUE(users_at_hop2);
  counts_per_type(g, s, 2);
}

TEST(typed_sampler_test, the_list_form_applies_each_hops_fanout_per_relation) {
  const csr_graph c = users_and_items();
  const csr_view g = c.view();
  auto s = inline_executor().sample(g, item_seeds(), {{3}, false, 1}).value();
  const auto rows = counts_per_type(g, s, 1);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::int64_t v = s.nodes[r];
    EXPECT_EQ(rows[r].at(0), std::min<std::int64_t>(3, degree_of_type(g, v, 0)));
    EXPECT_EQ(rows[r].at(2), std::min<std::int64_t>(3, degree_of_type(g, v, 2)));
  }
}

TEST(typed_sampler_test, minus_one_takes_a_relation_whole_and_zero_skips_it) {
  const csr_graph c = users_and_items();
  const csr_view g = c.view();
  auto s = inline_executor().sample(g, item_seeds(), {{1}, false, 1, {{0, 5, -1}}}).value();
  const auto rows = counts_per_type(g, s, 1);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].count(0), 0u);
    EXPECT_EQ(rows[r].at(2), degree_of_type(g, s.nodes[r], 2));
  }
}

TEST(typed_sampler_test, inline_and_pooled_executors_agree_and_repeat) {
  const csr_graph c = users_and_items();
  thread_pool pool(3);
  pooled_executor pooled(pool, 4);
  sample_options o{{4, 3}, false, 11, {{2, 3, 2}, {1, 2, 3}}};
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < 150; v += 3) seeds.push_back(v);
  auto a = inline_executor().sample(c.view(), seeds, o).value();
  auto b = pooled.sample(c.view(), seeds, o).value();
  auto again = inline_executor().sample(c.view(), seeds, o).value();
  for (const auto* x : {&b, &again}) {
    EXPECT_EQ(a.nodes, x->nodes);
    EXPECT_EQ(a.indptr, x->indptr);
    EXPECT_EQ(a.indices, x->indices);
    EXPECT_EQ(a.edge_types, x->edge_types);
  }
  o.typed_fanouts.clear();
  EXPECT_EQ(inline_executor().sample(c.view(), seeds, o).value().edge_types,
            pooled.sample(c.view(), seeds, o).value().edge_types);
}

TEST(typed_sampler_test, edge_ids_name_each_edge_of_its_type_alike_in_both_executors) {
  const csr_graph c = users_and_items();
  const csr_view g = c.view();
  thread_pool pool(3);
  pooled_executor pooled(pool, 4);
  sample_options o{{4, 3}, false, 11, {{2, 3, 2}, {1, 2, 3}}};
  o.edge_ids = true;
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v < 150; v += 3) seeds.push_back(v);
  auto a = inline_executor().sample(g, seeds, o).value();
  auto b = pooled.sample(g, seeds, o).value();
  EXPECT_EQ(a.edge_ids, b.edge_ids);
  ASSERT_EQ(a.edge_ids.size(), a.indices.size());
  for (std::size_t r = 0; r + 1 < a.indptr.size(); ++r)
    for (auto e = a.indptr[r]; e < a.indptr[r + 1]; ++e) {
      const auto id = a.edge_ids[std::size_t(e)];
      const auto v = a.nodes[r];
      ASSERT_TRUE(id >= g.indptr[v] && id < g.indptr[v + 1]);
      EXPECT_EQ(g.neighbour(id), a.nodes[std::size_t(a.indices[std::size_t(e)])]);
      EXPECT_EQ(g.edge_types[std::size_t(id)], a.edge_types[std::size_t(e)]);
    }
}

TEST(typed_sampler_test, layer_blocks_carry_the_edge_types) {
  const csr_graph c = users_and_items();
  auto s = inline_executor().sample(c.view(), item_seeds(), {{3, 2}, false, 5}).value();
  for (int layer = 0; layer < 2; ++layer) {
    const block_view b = s.layer_block(layer);
    ASSERT_EQ(b.edge_types.size(), b.indices.size());
    EXPECT_TRUE(std::equal(b.edge_types.begin(), b.edge_types.end(), s.edge_types.begin()));
  }
  const csr_graph plain = testing::make_graph(4, {{0, 1}, {1, 2}, {2, 3}});
  auto u = inline_executor().sample(plain.view(), std::vector<std::int64_t>{1}, {{2}, false, 5});
  ASSERT_TRUE(u.has_value());
  EXPECT_TRUE(u->edge_types.empty());
  EXPECT_TRUE(u->layer_block(0).edge_types.empty());
}

std::string refusal(const csr_view& g, const sample_options& o) {
  auto s = inline_executor().sample(g, std::vector<std::int64_t>{50}, o);
  return s ? std::string("sampled") : s.error().message();
}

TEST(typed_sampler_test, refuses_typed_fanouts_that_do_not_fit) {
  const csr_graph c = users_and_items();
  const csr_view g = c.view();
  EXPECT_NE(
      refusal(g, {{2, 2}, false, 0, {{1, 1, 1}}}).find("typed_fanouts: 1 hops, but fanouts has 2"),
      std::string::npos);
  EXPECT_NE(refusal(g, {{2}, false, 0, {{1, 1}}})
                .find("typed_fanouts[0]: 2 values, but the graph "
                      "has 3 edge types"),
            std::string::npos);
  EXPECT_NE(refusal(g, {{2}, false, 0, {{1, -2, 1}}}).find("typed_fanouts[0][1] = -2"),
            std::string::npos);
  const csr_graph plain = testing::make_graph(60, {{0, 1}, {1, 50}});
  EXPECT_NE(
      refusal(plain.view(), {{2}, false, 0, {{1}}}).find("typed_fanouts: the graph is untyped"),
      std::string::npos);
}

TEST(typed_sampler_test, reads_through_a_graph_delta_and_refuses_the_device_draw) {
  const csr_graph c = users_and_items();
  csr_view g = c.view();
  graph_delta delta;  // an empty delta: the base's rows, read through it
  delta.base_nodes = delta.num_nodes = g.num_nodes;
  g.delta = &delta;
  const auto through = inline_executor().sample(g, item_seeds(), {{-1, -1}, false, 0});
  const auto plain = inline_executor().sample(c.view(), item_seeds(), {{-1, -1}, false, 0});
  ASSERT_TRUE(through && plain);
  EXPECT_EQ(through->nodes, plain->nodes);
  EXPECT_EQ(through->edge_types, plain->edge_types);
  sampled_subgraph out;
  auto never = [](std::span<const std::int64_t>, int, int, std::vector<std::int64_t>&,
                  std::vector<std::int64_t>&) { return status::ok(); };
  const auto st =
      sample_with_drawer(c.view(), std::vector<std::int64_t>{50}, {{2}, false, 0}, never, out);
  EXPECT_NE(st.message().find("sample_with_drawer: the device draw does not sample typed graphs"),
            std::string::npos);
}

}  // namespace
}  // namespace spindle::graph
