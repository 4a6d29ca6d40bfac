// GNNSched §3.2 memory pool: one region allocated up front per device, split
// into per-task buffers inserted at contiguous offsets from one end, all cleared
// together when a task group ends, so nothing is allocated from the system
// while a group runs and the region never fragments. On the host: page-aligned,
// pre-touched memory; on a GPU: one cudaMalloc, plus a CUDA stream per lane so
// the tasks of a group run concurrently on the device. One owner thread.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "gpu/device.hpp"

namespace spindle::gpu {

/// One task's buffer in the pool and the stream its device work runs on
/// (nullptr for a host pool).
struct pool_slot {
  std::span<std::byte> memory;
  void* stream = nullptr;
};

namespace detail {
struct pool_deleter {
  device_kind where = device_kind::host;
  void operator()(std::byte* p) const;
};
struct stream_deleter {
  void operator()(void* s) const;
};
}  // namespace detail

class memory_pool {
 public:
  /// Reserves (and on the host touches) `bytes` on `where`.
  static expected<memory_pool> create(std::size_t bytes, device_kind where = device_kind::host);
  memory_pool(memory_pool&&) noexcept = default;
  memory_pool& operator=(memory_pool&&) noexcept = default;

  /// The next `bytes` (rounded up to 512) at the current end; errc::resource_exhausted
  /// when the region cannot hold them.
  expected<std::span<std::byte>> insert(std::size_t bytes);
  /// Releases every buffer (end of a task group).
  void clear() { used_ = 0; }
  std::size_t capacity() const { return size_; }
  std::size_t used() const { return used_; }
  device_kind where() const { return where_; }
  /// The stream of lane `i` (the i-th task of a group): nullptr on the host;
  /// on a GPU created on first use and kept.
  expected<void*> lane_stream(std::size_t i);

 private:
  memory_pool() = default;
  std::unique_ptr<std::byte, detail::pool_deleter> base_;
  std::vector<std::unique_ptr<void, detail::stream_deleter>> lanes_;
  std::size_t size_ = 0, used_ = 0;
  device_kind where_ = device_kind::host;
};

}  // namespace spindle::gpu
