// Three real `spindle node` processes on loopback (coordinator + 2 nodes): they
// join over CAF's middleman, a killed node is seen down, a restarted one rejoins.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../graph/test_util.hpp"
#include "core/subprocess.hpp"

namespace spindle {
namespace {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

child_process start_node(const std::string& config, int rank) {
  auto c = child_process::spawn(
      {SPINDLE_BINARY, "node", "--config", config, "--rank", std::to_string(rank)});
  EXPECT_TRUE(c.has_value());
  EXPECT_TRUE(c->wait_for("ready", 30'000).has_value()) << "rank " << rank;
  return std::move(*c);
}

nlohmann::json cluster_status(const std::string& config) {
  auto c = child_process::spawn({SPINDLE_BINARY, "cluster-status", "--config", config});
  auto line = c->read_line(20'000);
  EXPECT_TRUE(line.has_value());
  c->wait();
  return line ? nlohmann::json::parse(*line) : nlohmann::json::array();
}

// Polls the coordinator until member `rank` has the wanted state.
bool wait_member(const std::string& config, int rank, bool alive, int joins) {
  for (int i = 0; i < 100; ++i) {
    for (const auto& m : cluster_status(config))
      if (m["rank"] == rank && m["alive"] == alive && m["joins"] == joins) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(cluster_test, nodes_join_a_killed_node_is_seen_down_and_a_restart_rejoins) {
  std::string dir = graph::testing::temp_dir("cluster");
  std::string config = dir + "/cluster.toml";
  std::ofstream f(config);
  f << "coordinator = \"coord\"\n";
  for (const char* name : {"coord", "shard-a", "shard-b"})
    f << "[[server]]\nname = \"" << name << "\"\nhost = \"127.0.0.1\"\nport = " << free_port()
      << "\nmemory = \"1GiB\"\n";
  f.close();
  auto coord = start_node(config, 0);
  auto a = start_node(config, 1);
  auto b = start_node(config, 2);
  EXPECT_TRUE(wait_member(config, 1, true, 1));
  EXPECT_TRUE(wait_member(config, 2, true, 1));
  a.signal(SIGKILL);
  a.wait();
  EXPECT_TRUE(wait_member(config, 1, false, 1));  // CAF down message, no hang
  EXPECT_TRUE(wait_member(config, 2, true, 1));
  auto again = start_node(config, 1);
  EXPECT_TRUE(wait_member(config, 1, true, 2));
  for (auto* c : {&again, &b, &coord}) c->signal(SIGTERM);
  for (auto* c : {&again, &b, &coord}) EXPECT_EQ(c->wait(), 0);
}

}  // namespace
}  // namespace spindle
