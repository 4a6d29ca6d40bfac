// An HTTP/1.1 server whose serving threads are never held by a slow client:
// one epoll thread accepts, reads each request whole (headers, then a
// Content-Length body) and writes each response, all non-blocking; only a
// complete request reaches a worker thread, which runs its handler. A request
// not complete within its deadline (headers, body) is answered 408 and closed;
// an idle keep-alive connection is closed; a client that does not read its
// response within the write deadline is dropped; past max_connections a new
// connection is closed at once. The KServe HTTP door and /metrics run on it;
// handlers keep cpp-httplib's Request/Response types (routing is ours).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/status.hpp"
#include "transport/http/routes.hpp"

namespace spindle::transport::http {

struct event_server_options {
  std::string host = "127.0.0.1";
  int port = 0;                     // 0: a free one
  std::string name = "http";        // thread names and log lines ("kserve-http", "metrics")
  std::size_t workers = 16;         // handlers run at once (a handler may wait for its answer)
  std::size_t max_connections = 0;  // 0: the descriptor limit less 64, at most 4096
  std::size_t max_header_bytes = 64 << 10;
  std::size_t max_path_bytes = 8 << 10;            // a longer request target: 414
  std::size_t max_body_bytes = 64u << 20;          // larger: 413
  std::chrono::milliseconds header_timeout{5000};  // first byte to the end of the headers
  std::chrono::milliseconds body_timeout{5000};    // end of headers to the end of the body
  std::chrono::milliseconds idle_timeout{5000};    // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{10000};  // a response not taken by then: dropped
};

class event_server {
 public:
  /// Binds host:port; serves once start() is called.
  static expected<std::unique_ptr<event_server>> bind(const event_server_options& o);
  ~event_server();  // stops, closes every connection, joins

  /// Routes (before start): `pattern` is a path template (path_template.hpp:
  /// `{}` captures a segment, `[...]` is optional) matched against the whole
  /// path, by hand, never by regex; the first match wins.
  void get(const std::string& pattern, handler h);
  void post(const std::string& pattern, handler h);
  void get(const std::string& pattern, simple_handler h);
  void post(const std::string& pattern, simple_handler h);
  /// Called for a path no route takes (404) and for errors the server answers
  /// itself (408, 413, ...), to fill the body; default: a plain-text reason.
  void on_error(std::function<void(int status, const std::string& why, httplib::Response&)> f);
  void start();
  int port() const;

  struct counters {
    std::uint64_t accepted = 0, refused = 0, timed_out = 0, write_dropped = 0, requests = 0;
  };
  counters stats() const;

  struct impl;

 private:
  explicit event_server(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace spindle::transport::http
