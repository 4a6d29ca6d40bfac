// The load generator's calls and report: GNN seeds drawn uniformly or from a
// trace (errors name --seeds), one call per seed, Poisson send times, and the
// report's count of calls the client never sent apart from refusals.
#include <gtest/gtest.h>

#include <fstream>

#include "client/gnn_load.hpp"
#include "client/load_report.hpp"
#include "tests/support/temp_path.hpp"

namespace spindle::client {
namespace {

namespace rpc = transport::rpc;

TEST(gnn_load_test, uniform_seeds_stay_in_range_and_repeat_with_the_seed) {
  auto a = draw_seeds("uniform:10", 200, 7);
  ASSERT_TRUE(a.has_value()) << a.error().to_string();
  ASSERT_EQ(a->size(), 200u);
  for (auto v : *a) EXPECT_TRUE(v >= 0 && v < 10) << v;
  EXPECT_EQ(*a, *draw_seeds("uniform:10", 200, 7));
  auto zero = draw_seeds("uniform:0", 5, 1);
  ASSERT_FALSE(zero.has_value());
  EXPECT_NE(zero.error().message().find("--seeds uniform:0"), std::string::npos);
}

TEST(gnn_load_test, a_trace_is_taken_in_turn_and_a_missing_one_is_named) {
  const auto path = testing::temp_path("client", "trace.txt");
  std::ofstream(path) << "3\n5\n8\n";
  auto s = draw_seeds(path, 5, 1);
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_EQ(*s, (std::vector<std::int64_t>{3, 5, 8, 3, 5}));
  auto missing = draw_seeds(path + ".absent", 5, 1);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("expected uniform:N, degree:DIR or a trace file"),
            std::string::npos);
}

TEST(gnn_load_test, reproducible_calls_carry_sampler_seeds) {
  const auto calls = gnn_load_calls("sage", {4, 9}, true, 500);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].model, "sage");
  EXPECT_EQ(calls[1].seeds, std::vector<std::int64_t>{9});
  EXPECT_EQ(calls[1].sampler_seed, 2u);
  EXPECT_EQ(calls[1].deadline_us, 500u);
  EXPECT_EQ(gnn_load_calls("sage", {4}, false, 0)[0].sampler_seed, 0u);
}

TEST(load_report_test, calls_never_sent_are_counted_apart_from_refusals) {
  load_report r(3);
  r.record(0, rpc::gnn_answer{}, 0.002);
  rpc::gnn_answer dropped;
  dropped.status = rpc::rpc_status::overloaded;
  dropped.message = std::string(rpc::kNotSent) + " over the rate";
  r.record(1, dropped, 0.001);
  rpc::gnn_answer refused;
  refused.status = rpc::rpc_status::overloaded;
  r.record(2, refused, 0.001);
  EXPECT_EQ(r.lat_ms, std::vector<double>{2.0});
  EXPECT_EQ(r.by_status.at("not sent (client limit)"), 1u);
  EXPECT_EQ(r.by_status.at(std::string(rpc::to_string(rpc::rpc_status::overloaded))), 1u);
  EXPECT_EQ(r.first_error.rfind("not sent (client limit): ", 0), 0u) << r.first_error;
}

TEST(load_report_test, poisson_send_times_rise_and_closed_loop_has_none) {
  const auto at = poisson_schedule(100, 1000, 1);
  ASSERT_EQ(at.size(), 100u);
  for (std::size_t i = 1; i < at.size(); ++i) EXPECT_GT(at[i], at[i - 1]);
  EXPECT_TRUE(poisson_schedule(100, 0, 1).empty());
}

}  // namespace
}  // namespace spindle::client
