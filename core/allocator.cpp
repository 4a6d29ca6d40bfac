#include "core/allocator.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>

#include <cstddef>

namespace spindle {
namespace {

// jemalloc's control entry point, mallctl(name, oldp, oldlenp, newp, newlen);
// glibc has none. Looked up, not linked, so a process without jemalloc loads.
using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

mallctl_fn jemalloc_ctl() {
  static const auto fn = reinterpret_cast<mallctl_fn>(::dlsym(RTLD_DEFAULT, "mallctl"));
  return fn;
}

}  // namespace

std::string allocator_in_use() {
  if (auto* mallctl = jemalloc_ctl()) {
    const char* version = nullptr;
    std::size_t len = sizeof(version);
    if (mallctl("version", &version, &len, nullptr, 0) == 0 && version != nullptr)
      return std::string("jemalloc ") + version;
    return "jemalloc (version unknown)";
  }
  return std::string("glibc ") + ::gnu_get_libc_version();
}

void return_free_heap_memory() {
  if (auto* mallctl = jemalloc_ctl()) {
    // 4096 is MALLCTL_ARENAS_ALL: every arena's dirty and muzzy pages, at once.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  ::malloc_trim(0);
}

}  // namespace spindle
