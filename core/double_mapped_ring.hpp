// A ring of bytes whose storage (a memfd) is mapped twice, back to back, so a
// span of up to capacity() bytes starting at any ring offset is contiguous in
// virtual memory: a batch that wraps around the end is still one span
// (SplitRPC's zero-copy tensor queues). Move-only RAII owner of the mappings.
// Thread-safety: the mapping itself is immutable; callers order their accesses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace spindle {

class double_mapped_ring {
 public:
  /// At least `min_bytes` (rounded up to whole pages); errors name the system call.
  static expected<double_mapped_ring> create(std::size_t min_bytes,
                                             const char* name = "spindle-ring");
  double_mapped_ring(double_mapped_ring&& other) noexcept;
  double_mapped_ring& operator=(double_mapped_ring&& other) noexcept;
  ~double_mapped_ring();

  std::size_t capacity() const { return capacity_; }
  /// Address of ring offset `offset` (taken mod capacity); the next capacity()
  /// bytes from it are contiguous.
  std::byte* at(std::uint64_t offset) const { return base_ + (offset % capacity_); }

 private:
  double_mapped_ring() = default;
  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace spindle
