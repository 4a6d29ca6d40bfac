// Graph updates on a cluster of real processes: three ranks follow one Redis
// Stream, so they apply its batches in one order; batches published before a
// rank starts are applied before it serves; answers through the coordinator's
// door (batches on every rank's pipeline) and a member's door equal one process
// serving the updated graph, and carry its version; a rank killed and started
// again catches up first; update calls at a rank's door are refused by name.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/npy.hpp"
#include "core/subprocess.hpp"
#include "graph/live_graph.hpp"
#include "nn/ops.hpp"
#include "runtime/graph_stream.hpp"
#include "runtime/graph_updates.hpp"
#include "serving/gnn_pipeline.hpp"
#include "tests/integration/cluster_support.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

struct graph_door {
  std::string endpoint, token;
  // `spindle client` at this door: exit status and output (stdout and stderr).
  std::pair<int, std::string> run(std::vector<std::string> args) const {
    std::vector<std::string> argv = {"/bin/sh", "-c", ""};
    std::string cmd = fmt::format("'{}' client --connect {} --token-file '{}'", SPINDLE_BINARY,
                                  endpoint, token);
    for (const auto& a : args) cmd += " '" + a + "'";
    argv[2] = cmd + " 2>&1";
    auto p = child_process::spawn(argv);
    std::string out;
    while (auto line = p->read_line(30'000)) out += *line + "\n";
    return {p->wait(), out};
  }
  std::uint64_t version() const {
    auto [rc, out] = run({"graph", "version", "--json"});
    if (rc != 0) return 0;
    return nlohmann::json::parse(out)["version"].get<std::uint64_t>();
  }
};

// Every request through `d` answers as `want`, on graph version `version`.
void expect_graph_answers(const graph_door& d, const std::vector<serving::gnn_request>& reqs,
                    const serving::batch_result& want, std::uint64_t version) {
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto [rc, out] = d.run({"--model", "graphsage", "infer", "--seeds",
                            std::to_string(reqs[i].seeds[0]), "--sampler-seed",
                            std::to_string(reqs[i].sampler_seed), "--json"});
    ASSERT_EQ(rc, 0) << out;
    auto j = nlohmann::json::parse(out);
    ASSERT_EQ(j["status"], "ok") << out;
    EXPECT_EQ(j["graph_version"].get<std::uint64_t>(), version) << "request " << i;
    EXPECT_EQ(j["outputs"].get<std::vector<float>>(), want.outputs[i]) << "request " << i;
  }
}

std::uint64_t wait_for_graph_version(const graph_door& d, std::uint64_t v) {
  const auto start = std::chrono::steady_clock::now();
  while (d.version() < v && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return d.version();
}

// Whole copies on every rank, or each rank its partition (`spindle partition`).
class cluster_graph_test : public ::testing::TestWithParam<bool> {};

TEST_P(cluster_graph_test, ranks_follow_one_stream_and_answer_like_one_process) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  auto redis = testing::redis_server::start();
  if (!redis) GTEST_SKIP() << redis.error().to_string();
  const bool partitioned = GetParam();
  cora_cluster c(partitioned ? "cluster_graph_parts" : "cluster_graph");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  if (partitioned) {
    c.serve = c.dir + "/parts";
    auto part = child_process::spawn(
        {SPINDLE_BINARY, "partition", c.cora, "--config", c.config, "--out", c.serve},
        {"SPINDLE_PROGRESS=0"});
    ASSERT_TRUE(part.has_value());
    ASSERT_EQ(part->wait(), 0);
  }
  const std::string endpoint = (*redis)->endpoint(), key = "spindle:graph";
  const std::vector<std::string> updates = {"--graph-updates", "--graph-stream", endpoint};
  std::mt19937 rng(38);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  constexpr std::int64_t kNodes = 2708, kWidth = 1433;
  std::vector<graph::graph_update> batches(3);
  batches[0].add_src = {1, 3, kNodes, 5};  // and a new node, with edges both ways
  batches[0].add_dst = {2, 2, 0, kNodes};
  batches[0].add_nodes = 1;
  for (int k = 0; k < kWidth; ++k) batches[0].add_node_features.push_back(unit(rng));
  batches[0].set_ids = {10};
  for (int k = 0; k < kWidth; ++k) batches[0].set_rows.push_back(unit(rng));
  batches[1].remove_src = {1};
  batches[1].remove_dst = {2};
  batches[1].remove_nodes = {7};
  batches[2].add_src = {8, 9};
  batches[2].add_dst = {kNodes, kNodes};
  // Published before the ranks start: each applies it before it serves.
  ASSERT_TRUE(runtime::publish_graph_update(endpoint, key, batches[0]));

  const std::string token = c.dir + "/admin.token";
  std::vector<std::string> member_door = {"--listen", "127.0.0.1:0", "--admin-token-file", token};
  member_door.insert(member_door.end(), updates.begin(), updates.end());
  auto m1 = c.member(1, {}, member_door);
  auto m2 = std::make_unique<child_process>(c.member(2, {}, updates));
  std::vector<std::string> coord_argv = {SPINDLE_BINARY, "node", "--config", c.config, "--rank",
                                         "0", "--dataset", c.serve, "--model", c.model, "--expect",
                                         "2", "--listen", "127.0.0.1:0", "--admin-token-file",
                                         token};
  coord_argv.insert(coord_argv.end(), updates.begin(), updates.end());
  auto coord = *child_process::spawn(coord_argv);
  auto at0 = coord.wait_for("listening ", 120'000);
  ASSERT_TRUE(at0.has_value()) << at0.error().to_string();
  auto at1 = m1.wait_for("listening ", 120'000);
  ASSERT_TRUE(at1.has_value()) << at1.error().to_string();
  const graph_door d0{*at0, token}, d1{*at1, token};

  auto reqs = serving::degree_requests(*graph::dataset::open(c.cora), 12);
  for (std::int64_t s : {kNodes, std::int64_t{10}, std::int64_t{2}, std::int64_t{0}})
    reqs.push_back({{s}, std::uint64_t(100 + s)});
  EXPECT_EQ(d0.version(), 1u);
  EXPECT_EQ(d1.version(), 1u);
  expect_graph_answers(d0, reqs, single_process_results(c, reqs, {batches[0]}), 1);
  expect_graph_answers(d1, reqs, single_process_results(c, reqs, {batches[0]}), 1);

  // The next batch reaches every door; node 7 is gone everywhere.
  const auto published = std::chrono::steady_clock::now();
  ASSERT_TRUE(runtime::publish_graph_update(endpoint, key, batches[1]));
  EXPECT_EQ(wait_for_graph_version(d0, 2), 2u);
  EXPECT_EQ(wait_for_graph_version(d1, 2), 2u);
  std::printf("version 2 seen at both doors %.0f ms after it was published\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - published)
                  .count());
  std::vector<serving::gnn_request> live;
  for (const auto& r : reqs)
    if (r.seeds[0] != 7) live.push_back(r);
  expect_graph_answers(d0, live, single_process_results(c, live, {batches[0], batches[1]}), 2);
  {  // Calls at once, so that batches run on every rank's pipeline: each answer
     // carries the version it was computed on, and min_version retries do not
     // leak admission slots.
    std::vector<child_process> calls;
    for (int k = 0; k < 16; ++k)
      calls.push_back(*child_process::spawn(
          {SPINDLE_BINARY, "client", "--connect", d0.endpoint, "--model", "graphsage", "infer",
           "--seeds", std::to_string(20 + k), "--min-version", k % 2 ? "2" : "0", "--json"}));
    for (auto& p : calls) {
      std::string out;
      while (auto line = p.read_line(30'000)) out += *line;
      EXPECT_EQ(p.wait(), 0) << out;
      if (out.find('{') != std::string::npos) {
        EXPECT_EQ(nlohmann::json::parse(out)["graph_version"], 2) << out;
      }
    }
    auto [rcs, out] = d0.run({"admin", "stats"});
    EXPECT_EQ(nlohmann::json::parse(out)["models"]["graphsage"]["in_flight"], 0) << out;
  }
  auto [rc7, out7] = d1.run({"--model", "graphsage", "infer", "--seeds", "7", "--json"});
  EXPECT_NE(out7.find("was removed"), std::string::npos) << out7;

  // A door does not take updates itself: the stream is the one order.
  const std::int64_t eleven = 11;
  ASSERT_TRUE(write_npy(c.dir + "/eleven.npy", dtype::i64, {1}, &eleven));
  auto [rc, refused] = d0.run({"graph", "update", "--remove-nodes", c.dir + "/eleven.npy"});
  EXPECT_NE(rc, 0);
  EXPECT_NE(refused.find("from their Redis Stream only"), std::string::npos) << refused;
  (void)rc7;
  {
    auto [rc2, out] = d1.run({"admin", "stats"});
    auto stats = nlohmann::json::parse(out);
    EXPECT_EQ(stats["graph"]["version"], 2) << out;
    EXPECT_EQ(stats["graph"]["stream"]["applied"], 2) << out;
    EXPECT_EQ(stats["graph"]["stream"]["staleness_ms"]["count"], 2) << out;
  }

  // Rank 2 killed; a batch while it is down; started again, it catches up
  // before its pipeline takes batches again.
  m2->signal(SIGKILL);
  m2->wait();
  ASSERT_TRUE(runtime::publish_graph_update(endpoint, key, batches[2]));
  {  // read-your-writes: a call naming the version just published waits for it
    auto [rc3, out] = d0.run({"--model", "graphsage", "infer", "--seeds", "8", "--min-version",
                              "3", "--json"});
    ASSERT_EQ(rc3, 0) << out;
    EXPECT_EQ(nlohmann::json::parse(out)["graph_version"], 3) << out;
  }
  EXPECT_EQ(wait_for_graph_version(d0, 3), 3u);
  m2 = std::make_unique<child_process>(c.member(2, {}, updates));
  ASSERT_TRUE(m2->wait_for("ready", 120'000).has_value());
  ASSERT_TRUE(wait_member(c.config, 2, true, 2));
  expect_graph_answers(d0, live, single_process_results(c, live, batches), 3);
  coord.signal(SIGTERM);
  EXPECT_EQ(coord.wait(), 0);
  for (auto* m : {&m1, m2.get()}) {
    m->signal(SIGTERM);
    m->wait();
  }
}

// `spindle launch --graph-updates --graph-stream`: every rank it starts follows
// the stream, with a log of its own.
TEST(cluster_graph_launch_test, launch_passes_the_stream_to_every_rank) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  auto redis = testing::redis_server::start();
  if (!redis) GTEST_SKIP() << redis.error().to_string();
  cora_cluster c("cluster_graph_launch");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  graph::graph_update u;
  u.add_src = {1, 3};
  u.add_dst = {2, 2};
  ASSERT_TRUE(runtime::publish_graph_update((*redis)->endpoint(), "spindle:graph", u));
  const std::string token = c.dir + "/admin.token";
  auto launch = *child_process::spawn({SPINDLE_BINARY, "launch", "--config", c.config, "--dataset",
                                       c.cora, "--model", c.model, "--listen", "127.0.0.1:0",
                                       "--admin-token-file", token, "--graph-updates",
                                       "--graph-stream", (*redis)->endpoint()});
  auto at = launch.wait_for("[rank 0] listening ", 120'000);
  ASSERT_TRUE(at.has_value()) << at.error().to_string();
  const graph_door d{at->substr(at->rfind(' ') + 1), token};
  EXPECT_EQ(d.version(), 1u);
  auto reqs = serving::degree_requests(*graph::dataset::open(c.cora), 6);
  expect_graph_answers(d, reqs, single_process_results(c, reqs, {u}), 1);
  for (int rank : {0, 1, 2})
    EXPECT_TRUE(std::filesystem::exists(fmt::format("{}/graph.rank{}.log", c.cora, rank)));
  launch.signal(SIGTERM);
  EXPECT_EQ(launch.wait(), 0);
}

INSTANTIATE_TEST_SUITE_P(copies, cluster_graph_test, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "partitioned" : "whole"; });

}  // namespace
}  // namespace spindle
