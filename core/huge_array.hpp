// A fixed-size, zero-initialised array of trivially copyable T backed by an
// anonymous mapping advised for transparent huge pages, for the |V|-sized
// vectors that random-access sweeps hammer (2 MiB pages cut TLB misses).
// Released mappings are kept in a small process-wide cache and reused: first
// touch of fresh memory costs ~2.5 ns/byte on the VMs measured here, more than
// a whole sweep. One owner per array; the cache is thread-safe.
#pragma once

#include <cstddef>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace spindle {
namespace detail {
/// A zero-filled, huge-page-advised mapping of `bytes` (reused when cached).
void* acquire_zeroed_mapping(std::size_t bytes);
/// Returns a mapping to the cache (or unmaps it when the cache is full).
void release_mapping(void* p, std::size_t bytes);
}  // namespace detail

template <class T>
class huge_array {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  huge_array() = default;
  /// n zero-valued elements; throws std::bad_alloc when the mapping fails.
  explicit huge_array(std::size_t n) : size_(n) {
    if (n == 0) return;
    bytes_ = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    data_ = static_cast<T*>(detail::acquire_zeroed_mapping(bytes_));
  }
  huge_array(huge_array&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
  huge_array& operator=(huge_array&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~huge_array() {
    if (data_) detail::release_mapping(data_, bytes_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  operator std::span<T>() { return {data_, size_}; }
  operator std::span<const T>() const { return {data_, size_}; }

 private:
  static constexpr std::size_t kHuge = std::size_t{2} << 20;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace spindle
