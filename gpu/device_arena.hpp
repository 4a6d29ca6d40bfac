// Device memory for one pipeline's batches (GNNSched §3.2's pool on a GPU): one
// cudaMalloc up front, sub-allocated by a bump pointer (256-byte aligned) and
// reset after each batch, so a batch allocates nothing from the driver; plus
// the batch's own CUDA stream and a pinned host staging buffer. One owner
// thread. Needs a CUDA device: create() names why not.
#pragma once

#include <cstddef>
#include <memory>

#include "core/status.hpp"

namespace spindle::gpu {

class device_arena {
 public:
  static expected<std::unique_ptr<device_arena>> create(std::size_t bytes);
  /// An arena over `region` of device memory it does not own (a GNNSched task's
  /// slot of the device pool), whose work runs on `stream` (not owned either).
  static std::unique_ptr<device_arena> over(void* base, std::size_t bytes, void* stream);
  ~device_arena();
  /// The next `bytes` of the region; errc::resource_exhausted (naming the sizes)
  /// when it cannot hold them.
  expected<void*> take(std::size_t bytes);
  template <class T>
  expected<T*> take_n(std::size_t n) {
    SPINDLE_ASSIGN_OR_RETURN(void* p, take(n * sizeof(T)));
    return static_cast<T*>(p);
  }
  /// Frees every buffer taken (end of a batch).
  void reset() { used_ = 0; }
  std::size_t capacity() const { return size_; }
  std::size_t used() const { return used_; }
  void* stream() const { return stream_; }

 private:
  device_arena() = default;
  void* base_ = nullptr;
  void* stream_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
  bool owned_ = true;
};

/// Page-locked host memory (cudaMallocHost) for a batch's transfers: copies
/// from it run as DMA without a staging copy. Grows on demand; one owner.
class pinned_buffer {
 public:
  pinned_buffer() = default;
  ~pinned_buffer();
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  /// At least `bytes` of pinned memory (contents not kept when it grows).
  expected<void*> reserve(std::size_t bytes);

 private:
  void* p_ = nullptr;
  std::size_t size_ = 0;
};

/// Device memory of one GPU that grows on demand (to twice what was asked;
/// contents not kept) and is freed on that GPU: scratch that lives across
/// batches. One owner.
class device_buffer {
 public:
  explicit device_buffer(int gpu = 0) : gpu_(gpu) {}
  ~device_buffer();
  device_buffer(device_buffer&& o) noexcept;
  device_buffer& operator=(device_buffer&& o) noexcept;
  /// At least `bytes` of GPU gpu's memory (made the current device first).
  expected<void*> reserve(std::size_t bytes);
  void* data() const { return p_; }

 private:
  int gpu_ = 0;
  void* p_ = nullptr;
  std::size_t size_ = 0;
};

/// A CUDA stream (tasks of a GNNSched group each on their own), or the error.
expected<void*> stream_create();
void stream_destroy(void* stream);

}  // namespace spindle::gpu
