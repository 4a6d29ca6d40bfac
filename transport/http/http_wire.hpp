// HTTP/1.1 on the wire for the event server: a request's line and headers
// parsed strictly (RFC 9112: CRLF only, no folding, no whitespace before a
// colon, no Transfer-Encoding, one digits-only Content-Length), and a response
// serialized with its own Content-Length and Connection. Pure functions.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace spindle::transport::http {

struct head_limits {
  std::size_t max_path_bytes = 8 << 10;    // a longer request target: 414
  std::size_t max_body_bytes = 64u << 20;  // a larger Content-Length: 413
};

/// Why a request head is refused: the status to answer and a short reason.
struct head_refusal {
  int status;
  std::string why;
};

/// Parses `head` (the request line and headers, without the blank line) into
/// `req` (method, version, path, target, query, headers) and `content_length`.
std::optional<head_refusal> parse_request_head(std::string_view head, const head_limits& limits,
                                               httplib::Request& req, std::size_t& content_length);

/// "HTTP/1.1 STATUS REASON", the response's headers, Content-Length, Connection
/// (keep-alive or close) and the body.
std::string serialize_response(const httplib::Response& res, bool keep_alive);

/// ASCII case-insensitive equality (header names and tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace spindle::transport::http
