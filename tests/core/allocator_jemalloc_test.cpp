// The malloc Spindle's programs link (SPINDLE_MALLOC=jemalloc), in a binary
// linked the same way: it is the one named, and handing memory back purges
// every arena's dirty pages (what the doors do after a connection flood).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/allocator.hpp"

namespace spindle {
namespace {

using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

// Bytes of dirty pages held by every arena, as of a fresh stats epoch.
std::size_t dirty_bytes(mallctl_fn mallctl) {
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  EXPECT_EQ(mallctl("epoch", &epoch, &len, &epoch, len), 0);
  std::size_t pages = 0, page = 0;
  len = sizeof(pages);
  EXPECT_EQ(mallctl("stats.arenas.4096.pdirty", &pages, &len, nullptr, 0), 0);
  len = sizeof(page);
  EXPECT_EQ(mallctl("arenas.page", &page, &len, nullptr, 0), 0);
  return pages * page;
}

TEST(allocator_jemalloc, a_program_runs_on_jemalloc_and_hands_memory_back) {
  ASSERT_EQ(allocator_in_use().rfind("jemalloc ", 0), 0u) << allocator_in_use();
  EXPECT_EQ(allocator_in_use().find("unknown"), std::string::npos) << allocator_in_use();
  auto* mallctl = reinterpret_cast<mallctl_fn>(::dlsym(RTLD_DEFAULT, "mallctl"));
  ASSERT_NE(mallctl, nullptr);
  {  // 64 MiB in 1 MiB blocks (past the thread cache), touched, then freed: dirty pages
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 64; ++i) {
      blocks.emplace_back(new char[1 << 20]);
      std::memset(blocks.back().get(), 1, 1 << 20);
    }
  }
  ASSERT_GE(dirty_bytes(mallctl), std::size_t(16) << 20) << "jemalloc kept no freed pages";
  EXPECT_TRUE(return_free_heap_memory());
  EXPECT_EQ(dirty_bytes(mallctl), 0u);
}

}  // namespace
}  // namespace spindle
