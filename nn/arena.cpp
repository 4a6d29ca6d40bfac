#include "nn/arena.hpp"

#include <algorithm>
#include <cstdlib>

namespace spindle::nn {

void arena_allocator::free_deleter::operator()(std::byte* p) const { std::free(p); }

arena_allocator::block_ptr arena_allocator::make_block(std::size_t bytes) {
  return block_ptr(static_cast<std::byte*>(std::aligned_alloc(kAllocAlign, round_up(bytes))));
}

arena_allocator::arena_allocator(std::size_t initial_bytes)
    : block_(make_block(initial_bytes)), size_(round_up(initial_bytes)) {
  ++system_allocations_;
}

void* arena_allocator::allocate(std::size_t bytes) {
  const std::size_t size = round_up(std::max<std::size_t>(bytes, 1));
  used_ += size;
  high_water_ = std::max(high_water_, used_);
  track(std::ptrdiff_t(size));
  if (used_ <= size_) return block_.get() + (used_ - size);
  // Spill: this pass outgrew the block; reset() will size the block to fit.
  auto spill = make_block(size);
  ++system_allocations_;
  if (!spill) return nullptr;
  std::byte* p = spill.get();
  spill_.emplace_back(std::move(spill), size);
  return p;
}

// Bump allocation frees nothing before reset(); only the tracked bytes change,
// so peak() still measures what the pass held at once.
void arena_allocator::deallocate(void*, std::size_t bytes) {
  track(-std::ptrdiff_t(round_up(std::max<std::size_t>(bytes, 1))));
}

void arena_allocator::reset() {
  if (!spill_.empty() || high_water_ > size_) {
    spill_.clear();
    size_ = round_up(high_water_ + high_water_ / 4);
    block_ = make_block(size_);
    ++system_allocations_;
  }
  used_ = 0;
}

}  // namespace spindle::nn
