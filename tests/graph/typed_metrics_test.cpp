// PSGS and FAP of typed graphs: sampled per edge type, each row's segment of a
// type gives up to l neighbours (as the typed sampler takes them), checked by
// hand on a tiny graph and against the sampler by Monte Carlo; the untyped
// metrics of the same rows differ. Seeds restricted to node types by name.
#include "graph/typed_metrics.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "graph/dataset.hpp"
#include "graph/prepare.hpp"
#include "graph/sampler.hpp"
#include "typed_util.hpp"

namespace spindle::graph {
namespace {

// Row 0 holds 1, 2 (type 0) and 3 (type 1); rows 1-3 hold 0 (type 0).
csr_graph tiny() {
  return testing::make_typed_graph(4, 2, {{1, 0, 0}, {2, 0, 0}, {3, 0, 1}, {0, 1, 0},
                                          {0, 2, 0}, {0, 3, 0}});
}

TEST(typed_metrics_test, each_edge_type_of_a_row_is_sampled_on_its_own) {
  auto c = tiny();
  thread_pool pool(1);
  const std::vector<double> p0 = {1, 0, 0, 0};
  auto m = compute_typed_metrics(c.view(), per_edge_type({1}, 2), p0, pool).value();
  // One of {1, 2} (type 0) and 3 (type 1): 2 sampled edges, seed included 3.
  EXPECT_DOUBLE_EQ(m.psgs[0], 3.0);
  EXPECT_DOUBLE_EQ(m.fap[1], 0.5);
  EXPECT_DOUBLE_EQ(m.fap[2], 0.5);
  EXPECT_DOUBLE_EQ(m.fap[3], 1.0);
  // The untyped metrics take one of the whole row: not what the sampler does.
  c.edge_types.clear();
  auto untyped = compute_metrics(c.view(), {1}, p0, pool).value();
  EXPECT_DOUBLE_EQ(untyped.psgs[0], 2.0);
  EXPECT_NEAR(untyped.fap[3], 1.0 / 3, 1e-6);
}

// Users [0, 60), items [60, 160): rows of each type list several of each kind.
csr_graph users_items_varied() {
  std::vector<testing::typed_edge> e;
  for (std::int64_t u = 0; u < 60; ++u)
    for (std::int64_t k = 0; k < 3 + u % 9; ++k) {
      const std::int64_t i = 60 + (u * 7 + k * 13) % 100;
      e.push_back({u, i, 0});
      e.push_back({i, u, 1});
    }
  for (std::int64_t i = 60; i < 160; ++i)
    for (std::int64_t k = 1; k <= 2 + i % 5; ++k) e.push_back({60 + (i + k * 11) % 100, i, 2});
  return testing::make_typed_graph(160, 3, std::move(e));
}

TEST(typed_metrics_test, psgs_and_fap_agree_with_the_typed_sampler) {
  auto c = users_items_varied();
  const auto g = c.view();
  thread_pool pool(2);
  const std::vector<int> fanouts{4, 3};
  std::vector<double> p0(160, 0.0);
  for (std::int64_t i = 60; i < 160; ++i) p0[std::size_t(i)] = 1.0 / 100;  // item seeds
  auto m = compute_typed_metrics(g, per_edge_type(fanouts, 3), p0, pool).value();
  inline_executor ex;
  const int trials = 40000;
  std::vector<double> visits(160, 0.0), edges(160, 0.0);
  for (int t = 0; t < trials; ++t) {
    const std::int64_t seed = 60 + t % 100;
    std::vector<std::int64_t> s{seed};
    auto sub = ex.sample(g, s, {fanouts, false, std::uint64_t(t)}).value();
    edges[std::size_t(seed)] += double(sub.num_edges());
    visits[std::size_t(seed)] += 1;
    for (auto idx : sub.indices) visits[std::size_t(sub.nodes[std::size_t(idx)])] += 1;
  }
  for (std::int64_t i = 60; i < 160; i += 7)
    EXPECT_NEAR(1 + edges[std::size_t(i)] / (trials / 100), m.psgs[std::size_t(i)],
                0.03 * m.psgs[std::size_t(i)])
        << "seed " << i;
  int checked = 0;
  for (std::int64_t i = 0; i < 160; ++i) {
    if (m.fap[std::size_t(i)] * trials < 4000) continue;
    ++checked;
    EXPECT_NEAR(visits[std::size_t(i)] / trials, m.fap[std::size_t(i)], 0.05 * m.fap[std::size_t(i)])
        << "node " << i;
  }
  EXPECT_GE(checked, 20);
  EXPECT_NEAR(std::accumulate(m.fap.begin(), m.fap.end(), 0.0),
              std::accumulate(m.hop_mass.begin(), m.hop_mass.end(), 0.0), 1e-9);
}

TEST(typed_metrics_test, seeds_restricted_to_node_types_by_name) {
  auto c = users_items_varied();
  dataset_metadata meta;
  meta.node_types = {{"user", 0, 60, 0}, {"item", 60, 100, 0}};
  metrics_request r;
  r.seed_node_types = {"item"};
  auto p0 = request_seed_probabilities(c.view(), meta, r).value();
  EXPECT_EQ(p0[0], 0.0);
  EXPECT_NEAR(p0[60], 0.01, 1e-12);
  r.seed_node_types = {"movie"};
  auto bad = request_seed_probabilities(c.view(), meta, r);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("--seed-node-type movie: no such node type"),
            std::string::npos);
  thread_pool pool(1);
  auto wrong_width = compute_typed_metrics(c.view(), per_edge_type({2}, 2), p0, pool);
  EXPECT_FALSE(wrong_width.has_value());
}

TEST(typed_metrics_test, one_nodes_psgs_read_through_rows_equals_the_whole_graphs) {
  auto c = users_items_varied();
  const auto g = c.view();
  thread_pool pool(1);
  const std::vector<double> p0(160, 1.0 / 160);
  auto row = [&](std::int64_t v, std::vector<std::int64_t>& out, std::vector<std::int16_t>& t) {
    out.clear();
    t.clear();
    for (auto e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
      out.push_back(g.neighbour(e));
      t.push_back(g.edge_types[std::size_t(e)]);
    }
  };
  auto segments = [&](std::int64_t v, std::vector<std::int64_t>& sizes) {
    segment_sizes({g.edge_types.data() + g.indptr[v], std::size_t(g.indptr[v + 1] - g.indptr[v])},
                  sizes);
  };
  for (const std::vector<int>& fanouts : {std::vector<int>{4, 3}, {2}, {-1, 2, 1}}) {
    const auto m =
        compute_typed_metrics(g, per_edge_type(fanouts, 3), p0, pool).value();
    for (std::int64_t v = 0; v < 160; ++v)
      EXPECT_NEAR(typed_node_psgs(v, fanouts, row, segments, 1 << 20), m.psgs[std::size_t(v)],
                  1e-9 * m.psgs[std::size_t(v)])
          << "node " << v << ", " << fanouts.size() << " hops";
  }
  EXPECT_LT(typed_node_psgs(60, {-1, -1, -1}, row, segments, 10), 0);  // past the budget
  EXPECT_LT(typed_node_psgs(0, {}, row, segments, 10), 0);
  std::vector<std::int64_t> sizes;
  segment_sizes(std::vector<std::int16_t>{0, 0, 2, 5, 5, 5}, sizes);
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{2, 1, 3}));
}

}  // namespace
}  // namespace spindle::graph
