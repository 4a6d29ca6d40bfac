// The node runtime tested as a library (no `spindle` process): the layout of a
// node's published region over its tiers, a node's shard of a multi-tier
// placement, rows lent from a node's own copy, a reader that cannot attach the
// next placement epoch, and the model registry's refusals.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <fstream>

#include "../actors/small_gnn.hpp"
#include "features/feature_shard.hpp"
#include "features/placement.hpp"
#include "runtime/cluster_features.hpp"
#include "runtime/gnn_models.hpp"
#include "runtime/rank_shard.hpp"

namespace spindle::runtime {
namespace {

// Two servers with little host memory and a disk tier each: most rows go to disk shards.
config::topology two_tier_topology(std::uint64_t host_bytes) {
  const std::string text = fmt::format(
      "coordinator = \"a\"\n[links]\nintra = \"shm\"\ninter = \"ethernet\"\n"
      "[[server]]\nname = \"a\"\nhost = \"127.0.0.1\"\nport = 7801\nmemory = {0}\ndisk = "
      "100000000\n[[server]]\nname = \"b\"\nhost = \"127.0.0.1\"\nport = 7802\nmemory = {0}\n"
      "disk = 100000000\n",
      host_bytes);
  return *config::parse_topology(text, "two-tier");
}

TEST(runtime_test, a_node_region_holds_its_host_shard_first_then_its_other_tiers) {
  actors::test_support::small_gnn f("node_layout", 10, 16, 16, 4);
  auto shard = rank_shard::start(two_tier_topology(20000), f.dir, 1);
  ASSERT_TRUE(shard.has_value()) << shard.error().to_string();
  const auto& plan = *(*shard)->latest().plan;
  auto layout = region_layout(plan, 1, 16);
  ASSERT_TRUE(layout.has_value()) << layout.error().to_string();
  ASSERT_GE(layout->size(), 2u);  // host and disk
  EXPECT_EQ(plan.shards[std::size_t(layout->front().shard)].tier, features::shard_tier::host);
  std::uint64_t at = 0;
  for (const auto& slot : *layout) {
    EXPECT_EQ(plan.shards[std::size_t(slot.shard)].server, 1);
    EXPECT_EQ(slot.offset, at);  // contiguous, in order
    at += slot.bytes;
  }
  // Every row of rank 1's disk shard is in its region at the disk slot's offset.
  const auto& disk = layout->back();
  const auto rows = plan.lookup.shard_rows(features::shard_index(disk.shard));
  ASSERT_FALSE(rows.empty());
  const auto* own = reinterpret_cast<const float*>((*shard)->latest().own_rows + disk.offset);
  for (std::size_t i = 0; i < rows.size(); i += 7)
    for (int c = 0; c < 16; ++c)
      ASSERT_EQ(own[i * 16 + std::size_t(c)], f.ds->features()[rows[i] * 16 + std::size_t(c)]);
}

TEST(runtime_test, region_layout_names_a_server_without_host_memory) {
  actors::test_support::small_gnn f("node_nohost", 10, 16, 16, 4);
  auto shard = rank_shard::start(two_tier_topology(20000), f.dir, 0);
  ASSERT_TRUE(shard.has_value());
  auto bad = region_layout(*(*shard)->latest().plan, 5, 16);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("server 5"), std::string::npos);
}

// A node lends the rows its own copy holds, back to back in a region a peer
// reads one-sidedly; an id outside the graph is refused by name.
TEST(runtime_test, a_node_lends_rows_of_its_own_copy) {
  actors::test_support::small_gnn f("node_lend", 10, 16, 16, 4);
  auto shard = rank_shard::start(two_tier_topology(20000), f.dir, 0);
  ASSERT_TRUE(shard.has_value()) << shard.error().to_string();
  const std::vector<std::int64_t> ids = {5, 900, 17};
  auto lent = (*shard)->lend(1, ids);
  ASSERT_TRUE(lent.has_value()) << lent.error().to_string();
  EXPECT_EQ(lent->held, (std::vector<std::uint8_t>{1, 1, 1}));  // a whole copy holds every row
  std::vector<float> rows(ids.size() * 16);
  ASSERT_TRUE((*shard)->read_blob(lent->descriptor, std::as_writable_bytes(std::span(rows))));
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t c = 0; c < 16; ++c)
      ASSERT_EQ(rows[i * 16 + c], f.ds->features()[std::size_t(ids[i]) * 16 + c]) << ids[i];
  auto bad = (*shard)->lend(1, std::vector<std::int64_t>{3, 1 << 20});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("node 1048576 is outside the graph"), std::string::npos)
      << bad.error().to_string();
  EXPECT_TRUE((*shard)->lend(1, {}).has_value());  // frees the loan
}

// The next epoch's owner published a region too small for its shards: the
// reader stays on the epoch it reads, gathers go on answering right, and it
// says why, naming both epochs.
TEST(runtime_test, a_reader_that_cannot_attach_the_next_epoch_keeps_its_own_and_says_why) {
  actors::test_support::small_gnn f("node_attach", 10, 16, 16, 4);
  const auto topo = two_tier_topology(20000);
  auto zero = rank_shard::start(topo, f.dir, 0);
  auto one = rank_shard::start(topo, f.dir, 1);
  ASSERT_TRUE(zero.has_value() && one.has_value());
  auto& a = **zero;
  auto& b = **one;
  std::map<int, member_info> alive = {{0, {a.descriptor(0)}}, {1, {b.descriptor(0)}}};
  member_view view;
  view.update(alive);
  auto reader = cluster_features::create(a, view);
  ASSERT_TRUE(reader.has_value()) << reader.error().to_string();
  const std::vector<std::int64_t> ids = {0, 1, 2, 500, 1000, 1023};
  auto expect_rows = [&] {
    std::vector<float> out(ids.size() * 16);
    ASSERT_TRUE((*reader)->source()(ids, out.data()));
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (std::size_t c = 0; c < 16; ++c)
        ASSERT_EQ(out[i * 16 + c], f.ds->features()[std::size_t(ids[i]) * 16 + c]) << ids[i];
  };
  expect_rows();
  const auto home = features::home_servers(*a.latest().plan);
  const std::vector<double> fap(f.ds->fap().begin(), f.ds->fap().end());
  ASSERT_TRUE(a.build(1, fap, home).has_value());  // a whole copy: every row from its own copy
  auto small = b.publish_blob(1, std::vector<std::byte>(16));
  ASSERT_TRUE(small.has_value());
  alive[0] = {a.descriptor(1), "", false, 1, a.descriptor(0), 0};
  alive[1] = {*small, "", false, 1, b.descriptor(0), 0};
  view.update(alive);
  (*reader)->refresh();
  EXPECT_EQ((*reader)->reading_epoch(), 0);
  const auto why = (*reader)->problem();
  EXPECT_NE(why.find("cannot read placement epoch 1 (it reads epoch 0)"), std::string::npos) << why;
  EXPECT_NE(why.find("lies outside"), std::string::npos) << why;
  expect_rows();
}

// Rank 0 publishes each re-plan's inputs as a blob. While epoch 2 is still being
// applied the cluster serves epoch 1, whose inputs a joining rank reads to
// rebuild the plan it copies rows by; a re-plan retried meanwhile publishes
// epoch 3 and must leave epoch 1's blob in place (it freed it: the joiner
// retried without end).
TEST(runtime_test, a_retried_replan_keeps_the_inputs_of_the_epoch_the_cluster_serves) {
  actors::test_support::small_gnn f("node_blobs", 10, 16, 16, 4);
  auto zero = rank_shard::start(two_tier_topology(20000), f.dir, 0);
  ASSERT_TRUE(zero.has_value());
  auto& a = **zero;
  auto blob = [](std::byte b) { return std::vector<std::byte>(64, b); };
  auto one = a.publish_blob(1, blob(std::byte{1}));
  ASSERT_TRUE(one.has_value());
  ASSERT_TRUE(a.publish_blob(2, blob(std::byte{2})).has_value());
  ASSERT_TRUE(a.publish_blob(3, blob(std::byte{3})).has_value());  // refused, retried
  ASSERT_TRUE(a.publish_blob(3, blob(std::byte{3})).has_value());
  std::vector<std::byte> out(64);
  ASSERT_TRUE(a.owns_blob(*one));
  ASSERT_TRUE(a.read_blob(*one, out));
  EXPECT_EQ(out, blob(std::byte{1}));
  ASSERT_TRUE(a.publish_blob(4, blob(std::byte{4})).has_value());  // epoch 2 applied, 3 accepted
  EXPECT_FALSE(a.owns_blob(*one));
}

TEST(runtime_test, the_model_registry_refuses_a_wrong_width_and_a_duplicate_name) {
  actors::test_support::small_gnn f("node_models", 10, 16, 16, 4);
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  gnn_serving_defaults d;
  auto models = gnn_models::create(sys, *f.ds, f.pool, d);
  ASSERT_TRUE(models.has_value());
  ASSERT_TRUE((*models)->load("sage", f.model_dir).has_value());
  auto again = (*models)->load("sage", f.model_dir);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().to_string().find("already loaded"), std::string::npos);
  config::model_desc wide;
  wide.arch = config::model_arch::gcn;
  wide.in = 32, wide.hidden = 8, wide.out = 2;
  const std::string dir = f.dir + "-wide";
  ASSERT_TRUE(nn::init_model(wide, 1, dir).is_ok());
  auto mismatch = (*models)->load("wide", dir);
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.error().to_string().find("input width 32"), std::string::npos);
  (*models)->unload("sage");
  EXPECT_TRUE((*models)->load("sage", f.model_dir).has_value());  // the name is free again
}

}  // namespace
}  // namespace spindle::runtime
