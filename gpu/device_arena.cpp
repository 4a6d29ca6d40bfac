#include "gpu/device_arena.hpp"

#include "gpu/gnn_kernels.hpp"

namespace spindle::gpu {

expected<std::unique_ptr<device_arena>> device_arena::create(std::size_t bytes) {
  std::unique_ptr<device_arena> a(new device_arena);
  SPINDLE_ASSIGN_OR_RETURN(a->base_, device_alloc(bytes));
  SPINDLE_ASSIGN_OR_RETURN(a->stream_, stream_create());
  a->size_ = bytes;
  return a;
}

device_arena::~device_arena() {
  stream_destroy(stream_);
  device_free(base_);
}

expected<void*> device_arena::take(std::size_t bytes) {
  const std::size_t at = (used_ + 255) & ~std::size_t{255};
  if (at > size_ || bytes > size_ - at)
    return make_error(errc::resource_exhausted, "device arena: {} bytes asked, {} of {} in use",
                      bytes, used_, size_);
  used_ = at + bytes;
  return static_cast<void*>(static_cast<std::byte*>(base_) + at);
}

}  // namespace spindle::gpu
