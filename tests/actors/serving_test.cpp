// The in-process actor pipeline against the direct pipeline call: same answers
// bit for bit, per-request errors that do not fail the batch, live policy changes.
#include <gtest/gtest.h>

#include <map>

#include "actors/batcher_actor.hpp"
#include "actors/pipeline_actor.hpp"
#include "actors/router_actor.hpp"
#include "graph/prepare.hpp"
#include "small_gnn.hpp"

namespace spindle::actors {
namespace {

struct fixture : test_support::small_gnn {
  std::shared_ptr<serving::psgs_router> router;

  fixture() : small_gnn("serving_ds", 11, 16, 32, 5) {
    serving::psgs_calibration c;  // a fixed threshold: PSGS below 500 -> inline
    c.small.mean = c.small.max = {0, 0.002};
    c.large.mean = c.large.max = {0.5, 0.001};
    serving::compute_crossovers(c);
    router = std::make_shared<serving::psgs_router>(c, serving::routing_policy::strict);
  }
};

// An actor system with one pipeline and a batcher over the fixture; stops them at the end.
struct serving_stack {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  pipeline_actor pipe;
  batcher_actor batcher;
  serving_stack(fixture& f, serving::batch_policy bp,
          std::function<double(const serving::gnn_request&)> psgs) {
    cfg.set("scheduler.max-threads", 1);
    sys = std::make_unique<caf::actor_system>(cfg);
    pipe = spawn_pipeline(*sys, *f.ds, *f.model, *f.router, f.pool);
    batcher = spawn_batcher(*sys, {pipe}, bp, f.router, std::move(psgs));
  }
  ~serving_stack() {
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(pipe, caf::exit_reason::user_shutdown);
  }
};

TEST(serving_test, actor_answers_equal_the_direct_pipeline_and_bad_requests_fail_alone) {
  fixture f;
  serving::batch_policy bp;
  bp.max_batch = 8;
  const auto* ds = &*f.ds;
  serving_stack srv(f, bp, [ds](const serving::gnn_request& r) {
    return ds
        ->psgs()[std::size_t(std::max<std::int64_t>(0, std::min(r.seeds[0], ds->num_nodes() - 1)))];
  });
  auto& sys = *srv.sys;
  auto batcher = srv.batcher;
  serving::gnn_pipeline direct(*f.ds, *f.model, *f.router, f.pool);
  caf::scoped_actor self{sys};
  // All 50 requests in flight at once, so batches hold several (max 8).
  std::map<std::uint64_t, serving::batch_result> want;
  // Sampler seeds i + 1: each request is sampled on its own (reproducible), so
  // its answer in any batch equals the direct call's.
  for (std::uint64_t i = 1; i <= 50; ++i) {
    serving::gnn_request r{{std::int64_t(i * 37 % 2048), std::int64_t(i)}, i};
    if (i == 7) r.seeds[1] = 999999;  // out of range: this request fails, not its batch
    want[i] = direct.run({r});
    self->send(batcher, infer_atom::value, r);
  }
  for (int k = 0; k < 50; ++k)
    self->receive([&](const gnn_reply& got) {
      const auto i = got.sampler_seed;
      if (i == 7) {
        EXPECT_NE(got.error.message().find("999999"), std::string::npos) << got.error.to_string();
      } else {
        ASSERT_TRUE(got.error.is_ok()) << got.error.to_string();
        EXPECT_EQ(got.output, want[i].outputs[0]) << "request " << i;
        EXPECT_EQ(got.output.size(), 2u * 5u);
      }
    });
  self->send(batcher, policy_atom::value, serving::routing_policy::loose);
  self->request(batcher, caf::infinite, stats_atom::value)
      .receive(
          [&](const batcher_stats& s) {
            EXPECT_EQ(s.requests, 50u);
            EXPECT_LT(s.batches, 50u);  // requests were batched together
          },
          [&](caf::error&) { FAIL(); });
  EXPECT_EQ(f.router->policy(), serving::routing_policy::loose);
}

}  // namespace
}  // namespace spindle::actors

namespace spindle::actors {
namespace {

TEST(serving_test, batch_and_routing_policies_change_live_while_serving) {
  fixture f;
  serving::batch_policy bp;
  bp.max_batch = 16;
  bp.deadline = std::chrono::seconds(5);  // batches close on size only
  bp.work_conserving = false;
  serving_stack srv(f, bp, [](const serving::gnn_request&) { return 1.0; });
  auto& sys = *srv.sys;
  auto batcher = srv.batcher;
  caf::scoped_actor self{sys};
  f.router->set_fixed(serving::psgs_router::choice::small);
  self->send(batcher, policy_atom::value, serving::routing_policy::fixed);
  auto serve = [&](std::uint64_t first, int count) {
    for (int i = 0; i < count; ++i)
      self->send(batcher, infer_atom::value,
                 serving::gnn_request{{std::int64_t(first + i)}, first + i});
    for (int i = 0; i < count; ++i)
      self->receive(
          [&](const gnn_reply& r) { EXPECT_TRUE(r.error.is_ok()) << r.error.to_string(); });
  };
  auto stats = [&] {
    batcher_stats out;
    self->request(batcher, caf::infinite, stats_atom::value)
        .receive([&](const batcher_stats& s) { out = s; }, [&](caf::error&) { ADD_FAILURE(); });
    return out;
  };
  serve(0, 64);
  auto s1 = stats();
  EXPECT_EQ(s1.batches, 4u);  // 64 requests in batches of 16
  EXPECT_EQ(s1.small, 4u);    // fixed: inline
  serving::batch_policy one = bp;
  one.max_batch = 1;
  self->send(batcher, policy_atom::value, one);
  f.router->set_fixed(serving::psgs_router::choice::large);
  serve(100, 8);
  auto s2 = stats();
  EXPECT_EQ(s2.batches - s1.batches, 8u);  // new max batch size applied
  EXPECT_EQ(s2.large, 8u);                 // new routing applied
}

// The router actor moves the routing point and the batcher's PSGS
// batch-closing threshold together: requests of PSGS 1 each, max batch 16, a
// 5 s deadline; with the point at 3.5 every batch closes at 4 requests (PSGS
// 4 passes it) and the large executor serves it (4 >= 3.5).
TEST(serving_test, the_router_actor_moves_the_routing_point_and_batch_closing_together) {
  fixture f;
  serving::batch_policy bp;
  bp.max_batch = 16;
  bp.deadline = std::chrono::seconds(5);
  bp.work_conserving = false;  // batches close on PSGS only
  serving_stack srv(f, bp, [](const serving::gnn_request&) { return 1.0; });
  auto& sys = *srv.sys;
  auto router = spawn_router(sys, f.router, srv.batcher);
  caf::scoped_actor self{sys};
  self->send(router, threshold_atom::value, 3.5);
  std::string table;
  self->request(router, caf::infinite, caf::get_atom::value)
      .receive([&](const std::string& t) { table = t; }, [&](caf::error&) { ADD_FAILURE(); });
  EXPECT_NE(table.find("\"threshold\":3.5"), std::string::npos) << table;
  for (std::uint64_t i = 0; i < 16; ++i)
    self->send(srv.batcher, infer_atom::value, serving::gnn_request{{std::int64_t(i)}, i});
  for (int i = 0; i < 16; ++i)
    self->receive([&](const gnn_reply& r) { EXPECT_TRUE(r.error.is_ok()) << r.error.to_string(); },
                  caf::after(std::chrono::seconds(4)) >> [] { ADD_FAILURE() << "batch waited"; });
  batcher_stats st;
  self->request(srv.batcher, caf::infinite, stats_atom::value)
      .receive([&](const batcher_stats& s) { st = s; }, [&](caf::error&) { ADD_FAILURE(); });
  EXPECT_EQ(st.batches, 4u);
  EXPECT_EQ(st.large, 4u);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors

namespace spindle::actors {
namespace {

// A lone request on an idle server goes at once: with a 5 s deadline, it is
// answered long before the deadline (work-conserving batcher). Under a burst
// the batches still hold several requests.
TEST(serving_test, a_lone_request_on_an_idle_server_does_not_wait_for_the_deadline) {
  fixture f;
  serving::batch_policy bp;
  bp.max_batch = 32;
  bp.deadline = std::chrono::seconds(5);
  serving_stack srv(f, bp, [](const serving::gnn_request&) { return 1.0; });
  caf::scoped_actor self{*srv.sys};
  const auto t0 = std::chrono::steady_clock::now();
  self->send(srv.batcher, infer_atom::value, serving::gnn_request{{3}, 0});
  self->receive([&](const gnn_reply& r) { EXPECT_TRUE(r.error.is_ok()) << r.error.to_string(); },
                caf::after(std::chrono::seconds(4)) >> [] { ADD_FAILURE() << "waited"; });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  for (std::int64_t i = 0; i < 200; ++i)
    self->send(srv.batcher, infer_atom::value, serving::gnn_request{{i}, 0});
  for (int i = 0; i < 200; ++i)
    self->receive([&](const gnn_reply& r) { EXPECT_TRUE(r.error.is_ok()) << r.error.to_string(); });
  self->request(srv.batcher, caf::infinite, stats_atom::value)
      .receive([&](const batcher_stats& s) { EXPECT_LT(s.batches, 150u); },
               [&](caf::error&) { ADD_FAILURE(); });
}

// GNNSched co-locates while serving: two pipelines submit their passes without
// waiting for their groups, so tasks meet in the queue and groups of two or
// more run; no group overruns the pool; answers equal the direct pipeline's.
TEST(serving_test, gnnsched_groups_passes_of_several_pipelines_while_serving) {
  fixture f;
  thread_pool workers(2, "test-gs");
  auto device = colocation::device_scheduler::create(64u << 20, workers, colocation::grouping_policy::bqt);
  ASSERT_TRUE(device.has_value()) << device.error().to_string();
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 1);
  caf::actor_system sys{cfg};
  std::vector<pipeline_actor> pipes;
  for (int i = 0; i < 2; ++i)
    pipes.push_back(spawn_pipeline(sys, *f.ds, *f.model, *f.router, f.pool, {}, device->get()));
  serving::batch_policy bp;
  bp.max_batch = 4;
  bp.pipeline_depth = 2;
  auto batcher =
      spawn_batcher(sys, pipes, bp, f.router, [](const serving::gnn_request&) { return 1.0; });
  serving::gnn_pipeline direct(*f.ds, *f.model, *f.router, f.pool);
  caf::scoped_actor self{sys};
  std::map<std::uint64_t, std::vector<float>> want;
  for (std::uint64_t i = 1; i <= 400; ++i) {
    serving::gnn_request r{{std::int64_t(i * 13 % 2048)}, i};
    want[i] = direct.run({r}).outputs[0];
    self->send(batcher, infer_atom::value, r);
  }
  for (int k = 0; k < 400; ++k)
    self->receive([&](const gnn_reply& got) {
      ASSERT_TRUE(got.error.is_ok()) << got.error.to_string();
      EXPECT_EQ(got.output, want[got.sampler_seed]) << got.sampler_seed;
    });
  const auto c = (*device)->stats();
  EXPECT_GT(c.largest_group, 1u) << c.groups << " groups of " << c.tasks << " tasks";
  EXPECT_GT(c.grouped_tasks, 0u);
  EXPECT_EQ(c.overruns, 0u);
  caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
  for (auto& p : pipes) caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors
