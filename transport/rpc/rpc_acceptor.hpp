// The Cap'n Proto door's accept loop: each connection admitted through the
// door's gate (transport/net/door_gate.hpp) gets its own two-party RPC system
// with a flow limit; a connection silent past the handshake deadline, or
// stalled inside a message, is closed; a failed accept never ends the loop.
#pragma once

#include <capnp/capability.h>
#include <capnp/message.h>
#include <kj/async-io.h>

#include "transport/rpc/rpc_server.hpp"

namespace spindle::transport::rpc {

class acceptor_loop {
 public:
  virtual ~acceptor_loop() noexcept(false) = default;  // (kj::TaskSet may throw)
  /// Accepts until the event loop ends.
  virtual kj::Promise<void> loop() = 0;
  /// Every 2 s: closes stalled connections, reports refusals, returns memory.
  virtual kj::Promise<void> sweep() = 0;
};

/// The loop for `listener` (whose descriptor is `listen_fd`), serving `main`.
kj::Own<acceptor_loop> make_acceptor(kj::ConnectionReceiver& listener, int listen_fd,
                                     kj::Timer& timer, capnp::Capability::Client main,
                                     capnp::ReaderOptions limits, const server_options& o);

}  // namespace spindle::transport::rpc
