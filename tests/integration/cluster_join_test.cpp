// Elastic membership on a loopback cluster: a fourth rank joins three ranks
// serving Cora from their partitions (`spindle node --join`), the placement
// re-plans over four ranks, rows move to it from their owners over UCX while
// rank 0's door keeps answering, and its own door opens once it serves them;
// then it leaves (`spindle cluster-leave`) and its rows go back to the others;
// joined again and killed, it is re-planned away.
// Every seeded call, through either door and during both moves, answers as one
// process does. Bad --join input is refused by name while the cluster serves.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "config/topology.hpp"
#include "tests/integration/cluster_support.hpp"

namespace spindle {
namespace {

using namespace cluster_testing;

// `spindle ARGS...` with stderr appended to `log` (stdout stays on the pipe).
child_process logged(const std::vector<std::string>& args, const std::string& log,
                     const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>>'" + log + "'",
                                   SPINDLE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::move(*child_process::spawn(argv, env));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A `spindle node --join` that must be refused: its exit code and its log.
std::pair<int, std::string> refused_join(const cora_cluster& c, std::vector<std::string> extra,
                                         const std::string& log,
                                         const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = {"node",      "--config", c.config, "--dataset",
                                   c.serve,     "--model",  c.model};
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = logged(args, log, env);
  return {p.wait(), read_file(log)};
}

// Calls rank 0's door in a loop until stopped, each a seeded request whose
// answer one process gave: counts answers equal to it, different, and refused.
struct caller {
  std::atomic<bool> stop{false};
  std::atomic<int> right{0}, wrong{0}, refused{0};
  std::thread thread;
  caller(std::function<std::string(std::vector<std::string>)> client,
         const one_process_answers& one) {
    thread = std::thread([this, client, &one] {
      for (std::size_t i = 0; !stop.load(); i = (i + 5) % one.reqs.size()) {
        auto out = nlohmann::json::parse(
            client({"--model", "graphsage", "infer", "--seeds",
                    std::to_string(one.reqs[i].seeds[0]), "--sampler-seed",
                    std::to_string(one.reqs[i].sampler_seed), "--json"}));
        if (out["status"] != "ok")
          ++refused;
        else if (out["outputs"].get<std::vector<float>>() == one.want.outputs[i])
          ++right;
        else
          ++wrong;
      }
    });
  }
  void finish() {
    stop = true;
    thread.join();
  }
};

// The members rank 0 lists, once `done` holds for them (within `seconds`).
nlohmann::json members_when(const std::function<std::string(std::vector<std::string>)>& client,
                            const std::function<bool(const nlohmann::json&)>& done, int seconds) {
  nlohmann::json listed;
  for (int i = 0; i < seconds * 5; ++i) {
    listed = nlohmann::json::parse(client({"admin", "members", "--json"}))["members"];
    if (done(listed)) return listed;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ADD_FAILURE() << "members never reached the wanted state: " << listed.dump();
  return listed;
}

// `ranks` live members, every one ready, reading `epoch` with its old shard freed.
std::function<bool(const nlohmann::json&)> serving_epoch(std::size_t ranks, int epoch) {
  return [ranks, epoch](const nlohmann::json& ms) {
    std::size_t live = 0;
    for (const auto& m : ms) {
      if (m["alive"] != true) continue;
      ++live;
      if (m["ready"] != true || m["epoch"] != epoch || m["reading"] != epoch ||
          m["old_epoch"] != -1 || m.value("placement_error", "") != "")
        return false;
    }
    return live == ranks;
  };
}

TEST(cluster_join_test, a_rank_joins_a_running_partitioned_cluster_then_leaves) {
  if (!have_cora()) GTEST_SKIP() << "the test data folder (SPINDLE_TEST_DATA_DIR) is not present";
  cora_cluster c("cluster_join");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  ASSERT_NO_FATAL_FAILURE(partition(c));
  const std::string log3 = c.dir + "/rank-3.log";
  std::vector<child_process> members;
  for (int rank : {1, 2})
    members.push_back(logged({"node", "--config", c.config, "--rank", std::to_string(rank),
                              "--dataset", c.serve, "--model", c.model},
                             c.dir + "/rank-" + std::to_string(rank) + ".log"));
  const std::string token = c.dir + "/admin.token";
  auto coord = c.coordinator(0, {}, {"--listen", "127.0.0.1:0", "--admin-token-file", token});
  auto listening = coord.wait_for("listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  auto client = door_client(*listening, token);
  auto topo = config::load_topology(c.config);
  ASSERT_TRUE(topo.has_value());
  const std::string rank0 = "127.0.0.1:" + std::to_string(topo->servers[0].port);
  const one_process_answers one(c);
  expect_door_answers(client, one, 9);

  // Refused by name, and the cluster serves on: no answer at --join, another
  // cluster's token, a rank a live member holds.
  const std::string nobody = "127.0.0.1:" + std::to_string(free_port());
  auto [rc, text] = refused_join(c, {"--join", nobody}, c.dir + "/bad-1.log");
  EXPECT_NE(rc, 0);
  EXPECT_NE(text.find("--join " + nobody), std::string::npos) << text;
  std::tie(rc, text) =
      refused_join(c, {"--join", rank0}, c.dir + "/bad-2.log",
                   {"SPINDLE_CLUSTER_TOKEN=" + std::string(64, 'f')});
  EXPECT_NE(rc, 0);
  EXPECT_NE(text.find("--join " + rank0), std::string::npos) << text;
  EXPECT_NE(text.find("token"), std::string::npos) << text;
  std::tie(rc, text) = refused_join(c, {"--join", rank0, "--rank", "1"}, c.dir + "/bad-3.log");
  EXPECT_NE(rc, 0);
  EXPECT_NE(text.find("rank 1 is already a live member"), std::string::npos) << text;
  // The TOML's ranks are what the cluster is sized for: rank 2, the highest, may not
  // leave (its rows would not fit on two ranks, and a leave cannot be taken back).
  auto toml_leave = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                          "--rank", "2"},
                                         {}, true);
  std::string toml_said;
  while (auto line = toml_leave->read_line(30'000)) toml_said += *line;
  EXPECT_NE(toml_leave->wait(), 0);
  EXPECT_NE(toml_said.find("rank 2 is one of the TOML's 3 ranks"), std::string::npos) << toml_said;

  // Rank 3 joins while calls go on through rank 0's door.
  caller during(client, one);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto started = std::chrono::steady_clock::now();
  auto joiner = logged({"node", "--config", c.config, "--join", rank0, "--dataset", c.serve,
                        "--model", c.model, "--listen", "127.0.0.1:0", "--admin-token-file", token},
                       log3);
  auto door3 = joiner.wait_for("listening ", 120'000);
  ASSERT_TRUE(door3.has_value()) << door3.error().to_string() << "\n" << read_file(log3);
  std::printf("rank 3 joined and serves its door %.2f s after its start\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  auto listed = members_when(client, serving_epoch(4, 1), 60);
  for (const auto& m : listed)
    if (m["rank"] == 3) {
      EXPECT_EQ(m["joined"], true) << m.dump();
      EXPECT_NE(m["address"], "127.0.0.1:0") << "the port its gate listens on is listed";
    }
  during.finish();
  std::printf("during the join: %d calls right, %d wrong, %d refused\n", during.right.load(),
              during.wrong.load(), during.refused.load());
  EXPECT_GT(during.right.load(), 0);
  EXPECT_EQ(during.wrong.load(), 0);
  EXPECT_EQ(during.refused.load(), 0);
  // Its rows came from their owners' regions, none from its own folder.
  const std::string built = read_file(log3);
  const auto at = built.find("shard of placement epoch 1 ready: ");
  ASSERT_NE(at, std::string::npos) << built;
  unsigned long rows = 0, kept = 0, fetched = 0, own = 0, lent = 0;
  ASSERT_EQ(std::sscanf(built.c_str() + at,
                        "shard of placement epoch 1 ready: %lu rows (%lu kept, %lu fetched from "
                        "their owners, %lu from its own copy, %lu lent",
                        &rows, &kept, &fetched, &own, &lent),
            5);
  std::printf("rank 3's shard: %lu rows, %lu fetched from their owners\n", rows, fetched);
  EXPECT_GT(rows, 0u);
  EXPECT_EQ(fetched, rows);
  // Both doors answer as one process.
  expect_door_answers(client, one, 3);
  expect_door_answers(door_client(*door3, token), one, 3);

  // Only the plan's highest rank may leave (servers are ranks 0..N-1).
  auto early = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                     "--rank", "1"},
                                    {}, true);
  std::string said;
  while (auto line = early->read_line(30'000)) said += *line;
  EXPECT_NE(early->wait(), 0);
  EXPECT_NE(said.find("rank 1 is not the highest rank of the plan (3)"), std::string::npos)
      << said;
  // Rank 3 leaves: the plan goes back to three ranks, and it stops by itself.
  caller leaving(client, one);
  auto leave = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                     "--rank", "3"});
  EXPECT_EQ(leave->wait(), 0);
  EXPECT_EQ(joiner.wait(), 0) << read_file(log3);
  members_when(client, serving_epoch(3, 2), 60);
  leaving.finish();
  std::printf("during the leave: %d calls right, %d wrong, %d refused\n", leaving.right.load(),
              leaving.wrong.load(), leaving.refused.load());
  EXPECT_GT(leaving.right.load(), 0);
  EXPECT_EQ(leaving.wrong.load(), 0);
  EXPECT_EQ(leaving.refused.load(), 0);
  expect_door_answers(client, one, 3);

  // A joined rank that dies (kill -9) is re-planned away: the rows only it held
  // come back from the members' partitions. Calls may be refused meanwhile
  // (rows no live rank holds), never answered wrong.
  // It joins at epoch 2, so it reads its rows by epoch 2's plan, which it rebuilds
  // from the inputs rank 0 published: its own door answers as one process.
  auto again = logged({"node", "--config", c.config, "--join", rank0, "--dataset", c.serve,
                       "--model", c.model, "--listen", "127.0.0.1:0", "--admin-token-file", token},
                      c.dir + "/rank-3.again.log");
  auto door3again = again.wait_for("listening ", 120'000);
  ASSERT_TRUE(door3again.has_value()) << read_file(c.dir + "/rank-3.again.log");
  members_when(client, serving_epoch(4, 3), 60);
  EXPECT_NE(read_file(c.dir + "/rank-3.again.log").find("shard of placement epoch 3 ready: "),
            std::string::npos);
  expect_door_answers(door_client(*door3again, token), one, 3);
  caller dying(client, one);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  again.signal(SIGKILL);
  again.wait();
  members_when(client, serving_epoch(3, 4), 60);
  dying.finish();
  std::printf("rank 3 killed: %d calls right, %d wrong, %d refused\n", dying.right.load(),
              dying.wrong.load(), dying.refused.load());
  EXPECT_EQ(dying.wrong.load(), 0);
  expect_door_answers(client, one, 3);
  stop_cluster(coord, members);
}

}  // namespace
}  // namespace spindle
