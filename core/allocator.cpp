#include "core/allocator.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>

#include <cstddef>
#include <string_view>

namespace spindle {
namespace {

// jemalloc's control entry point, mallctl(name, oldp, oldlenp, newp, newlen).
using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

enum class kind { glibc, jemalloc, other };

struct resolved {
  kind k = kind::other;
  std::string library;           // the file `malloc` resolves into
  mallctl_fn mallctl = nullptr;  // jemalloc's, when it serves malloc
};

// The object `symbol` resolves into for this process, "" if none.
std::string object_of(void* symbol) {
  Dl_info info{};
  if (symbol == nullptr || ::dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

// Looked up, not linked: a process without jemalloc still loads, and a library
// that merely exports mallctl is not taken for the malloc in use.
resolved resolve() {
  resolved r;
  void* malloc_sym = ::dlsym(RTLD_DEFAULT, "malloc");
  void* mallctl_sym = ::dlsym(RTLD_DEFAULT, "mallctl");
  r.library = object_of(malloc_sym);
  const auto base = std::string_view(r.library).substr(r.library.rfind('/') + 1);
  if (mallctl_sym != nullptr && !r.library.empty() && object_of(mallctl_sym) == r.library) {
    r.k = kind::jemalloc;
    r.mallctl = reinterpret_cast<mallctl_fn>(mallctl_sym);
  } else if (base.starts_with("libc.so") || base.starts_with("libc-")) {
    r.k = kind::glibc;
  }
  return r;
}

const resolved& in_use() {
  static const resolved r = resolve();
  return r;
}

}  // namespace

std::string allocator_in_use() {
  const auto& r = in_use();
  switch (r.k) {
    case kind::jemalloc: {
      const char* version = nullptr;
      std::size_t len = sizeof(version);
      if (r.mallctl("version", &version, &len, nullptr, 0) == 0 && version != nullptr)
        return std::string("jemalloc ") + version;
      return "jemalloc (version unknown)";
    }
    case kind::glibc:
      return std::string("glibc ") + ::gnu_get_libc_version();
    case kind::other:
      break;
  }
  const auto slash = r.library.rfind('/');
  return r.library.empty() ? "unknown" : r.library.substr(slash + 1);
}

bool return_free_heap_memory() {
  const auto& r = in_use();
  if (r.k == kind::jemalloc)  // 4096 is MALLCTL_ARENAS_ALL: every arena at once
    return r.mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0) == 0;
  if (r.k == kind::glibc) {
    ::malloc_trim(0);
    return true;
  }
  return false;
}

}  // namespace spindle
