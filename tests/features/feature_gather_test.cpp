#include "features/feature_gather.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "features/feature_shard.hpp"

namespace spindle::features {
namespace {

constexpr std::uint32_t kDim = 4;

struct fixture {
  std::vector<float> features;
  features::feature_lookup lookup;
  std::vector<std::vector<std::byte>> shards;

  // 100 nodes; shard 0 holds nodes < 60, shard 1 holds nodes >= 40 (overlap 40..59).
  fixture() : features(100 * kDim) {
    std::iota(features.begin(), features.end(), 0.0f);
    features::lookup_builder b(100, 2);
    for (std::uint64_t v = 0; v < 100; ++v) {
      std::vector<features::shard_index> owners;
      if (v < 60) owners.push_back(0);
      if (v >= 40) owners.push_back(1);
      EXPECT_TRUE(b.assign(v, owners).is_ok());
    }
    lookup = std::move(*std::move(b).finish());
    for (features::shard_index s = 0; s < 2; ++s) {
      shards.emplace_back(shard_bytes(lookup.shard_row_count(s), kDim));
      EXPECT_TRUE(fill_shard(lookup, s, features, kDim, shards.back()).is_ok());
    }
  }
  feature_gatherer gatherer() {
    return feature_gatherer(lookup, kDim * 4,
                            {{shards[0].data(), nullptr, 1.0}, {shards[1].data(), nullptr, 2.0}});
  }
  bool row_ok(const std::vector<std::byte>& out, std::size_t i, std::int64_t v) {
    return std::memcmp(out.data() + i * kDim * 4, features.data() + v * kDim, kDim * 4) == 0;
  }
};

TEST(feature_gather_test, local_rows_come_back_in_request_order) {
  fixture f;
  auto g = f.gatherer();
  std::vector<std::int64_t> ids = {99, 0, 45, 45, 59, 60, 3};
  std::vector<std::byte> out(ids.size() * kDim * 4);
  auto r = g.gather(ids, out);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(r->local_rows, ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_TRUE(f.row_ok(out, i, ids[i])) << i;
}

TEST(feature_gather_test, bad_ids_and_short_buffers_are_rejected_by_name) {
  fixture f;
  auto g = f.gatherer();
  std::vector<std::int64_t> ids = {1, 100};
  std::vector<std::byte> out(ids.size() * kDim * 4);
  auto r = g.gather(ids, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
  EXPECT_NE(r.error().message().find("node id 100 at position 1"), std::string::npos);
  std::vector<std::byte> small(4);
  EXPECT_EQ(g.gather(ids, small).error().code(), errc::invalid_argument);
}

TEST(feature_gather_test, a_shard_marked_down_is_served_by_its_replica_or_fails_cleanly) {
  fixture f;
  auto g = f.gatherer();
  g.mark_unreachable(0);
  std::vector<std::int64_t> replicated = {40, 59, 50};
  std::vector<std::byte> out(3 * kDim * 4);
  auto r = g.gather(replicated, out);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(f.row_ok(out, i, replicated[i]));
  std::vector<std::int64_t> only_on_0 = {10};
  auto bad = g.gather(only_on_0, out);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), errc::unavailable);
  EXPECT_NE(bad.error().message().find("node 10"), std::string::npos);
  EXPECT_EQ(g.unreachable(), std::vector<int>{0});
}

TEST(feature_gather_test, fill_rows_rejects_unknown_nodes) {
  std::vector<float> features(10 * kDim, 1.0f);
  std::vector<std::byte> dst(2 * kDim * 4);
  std::vector<std::uint64_t> rows = {3, 10};
  auto st = fill_rows(rows, features, kDim, dst);
  EXPECT_EQ(st.code(), errc::invalid_argument);
  EXPECT_NE(st.message().find("node 10"), std::string::npos);
}

}  // namespace
}  // namespace spindle::features
