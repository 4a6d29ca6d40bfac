// The embedding lookup of the hierarchical parameter server (HugeCTR HPS §4.3,
// Algorithm 1): deduplicate a batch's keys, query the L1 cache, and fetch the
// misses from the VDB, then the PDB, synchronously while the cache's hit rate is
// below the table's threshold, or answer default vectors at once and insert in
// the background above it. Also the cache refresh of §6 (Fig. 3 steps 2-5).
// Thread-safe: lookup/refresh may run on many threads; background insertion runs
// on the thread "hps-insert", periodic refresh on "hps-refresh".
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/status.hpp"
#include "hps/cache/embedding_cache.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {

/// Per-table settings (HPS Table 1's knobs).
struct table_options {
  std::string name;
  std::uint32_t dim = 0;
  std::uint64_t rows = 0;           // rows of the full table (sizes the cache)
  double cache_fraction = 0.1;      // L1 slots = ceil(rows * fraction)
  double hit_rate_threshold = 0.8;  // sync insertion below it, async at or above
  float default_value = 0.0f;       // every element of a missed key's default vector
  std::uint32_t slabs_per_set = 2;
  /// The L1's rows: 32 (float32) or 8 (row-wise int8, model.toml table_precision
  /// "int8"); rows fetched from the VDB and PDB (which hold float32) answer
  /// quantised too, so hits and misses answer alike.
  int bits = 32;
};

/// What one lookup did.
struct lookup_report {
  std::uint64_t keys = 0;
  std::uint64_t unique_keys = 0;
  std::uint64_t l1_misses = 0;  // unique keys not in L1
  double hit_rate = 1.0;        // 1 - l1_misses / unique_keys (of the unique keys, not all)
  bool synchronous = false;     // misses were fetched before returning
  std::uint64_t from_vdb = 0;
  std::uint64_t from_pdb = 0;
  std::uint64_t defaulted = 0;  // unique keys answered with the default vector
};

/// Field list for CAF's inspectors (reports cross actors inside replies); a
/// template, so this header needs no CAF.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lookup_report& x) {
  return f(x.keys, x.unique_keys, x.l1_misses, x.hit_rate, x.synchronous, x.from_vdb, x.from_pdb,
           x.defaulted);
}

/// Running totals of a table (for stats and the warm-up curve).
struct table_stats {
  std::uint64_t lookups = 0, unique_keys = 0, l1_misses = 0;
  std::uint64_t sync_lookups = 0, async_lookups = 0, defaulted = 0;
  std::uint64_t vdb_errors = 0, pdb_errors = 0, async_dropped = 0, refreshed = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, table_stats& x) {
  return f(x.lookups, x.unique_keys, x.l1_misses, x.sync_lookups, x.async_lookups, x.defaulted,
           x.vdb_errors, x.pdb_errors, x.async_dropped, x.refreshed);
}

struct session_options {
  std::size_t async_queue_limit = 256;      // pending background insertions; more are dropped
  std::uint32_t refresh_interval_ms = 0;    // 0: refresh only on command
  std::uint64_t refresh_batch_sets = 1024;  // slab sets dumped per refresh step
  /// Where the L1 caches live: "auto" (a GPU's memory when one is usable, as
  /// HPS does; else host memory), "host" or "cuda" (fails without a GPU).
  std::string l1_device = "auto";
  /// With the L1 on GPUs: how many hold a replica (updates broadcast over NCCL).
  int l1_gpus = 1;
};

class lookup_session {
 public:
  /// Builds one L1 cache per table; `vdb` and `pdb` may be null (that level is
  /// skipped) and must outlive the session.
  static expected<std::unique_ptr<lookup_session>> create(std::vector<table_options> tables,
                                                          volatile_db* vdb, persistent_db* pdb,
                                                          session_options options = {});
  ~lookup_session();

  /// Algorithm 1 for `keys` of table `table`; out = [keys x dim].
  expected<lookup_report> lookup(std::size_t table, std::span<const cache_key> keys,
                                 std::span<float> out);
  /// Index of a table by name, or not_found naming it.
  expected<std::size_t> table_index(std::string_view name) const;
  const table_options& table(std::size_t t) const { return tables_[t]->options; }
  std::size_t table_count() const { return tables_.size(); }

  /// Refresh (HPS §6): dump L1's keys set range by set range, look them up in
  /// VDB/PDB and Update L1. Returns how many cached vectors were rewritten.
  expected<std::uint64_t> refresh(std::size_t table);

  /// Live tunable: the hit-rate threshold of a table.
  void set_hit_rate_threshold(std::size_t table, double threshold);
  double hit_rate_threshold(std::size_t table) const { return tables_[table]->threshold.load(); }
  table_stats stats(std::size_t table) const;
  const l1_cache& cache(std::size_t table) const { return *tables_[table]->cache; }
  /// True when table `t`'s L1 has a slot for every row (cache_fraction 1).
  bool l1_holds_every_row(std::size_t t) const;
  /// Writes rows into table `t`'s L1 (warm-up; Algorithm 3's replace).
  status warm_l1(std::size_t t, std::span<const cache_key> keys, std::span<const float> values);
  /// Blocks until every queued background insertion has been applied.
  void wait_idle();

 private:
  struct table_state {
    table_options options;
    std::unique_ptr<l1_cache> cache;
    std::atomic<double> threshold{0.8};
    // The last PDB read failed (a corrupted block, an I/O error): misses are looked
    // up synchronously, so a call needing a row it cannot read fails instead of
    // being answered with default vectors. Cleared by the next good PDB read.
    std::atomic<bool> pdb_failing{false};
    mutable std::mutex stats_mu;
    table_stats stats;  // guarded by stats_mu
  };
  struct fetch_result {
    std::vector<std::uint8_t> found;  // per key: 0 nowhere, 1 from the VDB, 2 from the PDB
    std::uint64_t from_vdb = 0, from_pdb = 0;
    status error;  // the PDB could not be read: the keys not found are unknown, not absent
  };
  struct async_job {
    std::size_t table;
    std::vector<cache_key> keys;
  };

  lookup_session(volatile_db* vdb, persistent_db* pdb, session_options options)
      : vdb_(vdb), pdb_(pdb), options_(options) {}
  /// VDB, then PDB for what the VDB lacks; a failing VDB falls back to the PDB.
  fetch_result fetch_lower(table_state& t, std::span<const cache_key> keys,
                           std::span<float> values);
  /// Fetches and inserts into L1 (Replace) and the VDB (keys the PDB supplied).
  fetch_result fetch_and_insert(table_state& t, std::span<const cache_key> keys,
                                std::span<float> values);
  void enqueue(std::size_t table, std::vector<cache_key> keys);
  void insert_loop();
  void refresh_loop();

  volatile_db* vdb_;
  persistent_db* pdb_;
  session_options options_;
  std::vector<std::unique_ptr<table_state>> tables_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<async_job> queue_;  // guarded by queue_mu_
  bool busy_ = false;            // guarded by queue_mu_: a job is being applied
  bool stopping_ = false;        // guarded by queue_mu_
  std::thread inserter_;         // "hps-insert"
  std::thread refresher_;        // "hps-refresh", when refresh_interval_ms > 0
};

/// Deduplicates keys keeping first-seen order: unique keys, and for each input
/// position the index of its key in `unique`.
void dedup_keys(std::span<const cache_key> keys, std::vector<cache_key>& unique,
                std::vector<std::uint32_t>& inverse);

}  // namespace spindle::hps
