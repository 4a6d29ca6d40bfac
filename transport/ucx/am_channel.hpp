// A message channel over UCX active messages: one thread ("ucx-bridge") owns a
// worker, connects to peers by their worker address, sends frames (header +
// payload, rendezvous when large so the receiver pulls the payload) and hands
// each received frame to a callback. Other threads only queue work and wake it.
// The transport of actors/ucx_bridge (docs/architecture.md "Planes": hot-path messages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace spindle::transport::ucx {

class am_channel {
 public:
  /// A received frame: the sender's header and payload (owned, moved out).
  using frame_handler = std::function<void(std::vector<char> header, std::vector<char> payload)>;
  /// A send to `peer` failed (the peer died or is unreachable); runs on the channel thread.
  using failure_handler = std::function<void(int peer, const status& why)>;

  /// Starts the channel thread. `transports` overrides UCX_TLS like context::create.
  static expected<std::unique_ptr<am_channel>> start(frame_handler on_frame,
                                                     failure_handler on_failure,
                                                     std::string_view transports = {});
  ~am_channel();  // stops and joins the thread; unsent frames are dropped
  am_channel(const am_channel&) = delete;
  am_channel& operator=(const am_channel&) = delete;

  /// This channel's worker address as hex, for peers' connect().
  const std::string& address() const;
  /// Connects (or reconnects) to `peer` at a hex worker address; queued, in order with sends.
  void connect(int peer, std::string address_hex);
  /// Forgets `peer`'s endpoint (it died); later sends to it fail until connect().
  void disconnect(int peer);
  /// Queues a frame to `peer`. Failures are reported through the failure handler.
  void post(int peer, std::vector<char> header, std::vector<char> payload);
  /// Frames sent and received so far (for stats and tests).
  std::uint64_t sent() const;
  std::uint64_t received() const;

 private:
  struct state;
  explicit am_channel(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

}  // namespace spindle::transport::ucx
