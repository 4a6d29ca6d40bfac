// Chaos: single requests that killed or fooled a server before, sent to a real
// `spindle serve`; after each the server must answer a good call. A 30 KB URL
// (libstdc++'s regex recursed per character: SIGSEGV), a JSON body nested
// 50,000 deep (a recursive flatten), and HTTP/1.1 framing a proxy in front
// could read differently (request smuggling): conflicting Content-Length,
// Transfer-Encoding, whitespace before a colon, a signed length, 800 KB of
// headers in one write.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <chrono>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "tests/chaos/chaos_server.hpp"
#include "transport/rpc/rpc_client.hpp"

namespace spindle {
namespace {

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find('\r')); }

// Waits up to 20 s for the server to close `fd`: what a one-byte recv returned
// (0: closed) and the seconds it took.
std::pair<ssize_t, double> wait_for_close(int fd) {
  testing::set_receive_timeout(fd, 20);
  const auto t0 = std::chrono::steady_clock::now();
  char b = 0;
  const ssize_t got = ::recv(fd, &b, 1, 0);
  return {got, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

TEST(chaos_hostile_requests_test, a_30_kb_url_is_refused_and_the_server_lives) {
  chaos_server s;
  ASSERT_TRUE(http_infer(s.http));
  for (std::size_t n : {30'000u, 1'000'000u}) {
    const std::string get = "GET /v2/models/" + std::string(n, 'A') + "/ready HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string answer = raw_exchange(s.http, get);
    std::printf("URL of %zu bytes: %s\n", n, status_line(answer).c_str());
    EXPECT_EQ(answer.rfind(n < 60'000 ? "HTTP/1.1 414" : "HTTP/1.1 431", 0), 0u) << status_line(answer);
    EXPECT_TRUE(http_infer(s.http)) << "no answer after a URL of " << n << " bytes";
  }
  // Under the cap, a long name is matched by hand: an unknown model, not a crash.
  const std::string name(8000, 'B');
  const std::string answer =
      raw_exchange(s.http, "GET /v2/models/" + name + "/versions/1/ready HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 404", 0), 0u) << status_line(answer);
  EXPECT_TRUE(http_infer(s.http));
}

TEST(chaos_hostile_requests_test, deeply_nested_json_is_refused_and_the_server_lives) {
  chaos_server s;
  const std::size_t depth = 50'000;
  const std::string body = R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":)" +
                           std::string(depth, '[') + "1" + std::string(depth, ']') + "}]}";
  httplib::Client c("127.0.0.1", s.http);
  c.set_read_timeout(30, 0);
  auto r = c.Post("/v2/models/sage/infer", body, "application/json");
  ASSERT_TRUE(r) << "no answer: the server died?";
  std::printf("JSON nested %zu deep: %d %s\n", depth, r->status, r->body.substr(0, 120).c_str());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("nested deeper than"), std::string::npos) << r->body;
  EXPECT_TRUE(http_infer(s.http));
}

// EmbeddingBag offsets are checked whole: a negative or decreasing one read
// outside the indices (SIGSEGV, or a wrong score answered 200).
TEST(chaos_hostile_requests_test, bad_bag_offsets_are_refused_by_name) {
  chaos_server s;
  auto call = [&](const std::string& offsets0) {
    std::string dense = "[";
    for (int i = 0; i < 13; ++i) dense += std::string(i ? "," : "") + "0.5";
    dense += "]";
    std::string body = R"({"inputs":[{"name":"dense","datatype":"FP32","shape":[1,13],"data":)" +
                       dense + "}";
    for (int t = 0; t < 3; ++t) {
      const std::string off = t == 0 ? offsets0 : "[0,4]";
      const std::string n = std::to_string(t);
      const std::size_t count = std::count(off.begin(), off.end(), ',') + 1;
      body += R"(,{"name":"indices_)" + n + R"(","datatype":"INT64","shape":[4],"data":[1,2,3,4]})";
      body += R"(,{"name":"offsets_)" + n + R"(","datatype":"INT64","shape":[)" +
              std::to_string(count) + "],\"data\":" + off + "}";
    }
    body += "]}";
    httplib::Client c("127.0.0.1", s.http);
    c.set_read_timeout(30, 0);
    return c.Post("/v2/models/ctr/infer", body, "application/json");
  };
  auto good = call("[0,4]");
  ASSERT_TRUE(good);
  ASSERT_EQ(good->status, 200) << good->body;
  for (const char* bad : {"[0,-3000,4]", "[0,5,4]", "[0,3000,4]", "[1,4]", "[0,3]"}) {
    auto r = call(bad);
    ASSERT_TRUE(r) << bad << ": no answer: the server died?";
    std::printf("offsets_0 = %s: %d %s\n", bad, r->status, r->body.substr(0, 100).c_str());
    EXPECT_EQ(r->status, 400) << bad << ": " << r->body;
    EXPECT_NE(r->body.find("offsets_0"), std::string::npos) << r->body;
  }
  EXPECT_EQ(call("[0,4]")->status, 200);
  // The same over Cap'n Proto: a batch of 64 with offsets of 10^12 (the server aborted).
  auto c = transport::rpc::rpc_client::connect(s.capnp, 10'000);
  ASSERT_TRUE(c.has_value());
  transport::rpc::rec_call rc;
  rc.model = "ctr";
  rc.batch = 64;
  rc.dense.assign(64 * 13, 0.1f);
  for (int t = 0; t < 3; ++t) {
    transport::rpc::rec_bag bag;
    for (int i = 0; i < 64; ++i) bag.indices.push_back(i % 20);
    for (int i = 0; i <= 64; ++i) bag.offsets.push_back(i);
    if (t == 0)
      for (int i = 1; i < 64; ++i) bag.offsets[std::size_t(i)] = 1'000'000'000'000;
    rc.sparse.push_back(std::move(bag));
  }
  auto a = (*c)->infer_rec(rc);
  ASSERT_TRUE(a.has_value()) << "no answer: the server died?";
  std::printf("Cap'n Proto offsets of 10^12: %s %s\n",
              std::string(transport::rpc::to_string(a->status)).c_str(), a->message.c_str());
  EXPECT_EQ(a->status, transport::rpc::rpc_status::bad_request) << a->message;
  EXPECT_NE(a->message.find("sparse[0]"), std::string::npos) << a->message;
  EXPECT_EQ(call("[0,4]")->status, 200);
}

// Idle Cap'n Proto sockets that never send a byte used to hold the door shut
// (4,100 of them: 5/5 new clients refused for 60 s). Full, the door now closes
// the connection idle longest to admit a new client, and a socket that sends
// nothing is closed after the handshake deadline (10 s).
TEST(chaos_hostile_requests_test, idle_capnp_sockets_do_not_lock_the_door) {
  chaos_server s(200);
  const int port = testing::port_of(s.capnp);
  std::vector<int> idle;
  for (int i = 0; i < 250; ++i)
    if (const int fd = testing::dial_loopback(port); fd >= 0) idle.push_back(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int answered = 0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto c = transport::rpc::rpc_client::connect(s.capnp, 10'000);
    if (!c) continue;
    auto a = (*c)->infer_gnn({"sage", {5}, 0, 0});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    answered += a.has_value() && a->status == transport::rpc::rpc_status::ok && ms < 1000;
  }
  std::printf("250 idle Cap'n Proto sockets, --max-connections 200: %d of 5 new clients answered\n",
              answered);
  EXPECT_EQ(answered, 5);
  // An idle socket is closed by the server after the handshake deadline.
  const int fd = testing::dial_loopback(port);
  ASSERT_GE(fd, 0);
  const auto [got, waited] = wait_for_close(fd);
  std::printf("a socket that sent nothing: closed by the server after %.1f s\n", waited);
  EXPECT_EQ(got, 0) << "not closed within 20 s";
  EXPECT_LT(waited, 15.0);
  ::close(fd);
  for (int f : idle) ::close(f);
}

// A request followed by a half-close (SHUT_WR) is answered before the server
// closes: before, the server closed at the client's FIN and the answer was lost.
TEST(chaos_hostile_requests_test, a_half_closed_socket_gets_its_answer) {
  chaos_server s;
  const std::string body = R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[3]}]})";
  const std::string req = "POST /v2/models/sage/infer HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  const int fd = testing::dial_loopback(s.http);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  ::shutdown(fd, SHUT_WR);
  const std::string answer = testing::receive_all(fd, 15);
  ::close(fd);
  std::printf("request, then SHUT_WR: %s\n", status_line(answer).c_str());
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"outputs\""), std::string::npos) << answer;
  // Three pipelined requests, then SHUT_WR: three answers.
  const int p = testing::dial_loopback(s.http);
  ASSERT_GE(p, 0);
  const std::string three = req + req + req;
  ASSERT_EQ(::send(p, three.data(), three.size(), MSG_NOSIGNAL), ssize_t(three.size()));
  ::shutdown(p, SHUT_WR);
  const std::string all = testing::receive_all(p, 15);
  ::close(p);
  std::size_t answers = 0;
  for (std::size_t at = 0; (at = all.find("HTTP/1.1 200", at)) != std::string::npos; ++at) ++answers;
  EXPECT_EQ(answers, 3u) << all.substr(0, 400);
  EXPECT_TRUE(http_infer(s.http));
}

std::size_t rss_mb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) / 1024;
  return 0;
}

// Memory a client can pin: bytes pipelined behind a request it never reads the
// answer of (the HTTP door kept buffering them: 3.3 GB in 8 s), and a Cap'n Proto
// message begun and never finished (held until the client left).
TEST(chaos_hostile_requests_test, stalled_clients_cannot_pin_memory) {
  chaos_server s;
  const std::size_t before = rss_mb(s.proc->pid());
  std::string seeds;  // 1,000 seeds: answers of ~40 KB, so unread answers fill the socket
  for (int i = 0; i < 1000; ++i) seeds += (i ? "," : "") + std::to_string(i);
  const std::string body = R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1000],"data":[)" +
                           seeds + "]}]}";
  const std::string req = "POST /v2/models/sage/infer HTTP/1.1\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  const int h = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int small = 4096;  // before connect, so the window stays small: answers back up
  ::setsockopt(h, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(std::uint16_t(s.http));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(h, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval quick{0, 200'000};
  ::setsockopt(h, SOL_SOCKET, SO_SNDTIMEO, &quick, sizeof quick);
  std::string junk(1 << 20, 'j');
  std::size_t sent = 0;
  for (int i = 0; i < 400; ++i)  // 400 requests whose answers are never read...
    [[maybe_unused]] auto w = ::send(h, req.data(), req.size(), MSG_NOSIGNAL);
  for (int i = 0, stuck = 0; i < 400 && stuck < 5; ++i) {  // ...then junk behind them
    const ssize_t k = ::send(h, junk.data(), junk.size(), MSG_NOSIGNAL);
    stuck = k > 0 ? 0 : stuck + 1;  // the server stopped reading
    if (k > 0) sent += std::size_t(k);
  }
  // A Cap'n Proto frame announcing 1 MiB, 100 bytes of it, then silence.
  const int port = testing::port_of(s.capnp);
  const int c = testing::dial_loopback(port);
  ASSERT_GE(c, 0);
  std::string frame(8, '\0');
  const std::uint32_t words = (1u << 20) / 8;
  std::memcpy(frame.data() + 4, &words, 4);
  frame += std::string(100, 'x');
  ASSERT_EQ(::send(c, frame.data(), frame.size(), MSG_NOSIGNAL), ssize_t(frame.size()));
  const std::size_t during = rss_mb(s.proc->pid());
  const auto [got, waited] = wait_for_close(c);
  std::printf("HTTP: %zu MB pushed behind unread answers, server RSS %zu -> %zu MB; a Cap'n Proto "
              "message stalled after 100 bytes: closed after %.1f s\n",
              sent >> 20, before, during, waited);
  EXPECT_LT(during, before + 200) << "the server buffered what a client pushed";
  EXPECT_EQ(got, 0) << "the stalled Cap'n Proto connection was not closed";
  EXPECT_LT(waited, 15.0);
  ::close(c);
  ::close(h);
  EXPECT_TRUE(http_infer(s.http));
}

TEST(chaos_hostile_requests_test, ambiguous_http_framing_is_refused) {
  chaos_server s;
  const std::string body = R"({"inputs":[{"name":"seeds","datatype":"INT64","shape":[1],"data":[3]}]})";
  const std::string len = std::to_string(body.size());
  const std::string post = "POST /v2/models/sage/infer HTTP/1.1\r\nHost: x\r\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"conflicting Content-Length", post + "Content-Length: " + len + "\r\nContent-Length: 5\r\n\r\n" + body},
      {"Transfer-Encoding identity then chunked",
       post + "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\nContent-Length: " + len + "\r\n\r\n" + body},
      {"whitespace before the colon", post + "Content-Length : " + len + "\r\n\r\n" + body},
      {"a signed length", post + "Content-Length: +" + len + "\r\n\r\n" + body},
      {"800 KB of headers in one write",
       post + "X-Pad: " + std::string(800'000, 'p') + "\r\nContent-Length: " + len + "\r\n\r\n" + body},
      {"a folded header line",
       post + "X-A: b\r\n Transfer-Encoding: chunked\r\nContent-Length: " + len + "\r\n\r\n" + body},
      {"a bare LF", post + "X-A: b\nContent-Length: " + len + "\r\n\r\n" + body},
      {"HTTP/1.9", "POST /v2/models/sage/infer HTTP/1.9\r\nContent-Length: " + len + "\r\n\r\n" + body},
      {"a space in the target",
       "POST /v2/models/sa ge/infer HTTP/1.1\r\nContent-Length: " + len + "\r\n\r\n" + body},
      {"an input given twice",
       [&] {
         const std::string twice = body.substr(0, body.size() - 2) +
                                   R"(,{"name":"seeds","datatype":"INT64","shape":[1],"data":[4]}]})";
         return post + "Content-Length: " + std::to_string(twice.size()) + "\r\n\r\n" + twice;
       }()},
  };
  for (const auto& [what, bytes] : cases) {
    const std::string answer = raw_exchange(s.http, bytes);
    std::printf("%s: %s\n", what.c_str(), status_line(answer).c_str());
    EXPECT_TRUE(answer.rfind("HTTP/1.1 4", 0) == 0) << what << ": " << status_line(answer);
    EXPECT_EQ(answer.find("HTTP/1.1 200"), std::string::npos) << what;
  }
  // The same body framed plainly is answered.
  const std::string good = raw_exchange(s.http, post + "Connection: close\r\nContent-Length: " + len + "\r\n\r\n" + body);
  EXPECT_EQ(good.rfind("HTTP/1.1 200", 0), 0u) << status_line(good);
}

}  // namespace
}  // namespace spindle
