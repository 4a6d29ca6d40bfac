// The express lane (run to completion on the thread that read a call): it runs a
// batch only while the model is idle and within its limits, answers as a
// pipeline does (bit for bit, seeded calls), follows the fanouts tunable, keeps
// off batches its model's pipelines would run on a GPU, and runs nothing once closed.
#include "serving/express_lane.hpp"

#include <gtest/gtest.h>

#include "../actors/small_gnn.hpp"

namespace spindle::serving {
namespace {

struct express_fixture : actors::test_support::small_gnn {
  psgs_router router{psgs_calibration{}, routing_policy::fixed};
  express_fixture() : small_gnn("express_ds", 12, 16, 32, 5) {}
  express_lane lane(std::size_t max_requests = 1, bool device_routed = false) {
    express_lane::limits l;
    l.max_requests = max_requests;
    l.device_routed = device_routed;
    return express_lane(*ds, *model, router, pool, l);
  }
};

std::vector<gnn_request> lane_calls(std::size_t n) {
  std::vector<gnn_request> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{std::int64_t(i * 11 % 300)}, i + 7};
  return out;
}

TEST(express_lane_test, an_idle_model_runs_the_call_here_and_answers_as_a_pipeline_does) {
  express_fixture f;
  auto lane = f.lane(2);
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  const auto calls = lane_calls(2);
  lane.enter(2);  // the calls are counted at submit, and are this batch's own
  auto got = lane.try_run(calls, 2);
  ASSERT_TRUE(got.has_value());
  const auto want = p.run(calls);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    ASSERT_TRUE(got->errors[i].is_ok()) << got->errors[i].to_string();
    EXPECT_EQ(got->outputs[i], want.outputs[i]) << i;  // bit for bit
  }
  EXPECT_EQ(lane.batches(), 1u);
  EXPECT_EQ(lane.requests(), 2u);
}

TEST(express_lane_test, a_busy_model_or_a_batch_past_the_limits_goes_to_the_batcher) {
  express_fixture f;
  auto lane = f.lane(1);
  const auto one = lane_calls(1);
  lane.enter(1);  // another call outstanding at the batcher
  EXPECT_FALSE(lane.try_run(one, 0).has_value());
  lane.leave(1);
  EXPECT_FALSE(lane.try_run(lane_calls(2), 0).has_value());  // more calls than max_requests
  gnn_request many;
  for (int s = 0; s < 17; ++s) many.seeds.push_back(s);  // more seeds than max_seeds
  EXPECT_FALSE(lane.try_run({many}, 0).has_value());
  EXPECT_FALSE(lane.try_run({}, 0).has_value());
  lane.set_max_requests(0);  // the tunable turns it off
  EXPECT_FALSE(lane.try_run(one, 0).has_value());
  lane.set_max_requests(1);
  EXPECT_TRUE(lane.try_run(one, 0).has_value());
  lane.close();  // the model goes
  EXPECT_FALSE(lane.try_run(one, 0).has_value());
  EXPECT_EQ(lane.batches(), 1u);
}

TEST(express_lane_test, it_samples_with_the_fanouts_the_tunable_sets) {
  express_fixture f;
  auto lane = f.lane(1);
  gnn_pipeline p(*f.ds, *f.model, f.router, f.pool);
  ASSERT_TRUE(lane.set_fanouts({3, 2}).is_ok());
  ASSERT_TRUE(p.set_fanouts({3, 2}).is_ok());
  const auto one = lane_calls(1);
  auto got = lane.try_run(one, 0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->outputs[0], p.run(one).outputs[0]);
  EXPECT_FALSE(lane.set_fanouts({0}).is_ok());  // refused as a pipeline refuses it
}

TEST(express_lane_test, batches_the_pipelines_would_run_on_a_gpu_stay_theirs) {
  express_fixture f;
  auto lane = f.lane(1, true);
  f.router.set_fixed(psgs_router::choice::large);  // the GPU's
  EXPECT_FALSE(lane.try_run(lane_calls(1), 0).has_value());
  f.router.set_fixed(psgs_router::choice::small);  // the host's: the lane may take it
  EXPECT_TRUE(lane.try_run(lane_calls(1), 0).has_value());
}

}  // namespace
}  // namespace spindle::serving
