// Recommendation models in a cluster, with real processes: every door (rank 0's
// and a member's) serves a DLRM through its own parameter server (L1 cache and
// RocksDB PDB per node) over one shared Redis VDB, answers as one process does
// (over inferRec and over SplitRPC, --tensor-models),
// loads a recommendation model through Admin on its node, and refuses a GNN
// load by name.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/subprocess.hpp"
#include "splitrpc/rec_wire.hpp"
#include "tests/integration/cluster_support.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/spindle_cli.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

// `spindle ARGS...` with stdout and stderr together.
testing::cli_outcome spindle_run(const std::vector<std::string>& args) {
  return testing::run_spindle_cli(args);
}

// A batch of `n` samples for a DLRM with 13 dense features and tables of 2,000
// and 500 rows, fixed by `seed`; per sample, then per table, as a batch is.
std::string dlrm_batch(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dense(0.f, 1.f);
  nlohmann::json dense_rows = nlohmann::json::array(), sparse_rows = nlohmann::json::array();
  for (int i = 0; i < n; ++i) {
    std::vector<float> d(13);
    for (auto& x : d) x = dense(rng);
    dense_rows.push_back(d);
    sparse_rows.push_back({{int(rng() % 2000), int(rng() % 2000)}, {int(rng() % 500)}});
  }
  return nlohmann::json{{"dense", dense_rows}, {"sparse", sparse_rows}}.dump();
}

// The scores a door gives the batch in file `batch` for model `name`.
std::vector<double> scores(const std::string& endpoint, const std::string& token,
                           const std::string& name, const std::string& batch) {
  auto r = spindle_run({"client", "--connect", endpoint, "--token-file", token, "--model", name,
                        "rec", "--input", batch, "--json"});
  EXPECT_EQ(r.code, 0) << r.out;
  auto at = r.out.find('{');
  if (r.code != 0 || at == std::string::npos) return {};
  auto j = nlohmann::json::parse(r.out.substr(at));
  EXPECT_EQ(j["status"], "ok") << r.out;
  return j.value("scores", std::vector<double>{});
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i])))
        << what << " sample " << i;
}

// A batch of 4 for the test's DLRM (13 dense features; bags of 2 and 1 keys) over
// SplitRPC and over inferRec at `endpoint`: the same scores.
void expect_split_equals_rec(const std::string& endpoint) {
  auto client = transport::rpc::rpc_client::connect(endpoint, 30000);
  ASSERT_TRUE(client.has_value()) << client.error().to_string();
  std::vector<float> dense(4 * 13);
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = float(i % 7) / 7.0f;
  const std::vector<nn::sparse_input> sparse{{{3, 1999, 40, 7, 0, 12, 600, 5}, {0, 2, 4, 6, 8}},
                                             {{1, 499, 250, 9}, {0, 1, 2, 3, 4}}};
  transport::rpc::rec_call call{"ctr", 4, dense, {}, 0};
  for (const auto& b : sparse) call.sparse.push_back({b.indices, b.offsets});
  auto over_rec = (*client)->infer_rec(call);
  ASSERT_TRUE(over_rec.has_value() && over_rec->status == transport::rpc::rpc_status::ok)
      << endpoint;
  ASSERT_TRUE((*client)->open_split()) << endpoint;
  auto split = (*client)->infer_split("ctr", splitrpc::pack_rec_request(4, dense, sparse));
  ASSERT_TRUE(split.has_value()) << split.error().to_string();
  ASSERT_EQ(split->status, transport::rpc::rpc_status::ok) << endpoint << ": " << split->message;
  ASSERT_EQ(split->result.size(), 4u);
  for (std::size_t b = 0; b < 4; ++b) EXPECT_EQ(split->result[b], over_rec->scores[b]) << b;
}

TEST(cluster_rec_test, every_door_serves_a_dlrm_through_its_parameter_server_on_shared_redis) {
  if (!have_cora()) GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
  auto redis = testing::redis_server::start();
  if (!redis) GTEST_SKIP() << redis.error().to_string();
  cora_cluster c("cluster_rec");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const std::string dlrm = c.dir + "/dlrm", ncf = c.dir + "/ncf", token = c.dir + "/admin.token";
  ASSERT_EQ(spindle_run({"model", "init", "--arch", "dlrm", "--in", "13", "--hidden", "16",
                         "--tables", "2000,500", "--seed", "2", "--out-dir", dlrm})
                .code,
            0);
  ASSERT_EQ(
      spindle_run({"model", "init", "--arch", "ncf", "--tables", "10,20,10,20", "--out-dir", ncf})
          .code,
      0);
  // Each node its own PDB directory; the VDB is the one Redis.
  auto rec_flags = [&](int rank) {
    return std::vector<std::string>{"--dlrm-model",
                                    dlrm,
                                    "--dlrm-name",
                                    "ctr",
                                    "--pdb",
                                    fmt::format("{}/pdb-{}", c.dir, rank),
                                    "--vdb",
                                    "redis",
                                    "--vdb-redis",
                                    (*redis)->endpoint(),
                                    "--hit-rate-threshold",
                                    "1.0",
                                    "--admin-token-file",
                                    token,
                                    "--listen",
                                    "127.0.0.1:0",
                                    "--tensor-models",
                                    "ctr,sum"};
  };
  auto door_member = c.member(1, {}, rec_flags(1));
  auto plain_member = c.member(2, {});
  auto coord = c.coordinator(0, {}, rec_flags(0));
  std::vector<std::string> doors;
  for (auto* p : {&coord, &door_member}) {
    auto listening = p->wait_for("listening ", 120'000);
    ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
    doors.push_back(*listening);
  }
  // One process, the same weights with its tables in memory: the reference.
  auto single = *child_process::spawn({SPINDLE_BINARY, "serve", "--rec-model", "ctr=" + dlrm,
                                       "--listen", "127.0.0.1:0", "--admin-token-file", token});
  auto single_door = single.wait_for("listening ", 120'000);
  ASSERT_TRUE(single_door.has_value()) << single_door.error().to_string();
  for (unsigned seed : {1u, 2u, 3u}) {
    const std::string batch = fmt::format("{}/batch-{}.json", c.dir, seed);
    std::ofstream(batch) << dlrm_batch(16, seed);
    const auto want = scores(*single_door, token, "ctr", batch);
    ASSERT_EQ(want.size(), 16u);
    for (const auto& door : doors) expect_close(scores(door, token, "ctr", batch), want, door);
  }
  // SplitRPC at every door: the DLRM's scores over the split data path equal
  // its inferRec answer at the same door.
  for (const auto& door : doors) expect_split_equals_rec(door);
  // Both nodes wrote their misses to the shared level 2.
  auto keys = child_process::spawn(
      {"/bin/sh", "-c", fmt::format("redis-cli -p {} dbsize", (*redis)->port())});
  std::string dbsize;
  while (auto line = keys->read_line(10'000)) dbsize += *line;
  keys->wait();
  ASSERT_FALSE(dbsize.empty()) << "redis-cli dbsize printed nothing";
  EXPECT_GT(std::stol(dbsize), 0) << dbsize;
  // Admin through a member's door: a recommendation model loads on that node
  // and answers there; a GNN loads too (every node with a door follows it:
  // cluster_models_test), and is unloaded again.
  auto load = spindle_run(
      {"client", "--connect", doors[1], "--token-file", token, "admin", "load", "ncf", ncf});
  EXPECT_EQ(load.code, 0) << load.out;
  auto ncf_call =
      spindle_run({"client", "--connect", doors[1], "--token-file", token, "--model", "ncf", "rec",
                   "--sparse", "1", "--sparse", "2", "--sparse", "3", "--sparse", "4", "--json"});
  EXPECT_NE(ncf_call.out.find("\"ok\""), std::string::npos) << ncf_call.out;
  auto gnn = spindle_run(
      {"client", "--connect", doors[1], "--token-file", token, "admin", "load", "other", c.model});
  EXPECT_EQ(gnn.code, 0) << gnn.out;
  auto gnn_gone = spindle_run(
      {"client", "--connect", doors[1], "--token-file", token, "admin", "unload", "other"});
  EXPECT_EQ(gnn_gone.code, 0) << gnn_gone.out;
  auto unload = spindle_run(
      {"client", "--connect", doors[0], "--token-file", token, "admin", "unload", "graphsage"});
  EXPECT_NE(unload.code, 0);
  EXPECT_NE(unload.out.find("cannot be unloaded here"), std::string::npos) << unload.out;
  for (auto* p : {&single, &door_member, &plain_member, &coord}) {
    p->signal(SIGTERM);
    p->wait();
  }
}

}  // namespace
}  // namespace spindle
