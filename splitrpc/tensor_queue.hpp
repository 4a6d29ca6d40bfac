// A per-model contiguous queue of request payloads (SplitRPC §3.3): a request
// reserves a slot of its payload's size at the tail of a double-mapped ring and
// its bytes are written there directly by the receive path; the executor takes
// the oldest committed requests as ONE contiguous span (even across the ring's
// wrap) and releases them after computing. No payload is ever copied to batch.
// Thread-safe: one mutex, O(1) critical sections (take is O(batch)).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/double_mapped_ring.hpp"
#include "core/status.hpp"

namespace spindle::splitrpc {

class tensor_queue {
 public:
  static expected<std::unique_ptr<tensor_queue>> create(std::size_t capacity_bytes);

  struct slot {
    std::uint64_t id = 0;
    std::byte* data = nullptr;  // write the payload here
    std::size_t bytes = 0;
  };
  /// Reserves `bytes` at the tail; resource_exhausted when the ring lacks room
  /// (the caller answers `overloaded`). Ids increase by one per reserve.
  expected<slot> reserve(std::size_t bytes);
  /// The slot's payload is fully written (SplitRPC RX_COMPLETE).
  status commit(std::uint64_t id);

  struct batch {
    std::vector<std::uint64_t> ids;
    std::vector<std::size_t> sizes;
    const std::byte* data = nullptr;  // ids.size() payloads back to back
    std::size_t bytes = 0;
  };
  /// The oldest committed, not yet taken slots (at most max_requests / max_bytes)
  /// as one span; empty when the oldest is still being written.
  batch take(std::size_t max_requests, std::size_t max_bytes);
  /// Frees a taken batch's bytes; batches are released in the order taken.
  status release(const batch& b);

  std::size_t capacity() const { return ring_.capacity(); }
  std::size_t used_bytes() const;

 private:
  explicit tensor_queue(double_mapped_ring ring) : ring_(std::move(ring)) {}
  struct entry {
    std::uint64_t id, offset;
    std::size_t bytes;
    bool committed = false, taken = false;
  };
  double_mapped_ring ring_;
  mutable std::mutex mu_;
  std::deque<entry> entries_;  // unreleased, oldest first; guarded by mu_
  std::uint64_t head_ = 0;     // ring offset of the oldest unreleased byte; guarded by mu_
  std::uint64_t tail_ = 0;     // ring offset of the next reserve; guarded by mu_
  std::uint64_t next_id_ = 1;  // guarded by mu_
};

}  // namespace spindle::splitrpc
