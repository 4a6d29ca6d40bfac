// Levels 2 and 3 of the parameter server (HPS Table 2 analogue): batch insert
// and batch lookup MB/s of the in-process hash-map VDB, a Redis VDB (a real
// redis-server on a free loopback port, started here) and the RocksDB PDB,
// with memcpy of the same bytes as the same-run baseline.
// Usage: hps_storage_bench [keys=200000] [dim=64] [batch=1024]
#include <filesystem>

#include "bench/bench_util.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/synthetic_keys.hpp"
#include "hps/vdb/volatile_db.hpp"
#include "tests/support/redis_server.hpp"

namespace spindle::bench {
namespace {

using hps::table_vector;
using hps::zipf_keys;

using hps::cache_key;

struct rates {
  double insert_mbs = 0, lookup_mbs = 0, hit = 0;
};

template <class Insert, class Lookup>
rates measure(std::uint64_t keys, std::uint32_t dim, std::size_t batch, Insert insert,
              Lookup lookup) {
  std::vector<cache_key> k(batch);
  std::vector<float> v(batch * dim);
  auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t b = 0; b < keys; b += batch) {
    const std::size_t n = std::min<std::uint64_t>(batch, keys - b);
    k.resize(n);
    v.resize(n * dim);
    for (std::size_t i = 0; i < n; ++i) {
      k[i] = b + i;
      table_vector(k[i], dim, v.data() + i * dim);
    }
    insert(k, v);
  }
  rates r;
  r.insert_mbs = double(keys) * dim * 4 / seconds_since(t0) / 1e6;
  zipf_keys z(keys, 1.2, 3);
  std::vector<std::uint8_t> found(batch);
  k.resize(batch);
  v.resize(batch * dim);
  std::uint64_t hits = 0;
  t0 = std::chrono::steady_clock::now();
  for (std::uint64_t b = 0; b < keys; b += batch) {
    for (auto& key : k) key = z.next();
    hits += lookup(k, v, found);
  }
  r.lookup_mbs =
      double(keys / batch * batch + (keys % batch ? batch : 0)) * dim * 4 / seconds_since(t0) / 1e6;
  r.hit = double(hits) / double((keys + batch - 1) / batch * batch);
  return r;
}

rates vdb_rates(hps::volatile_db& db, std::uint64_t keys, std::uint32_t dim,
                std::size_t batch) {
  return measure(
      keys, dim, batch, [&](auto& k, auto& v) { (void)db.insert("t", dim, k, v); },
      [&](auto& k, auto& v, auto& f) { return db.lookup("t", dim, k, v, f).value(); });
}

double memcpy_mbs(std::uint64_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes);
  const auto t0 = std::chrono::steady_clock::now();
  std::memcpy(b.data(), a.data(), bytes);
  return double(bytes) / seconds_since(t0) / 1e6;
}

}  // namespace
}  // namespace spindle::bench

int main(int argc, char** argv) {
  using namespace spindle;
  using namespace spindle::bench;
  const auto keys = arg_or<std::uint64_t>(argc, argv, 1, 200000);
  const auto dim = arg_or<std::uint32_t>(argc, argv, 2, 64);
  const auto batch = arg_or<std::size_t>(argc, argv, 3, 1024);
  setenv("SPINDLE_PROGRESS", "0", 0);
  std::printf("%llu keys x %u floats (%.1f MB), batches of %zu; lookups: Zipf 1.2 over the keys\n",
              (unsigned long long)keys, dim, double(keys) * dim * 4 / 1e6, batch);
  std::printf("baseline memcpy of the same bytes: %.0f MB/s\n\n", memcpy_mbs(keys * dim * 4));
  std::printf(
      "| level | backend | insert MB/s | lookup MB/s | lookup hit rate |\n|---|---|---|---|---|\n");
  hps::vdb_options o;
  o.overflow_margin = keys;  // hold everything: this measures the store, not eviction
  auto hash = std::move(*hps::make_hash_map_vdb(o));
  auto r = vdb_rates(*hash, keys, dim, batch);
  std::printf("| VDB | hash map (16 partitions) | %.0f | %.0f | %.3f |\n", r.insert_mbs,
              r.lookup_mbs, r.hit);
  auto server = testing::redis_server::start();
  if (server) {
    auto redis = hps::make_redis_vdb(o, "127.0.0.1", (*server)->port());
    r = vdb_rates(**redis, keys, dim, batch);
    std::printf("| VDB | Redis (loopback, 16 partitions) | %.0f | %.0f | %.3f |\n", r.insert_mbs,
                r.lookup_mbs, r.hit);
  } else {
    std::printf("| VDB | Redis | %s | | |\n", server.error().to_string().c_str());
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("spindle-storage-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto pdb = std::move(*hps::persistent_db::open((dir / "db").string()));
  (void)pdb->create_table("t", dim);
  r = measure(
      keys, dim, batch, [&](auto& k, auto& v) { (void)pdb->insert("t", k, v); },
      [&](auto& k, auto& v, auto& f) { return pdb->lookup("t", k, v, f).value(); });
  std::printf("| PDB | RocksDB (MultiGet) | %.0f | %.0f | %.3f |\n", r.insert_mbs, r.lookup_mbs,
              r.hit);
  pdb.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
