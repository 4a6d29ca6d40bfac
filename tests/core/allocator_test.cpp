// The malloc a process runs on, asked of the process: test binaries keep the C
// library's (only programs link jemalloc), and the answer names its version.
#include "core/allocator.hpp"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>

namespace spindle {
namespace {

TEST(allocator, a_test_binary_runs_on_the_c_library_malloc) {
  EXPECT_EQ(allocator_in_use(), std::string("glibc ") + ::gnu_get_libc_version());
  EXPECT_TRUE(return_free_heap_memory());  // malloc_trim
}

}  // namespace
}  // namespace spindle
