// The cluster's front doors with real processes: a member's own door, rank 0's
// door and Admin, launch (local ranks, other hosts through the launcher, restarts,
// the coordinator killed and restarted), all answering like one process.
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

// `spindle client --connect endpoint --token-file token ARGS...`: its output, exit 0 expected.
std::function<std::string(std::vector<std::string>)> door_client(const std::string& endpoint,
                                                                 const std::string& token) {
  return [endpoint, token](std::vector<std::string> args) {
    std::vector<std::string> argv = {SPINDLE_BINARY, "client",       "--connect",
                                     endpoint,       "--token-file", token};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = child_process::spawn(argv);
    std::string out;
    while (auto line = p->read_line(30'000)) out += *line;
    EXPECT_EQ(p->wait(), 0) << out;
    return out;
  };
}

// The answers one process gives `reqs` on the cluster's dataset and model.
serving::batch_result single_process_results(const cora_cluster& c,
                                           const std::vector<serving::gnn_request>& reqs) {
  auto ds = graph::dataset::open(c.cora);
  nn::heap_allocator weights;
  auto model = nn::model::load(c.model, weights);
  serving::psgs_router router(serving::psgs_calibration{}, serving::routing_policy::fixed);
  thread_pool pool(1, "test");
  serving::gnn_pipeline local(*ds, *model, router, pool);
  return local.run(reqs);
}

// Every `step`-th of `reqs` through the door `client` answers as `want` (one process).
void expect_door_answers(const std::function<std::string(std::vector<std::string>)>& client,
                         const std::vector<serving::gnn_request>& reqs,
                         const serving::batch_result& want, std::size_t step) {
  for (std::size_t i = 0; i < reqs.size(); i += step) {
    auto out = nlohmann::json::parse(
        client({"--model", "graphsage", "infer", "--seeds", std::to_string(reqs[i].seeds[0]),
                "--sampler-seed", std::to_string(reqs[i].sampler_seed), "--json"}));
    EXPECT_EQ(out["status"], "ok") << out.dump();
    if (out["status"] != "ok") return;
    EXPECT_EQ(out["outputs"].get<std::vector<float>>(), want.outputs[i]) << "request " << i;
  }
}

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
  auto reqs = serving::degree_requests(*graph::dataset::open(c.cora), 64);
  auto want = single_process_results(c, reqs);
  expect_door_answers(client, reqs, want, 7);
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
  for (std::size_t i = 0; i < reqs.size(); i += 7) {
    auto p = child_process::spawn({SPINDLE_BINARY, "client", "--connect", endpoint, "--timeout-ms",
                                   "10000", "--model", "graphsage", "infer", "--seeds",
                                   std::to_string(reqs[i].seeds[0]), "--sampler-seed",
                                   std::to_string(reqs[i].sampler_seed), "--json"});
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
              (reqs.size() + 6) / 7);
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
    caf_ports.insert(std::stoi(line->substr(line->rfind(':') + 1)));
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
  auto reqs = serving::degree_requests(*graph::dataset::open(c.cora), 64);
  auto want = single_process_results(c, reqs);
  expect_door_answers(client, reqs, want, 9);
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
  expect_door_answers(client, reqs, want, 9);
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
  auto reqs = serving::degree_requests(*graph::dataset::open(c.cora), 64);
  auto want = single_process_results(c, reqs);
  expect_door_answers(client, reqs, want, 9);
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
  expect_door_answers(client, reqs, want, 9);
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
  for (const auto& m : nlohmann::json::parse(client({"admin", "members", "--json"}))["members"])
    if (m["rank"] == 1) {
      EXPECT_FALSE(m["ready"].get<bool>()) << m.dump();
    }
  // Still serving with rank 1 gone (its rows come from replicas or fail by name).
  auto out = nlohmann::json::parse(
      client({"--model", "graphsage", "infer", "--seeds", std::to_string(reqs[0].seeds[0]),
              "--sampler-seed", std::to_string(reqs[0].sampler_seed), "--json"}));
  EXPECT_TRUE(out["status"] == "ok" ||
              out["message"].get<std::string>().find("shard") != std::string::npos)
      << out.dump();
  stop_cluster(coord, members, 1);  // members[0] was killed
}

// `spindle launch` starts the three ranks with the dataset and model, rank 0
// opens the front door once the members are ready, a client is answered, and
// SIGTERM to launch stops every rank cleanly.
// The pid of the `spindle node` process of `rank` started with cluster file `config`.
pid_t node_pid(const std::string& config, int rank) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::ifstream f(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find(std::string("node") + '\0' + "--config" + '\0' + config + '\0' + "--rank" + '\0' +
                 std::to_string(rank) + '\0') != std::string::npos)
      return pid_t(std::stoi(e.path().filename().string()));
  }
  return -1;
}

// `spindle launch --restart`: a rank killed with SIGKILL is reaped, reported
// and started again after its backoff (before: launch kept a zombie and said
// nothing), and SIGTERM still stops everything cleanly.
TEST(cluster_front_door_test, launch_reaps_reports_and_restarts_a_killed_rank) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_launch_restart");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  auto launch =
      *child_process::spawn({SPINDLE_BINARY, "launch", "--config", c.config, "--dataset", c.cora,
                             "--model", c.model, "--listen", "127.0.0.1:0", "--restart"});
  ASSERT_TRUE(launch.wait_for("[rank 0] listening ", 120'000).has_value());
  const pid_t victim = node_pid(c.config, 1);
  ASSERT_GT(victim, 0);
  ::kill(victim, SIGKILL);
  auto exited = launch.wait_for("[rank 1] exited with 137; restarting in 1000 ms", 30'000);
  EXPECT_TRUE(exited.has_value());
  EXPECT_TRUE(launch.wait_for("[rank 1] restarted", 30'000).has_value());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let it join again
  EXPECT_GT(node_pid(c.config, 1), 0);
  launch.signal(SIGTERM);
  std::string rest;
  while (auto l = launch.read_line(30'000)) rest += *l + "\n";
  EXPECT_EQ(launch.wait(), 0) << rest;
}

// True for a /proc/net/tcp{,6} local address on loopback (127.0.0.0/8, ::1).
bool loopback_address(const std::string& hex) {
  const std::string ip = hex.substr(0, hex.find(':'));
  if (ip.size() == 8) return ip.substr(6, 2) == "7F";  // little-endian IPv4: first octet last
  return ip == "00000000000000000000000001000000";     // ::1
}

// One GNN call through the front door at `door`: (exit code, output, seconds).
std::tuple<int, std::string, double> infer_once(const std::string& door) {
  const auto t0 = std::chrono::steady_clock::now();
  auto p = child_process::spawn(
      {"/bin/sh", "-c",
       std::string(SPINDLE_BINARY) + " client --connect " + door +
           " --model graphsage --timeout-ms 5000 infer --seeds 3 --json 2>&1"});
  std::string out;
  while (auto l = p->read_line(30'000)) out += *l + "\n";
  const int rc = p->wait();
  return {rc, out, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// Losing the coordinator: kill -9 of rank 0 under launch --restart.
// During the outage a client is refused at once; the members (same pids) wait,
// then rejoin the restarted rank 0, which serves again. Before: members never
// rejoined and the new rank 0 waited for them forever.
TEST(cluster_front_door_test, a_killed_coordinator_restarts_and_its_members_rejoin) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_coordinator_restart");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const std::string door = "127.0.0.1:" + std::to_string(free_port());
  auto launch = *child_process::spawn({SPINDLE_BINARY, "launch", "--config", c.config, "--dataset",
                                       c.cora, "--model", c.model, "--listen", door, "--restart"});
  ASSERT_TRUE(launch.wait_for("[rank 0] listening ", 120'000).has_value());
  auto [rc, out, s] = infer_once(door);
  ASSERT_EQ(rc, 0) << out;
  const pid_t member1 = node_pid(c.config, 1), member2 = node_pid(c.config, 2);
  ::kill(node_pid(c.config, 0), SIGKILL);
  std::tie(rc, out, s) = infer_once(door);
  EXPECT_NE(rc, 0) << out;
  EXPECT_LT(s, 2.0) << "the outage must be answered at once: " << out;
  // Refused, or reset when the call raced the dying process's sockets.
  EXPECT_TRUE(out.find("Connection refused") != std::string::npos ||
              out.find("Connection reset") != std::string::npos)
      << out;
  EXPECT_TRUE(launch.wait_for("[rank 0] restarted", 30'000).has_value());
  auto again = launch.wait_for("[rank 0] listening ", 120'000);
  ASSERT_TRUE(again.has_value())
      << "the restarted coordinator never served: members did not rejoin";
  std::tie(rc, out, s) = infer_once(door);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"ok\""), std::string::npos) << out;
  EXPECT_EQ(node_pid(c.config, 1), member1);  // rejoined, not restarted
  EXPECT_EQ(node_pid(c.config, 2), member2);
  launch.signal(SIGTERM);
  std::string rest;
  while (auto l = launch.read_line(30'000)) rest += *l + "\n";
  EXPECT_EQ(launch.wait(), 0) << rest;
}

// Sends `request` to 127.0.0.1:`port` and returns everything the server answers.
std::string http_exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(std::uint16_t(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "cannot connect";
  }
  if (::write(fd, request.data(), request.size()) != ssize_t(request.size())) {
    ::close(fd);
    return "cannot send";
  }
  std::string body;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) body.append(buf, std::size_t(n));
  ::close(fd);
  return body;
}

// Ranks on other hosts are started through the TOML's launcher (here `env`,
// standing in for ssh or `ip netns exec`, on hosts 127.0.0.2 and 127.0.0.3):
// their lines are relayed with the rank and host, rank 1 opens the door its
// [[server]] names, every rank serves its partition, a load spread over two
// doors is answered through both, and SIGTERM stops every rank.
TEST(cluster_front_door_test, launch_starts_other_hosts_through_the_launcher) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_launcher");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const std::string config = c.dir + "/hosts.toml";
  const std::string door = fmt::format("127.0.0.1:{}", free_port());
  {
    std::ofstream f(config);
    f << "coordinator = \"s0\"\nlauncher = \"env SPINDLE_LAUNCHED={host}/{rank}\"\n"
         "[links]\nintra = \"shm\"\ninter = \"infiniband\"\n";
    const char* hosts[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
    for (int r = 0; r < 3; ++r) {
      f << "[[server]]\nname = \"s" << r << "\"\nhost = \"" << hosts[r]
        << "\"\nport = " << free_port() << "\nmemory = 6500000\n";
      if (r == 1) f << "door = \"" << door << "\"\n";
    }
  }
  const std::string parts = c.dir + "/parts";
  ASSERT_EQ(child_process::spawn(
                {SPINDLE_BINARY, "partition", c.cora, "--config", config, "--out", parts},
                {"SPINDLE_PROGRESS=0"})
                ->wait(),
            0);
  const std::string token = c.dir + "/admin.token";
  auto launch = *child_process::spawn({SPINDLE_BINARY, "launch", "--config", config, "--dataset",
                                       parts, "--model", c.model, "--listen", "127.0.0.1:0",
                                       "--admin-token-file", token});
  // Both doors' lines, in whichever order the ranks print them.
  std::optional<std::string> listening, member_door;
  std::string seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while ((!listening || !member_door) && std::chrono::steady_clock::now() < deadline) {
    auto line = launch.read_line(1000);
    if (!line) continue;
    seen += *line + "\n";
    for (auto [prefix, slot] : {std::pair{std::string("[rank 0] listening "), &listening},
                                {std::string("[rank 1@127.0.0.2] listening "), &member_door}})
      if (line->rfind(prefix, 0) == 0) *slot = line->substr(prefix.size());
  }
  ASSERT_TRUE(listening && member_door) << seen;
  EXPECT_EQ(*member_door, door);
  auto p = child_process::spawn({SPINDLE_BINARY, "client", "--connect", *listening + "," + door,
                                 "--model", "graphsage", "load", "--seeds", "uniform:2708",
                                 "--requests", "400", "--warmup", "10", "--json"});
  std::string out;
  while (auto l = p->read_line(60'000)) out += *l + "\n";
  ASSERT_EQ(p->wait(), 0) << out;
  auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["answered_ok"], 400) << out;
  EXPECT_EQ(j["answered_ok_by_door"][door], 200) << out;
  EXPECT_EQ(j["answered_ok_by_door"][*listening], 200) << out;
  launch.signal(SIGTERM);
  std::string rest;
  while (auto l = launch.read_line(30'000)) rest += *l + "\n";
  EXPECT_EQ(launch.wait(), 0) << rest;
  EXPECT_NE(rest.find("[rank 0] exited with 0"), std::string::npos) << rest;
  EXPECT_NE(rest.find("[rank 1@127.0.0.2] exited with 0"), std::string::npos) << rest;
  EXPECT_NE(rest.find("[rank 2@127.0.0.3] exited with 0"), std::string::npos) << rest;
}

TEST(cluster_front_door_test, launch_starts_a_serving_cluster_and_stops_it) {
  if (!have_cora()) GTEST_SKIP() << "Cora (the development data folder) not present";
  cora_cluster c("cluster_launch");
  ASSERT_TRUE(c.ready()) << "spindle prepare failed";
  const int metrics_port = free_port();
  const int http_port = free_port();
  auto launch = *child_process::spawn({SPINDLE_BINARY, "launch", "--config", c.config, "--dataset",
                                       c.cora, "--model", c.model, "--name", "sage", "--listen",
                                       "127.0.0.1:0", "--metrics",
                                       fmt::format("127.0.0.1:{}", metrics_port),
                                       "--http", fmt::format("127.0.0.1:{}", http_port)});
  auto listening = launch.wait_for("[rank 0] listening ", 120'000);
  ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
  // Nothing of a loopback cluster listens outside loopback (UCX's
  // tcp transport used to open listeners on every interface).
  for (int rank : {0, 1, 2}) {
    const auto addresses = listening_addresses(node_pid(c.config, rank));
    EXPECT_GE(addresses.size(), 2u) << "rank " << rank;  // CAF's port and UCX's at least
    for (const auto& a : addresses)
      EXPECT_TRUE(loopback_address(a)) << "rank " << rank << " listens on " << a;
  }
  // launch passes --metrics to rank 0 (it once had only `node`'s flags).
  const std::string metrics =
      http_exchange(metrics_port, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
  // --name: the model is called `sage` at the door, whatever model.toml says.
  EXPECT_NE(metrics.find("spindle_cluster_member_alive{rank=\"2\",name=\"shard-b\"} 1"),
            std::string::npos)
      << metrics.substr(0, 500);
  EXPECT_NE(metrics.find("spindle_admission_limit{model=\"sage\"}"), std::string::npos)
      << metrics.substr(0, 500);
  // ... and --http: rank 0 answers KServe v2 calls for the cluster.
  const std::string body =
      R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[3]}]})";
  const std::string answer = http_exchange(
      http_port, fmt::format("POST /v2/models/sage/infer HTTP/1.0\r\nHost: x\r\n"
                             "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                             body.size(), body));
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer.substr(0, 500);
  EXPECT_NE(answer.find("\"name\":\"output\""), std::string::npos) << answer.substr(0, 500);
  auto p = child_process::spawn({SPINDLE_BINARY, "client", "--connect", *listening, "--model",
                                 "sage", "infer", "--seeds", "3", "--json"});
  auto line = p->read_line(30'000);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(nlohmann::json::parse(*line)["status"], "ok") << *line;
  EXPECT_EQ(p->wait(), 0);
  launch.signal(SIGTERM);
  std::string rest;
  while (auto l = launch.read_line(30'000)) rest += *l + "\n";
  EXPECT_EQ(launch.wait(), 0) << rest;
  for (int rank : {0, 1, 2})
    EXPECT_NE(rest.find(fmt::format("[rank {}] exited with 0", rank)), std::string::npos) << rest;
}

}  // namespace
}  // namespace spindle
