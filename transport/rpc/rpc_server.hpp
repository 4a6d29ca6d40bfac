// The Cap'n Proto RPC server of `spindle serve`: listens on a loopback address
// by default, runs its own event loop on the thread "rpc-server", and turns
// every call into a call on an rpc_service. Inference replies come back from
// any thread through cross-thread fulfillers, so neither the event loop nor the
// serving threads ever wait on each other. Message size and traversal limits
// bound what one message can cost; malformed messages fail only their call.
// Failed accepts (e.g. out of file descriptors) are logged and retried with
// backoff; connections past a cap are closed at once; each connection has a
// flow limit on the calls it may have in flight.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "transport/net/door_gate.hpp"
#include "transport/rpc/rpc_types.hpp"

namespace spindle::transport::rpc {


struct server_options {
  std::string listen = "127.0.0.1:0";             // port 0: a free port, see port()
  std::string admin_token;                        // empty: Admin is refused entirely
  std::uint64_t max_message_bytes = 64ull << 20;  // traversal limit of one message
  /// Past this many open connections a new one is closed at once (and logged).
  std::size_t max_connections = net::default_max_connections();
  /// Bytes of calls one connection may have in flight before Cap'n Proto stops
  /// reading from it (its flow limit).
  std::size_t flow_limit_bytes = 4u << 20;
  /// After a lone client's call or answer, the door's thread keeps polling for
  /// this long before it sleeps (rpc_server.cpp, run_until_stopped). 0: never.
  unsigned poll_after_us = 0;
};

class rpc_server {
 public:
  /// Binds and starts serving; returns once the port is known. `service` must
  /// outlive the server.
  static expected<std::unique_ptr<rpc_server>> start(const server_options& options,
                                                     rpc_service& service);
  ~rpc_server();  // stops the event loop and joins its thread
  int port() const { return port_; }

  struct impl;

 private:
  explicit rpc_server(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
  int port_ = 0;
};

}  // namespace spindle::transport::rpc
