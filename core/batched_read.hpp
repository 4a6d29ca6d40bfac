// The one interface between the feature store and whatever moves bytes: a batch of
// reads from one remote region into caller buffers, completed with one wait.
// Implemented by transport/ (UCX one-sided gets); not thread-safe per instance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

/// A window [offset, offset + bytes) of another reader's region, read as a region
/// of its own (e.g. one shard of a node's region that holds several). `base`
/// must outlive it.
class offset_reader final : public batched_reader {
 public:
  offset_reader(batched_reader& base, std::uint64_t offset, std::uint64_t bytes)
      : base_(base), offset_(offset), bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_; }
  status read(std::span<const read_op> ops) override {
    ops_.assign(ops.begin(), ops.end());
    for (auto& op : ops_) op.offset += offset_;
    return base_.read(ops_);
  }
  const std::byte* mapped() const override {
    return base_.mapped() ? base_.mapped() + offset_ : nullptr;
  }

 private:
  batched_reader& base_;
  std::uint64_t offset_, bytes_;
  std::vector<read_op> ops_;
};

}  // namespace spindle
