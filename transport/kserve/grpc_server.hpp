// KServe v2 over gRPC (`inference.GRPCInferenceService`, grpc++'s callback
// API) for `spindle serve --grpc HOST:PORT`: the same door as HTTP/REST, so
// the same models, readiness, gateway, admission control and metrics. Infer
// calls are read on a thread of the door's own (grpc_infer_loop.hpp) and
// answered when the gateway does, except a lone call on an idle model, run on
// that thread (lone_call_gate.hpp); the repository calls need the admin token
// as metadata "authorization: Bearer TOKEN".
#pragma once

#include <memory>
#include <string>

#include "transport/kserve/door.hpp"

namespace spindle::transport::kserve {

struct grpc_options {
  std::string listen = "127.0.0.1:8001";  // port 0: a free one
  std::string admin_token;
  std::size_t max_message_bytes = 64u << 20;
  std::size_t max_connections = 0;  // open at once (0: the descriptor budget's default)
  unsigned poll_after_us = 0;  // ModelInfer's thread polls this long after a lone call (0: never)
};

class grpc_server {
 public:
  /// Binds and starts serving; `d` must outlive the server.
  static expected<std::unique_ptr<grpc_server>> start(const grpc_options& o, door& d);
  ~grpc_server();  // shuts down (calls in flight are cancelled after a short grace)
  int port() const { return port_; }

  struct impl;

 private:
  grpc_server(std::unique_ptr<impl> i, int port);
  std::unique_ptr<impl> impl_;
  int port_;
};

}  // namespace spindle::transport::kserve
