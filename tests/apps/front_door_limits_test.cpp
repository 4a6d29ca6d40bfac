// The front door at its limits, with real processes: out of file descriptors,
// connections past the cap, half-sent HTTP requests beside a metrics scrape, a
// large model loading beside served ones, and SIGTERM stopping cleanly.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/apps/front_door_fixture.hpp"
#include "tests/support/loopback_socket.hpp"

namespace spindle {
namespace {

using namespace front_door;

// Reads the server's output until a line contains `text` (or the time is up).
bool saw_line(child_process& p, const std::string& text, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until)
    if (auto l = p.read_line(500); l && l->find(text) != std::string::npos) return true;
  return false;
}

// `spindle serve` of the fixture's model under `ulimit -n 200` with `extra`
// flags, its log on stdout.
child_process serve_with_few_fds(const std::string& extra) {
  const auto& f = fixture();
  const std::string cmd = fmt::format(
      "ulimit -n 200; exec {} serve --dataset {}/g --model {}/m --listen 127.0.0.1:0 {} 2>&1",
      SPINDLE_BINARY, f.dir, f.dir, extra);
  return std::move(*child_process::spawn({"/bin/bash", "-c", cmd}));
}

struct door_address {
  std::string endpoint;
  int port = 0;
};

// Waits for the "listening HOST:PORT" line of `s` (port 0: it never came).
door_address wait_listening(child_process& s) {
  auto endpoint = s.wait_for("listening ", 60000);
  if (!endpoint) return {};
  return {*endpoint, testing::port_of(*endpoint)};
}

// The server gets answered again once connections are gone: a fresh client's call succeeds.
void expect_answers(const std::string& endpoint) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    if (auto c = rpc::rpc_client::connect(endpoint, 5000); c) {
      auto a = (*c)->infer_gnn({"sage", {1}, 0, 0});
      if (a && a->status == rpc::rpc_status::ok) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ADD_FAILURE() << "the front door at " << endpoint << " never answered again";
}

// Before: with `ulimit -n 256` and 300 connections the rpc-server thread
// exited, the listener closed, and connections were refused for good with
// nothing logged. Now the doors' descriptor budget (the limit less a reserve)
// refuses the excess by name before the process runs out, and the door serves
// again once connections are gone.
TEST(front_door_test, running_out_of_file_descriptors_leaves_the_front_door_serving) {
  auto s = serve_with_few_fds("--max-connections 100000 --max-connections-per-peer 100000");
  const auto door = wait_listening(s);
  ASSERT_NE(door.port, 0);
  std::vector<int> socks;
  for (int i = 0; i < 300; ++i)
    if (int fd = testing::dial_loopback(door.port); fd >= 0) socks.push_back(fd);
  EXPECT_TRUE(saw_line(s, "descriptors in use", 10000));
  for (int fd : socks) ::close(fd);
  expect_answers(door.endpoint);
  s.signal(SIGTERM);
  EXPECT_EQ(s.wait(), 0);
}

// With a connection cap the excess is closed at once and logged; the server
// answers again once connections are gone.
TEST(front_door_test, connections_past_the_cap_are_closed_at_once) {
  auto s = serve_with_few_fds("--max-connections 8");
  const auto door = wait_listening(s);
  ASSERT_NE(door.port, 0);
  std::vector<int> socks;
  for (int i = 0; i < 20; ++i) socks.push_back(testing::dial_loopback(door.port));
  EXPECT_TRUE(saw_line(s, "with the door at --max-connections 8", 10000));
  char byte;
  testing::set_receive_timeout(socks.back(), 5);
  EXPECT_EQ(::recv(socks.back(), &byte, 1, 0), 0);  // closed by the server, not left hanging
  for (int fd : socks) ::close(fd);
  expect_answers(door.endpoint);
  s.signal(SIGTERM);
  EXPECT_EQ(s.wait(), 0);
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// 64 half-sent HTTP requests (slow-loris) do not stall a scrape: before, 8
// stalled one for 9.5 s and 64 made it time out.
TEST(front_door_test, half_sent_http_requests_do_not_stall_a_metrics_scrape) {
  auto& f = fixture();
  std::vector<int> stuck;
  for (int i = 0; i < 64; ++i) {
    const int fd = testing::dial_loopback(f.metrics_port);
    ASSERT_GE(fd, 0);
    const char partial[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";  // never finished
    ASSERT_GT(::send(fd, partial, sizeof partial - 1, MSG_NOSIGNAL), 0);
    stuck.push_back(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  httplib::Client http("127.0.0.1", f.metrics_port);
  http.set_read_timeout(10, 0);
  auto r = http.Get("/metrics");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r) << "scrape failed";
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(took, std::chrono::seconds(3));
  std::printf("scrape with 64 half-sent requests open: %.0f ms\n",
              std::chrono::duration<double, std::milli>(took).count());
  for (int fd : stuck) ::close(fd);
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// Loading a large model (268 MB of weights) runs off the RPC thread: an
// inference call on another model during the load is answered at once (before,
// loads ran on the RPC thread and stalled every model for the whole load).
TEST(front_door_test, loading_a_large_model_does_not_stall_other_models) {
  auto& f = fixture();
  config::model_desc big;
  big.arch = config::model_arch::gcn;
  big.in = 16, big.hidden = 8192, big.out = 8192;
  const std::string dir = f.dir + "/big";
  ASSERT_TRUE(nn::init_model(big, 3, dir).is_ok());
  std::atomic<bool> loading{true};
  double load_s = 0;
  std::thread loader([&] {
    auto c = rpc::rpc_client::connect(f.endpoint, 30000);
    ASSERT_TRUE(c.has_value());
    const auto t0 = std::chrono::steady_clock::now();
    auto r = (*c)->load_model(f.token, "big", dir);
    load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    loading = false;
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, rpc::rpc_status::ok) << r->message;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  double worst_s = 0;
  int during = 0;
  while (loading) {
    const auto t0 = std::chrono::steady_clock::now();
    auto a = f.client->infer_gnn({"sage", {5}, 0, 0});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, rpc::rpc_status::ok);
    if (loading) worst_s = std::max(worst_s, s), ++during;
  }
  loader.join();
  EXPECT_GT(during, 0) << "the load took " << load_s << " s";
  // The load took a while; calls during it did not wait for it.
  EXPECT_LT(worst_s, std::max(0.05, load_s / 3)) << "load " << load_s << " s";
  EXPECT_EQ(f.client->unload_model(f.token, "big")->status, rpc::rpc_status::ok);
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// Last: it stops the shared server the tests above use.
TEST(front_door_test, sigterm_stops_the_server_cleanly) {
  auto& f = fixture();
  f.client.reset();
  f.server->signal(SIGTERM);
  EXPECT_EQ(f.server->wait(), 0);
  f.server.reset();
}

}  // namespace
}  // namespace spindle
