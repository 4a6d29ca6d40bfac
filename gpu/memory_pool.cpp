#include "gpu/memory_pool.hpp"

#include <cstdlib>
#include <cstring>

#include "gpu/device_arena.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::gpu {

void detail::pool_deleter::operator()(std::byte* p) const {
  if (where == device_kind::cuda)
    device_free(p);
  else
    std::free(p);
}

void detail::stream_deleter::operator()(void* s) const { stream_destroy(s); }

expected<memory_pool> memory_pool::create(std::size_t bytes, device_kind where) {
  const std::size_t size = (bytes + 4095) / 4096 * 4096;
  memory_pool pool;
  pool.where_ = where;
  if (where == device_kind::cuda) {  // GPU 0's: GNNSched serves one GPU
    SPINDLE_TRY(set_device(0));
    SPINDLE_ASSIGN_OR_RETURN(void* p, device_alloc(size ? size : 4096));
    pool.base_ =
        std::unique_ptr<std::byte, detail::pool_deleter>(static_cast<std::byte*>(p), {where});
  } else {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, size ? size : 4096));
    if (!p)
      return make_error(errc::resource_exhausted, "memory pool: cannot reserve {} bytes", bytes);
    std::memset(p, 0, size);  // touch now, not while a group runs
    pool.base_ = std::unique_ptr<std::byte, detail::pool_deleter>(p, {where});
  }
  pool.size_ = size;
  return pool;
}

expected<std::span<std::byte>> memory_pool::insert(std::size_t bytes) {
  const std::size_t size = (bytes + 511) / 512 * 512;
  if (size > size_ - used_)
    return make_error(errc::resource_exhausted,
                      "memory pool: buffer of {} bytes does not fit ({} of {} used)", size, used_,
                      size_);
  std::span<std::byte> out(base_.get() + used_, size);
  used_ += size;
  return out;
}

expected<void*> memory_pool::lane_stream(std::size_t i) {
  if (where_ != device_kind::cuda) return static_cast<void*>(nullptr);
  while (lanes_.size() <= i) {
    SPINDLE_ASSIGN_OR_RETURN(void* s, stream_create());
    lanes_.emplace_back(s);
  }
  return lanes_[i].get();
}

}  // namespace spindle::gpu
