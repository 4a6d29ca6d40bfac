#include "graph/metrics.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "core/npy.hpp"
#include "graph/rmat.hpp"
#include "graph/sampler.hpp"
#include "test_util.hpp"

namespace spindle::graph {
namespace {

// 0->{1,2}, 1->{2}, 2->{0,1,3}, 3->{}; fanouts [1,2]. Values worked by hand:
// q1 = m1 = [1,1,1,0]; q2 = W1 m2 = [1.5, 2, 1, 0]; PSGS = 1 + q1 + q2.
// p1 = p0 W1 = [1/12, 5/24, 3/8, 1/12]; p2 = p1 W2 = [1/4, 1/3, 7/24, 1/4].
TEST(metrics_test, matches_hand_computed_tiny_graph) {
  auto g = testing::make_graph(4, {{0, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 1}, {2, 3}});
  thread_pool pool(1);
  std::vector<double> p0(4, 0.25);
  auto m = compute_metrics(g.view(), {1, 2}, p0, pool).value();
  std::vector<double> psgs{3.5, 4, 3, 1};
  std::vector<double> fap{7.0 / 12, 19.0 / 24, 22.0 / 24, 7.0 / 12};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(m.psgs[i], psgs[i], 1e-12) << i;
    EXPECT_NEAR(m.fap[i], fap[i], 1e-7) << i;  // float32 push accumulators
  }
  EXPECT_NEAR(m.hop_mass[1], 1.0 / 12 + 5.0 / 24 + 3.0 / 8 + 1.0 / 12, 1e-7);
}

class metrics_rmat_test : public ::testing::Test {
 protected:
  void SetUp() override { graph_ = testing::rmat_graph(11, 8); }
  thread_pool pool_{2};
  csr_graph graph_;
};

TEST_F(metrics_rmat_test, total_fap_equals_seed_weighted_psgs) {
  auto g = graph_.view();
  for (auto dist : {config::seed_distribution{config::seed_distribution_kind::uniform, {}},
                    config::seed_distribution{config::seed_distribution_kind::degree, {}}}) {
    auto p0 = seed_probabilities(g, dist).value();
    for (std::vector<int> fanouts : {std::vector<int>{25, 10}, {5, 5, 5}, {-1}}) {
      auto m = compute_metrics(g, fanouts, p0, pool_).value();
      double fap_total = std::accumulate(m.fap.begin(), m.fap.end(), 0.0);
      double expect = 0;
      for (std::int64_t i = 0; i < g.num_nodes; ++i) expect += p0[i] * m.psgs[i];
      EXPECT_NEAR(fap_total, expect, 1e-5 * expect);  // FAP pushes through float32 accumulators
      EXPECT_NEAR(std::accumulate(m.hop_mass.begin(), m.hop_mass.end(), 0.0), fap_total, 1e-9 * expect);
    }
  }
}

TEST_F(metrics_rmat_test, results_do_not_depend_on_thread_count) {
  auto g = graph_.view();
  auto p0 = seed_probabilities(g, {}).value();
  thread_pool one(1);
  auto a = compute_metrics(g, {25, 10}, p0, one).value();
  auto b = compute_metrics(g, {25, 10}, p0, pool_).value();
  for (std::int64_t i = 0; i < g.num_nodes; ++i) {
    EXPECT_NEAR(a.fap[i], b.fap[i], 1e-6 * a.fap[i] + 1e-12);  // parts differ, float32 partial sums
    EXPECT_EQ(a.psgs[i], b.psgs[i]);
  }
}

// Monte-Carlo check against the real sampler: for K = 2 without self-loops the
// expected number of sampled edges per seed is exactly PSGS - 1, and the
// expected visits of node i per request is exactly FAP[i].
TEST_F(metrics_rmat_test, psgs_agrees_with_monte_carlo_sampling) {
  auto g = graph_.view();
  std::vector<int> fanouts{10, 5};
  auto m = compute_metrics(g, fanouts, seed_probabilities(g, {}).value(), pool_).value();
  std::vector<std::int64_t> order(g.num_nodes);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return m.psgs[a] > m.psgs[b]; });
  inline_executor ex;
  for (std::int64_t seed : {order[0], order[10], order[g.num_nodes / 4], order[g.num_nodes / 2]}) {
    if (m.psgs[seed] < 5) continue;  // too little randomness to matter
    std::vector<std::int64_t> s{seed};
    double total = 0;
    const int trials = 10000;
    for (int t = 0; t < trials; ++t) total += 1 + ex.sample(g, s, {fanouts, false, std::uint64_t(t)})->num_edges();
    EXPECT_NEAR(total / trials, m.psgs[seed], 0.02 * m.psgs[seed]) << "seed " << seed;
  }
}

TEST_F(metrics_rmat_test, fap_agrees_with_monte_carlo_access_counts) {
  auto g = graph_.view();
  std::vector<int> fanouts{10, 5};
  config::seed_distribution deg{config::seed_distribution_kind::degree, {}};
  auto p0 = seed_probabilities(g, deg).value();
  auto m = compute_metrics(g, fanouts, p0, pool_).value();
  // Draw request seeds from p0 by inverse CDF with a fixed generator.
  std::vector<double> cdf(p0.size());
  std::partial_sum(p0.begin(), p0.end(), cdf.begin());
  const int requests = 200000;
  std::vector<double> visits(g.num_nodes, 0.0);
  inline_executor ex;
  std::uint64_t state = 12345;
  for (int r = 0; r < requests; ++r) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    std::int64_t seed = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
    std::vector<std::int64_t> s{std::min<std::int64_t>(seed, g.num_nodes - 1)};
    auto sub = ex.sample(g, s, {fanouts, false, static_cast<std::uint64_t>(r)}).value();
    visits[sub.nodes[0]] += 1;
    for (auto idx : sub.indices) visits[sub.nodes[idx]] += 1;
  }
  int checked = 0;
  for (std::int64_t i = 0; i < g.num_nodes; ++i) {
    double expected_count = m.fap[i] * requests;
    if (expected_count < 40000) continue;  // "enough mass": relative noise under 0.5%
    ++checked;
    EXPECT_NEAR(visits[i] / requests, m.fap[i], 0.02 * m.fap[i]) << "node " << i;
  }
  EXPECT_GE(checked, 10);
}

TEST(seed_distribution_test, file_of_observed_seeds_is_normalised_and_checked) {
  auto g = testing::make_graph(3, {{0, 1}, {1, 2}});
  std::string dir = testing::temp_dir("seeds");
  testing::write_text(dir + "/seeds.txt", "0\n2 2\n2\n");
  auto p = seed_probabilities(g.view(), config::parse_seed_distribution(dir + "/seeds.txt")).value();
  EXPECT_EQ(p, (std::vector<double>{0.25, 0, 0.75}));
  testing::write_text(dir + "/bad.txt", "0\n7\n");
  auto bad = seed_probabilities(g.view(), config::parse_seed_distribution(dir + "/bad.txt"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), dir + "/bad.txt: seed #2 = 7 out of range (num_nodes=3)");
}

// The .npy form read each span out of a destroyed temporary (a range-for over *expected).
TEST(seed_distribution_test, npy_file_of_observed_seeds_is_read_whole) {
  auto g = testing::make_graph(3, {{0, 1}, {1, 2}});
  std::string dir = testing::temp_dir("seeds_npy");
  const std::vector<std::int64_t> seeds{0, 2, 2, 2};
  ASSERT_TRUE(write_npy(dir + "/seeds.npy", dtype::i64, {4}, seeds.data()).has_value());
  auto p = seed_probabilities(g.view(), config::parse_seed_distribution(dir + "/seeds.npy")).value();
  EXPECT_EQ(p, (std::vector<double>{0.25, 0, 0.75}));
}

}  // namespace
}  // namespace spindle::graph
