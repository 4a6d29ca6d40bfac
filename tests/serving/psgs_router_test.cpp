#include "serving/psgs_router.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace spindle::serving {
namespace {

// Small executor: 1 + 0.01 p (mean), max twice the mean; large: 5 + 0.002 p, max +2.
psgs_calibration synthetic() {
  std::vector<std::pair<double, double>> small, large;
  for (double p = 10; p < 100000; p *= 1.05) {
    small.push_back({p, 1 + 0.01 * p});
    small.push_back({p, 2 * (1 + 0.01 * p)});  // the max sample
    large.push_back({p, 5 + 0.002 * p});
    large.push_back({p, 7 + 0.002 * p});
  }
  psgs_calibration c;
  // Buckets narrower than the sample spacing: one PSGS value per bucket.
  c.small = build_curve("inline", small, 400);
  c.large = build_curve("pooled", large, 400);
  compute_crossovers(c);
  return c;
}

TEST(psgs_router_test, crossovers_follow_quiver_4_2_1) {
  auto c = synthetic();
  // Bucket means and maxima of the samples above: small mean 1.5(1+0.01p), max 2(1+0.01p);
  // large mean 6+0.002p, max 7+0.002p. Intersections solve a1 + b1 p = a2 + b2 p.
  auto near = [](double got, double want) { EXPECT_NEAR(got, want, want * 0.05); };
  ASSERT_TRUE(c.throughput_preferred.exists);
  near(c.throughput_preferred.psgs, (6 - 1.5) / (0.015 - 0.002));
  near(c.latency_preferred.psgs, (7 - 2.0) / (0.02 - 0.002));
  near(c.cpu_preferred.psgs, (6 - 2.0) / (0.02 - 0.002));
  near(c.gpu_preferred.psgs, (7 - 1.5) / (0.015 - 0.002));
  EXPECT_LT(c.cpu_preferred.psgs, c.latency_preferred.psgs);
}

TEST(psgs_router_test, routes_by_summed_psgs_and_changes_policy_live) {
  psgs_router r(synthetic(), routing_policy::strict);
  const double strict = r.threshold();
  EXPECT_EQ(r.route(strict * 0.5), psgs_router::choice::small);
  EXPECT_EQ(r.route(strict * 2), psgs_router::choice::large);
  r.set_policy(routing_policy::loose);
  EXPECT_NE(r.threshold(), strict);
  r.set_policy(routing_policy::fixed);
  r.set_fixed(psgs_router::choice::large);
  EXPECT_EQ(r.route(1.0), psgs_router::choice::large);
  EXPECT_EQ(*parse_routing_policy("loose"), routing_policy::loose);
  EXPECT_FALSE(parse_routing_policy("greedy").has_value());
}

TEST(psgs_router_test, an_operator_threshold_overrides_the_calibrated_point_until_cleared) {
  psgs_router r(synthetic(), routing_policy::strict);
  const double strict = r.threshold();
  EXPECT_TRUE(std::isnan(r.threshold_override()));
  r.set_threshold_override(10);
  EXPECT_EQ(r.threshold(), 10);
  EXPECT_EQ(r.route(20), psgs_router::choice::large);
  r.set_policy(routing_policy::loose);
  EXPECT_EQ(r.threshold(), 10);  // the override holds for both latency policies
  r.set_policy(routing_policy::fixed);
  EXPECT_EQ(r.route(1e9), psgs_router::choice::small);  // fixed ignores it
  r.set_policy(routing_policy::strict);
  r.set_threshold_override(-1);
  EXPECT_EQ(r.threshold(), strict);
}

TEST(psgs_router_test, calibration_round_trips_through_json_and_rejects_other_files) {
  auto c = synthetic();
  auto back = psgs_calibration::from_json(c.to_json(), "cal.json");
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_DOUBLE_EQ(back->latency_preferred.psgs, c.latency_preferred.psgs);
  EXPECT_EQ(back->small.buckets.size(), c.small.buckets.size());
  auto bad = psgs_calibration::from_json("{\"format\": \"other\"}", "cal.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("cal.json"), std::string::npos);
  EXPECT_FALSE(psgs_calibration::from_json("not json", "cal.json").has_value());
}

TEST(psgs_router_test, curves_that_never_cross_say_which_side_wins) {
  psgs_calibration c;
  c.small = build_curve("inline", {{10, 1}, {1000, 2}, {100000, 3}}, 3);
  c.large = build_curve("pooled", {{10, 5}, {1000, 6}, {100000, 7}}, 3);
  compute_crossovers(c);
  EXPECT_FALSE(c.throughput_preferred.exists);
  EXPECT_TRUE(std::isinf(c.throughput_preferred.psgs));  // small always faster
  psgs_router r(c, routing_policy::loose);
  EXPECT_EQ(r.route(1e9), psgs_router::choice::small);
}

// Where the large executor is the host pool, a batch runs inline once the
// batches running, itself included, are at least the pool's slots.
TEST(psgs_router_test, a_host_batch_runs_inline_once_every_slot_has_a_batch) {
  using c = psgs_router::choice;
  EXPECT_EQ(host_executor_while_busy(c::large, 1, 2), c::large);  // alone: the pool's cores are free
  EXPECT_EQ(host_executor_while_busy(c::large, 2, 2), c::small);
  EXPECT_EQ(host_executor_while_busy(c::large, 3, 2), c::small);
  EXPECT_EQ(host_executor_while_busy(c::large, 2, 16), c::large);  // 14 cores still free
  EXPECT_EQ(host_executor_while_busy(c::small, 1, 2), c::small);   // never promoted
}

}  // namespace
}  // namespace spindle::serving
