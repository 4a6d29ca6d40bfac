#include "gpu/device_arena.hpp"

#include <utility>

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

device_buffer::~device_buffer() {
  if (!p_) return;
  (void)set_device(gpu_);
  device_free(p_);
}

device_buffer::device_buffer(device_buffer&& o) noexcept
    : gpu_(o.gpu_), p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)) {}

device_buffer& device_buffer::operator=(device_buffer&& o) noexcept {
  std::swap(gpu_, o.gpu_);
  std::swap(p_, o.p_);
  std::swap(size_, o.size_);
  return *this;
}

expected<void*> device_buffer::reserve(std::size_t bytes) {
  SPINDLE_TRY(set_device(gpu_));
  if (bytes <= size_ && p_) return p_;
  device_free(p_);
  p_ = nullptr, size_ = 0;
  SPINDLE_ASSIGN_OR_RETURN(p_, device_alloc(2 * bytes));
  size_ = 2 * bytes;
  return p_;
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
