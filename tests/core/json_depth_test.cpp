// json_depth: one linear scan, strings and escapes honoured, stops early.
#include "core/json_depth.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spindle {
namespace {

TEST(json_depth_test, counts_nesting_outside_strings) {
  EXPECT_EQ(json_depth("1"), 0u);
  EXPECT_EQ(json_depth(R"({"a": [1, [2, {"b": 3}]]})"), 4u);
  EXPECT_EQ(json_depth(R"({"a": "[[[[\"[[["})"), 1u);  // brackets inside a string
  EXPECT_EQ(json_depth(R"(["\\", [[]]])"), 3u);      // an escaped backslash ends no string
  EXPECT_EQ(json_depth("]]]][[]"), 2u);              // stray closers never go below 0
}

TEST(json_depth_test, a_hostile_depth_is_found_without_recursion) {
  const std::string deep = std::string(2'000'000, '[') + std::string(2'000'000, ']');
  EXPECT_EQ(json_depth(deep, 3'000'000), 2'000'000u);
  EXPECT_EQ(json_depth(deep, kMaxJsonDepth), kMaxJsonDepth + 1);  // stops counting early
}

}  // namespace
}  // namespace spindle
