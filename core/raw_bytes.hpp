// A vector of plain values as the bytes that carry it on a wire (a KServe raw
// tensor, a Redis Stream field): one copy, host byte order (little-endian on
// every machine Spindle builds for).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

namespace spindle {

template <class T>
std::string raw_bytes_of(const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace spindle
