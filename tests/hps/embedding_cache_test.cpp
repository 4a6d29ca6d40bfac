// The HPS L1 cache: probe logic, Algorithms 2-4 semantics, LRU eviction, Dump,
// named errors, a randomized comparison with a reference model, and several
// threads hammering overlapping keys.
#include "hps/cache/embedding_cache.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "gpu/device.hpp"
#include "hps/cache/device_cache.hpp"
#include "hps/cache/replicated_cache.hpp"
#include "hps/lookup_session.hpp"

namespace spindle::hps {
namespace {

constexpr std::uint32_t dim = 8;

std::vector<float> vec_of(cache_key k, std::uint32_t version) {
  return std::vector<float>(dim, float(k * 1000 + version));
}

std::unique_ptr<embedding_cache> make_cache(std::uint64_t capacity, std::uint32_t slabs = 2) {
  auto c = embedding_cache::create({capacity, dim, slabs});
  EXPECT_TRUE(c.has_value());
  return std::move(*c);
}

TEST(slab_probe_test, decides_hit_before_empty_and_next_when_full) {
  EXPECT_EQ(gpu::decide({0b0100, 0b1000}).step, gpu::probe_step::hit);
  EXPECT_EQ(gpu::decide({0b0100, 0b1000}).lane, 2u);
  EXPECT_EQ(gpu::decide({0, 0b1000}).step, gpu::probe_step::empty);
  EXPECT_EQ(gpu::decide({0, 0b1000}).lane, 3u);
  EXPECT_EQ(gpu::decide({0, 0}).step, gpu::probe_step::next);
  std::vector<gpu::cache_key> slab(32, gpu::empty_key);
  slab[0] = 5;
  slab[7] = 9;
  const auto m = gpu::scan_slab(slab.data(), 9);
  EXPECT_EQ(m.hit, 1u << 7);
  EXPECT_EQ(m.empty, 0xffffffffu & ~1u & ~(1u << 7));
  const std::uint64_t counters[4] = {7, 3, 3, 9};
  EXPECT_EQ(gpu::lru_slot(counters, 4), 1u);
}

TEST(slab_probe_test, the_prefix_scan_decides_like_the_two_ballots) {
  std::mt19937_64 rng(9);
  std::vector<gpu::cache_key> slab(32);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::uint32_t filled = rng() % 33;  // occupied slots form a prefix
    for (std::uint32_t i = 0; i < 32; ++i) slab[i] = i < filled ? rng() % 64 : gpu::empty_key;
    const gpu::cache_key q = rng() % 64;
    const auto full = gpu::decide(gpu::scan_slab(slab.data(), q));
    const auto fast = gpu::scan_prefix(slab.data(), q);
    ASSERT_EQ(full.step, fast.step) << trial;
    ASSERT_EQ(full.lane, fast.lane) << trial;
  }
}

TEST(embedding_cache_test, rounds_capacity_to_whole_slab_sets) {
  auto c = make_cache(100);
  EXPECT_EQ(c->slots_per_set(), 64u);
  EXPECT_EQ(c->num_sets(), 2u);
  EXPECT_EQ(c->capacity(), 128u);
  EXPECT_FALSE(embedding_cache::create({0, dim, 2}).has_value());
  EXPECT_FALSE(embedding_cache::create({10, 0, 2}).has_value());
  EXPECT_FALSE(embedding_cache::create({10, dim, 0}).has_value());
}

TEST(embedding_cache_test, query_reports_misses_with_positions_then_hits_after_replace) {
  auto c = make_cache(1024);
  std::vector<cache_key> keys = {10, 20, 30};
  std::vector<float> out(keys.size() * dim);
  cache_misses m;
  ASSERT_TRUE(c->query(keys, out, m));
  EXPECT_EQ(m.keys, keys);
  EXPECT_EQ(m.positions, (std::vector<std::uint32_t>{0, 1, 2}));
  std::vector<float> v = vec_of(20, 1);
  ASSERT_TRUE(c->replace(std::vector<cache_key>{20}, v));
  ASSERT_TRUE(c->query(keys, out, m));
  EXPECT_EQ(m.keys, (std::vector<cache_key>{10, 30}));
  EXPECT_EQ(m.positions, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(out[dim], 20001.0f);
  EXPECT_EQ(c->size(), 1u);
}

TEST(embedding_cache_test, replace_never_overwrites_and_update_touches_only_present_keys) {
  auto c = make_cache(1024);
  ASSERT_TRUE(c->replace(std::vector<cache_key>{7}, vec_of(7, 1)));
  ASSERT_TRUE(c->replace(std::vector<cache_key>{7}, vec_of(7, 2)));  // ignored
  std::vector<float> out(dim);
  cache_misses m;
  ASSERT_TRUE(c->query(std::vector<cache_key>{7}, out, m));
  EXPECT_EQ(out[0], 7001.0f);
  std::vector<float> both = vec_of(7, 3);
  const auto v8 = vec_of(8, 3);
  both.insert(both.end(), v8.begin(), v8.end());
  auto updated = c->update(std::vector<cache_key>{7, 8}, both);
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(*updated, 1u);
  ASSERT_TRUE(c->query(std::vector<cache_key>{7, 8}, std::span<float>(both), m));
  EXPECT_EQ(both[0], 7003.0f);
  EXPECT_EQ(m.keys, (std::vector<cache_key>{8}));
  EXPECT_EQ(c->size(), 1u);
}

TEST(embedding_cache_test, a_full_set_evicts_its_least_recently_used_slot) {
  auto c = make_cache(64);  // one set of 2 slabs
  std::vector<cache_key> keys(64);
  std::vector<float> values;
  for (cache_key k = 0; k < 64; ++k) {
    keys[k] = k;
    const auto v = vec_of(k, 0);
    values.insert(values.end(), v.begin(), v.end());
  }
  ASSERT_TRUE(c->replace(keys, values));
  EXPECT_EQ(c->size(), 64u);
  std::vector<cache_key> recent(keys.begin() + 1, keys.end());  // all but key 0
  std::vector<float> out(recent.size() * dim);
  cache_misses m;
  ASSERT_TRUE(c->query(recent, out, m));
  EXPECT_TRUE(m.keys.empty());
  ASSERT_TRUE(c->replace(std::vector<cache_key>{1000}, vec_of(1000, 0)));
  EXPECT_EQ(c->size(), 64u);
  std::vector<float> two(2 * dim);
  ASSERT_TRUE(c->query(std::vector<cache_key>{0, 1000}, two, m));
  EXPECT_EQ(m.keys, (std::vector<cache_key>{0}));  // key 0 was the LRU victim
}

TEST(embedding_cache_test, dump_lists_exactly_the_cached_keys) {
  auto c = make_cache(4096);
  std::set<cache_key> want;
  std::vector<cache_key> keys;
  std::vector<float> values;
  for (cache_key k = 100; k < 400; k += 3) {
    keys.push_back(k);
    want.insert(k);
    const auto v = vec_of(k, 0);
    values.insert(values.end(), v.begin(), v.end());
  }
  ASSERT_TRUE(c->replace(keys, values));
  std::vector<cache_key> dumped;
  c->dump(0, c->num_sets() / 2, dumped);
  c->dump(c->num_sets() / 2, c->num_sets(), dumped);
  EXPECT_EQ(std::set<cache_key>(dumped.begin(), dumped.end()), want);
  EXPECT_EQ(dumped.size(), want.size());
}

TEST(embedding_cache_test, bad_batches_are_named_errors) {
  auto c = make_cache(64);
  std::vector<float> out(dim);
  cache_misses m;
  const status s = c->query(std::vector<cache_key>{gpu::empty_key}, out, m);
  EXPECT_EQ(s.code(), errc::invalid_argument);
  EXPECT_NE(s.message().find("keys[0]"), std::string::npos) << s.message();
  const status r = c->replace(std::vector<cache_key>{1, 2}, out);
  EXPECT_EQ(r.code(), errc::invalid_argument);
  EXPECT_NE(r.message().find("2 keys need 16 values"), std::string::npos) << r.message();
}

// A plain model of Algorithms 2-4: per set, key -> (counter, version). Every op is
// preceded by an empty Query so counters never tie and the LRU victim is unique.
struct reference_cache {
  std::uint64_t sets, per_set, g = 0;
  std::vector<std::map<cache_key, std::pair<std::uint64_t, std::uint32_t>>> s;
  reference_cache(std::uint64_t sets_, std::uint64_t per_set_)
      : sets(sets_), per_set(per_set_), s(sets_) {}
  auto& set_for(cache_key k) { return s[gpu::set_of(k, sets)]; }
  std::optional<std::uint32_t> query(cache_key k) {
    ++g;
    auto& st = set_for(k);
    auto it = st.find(k);
    if (it == st.end()) return std::nullopt;
    it->second.first = g;
    return it->second.second;
  }
  void replace(cache_key k, std::uint32_t version) {
    auto& st = set_for(k);
    if (auto it = st.find(k); it != st.end()) {
      it->second.first = g;
      return;
    }
    if (st.size() == per_set) {
      auto victim = st.begin();
      for (auto it = st.begin(); it != st.end(); ++it) {
        if (it->second.first < victim->second.first) victim = it;
      }
      st.erase(victim);
    }
    st[k] = {g, version};
  }
  void update(cache_key k, std::uint32_t version) {
    auto& st = set_for(k);
    if (auto it = st.find(k); it != st.end()) it->second.second = version;
  }
};

// Row-wise int8 slots (table_precision "int8"): a quarter of float32's bytes
// at dim 128, each value read back within half its row's step, updates
// overwrite, a NaN row is not cached, and other widths are refused by name.
TEST(embedding_cache_test, int8_slots_hold_rows_in_a_quarter_of_the_bytes) {
  constexpr std::uint32_t wide = 128;
  auto c8 = embedding_cache::create({640, wide, 2, 8});
  auto c32 = embedding_cache::create({640, wide, 2});
  ASSERT_TRUE(c8.has_value() && c32.has_value());
  EXPECT_EQ((*c8)->capacity(), (*c32)->capacity());
  EXPECT_EQ((*c8)->vector_bytes(), (*c8)->capacity() * (wide + 8));
  EXPECT_EQ((*c32)->vector_bytes(), (*c32)->capacity() * wide * 4);
  std::mt19937 rng(5);
  std::normal_distribution<float> value(0.0f, 0.05f);
  const std::vector<cache_key> keys{1, 2, 77};
  std::vector<float> rows(keys.size() * wide);
  for (auto& v : rows) v = value(rng);
  ASSERT_TRUE((*c8)->replace(keys, rows));
  std::vector<float> out(rows.size());
  cache_misses misses;
  ASSERT_TRUE((*c8)->query(keys, out, misses));
  EXPECT_TRUE(misses.keys.empty());
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const auto [lo, hi] = std::minmax_element(rows.begin() + r * wide, rows.begin() + (r + 1) * wide);
    const float step = (*hi - *lo) / 255.0f;
    for (std::size_t c = 0; c < wide; ++c)
      ASSERT_NEAR(out[r * wide + c], rows[r * wide + c], step / 2 * 1.001f) << r << " " << c;
  }
  std::vector<float> doubled(rows);
  for (auto& v : doubled) v *= 2;
  ASSERT_EQ(*(*c8)->update(keys, doubled), 3u);
  ASSERT_TRUE((*c8)->query(keys, out, misses));
  EXPECT_NEAR(out[5], doubled[5], 0.01f);
  std::vector<float> nan_row(wide, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE((*c8)->replace(std::vector<cache_key>{9}, nan_row));
  std::vector<float> one(wide);
  ASSERT_TRUE((*c8)->query(std::vector<cache_key>{9}, one, misses));
  EXPECT_EQ(misses.keys.size(), 1u);  // not cached: it stays a miss
  auto c16 = embedding_cache::create({64, wide, 2, 16});
  ASSERT_FALSE(c16.has_value());
  EXPECT_NE(c16.error().message().find("16-bit vectors are not built"), std::string::npos);
}

TEST(embedding_cache_test, matches_a_reference_model_over_random_operations) {
  auto c = make_cache(256);
  reference_cache ref(c->num_sets(), c->slots_per_set());
  std::mt19937_64 rng(42);
  std::vector<float> out(dim);
  cache_misses m;
  for (int op = 0; op < 30000; ++op) {
    ASSERT_TRUE(c->query({}, std::span<float>(), m));
    ++ref.g;
    const cache_key k = rng() % 700;
    const std::uint32_t version = static_cast<std::uint32_t>(op % 997);
    switch (rng() % 3) {
      case 0: {
        ASSERT_TRUE(c->query(std::vector<cache_key>{k}, out, m));
        const auto want = ref.query(k);
        ASSERT_EQ(m.keys.empty(), want.has_value()) << "op " << op << " key " << k;
        if (want) {
          ASSERT_EQ(out[0], float(k * 1000 + *want)) << "op " << op;
        }
        break;
      }
      case 1:
        ASSERT_TRUE(c->replace(std::vector<cache_key>{k}, vec_of(k, version)));
        ref.replace(k, version);
        break;
      default:
        ASSERT_TRUE(c->update(std::vector<cache_key>{k}, vec_of(k, version)).has_value());
        ref.update(k, version);
    }
  }
  std::uint64_t ref_size = 0;
  for (const auto& st : ref.s) ref_size += st.size();
  EXPECT_EQ(c->size(), ref_size);
}

// Updaters own disjoint keys and raise versions; readers and replacers overlap
// them. Nothing is evicted (ample capacity), so the final versions must all be
// the last ones written, every read vector is whole, and versions never go back.
TEST(embedding_cache_concurrency_test, no_lost_updates_or_torn_vectors) {
  constexpr cache_key n = 1000;
  constexpr std::uint32_t rounds = 150;
  auto c = make_cache(64 * 64);
  std::vector<cache_key> all(n);
  std::vector<float> init;
  for (cache_key k = 0; k < n; ++k) {
    all[k] = k;
    const auto v = vec_of(k, 0);
    init.insert(init.end(), v.begin(), v.end());
  }
  ASSERT_TRUE(c->replace(all, init));
  ASSERT_EQ(c->size(), n);
  std::atomic<int> failures{0};
  auto updater = [&](cache_key parity) {
    std::vector<cache_key> mine;
    for (cache_key k = parity; k < n; k += 2) mine.push_back(k);
    for (std::uint32_t v = 1; v <= rounds; ++v) {
      std::vector<float> vals;
      for (cache_key k : mine) {
        const auto x = vec_of(k, v);
        vals.insert(vals.end(), x.begin(), x.end());
      }
      if (!c->update(mine, vals).has_value()) ++failures;
    }
  };
  auto reader = [&](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::uint32_t> last(n, 0);
    std::vector<cache_key> batch(64);
    std::vector<float> out(64 * dim);
    cache_misses m;
    for (int it = 0; it < 1500; ++it) {
      for (auto& k : batch) k = rng() % n;
      if (it % 3 == 0) {
        std::vector<float> stale;
        for (cache_key k : batch) {
          const auto x = vec_of(k, 0);
          stale.insert(stale.end(), x.begin(), x.end());
        }
        if (!c->replace(batch, stale)) ++failures;  // present keys: must be ignored
        continue;
      }
      if (!c->query(batch, out, m) || !m.keys.empty()) ++failures;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const float first = out[i * dim];
        for (std::uint32_t d = 1; d < dim; ++d) failures += out[i * dim + d] != first;
        const auto version = static_cast<std::uint32_t>(first) % 1000;
        failures += static_cast<cache_key>(first) / 1000 != batch[i];
        failures += version < last[batch[i]];
        last[batch[i]] = version;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(updater, 0);
  threads.emplace_back(updater, 1);
  threads.emplace_back(reader, 1);
  threads.emplace_back(reader, 2);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<float> out(n * dim);
  cache_misses m;
  ASSERT_TRUE(c->query(all, out, m));
  ASSERT_TRUE(m.keys.empty());
  for (cache_key k = 0; k < n; ++k) ASSERT_EQ(out[k * dim], float(k * 1000 + rounds)) << k;
}

// Under eviction pressure from four threads: capacity is never exceeded, every
// hit returns its own key's whole vector, and Dump agrees with size().
TEST(embedding_cache_concurrency_test, eviction_under_contention_keeps_capacity_and_integrity) {
  auto c = make_cache(256);
  std::atomic<int> failures{0};
  std::atomic<bool> over_capacity{false};
  auto worker = [&](std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<cache_key> batch(32);
    std::vector<float> vals(32 * dim), out(32 * dim);
    cache_misses m;
    for (int it = 0; it < 3000; ++it) {
      for (auto& k : batch) k = rng() % 4096;
      if (it % 2 == 0) {
        for (std::size_t i = 0; i < batch.size(); ++i) {
          const auto x = vec_of(batch[i], static_cast<std::uint32_t>(seed));
          std::copy(x.begin(), x.end(), vals.begin() + i * dim);
        }
        if (!c->replace(batch, vals)) ++failures;
      } else {
        if (!c->query(batch, out, m)) ++failures;
        std::size_t mi = 0;
        for (std::size_t i = 0; i < batch.size(); ++i) {
          if (mi < m.positions.size() && m.positions[mi] == i) {
            ++mi;
            continue;
          }
          for (std::uint32_t d = 0; d < dim; ++d) {
            failures += static_cast<cache_key>(out[i * dim + d]) / 1000 != batch[i];
          }
        }
      }
      if (c->size() > c->capacity()) over_capacity = true;
    }
  };
  std::vector<std::thread> threads;
  for (std::uint64_t s = 1; s <= 4; ++s) threads.emplace_back(worker, s);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_FALSE(over_capacity.load());
  std::vector<cache_key> dumped;
  c->dump(0, c->num_sets(), dumped);
  EXPECT_EQ(dumped.size(), c->size());
  EXPECT_EQ(std::set<cache_key>(dumped.begin(), dumped.end()).size(), dumped.size());
  EXPECT_EQ(c->size(), c->capacity());
}

// HPS's L1 goes to a GPU's memory when one is usable (lookup_session's
// l1_device "auto"); here there is none, so it is the host cache, and asking
// for the device names why it cannot be had.
TEST(embedding_cache, the_l1_lives_on_the_device_only_when_one_is_usable) {
  auto host = make_l1_cache({64, 4, 2}, false);
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ((*host)->where(), "host");
  if (gpu::query_devices().devices.front().kind == gpu::device_kind::cuda) GTEST_SKIP();
  auto dev = make_l1_cache({64, 4, 2}, true);
  ASSERT_FALSE(dev.has_value());
  EXPECT_FALSE(dev.error().message().empty());
  EXPECT_FALSE(make_l1_cache({0, 4, 2}, true).has_value());  // bad options are named first
  session_options o;
  o.l1_device = "cuda";
  auto s = lookup_session::create({{"emb0", 4, 100}}, nullptr, nullptr, o);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("--device cuda"), std::string::npos) << s.error().message();
  o.l1_device = "auto";
  s = lookup_session::create({{"emb0", 4, 100}}, nullptr, nullptr, o);
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_EQ((*s)->cache(0).where(), "host");
  // Replicas on several GPUs need the GPUs (and NCCL); on the host the count is moot.
  o.l1_gpus = 2;
  s = lookup_session::create({{"emb0", 4, 100}}, nullptr, nullptr, o);
  ASSERT_TRUE(s.has_value()) << s.error().to_string();
  EXPECT_EQ((*s)->cache(0).where(), "host");
  auto replicas = replicated_l1_cache::create({64, 4, 2}, 2);
  ASSERT_FALSE(replicas.has_value());
  EXPECT_NE(replicas.error().message().find("2 GPUs"), std::string::npos)
      << replicas.error().message();
  o.l1_gpus = 0;
  s = lookup_session::create({{"emb0", 4, 100}}, nullptr, nullptr, o);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("l1_gpus = 0"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace spindle::hps
