// A per-pipeline bump arena that the buffers of every forward pass come from,
// reused across batches: allocation bumps an offset, freeing is free, reset()
// ends a pass. A pass that outgrows the block spills into extra heap blocks and
// the next reset() replaces them with one block of the high-water size, so in
// steady state a pass makes no system allocation. Not thread-safe (one owner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/tensor.hpp"

namespace spindle::nn {

class arena_allocator final : public allocator {
 public:
  explicit arena_allocator(std::size_t initial_bytes = 1 << 20);
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) override;
  /// Ends a pass: every allocation is void; the block grows to the pass's high-water mark.
  void reset();
  std::size_t capacity() const { return size_; }
  /// System allocations made so far (1 for the first block, +1 per growth or spill).
  std::uint64_t system_allocations() const { return system_allocations_; }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const;
  };
  using block_ptr = std::unique_ptr<std::byte, free_deleter>;
  static block_ptr make_block(std::size_t bytes);

  block_ptr block_;
  std::size_t size_ = 0, used_ = 0, high_water_ = 0;
  std::vector<std::pair<block_ptr, std::size_t>> spill_;  // blocks of this pass beyond block_
  std::uint64_t system_allocations_ = 0;
};

}  // namespace spindle::nn
