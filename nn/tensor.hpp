// The tensor type of nn/: float32, row-major, a shape, owning storage taken from
// an allocator (and returned on destruction) or borrowed, plus a device tag.
// Allocators track current and peak bytes so the GNNSched estimate can be
// checked against what a forward pass really used. Tensors are move-only and
// have one owner; allocators are not thread-safe (one per task).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.hpp"

namespace spindle::nn {

enum class device_tag { host, cuda };

/// GNNSched §3.5: allocations are padded to multiples of 512 bytes.
inline constexpr std::size_t kAllocAlign = 512;
inline std::size_t round_up(std::size_t bytes) {
  return (bytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
}

class allocator {
 public:
  virtual ~allocator() = default;
  /// 512-byte aligned memory of round_up(bytes), or nullptr when out of space.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) = 0;
  std::size_t current() const { return current_; }
  std::size_t peak() const { return peak_; }
  void reset_peak() { peak_ = current_; }

 protected:
  void track(std::ptrdiff_t delta);

 private:
  std::size_t current_ = 0, peak_ = 0;
};

/// The system heap, tracked.
class heap_allocator final : public allocator {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) override;
};

/// First-fit allocation inside one caller-owned buffer (a task's slice of the
/// memory pool): no system allocation while a task runs; freed blocks coalesce.
class buffer_allocator final : public allocator {
 public:
  explicit buffer_allocator(std::span<std::byte> buffer);
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) override;
  std::size_t capacity() const { return buffer_.size(); }

 private:
  struct block {
    std::size_t offset, size;
  };
  std::span<std::byte> buffer_;
  std::vector<block> free_;  // sorted by offset
};

class tensor {
 public:
  tensor() = default;
  /// Uninitialised storage from `alloc`; errc::resource_exhausted when it is full.
  static expected<tensor> empty(allocator& alloc, std::vector<std::int64_t> shape);
  /// Zero-filled storage.
  static expected<tensor> zeros(allocator& alloc, std::vector<std::int64_t> shape);
  /// A view of memory owned elsewhere.
  static tensor borrow(float* data, std::vector<std::int64_t> shape,
                       device_tag device = device_tag::host);
  tensor(tensor&& o) noexcept;
  tensor& operator=(tensor&& o) noexcept;
  tensor(const tensor&) = delete;
  tensor& operator=(const tensor&) = delete;
  ~tensor();

  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t dim(int i) const { return shape_[std::size_t(i)]; }
  /// The product of the dimensions (1 for no dimensions); kept beside the shape,
  /// as cols() is, because kernels call row() per row (a product of the shape
  /// per call was a tenth of a DLRM's forward in one bias loop).
  std::int64_t numel() const { return numel_; }
  std::int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  /// Columns: the product of the dimensions after the first (kept when there are
  /// no rows: a typed batch may hold no node of a type).
  std::int64_t cols() const { return cols_; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  float* row(std::int64_t r) { return data_ + r * cols(); }
  const float* row(std::int64_t r) const { return data_ + r * cols(); }
  device_tag device() const { return device_; }
  bool owning() const { return alloc_ != nullptr; }
  /// A borrowed view of rows [0, n).
  tensor head(std::int64_t n) const;

 private:
  void release();
  void set_shape(std::vector<std::int64_t> shape);
  float* data_ = nullptr;
  std::vector<std::int64_t> shape_;
  std::int64_t numel_ = 1, cols_ = 1;  // of shape_
  allocator* alloc_ = nullptr;
  std::size_t bytes_ = 0;
  device_tag device_ = device_tag::host;
};

}  // namespace spindle::nn
