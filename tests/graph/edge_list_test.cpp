#include "graph/edge_list.hpp"

#include <gtest/gtest.h>

namespace spindle::graph {
namespace {

edge_list edges(std::vector<std::pair<std::int64_t, std::int64_t>> pairs) {
  edge_list e;
  for (auto [a, b] : pairs) {
    e.src.push_back(a);
    e.dst.push_back(b);
  }
  return e;
}

std::vector<std::int64_t> row(const csr_graph& g, std::int64_t v) {
  std::vector<std::int64_t> out;
  for (auto e = g.indptr[v]; e < g.indptr[v + 1]; ++e) out.push_back(g.indices32[e]);
  return out;
}

// What `prepare` reads to warn about an undirected file read as directed.
TEST(edge_list_test, edge_shape_tells_one_way_symmetric_and_mixed_graphs_apart) {
  auto one_way = build_csr(edges({{0, 1}, {0, 2}, {1, 2}, {2, 3}, {1, 1}}), {});
  ASSERT_TRUE(one_way.has_value());
  auto s = inspect_edge_shape(one_way->csr.view());
  EXPECT_EQ(s.edges, 4);  // the self-loop was dropped
  EXPECT_EQ(s.reciprocated, 0);
  EXPECT_TRUE(s.one_way());
  EXPECT_FALSE(s.symmetric());
  build_options both;
  both.undirected = true;
  auto sym = build_csr(edges({{0, 1}, {0, 2}, {1, 2}}), both);
  ASSERT_TRUE(sym.has_value());
  s = inspect_edge_shape(sym->csr.view());
  EXPECT_EQ(s.edges, 6);
  EXPECT_TRUE(s.symmetric());
  EXPECT_FALSE(s.one_way());
  auto mixed = build_csr(edges({{0, 1}, {2, 1}, {1, 0}}), {});  // a directed graph
  ASSERT_TRUE(mixed.has_value());
  s = inspect_edge_shape(mixed->csr.view());
  EXPECT_EQ(s.reciprocated, 2);
  EXPECT_FALSE(s.one_way());
  EXPECT_FALSE(s.symmetric());
}

TEST(edge_list_test, drops_self_loops_and_duplicates_by_default) {
  auto b = build_csr(edges({{0, 1}, {0, 1}, {1, 1}, {2, 0}}), {});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->csr.num_nodes, 3);
  EXPECT_EQ(row(b->csr, 0), (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(row(b->csr, 1).empty());
  EXPECT_EQ(b->self_loops_dropped, 1);
  EXPECT_EQ(b->duplicates_dropped, 1);
}

TEST(edge_list_test, keeps_them_when_asked) {
  build_options o;
  o.keep_self_loops = o.keep_duplicates = true;
  auto b = build_csr(edges({{0, 1}, {0, 1}, {1, 1}}), o);
  EXPECT_EQ(row(b->csr, 0), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(row(b->csr, 1), (std::vector<std::int64_t>{1}));
}

TEST(edge_list_test, undirected_adds_reverse_edges_once) {
  build_options o;
  o.undirected = true;
  auto b = build_csr(edges({{0, 1}, {1, 0}, {1, 2}}), o);
  EXPECT_EQ(row(b->csr, 0), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(row(b->csr, 1), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(row(b->csr, 2), (std::vector<std::int64_t>{1}));
}

TEST(edge_list_test, relabels_sparse_ids_and_keeps_the_mapping) {
  auto b = build_csr(edges({{100, 7}, {7, 5000}}), {});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->csr.num_nodes, 3);
  EXPECT_EQ(b->original_ids, (std::vector<std::int64_t>{7, 100, 5000}));
  EXPECT_EQ(row(b->csr, 1), (std::vector<std::int64_t>{0}));  // 100 -> 7
  EXPECT_EQ(row(b->csr, 0), (std::vector<std::int64_t>{2}));  // 7 -> 5000
}

TEST(edge_list_test, dense_ids_are_not_relabelled) {
  auto b = build_csr(edges({{0, 2}, {1, 2}}), {});
  EXPECT_TRUE(b->original_ids.empty());
  EXPECT_EQ(b->csr.num_nodes, 3);
}

TEST(edge_list_test, never_relabel_rejects_ids_beyond_num_nodes) {
  build_options o;
  o.relabel = relabel_mode::never;
  o.num_nodes = 3;
  auto b = build_csr(edges({{0, 2}, {1, 3}}), o);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message(), "edge 1: 1 -> 3 out of range (num_nodes=3)");
}

TEST(edge_list_test, duplicate_edges_keep_the_largest_weight) {
  auto e = edges({{0, 1}, {0, 1}});
  e.weight = {0.5f, 2.0f};
  auto b = build_csr(std::move(e), {});
  ASSERT_EQ(b->csr.edge_weight.size(), 1u);
  EXPECT_EQ(b->csr.edge_weight[0], 2.0f);
}

}  // namespace
}  // namespace spindle::graph
