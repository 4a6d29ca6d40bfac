// Observed access counts and their drift from the planned FAP.
#include "sched/access_stats.hpp"

#include <gtest/gtest.h>

namespace spindle::sched {
namespace {

TEST(access_stats_test, counts_ids_and_ignores_out_of_range) {
  access_counter c(4);
  const std::vector<std::int64_t> ids = {0, 2, 2, 3, -1, 4, 99};
  c.add(ids);
  EXPECT_EQ(std::vector<std::uint32_t>(c.counts().begin(), c.counts().end()),
            (std::vector<std::uint32_t>{1, 0, 2, 1}));
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

}  // namespace
}  // namespace spindle::sched
