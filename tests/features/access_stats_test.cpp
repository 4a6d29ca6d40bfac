// Observed access counts and their drift from the planned FAP.
#include "features/access_stats.hpp"

#include <gtest/gtest.h>

namespace spindle::features {
namespace {

TEST(access_stats_test, counts_ids_and_ignores_out_of_range) {
  access_counter c(4);
  const std::vector<std::int64_t> ids = {0, 2, 2, 3, -1, 4, 99};
  c.add(ids);
  EXPECT_EQ(c.snapshot(), (std::vector<std::uint32_t>{1, 0, 2, 1}));
  EXPECT_EQ(c.total(), 4u);
}

TEST(access_stats_test, drift_is_the_total_variation_distance) {
  const std::vector<double> planned = {0.5, 0.5, 0, 0};  // not normalized on purpose below
  EXPECT_DOUBLE_EQ(fap_drift(planned, std::vector<std::uint32_t>{10, 10, 0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(fap_drift(planned, std::vector<std::uint32_t>{0, 0, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(fap_drift(planned, std::vector<std::uint32_t>{1, 0, 1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(
      fap_drift(std::vector<double>{2, 2, 0, 0}, std::vector<std::uint32_t>{3, 1, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(fap_drift(planned, std::vector<std::uint32_t>{0, 0, 0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(fap_drift({}, std::vector<std::uint32_t>{1}), 0.0);
}

TEST(access_stats_test, observed_fap_is_accesses_per_request) {
  EXPECT_EQ(observed_fap(std::vector<std::uint32_t>{4, 0, 2}, 4), (std::vector<double>{1, 0, 0.5}));
  EXPECT_EQ(observed_fap(std::vector<std::uint32_t>{4}, 0), (std::vector<double>{0}));
}

TEST(access_stats_test, drift_monitor_waits_for_enough_requests_and_the_threshold) {
  drift_monitor m({1, 1, 0, 0}, 0.4, 10);
  const std::vector<std::uint32_t> moved = {0, 0, 5, 5};
  EXPECT_FALSE(m.observe(moved, 9).replan);  // drift 1.0, but only 9 requests
  auto r = m.observe(moved, 10);
  EXPECT_DOUBLE_EQ(r.drift, 1.0);
  EXPECT_TRUE(r.replan);
  m.set_threshold(0);  // off: only explicit re-plans
  EXPECT_FALSE(m.observe(moved, 100).replan);
}

TEST(access_stats_test, drift_monitor_measures_only_the_window_since_the_last_plan) {
  drift_monitor m({1, 1, 0, 0}, 0.4, 1);
  const std::vector<std::uint32_t> first = {0, 0, 8, 8};
  // The current plan's FAP is a prior worth min_requests (1) requests.
  EXPECT_EQ(m.replan_fap(first, 8), (std::vector<double>{1.0 / 9, 1.0 / 9, 8.0 / 9, 8.0 / 9}));
  m.rebase({0, 0, 1, 1}, first, 8);
  EXPECT_DOUBLE_EQ(m.observe(first, 8).drift, 0.0);
  EXPECT_EQ(m.observe(first, 8).window_requests, 0u);
  // The workload returns to the first rows: the window sees only that.
  const std::vector<std::uint32_t> later = {4, 4, 8, 8};
  const auto r = m.observe(later, 12);
  EXPECT_DOUBLE_EQ(r.drift, 1.0);
  EXPECT_EQ(r.window_requests, 4u);
  EXPECT_TRUE(r.replan);
  EXPECT_EQ(m.replan_fap(later, 12), (std::vector<double>{0.8, 0.8, 0.2, 0.2}));
}

TEST(access_stats_test, a_replan_after_few_requests_stays_near_the_current_plan) {
  drift_monitor m({0.5, 0.5, 0, 0}, 0, 1000);
  const auto fap = m.replan_fap(std::vector<std::uint32_t>{0, 0, 10, 0}, 10);
  EXPECT_NEAR(fap[0], 500.0 / 1010, 1e-12);
  EXPECT_NEAR(fap[2], 10.0 / 1010, 1e-12);
  EXPECT_GT(fap[0], fap[2]);
}

}  // namespace
}  // namespace spindle::features
