#include "core/huge_array.hpp"

#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace spindle::detail {
namespace {

constexpr std::size_t kCacheLimit = std::size_t{1} << 30;  // bytes kept for reuse

struct mapping_cache {
  std::mutex mu;
  std::vector<std::pair<void*, std::size_t>> free;  // guarded by mu
  std::size_t cached_bytes = 0;                     // guarded by mu
};

mapping_cache& cache() {
  static mapping_cache* c = new mapping_cache();  // never destroyed: arrays may outlive statics
  return *c;
}

}  // namespace

void* acquire_zeroed_mapping(std::size_t bytes) {
  {
    auto& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto it = c.free.begin(); it != c.free.end(); ++it) {
      if (it->second != bytes) continue;
      void* p = it->first;
      c.free.erase(it);
      c.cached_bytes -= bytes;
      std::memset(p, 0, bytes);
      return p;
    }
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // advisory: ignored where THP is off
  return p;
}

void release_mapping(void* p, std::size_t bytes) {
  auto& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cached_bytes + bytes <= kCacheLimit) {
      c.free.emplace_back(p, bytes);
      c.cached_bytes += bytes;
      return;
    }
  }
  munmap(p, bytes);
}

}  // namespace spindle::detail
