// The accept loop for a door whose connections another library serves (gRPC's
// AddInsecureChannelFromFd): it accepts, admits each connection through the
// door's gate, hands the socket over, and keeps a duplicate of it to see when
// the library lets it go (its descriptor closed) and to close the connection
// idle longest when the door is full. gRPC 1.51 has no connection cap and its
// own accept loop stops for good once the process runs out of descriptors.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.hpp"

namespace spindle::transport::net {

struct handoff_options {
  std::string name = "grpc";        // thread name and log lines
  std::size_t max_connections = 0;  // 0: the descriptor budget's default, at most 4096
};

class handoff_listener {
 public:
  /// Starts accepting on `listen_fd` (owned from here); `hand_over(fd)` gets each
  /// admitted connection (non-blocking, TCP_NODELAY) and owns that descriptor.
  static expected<std::unique_ptr<handoff_listener>> start(int listen_fd, handoff_options o,
                                                           std::function<void(int)> hand_over);
  ~handoff_listener();  // stops accepting and closes its duplicates (not the connections)
  std::size_t open() const;

  struct impl;

 private:
  explicit handoff_listener(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace spindle::transport::net
