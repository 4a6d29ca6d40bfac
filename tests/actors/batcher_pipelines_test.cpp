// The batcher's pipelines while it serves (a cluster's shared queue as ranks
// join and leave): a pipeline added takes batches at once; one removed gets no
// new batch, still answers the batch it holds, and is then ended. A call sent
// with its callback (the door's direct path) is answered once, even if the
// batcher ends first.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "actors/batcher_actor.hpp"
#include "actors/model_scheduler.hpp"
#include "holding_pipeline.hpp"

namespace spindle::actors {
namespace {

using testing::holding_pipeline;

bool reaches(const std::atomic<int>& n, int want) {
  for (int i = 0; i < 1000 && n.load() < want; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return n.load() == want;
}

// The next answer the scoped actor receives: its sampler seed and output (-1 if none in 10 s).
std::pair<std::uint64_t, float> next_answer(caf::scoped_actor& self) {
  std::pair<std::uint64_t, float> out{0, -1};
  self->receive(
      [&](const gnn_reply& r) {
        out = {r.sampler_seed, r.output.empty() ? -2.0f : r.output[0]};
      },
      caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "no answer in 10 s"; });
  return out;
}

TEST(batcher_pipelines_test, an_added_pipeline_takes_batches_and_a_removed_one_finishes_its_own) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto taken_a = std::make_shared<std::atomic<int>>(0);
  auto taken_b = std::make_shared<std::atomic<int>>(0);
  auto a_actor = sys.spawn(holding_pipeline, taken_a);
  auto b_actor = sys.spawn(holding_pipeline, taken_b);
  auto a = caf::actor_cast<pipeline_actor>(a_actor);
  auto b = caf::actor_cast<pipeline_actor>(b_actor);
  serving::batch_policy bp;
  bp.max_batch = 1;
  bp.pipeline_depth = 1;
  auto batcher =
      spawn_batcher(sys, {a}, bp, nullptr, [](const serving::gnn_request&) { return 1.0; }, {0});
  caf::scoped_actor self{sys};
  auto ask = [&](std::uint64_t seed) {
    self->send(batcher, infer_atom::value, serving::gnn_request{{1}, seed});
  };
  ask(1);  // rank 0's pipeline takes it and holds it
  ASSERT_TRUE(reaches(*taken_a, 1));
  self->send(batcher, join_atom::value, b, std::int32_t(3));
  ask(2);  // the only idle pipeline is the one added
  ASSERT_TRUE(reaches(*taken_b, 1));

  self->monitor(b_actor);
  self->send(batcher, leave_atom::value, b);
  ask(3);  // both busy, one removed: it waits for rank 0's
  self->send(batcher, fanouts_atom::value, std::vector<int>{2, 2});
  self->send(b_actor, ok_atom::value);  // the removed pipeline answers what it holds
  bool answered = false, ended = false;
  for (int i = 0; i < 2; ++i)
    self->receive(
        [&](const gnn_reply& r) {
          EXPECT_EQ(r.sampler_seed, 2u);
          ASSERT_FALSE(r.output.empty()) << r.error.to_string();
          EXPECT_EQ(r.output[0], 2.0f);
          answered = true;
        },
        [&](caf::down_msg& d) { ended = d.source == b_actor.address(); },
        caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "nothing in 10 s"; });
  EXPECT_TRUE(answered);
  EXPECT_TRUE(ended) << "the batcher ends a removed pipeline once it holds no batch";
  EXPECT_EQ(taken_b->load(), 1);

  self->send(a_actor, ok_atom::value);
  EXPECT_EQ(next_answer(self), std::make_pair(std::uint64_t(1), 1.0f));
  ASSERT_TRUE(reaches(*taken_a, 2)) << "the waiting batch goes to rank 0's pipeline";
  self->send(a_actor, ok_atom::value);
  EXPECT_EQ(next_answer(self), std::make_pair(std::uint64_t(3), 3.0f));

  batcher_stats st;
  self->request(batcher, std::chrono::seconds(5), stats_atom::value)
      .receive([&](const batcher_stats& s) { st = s; },
               [](caf::error& e) { ADD_FAILURE() << to_string(e); });
  // The removed pipeline's slot is free; its batch stays counted for rank 3.
  EXPECT_EQ(st.per_pipeline, (std::vector<std::uint64_t>{2, 0}));
  EXPECT_EQ(st.pipeline_rank, (std::vector<std::int32_t>{0, -1}));
  EXPECT_EQ(st.departed_rank, (std::vector<std::int32_t>{3}));
  EXPECT_EQ(st.departed_batches, (std::vector<std::uint64_t>{1}));
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(a_actor, caf::exit_reason::user_shutdown);
}

// The batcher's counters now.
batcher_stats stats_of(caf::scoped_actor& self, const batcher_actor& batcher) {
  batcher_stats st;
  self->request(batcher, std::chrono::seconds(5), stats_atom::value)
      .receive([&](const batcher_stats& s) { st = s; },
               [](caf::error& e) { ADD_FAILURE() << to_string(e); });
  return st;
}

// A dead rank's stand-in: fails every batch at once, as a whole (so it is always idle).
caf::behavior dead_pipeline(caf::event_based_actor*, std::shared_ptr<std::atomic<int>> taken) {
  return {
      [=](run_atom, const batch_job&) -> caf::result<serving::batch_result> {
        ++*taken;
        return caf::make_error(caf::sec::request_receiver_down);
      },
      [=](fanouts_atom, const std::vector<int>&) {},
  };
}

// Answers every batch at once; each request's output is its sampler seed.
caf::behavior answering_pipeline(caf::event_based_actor*, std::shared_ptr<std::atomic<int>> taken) {
  return {
      [=](run_atom, const batch_job& job) {
        ++*taken;
        serving::batch_result r;
        for (const auto& q : job.requests) {
          r.outputs.push_back({float(q.sampler_seed)});
          r.errors.push_back(status::ok());
        }
        return r;
      },
      [=](fanouts_atom, const std::vector<int>&) {},
  };
}

TEST(batcher_pipelines_test, a_batch_a_dead_rank_failed_is_retried_on_another_rank_only) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto dead_taken = std::make_shared<std::atomic<int>>(0);
  auto good_taken = std::make_shared<std::atomic<int>>(0);
  // Rank 3 died: both its stand-ins fail at once and come first, so each is idle
  // whenever a batch is handed out; rank 0's pipeline answers.
  auto dead_a = caf::actor_cast<pipeline_actor>(sys.spawn(dead_pipeline, dead_taken));
  auto dead_b = caf::actor_cast<pipeline_actor>(sys.spawn(dead_pipeline, dead_taken));
  auto good = caf::actor_cast<pipeline_actor>(sys.spawn(answering_pipeline, good_taken));
  serving::batch_policy bp;
  bp.max_batch = 1;
  bp.pipeline_depth = 1;
  auto batcher = spawn_batcher(sys, {dead_a, dead_b, good}, bp, nullptr,
                               [](const serving::gnn_request&) { return 1.0; }, {3, 3, 0});
  caf::scoped_actor self{sys};
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    self->send(batcher, infer_atom::value, serving::gnn_request{{1}, seed});
    bool answered = false;
    self->receive(
        [&](const gnn_reply& r) {
          EXPECT_EQ(r.sampler_seed, seed);
          ASSERT_FALSE(r.output.empty()) << r.error.to_string();
          EXPECT_EQ(r.output[0], float(seed));
          answered = true;
        },
        [&](caf::error& e) { ADD_FAILURE() << "refused while rank 0 is up: " << to_string(e); },
        caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "no answer in 10 s"; });
    EXPECT_TRUE(answered) << "seed " << seed;
  }
  EXPECT_EQ(good_taken->load(), 5);
  EXPECT_EQ(dead_taken->load(), 5) << "each batch fails once on rank 3, never twice";

  // With rank 0's pipeline down, nothing else may take the retry: the error is answered.
  self->send(batcher, pipeline_down_atom::value, good, true);
  self->send(batcher, infer_atom::value, serving::gnn_request{{1}, 6});
  bool refused = false;
  self->receive([&](const gnn_reply& r) { ADD_FAILURE() << "answered " << r.sampler_seed; },
                [&](caf::error& e) { refused = e == caf::sec::request_receiver_down; },
                caf::after(std::chrono::seconds(10)) >> [] { ADD_FAILURE() << "nothing in 10 s"; });
  EXPECT_TRUE(refused);
  EXPECT_EQ(dead_taken->load(), 6);

  batcher_stats st;
  self->request(batcher, std::chrono::seconds(5), stats_atom::value)
      .receive([&](const batcher_stats& s) { st = s; },
               [](caf::error& e) { ADD_FAILURE() << to_string(e); });
  EXPECT_EQ(st.retried, 5u);
  EXPECT_EQ(st.per_pipeline, (std::vector<std::uint64_t>{0, 0, 5}));
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
  for (const auto& p : {dead_a, dead_b, good})
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

// Rank 3 joins and leaves 1,000 times, each time with a new pipeline that answers
// one batch; every tenth still holds its batch when it leaves and the next one
// joins. The queue keeps a slot per pipeline it holds at once, not one per join,
// and rank 3 keeps the count of every batch its pipelines answered.
TEST(batcher_pipelines_test, a_thousand_joins_and_leaves_keep_the_queue_bounded) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  serving::batch_policy bp;
  bp.max_batch = 1;
  bp.pipeline_depth = 1;
  auto batcher =
      spawn_batcher(sys, {}, bp, nullptr, [](const serving::gnn_request&) { return 1.0; });
  caf::scoped_actor self{sys};
  auto taken = std::make_shared<std::atomic<int>>(0);
  caf::actor holding;  // the pipeline that left holding its batch (none: every batch answered)
  std::size_t most_slots = 0;
  for (std::uint64_t cycle = 1; cycle <= 1000; ++cycle) {
    const bool holds = cycle % 10 == 0;
    auto actor = holds ? caf::actor(sys.spawn(holding_pipeline, taken))
                       : caf::actor(sys.spawn(answering_pipeline, taken));
    auto p = caf::actor_cast<pipeline_actor>(actor);
    self->send(batcher, join_atom::value, p, std::int32_t(3));
    if (holding) {  // the pipeline before this one answers once this one has joined
      self->send(holding, ok_atom::value);
      EXPECT_EQ(next_answer(self).first, cycle - 1);
      holding = nullptr;
    }
    self->send(batcher, infer_atom::value, serving::gnn_request{{1}, cycle});
    if (holds) {
      ASSERT_TRUE(reaches(*taken, int(cycle)));
      holding = actor;
    } else {
      ASSERT_EQ(next_answer(self), std::make_pair(cycle, float(cycle)));
    }
    self->send(batcher, leave_atom::value, p);
    most_slots = std::max(most_slots, stats_of(self, batcher).per_pipeline.size());
  }
  const auto st = stats_of(self, batcher);
  EXPECT_EQ(most_slots, 2u) << "one pipeline joined while the last one still held its batch";
  EXPECT_LE(st.per_pipeline.size(), 2u);
  EXPECT_EQ(st.departed_rank, (std::vector<std::int32_t>{3}));
  ASSERT_EQ(st.departed_batches.size(), 1u);
  EXPECT_EQ(st.departed_batches[0] +
                std::accumulate(st.per_pipeline.begin(), st.per_pipeline.end(), std::uint64_t(0)),
            999u)
      << "every batch answered, the last one still held";
  if (holding) caf::anon_send_exit(holding, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
}

// The door's direct path (a call without a deadline): the request goes to the
// batcher with its callback, which gets the answer; a batcher that ends holding
// a call, or is gone before it arrives, still calls it once, with an error.
TEST(batcher_pipelines_test, a_direct_call_is_answered_through_its_callback_even_when_the_batcher_ends) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto taken = std::make_shared<std::atomic<int>>(0);
  auto [pipe_actor, batcher] = testing::batcher_on_holding_pipeline(sys, taken, 1);
  struct got {
    std::atomic<int> calls{0};
    std::atomic<float> output{-1};
    std::atomic<bool> error{false};
  };
  auto direct = [&](std::uint64_t seed, std::shared_ptr<got> g) {
    caf::anon_send(batcher, infer_atom::value, serving::gnn_request{{1}, seed},
                   gnn_done([g](const gnn_reply* r, const caf::error* e) {
                     if (r && !r->output.empty()) g->output = r->output[0];
                     g->error = e != nullptr;
                     ++g->calls;
                   }));
  };
  auto first = std::make_shared<got>(), second = std::make_shared<got>();
  direct(7, first);
  ASSERT_TRUE(reaches(*taken, 1));
  caf::anon_send(pipe_actor, ok_atom::value);
  ASSERT_TRUE(reaches(first->calls, 1));
  EXPECT_EQ(first->output.load(), 7.0f);
  EXPECT_FALSE(first->error.load());

  direct(8, second);  // held by the pipeline when the batcher ends
  ASSERT_TRUE(reaches(*taken, 2));
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pipe_actor, caf::exit_reason::user_shutdown);
  ASSERT_TRUE(reaches(second->calls, 1)) << "a call held when the batcher ended was never answered";
  EXPECT_TRUE(second->error.load());

  auto late = std::make_shared<got>();
  direct(9, late);  // the batcher is gone: the message is dropped with its callback
  ASSERT_TRUE(reaches(late->calls, 1)) << "a call sent to an ended batcher was never answered";
  EXPECT_TRUE(late->error.load());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(first->calls.load() + second->calls.load() + late->calls.load(), 3);  // once each
}

// A door's turn (rpc_service::begin_turn): the calls dispatched while it is open
// reach the batcher in one message and ride in one batch, where the same calls
// sent one by one give the idle pipeline a batch of the first call alone.
TEST(batcher_pipelines_test, calls_held_for_a_turn_arrive_together_and_share_a_batch) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  auto run = [&](bool turn) {
    auto taken = std::make_shared<std::atomic<int>>(0);
    auto [pipe_actor, batcher] = testing::batcher_on_holding_pipeline(sys, taken, 64);
    auto answered = std::make_shared<std::atomic<int>>(0);
    if (turn) detail::hold_gnn_sends();
    for (std::uint64_t seed = 1; seed <= 3; ++seed)
      detail::dispatch_gnn(caf::actor{}, batcher, nullptr, serving::gnn_request{{1}, seed},
                           caf::duration(caf::infinite),
                           [answered](const gnn_reply* r, const caf::error*) {
                             if (r && !r->output.empty()) ++*answered;
                           });
    if (turn) detail::release_gnn_sends();
    EXPECT_TRUE(reaches(*taken, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // any batch of the rest closes
    for (int i = 0; i < 3 && answered->load() < 3; ++i) {
      caf::anon_send(pipe_actor, ok_atom::value);
      for (int k = 0; k < 100 && answered->load() < 3; ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(answered->load(), 3);
    caf::scoped_actor self{sys};
    batcher_stats st;
    self->request(batcher, caf::infinite, stats_atom::value).receive(
        [&](const batcher_stats& s) { st = s; }, [](caf::error&) { ADD_FAILURE() << "no stats"; });
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(pipe_actor, caf::exit_reason::user_shutdown);
    return st.batches;
  };
  EXPECT_EQ(run(true), 1u) << "the turn's three calls were not one batch";
  EXPECT_EQ(run(false), 2u) << "one by one: the idle pipeline takes the first call alone";
}

// A door's turn of calls that finds several pipelines idle is dealt out
// between them (batch_policy::split_min): 40 calls and two idle pipelines make
// two batches of 20, one each; fewer calls than two parts' worth, or
// split_min 0, keep one batch.
TEST(batcher_pipelines_test, a_burst_is_dealt_out_to_idle_pipelines_in_parts_of_split_min) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  struct outcome {
    int first = 0, second = 0;
    std::uint64_t batches = 0;
  };
  auto run = [&](std::uint64_t calls, std::size_t split_min) {
    auto taken_a = std::make_shared<std::atomic<int>>(0);
    auto taken_b = std::make_shared<std::atomic<int>>(0);
    auto a = sys.spawn(holding_pipeline, taken_a);
    auto b = sys.spawn(holding_pipeline, taken_b);
    serving::batch_policy bp;
    bp.max_batch = 64;
    bp.split_min = split_min;
    auto batcher = spawn_batcher(
        sys, {caf::actor_cast<pipeline_actor>(a), caf::actor_cast<pipeline_actor>(b)}, bp,
        nullptr, [](const serving::gnn_request&) { return 1.0; });
    auto answered = std::make_shared<std::atomic<int>>(0);
    detail::hold_gnn_sends();
    for (std::uint64_t seed = 1; seed <= calls; ++seed)
      detail::dispatch_gnn(caf::actor{}, batcher, nullptr, serving::gnn_request{{1}, seed},
                           caf::duration(caf::infinite),
                           [answered](const gnn_reply* r, const caf::error*) {
                             if (r && !r->output.empty()) ++*answered;
                           });
    detail::release_gnn_sends();
    EXPECT_TRUE(reaches(*taken_a, 1)) << "the first pipeline took no batch";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // any second batch is taken
    outcome out{taken_a->load(), taken_b->load(), 0};
    for (int i = 0; i < 100 && answered->load() < int(calls); ++i) {
      caf::anon_send(a, ok_atom::value);
      caf::anon_send(b, ok_atom::value);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(answered->load(), int(calls)) << "calls were lost in the split";
    caf::scoped_actor self{sys};
    self->request(batcher, caf::infinite, stats_atom::value).receive(
        [&](const batcher_stats& st) { out.batches = st.batches; },
        [](caf::error&) { ADD_FAILURE() << "no stats"; });
    for (auto& x : {caf::actor_cast<caf::actor>(batcher), a, b})
      caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
    return out;
  };
  const auto split = run(40, 16);
  EXPECT_EQ(split.first, 1);
  EXPECT_EQ(split.second, 1) << "the second idle pipeline got no part of the burst";
  EXPECT_EQ(split.batches, 2u);
  const auto small = run(20, 16);  // one part's worth: not split
  EXPECT_EQ(small.first + small.second, 1);
  EXPECT_EQ(small.batches, 1u);
  const auto off = run(40, 0);
  EXPECT_EQ(off.first + off.second, 1);
  EXPECT_EQ(off.batches, 1u);
}

}  // namespace
}  // namespace spindle::actors
