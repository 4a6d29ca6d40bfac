// `spindle launch` with real processes: local ranks and ranks on other hosts
// started through the launcher, clean stops, a killed rank reaped and restarted,
// the coordinator killed and its members rejoining, and nothing listening
// outside loopback.
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
  const int fd = testing::dial_loopback(port);
  if (fd < 0) return "cannot connect";
  if (::write(fd, request.data(), request.size()) != ssize_t(request.size())) {
    ::close(fd);
    return "cannot send";
  }
  std::string body = testing::receive_all(fd, 0);
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
  // One queue of calls for both doors: each takes calls as it answers them.
  EXPECT_GT(j["answered_ok_by_door"].value(door, 0), 0) << out;
  EXPECT_GT(j["answered_ok_by_door"].value(*listening, 0), 0) << out;
  EXPECT_EQ(j["answered_ok_by_door"].value(door, 0) + j["answered_ok_by_door"].value(*listening, 0),
            400)
      << out;
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
