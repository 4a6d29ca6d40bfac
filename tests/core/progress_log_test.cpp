// core/progress_log: a line every step_pct percent or every period, whichever
// comes first, none for the last rows (finish says them), with the count and time.
#include "core/progress_log.hpp"

#include <gtest/gtest.h>

namespace spindle {
namespace {

using std::chrono::seconds;

TEST(progress_log_test, a_line_every_step_of_the_total) {
  const auto t0 = progress_log::clock::time_point{};
  progress_log p("load t", 1000, "rows", seconds(10), 25, t0);
  EXPECT_FALSE(p.advance(100, t0 + seconds(1)));
  auto line = p.advance(200, t0 + seconds(2));  // 30%: past the first step
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "load t: 30% (300 of 1000 rows) in 2.0 s");
  EXPECT_FALSE(p.advance(100, t0 + seconds(3)));  // 40%: the next step is 50%
  line = p.advance(100, t0 + seconds(4));
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "load t: 50% (500 of 1000 rows) in 4.0 s");
  EXPECT_FALSE(p.advance(500, t0 + seconds(5)));  // the last rows: finish says them
  EXPECT_EQ(p.finish(t0 + seconds(6)), "load t: 1000 rows in 6.0 s");
}

TEST(progress_log_test, a_line_every_period_when_the_rows_come_slowly) {
  const auto t0 = progress_log::clock::time_point{};
  progress_log p("load t", 1000, "rows", seconds(10), 10, t0);
  EXPECT_FALSE(p.advance(1, t0 + seconds(9)));
  auto line = p.advance(1, t0 + seconds(10));
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "load t: 0% (2 of 1000 rows) in 10.0 s");
  EXPECT_FALSE(p.advance(1, t0 + seconds(19)));  // ten seconds from the last line
  EXPECT_TRUE(p.advance(1, t0 + seconds(20)));
}

}  // namespace
}  // namespace spindle
