#include "nn/tensor.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace spindle::nn {

void allocator::track(std::ptrdiff_t delta) {
  current_ = std::size_t(std::ptrdiff_t(current_) + delta);
  peak_ = std::max(peak_, current_);
}

void* heap_allocator::allocate(std::size_t bytes) {
  void* p = std::aligned_alloc(kAllocAlign, round_up(std::max<std::size_t>(bytes, 1)));
  if (p) track(std::ptrdiff_t(round_up(bytes)));
  return p;
}

void heap_allocator::deallocate(void* p, std::size_t bytes) {
  std::free(p);
  track(-std::ptrdiff_t(round_up(bytes)));
}

buffer_allocator::buffer_allocator(std::span<std::byte> buffer) : buffer_(buffer) {
  // Keep offsets 512-byte aligned relative to the buffer's (aligned) start.
  if (!buffer.empty()) free_.push_back({0, buffer.size() / kAllocAlign * kAllocAlign});
}

void* buffer_allocator::allocate(std::size_t bytes) {
  const std::size_t size = round_up(std::max<std::size_t>(bytes, 1));
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->size < size) continue;
    std::size_t offset = it->offset;
    it->offset += size;
    it->size -= size;
    if (it->size == 0) free_.erase(it);
    track(std::ptrdiff_t(size));
    return buffer_.data() + offset;
  }
  return nullptr;
}

void buffer_allocator::deallocate(void* p, std::size_t bytes) {
  const std::size_t size = round_up(std::max<std::size_t>(bytes, 1));
  const std::size_t offset = std::size_t(static_cast<std::byte*>(p) - buffer_.data());
  auto it = std::lower_bound(free_.begin(), free_.end(), offset,
                             [](const block& b, std::size_t o) { return b.offset < o; });
  it = free_.insert(it, {offset, size});
  if (auto next = it + 1; next != free_.end() && it->offset + it->size == next->offset) {
    it->size += next->size;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = it - 1;
    if (prev->offset + prev->size == it->offset) {
      prev->size += it->size;
      free_.erase(it);
    }
  }
  track(-std::ptrdiff_t(size));
}

void tensor::set_shape(std::vector<std::int64_t> shape) {
  shape_ = std::move(shape);
  numel_ = 1;
  for (auto d : shape_) numel_ *= d;
  cols_ = 1;
  for (std::size_t i = 1; i < shape_.size(); ++i) cols_ *= shape_[i];
  if (shape_.empty()) cols_ = numel_;
}

expected<tensor> tensor::empty(allocator& alloc, std::vector<std::int64_t> shape) {
  tensor t;
  t.set_shape(std::move(shape));
  t.bytes_ = std::size_t(t.numel()) * sizeof(float);
  t.data_ = static_cast<float*>(alloc.allocate(t.bytes_));
  if (!t.data_)
    return make_error(errc::resource_exhausted, "tensor of {} bytes does not fit the task buffer",
                      t.bytes_);
  t.alloc_ = &alloc;
  return t;
}

expected<tensor> tensor::zeros(allocator& alloc, std::vector<std::int64_t> shape) {
  SPINDLE_ASSIGN_OR_RETURN(auto t, empty(alloc, std::move(shape)));
  std::memset(t.data_, 0, t.bytes_);
  return t;
}

tensor tensor::borrow(float* data, std::vector<std::int64_t> shape, device_tag device) {
  tensor t;
  t.data_ = data;
  t.set_shape(std::move(shape));
  t.device_ = device;
  return t;
}

tensor::tensor(tensor&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      shape_(std::move(o.shape_)),
      numel_(std::exchange(o.numel_, 1)),
      cols_(std::exchange(o.cols_, 1)),
      alloc_(std::exchange(o.alloc_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      device_(o.device_) {}

tensor& tensor::operator=(tensor&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    shape_ = std::move(o.shape_);
    o.shape_.clear();
    numel_ = std::exchange(o.numel_, 1);
    cols_ = std::exchange(o.cols_, 1);
    alloc_ = std::exchange(o.alloc_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
  }
  return *this;
}

tensor::~tensor() { release(); }

void tensor::release() {
  if (alloc_ && data_) alloc_->deallocate(data_, bytes_);
  alloc_ = nullptr;
  data_ = nullptr;
}

tensor tensor::head(std::int64_t n) const {
  std::vector<std::int64_t> s = shape_;
  s[0] = n;
  return borrow(const_cast<float*>(data_), std::move(s), device_);
}

}  // namespace spindle::nn
