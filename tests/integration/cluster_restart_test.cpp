// A partitioned loopback cluster restarted member by member after the placement
// was re-planned: the restarted member builds the cluster's current epoch from
// its peers (their regions for that epoch, then rows their own partitions lend)
// and serves again, every seeded call through rank 0's door answering as one
// process does. With a disk tier beside host memory, each rank's disk shard is
// read from the rows it holds for the epoch, not from its partition.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "tests/integration/cluster_support.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

// Rank `rank` of `c`, its log (stderr) appended to `log`.
child_process logged_member(const cora_cluster& c, int rank, const std::string& log) {
  return std::move(*child_process::spawn(
      {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>>'" + log + "'", SPINDLE_BINARY, "node", "--config",
       c.config, "--rank", std::to_string(rank), "--dataset", c.serve, "--model", c.model}));
}

// What a rank's log says of the shards it built: per epoch, the rows it did not
// have in its previous shard and read from elsewhere (owners' regions, its own
// partition, peers' lent copies).
struct built_shard {
  unsigned long rows = 0, kept = 0, fetched = 0, own = 0, lent = 0;
};
std::map<int, built_shard> shards_built(const std::string& log) {
  std::map<int, built_shard> out;
  std::ifstream f(log);
  for (std::string line; std::getline(f, line);) {
    const auto at = line.find("shard of placement epoch ");
    if (at == std::string::npos) continue;
    int epoch = 0;
    built_shard b;
    if (std::sscanf(line.c_str() + at,
                    "shard of placement epoch %d ready: %lu rows (%lu kept, %lu fetched from their "
                    "owners, %lu from its own copy, %lu lent",
                    &epoch, &b.rows, &b.kept, &b.fetched, &b.own, &b.lent) >= 5)
      out[epoch] = b;
  }
  return out;
}

// On a failure, the last lines of the members' logs (the test's own output).
struct tails_on_failure {
  std::vector<std::string> logs;
  ~tails_on_failure() {
    if (!::testing::Test::HasFailure()) return;
    for (const auto& log : logs) {
      std::ifstream f(log);
      std::vector<std::string> lines;
      for (std::string line; std::getline(f, line);) lines.push_back(line);
      std::printf("--- the last lines of %s\n", log.c_str());
      for (std::size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i)
        std::printf("%s\n", lines[i].c_str());
    }
  }
};

// Every member listed by the door serves epoch `epoch` (alive, ready, reading
// it, its old shard freed), within `seconds`.
bool all_on_epoch(const std::function<std::string(std::vector<std::string>)>& client, int epoch,
                  int seconds) {
  for (int i = 0; i < seconds * 5; ++i) {
    const auto listed = nlohmann::json::parse(client({"admin", "members", "--json"}));
    bool on = listed["members"].size() == 3;
    for (const auto& m : listed["members"])
      on = on && m["alive"] == true && m["ready"] == true && m["epoch"] == epoch &&
           m["reading"] == epoch && m["old_epoch"] == -1 && m.value("placement_error", "") == "";
    if (on) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Three ranks serve `c` (partitioned, `tiers` per server): a workload, then a
// re-plan asked through rank 0's door; the member whose new shard took the most
// rows from elsewhere is killed and restarted, and must serve the epoch again.
void restart_after_a_replan(const std::string& name, const std::string& tiers) {
  if (!have_cora()) GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
  cora_cluster c(name, tiers);
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  ASSERT_NO_FATAL_FAILURE(partition(c));
  const std::map<int, std::string> logs = {{1, c.dir + "/rank-1.log"}, {2, c.dir + "/rank-2.log"}};
  tails_on_failure tails{{logs.at(1), logs.at(2)}};
  std::vector<child_process> members;
  for (const auto& [rank, log] : logs) members.push_back(logged_member(c, rank, log));
  const std::string token = c.dir + "/admin.token";
  constexpr std::size_t n = 6000;
  // The workload's accesses drift from the dataset's FAP (seeds by degree); the
  // re-plan asked through the door then moves rows between the ranks, and the
  // cluster applies it everywhere (epoch 0 freed on every rank).
  auto coord = c.coordinator(
      n, {},
      {"--replan-min-requests", "500", "--listen", "127.0.0.1:0", "--admin-token-file", token});
  auto answers = coord.wait_for("answers ", 240'000);
  ASSERT_TRUE(answers.has_value()) << answers.error().to_string();
  EXPECT_NE(answers->find("failed 0 checksum " + checksum_hex(c.expected_checksum(n))),
            std::string::npos)
      << *answers;
  auto listening = coord.wait_for("listening ", 60'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  auto client = door_client(*listening, token);
  client({"admin", "set", "graphsage", "replan", "now"});
  const int epoch = 1;
  ASSERT_TRUE(all_on_epoch(client, epoch, 60)) << client({"admin", "members", "--json"});
  const one_process_answers one(c);
  expect_door_answers(client, one, 9);
  // The member that took the most rows it did not hold from elsewhere.
  int victim = 1;
  unsigned long most = 0;
  for (const auto& [rank, log] : logs) {
    unsigned long taken = 0;
    for (const auto& [e, b] : shards_built(log)) taken += b.fetched + b.lent;
    if (taken > most) victim = rank, most = taken;
  }
  std::printf("re-planned to epoch %d; restarting rank %d (%lu rows taken)\n", epoch, victim, most);
  ASSERT_GT(most, 0u) << "the re-plan moved no row onto a member";
  auto& killed = members[std::size_t(victim - 1)];
  killed.signal(SIGKILL);
  killed.wait();
  ASSERT_TRUE(wait_member(c.config, victim, false, 1));
  const std::string again_log = c.dir + "/rank-" + std::to_string(victim) + ".again.log";
  tails.logs.push_back(again_log);
  const auto restarted = std::chrono::steady_clock::now();
  killed = logged_member(c, victim, again_log);
  ASSERT_TRUE(killed.wait_for("ready", 120'000).has_value()) << "the restarted rank never served";
  // It built the cluster's epoch directly: the rows it held at epoch 0 from its
  // partition, the rest from its peers.
  ASSERT_TRUE(all_on_epoch(client, epoch, 120)) << client({"admin", "members", "--json"});
  std::printf("restarted rank %d serves epoch %d again %.1f s after its start\n", victim, epoch,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - restarted).count());
  const auto rebuilt = shards_built(again_log);
  ASSERT_EQ(rebuilt.count(epoch), 1u) << "no shard of epoch " << epoch << " in " << again_log;
  const auto& b = rebuilt.at(epoch);
  std::printf(
      "restarted rank %d: %lu rows (%lu kept, %lu fetched from owners, %lu from its "
      "partition, %lu lent by peers)\n",
      victim, b.rows, b.kept, b.fetched, b.own, b.lent);
  EXPECT_EQ(b.kept + b.fetched + b.own + b.lent, b.rows);
  EXPECT_GT(b.fetched + b.lent, 0u) << "the epoch needed no row beyond its partition";
  expect_door_answers(client, one, 3);
  stop_cluster(coord, members);
}

// Host memory only: rows a re-plan moved onto the member come back from the
// peers' regions or, where only its own lost region held them, from the
// partitions of their first owners.
TEST(cluster_restart_test, a_partitioned_member_restarted_after_a_replan_serves_its_epoch) {
  restart_after_a_replan("cluster_restart_parts", "memory = 6500000\n");
}

// 3 MB of host memory and a disk tier per server: most rows live in the disk
// shards, so re-plans move rows into disk shards whose partition lacks them.
TEST(cluster_restart_test, disk_tiers_replan_and_restart_from_the_rows_each_rank_holds) {
  restart_after_a_replan("cluster_restart_disk", "memory = 3000000\ndisk = 100000000\n");
}

}  // namespace
}  // namespace spindle
