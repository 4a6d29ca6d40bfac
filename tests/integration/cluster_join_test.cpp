// Elastic membership on a loopback cluster: a fourth rank joins three ranks
// serving Cora from their partitions (`spindle node --join`), the placement
// re-plans over four ranks, rows move to it from their owners over UCX while
// rank 0's door keeps answering, and its own door opens once it serves them;
// then it leaves (`spindle cluster-leave`) and its rows go back to the others;
// joined again and killed, it is re-planned away; a rank killed below a live
// joined one is planned as absent (its rows re-placed on the others) and the
// next plain --join takes its place. Once it serves, rank 0's
// shared queue feeds its pipelines too (Admin stats' batches_by_rank), and
// stops before it leaves or as it dies.
// Every seeded call, through either door and during both moves, answers as one
// process does. Bad --join input (a member's address among it) is refused by
// name while the cluster serves.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "config/topology.hpp"
#include "tests/integration/cluster_support.hpp"
#include "transport/rpc/rpc_client.hpp"

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

// What a closed loop of seeded calls through one door got back.
struct loop_tally {
  int right = 0, wrong = 0, refused = 0;
  std::string first_refusal;
  void add(const loop_tally& o) {
    right += o.right, wrong += o.wrong, refused += o.refused;
    if (first_refusal.empty()) first_refusal = o.first_refusal;
  }
};

// `rounds` passes over the seeded requests through `door` with 12 calls
// outstanding (enough to keep every rank's pipeline busy, so rank 0's queue
// hands batches to all of them; under the door's 16 in flight with the serial
// caller beside it), each answer compared with one process's.
loop_tally closed_loop(const std::string& door, const one_process_answers& one,
                       std::size_t rounds) {
  loop_tally t;
  auto client = transport::rpc::rpc_client::connect(door, 60'000);
  if (!client) {
    ADD_FAILURE() << client.error().to_string();
    return t;
  }
  std::vector<transport::rpc::gnn_call> calls;
  for (std::size_t r = 0; r < rounds; ++r)
    for (const auto& q : one.reqs) calls.push_back({"graphsage", q.seeds, q.sampler_seed});
  const std::size_t n = one.reqs.size();
  const auto st = (*client)->run_closed_loop(
      calls, 12, [&](std::size_t i, const transport::rpc::gnn_answer& a, double) {
        if (a.status != transport::rpc::rpc_status::ok) {
          if (t.refused++ == 0) t.first_refusal = a.message;
        } else if (a.outputs == one.want.outputs[i % n]) {
          ++t.right;
        } else {
          ++t.wrong;
        }
      });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return t;
}

// Closed loops through `door` from a thread of its own until finished.
struct loader {
  std::atomic<bool> stop{false};
  loop_tally total;
  std::thread thread;
  loader(const std::string& door, const one_process_answers& one) {
    thread = std::thread([this, door, &one] {
      while (!stop.load()) total.add(closed_loop(door, one, 2));
    });
  }
  loop_tally finish() {
    stop = true;
    thread.join();
    return total;
  }
};

// The batches of rank 0's shared queue that each rank's pipelines answered.
std::map<std::string, std::uint64_t> batches_by_rank(
    const std::function<std::string(std::vector<std::string>)>& client) {
  const auto m = nlohmann::json::parse(client({"admin", "stats"}))["models"]["graphsage"];
  return m.value("batches_by_rank", nlohmann::json::object())
      .get<std::map<std::string, std::uint64_t>>();
}

std::string counts_text(const std::map<std::string, std::uint64_t>& by_rank) {
  std::string out;
  for (const auto& [rank, n] : by_rank) out += " rank " + rank + ": " + std::to_string(n);
  return out;
}

// Closed loops through rank 0's door (`door`) until rank 3's pipeline has answered
// batches of its queue (60 loops at most: with the door's batched connections a
// loop's 12 calls often fit rank 0's own idle pipelines, and the other ranks get
// a batch only when a call finds those busy); every answer must equal one process's.
void expect_rank_3_fed(const std::string& door,
                       const std::function<std::string(std::vector<std::string>)>& client,
                       const one_process_answers& one, const char* when) {
  auto before = batches_by_rank(client);
  const std::uint64_t had = before["3"];
  std::map<std::string, std::uint64_t> after;
  loop_tally t;
  for (int i = 0; i < 60; ++i) {
    t.add(closed_loop(door, one, 10));
    after = batches_by_rank(client);
    if (after["3"] > had) break;
  }
  std::printf("%s, rank 0's door: %d calls right, %d wrong, %d refused; batches%s\n", when, t.right,
              t.wrong, t.refused, counts_text(after).c_str());
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.refused, 0) << t.first_refusal;
  for (const char* rank : {"0", "1", "2"}) EXPECT_GT(after[rank], 0u) << rank;
  EXPECT_GT(after["3"], had) << counts_text(after);
}

// Rank 0's queue gives a rank that left or died no batch: a closed loop through
// its door answers as one process, and rank 3's count stays.
void expect_rank_3_not_fed(const std::string& door,
                           const std::function<std::string(std::vector<std::string>)>& client,
                           const one_process_answers& one, const char* when) {
  auto before = batches_by_rank(client);
  const auto t = closed_loop(door, one, 10);
  auto after = batches_by_rank(client);
  std::printf("%s, rank 0's door: %d calls right, %d wrong, %d refused; batches%s\n", when, t.right,
              t.wrong, t.refused, counts_text(after).c_str());
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.refused, 0) << t.first_refusal;
  EXPECT_EQ(after["3"], before["3"]) << counts_text(after);
}

// A joined rank that dies below a live joined one keeps its number (it names
// the others' shards and regions) but is planned as absent: the placement
// re-plans with no rows on it, its rows come back from the peers' partitions,
// and every call is right again without waiting for it. A plain `--join` then
// takes its place (the lowest rank past the TOML's that no live member holds)
// and the next plan gives it rows. Calls meanwhile: right or refused (rows only
// the dead rank held, until the re-plan is read), never wrong. Then it leaves
// below rank 4 (`cluster-leave`), absent again. Epochs 5 (rank 3 joins), 6
// (rank 4 joins), 7 (rank 3 absent), 8 (rank 3 back), 9 (rank 3 left).
void expect_a_rank_gone_below_a_live_one_planned_away(
    const cora_cluster& c, const std::string& rank0, const std::string& token,
    const std::string& door0, const std::function<std::string(std::vector<std::string>)>& client,
    const one_process_answers& one) {
  auto join = [&](const std::string& log) {
    return logged({"node", "--config", c.config, "--join", rank0, "--dataset", c.serve,
                   "--model", c.model, "--listen", "127.0.0.1:0", "--admin-token-file", token},
                  log);
  };
  auto three = join(c.dir + "/gap-3.log");
  ASSERT_TRUE(three.wait_for("listening ", 120'000).has_value()) << read_file(c.dir + "/gap-3.log");
  members_when(client, serving_epoch(4, 5), 60);
  auto four = join(c.dir + "/gap-4.log");
  ASSERT_TRUE(four.wait_for("listening ", 120'000).has_value()) << read_file(c.dir + "/gap-4.log");
  members_when(client, serving_epoch(5, 6), 60);
  caller during(client, one);
  three.signal(SIGKILL);
  three.wait();
  const auto planned = members_when(client, serving_epoch(4, 7), 60);
  for (const auto& m : planned)
    if (m["rank"] == 0) {
      EXPECT_EQ(m["servers"], 5);
      EXPECT_EQ(m["absent"], 1u << 3) << m.dump();
    }
  // Every member reads epoch 7: no call needs rank 3 any more.
  auto right_again = [&](const std::string& door, const char* when) {
    loop_tally after;
    int loops = 0;
    for (; loops < 50; ++loops) {
      after = closed_loop(door, one, 1);
      EXPECT_EQ(after.wrong, 0);
      if (after.refused == 0) break;
    }
    std::printf("%s: the door answers every call again after %d loop(s)\n", when, loops + 1);
    EXPECT_EQ(after.refused, 0) << after.first_refusal;
  };
  right_again(door0, "rank 3 of 5 killed and planned as absent");
  auto filled = join(c.dir + "/gap-3b.log");
  auto door3 = filled.wait_for("listening ", 120'000);
  ASSERT_TRUE(door3.has_value()) << read_file(c.dir + "/gap-3b.log");
  const std::string said = read_file(c.dir + "/gap-3b.log");
  EXPECT_NE(said.find(" as rank 3 ("), std::string::npos) << said;
  EXPECT_NE(said.find("shard of placement epoch 8 ready: "), std::string::npos) << said;
  members_when(client, serving_epoch(5, 8), 60);
  during.finish();
  std::printf("rank 3 of 5 killed, planned away and its place taken by a plain --join: %d "
              "calls right, %d wrong, %d refused\n",
              during.right.load(), during.wrong.load(), during.refused.load());
  EXPECT_EQ(during.wrong.load(), 0);
  right_again(door0, "rank 3 joined again");
  expect_door_answers(door_client(*door3, token), one, 3);
  // Rank 3 leaves below the live rank 4: absent again, it stops by itself.
  auto leave = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                     "--rank", "3"});
  EXPECT_EQ(leave->wait(), 0);
  EXPECT_EQ(filled.wait(), 0) << read_file(c.dir + "/gap-3b.log");
  members_when(client, serving_epoch(4, 9), 60);
  right_again(door0, "rank 3 left below rank 4");
  four.signal(SIGTERM);
  four.wait();
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
  // Rank 0 runs 2 pipelines, every other rank 1: rank 0's queue keeps one stand-in
  // per pipeline each rank says it runs (a stand-in for a pipeline a rank lacks
  // would fail every batch it takes).
  // Rank 0's file door: the rank that joins a second time fetches its data there.
  const std::string files = "127.0.0.1:" + std::to_string(free_port());
  auto coord = c.coordinator(0, {},
                             {"--listen", "127.0.0.1:0", "--admin-token-file", token, "--pipelines",
                              "2", "--files", files});
  auto listening = coord.wait_for("listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  auto client = door_client(*listening, token);
  auto topo = config::load_topology(c.config);
  ASSERT_TRUE(topo.has_value());
  const std::string rank0 = "127.0.0.1:" + std::to_string(topo->servers[0].port);
  const one_process_answers one(c);
  expect_door_answers(client, one, 9);
  EXPECT_EQ(batches_by_rank(client).count("3"), 0u);

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
  // --join at a member's gate, not rank 0's: refused naming what it reached.
  const std::string rank1 = "127.0.0.1:" + std::to_string(topo->servers[1].port);
  std::tie(rc, text) = refused_join(c, {"--join", rank1}, c.dir + "/bad-4.log");
  EXPECT_NE(rc, 0);
  EXPECT_NE(text.find("--join " + rank1 + " reached rank 1 ("), std::string::npos) << text;
  EXPECT_NE(text.find("not rank 0"), std::string::npos) << text;
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
      EXPECT_EQ(m["pipelines"], 1) << "the pipelines it said it runs when ready";
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
  // Both doors answer as one process, and rank 0's queue feeds rank 3's pipeline.
  expect_door_answers(client, one, 3);
  expect_door_answers(door_client(*door3, token), one, 3);
  expect_rank_3_fed(*listening, client, one, "rank 3 joined");

  // Only a rank that joined may leave.
  auto early = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                     "--rank", "1"},
                                    {}, true);
  std::string said;
  while (auto line = early->read_line(30'000)) said += *line;
  EXPECT_NE(early->wait(), 0);
  EXPECT_NE(said.find("rank 1 is one of the TOML's 3 ranks"), std::string::npos)
      << said;
  // Rank 3 leaves: the plan goes back to three ranks, and it stops by itself.
  // Calls in flight on rank 3 as it goes are answered too (it leaves rank 0's
  // queue first; a batch lost anyway is retried on another pipeline).
  caller leaving(client, one);
  loader busy_leave(*listening, one);
  auto leave = child_process::spawn({SPINDLE_BINARY, "cluster-leave", "--config", c.config,
                                     "--rank", "3"});
  EXPECT_EQ(leave->wait(), 0);
  EXPECT_EQ(joiner.wait(), 0) << read_file(log3);
  members_when(client, serving_epoch(3, 2), 60);
  leaving.finish();
  const auto busy = busy_leave.finish();
  std::printf(
      "during the leave: %d calls right, %d wrong, %d refused; closed loop: %d right, "
      "%d wrong, %d refused\n",
      leaving.right.load(), leaving.wrong.load(), leaving.refused.load(), busy.right, busy.wrong,
      busy.refused);
  EXPECT_GT(leaving.right.load(), 0);
  EXPECT_EQ(leaving.wrong.load(), 0);
  EXPECT_EQ(leaving.refused.load(), 0);
  EXPECT_GT(busy.right, 0);
  EXPECT_EQ(busy.wrong, 0);
  EXPECT_EQ(busy.refused, 0) << busy.first_refusal;
  expect_door_answers(client, one, 3);
  expect_rank_3_not_fed(*listening, client, one, "rank 3 left");

  // A joined rank that dies (kill -9) is re-planned away: the rows only it held
  // come back from the members' partitions. Calls may be refused meanwhile
  // (rows no live rank holds), never answered wrong.
  // It joins at epoch 2, so it reads its rows by epoch 2's plan, which it rebuilds
  // from the inputs rank 0 published: its own door answers as one process.
  // This time its disk is empty: it fetches rank 0's partition (a joined rank has
  // none of its own and opens rank 0's) and the model from rank 0's file door.
  const std::string disk3 = c.dir + "/rank-3-disk";
  std::filesystem::create_directories(disk3);
  auto again = logged({"node", "--config", c.config, "--join", rank0, "--dataset", disk3 + "/parts",
                       "--model", disk3 + "/m", "--fetch-from", files, "--listen", "127.0.0.1:0",
                       "--admin-token-file", token},
                      c.dir + "/rank-3.again.log");
  auto door3again = again.wait_for("listening ", 120'000);
  ASSERT_TRUE(door3again.has_value()) << read_file(c.dir + "/rank-3.again.log");
  const std::string again_log = read_file(c.dir + "/rank-3.again.log");
  EXPECT_NE(again_log.find("fetched dataset " + disk3 + "/parts/rank-0 from file door " + files),
            std::string::npos)
      << again_log;
  EXPECT_NE(again_log.find("fetched model " + disk3 + "/m from file door " + files),
            std::string::npos)
      << again_log;
  members_when(client, serving_epoch(4, 3), 60);
  EXPECT_NE(read_file(c.dir + "/rank-3.again.log").find("shard of placement epoch 3 ready: "),
            std::string::npos);
  expect_door_answers(door_client(*door3again, token), one, 3);
  expect_rank_3_fed(*listening, client, one, "rank 3 joined again");
  caller dying(client, one);
  loader busy_dying(*listening, one);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  again.signal(SIGKILL);
  again.wait();
  members_when(client, serving_epoch(3, 4), 60);
  dying.finish();
  const auto lost = busy_dying.finish();
  std::printf(
      "rank 3 killed: %d calls right, %d wrong, %d refused; closed loop: %d right, %d "
      "wrong, %d refused (%s)\n",
      dying.right.load(), dying.wrong.load(), dying.refused.load(), lost.right, lost.wrong,
      lost.refused, lost.first_refusal.c_str());
  EXPECT_EQ(dying.wrong.load(), 0);
  EXPECT_EQ(lost.wrong, 0);
  EXPECT_GT(lost.right, 0);
  expect_door_answers(client, one, 3);
  expect_rank_3_not_fed(*listening, client, one, "rank 3 killed and re-planned away");
  expect_a_rank_gone_below_a_live_one_planned_away(c, rank0, token, *listening, client, one);
  stop_cluster(coord, members);
}

}  // namespace
}  // namespace spindle
