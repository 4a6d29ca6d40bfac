// The persistent DB (RocksDB in a temp directory) and the lookup session over
// the three levels: Algorithm 1's sync/async switch, dedup, defaults, VDB
// filling, refresh after updates, and the PDB answering when Redis dies.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/npy.hpp"
#include "core/safetensors.hpp"
#include "hps/lookup_session.hpp"
#include "hps/warm_up.hpp"
#include "tests/graph/test_util.hpp"
#include "tests/support/file_bytes.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle::hps {
namespace {

namespace fs = std::filesystem;
constexpr std::uint32_t dim = 4;
constexpr std::uint64_t rows = 2000;

fs::path temp_dir(const std::string& name) { return graph::testing::temp_dir(name); }

std::vector<float> table_values(float version = 0) {
  std::vector<float> v(rows * dim);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint32_t d = 0; d < dim; ++d) v[r * dim + d] = float(r) + version + 0.5f * d;
  }
  return v;
}

TEST(persistent_db_test, tables_are_column_families_that_survive_reopening) {
  const auto dir = temp_dir("pdb");
  {
    auto db = persistent_db::open((dir / "db").string());
    ASSERT_TRUE(db.has_value()) << db.error().to_string();
    ASSERT_TRUE((*db)->bulk_load("users", table_values(), dim));
    ASSERT_TRUE((*db)->create_table("items", 8));
    EXPECT_EQ((*db)->create_table("items", 4).code(), errc::invalid_argument);
  }
  auto db = persistent_db::open((dir / "db").string(), /*read_only=*/true);
  ASSERT_TRUE(db.has_value()) << db.error().to_string();
  EXPECT_EQ((*db)->tables(), (std::vector<std::string>{"items", "users"}));
  EXPECT_EQ(*(*db)->table_dim("items"), 8u);
  std::vector<cache_key> keys = {0, 1999, 2000};
  std::vector<float> out(keys.size() * dim);
  std::vector<std::uint8_t> found(keys.size());
  auto hits = (*db)->lookup("users", keys, out, found);
  ASSERT_TRUE(hits.has_value()) << hits.error().to_string();
  EXPECT_EQ(*hits, 2u);
  EXPECT_EQ(found, (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_EQ(out[dim + 1], 1999.5f);
  auto missing = (*db)->lookup("nope", keys, out, found);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("no table 'nope'"), std::string::npos);
  fs::remove_all(dir);
}

TEST(persistent_db_test, bulk_loads_npy_and_safetensors_and_names_bad_inputs) {
  const auto dir = temp_dir("pdb-load");
  const auto v = table_values(7);
  ASSERT_TRUE(write_npy((dir / "t.npy").string(), dtype::f32,
                        {std::int64_t(rows), std::int64_t(dim)}, v.data())
                  .has_value());
  ASSERT_TRUE(write_safetensors((dir / "w.safetensors").string(),
                                {{"emb_l.0.weight", {std::int64_t(rows), std::int64_t(dim)}, v}}));
  auto db = persistent_db::open((dir / "db").string());
  ASSERT_TRUE(db.has_value());
  ASSERT_TRUE((*db)->bulk_load_npy("a", (dir / "t.npy").string()));
  ASSERT_TRUE(
      (*db)->bulk_load_safetensors("b", (dir / "w.safetensors").string(), "emb_l.0.weight"));
  for (const char* t : {"a", "b"}) {
    std::vector<float> out(dim);
    std::vector<std::uint8_t> found(1);
    ASSERT_EQ(*(*db)->lookup(t, std::vector<cache_key>{123}, out, found), 1u);
    EXPECT_EQ(out[0], 130.0f);
  }
  const status missing =
      (*db)->bulk_load_safetensors("c", (dir / "w.safetensors").string(), "emb_l.9.weight");
  EXPECT_NE(missing.message().find("no tensor 'emb_l.9.weight'"), std::string::npos)
      << missing.message();
  ASSERT_TRUE(write_npy((dir / "flat.npy").string(), dtype::f32, {8}, v.data()).has_value());
  const status flat = (*db)->bulk_load_npy("d", (dir / "flat.npy").string());
  EXPECT_NE(flat.message().find("flat.npy: embedding table must be 2-D"), std::string::npos)
      << flat.message();
  fs::remove_all(dir);
}

struct three_levels {
  fs::path dir;
  std::unique_ptr<persistent_db> pdb;
  std::unique_ptr<volatile_db> vdb;
  std::unique_ptr<lookup_session> session;

  explicit three_levels(double threshold, std::unique_ptr<volatile_db> v = nullptr) {
    dir = temp_dir("session");
    pdb = std::move(*persistent_db::open((dir / "db").string()));
    EXPECT_TRUE(pdb->bulk_load("t", table_values(), dim));
    vdb = v ? std::move(v) : std::move(*make_hash_map_vdb({}));
    table_options t{"t", dim, rows, 0.1, threshold, -1.0f, 2};
    session = std::move(*lookup_session::create({t}, vdb.get(), pdb.get()));
  }
  ~three_levels() {
    session.reset();
    pdb.reset();
    fs::remove_all(dir);
  }
};

TEST(lookup_session_test, below_the_threshold_misses_are_fetched_synchronously) {
  three_levels h(1.0);
  std::vector<cache_key> keys = {5, 9, 5, 1234};
  std::vector<float> out(keys.size() * dim);
  auto r = h.session->lookup(0, keys, out);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_TRUE(r->synchronous);
  EXPECT_EQ(r->unique_keys, 3u);
  EXPECT_EQ(r->l1_misses, 3u);
  EXPECT_EQ(r->hit_rate, 0.0);
  EXPECT_EQ(r->from_pdb, 3u);
  EXPECT_EQ(out[2 * dim], 5.0f);
  EXPECT_EQ(out[3 * dim + 1], 1234.5f);
  auto again = h.session->lookup(0, keys, out);
  EXPECT_EQ(again->hit_rate, 1.0);
  EXPECT_FALSE(again->synchronous);
  EXPECT_EQ(*h.vdb->size("t"), 3u);  // PDB rows went into the VDB too
}

// A corrupted RocksDB block: the call needing a row in it fails (corrupt data:
// not worth a retry elsewhere; naming the table) instead of answering a default vector with status ok, and
// the table's misses stay synchronous until the PDB reads again.
TEST(lookup_session_test, a_corrupted_pdb_block_fails_the_call_instead_of_answering) {
  const fs::path dir = temp_dir("corrupt_pdb");
  {
    auto db = persistent_db::open((dir / "db").string());
    ASSERT_TRUE(db.has_value());
    ASSERT_TRUE((*db)->bulk_load("t", table_values(), dim));
  }
  std::size_t flipped = 0;
  for (const auto& e : fs::directory_iterator(dir / "db")) {
    if (e.path().extension() != ".sst" || fs::file_size(e.path()) < 4096) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    for (std::streamoff at = 64; at < 64 + 64; ++at)  // inside the first data block
      testing::flip_byte(f, at, 0x5a);
    ++flipped;
  }
  ASSERT_GT(flipped, 0u) << "no table file to damage";
  auto pdb = persistent_db::open((dir / "db").string());
  ASSERT_TRUE(pdb.has_value()) << pdb.error().to_string();
  auto vdb = std::move(*make_hash_map_vdb({}));
  table_options t{"t", dim, rows, 0.1, /*threshold=*/0.0, -1.0f, 2};  // misses asynchronous
  auto session = std::move(*lookup_session::create({t}, vdb.get(), pdb->get()));
  std::vector<cache_key> keys = {0, 1, 2, 3};  // the first rows: the damaged block
  std::vector<float> out(keys.size() * dim);
  auto first = session->lookup(0, keys, out);  // asynchronous: defaults now, by design
  ASSERT_TRUE(first.has_value());
  for (int i = 0; i < 100 && session->stats(0).pdb_errors == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(session->stats(0).pdb_errors, 1u) << "the damaged block was read without an error";
  auto again = session->lookup(0, keys, out);
  ASSERT_FALSE(again.has_value()) << "answered from a block RocksDB could not read";
  EXPECT_EQ(again.error().code(), errc::corrupt_data);
  EXPECT_NE(again.error().message().find("hps table 't': the persistent db could not be read"),
            std::string::npos) << again.error().to_string();
  session.reset();
  pdb->reset();
  fs::remove_all(dir);
}

// Warm-up at start: every PDB row goes into the VDB, so the first batch's misses
// come from memory, not RocksDB; an L1 that holds the whole table is filled too.
TEST(lookup_session_test, warm_up_fills_the_vdb_and_an_l1_that_holds_the_table) {
  three_levels h(1.0);
  auto reports = warm_up(*h.session, *h.pdb, h.vdb.get(), 333);
  ASSERT_TRUE(reports.has_value()) << reports.error().to_string();
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_EQ((*reports)[0].to_vdb, rows);
  EXPECT_EQ((*reports)[0].to_l1, 0u);  // cache_fraction 0.1: hot rows are not known
  EXPECT_EQ(*h.vdb->size("t"), rows);
  std::vector<cache_key> keys = {5, 9, 1234};
  std::vector<float> out(keys.size() * dim);
  auto r = h.session->lookup(0, keys, out);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from_vdb, 3u);
  EXPECT_EQ(r->from_pdb, 0u);
  EXPECT_EQ(out[2 * dim + 1], 1234.5f);
  // A cache as large as the table is filled: every key hits at once.
  auto vdb = std::move(*make_hash_map_vdb({}));
  table_options whole{"t", dim, rows, 1.0, 1.0, -1.0f, 2};
  auto session = std::move(*lookup_session::create({whole}, vdb.get(), h.pdb.get()));
  reports = warm_up(*session, *h.pdb, nullptr);
  ASSERT_TRUE(reports.has_value());
  EXPECT_EQ((*reports)[0].to_l1, rows);
  std::vector<cache_key> all;
  for (std::uint64_t k = 0; k < rows; k += 7) all.push_back(k);
  out.resize(all.size() * dim);
  r = session->lookup(0, all, out);
  ASSERT_TRUE(r.has_value());
  EXPECT_GT(r->hit_rate, 0.95);  // set-associative: a few rows may share a full set
  EXPECT_EQ(out[dim * 1], 7.0f);
}

TEST(lookup_session_test, above_the_threshold_misses_get_defaults_now_and_values_later) {
  three_levels h(0.0);
  std::vector<cache_key> keys = {1, 2, 3};
  std::vector<float> out(keys.size() * dim);
  auto r = h.session->lookup(0, keys, out);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->synchronous);
  EXPECT_EQ(r->defaulted, 3u);
  EXPECT_EQ(out[0], -1.0f);
  h.session->wait_idle();
  r = h.session->lookup(0, keys, out);
  EXPECT_EQ(r->l1_misses, 0u);
  EXPECT_EQ(out[dim], 2.0f);
}

TEST(lookup_session_test, the_hit_rate_threshold_switches_modes_during_warm_up) {
  three_levels h(0.5);
  std::mt19937_64 rng(3);
  std::vector<cache_key> keys(64);
  std::vector<float> out(keys.size() * dim);
  int sync = 0, async = 0;
  for (int i = 0; i < 60; ++i) {
    for (auto& k : keys) k = rng() % 100;  // 100 hot keys fit the 200-slot cache
    auto r = h.session->lookup(0, keys, out);
    ASSERT_TRUE(r.has_value());
    (r->synchronous ? sync : async)++;
    h.session->wait_idle();
  }
  EXPECT_GE(sync, 1);
  EXPECT_GT(async, 50);
  const auto s = h.session->stats(0);
  EXPECT_EQ(s.sync_lookups + s.async_lookups, 60u);
}

TEST(lookup_session_test, keys_found_nowhere_get_the_default_vector) {
  three_levels h(1.0);
  std::vector<cache_key> keys = {rows + 5};
  std::vector<float> out(dim, 0);
  auto r = h.session->lookup(0, keys, out);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->defaulted, 1u);
  EXPECT_EQ(out[3], -1.0f);
  EXPECT_FALSE(h.session->lookup(0, keys, std::span<float>(out).first(2)).has_value());
  EXPECT_FALSE(h.session->table_index("missing").has_value());
}

TEST(lookup_session_test, refresh_brings_updated_vectors_into_the_cache) {
  three_levels h(1.0);
  std::vector<cache_key> keys = {10, 11};
  std::vector<float> out(keys.size() * dim);
  ASSERT_TRUE(h.session->lookup(0, keys, out).has_value());
  std::vector<float> fresh(keys.size() * dim, 99.0f);
  ASSERT_TRUE(h.pdb->insert("t", keys, fresh));
  ASSERT_TRUE(h.vdb->insert("t", dim, keys, fresh));
  ASSERT_TRUE(h.session->lookup(0, keys, out).has_value());
  EXPECT_EQ(out[0], 10.0f);  // L1 still holds the old vector
  auto n = h.session->refresh(0);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 2u);
  ASSERT_TRUE(h.session->lookup(0, keys, out).has_value());
  EXPECT_EQ(out[0], 99.0f);
  EXPECT_EQ(out[dim + 3], 99.0f);
}

TEST(lookup_session_test, the_pdb_answers_when_the_redis_vdb_dies) {
  auto redis = testing::redis_server::start();
  ASSERT_TRUE(redis.has_value()) << redis.error().to_string();
  auto vdb = make_redis_vdb({}, "127.0.0.1", (*redis)->port());
  ASSERT_TRUE(vdb.has_value());
  three_levels h(1.0, std::move(*vdb));
  std::vector<cache_key> keys = {1, 2};
  std::vector<float> out(keys.size() * dim);
  auto r = h.session->lookup(0, keys, out);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from_pdb, 2u);
  std::vector<float> three(3 * dim);
  r = h.session->lookup(0, std::vector<cache_key>{1, 2, 3}, three);
  redis->reset();  // the VDB's server is gone
  std::vector<cache_key> cold = {700, 701};
  r = h.session->lookup(0, cold, out);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(r->from_pdb, 2u);
  EXPECT_EQ(out[dim], 701.0f);
  EXPECT_GE(h.session->stats(0).vdb_errors, 1u);
}

}  // namespace
}  // namespace spindle::hps
