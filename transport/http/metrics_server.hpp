// A Prometheus text endpoint: HTTP on a loopback address by default (on the
// event-driven event_server: half-sent or slow scrapes hold no thread), GET
// /metrics answers whatever `render` returns (text exposition format 0.0.4).
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
                                                         std::function<std::string()> render,
                                                         std::size_t max_connections = 0);
  ~metrics_server();
  int port() const { return port_; }

  struct impl;

 private:
  explicit metrics_server(std::unique_ptr<impl> i, int port);
  std::unique_ptr<impl> impl_;
  int port_;
};

}  // namespace spindle::transport::http
