// Which KServe gRPC calls may take the express lane: only one that finds the
// door empty and quiet since the latest answer.
#include "transport/kserve/lone_call_gate.hpp"

#include <gtest/gtest.h>

namespace spindle::transport::kserve {
namespace {

using namespace std::chrono_literals;
using clock_t_ = lone_call_gate::clock;

TEST(lone_call_gate_test, a_call_is_lone_only_in_an_empty_door_quiet_since_the_last_answer) {
  lone_call_gate gate(20us);
  const auto t0 = clock_t_::now();
  EXPECT_TRUE(gate.enter(t0));          // the first call of an idle door
  EXPECT_FALSE(gate.enter(t0 + 5us));   // another while it is in the door
  gate.leave(t0 + 60us);
  EXPECT_EQ(gate.in_door(), 1);
  gate.leave(t0 + 70us);                // the door is empty from here
  EXPECT_EQ(gate.in_door(), 0);
  // A call gRPC had queued behind them reaches its handler a few us later.
  EXPECT_FALSE(gate.enter(t0 + 75us));
  gate.leave(t0 + 200us);
  // A closed-loop client's next call comes a round trip after the answer.
  EXPECT_TRUE(gate.enter(t0 + 200us + 20us));
  gate.leave(t0 + 300us);
  EXPECT_TRUE(gate.enter(t0 + 1ms));
  gate.leave(t0 + 1ms + 50us);
}

TEST(lone_call_gate_test, the_quiet_runs_from_the_latest_answer_whichever_call_gave_it) {
  lone_call_gate gate(20us);
  const auto t0 = clock_t_::now();
  ASSERT_TRUE(gate.enter(t0));
  ASSERT_FALSE(gate.enter(t0 + 1us));
  gate.leave(t0 + 100us);  // the second call answers first
  gate.leave(t0 + 50us);   // the first call's answer, its time read earlier
  EXPECT_FALSE(gate.enter(t0 + 110us));  // 10 us after the latest answer, not 60
  gate.leave(t0 + 110us);
  EXPECT_TRUE(gate.enter(t0 + 130us));
  gate.leave(t0 + 135us);
}

}  // namespace
}  // namespace spindle::transport::kserve
