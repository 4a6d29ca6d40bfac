// Compaction while serving: the graph folded into a new base keeps its version
// and every row, feature and removed node; readers running through the switch
// see one version at a time; updates go on during it; a restart reads the new
// base and the log that followed it; a compaction that fails leaves the graph
// serving as it was.
#include "graph/compactor.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "graph/compact.hpp"
#include "graph/compaction_files.hpp"
#include "graph/prepare.hpp"
#include "test_util.hpp"

namespace spindle::graph {
namespace {

namespace fs = std::filesystem;

struct node_state {
  std::vector<std::int64_t> row;  // sorted
  std::vector<float> features;
  bool removed = false;
  bool operator==(const node_state&) const = default;
};

// Every node's row, feature row and removal as readers see them at `d`.
std::vector<node_state> state_of(const dataset& ds, const live_graph& lg, const graph_delta& d) {
  std::vector<node_state> out(std::size_t(d.num_nodes));
  const csr_view base = lg.base_of(d);
  const auto features = d.base ? d.base->features() : ds.features();
  const std::int64_t f = ds.feature_dim();
  std::vector<std::int64_t> s;
  std::vector<float> w;
  for (std::int64_t v = 0; v < d.num_nodes; ++v) {
    auto& n = out[std::size_t(v)];
    n.removed = d.is_removed(v);
    if (n.removed) continue;
    const auto r = read_row(base, d, v, s, w);
    n.row.assign(r.neighbours.begin(), r.neighbours.end());
    std::sort(n.row.begin(), n.row.end());
    if (const auto* row = d.features.find(v))
      n.features = **row;
    else if (v < d.base_nodes)
      n.features.assign(features.begin() + v * f, features.begin() + (v + 1) * f);
  }
  return out;
}

struct served {
  std::string dir, log_path;
  std::unique_ptr<dataset> ds;
  std::shared_ptr<graph_log> log;
  std::unique_ptr<compactor> comp;

  explicit served(const std::string& name) {
    dir = testing::temp_dir(name);
    generate_options o;
    o.rmat.scale = 8;
    o.rmat.edge_factor = 4;
    o.feature_dim = 4;
    o.metrics.fanouts = {5, 5};
    thread_pool pool(1);
    EXPECT_TRUE(generate_dataset(o, dir + "/data", pool).is_ok());
    log_path = dir + "/data/graph.log";
  }
  // Opens the dataset and its live graph as a server start does.
  void start() {
    ds = std::make_unique<dataset>(dataset::open(dir + "/data").value());
    auto files = current_graph_files(log_path).value();
    live_graph_options lo;
    lo.feature_dim = ds->feature_dim();
    lo.psgs_fanouts = ds->metadata().fanouts;
    csr_view base = ds->graph();
    if (!files.base_dir.empty()) {
      lo.base_dataset = std::make_shared<const dataset>(dataset::open(files.base_dir).value());
      lo.base_version = base_version(lo.base_dataset->metadata());
      base = lo.base_dataset->graph();
    }
    log = graph_log::open(files.log, base, log_sync::data).value();
    auto* l = log.get();
    lo.log = [l](const graph_update& u, std::uint64_t v) { return l->write(u, v); };
    lo.sync = [l] { return l->sync(); };
    lo.rollback = [l] { l->rollback(); };
    ds->set_live(std::make_shared<live_graph>(ds->graph(), std::move(lo)));
    ASSERT_TRUE(log->replay(*ds->live()));
    comp = std::make_unique<compactor>(*ds, log, compactor_options{log_path, 0});
  }
  void stop() {
    comp.reset();
    log.reset();
    ds.reset();
  }
  live_graph& live() { return *ds->live(); }
  std::vector<node_state> state() { return state_of(*ds, live(), *live().current()); }
};

graph_update edges(std::vector<std::int64_t> src, std::vector<std::int64_t> dst) {
  graph_update u;
  u.add_src = std::move(src);
  u.add_dst = std::move(dst);
  return u;
}

TEST(compactor_test, a_compaction_keeps_the_graph_and_its_version_and_a_restart_reads_it) {
  served s("keeps");
  s.start();
  graph_update a = edges({1, 2, 3}, {0, 0, 7});
  a.add_nodes = 2;
  a.add_node_features = {1, 2, 3, 4, 5, 6, 7, 8};
  a.set_ids = {9};
  a.set_rows = {0.5f, 0.25f, 0.125f, 1};
  ASSERT_TRUE(s.live().apply(a));
  graph_update b = edges({256, 257}, {0, 256});  // the new nodes take part
  b.remove_nodes = {5};
  ASSERT_TRUE(s.live().apply(b));
  const auto before = s.state();
  const auto version = s.live().version();

  ASSERT_TRUE(s.comp->compact_now());
  auto d = s.live().current();
  EXPECT_EQ(d->version, version);
  ASSERT_TRUE(d->base);
  EXPECT_TRUE(d->rows.empty());
  EXPECT_TRUE(d->features.empty());
  EXPECT_EQ(d->base_nodes, 258);
  EXPECT_EQ(s.state(), before);
  EXPECT_FALSE(d->base->psgs().empty());  // recomputed over the new graph
  EXPECT_EQ(s.live().compactions().done, 1u);
  auto refused = s.live().apply(edges({5}, {0}));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("node 5 is removed"), std::string::npos);
  const auto files = current_graph_files(s.log_path).value();
  EXPECT_EQ(files.base_dir, compaction_files(s.log_path, version).base_dir);
  EXPECT_EQ(fs::file_size(s.log_path), kGraphLogHeaderBytes);  // its batches are in the base

  ASSERT_TRUE(s.live().apply(edges({10, 11}, {12, 12})));
  ASSERT_TRUE(s.comp->compact_now());
  EXPECT_FALSE(fs::exists(files.base_dir));  // the replaced base is gone
  EXPECT_FALSE(fs::exists(files.log));
  ASSERT_TRUE(s.live().apply(edges({13}, {14})));
  const auto last = s.state();
  const auto last_version = s.live().version();
  s.stop();

  s.start();  // a restart: the second base and the one batch after it
  EXPECT_EQ(s.live().version(), last_version);
  EXPECT_EQ(s.state(), last);
  EXPECT_TRUE(s.live().current()->is_removed(5));
  s.stop();
  // The file naming the compacted graph lost: refused, not started from the
  // log alone (cut to its header, it holds none of the updates).
  fs::rename(s.log_path + ".current", s.log_path + ".saved");
  auto lost = current_graph_files(s.log_path);
  ASSERT_FALSE(lost);
  EXPECT_NE(lost.error().message().find(".current is missing"), std::string::npos)
      << lost.error().message();
  {  // a .current naming files elsewhere (another dataset's log) is refused
    std::ofstream(s.log_path + ".current") << "log=../other/graph.log\nbase=x.base\n";
    auto elsewhere = current_graph_files(s.log_path);
    ASSERT_FALSE(elsewhere);
    EXPECT_NE(elsewhere.error().message().find("not a file name beside the log"),
              std::string::npos)
        << elsewhere.error().message();
  }
  fs::rename(s.log_path + ".saved", s.log_path + ".current");
  EXPECT_TRUE(current_graph_files(s.log_path));
  fs::remove_all(s.dir);
}

TEST(compactor_test, readers_and_updates_go_on_through_compactions) {
  served s("concurrent");
  s.start();
  const auto v0 = s.live().version();
  const auto row0 = s.state()[0].row.size();
  std::atomic<bool> done{false};
  std::atomic<int> readers_wrong{0}, reads{0};
  std::thread reader([&] {
    std::vector<std::int64_t> sc;
    std::vector<float> w;
    while (!done) {  // each batch adds one edge into node 0's row
      auto d = s.live().current();
      const auto r = read_row(s.live().base_of(*d), *d, 0, sc, w);
      if (r.neighbours.size() != row0 + (d->version - v0)) ++readers_wrong;
      ++reads;
    }
  });
  constexpr int kBatches = 150;
  std::thread writer([&] {
    for (int i = 0; i < kBatches; ++i)
      EXPECT_TRUE(s.live().apply(edges({1 + i % 200}, {0})));
  });
  while (s.live().compactions().done < 3 && s.live().version() < v0 + kBatches)
    EXPECT_TRUE(s.comp->compact_now());
  writer.join();
  const auto compactions = s.live().compactions().done;
  done = true;
  reader.join();
  EXPECT_GE(compactions, 1u);
  EXPECT_EQ(readers_wrong.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_EQ(s.live().version(), v0 + kBatches);

  // The same batches on the dataset alone, never compacted, give the same graph.
  live_graph ref(s.ds->graph(), [&] {
    live_graph_options o;
    o.feature_dim = s.ds->feature_dim();
    return o;
  }());
  for (int i = 0; i < kBatches; ++i) ASSERT_TRUE(ref.apply(edges({1 + i % 200}, {0})));
  EXPECT_EQ(s.state(), state_of(*s.ds, ref, *ref.current()));
  s.stop();
  s.start();
  EXPECT_EQ(s.state(), state_of(*s.ds, ref, *ref.current()));
  s.stop();
  fs::remove_all(s.dir);
}

TEST(compactor_test, a_failed_compaction_leaves_the_graph_serving_as_it_was) {
  served s("fails");
  {  // a dataset naming its nodes by input ids: added nodes have none
    auto w = dataset_writer::update(s.dir + "/data").value();
    std::vector<std::int64_t> ids(256);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = std::int64_t(i) * 10;
    ASSERT_TRUE(w.write_node_ids(ids));
    ASSERT_TRUE(w.finish());
  }
  s.start();
  graph_update a = edges({1}, {0});
  a.add_nodes = 1;
  a.add_node_features = {1, 2, 3, 4};
  ASSERT_TRUE(s.live().apply(a));
  const auto before = s.state();
  auto st = s.comp->compact_now();
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("added nodes have none"), std::string::npos) << st.message();
  EXPECT_EQ(s.state(), before);
  EXPECT_FALSE(s.live().current()->base);
  EXPECT_EQ(s.live().compactions().failed, 1u);
  EXPECT_TRUE(s.live().apply(edges({2}, {0})));  // updates go on, and another try says the same
  EXPECT_NE(s.comp->compact_now().message().find("added nodes have none"), std::string::npos);
  EXPECT_FALSE(fs::exists(s.log_path + ".current"));
  s.stop();
  fs::remove_all(s.dir);
}

}  // namespace
}  // namespace spindle::graph
