// The cluster's front doors with real processes: a member's own door, rank 0's
// door and Admin, garbage on every port, all answering like one process
// (`launch` is cluster_launch_test.cpp).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <random>

#include "../graph/test_util.hpp"
#include "core/checksum.hpp"
#include "core/subprocess.hpp"
#include "nn/ops.hpp"
#include "serving/gnn_pipeline.hpp"
#include "tests/integration/cluster_support.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

// A front door on a member (`spindle node --rank 1 --listen`): its own batcher
// and pipeline answer calls over the cluster's shards without the coordinator's
// batcher, equal to one process; its Admin.members shows the whole cluster.
TEST(cluster_front_door_test, a_member_with_listen_answers_calls_itself) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_member_door");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const std::string token = c.dir + "/member-admin.token";
  auto door_member = *child_process::spawn(
      {SPINDLE_BINARY, "node", "--config", c.config, "--rank", "1", "--dataset", c.cora, "--model",
       c.model, "--listen", "127.0.0.1:0", "--admin-token-file", token});
  auto plain_member = c.member(2, {});
  auto coord = c.coordinator(100, {});  // serves a short workload, then stays up
  ASSERT_TRUE(coord.wait_for("answers ", 120'000).has_value());
  auto listening = door_member.wait_for("listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  const std::string endpoint = *listening;
  auto client = door_client(endpoint, token);
  const one_process_answers one(c);
  expect_door_answers(client, one, 7);
  auto members = nlohmann::json::parse(client({"admin", "members", "--json"}));
  EXPECT_EQ(members["members"].size(), 3u) << members.dump();
  // Without --json: a table a person reads (no descriptor or bridge bytes).
  const auto table = client({"admin", "members"});
  EXPECT_NE(table.find("RANK"), std::string::npos) << table;
  EXPECT_NE(table.find("shard-a"), std::string::npos) << table;
  EXPECT_LT(table.size(), 2000u) << table;
  // Fanouts are fixed on a cluster: refused on a member's door too, by name.
  auto fanouts = child_process::spawn(
      {"/bin/sh", "-c",
       fmt::format("'{}' client --connect {} --token-file '{}' admin set graphsage fanouts 5,5 "
                   "2>&1",
                   SPINDLE_BINARY, endpoint, token)});
  std::string refusal;
  while (auto line = fanouts->read_line(30'000)) refusal += *line;
  EXPECT_NE(fanouts->wait(), 0);
  EXPECT_NE(refusal.find("members of a cluster sample with the fanouts they started with"),
            std::string::npos)
      << refusal;
  // Its stats count the feature rows its pipeline read, its own and other ranks'.
  auto stats = nlohmann::json::parse(client({"admin", "stats"}));
  const auto& rows = stats["models"]["graphsage"]["feature_rows"];
  EXPECT_GT(rows["local"].get<std::uint64_t>(), 0u) << stats.dump();
  EXPECT_GT(rows["remote"].get<std::uint64_t>(), 0u) << stats.dump();
  // The coordinator is lost: the member's door still answers every call, with
  // the answer or a named refusal for rows only the lost rank held (no hang).
  coord.signal(SIGKILL);
  coord.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int answered = 0;
  for (std::size_t i = 0; i < one.reqs.size(); i += 7) {
    auto p = child_process::spawn({SPINDLE_BINARY, "client", "--connect", endpoint, "--timeout-ms",
                                   "10000", "--model", "graphsage", "infer", "--seeds",
                                   std::to_string(one.reqs[i].seeds[0]), "--sampler-seed",
                                   std::to_string(one.reqs[i].sampler_seed), "--json"});
    std::string out;
    while (auto line = p->read_line(30'000)) out += *line;
    p->wait();
    if (out.find("\"status\": \"ok\"") != std::string::npos ||
        out.find("\"status\":\"ok\"") != std::string::npos)
      ++answered;
    else
      EXPECT_NE(out.find("unavailable"), std::string::npos) << "request " << i << ": " << out;
  }
  std::printf("member door after the coordinator's loss: %d of %zu calls answered\n", answered,
              (one.reqs.size() + 6) / 7);
  for (auto* m : {&door_member, &plain_member}) {
    m->signal(SIGTERM);
    m->wait();
  }
}

// Garbage on every port a serving cluster's ranks listen on (their gates, the
// relays their links run through, the front door, UCX's own listeners) but
// CAF's loopback ports: no rank dies or is declared down, and every answer
// still equals one process's.
TEST(cluster_front_door_test, garbage_on_every_port_of_a_serving_cluster_changes_no_answer) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_garbage");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  std::vector<child_process> ranks;
  std::set<int> caf_ports;
  auto caf_port_of = [&](child_process& p) {
    auto line = p.wait_for("node ", 120'000);
    ASSERT_TRUE(line.has_value());
    caf_ports.insert(testing::port_of(*line));
  };
  for (int rank : {1, 2}) ranks.push_back(c.member(rank, {}));
  const std::string token = c.dir + "/admin.token";
  ranks.push_back(*child_process::spawn({SPINDLE_BINARY, "node", "--config", c.config, "--rank",
                                         "0", "--dataset", c.cora, "--model", c.model, "--expect",
                                         "2", "--listen", "127.0.0.1:0", "--admin-token-file",
                                         token}));
  for (auto& r : ranks) caf_port_of(r);  // members print theirs once rank 0 took them in
  auto listening = ranks.back().wait_for("listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  auto client = door_client(*listening, token);
  const one_process_answers one(c);
  expect_door_answers(client, one, 9);
  std::mt19937 rng(104);
  std::vector<std::string> packets;
  for (int k = 0; k < 10; ++k) {
    std::string p(104 + 100 * k, '\0');
    for (auto& ch : p) ch = char(rng() & 0xff);
    packets.push_back(p);
  }
  std::size_t ports = 0;
  for (auto& r : ranks)
    for (int port : listening_ports(r.pid())) {
      if (caf_ports.count(port)) continue;
      ++ports;
      for (const auto& p : packets) send_and_close(port, p);
    }
  std::printf("garbage to %zu listening ports of three serving ranks\n", ports);
  EXPECT_GE(ports, 6u);  // three gates, two relays, the door, and UCX's
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (auto& r : ranks) EXPECT_FALSE(r.try_wait().has_value()) << "a rank died";
  auto members = nlohmann::json::parse(client({"admin", "members", "--json"}));
  for (const auto& m : members["members"]) {
    EXPECT_TRUE(m["alive"].get<bool>()) << m.dump();
    EXPECT_EQ(m["joins"], 1) << m.dump();
  }
  expect_door_answers(client, one, 9);
  for (auto& r : ranks) r.signal(SIGTERM);
  for (auto& r : ranks) r.wait();
}

// The coordinator serves the cluster behind the Cap'n Proto front door: a GNN
// request through `spindle client infer` answers like a single process, and
// Admin.members lists the three nodes, alive (then rank 1 down after a kill).
TEST(cluster_front_door_test, the_coordinator_serves_clients_and_lists_members) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_door");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  std::vector<child_process> members;
  for (int rank : {1, 2}) members.push_back(c.member(rank, {}));
  const std::string token = c.dir + "/admin.token";
  auto coord = *child_process::spawn({SPINDLE_BINARY, "node", "--config", c.config, "--rank", "0",
                                      "--dataset", c.cora, "--model", c.model, "--expect", "2",
                                      "--listen", "127.0.0.1:0", "--admin-token-file", token});
  auto listening = coord.wait_for("listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  const std::string endpoint = *listening;
  auto client = door_client(endpoint, token);
  // Requests 0..63 of the workload generator: each answer equals the single-process one.
  const one_process_answers one(c);
  expect_door_answers(client, one, 9);
  // Re-plan on request through Admin: every node moves to epoch 1 while the
  // front door keeps answering, and answers stay equal to the single process.
  auto failing =
      child_process::spawn({SPINDLE_BINARY, "client", "--connect", endpoint, "--token-file", token,
                            "admin", "set", "graphsage", "placement_drift_threshold", "2"});
  EXPECT_NE(failing->wait(), 0);  // bad_request, named on stderr
  client({"admin", "set", "graphsage", "replan", "now"});
  auto on_epoch = [&](int epoch) {
    auto j = nlohmann::json::parse(client({"admin", "members", "--json"}));
    for (const auto& m : j["members"])
      if (m["epoch"] != epoch || m["reading"] != epoch || m["old_epoch"] != -1) return false;
    return true;
  };
  bool moved = false;
  for (int i = 0; i < 100 && !moved; ++i) {
    moved = on_epoch(1);
    if (!moved) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(moved) << client({"admin", "members", "--json"});
  auto stats = nlohmann::json::parse(client({"admin", "stats"}));
  EXPECT_EQ(stats["models"]["graphsage"]["placement"]["epoch"], 1) << stats.dump();
  EXPECT_EQ(stats["models"]["graphsage"]["tunables"]["placement_epoch"], "1") << stats.dump();
  expect_door_answers(client, one, 9);
  auto listed = [&] {
    std::map<int, bool> alive;
    auto j = nlohmann::json::parse(client({"admin", "members", "--json"}));
    for (const auto& m : j["members"]) alive[m["rank"].get<int>()] = m["alive"].get<bool>();
    return alive;
  };
  EXPECT_EQ(listed(), (std::map<int, bool>{{0, true}, {1, true}, {2, true}}));
  members[0].signal(SIGKILL);
  members[0].wait();
  bool seen_down = false;
  for (int i = 0; i < 100 && !seen_down; ++i) {
    seen_down = !listed()[1];
    if (!seen_down) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen_down);
  // Admin.members reports the dead member not ready (it said ready=true before).
  const auto after_kill = nlohmann::json::parse(client({"admin", "members", "--json"}));
  for (const auto& m : after_kill["members"])  // a named object: the loop reads into it
    if (m["rank"] == 1) {
      EXPECT_FALSE(m["ready"].get<bool>()) << m.dump();
    }
  // Still serving with rank 1 gone (its rows come from replicas or fail by name).
  auto out = nlohmann::json::parse(
      client({"--model", "graphsage", "infer", "--seeds", std::to_string(one.reqs[0].seeds[0]),
              "--sampler-seed", std::to_string(one.reqs[0].sampler_seed), "--json"}));
  EXPECT_TRUE(out["status"] == "ok" ||
              out["message"].get<std::string>().find("shard") != std::string::npos)
      << out.dump();
  stop_cluster(coord, members, 1);  // members[0] was killed
}

}  // namespace
}  // namespace spindle
