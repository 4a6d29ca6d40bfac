// A Prometheus text endpoint: HTTP on a loopback address by default (cpp-httplib),
// GET /metrics answers whatever `render` returns (text exposition format 0.0.4).
// Runs on its own thread "metrics-http"; `render` is called from that thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.hpp"

namespace spindle::transport::http {

class metrics_server {
 public:
  /// Binds "HOST:PORT" (port 0: a free one) and serves until destroyed.
  static expected<std::unique_ptr<metrics_server>> start(const std::string& listen,
                                                         std::function<std::string()> render);
  ~metrics_server();
  int port() const { return port_; }

  struct impl;

 private:
  explicit metrics_server(std::unique_ptr<impl> i, int port);
  std::unique_ptr<impl> impl_;
  int port_;
};

}  // namespace spindle::transport::http
