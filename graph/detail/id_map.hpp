// Open-addressing map from global node id to local id, cleared in O(1) by an
// epoch stamp so one instance is reused across batches. One owner thread.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/detail/rng.hpp"

namespace spindle::graph::detail {

class id_map {
 public:
  /// Forgets every entry; capacity is kept.
  void clear() {
    if (++epoch_ == 0) {  // stamp wrapped: wipe once every 2^32 clears
      for (auto& s : slots_) s.epoch = 0;
      epoch_ = 1;
    }
    size_ = 0;
  }
  /// Makes room for `n` more entries without rehashing inside the hot loop.
  void reserve(std::size_t n) {
    if ((size_ + n) * 2 > slots_.size()) grow((size_ + n) * 2);
  }
  /// Local id of `key`, inserting `next_local` when absent; `inserted` tells which.
  std::int32_t find_or_insert(std::int64_t key, std::int32_t next_local, bool& inserted) {
    if ((size_ + 1) * 2 > slots_.size()) grow(slots_.size() * 2);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = mix64(static_cast<std::uint64_t>(key)) & mask;; i = (i + 1) & mask) {
      slot& s = slots_[i];
      if (s.epoch != epoch_) {
        s = {key, next_local, epoch_};
        ++size_;
        inserted = true;
        return next_local;
      }
      if (s.key == key) {
        inserted = false;
        return s.value;
      }
    }
  }
  /// Hints the cache to load `key`'s home slot (for a find_or_insert soon after).
  void prefetch(std::int64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[mix64(static_cast<std::uint64_t>(key)) & (slots_.size() - 1)]);
  }
  std::size_t size() const { return size_; }

 private:
  struct slot {
    std::int64_t key;
    std::int32_t value;
    std::uint32_t epoch;
  };
  void grow(std::size_t want) {
    std::size_t cap = 64;
    while (cap < want) cap *= 2;
    std::vector<slot> old;
    old.swap(slots_);
    slots_.assign(cap, slot{0, 0, 0});
    std::uint32_t old_epoch = epoch_;
    epoch_ = 1;
    size_ = 0;
    for (const slot& s : old) {
      if (s.epoch != old_epoch) continue;
      bool ins;
      find_or_insert(s.key, s.value, ins);
    }
  }

  std::vector<slot> slots_;
  std::uint32_t epoch_ = 1;
  std::size_t size_ = 0;
};

}  // namespace spindle::graph::detail
