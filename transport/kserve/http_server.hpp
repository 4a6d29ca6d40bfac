// KServe v2 over HTTP/REST for `spindle serve --http HOST:PORT` (on the
// event-driven transport/http/event_server: a slow client holds no thread):
// health, server and model metadata, readiness, infer (JSON tensors and
// Triton's binary-tensor extension) and the model-repository extension (load
// and unload behind the admin token, as "Authorization: Bearer TOKEN").
// Errors are KServe's {"error": "..."} with the status a client expects.
// Runs on its own worker threads ("kserve-http"); every request goes through
// the door, so through the gateway's admission control, batcher and metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "transport/kserve/door.hpp"

namespace spindle::transport::kserve {

struct http_options {
  std::string listen = "127.0.0.1:8000";   // port 0: a free one
  std::string admin_token;                 // empty: repository load/unload refused
  std::size_t max_body_bytes = 64u << 20;  // larger bodies: 413
  std::size_t workers = 64;                // requests served at once (each waits for its answer)
  std::size_t max_connections = 0;         // open at once; more are closed (0: fd limit less 64)
  std::chrono::milliseconds request_timeout{5000};  // headers, then body: 408 past it
};

class http_server {
 public:
  /// Binds and starts serving; `d` must outlive the server.
  static expected<std::unique_ptr<http_server>> start(const http_options& o, door& d);
  ~http_server();  // stops and joins
  int port() const { return port_; }

  struct impl;

 private:
  http_server(std::unique_ptr<impl> i, int port);
  std::unique_ptr<impl> impl_;
  int port_;
};

}  // namespace spindle::transport::kserve
