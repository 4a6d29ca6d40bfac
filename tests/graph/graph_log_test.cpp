// graph_log: acknowledged batches come back on replay; a torn last record is
// dropped (and cut off), damage before the end and a log of another base are
// refused by name.
#include "graph/graph_log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <atomic>
#include <fstream>
#include <thread>

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;

struct fixture {
  csr_graph base;
  std::string path;
  fixture() {
    base.num_nodes = 3;
    base.indptr = {0, 1, 2, 2};
    base.indices32 = {1, 0};
    path = (fs::temp_directory_path() / fmt::format("spindle-graph-log-{}", ::getpid())).string();
    fs::remove(path);
  }
  ~fixture() { fs::remove(path); }
  graph_update edge(std::int64_t u, std::int64_t v) const {
    graph_update g;
    g.add_src = {u};
    g.add_dst = {v};
    return g;
  }
  // A live graph whose batches go through a log at `path`, and what replay found.
  struct opened {
    std::unique_ptr<graph_log> log;
    std::unique_ptr<live_graph> lg;
    expected<log_replay> replayed = log_replay{};
  };
  opened open() {
    opened o;
    auto log = graph_log::open(path, base.view(), log_sync::data);
    if (!log) return {nullptr, nullptr, log.error()};
    o.log = std::move(*log);
    live_graph_options lo;
    lo.feature_dim = 1;
    auto* l = o.log.get();
    lo.log = [l](const graph_update& u, std::uint64_t v) { return l->append(u, v); };
    o.lg = std::make_unique<live_graph>(base.view(), lo);
    o.replayed = o.log->replay(*o.lg);
    return o;
  }
};

TEST(graph_log_test, acknowledged_batches_come_back_in_order) {
  fixture f;
  {
    auto [log, lg, replayed] = f.open();
    ASSERT_TRUE(replayed);
    ASSERT_TRUE(lg->apply(f.edge(2, 0)));
    graph_update n;
    n.add_nodes = 1;
    n.add_node_features = {7.5f};
    n.add_src = {3};
    n.add_dst = {1};
    ASSERT_TRUE(lg->apply(n));
    ASSERT_FALSE(lg->apply(f.edge(9, 0)));  // refused: never logged
  }
  auto [log, lg, r] = f.open();
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->records, 2u);
  EXPECT_EQ(r->torn_bytes, 0u);
  auto d = lg->current();
  EXPECT_EQ(d->version, 2u);
  EXPECT_EQ(d->num_nodes, 4);
  EXPECT_EQ(**d->features.find(3), std::vector<float>{7.5f});
  ASSERT_TRUE(lg->apply(f.edge(1, 2)));  // appends after the replayed records
  EXPECT_EQ(lg->version(), 3u);
}

TEST(graph_log_test, a_torn_last_record_is_dropped_and_cut_off) {
  fixture f;
  std::uintmax_t whole = 0, two = 0;
  {
    auto [log, lg, replayed] = f.open();
    ASSERT_TRUE(replayed);
    ASSERT_TRUE(lg->apply(f.edge(2, 0)));
    two = log->bytes();
    ASSERT_TRUE(lg->apply(f.edge(2, 1)));
    whole = log->bytes();
  }
  for (std::uintmax_t cut : {whole - 1, whole - 9, two + 5, two + 1}) {
    fs::resize_file(f.path, cut);
    auto [log, lg, r] = f.open();
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->records, 1u) << "cut at " << cut;
    EXPECT_EQ(r->torn_bytes, cut - two);
    EXPECT_EQ(fs::file_size(f.path), two);
    EXPECT_EQ(lg->version(), 1u);
    ASSERT_TRUE(lg->apply(f.edge(2, 1)));  // the log carries on from the good records
    whole = log->bytes();
  }
}

TEST(graph_log_test, damage_before_the_last_record_is_refused_by_offset) {
  fixture f;
  {
    auto [log, lg, replayed] = f.open();
    ASSERT_TRUE(replayed);
    ASSERT_TRUE(lg->apply(f.edge(2, 0)));
    ASSERT_TRUE(lg->apply(f.edge(2, 1)));
  }
  {
    std::fstream io(f.path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(24 + 24 + 3);  // the first record's payload
    io.put('\x7f');
  }
  auto [log, lg, r] = f.open();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("record at byte 24 fails its checksum"), std::string::npos)
      << r.error().message();
}

TEST(graph_log_test, a_log_of_another_base_is_refused) {
  fixture f;
  {
    auto [log, lg, replayed] = f.open();
    ASSERT_TRUE(replayed);
  }
  f.base.num_nodes = 4;
  f.base.indptr.push_back(2);
  auto log = graph_log::open(f.path, f.base.view(), log_sync::os);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message().find("written for a graph of 3 nodes"), std::string::npos);
}

TEST(graph_log_test, a_summary_counts_whole_records_without_the_lock) {
  fixture f;
  auto o = f.open();
  ASSERT_TRUE(o.lg->apply(f.edge(2, 0)));
  ASSERT_TRUE(o.lg->apply(f.edge(2, 1)));
  auto s = summarize_log(f.path);  // while the log is held
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(s->records, 2u);
  EXPECT_EQ(s->last_version, 2u);
  EXPECT_EQ(s->bytes, o.log->bytes());
}

TEST(graph_log_test, one_process_at_a_time_writes_a_log) {
  fixture f;
  auto first = f.open();
  ASSERT_TRUE(first.replayed);
  auto second = graph_log::open(f.path, f.base.view(), log_sync::os);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("another process holds this graph log"),
            std::string::npos);
}

TEST(graph_log_test, a_header_cut_short_starts_the_log_again) {
  fixture f;
  { std::ofstream(f.path, std::ios::binary) << "SPGL"; }
  auto o = f.open();
  ASSERT_TRUE(o.replayed) << o.replayed.error().to_string();
  EXPECT_EQ(o.replayed->records, 0u);
  ASSERT_TRUE(o.lg->apply(f.edge(2, 0)));
}

TEST(graph_log_test, a_batch_round_trips_through_its_encoding) {
  graph_update u;
  u.add_src = {1, 2};
  u.add_dst = {0, 0};
  u.add_nodes = 2;
  u.add_node_features = {1, 2, 3, 4};
  u.set_ids = {5};
  u.set_rows = {9, 8};
  u.remove_nodes = {7};
  auto back = decode_update(encode_update(u));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->add_src, u.add_src);
  EXPECT_EQ(back->add_nodes, 2);
  EXPECT_EQ(back->add_node_features, u.add_node_features);
  EXPECT_EQ(back->set_rows, u.set_rows);
  EXPECT_EQ(back->remove_nodes, u.remove_nodes);
  EXPECT_FALSE(decode_update(encode_update(u).substr(0, 20)));
}

TEST(graph_log_test, a_stream_batch_keeps_its_source_across_a_restart) {
  fixture f;
  {
    auto [log, lg, replayed] = f.open();
    ASSERT_TRUE(replayed);
    auto u = f.edge(2, 0);
    u.source_stream = "tx:graph";
    u.source_id = "1700000000000-3";
    ASSERT_TRUE(lg->apply(u));
    ASSERT_TRUE(lg->apply(f.edge(0, 2)));  // a door's batch leaves the source as it was
    EXPECT_EQ(lg->last_source("tx:graph"), "1700000000000-3");
  }
  auto [log, lg, replayed] = f.open();
  ASSERT_TRUE(replayed) << replayed.error().to_string();
  EXPECT_EQ(replayed->records, 2u);
  EXPECT_EQ(lg->last_source("tx:graph"), "1700000000000-3");
  EXPECT_EQ(lg->last_source("other"), "");
  auto back = decode_update(encode_update(f.edge(1, 1)));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->source_stream.empty());
}

TEST(graph_log_test, concurrent_batches_share_syncs_and_all_come_back) {
  fixture f;
  constexpr int kThreads = 8, kBatches = 25;
  std::uint64_t syncs = 0;
  {
    auto log = graph_log::open(f.path, f.base.view(), log_sync::data);
    ASSERT_TRUE(log);
    std::shared_ptr<graph_log> l = std::move(*log);
    live_graph_options lo;
    lo.feature_dim = 1;
    lo.log = [l](const graph_update& u, std::uint64_t v) { return l->write(u, v); };
    lo.sync = [l] { return l->sync(); };
    lo.rollback = [l] { l->rollback(); };
    live_graph lg(f.base.view(), lo);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int b = 0; b < kBatches; ++b)
          if (!lg.apply(f.edge(t % 3, (t + b) % 3))) ++failures;
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(lg.version(), std::uint64_t(kThreads * kBatches));
    syncs = l->syncs();
    EXPECT_GE(syncs, 1u);
    EXPECT_LE(syncs, std::uint64_t(kThreads * kBatches));
  }
  auto [log, lg, replayed] = f.open();
  ASSERT_TRUE(replayed) << replayed.error().to_string();
  EXPECT_EQ(replayed->records, std::uint64_t(kThreads * kBatches));
  EXPECT_EQ(lg->current()->edges_added, std::uint64_t(kThreads * kBatches));
  RecordProperty("syncs", int(syncs));
}

TEST(graph_log_test, a_failed_sync_refuses_its_batches_and_later_ones_go_on) {
  fixture f;
  int calls = 0;
  bool rolled_back = false;
  live_graph_options lo;
  lo.feature_dim = 1;
  lo.log = [](const graph_update&, std::uint64_t) { return status::ok(); };
  lo.sync = [&] {
    return ++calls == 2 ? make_error(errc::io_error, "disk full") : status::ok();
  };
  lo.rollback = [&] { rolled_back = true; };
  live_graph lg(f.base.view(), lo);
  auto a = f.edge(2, 0);
  a.source_stream = "s";
  a.source_id = "1-0";
  ASSERT_TRUE(lg.apply(a));  // sync 1
  auto b = f.edge(0, 2);
  b.source_stream = "s";
  b.source_id = "2-0";
  auto refused = lg.apply(b);  // sync 2 fails
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("disk full"), std::string::npos);
  EXPECT_TRUE(rolled_back);
  EXPECT_EQ(lg.version(), 1u);
  EXPECT_EQ(lg.last_source("s"), "1-0");  // the refused entry will be read again
  auto again = lg.apply(b);  // built on version 1 again
  ASSERT_TRUE(again);
  EXPECT_EQ(again->version, 2u);
  EXPECT_EQ(lg.last_source("s"), "2-0");
}

}  // namespace
}  // namespace spindle::graph
