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

std::unique_ptr<device_arena> device_arena::over(void* base, std::size_t bytes, void* stream) {
  std::unique_ptr<device_arena> a(new device_arena);
  a->base_ = base;
  a->size_ = bytes;
  a->stream_ = stream;
  a->owned_ = false;
  return a;
}

device_arena::~device_arena() {
  if (!owned_) return;
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
