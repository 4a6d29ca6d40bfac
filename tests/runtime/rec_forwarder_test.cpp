// The recommendation forwarder of a cluster door against a real `spindle serve`
// of the golden NCF: as many calls in flight as the door admits (before: at
// most one per sender, four in all), every answer the golden scores, and calls
// moving on from an endpoint that does not answer.
#include "runtime/rec_forwarder.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "core/npy.hpp"
#include "core/subprocess.hpp"

namespace spindle::runtime {
namespace {

namespace rpc = transport::rpc;
const std::string kGolden = std::string(SPINDLE_SOURCE_DIR) + "/tests/nn/golden/ncf/";

template <class T>
std::vector<T> golden(const std::string& name) {
  auto a = npy_array::open(kGolden + name + ".npy");
  auto v = a->template as<T>();
  return {v->begin(), v->end()};
}

// The golden NCF batch as one call to "ncf".
rpc::rec_call ncf_call() {
  rpc::rec_call call{"ncf", 6, {}, {}, 0};
  for (int t = 0; t < 4; ++t)
    call.sparse.push_back({golden<std::int64_t>("indices" + std::to_string(t)),
                           golden<std::int64_t>("offsets" + std::to_string(t))});
  return call;
}

// A `spindle serve` of the golden NCF on a free loopback port.
struct ncf_server {
  child_process proc;
  std::string endpoint;
  static ncf_server start() {
    auto p = child_process::spawn(
        {SPINDLE_BINARY, "serve", "--rec-model", "ncf=" + kGolden, "--listen", "127.0.0.1:0"});
    EXPECT_TRUE(p.has_value());
    auto at = p->wait_for("listening ", 60'000);
    EXPECT_TRUE(at.has_value()) << at.error().to_string();
    return {std::move(*p), at ? *at : std::string()};
  }
  ~ncf_server() {
    proc.signal(SIGTERM);
    proc.wait();
  }
};

// Sends `n` golden calls through `b` at once; returns how many were answered
// with the golden scores (waits for every answer).
int send_burst(const actors::rec_model_binding& b, int n, const std::vector<float>& want) {
  std::mutex mu;
  std::condition_variable cv;
  int answered = 0, right = 0;
  for (int i = 0; i < n; ++i)
    b.forward(ncf_call(), [&](rpc::rec_answer a) {
      bool ok = a.status == rpc::rpc_status::ok && a.scores.size() == want.size();
      for (std::size_t k = 0; ok && k < want.size(); ++k)
        ok = std::abs(a.scores[k] - want[k]) < 1e-5;
      EXPECT_TRUE(ok) << rpc::to_string(a.status) << ": " << a.message;
      std::lock_guard lock(mu);
      ++answered;
      right += ok;
      cv.notify_all();
    });
  std::unique_lock lock(mu);
  cv.wait_for(lock, std::chrono::seconds(60), [&] { return answered == n; });
  return right;
}

TEST(rec_forwarder_test, keeps_more_than_four_calls_in_flight_when_the_door_admits_them) {
  auto server = ncf_server::start();
  ASSERT_FALSE(server.endpoint.empty());
  auto f = rec_forwarder::start({"ncf", {server.endpoint}});
  ASSERT_TRUE(f.has_value()) << f.error().to_string();
  const auto b = (*f)->binding({});
  const auto want = golden<float>("expected");
  // Bursts of 64 calls (the door admits up to its max_queue, 1024 by default):
  // a sender takes every call queued at once; before, each sender had one.
  for (int round = 0; round < 20 && (*f)->most_in_flight() <= 4; ++round)
    ASSERT_EQ(send_burst(b, 64, want), 64);
  EXPECT_GT((*f)->most_in_flight(), 4u);
  std::printf("most calls in flight at once: %zu\n", (*f)->most_in_flight());
}

TEST(rec_forwarder_test, calls_move_on_from_an_endpoint_that_does_not_answer) {
  auto server = ncf_server::start();
  ASSERT_FALSE(server.endpoint.empty());
  // The first endpoint's model description comes from the live server; then
  // every call starting at the dead one moves on to it.
  auto f = rec_forwarder::start({"ncf", {"127.0.0.1:1", server.endpoint}});
  ASSERT_TRUE(f.has_value()) << f.error().to_string();
  EXPECT_EQ(send_burst((*f)->binding({}), 16, golden<float>("expected")), 16);
}

}  // namespace
}  // namespace spindle::runtime
