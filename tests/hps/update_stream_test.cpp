// Online updates through Redis Streams with a real redis-server: apply in
// order to the PDB and VDB, dead-letter malformed messages, share work in a
// consumer group, take over a dead consumer's messages, and resume after the
// consumer process is killed (SIGKILL) mid-stream without losing an update.
#include "hps/updates/update_stream.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <filesystem>
#include <limits>

#include "tests/graph/test_util.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle::hps {
namespace {

namespace fs = std::filesystem;
constexpr std::uint32_t dim = 4;

fs::path temp_dir(const std::string& name) { return graph::testing::temp_dir(name); }

std::vector<float> versioned(const std::vector<cache_key>& keys, int version) {
  std::vector<float> v;
  for (cache_key k : keys) {
    for (std::uint32_t d = 0; d < dim; ++d) v.push_back(float(k * 100 + version));
  }
  return v;
}

std::vector<cache_key> key_range(cache_key n) {
  std::vector<cache_key> k(n);
  for (cache_key i = 0; i < n; ++i) k[i] = i;
  return k;
}

struct fixture {
  std::unique_ptr<testing::redis_server> redis = std::move(*testing::redis_server::start());
  fs::path dir;
  std::unique_ptr<persistent_db> pdb;
  explicit fixture(const std::string& name) : dir(temp_dir(name)) {
    pdb = std::move(*persistent_db::open((dir / "db").string()));
    EXPECT_TRUE(pdb->create_table("t", dim));
  }
  ~fixture() {
    pdb.reset();
    fs::remove_all(dir);
  }
  consumer_options options(std::string name) {
    consumer_options o;
    o.consumer = std::move(name);
    o.tables = {"t"};
    o.block_ms = 50;
    return o;
  }
  float pdb_value(cache_key k) {
    std::vector<float> out(dim);
    std::vector<std::uint8_t> found(1);
    EXPECT_TRUE(pdb->lookup("t", std::vector<cache_key>{k}, out, found).has_value());
    return found[0] ? out[0] : -1.0f;
  }
};

TEST(update_stream_test, updates_reach_pdb_and_vdb_in_order) {
  fixture f("order");
  auto producer = update_producer::connect("127.0.0.1", f.redis->port(), "spindle", 100);
  ASSERT_TRUE(producer.has_value());
  const auto keys = key_range(250);
  for (int v = 1; v <= 3; ++v)
    ASSERT_EQ(*producer->publish("t", dim, keys, versioned(keys, v)), 3u);
  auto vdb = std::move(*make_hash_map_vdb({}));
  auto consumer = update_consumer::connect("127.0.0.1", f.redis->port(), f.options("c1"));
  ASSERT_TRUE(consumer.has_value()) << consumer.error().to_string();
  std::vector<std::string> ids;
  for (int i = 0; i < 10 && consumer->stats().applied_messages < 9; ++i) {
    ASSERT_TRUE(consumer
                    ->poll([&](const update_batch& b) {
                      ids.push_back(b.id);
                      return apply_update(b, vdb.get(), f.pdb.get());
                    })
                    .has_value());
  }
  EXPECT_EQ(consumer->stats().applied_messages, 9u);
  EXPECT_EQ(consumer->stats().applied_keys, 750u);
  auto id_order = [](const std::string& id) {  // "ms-seq" -> (ms, seq)
    const auto dash = id.find('-');
    return std::make_pair(std::stoull(id.substr(0, dash)), std::stoull(id.substr(dash + 1)));
  };
  for (std::size_t i = 1; i < ids.size(); ++i) EXPECT_LT(id_order(ids[i - 1]), id_order(ids[i]));
  for (cache_key k : {0, 99, 100, 249}) EXPECT_EQ(f.pdb_value(k), float(k * 100 + 3)) << k;
  std::vector<float> out(dim);
  std::vector<std::uint8_t> found(1);
  ASSERT_EQ(*vdb->lookup("t", dim, std::vector<cache_key>{17}, out, found), 1u);
  EXPECT_EQ(out[0], 1703.0f);
  EXPECT_EQ(*consumer->pending(), 0u);
}

TEST(update_stream_test, malformed_messages_are_dead_lettered_and_the_rest_applied) {
  fixture f("bad");
  const cache_key keys_of_one = 1;
  const float four_floats[4] = {9, 9, 9, 9};
  auto raw = std::move(*redis_connection::connect("127.0.0.1", f.redis->port()));
  const std::string stream = update_stream_name("spindle", "t");
  ASSERT_TRUE(
      raw.command({"XADD", stream, "*", "dim", "4", "keys", "abc", "vectors", ""}).has_value());
  ASSERT_TRUE(raw.command({"XADD", stream, "*", "dim", "zero", "keys", "12345678", "vectors", ""})
                  .has_value());
  // A dim with text after its digits, and one past 2^32 that would wrap to 4:
  // refused, though their keys and vectors fit dim 4.
  const std::string key1(reinterpret_cast<const char*>(&keys_of_one), 8);
  const std::string row(reinterpret_cast<const char*>(four_floats), sizeof four_floats);
  for (const char* dim_text : {"4abc", "4294967300"})
    ASSERT_TRUE(raw.command({"XADD", stream, "*", "dim", dim_text, "keys", key1, "vectors", row})
                    .has_value());
  // A message naming another table than its stream's.
  ASSERT_TRUE(raw.command({"XADD", stream, "*", "table", "other", "dim", "4", "keys", key1,
                           "vectors", row})
                  .has_value());
  auto producer = update_producer::connect("127.0.0.1", f.redis->port());
  const auto keys = key_range(3);
  ASSERT_TRUE(
      producer->publish("t", 8, keys, std::vector<float>(24, 1.0f)).has_value());  // wrong dim
  ASSERT_TRUE(producer->publish("t", dim, keys, versioned(keys, 5)).has_value());
  auto poisoned = versioned(keys, 6);  // one NaN: the whole message is refused
  poisoned[dim + 1] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(producer->publish("t", dim, keys, poisoned).has_value());
  // A key past the table's 3 rows: the whole message is refused, as a call reading it is.
  const std::vector<cache_key> past{1, 3};
  ASSERT_TRUE(producer->publish("t", dim, past, versioned(past, 7)).has_value());
  auto o = f.options("c1");
  o.table_rows = {3};
  auto consumer = update_consumer::connect("127.0.0.1", f.redis->port(), o);
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(
        consumer->poll([&](const update_batch& b) { return apply_update(b, nullptr, f.pdb.get()); })
            .has_value());
  }
  EXPECT_EQ(consumer->stats().rejected, 8u);
  EXPECT_EQ(consumer->stats().applied_messages, 1u);
  EXPECT_EQ(f.pdb_value(2), 205.0f);
  EXPECT_EQ(f.pdb_value(0), 5.0f);  // the poisoned message's finite rows were not written either
  EXPECT_EQ(f.pdb_value(1), 105.0f);  // nor the rows of the message with a key past the table
  EXPECT_EQ(f.pdb_value(3), -1.0f);
  auto dead = raw.command({"XRANGE", stream + ":rejected", "-", "+"});
  ASSERT_TRUE(dead.has_value());
  ASSERT_EQ(dead->elements(), 8u);
  EXPECT_EQ(*consumer->pending(), 0u);
}

TEST(update_stream_test, a_group_shares_work_and_claims_a_dead_consumers_messages) {
  fixture f("group");
  auto producer = update_producer::connect("127.0.0.1", f.redis->port(), "spindle", 10);
  const auto keys = key_range(200);  // 20 messages
  ASSERT_TRUE(producer->publish("t", dim, keys, versioned(keys, 1)).has_value());
  auto o = f.options("dies");
  o.read_count = 5;
  auto dying = update_consumer::connect("127.0.0.1", f.redis->port(), o);
  // It takes 5 messages and fails to apply them (as if it crashed): they stay pending.
  ASSERT_FALSE(dying->poll([](const update_batch&) { return status(errc::io_error, "disk gone"); })
                   .has_value());
  auto ob = f.options("survivor");
  ob.claim_idle_ms = 100;
  auto survivor = update_consumer::connect("127.0.0.1", f.redis->port(), ob);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  for (int i = 0; i < 10 && survivor->stats().applied_messages < 20; ++i) {
    ASSERT_TRUE(
        survivor->poll([&](const update_batch& b) { return apply_update(b, nullptr, f.pdb.get()); })
            .has_value());
  }
  EXPECT_EQ(survivor->stats().applied_messages, 20u);
  EXPECT_GE(survivor->stats().claimed, 1u);
  EXPECT_EQ(*survivor->pending(), 0u);
  EXPECT_EQ(f.pdb_value(199), 19901.0f);
}

TEST(update_stream_test, a_killed_consumer_process_resumes_without_losing_updates) {
  fixture f("crash");
  f.pdb.reset();  // the consumer process owns the database while it runs
  auto producer = update_producer::connect("127.0.0.1", f.redis->port(), "spindle", 50);
  const auto keys = key_range(1000);
  for (int v = 1; v <= 4; ++v)
    ASSERT_TRUE(producer->publish("t", dim, keys, versioned(keys, v)).has_value());
  const std::vector<std::string> argv = {SPINDLE_BINARY,
                                         "hps",
                                         "consume",
                                         "--redis",
                                         f.redis->endpoint(),
                                         "--pdb",
                                         (f.dir / "db").string(),
                                         "--tables",
                                         "t",
                                         "--consumer",
                                         "node-1"};
  auto throttled = argv;
  throttled.insert(throttled.end(), {"--max-keys-per-second", "4000"});
  auto first = child_process::spawn(throttled);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->wait_for("consumer node-1 ready", 20000).has_value());
  int applied = 0;
  while (applied < 20) {  // 20 of 80 messages, then SIGKILL
    auto line = first->wait_for("applied ", 20000);
    ASSERT_TRUE(line.has_value());
    applied = std::stoi(*line);
  }
  first->signal(SIGKILL);
  first->wait();
  auto resumed_argv = argv;
  resumed_argv.insert(resumed_argv.end(), {"--exit-when-idle-ms", "1000"});
  auto second = child_process::spawn(resumed_argv);
  ASSERT_TRUE(second.has_value());
  auto stopped = second->wait_for("stopped: ", 60000);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(second->wait(), 0);
  auto conn = std::move(*redis_connection::connect("127.0.0.1", f.redis->port()));
  auto pending = conn.command({"XPENDING", update_stream_name("spindle", "t"), "spindle-updaters"});
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->element(0)->integer, 0);
  f.pdb = std::move(*persistent_db::open((f.dir / "db").string(), true));
  for (cache_key k = 0; k < 1000; ++k) ASSERT_EQ(f.pdb_value(k), float(k * 100 + 4)) << "key " << k;
}

// Redis restarts under a running `spindle hps consume`: it says so, retries
// with backoff, recreates its group on the new (empty) server and applies the
// updates published after the restart (before: it exited when Redis died).
TEST(update_stream_test, a_consumer_process_survives_a_redis_restart) {
  fixture f("redis_restart");
  f.pdb.reset();
  auto consumer = child_process::spawn({SPINDLE_BINARY, "hps", "consume", "--redis",
                                        f.redis->endpoint(), "--pdb", (f.dir / "db").string(),
                                        "--tables", "t", "--consumer", "node-1"});
  ASSERT_TRUE(consumer.has_value());
  ASSERT_TRUE(consumer->wait_for("consumer node-1 ready", 20000).has_value());
  ASSERT_TRUE(f.redis->restart().is_ok());
  ASSERT_TRUE(consumer->wait_for("redis unavailable", 20000).has_value());
  const auto keys = key_range(100);
  // Publish until the consumer, back on the new server, has applied the updates.
  bool applied = false;
  for (int attempt = 0; attempt < 40 && !applied; ++attempt) {
    auto producer = update_producer::connect("127.0.0.1", f.redis->port(), "spindle", 100);
    ASSERT_TRUE(producer.has_value());
    ASSERT_TRUE(producer->publish("t", dim, keys, versioned(keys, 7)).has_value());
    applied = consumer->wait_for("applied ", 500).has_value();
  }
  EXPECT_TRUE(applied);
  consumer->signal(SIGTERM);
  EXPECT_EQ(consumer->wait(), 0);
  f.pdb = std::move(*persistent_db::open((f.dir / "db").string(), true));
  EXPECT_EQ(f.pdb_value(5), float(5 * 100 + 7));
}

}  // namespace
}  // namespace spindle::hps
