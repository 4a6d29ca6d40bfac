// The one interface between the feature store and whatever moves bytes: a batch of
// reads from one remote region into caller buffers, completed with one wait.
// Implemented by transport/ (UCX one-sided gets); not thread-safe per instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.hpp"

namespace spindle {

/// One read: `bytes` bytes at `offset` from the start of the remote region into `dst`.
struct read_op {
  std::uint64_t offset = 0;
  void* dst = nullptr;
  std::uint64_t bytes = 0;
};

/// Reads from one remote region. `read` issues every op and returns after all of
/// them completed (one completion wait per batch), or with the first error.
class batched_reader {
 public:
  virtual ~batched_reader() = default;
  /// Bytes the region holds; ops must stay inside [0, size()).
  virtual std::uint64_t size() const = 0;
  /// Issues all ops, then waits once. On error the contents of the dst buffers are
  /// unspecified and the reader should be treated as unreachable.
  virtual status read(std::span<const read_op> ops) = 0;
  /// The region mapped into this process (shared memory), when the transport
  /// can map it; readers then copy rows by pointer. nullptr otherwise.
  virtual const std::byte* mapped() const { return nullptr; }
};

}  // namespace spindle
