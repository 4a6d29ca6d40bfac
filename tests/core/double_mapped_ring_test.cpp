// The double-mapped ring: both views alias the same bytes, so a span that
// crosses the end is contiguous and reads back what was written.
#include "core/double_mapped_ring.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace spindle {
namespace {

TEST(double_mapped_ring_test, a_span_across_the_end_is_contiguous) {
  auto r = double_mapped_ring::create(5000);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  const std::size_t cap = r->capacity();
  EXPECT_EQ(cap % 4096, 0u);
  EXPECT_GE(cap, 5000u);
  std::vector<std::byte> msg(1000);
  for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = std::byte(i * 7);
  const std::uint64_t offset = cap - 300;  // wraps after 300 bytes
  std::memcpy(r->at(offset), msg.data(), msg.size());
  EXPECT_EQ(std::memcmp(r->at(0), msg.data() + 300, 700), 0);  // seen from the first mapping
  EXPECT_EQ(std::memcmp(r->at(offset + cap), msg.data(), msg.size()), 0);  // offsets wrap
  auto moved = std::move(*r);
  EXPECT_EQ(std::memcmp(moved.at(offset), msg.data(), msg.size()), 0);
}

}  // namespace
}  // namespace spindle
