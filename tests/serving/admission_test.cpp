// Admission control sized from the SLO: the limit follows the measured
// capacity (Little's law), stays between its floor and max_queue, falls when a
// window at the limit completes less, and is max_queue with no SLO.
#include "serving/admission.hpp"

#include <gtest/gtest.h>

namespace spindle::serving {
namespace {

using std::chrono::milliseconds;
using clock_type = admission_control::clock;

// `n` calls one after another (each admitted, then answered), spread over `span`.
void run_window(admission_control& a, clock_type::time_point& t, std::size_t n, milliseconds span) {
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(a.try_admit()) << i;
    a.complete(t + span * (i + 1) / n);
  }
  t += span;
}

TEST(admission_test, the_limit_is_capacity_times_the_slo_share_within_floor_and_max_queue) {
  admission_options o;
  o.slo = milliseconds(30), o.queue_share = 0.5, o.max_queue = 1024, o.floor = 16;
  admission_control a(o);
  EXPECT_EQ(a.limit(), 16u);  // capacity unknown: the floor
  auto t = clock_type::now();
  run_window(a, t, 16, milliseconds(100));  // 160 calls/s: limit 16 (the floor) ...
  EXPECT_EQ(a.limit(), 16u);
  run_window(a, t, 800, milliseconds(100));  // ... then 8,000 calls/s
  EXPECT_NEAR(a.capacity_rps(), 8000, 1);
  EXPECT_EQ(a.limit(), 120u);  // 8,000/s x 15 ms
  a.set_max_queue(100);
  EXPECT_EQ(a.limit(), 100u);
  a.set_slo(milliseconds(0));
  EXPECT_EQ(a.limit(), 100u);  // no SLO: only max_queue
}

// One warm-up call in an idle second is no measure of capacity (stats showed
// capacity_rps 0.57 before any load): windows of a few calls leave it unknown.
TEST(admission_test, a_window_of_a_few_calls_does_not_measure_capacity) {
  admission_options o;
  o.slo = milliseconds(30), o.floor = 16;
  admission_control a(o);
  auto t = clock_type::now();
  run_window(a, t, 1, milliseconds(1700));
  run_window(a, t, 3, milliseconds(100));
  EXPECT_EQ(a.capacity_rps(), 0);
  EXPECT_EQ(a.limit(), 16u);
  run_window(a, t, 100, milliseconds(100));
  EXPECT_NEAR(a.capacity_rps(), 1000, 1);
}

TEST(admission_test, calls_past_the_limit_are_refused_and_counted) {
  admission_options o;
  o.floor = 3, o.max_queue = 3;
  admission_control a(o);
  EXPECT_TRUE(a.try_admit());
  EXPECT_TRUE(a.try_admit());
  EXPECT_TRUE(a.try_admit());
  EXPECT_FALSE(a.try_admit());
  EXPECT_EQ(a.in_flight(), 3u);
  EXPECT_EQ(a.refused(), 1u);
  a.complete();
  EXPECT_TRUE(a.try_admit());
}

TEST(admission_test, capacity_falls_only_in_windows_that_refused_calls) {
  admission_options o;
  o.slo = milliseconds(100), o.queue_share = 0.5, o.floor = 1, o.max_queue = 100000;
  admission_control a(o);
  auto t = clock_type::now();
  run_window(a, t, 100, milliseconds(100));  // first window: 1,000/s (kept as is)
  run_window(a, t, 200, milliseconds(100));  // 2,000/s
  EXPECT_NEAR(a.capacity_rps(), 2000, 1);
  run_window(a, t, 50, milliseconds(100));  // light load refuses nothing: a lower bound only
  EXPECT_NEAR(a.capacity_rps(), 2000, 1);
  // A window at the limit (some refused) completing 1,000/s: capacity moves halfway.
  for (std::size_t i = 0; i < a.limit(); ++i) ASSERT_TRUE(a.try_admit());
  EXPECT_FALSE(a.try_admit());
  for (std::size_t i = 0; i < 100; ++i) a.complete(t + milliseconds(i + 1));
  t += milliseconds(100);
  EXPECT_NEAR(a.capacity_rps(), 1500, 1);
  EXPECT_EQ(a.limit(), 75u);  // 1,500/s x 50 ms
}

}  // namespace
}  // namespace spindle::serving
