// One suite over both VDB backends (in-process hash map, a real redis-server on
// a free loopback port): round trips, partitioning, overflow pruning per
// policy, dim checks and named errors.
#include "hps/vdb/volatile_db.hpp"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/support/redis_server.hpp"

namespace spindle::hps {
namespace {

constexpr std::uint32_t dim = 4;

std::vector<float> values_for(const std::vector<cache_key>& keys, float version = 0) {
  std::vector<float> v;
  for (cache_key k : keys) {
    for (std::uint32_t d = 0; d < dim; ++d) v.push_back(float(k) + version + 0.25f * d);
  }
  return v;
}

std::vector<cache_key> range_keys(cache_key begin, cache_key end) {
  std::vector<cache_key> k;
  for (cache_key i = begin; i < end; ++i) k.push_back(i);
  return k;
}

class volatile_db_test : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<volatile_db> make(const vdb_options& o) {
    if (GetParam() == "hash_map") return std::move(*make_hash_map_vdb(o));
    if (!redis_) {
      auto r = testing::redis_server::start();
      if (!r) {
        ADD_FAILURE() << r.error().to_string();
        return nullptr;
      }
      redis_ = std::move(*r);
    }
    auto db = make_redis_vdb(o, "127.0.0.1", redis_->port(), "t" + std::to_string(++namespaces_));
    EXPECT_TRUE(db.has_value()) << (db ? "" : db.error().to_string());
    return db ? std::move(*db) : nullptr;
  }
  std::unique_ptr<testing::redis_server> redis_;
  int namespaces_ = 0;
};

TEST_P(volatile_db_test, inserted_vectors_come_back_and_absent_keys_are_reported) {
  auto db = make({});
  ASSERT_TRUE(db);
  const auto keys = range_keys(0, 500);
  ASSERT_TRUE(db->insert("users", dim, keys, values_for(keys)));
  std::vector<cache_key> probe = {3, 499, 500, 77777};
  std::vector<float> out(probe.size() * dim, -1);
  std::vector<std::uint8_t> found(probe.size());
  auto hits = db->lookup("users", dim, probe, out, found);
  ASSERT_TRUE(hits.has_value()) << hits.error().to_string();
  EXPECT_EQ(*hits, 2u);
  EXPECT_EQ(found, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[dim + 3], 499.75f);
  EXPECT_EQ(*db->size("users"), 500u);
  auto none = db->lookup("other", dim, probe, out, found);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(*none, 0u);
}

TEST_P(volatile_db_test, insert_overwrites_and_partitions_follow_xxh64) {
  vdb_options o;
  o.partitions = 4;
  auto db = make(o);
  ASSERT_TRUE(db);
  const auto keys = range_keys(0, 400);
  ASSERT_TRUE(db->insert("t", dim, keys, values_for(keys)));
  ASSERT_TRUE(db->insert("t", dim, keys, values_for(keys, 1000)));
  std::vector<std::uint64_t> want(4, 0);
  for (cache_key k : keys) ++want[partition_of(k, 4)];
  for (std::uint32_t p = 0; p < 4; ++p) {
    EXPECT_EQ(*db->partition_size("t", p), want[p]) << "partition " << p;
    EXPECT_GT(want[p], 50u);  // XXH64 spreads 400 keys over 4 partitions
  }
  std::vector<float> out(dim);
  std::vector<std::uint8_t> found(1);
  ASSERT_TRUE(db->lookup("t", dim, std::vector<cache_key>{9}, out, found).has_value());
  EXPECT_EQ(out[0], 1009.0f);
}

TEST_P(volatile_db_test, evict_oldest_prunes_to_the_resolution_target_keeping_recent_keys) {
  // 105 entries -> 55: exactly the 50 cold keys go.
  auto db = make({.partitions = 1, .overflow_margin = 100, .overflow_resolution = 0.55});
  ASSERT_TRUE(db);
  const auto old_keys = range_keys(0, 60);
  ASSERT_TRUE(db->insert("t", dim, old_keys, values_for(old_keys)));
  const auto hot = range_keys(0, 10);  // touch 10 old keys so they are recent
  std::vector<float> out(hot.size() * dim);
  std::vector<std::uint8_t> found(hot.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(db->lookup("t", dim, hot, out, found).has_value());
  db->flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto new_keys = range_keys(1000, 1045);  // 105 entries > margin 100
  ASSERT_TRUE(db->insert("t", dim, new_keys, values_for(new_keys)));
  EXPECT_EQ(*db->size("t"), 55u);
  std::vector<float> o2(new_keys.size() * dim);
  std::vector<std::uint8_t> f2(new_keys.size());
  EXPECT_EQ(*db->lookup("t", dim, new_keys, o2, f2), new_keys.size());
  EXPECT_EQ(*db->lookup("t", dim, hot, out, found), hot.size());
}

TEST_P(volatile_db_test, evict_least_used_keeps_frequently_read_keys) {
  auto db = make({.partitions = 1,
                  .overflow_margin = 50,
                  .overflow_resolution = 0.4,
                  .policy = eviction_policy::evict_least_used});
  ASSERT_TRUE(db);
  const auto keys = range_keys(0, 50);
  ASSERT_TRUE(db->insert("t", dim, keys, values_for(keys)));
  const auto hot = range_keys(40, 50);
  std::vector<float> out(hot.size() * dim);
  std::vector<std::uint8_t> found(hot.size());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(db->lookup("t", dim, hot, out, found).has_value());
  db->flush();
  const auto more = range_keys(100, 101);
  ASSERT_TRUE(db->insert("t", dim, more, values_for(more)));
  EXPECT_EQ(*db->size("t"), 20u);
  EXPECT_EQ(*db->lookup("t", dim, hot, out, found), hot.size());
}

TEST_P(volatile_db_test, evict_random_holds_the_partition_at_the_target) {
  auto db = make({.partitions = 2,
                  .overflow_margin = 64,
                  .overflow_resolution = 0.5,
                  .policy = eviction_policy::evict_random});
  ASSERT_TRUE(db);
  for (cache_key b = 0; b < 1000; b += 100) {
    const auto keys = range_keys(b, b + 100);
    ASSERT_TRUE(db->insert("t", dim, keys, values_for(keys)));
    for (std::uint32_t p = 0; p < 2; ++p) EXPECT_LE(*db->partition_size("t", p), 64u);
  }
}

TEST_P(volatile_db_test, a_dim_mismatch_and_bad_sizes_are_named_errors) {
  auto db = make({});
  ASSERT_TRUE(db);
  const auto keys = range_keys(0, 3);
  ASSERT_TRUE(db->insert("items", dim, keys, values_for(keys)));
  std::vector<float> out(3 * 8);
  std::vector<std::uint8_t> found(3);
  auto bad = db->lookup("items", 8, keys, out, found);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("'items' holds dim 4"), std::string::npos)
      << bad.error().message();
  const status s = db->insert("items", dim, keys, std::vector<float>(5));
  EXPECT_EQ(s.code(), errc::invalid_argument);
  EXPECT_NE(s.message().find("3 keys need 12 values"), std::string::npos) << s.message();
}

TEST_P(volatile_db_test, a_table_can_have_its_own_partitions_margin_and_policy) {
  vdb_options o;
  o.partitions = 4;
  auto db = make(o);
  ASSERT_TRUE(db);
  vdb_options small;
  small.partitions = 1;
  small.overflow_margin = 10;
  small.overflow_resolution = 0.5;
  ASSERT_TRUE(db->configure_table("small", small));
  small.overflow_resolution = 0;
  EXPECT_NE(db->configure_table("other", small).message().find("vdb table 'other'"),
            std::string::npos);
  const auto keys = range_keys(0, 40);
  ASSERT_TRUE(db->insert("small", dim, keys, values_for(keys)));
  ASSERT_TRUE(db->insert("big", dim, keys, values_for(keys)));
  EXPECT_EQ(*db->size("small"), 5u);
  EXPECT_EQ(*db->size("big"), 40u);
  EXPECT_FALSE(db->partition_size("small", 1).has_value());  // it has one partition
  EXPECT_TRUE(db->partition_size("big", 3).has_value());
}

INSTANTIATE_TEST_SUITE_P(backends, volatile_db_test, ::testing::Values("hash_map", "redis"),
                         [](const auto& info) { return info.param; });

TEST(vdb_options_test, validation_and_policy_names) {
  vdb_options o;
  o.overflow_resolution = 1.5;
  EXPECT_NE(validate(o).message().find("overflow_resolution=1.5"), std::string::npos);
  for (auto p : {eviction_policy::evict_oldest, eviction_policy::evict_least_used,
                 eviction_policy::evict_random}) {
    EXPECT_EQ(*parse_eviction_policy(to_string(p)), p);
  }
  EXPECT_FALSE(parse_eviction_policy("lru").has_value());
}

TEST(redis_vdb_test, a_corrupt_stored_dim_is_a_named_error_not_a_crash) {
  auto redis = testing::redis_server::start();
  ASSERT_TRUE(redis.has_value()) << redis.error().to_string();
  auto raw = std::move(*redis_connection::connect("127.0.0.1", (*redis)->port()));
  ASSERT_TRUE(raw.command({"SET", "spindle:t:dim", "four"}).has_value());
  auto db = make_redis_vdb({}, "127.0.0.1", (*redis)->port());
  ASSERT_TRUE(db.has_value());
  std::vector<float> out(4);
  std::vector<std::uint8_t> found(1);
  auto r = (*db)->lookup("t", 4, std::vector<cache_key>{1}, out, found);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::corrupt_data);
  EXPECT_NE(r.error().message().find("stored dim 'four'"), std::string::npos)
      << r.error().message();
}

// Redis restarts (empty): the VDB reconnects by itself with backoff, and new
// inserts land in the new server (before: every call failed with "Connection
// reset by peer" forever and DBSIZE stayed 0).
TEST(redis_vdb_test, the_vdb_reconnects_after_redis_restarts_and_refills) {
  auto redis = testing::redis_server::start();
  ASSERT_TRUE(redis.has_value()) << redis.error().to_string();
  auto db = make_redis_vdb({}, "127.0.0.1", (*redis)->port());
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  const std::vector<cache_key> keys{1, 2, 3};
  const std::vector<float> values(3 * 4, 0.5f);
  ASSERT_TRUE((*db)->insert("t", 4, keys, values).is_ok());
  ASSERT_TRUE((*redis)->restart().is_ok());
  std::vector<float> out(12);
  std::vector<std::uint8_t> found(3);
  bool back = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!back && std::chrono::steady_clock::now() < until) {
    back = (*db)->lookup("t", 4, keys, out, found).has_value();
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(back) << "the VDB never reconnected";
  EXPECT_EQ(found, (std::vector<std::uint8_t>{0, 0, 0}));  // a fresh server: empty
  ASSERT_TRUE((*db)->insert("t", 4, keys, values).is_ok());
  ASSERT_TRUE((*db)->lookup("t", 4, keys, out, found).has_value());
  EXPECT_EQ(found, (std::vector<std::uint8_t>{1, 1, 1}));
  auto raw = redis_connection::connect("127.0.0.1", (*redis)->port());
  ASSERT_TRUE(raw.has_value());
  EXPECT_GT(raw->command({"DBSIZE"})->integer(), 0);
}

TEST(redis_vdb_test, an_unreachable_server_is_a_named_error) {
  const int port = testing::free_loopback_port();
  auto db = make_redis_vdb({}, "127.0.0.1", port);
  ASSERT_FALSE(db.has_value());
  EXPECT_EQ(db.error().code(), errc::unavailable);
  EXPECT_NE(db.error().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

}  // namespace
}  // namespace spindle::hps
