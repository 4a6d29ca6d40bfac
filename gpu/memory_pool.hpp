// GNNSched §3.2 memory pool: one region allocated up front per device, split
// into per-task buffers inserted at contiguous offsets from one end, all cleared
// together when a task group ends, so nothing is allocated from the system
// while a group runs and the region never fragments. Host backend: page-aligned,
// pre-touched memory. One owner thread (the scheduler).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "core/status.hpp"

namespace spindle::gpu {

class memory_pool {
 public:
  /// Reserves and touches `bytes` on the host device.
  static expected<memory_pool> create(std::size_t bytes);
  memory_pool(memory_pool&&) noexcept = default;
  memory_pool& operator=(memory_pool&&) noexcept = default;

  /// The next `bytes` (rounded up to 512) at the current end; errc::resource_exhausted
  /// when the region cannot hold them.
  expected<std::span<std::byte>> insert(std::size_t bytes);
  /// Releases every buffer (end of a task group).
  void clear() { used_ = 0; }
  std::size_t capacity() const { return size_; }
  std::size_t used() const { return used_; }

 private:
  memory_pool() = default;
  struct deleter {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, deleter> base_;
  std::size_t size_ = 0, used_ = 0;
};

}  // namespace spindle::gpu
