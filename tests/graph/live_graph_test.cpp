// live_graph: a batch of edge, node and feature changes becomes one new
// version read through the base, equal to the graph rebuilt with the changes;
// a bad batch is refused whole, naming its first bad item.
#include "graph/live_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "graph/metrics.hpp"
#include "graph/sampler.hpp"

namespace spindle::graph {
namespace {

// A CSR from rows of neighbours (row v lists what v aggregates over).
csr_graph csr_of(const std::vector<std::vector<std::int64_t>>& rows) {
  csr_graph g;
  g.num_nodes = std::int64_t(rows.size());
  g.indptr.push_back(0);
  for (const auto& r : rows) {
    for (auto n : r) g.indices32.push_back(std::int32_t(n));
    g.indptr.push_back(std::int64_t(g.indices32.size()));
  }
  return g;
}

std::multiset<std::int64_t> row_at(const live_graph& lg, const graph_delta& d, std::int64_t v) {
  std::vector<std::int64_t> s;
  std::vector<float> w;
  auto r = read_row(lg.base(), d, v, s, w);
  return {r.neighbours.begin(), r.neighbours.end()};
}

// 0 <- 1, 0 <- 2, 1 <- 2, 3 alone (rows list in-neighbours).
const std::vector<std::vector<std::int64_t>> kRows = {{1, 2}, {2}, {}, {}};

TEST(live_graph_test, a_batch_is_one_new_version_equal_to_the_rebuilt_graph) {
  auto base = csr_of(kRows);
  live_graph lg(base.view(), {row_direction::in, 2, {}});
  EXPECT_EQ(lg.version(), 0u);
  graph_update u;
  u.add_nodes = 1;
  u.add_node_features = {5.0f, 6.0f};
  u.add_src = {3, 4};  // 3 -> 1 and the new node 4 -> 0
  u.add_dst = {1, 0};
  u.remove_src = {2};  // 2 -> 0 goes
  u.remove_dst = {0};
  auto r = lg.apply(u);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->version, 1u);
  ASSERT_EQ(r->new_ids, std::vector<std::int64_t>{4});
  auto d = lg.current();
  EXPECT_EQ(d->num_nodes, 5);
  EXPECT_EQ(row_at(lg, *d, 0), (std::multiset<std::int64_t>{1, 4}));
  EXPECT_EQ(row_at(lg, *d, 1), (std::multiset<std::int64_t>{2, 3}));
  EXPECT_EQ(row_at(lg, *d, 4), std::multiset<std::int64_t>{});
  ASSERT_NE(d->features.find(4), nullptr);
  EXPECT_EQ(**d->features.find(4), (std::vector<float>{5.0f, 6.0f}));
}

TEST(live_graph_test, a_reader_keeps_its_version_while_writers_publish) {
  auto base = csr_of(kRows);
  live_graph lg(base.view(), {row_direction::in, 0, {}});
  auto before = lg.current();
  graph_update u;
  u.add_src = {3};
  u.add_dst = {2};
  ASSERT_TRUE(lg.apply(u));
  EXPECT_EQ(row_at(lg, *before, 2), std::multiset<std::int64_t>{});
  EXPECT_EQ(row_at(lg, *lg.current(), 2), std::multiset<std::int64_t>{3});
}

TEST(live_graph_test, undirected_graphs_change_both_rows) {
  auto base = csr_of({{1}, {0}, {}});
  live_graph lg(base.view(), {row_direction::both, 0, {}});
  graph_update u;
  u.add_src = {2};
  u.add_dst = {0};
  u.remove_src = {0};
  u.remove_dst = {1};
  ASSERT_TRUE(lg.apply(u));
  auto d = lg.current();
  EXPECT_EQ(row_at(lg, *d, 0), std::multiset<std::int64_t>{2});
  EXPECT_EQ(row_at(lg, *d, 2), std::multiset<std::int64_t>{0});
  EXPECT_EQ(row_at(lg, *d, 1), std::multiset<std::int64_t>{});
}

TEST(live_graph_test, a_bad_batch_is_refused_whole_naming_its_first_bad_item) {
  auto base = csr_of(kRows);
  live_graph lg(base.view(), {row_direction::in, 2, {}});
  auto refused = [&](graph_update u, const std::string& says) {
    auto r = lg.apply(u);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
    EXPECT_EQ(lg.version(), 0u);
    EXPECT_TRUE(lg.current()->empty());
  };
  refused({}, "changes nothing");
  graph_update u;
  u.add_src = {0, 9};
  u.add_dst = {1, 1};
  refused(u, "add_edges.src[1]: node 9 out of range");
  u = {};
  u.add_src = {0};  // fine, but the removal below is not: nothing applies
  u.add_dst = {3};
  u.remove_src = {3};
  u.remove_dst = {0};
  refused(u, "remove_edges[0]: no edge 3 -> 0");
  u = {};
  u.set_ids = {1};
  u.set_rows = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  refused(u, "set_features: row 0 column 1 is not finite");
  u = {};
  u.add_nodes = 1;
  u.add_node_features = {1.0f};
  refused(u, "add_nodes: 1 values for 1 rows of width 2");
  u = {};
  u.remove_nodes = {2};
  u.add_src = {2};
  u.add_dst = {0};
  refused(u, "add_edges.src[0]: node 2 is removed");
}

TEST(live_graph_test, hostile_counts_are_refused_and_many_removals_stay_linear) {
  auto base = csr_of(kRows);
  live_graph lg(base.view(), {row_direction::in, 8, {}});
  graph_update u;
  u.add_nodes = std::int64_t{1} << 62;  // rows x width would wrap past 64 bits
  auto r = lg.apply(u);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("add_nodes: 4611686018427387904 nodes (0 to"),
            std::string::npos);
  u = {};
  u.add_nodes = (std::int64_t{1} << 61) + 1;
  u.add_node_features.assign(8, 1.0f);
  EXPECT_FALSE(lg.apply(u));
  live_graph bare(base.view(), {row_direction::in, 0, {}});  // no features: a count is all
  u = {};
  u.add_nodes = (std::int64_t{1} << 20) + 1;
  r = bare.apply(u);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("add_nodes: 1048577 nodes on a graph without features"),
            std::string::npos)
      << r.error().message();
  u.add_nodes = 3;
  EXPECT_TRUE(bare.apply(u));
  u = {};
  u.set_rows.assign(8, 1.0f);  // rows for no ids: named, not "changes nothing"
  r = lg.apply(u);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("set_features: 8 values for 0 rows"), std::string::npos);
  u = {};
  u.remove_nodes = {3, 3};
  r = lg.apply(u);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("remove_nodes[1]: node 3 is listed twice"), std::string::npos);
  // 200,000 copies of 1 -> 0, then all but one removed in one batch, then two more asked.
  u = {};
  u.add_src.assign(200000, 1);
  u.add_dst.assign(200000, 0);
  ASSERT_TRUE(lg.apply(u));
  u = {};
  u.remove_src.assign(200000, 1);
  u.remove_dst.assign(200000, 0);
  ASSERT_TRUE(lg.apply(u));
  EXPECT_EQ(row_at(lg, *lg.current(), 0), (std::multiset<std::int64_t>{1, 2}));
  u.remove_src = {1, 2, 1};
  u.remove_dst = {0, 0, 0};
  r = lg.apply(u);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("remove_edges[2]: no edge 1 -> 0"), std::string::npos)
      << r.error().message();
}

TEST(live_graph_test, removed_nodes_vanish_from_rows_and_are_refused_as_seeds) {
  auto base = csr_of(kRows);
  live_graph lg(base.view(), {row_direction::in, 0, {}});
  graph_update u;
  u.remove_nodes = {2};
  ASSERT_TRUE(lg.apply(u));
  auto d = lg.current();
  EXPECT_EQ(row_at(lg, *d, 0), std::multiset<std::int64_t>{1});
  EXPECT_EQ(neighbour_count(lg.base(), *d, 0, 2.0f), 1.0f);
  csr_view g = lg.base();
  g.delta = d.get();
  const std::int64_t seed[] = {2};
  auto st = validate_seeds(g, seed);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("seed 2 (position 0) was removed"), std::string::npos);
}

TEST(live_graph_test, the_sampler_reads_through_the_delta_as_through_the_rebuilt_graph) {
  // A ring of 200 nodes; the update adds chords, a new node and removes edges.
  std::vector<std::vector<std::int64_t>> rows(200);
  for (std::int64_t v = 0; v < 200; ++v) rows[std::size_t(v)] = {(v + 1) % 200, (v + 199) % 200};
  auto base = csr_of(rows);
  live_graph lg(base.view(), {row_direction::in, 0, {}});
  graph_update u;
  u.add_nodes = 1;
  for (std::int64_t v = 0; v < 200; v += 7) {
    u.add_src.push_back((v * 13) % 200);
    u.add_dst.push_back(v);
    rows[std::size_t(v)].push_back((v * 13) % 200);
  }
  u.add_src.push_back(200);
  u.add_dst.push_back(5);
  rows[5].push_back(200);
  rows.emplace_back();
  for (std::int64_t v = 1; v < 200; v += 11) {
    u.remove_src.push_back((v + 1) % 200);
    u.remove_dst.push_back(v);
    auto& r = rows[std::size_t(v)];
    r.erase(std::find(r.begin(), r.end(), (v + 1) % 200));
  }
  ASSERT_TRUE(lg.apply(u));
  auto rebuilt = csr_of(rows);
  auto d = lg.current();
  csr_view live = lg.base();
  live.delta = d.get();
  std::vector<std::int64_t> seeds;
  for (std::int64_t v = 0; v <= 200; v += 3) seeds.push_back(v);
  inline_executor ex;
  sample_options o;
  o.fanouts = {-1, -1};
  auto a = ex.sample(live, seeds, o);
  auto b = ex.sample(rebuilt.view(), seeds, o);
  ASSERT_TRUE(a) << a.error().to_string();
  ASSERT_TRUE(b);
  // Same nodes per hop and the same neighbour sets per row (order within a row may differ).
  ASSERT_EQ(a->hop_end, b->hop_end);
  ASSERT_EQ(std::set<std::int64_t>(a->nodes.begin(), a->nodes.end()),
            std::set<std::int64_t>(b->nodes.begin(), b->nodes.end()));
  for (std::int64_t r = 0; r + 1 < std::int64_t(a->indptr.size()); ++r) {
    std::multiset<std::int64_t> x, y;
    for (auto e = a->indptr[r]; e < a->indptr[r + 1]; ++e) x.insert(a->nodes[a->indices[e]]);
    for (auto e = b->indptr[r]; e < b->indptr[r + 1]; ++e) y.insert(b->nodes[b->indices[e]]);
    EXPECT_EQ(x, y) << "row " << r;
  }
}

TEST(live_graph_test, readers_sample_while_a_writer_applies_batches) {
  std::vector<std::vector<std::int64_t>> rows(64);
  for (std::int64_t v = 0; v < 64; ++v) rows[std::size_t(v)] = {(v + 1) % 64};
  auto base = csr_of(rows);
  live_graph lg(base.view(), {row_direction::in, 0, {}});
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    inline_executor ex;
    sample_options o;
    o.fanouts = {-1};
    while (!stop) {
      auto d = lg.current();
      csr_view g = lg.base();
      g.delta = d.get();
      const std::int64_t seed[] = {0};
      auto s = ex.sample(g, seed, o);
      // Version k has added k edges into node 0's row: 1 + k neighbours.
      if (!s || std::int64_t(s->indices.size()) != 1 + std::int64_t(d->version)) ++wrong;
    }
  });
  for (int k = 0; k < 200; ++k) {
    graph_update u;
    u.add_src = {k % 64};
    u.add_dst = {0};
    ASSERT_TRUE(lg.apply(u));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(lg.version(), 200u);
}

TEST(live_graph_test, a_call_waits_for_its_version_or_its_deadline) {
  auto base = csr_of({{1}, {0}, {}});
  live_graph_options o;
  o.feature_dim = 1;
  live_graph lg(base.view(), o);
  using clock = version_waiters::clock;
  std::atomic<int> now_ok{0}, reached{0}, expired{0};
  lg.when_version(0, clock::now() + std::chrono::hours(1), [&](bool ok) { now_ok += ok; });
  EXPECT_EQ(now_ok, 1);  // version 0 holds now: answered at once
  lg.when_version(1, clock::now() + std::chrono::hours(1), [&](bool ok) { reached += ok; });
  lg.when_version(5, clock::now() + std::chrono::milliseconds(50),
                  [&](bool ok) { expired += ok ? 100 : 1; });
  EXPECT_EQ(reached, 0);
  graph_update u;
  u.add_src = {2};
  u.add_dst = {0};
  ASSERT_TRUE(lg.apply(u));
  EXPECT_EQ(reached, 1);  // run by the writer once version 1 is published
  for (int i = 0; i < 200 && expired == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(expired, 1);  // its deadline passed: run with false
  std::atomic<int> cancelled{0};
  lg.when_version(9, clock::now() + std::chrono::hours(1), [&](bool ok) { cancelled += ok ? 100 : 1; });
  lg.cancel_waits();
  EXPECT_EQ(cancelled, 1);
}

TEST(live_graph_test, changed_and_added_nodes_get_the_psgs_of_the_updated_graph) {
  // Rows of a small graph with a hub (row 0) and a chain; fanouts cut both hops.
  std::vector<std::vector<std::int64_t>> rows = {{1, 2, 3, 4, 5}, {2, 3}, {0}, {4}, {}, {0, 1}};
  auto base = csr_of(rows);
  live_graph_options o;
  o.feature_dim = 1;
  o.psgs_fanouts = {3, 2};
  live_graph lg(base.view(), o);
  graph_update u;
  u.add_src = {4, 0, 6};  // 4 -> 1, 0 -> 4, and the new node 6 -> 2
  u.add_dst = {1, 4, 2};
  u.add_nodes = 1;
  u.add_node_features = {0.5f};
  u.remove_src = {0};
  u.remove_dst = {5};  // row 5 loses 0
  ASSERT_TRUE(lg.apply(u));
  rows[1].push_back(4);
  rows[4].push_back(0);
  rows[2].push_back(6);
  rows[5] = {1};
  rows.push_back({});
  thread_pool pool(1);
  auto psgs_of = [&] {
    auto g = csr_of(rows);
    std::vector<double> p0(rows.size(), 1.0 / double(rows.size()));
    return std::move(compute_metrics(g.view(), {3, 2}, p0, pool).value().psgs);
  };
  auto want = psgs_of();
  auto d = lg.current();
  for (std::int64_t v : {1, 2, 4, 5, 6}) {  // every node whose row changed, and the new one
    const double* got = d->psgs.find(v);
    ASSERT_NE(got, nullptr) << "node " << v;
    EXPECT_DOUBLE_EQ(*got, want[std::size_t(v)]) << "node " << v;
  }
  EXPECT_EQ(d->psgs.find(0), nullptr);  // unchanged row: the base's value holds
  // A later batch changes row 6: its PSGS follows; node 2, one hop upstream of
  // it, keeps the value of its own last change (the documented bound).
  u = {};
  u.add_src = {3};
  u.add_dst = {6};
  ASSERT_TRUE(lg.apply(u));
  rows[6] = {3};
  const auto before = want[2];
  want = psgs_of();
  d = lg.current();
  EXPECT_DOUBLE_EQ(*d->psgs.find(6), want[6]);
  EXPECT_DOUBLE_EQ(*d->psgs.find(2), before);
  EXPECT_NE(want[2], before);
  EXPECT_EQ(d->psgs_stale, 0u);
}

}  // namespace
}  // namespace spindle::graph
