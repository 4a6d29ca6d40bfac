// A served GNN call's wait for its batcher: a call with a deadline is failed by
// CAF's clock when its batch is late; a call without one waits on no timer (it
// puts nothing on CAF's clock thread) and is answered whenever its batch is.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "actors/batcher_actor.hpp"
#include "holding_pipeline.hpp"
#include "actors/gateway_replies.hpp"
#include "actors/model_scheduler.hpp"

namespace spindle::actors {
namespace {

using testing::holding_pipeline;

// What one dispatched call was answered with: its output, or the actor error.
struct call_end {
  std::promise<std::string> answer;
  std::future<std::string> got = answer.get_future();
  void operator()(const gnn_reply* r, const caf::error* err) {
    answer.set_value(r ? (r->output.empty() ? "empty" : std::to_string(r->output[0]))
                       : caf::to_string(*err));
  }
};

TEST(gateway_timeout_test, a_call_without_deadline_waits_on_no_timer) {
  EXPECT_EQ(detail::timeout_of(0).unit, caf::time_unit::invalid);  // caf::infinite
  EXPECT_EQ(detail::timeout_of(1500), caf::duration(std::chrono::microseconds(1500)));

  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto taken = std::make_shared<std::atomic<int>>(0);
  auto [pipe, batcher] = testing::batcher_on_holding_pipeline(sys, taken, 1);
  auto forwarder = sys.spawn(detail::gateway_forwarder);
  auto dispatch = [&](std::uint64_t seed, caf::duration timeout) {
    auto end = std::make_shared<call_end>();
    detail::dispatch_gnn(forwarder, batcher, nullptr, serving::gnn_request{{1}, seed}, timeout,
                         [end](const gnn_reply* r, const caf::error* e) { (*end)(r, e); });
    return end;
  };

  // With a deadline: the held batch outlives it and the clock fails the call.
  auto timed = dispatch(7, detail::timeout_of(2000));
  ASSERT_EQ(timed->got.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(timed->got.get(), caf::to_string(caf::make_error(caf::sec::request_timeout)));

  caf::anon_send(pipe, ok_atom::value);  // the late batch goes (its answer has no taker)

  // Without one: still waiting long after, then answered with its own output.
  auto open = dispatch(9, detail::timeout_of(0));
  EXPECT_EQ(open->got.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  for (int i = 0; i < 1000 && taken->load() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  caf::anon_send(pipe, ok_atom::value);
  ASSERT_EQ(open->got.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(open->got.get(), std::to_string(9.0f));
  caf::anon_send_exit(forwarder, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pipe, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors
