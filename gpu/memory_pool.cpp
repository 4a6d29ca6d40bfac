#include "gpu/memory_pool.hpp"

#include <cstdlib>
#include <cstring>

namespace spindle::gpu {

void memory_pool::deleter::operator()(std::byte* p) const { std::free(p); }

expected<memory_pool> memory_pool::create(std::size_t bytes) {
  const std::size_t size = (bytes + 4095) / 4096 * 4096;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, size ? size : 4096));
  if (!p)
    return make_error(errc::resource_exhausted, "memory pool: cannot reserve {} bytes", bytes);
  std::memset(p, 0, size);  // touch now, not while a group runs
  memory_pool pool;
  pool.base_.reset(p);
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

}  // namespace spindle::gpu
