// Chaos: the shared Redis VDB killed (SIGKILL) and restarted empty, or frozen
// (SIGSTOP), while a recommendation model serves an open-loop load through the
// parameter server. Every call must still be answered ok (lookups fall back to
// the PDB, HPS §5); once Redis is back the server writes to it again; a frozen
// Redis costs a call at most the VDB's command deadline. Prints the figures.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/subprocess.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle {
namespace {

// A Redis, and a DLRM served through the parameter server with it as its VDB,
// tables larger than the L1 (1% of them) so misses keep reaching the VDB, and an
// open loop of 3,000 calls at 500/s (6 s) started against it.
class chaos_redis_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = testing::redis_server::start();
    if (!r) GTEST_SKIP() << r.error().to_string();
    redis = std::move(*r);
  }
  // The server and its load, in a temporary folder named `name`.
  void start(const std::string& name) {
    const std::string dir = graph::testing::temp_dir(name);
    auto init = child_process::spawn({SPINDLE_BINARY, "model", "init", "--arch", "dlrm", "--in",
                                      "13", "--hidden", "16", "--tables", "20000,5000", "--seed",
                                      "2", "--out-dir", dir + "/dlrm"});
    ASSERT_EQ(init->wait(), 0);
    auto s = child_process::spawn(
        {SPINDLE_BINARY, "serve", "--listen", "127.0.0.1:0", "--dlrm-model", dir + "/dlrm",
         "--dlrm-name", "ctr", "--pdb", dir + "/pdb", "--vdb", "redis", "--vdb-redis",
         redis->endpoint(), "--hit-rate-threshold", "1.0", "--cache-fraction", "0.01"});
    ASSERT_TRUE(s.has_value());
    server.emplace(std::move(*s));
    auto listening = server->wait_for("listening ", 60'000);
    ASSERT_TRUE(listening.has_value()) << listening.error().to_string();
    load.emplace(std::move(*child_process::spawn(
        {"/bin/sh", "-c",
         std::string("'") + SPINDLE_BINARY + "' client --connect " + *listening +
             " --model ctr load --batch 8 --requests 3000 --warmup 10 --rate 500 "
             "--distinct-batches 3000 --json 2>/dev/null"})));
  }
  // The load's JSON report once it ends.
  nlohmann::json report() {
    std::string out;
    while (auto line = load->read_line(60'000)) out += *line + "\n";
    EXPECT_EQ(load->wait(), 0) << out;
    const auto at = out.find('{');
    return at == std::string::npos ? nlohmann::json::object() : nlohmann::json::parse(out.substr(at));
  }
  // SIGTERM to the server, which must exit 0.
  void stop() {
    server->signal(SIGTERM);
    EXPECT_EQ(server->wait(), 0);
  }

  std::unique_ptr<testing::redis_server> redis;
  std::optional<child_process> server, load;
};

TEST_F(chaos_redis_test, redis_killed_and_restarted_under_a_recommendation_load_loses_no_call) {
  ASSERT_NO_FATAL_FAILURE(start("chaos_redis"));
  // Redis dies at 2 s and comes back empty at 3.5 s.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  redis->kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(redis->restart().is_ok());
  const auto j = report();
  std::printf(
      "Redis killed for 1.5 s under 500 calls/s: %d of 3000 answered ok, p99 %.2f ms, "
      "p999 %.2f ms\n",
      j["answered_ok"].get<int>(), j["latency_ms"]["p99"].get<double>(),
      j["latency_ms"]["p999"].get<double>());
  EXPECT_EQ(j["answered_ok"], 3000) << j.dump();
  // The new, empty Redis is written to again (misses are inserted on the way back).
  auto keys = child_process::spawn(
      {"/bin/sh", "-c", "redis-cli -p " + std::to_string(redis->port()) + " dbsize"});
  std::string dbsize;
  while (auto line = keys->read_line(10'000)) dbsize += *line;
  keys->wait();
  ASSERT_FALSE(dbsize.empty());
  EXPECT_GT(std::stol(dbsize), 0) << "Redis after the restart holds no key";
  stop();
}

// A frozen Redis accepts connections and answers nothing: a command waits out
// the VDB's deadline (200 ms), then the client backs off (failing at once, so the
// PDB answers) and trusts a reconnection only once it answers a 50 ms PING.
// Before: 5 s per command, and in-flight calls timed out.
TEST_F(chaos_redis_test, a_frozen_redis_stalls_no_call_past_the_deadline) {
  ASSERT_NO_FATAL_FAILURE(start("chaos_redis_freeze"));
  // Redis frozen from 2 s to 5 s.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  redis->signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  redis->signal(SIGCONT);
  const auto j = report();
  const int refused = j["status"].value("overloaded", 0);
  std::printf("Redis frozen for 3 s under 500 calls/s: %d of 3000 answered ok (p99 %.2f ms, "
              "p999 %.2f ms), %d refused as overloaded at once while lookups waited\n",
              j["answered_ok"].get<int>(), j["latency_ms"]["p99"].get<double>(),
              j["latency_ms"]["p999"].get<double>(), refused);
  // Every call answered right or refused at once by admission: none failed, none hung.
  EXPECT_EQ(j["answered_ok"].get<int>() + refused, 3000) << j.dump();
  EXPECT_GT(j["answered_ok"].get<int>(), 2400) << j.dump();
  EXPECT_LT(j["latency_ms"]["p999"].get<double>(), 1000.0) << j.dump();
  stop();
}

}  // namespace
}  // namespace spindle
