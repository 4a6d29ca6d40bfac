#include "core/status.hpp"

#include <gtest/gtest.h>

#include "core/checksum.hpp"
#include "core/log.hpp"

#include <set>

namespace spindle {
namespace {

expected<int> parse_positive(int x) {
  if (x <= 0) return make_error(errc::invalid_argument, "x={} must be positive", x);
  return x;
}

status twice(int x, int& out) {
  SPINDLE_ASSIGN_OR_RETURN(int v, parse_positive(x));
  out = 2 * v;
  return status::ok();
}

TEST(status_test, assign_or_return_propagates_errors_and_values) {
  int out = 0;
  EXPECT_TRUE(twice(4, out).is_ok());
  EXPECT_EQ(out, 8);
  status s = twice(-1, out);
  EXPECT_EQ(s.code(), errc::invalid_argument);
  EXPECT_EQ(s.message(), "x=-1 must be positive");
  EXPECT_EQ(s.to_string(), "invalid_argument: x=-1 must be positive");
}

TEST(status_test, with_context_prefixes_the_message) {
  status s = make_error(errc::not_found, "gone");
  s = std::move(s).with_context("dir/: ");
  EXPECT_EQ(s.message(), "dir/: gone");
}

TEST(status_test, every_code_has_a_distinct_name) {
  std::set<std::string_view> names;
  for (errc c : {errc::ok, errc::invalid_argument, errc::not_found, errc::io_error, errc::corrupt_data,
                 errc::unsupported, errc::internal})
    names.insert(to_string(c));
  EXPECT_EQ(names.size(), 7u);
}

TEST(log_test, levels_round_trip_through_their_names) {
  for (auto l : {log::level::debug, log::level::info, log::level::warn, log::level::error, log::level::off}) {
    log::level parsed;
    ASSERT_TRUE(log::parse_level(log::to_string(l), parsed));
    EXPECT_EQ(parsed, l);
  }
  log::level unused;
  EXPECT_FALSE(log::parse_level("loud", unused));
}

TEST(checksum_test, streaming_equals_one_shot) {
  std::string data(100000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  checksum_stream s;
  s.update(data.data(), 777);
  s.update(data.data() + 777, data.size() - 777);
  EXPECT_EQ(s.digest(), checksum(data.data(), data.size()));
  EXPECT_EQ(checksum_hex(0xabc).size(), 16u);
}

}  // namespace
}  // namespace spindle
