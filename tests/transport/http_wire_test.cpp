// HTTP/1.1 request heads parsed strictly, and responses serialized with their
// own framing: each refusal with the status a client should see.
#include "transport/http/http_wire.hpp"

#include <gtest/gtest.h>

namespace spindle::transport::http {
namespace {

std::optional<head_refusal> parse(std::string_view head, std::size_t* length = nullptr) {
  httplib::Request req;
  std::size_t n = 0;
  auto r = parse_request_head(head, {}, req, n);
  if (length) *length = n;
  return r;
}

TEST(http_wire_test, a_plain_request_parses) {
  httplib::Request req;
  std::size_t n = 9;
  ASSERT_FALSE(parse_request_head(
      "POST /v2/models/m/infer?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12", {}, req, n));
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/v2/models/m/infer");
  EXPECT_EQ(req.get_param_value("x"), "1");
  EXPECT_EQ(req.get_header_value("Host"), "a");
  EXPECT_EQ(n, 12u);
}

TEST(http_wire_test, ambiguous_framing_is_refused_with_its_status) {
  const std::pair<std::string_view, int> cases[] = {
      {"GET / HTTP/2.0", 400},                                             // not HTTP/1.x
      {"GET /a b HTTP/1.1", 400},                                          // a space in the target
      {"GET / HTTP/1.1\nHost: a", 400},                                    // bare LF
      {"GET / HTTP/1.1\r\nHost : a", 400},                                 // space before the colon
      {"GET / HTTP/1.1\r\nHost: a\r\n folded", 400},                       // obs-fold
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 411},              // no TE at all
      {"POST / HTTP/1.1\r\nContent-Length: +5", 400},                      // a sign
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6", 400},  // conflict
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999", 413},             // past the body limit
  };
  for (const auto& [head, status] : cases) {
    const auto r = parse(head);
    ASSERT_TRUE(r.has_value()) << head;
    EXPECT_EQ(r->status, status) << head << ": " << r->why;
  }
  const std::string long_target = "GET /" + std::string(9000, 'a') + " HTTP/1.1";
  EXPECT_EQ(parse(long_target)->status, 414);
}

TEST(http_wire_test, a_response_carries_its_own_length_and_connection) {
  httplib::Response res;
  res.status = 404;
  res.set_header("Content-Length", "999");  // a handler's own framing is replaced
  res.body = "nope";
  const auto text = serialize_response(res, false);
  EXPECT_EQ(text.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("Content-Length: 4\r\nConnection: close\r\n\r\nnope"), std::string::npos);
  EXPECT_EQ(text.find("999"), std::string::npos);
}

}  // namespace
}  // namespace spindle::transport::http
