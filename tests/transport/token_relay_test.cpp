// The authenticated relay: bytes pass both ways once both ends hold the token;
// a wrong token or raw bytes on the gate close that connection alone and never
// reach the port behind the gate.
#include "transport/net/token_relay.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "tests/support/loopback_socket.hpp"
#include "transport/net/listen_socket.hpp"

namespace spindle::transport::net {
namespace {

// An echo server on 127.0.0.1 counting the connections it accepted.
struct echo_server {
  int fd = -1, port = 0;
  std::atomic<int> accepted{0};
  std::atomic<bool> stop{false};
  std::thread t;
  echo_server() {
    fd = *listen_socket("127.0.0.1", 0, "echo");
    port = local_port(fd);
    t = std::thread([this] {
      while (!stop) {
        const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        ++accepted;
        std::thread([c] {
          char buf[65536];
          for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;)
            if (::send(c, buf, std::size_t(n), MSG_NOSIGNAL) != n) break;
          ::close(c);
        }).detach();
      }
    });
  }
  ~echo_server() {
    stop = true;
    t.join();
    ::close(fd);
  }
};

int connect_to(int port) {
  const int fd = testing::dial_loopback(port);
  EXPECT_GE(fd, 0);
  testing::set_receive_timeout(fd, 10);
  return fd;
}

// Sends `out` and reads until `want` bytes came back or the connection ended.
std::string round_trip(int fd, const std::string& out, std::size_t want) {
  std::thread writer(
      [&] { [[maybe_unused]] auto w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL); });
  std::string got;
  char buf[65536];
  while (got.size() < want) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, std::size_t(n));
  }
  writer.join();
  return got;
}

TEST(token_relay_test, relays_both_ways_once_both_ends_hold_the_token) {
  echo_server echo;
  auto gate = token_relay::gate("127.0.0.1", 0, echo.port, "secret-token", "gate");
  ASSERT_TRUE(gate.has_value()) << gate.error().message();
  auto dialer = token_relay::dialer("127.0.0.1", (*gate)->port(), "secret-token", "dialer");
  ASSERT_TRUE(dialer.has_value()) << dialer.error().message();
  std::string big(3 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char(i * 131 % 251);
  const int fd = connect_to((*dialer)->port());
  EXPECT_EQ(round_trip(fd, big, big.size()), big);
  ::close(fd);
  EXPECT_EQ((*gate)->stats().relayed, 1u);
}

TEST(token_relay_test, a_wrong_token_or_raw_bytes_never_reach_the_port_behind) {
  echo_server echo;
  auto gate = token_relay::gate("127.0.0.1", 0, echo.port, "secret-token", "gate");
  ASSERT_TRUE(gate.has_value());
  auto wrong = token_relay::dialer("127.0.0.1", (*gate)->port(), "not-the-token", "dialer");
  ASSERT_TRUE(wrong.has_value());
  int fd = connect_to((*wrong)->port());
  EXPECT_EQ(round_trip(fd, "hello", 5), "");  // closed, nothing echoed
  ::close(fd);
  // Raw bytes on the gate: the challenge, then the end.
  fd = connect_to((*gate)->port());
  const std::string got = round_trip(fd, std::string(104, '\x5a'), 1000);
  ::close(fd);
  EXPECT_EQ(got.size(), 40u);  // magic and nonce only
  // The gate counts a refusal once it has closed the connection: wait for both
  // (a loaded machine may take more than a moment).
  for (int i = 0; i < 3000 && (*gate)->stats().refused < 2; ++i)  // up to 30 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(echo.accepted.load(), 0);
  EXPECT_EQ((*gate)->stats().refused, 2u);
  // And a good dialer still passes.
  auto good = token_relay::dialer("127.0.0.1", (*gate)->port(), "secret-token", "dialer");
  fd = connect_to((*good)->port());
  EXPECT_EQ(round_trip(fd, "ping", 4), "ping");
  ::close(fd);
}

}  // namespace
}  // namespace spindle::transport::net
