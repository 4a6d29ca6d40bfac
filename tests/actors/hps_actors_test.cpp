// Recommendation serving through actors: DLRM inference actors answer the
// PyTorch golden batch through the parameter server; a bad batch gets its own
// error; an online update published to the Redis stream is applied by the
// updater actor and becomes visible after the embedding_cache actor refreshes.
#include <gtest/gtest.h>

#include <filesystem>

#include "actors/dlrm_inference_actor.hpp"
#include "actors/embedding_cache_actor.hpp"
#include "actors/updater_actor.hpp"
#include "tests/support/golden_dlrm.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle::actors {
namespace {

namespace fs = std::filesystem;
const std::string& golden = testing::golden_dlrm_dir;

dlrm_request golden_request() {
  testing::golden_dlrm_batch g;
  return {6, std::move(g.dense), std::move(g.sparse)};
}

struct hps_node {
  fs::path dir = fs::temp_directory_path() / ("spindle-hps-actors-" + std::to_string(::getpid()));
  nn::heap_allocator alloc;
  std::optional<nn::model> model;
  std::unique_ptr<hps::persistent_db> pdb;
  std::unique_ptr<hps::volatile_db> vdb;
  std::shared_ptr<hps::lookup_session> session;

  hps_node() {
    fs::remove_all(dir);
    model.emplace(std::move(*nn::model::load(golden, alloc, true)));
    pdb = std::move(*hps::persistent_db::open((dir / "db").string()));
    vdb = std::move(*hps::make_hash_map_vdb({}));
    std::vector<hps::table_options> tables;
    for (int t = 0; t < 3; ++t) {
      const std::string name = "emb" + std::to_string(t);
      EXPECT_TRUE(pdb->bulk_load_safetensors(name, golden + "/weights.safetensors",
                                             "emb_l." + std::to_string(t) + ".weight"));
      tables.push_back({name, 8, std::uint64_t(model->desc().table_rows[t]), 0.5, 1.0, 0.0f, 2});
    }
    session = std::move(*hps::lookup_session::create(tables, vdb.get(), pdb.get()));
  }
  ~hps_node() {
    session.reset();
    pdb.reset();
    fs::remove_all(dir);
  }
};

dlrm_reply ask(caf::scoped_actor& self, const dlrm_inference_actor& a, const dlrm_request& r) {
  dlrm_reply out;
  self->request(a, std::chrono::seconds(30), dlrm_atom::value, r)
      .receive([&](const dlrm_reply& rep) { out = rep; },
               [&](const caf::error& e) {
                 out.error = make_error(errc::unavailable, "caf error {}", e.code());
               });
  return out;
}

TEST(hps_actors_test, serves_dlrm_and_applies_online_updates_after_a_refresh) {
  auto redis = testing::redis_server::start();
  ASSERT_TRUE(redis.has_value()) << redis.error().to_string();
  hps_node node;
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto cache = spawn_embedding_cache(sys, node.session, 0);
  std::vector<dlrm_inference_actor> instances = {spawn_dlrm_inference(sys, *node.model, node.session),
                                       spawn_dlrm_inference(sys, *node.model, node.session)};
  hps::consumer_options co;
  co.consumer = "node-0";
  co.tables = {"emb0", "emb1", "emb2"};
  co.block_ms = 50;
  auto consumer = hps::update_consumer::connect("127.0.0.1", (*redis)->port(), co);
  ASSERT_TRUE(consumer.has_value()) << consumer.error().to_string();
  auto updater = spawn_updater(sys, std::move(*consumer), node.vdb.get(), node.pdb.get());

  const testing::golden_dlrm_batch fixture;
  const auto* expected = &fixture.expected;
  const dlrm_request req = golden_request();
  for (const auto& inst : instances) {
    const dlrm_reply r = ask(self, inst, req);
    ASSERT_TRUE(r.error.is_ok()) << r.error.to_string();
    for (int b = 0; b < 6; ++b) EXPECT_NEAR(r.scores[b], (*expected)[b], 1e-5);
  }
  dlrm_request bad = req;
  bad.sparse[2].indices[0] = 20;
  EXPECT_NE(
      ask(self, instances[0], bad).error.message().find("table 2: indices[0]=20 out of range"),
      std::string::npos);
  const dlrm_reply before = ask(self, instances[0], req);
  ASSERT_TRUE(before.error.is_ok());

  // Online update: every row of table 0 becomes 0.5 (Fig. 3 step 1 -> VDB/PDB).
  auto producer = hps::update_producer::connect("127.0.0.1", (*redis)->port());
  std::vector<hps::cache_key> keys(50);
  for (hps::cache_key k = 0; k < 50; ++k) keys[k] = k;
  ASSERT_TRUE(producer->publish("emb0", 8, keys, std::vector<float>(50 * 8, 0.5f)).has_value());
  hps::consumer_stats st;
  for (int i = 0; i < 200 && st.applied_keys < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    self->request(updater, std::chrono::seconds(10), hps_stats_atom::value)
        .receive([&](const hps::consumer_stats& s) { st = s; }, [](const caf::error&) {});
  }
  ASSERT_EQ(st.applied_keys, 50u);
  const dlrm_reply stale = ask(self, instances[1], req);
  for (int b = 0; b < 6; ++b) EXPECT_EQ(stale.scores[b], before.scores[b]);  // L1 not refreshed yet
  std::uint64_t rewritten = 0;
  self->request(cache, std::chrono::seconds(10), refresh_atom::value)
      .receive([&](std::uint64_t n) { rewritten = n; }, [](const caf::error&) {});
  EXPECT_GE(rewritten, 1u);
  const dlrm_reply fresh = ask(self, instances[1], req);
  ASSERT_TRUE(fresh.error.is_ok()) << fresh.error.to_string();
  // The reference: a brand-new session reading the updated PDB directly.
  auto cold = std::move(*hps::lookup_session::create({{"emb0", 8, 50, 1.0, 1.0, 0.0f, 2},
                                                            {"emb1", 8, 30, 1.0, 1.0, 0.0f, 2},
                                                            {"emb2", 8, 20, 1.0, 1.0, 0.0f, 2}},
                                                           nullptr, node.pdb.get()));
  auto runner = std::move(*hps::dlrm_hps_runner::create(*node.model, *cold));
  std::vector<float> dense = req.dense;
  auto want = runner.infer(node.alloc, nn::tensor::borrow(dense.data(), {6, 13}), req.sparse);
  ASSERT_TRUE(want.has_value());
  bool changed = false;
  for (int b = 0; b < 6; ++b) {
    EXPECT_NEAR(fresh.scores[b], want->data()[b], 1e-6);
    changed |= std::abs(fresh.scores[b] - before.scores[b]) > 1e-4;
  }
  EXPECT_TRUE(changed);

  bool ok = false;
  self->request(cache, std::chrono::seconds(10), threshold_atom::value, std::string("emb1"), 0.25)
      .receive([&](bool b) { ok = b; }, [](const caf::error&) {});
  EXPECT_TRUE(ok);
  hps_stats stats;
  self->request(cache, std::chrono::seconds(10), hps_stats_atom::value)
      .receive([&](const hps_stats& s) { stats = s; }, [](const caf::error&) {});
  ASSERT_EQ(stats.tables.size(), 3u);
  EXPECT_GE(stats.stats[0].lookups, 5u);
  EXPECT_GE(stats.stats[0].refreshed, 1u);
  for (auto& a : instances) self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(cache, caf::exit_reason::user_shutdown);
  self->send_exit(updater, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace spindle::actors
