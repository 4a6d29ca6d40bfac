// The UCX bridge between two actor systems (two bridges, two UCX workers, real
// active messages): a batch forwarded to a pipeline registered on the other
// side answers exactly like the pipeline called directly; bad requests, unknown
// targets and a peer reported down fail with errors that name them, at once.
#include <gtest/gtest.h>

#include <cstring>

#include "actors/pipeline_actor.hpp"
#include "actors/remote_pipeline.hpp"
#include "actors/ucx_bridge.hpp"
#include "features/feature_shard.hpp"
#include "graph/prepare.hpp"
#include "small_gnn.hpp"

namespace spindle::actors {
namespace {

struct fixture : test_support::small_gnn {
  serving::psgs_router router{serving::psgs_calibration{}, serving::routing_policy::fixed};
  fixture() : small_gnn("bridge_ds", 10, 8, 16, 3) {}
};

// One "process": an actor system with its bridge.
struct side {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  bridge_handle bridge;
  explicit side(int rank) {
    add_bridge_types(cfg);
    cfg.set("scheduler.max-threads", 1);
    sys = std::make_unique<caf::actor_system>(cfg);
    bridge_options o;
    o.rank = rank;
    o.timeout = std::chrono::milliseconds(5'000);
    auto b = spawn_bridge(*sys, o);
    EXPECT_TRUE(b.has_value()) << b.error().to_string();
    bridge = *b;
  }
  ~side() { caf::anon_send_exit(bridge.actor, caf::exit_reason::user_shutdown); }
};

// Tells each bridge where the other is: `coord` is rank 0, `member` rank 1.
void link_bridges(side& coord, side& member) {
  caf::anon_send(coord.bridge.actor, peer_atom::value, 1, member.bridge.address);
  caf::anon_send(member.bridge.actor, peer_atom::value, 0, coord.bridge.address);
}

// A pipeline over `f` on `member`, registered at its bridge as the pipeline target.
auto registered_pipeline(side& member, fixture& f) {
  auto pipe = spawn_pipeline(*member.sys, *f.ds, *f.model, f.router, f.pool);
  caf::anon_send(member.bridge.actor, register_atom::value, std::string(pipeline_target),
                 caf::actor_cast<caf::actor>(pipe));
  return pipe;
}

std::vector<serving::gnn_request> requests(std::int64_t n) {
  std::vector<serving::gnn_request> r;
  for (std::int64_t i = 0; i < n; ++i) r.push_back({{i * 7 % 1024, i % 1024}, std::uint64_t(i)});
  return r;
}

TEST(bridge_test, a_batch_through_the_bridge_answers_like_the_direct_pipeline) {
  fixture f;
  side coord(0), member(1);
  link_bridges(coord, member);
  auto pipe = registered_pipeline(member, f);
  auto proxy = spawn_remote_pipeline(*coord.sys, coord.bridge.actor, 1);

  auto reqs = requests(40);
  reqs[5].seeds = {1 << 20};  // out of range: this request alone fails
  serving::gnn_pipeline direct(*f.ds, *f.model, f.router, f.pool);
  auto want = direct.run(reqs);
  caf::scoped_actor self{*coord.sys};
  for (int round = 0; round < 3; ++round) {
    bool answered = false;
    self->request(proxy, std::chrono::seconds(10), run_atom::value, batch_job{reqs})
        .receive(
            [&](const serving::batch_result& got) {
              answered = true;
              ASSERT_EQ(got.outputs.size(), want.outputs.size());
              for (std::size_t i = 0; i < reqs.size(); ++i) {
                EXPECT_EQ(got.outputs[i], want.outputs[i]) << "request " << i;
                EXPECT_EQ(got.errors[i].code(), want.errors[i].code()) << "request " << i;
                EXPECT_EQ(got.errors[i].message(), want.errors[i].message());
              }
              EXPECT_FALSE(got.errors[5].is_ok());
            },
            [&](caf::error& e) { ADD_FAILURE() << to_string(e); });
    EXPECT_TRUE(answered);
  }
  caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pipe, caf::exit_reason::user_shutdown);
}

// One routing policy for the cluster: the sender's router picks the executor of
// a bridged batch, and a live change on the sender takes effect on the member.
TEST(bridge_test, the_senders_router_picks_the_remote_executor_live) {
  fixture f;  // the member's own router: fixed, small executor
  side coord(0), member(1);
  link_bridges(coord, member);
  auto pipe = registered_pipeline(member, f);
  auto router =
      std::make_shared<serving::psgs_router>(serving::psgs_calibration{}, serving::routing_policy::fixed);
  router->set_fixed(serving::psgs_router::choice::large);
  auto proxy = spawn_remote_pipeline(*coord.sys, coord.bridge.actor, 1, router,
                                     [](const serving::gnn_request&) { return 1.0; });
  caf::scoped_actor self{*coord.sys};
  auto executor_of_next_batch = [&] {
    auto chosen = serving::psgs_router::choice::small;
    self->request(proxy, std::chrono::seconds(10), run_atom::value, batch_job{requests(8)})
        .receive(
            [&](const serving::batch_result& r) {
              chosen = r.executor;
              for (const auto& e : r.errors) EXPECT_TRUE(e.is_ok()) << e.to_string();
            },
            [&](caf::error& e) { ADD_FAILURE() << to_string(e); });
    return chosen;
  };
  EXPECT_EQ(executor_of_next_batch(), serving::psgs_router::choice::large);
  router->set_fixed(serving::psgs_router::choice::small);
  EXPECT_EQ(executor_of_next_batch(), serving::psgs_router::choice::small);
  // A batch with an executor the member does not know is refused by name.
  std::string text;
  remote_batch bad{requests(2), 7};
  self->request(coord.bridge.actor, std::chrono::seconds(10), forward_atom::value, 1,
                std::string(pipeline_target), caf::make_message(run_atom::value, bad))
      .receive([&](remote_result&) {}, [&](caf::error& e) { text = error_text(e); });
  EXPECT_NE(text.find("executor 7"), std::string::npos) << text;
  caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(pipe, caf::exit_reason::user_shutdown);
}

TEST(bridge_test, results_round_trip_through_the_wire_type_and_bad_sizes_are_named) {
  serving::batch_result r;
  r.outputs = {{1.5f, -2.0f}, {}, {3.25f}};
  r.errors = {status::ok(), make_error(errc::invalid_argument, "seed 9 out of range"),
              status::ok()};
  r.times = {0.1, 0.2, 0.3};
  r.executor = serving::psgs_router::choice::large;
  auto back = from_wire(to_wire(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->outputs, r.outputs);
  EXPECT_EQ(back->errors[1].code(), errc::invalid_argument);
  EXPECT_EQ(back->errors[1].message(), "seed 9 out of range");
  EXPECT_EQ(back->executor, r.executor);
  auto w = to_wire(r);
  w.output_bytes.pop_back();
  auto bad = from_wire(w);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), errc::corrupt_data);
  EXPECT_NE(bad.error().message().find("3 floats but 11 bytes"), std::string::npos)
      << bad.error().message();
}

TEST(bridge_test, unknown_targets_bad_messages_and_dead_peers_fail_at_once_with_a_reason) {
  side coord(0), member(1);
  link_bridges(coord, member);
  caf::scoped_actor self{*coord.sys};
  auto forward_error = [&](int rank, std::string target, caf::message m) {
    std::string text = "(answered)";
    self->request(coord.bridge.actor, std::chrono::seconds(10), forward_atom::value, rank,
                  std::move(target), std::move(m))
        .receive([&](remote_result&) {}, [&](caf::error& e) { text = error_text(e); });
    return text;
  };
  EXPECT_EQ(forward_error(1, "sampler", caf::make_message(run_atom::value, remote_batch{})),
            "rank 1 has no actor named 'sampler'");
  // A registered target that does not understand the message says what it got.
  fixture f;
  auto pipe = registered_pipeline(member, f);
  EXPECT_NE(forward_error(1, pipeline_target, caf::make_message(run_atom::value, 42))
                .find("expected (run, remote_batch)"),
            std::string::npos);
  // No bridge at rank 2: the send fails and the forward with it, well before the timeout.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(forward_error(2, pipeline_target, caf::make_message(run_atom::value, remote_batch{}))
                .find("rank 2"),
            std::string::npos);
  // A peer reported down fails new forwards at once; announcing it again heals it.
  caf::anon_send(coord.bridge.actor, peer_down_atom::value, 1);
  EXPECT_EQ(forward_error(1, pipeline_target, caf::make_message(run_atom::value, remote_batch{})),
            "rank 1 is down");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  caf::anon_send(coord.bridge.actor, peer_atom::value, 1, member.bridge.address);
  EXPECT_EQ(forward_error(1, pipeline_target, caf::make_message(run_atom::value, remote_batch{})),
            "(answered)");
  caf::anon_send_exit(pipe, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors
