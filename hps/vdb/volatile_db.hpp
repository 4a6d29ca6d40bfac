// Level 2 of the hierarchical parameter server (HugeCTR HPS §5): a volatile
// key -> vector store organised in partitions (partition = XXH64(key) mod P),
// each capped at an overflow margin and pruned by an eviction policy down to a
// resolution target. Backends: in-process partitioned hash map, Redis.
// Thread-safety: every method may be called concurrently (each backend says how).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.hpp"
#include "gpu/kernels/slab_probe.hpp"

namespace spindle::hps {

using gpu::cache_key;

enum class eviction_policy { evict_oldest, evict_least_used, evict_random };
std::string_view to_string(eviction_policy p);
expected<eviction_policy> parse_eviction_policy(std::string_view text);

struct vdb_options {
  std::uint32_t partitions = 16;             // P; the paper's evaluation uses 16
  std::uint64_t overflow_margin = 1u << 20;  // max entries per partition
  double overflow_resolution = 0.8;          // evict down to margin * resolution
  eviction_policy policy = eviction_policy::evict_oldest;
  std::uint64_t seed = 1;  // for evict_random
};

/// Checks ranges (partitions >= 1, margin >= 1, 0 < resolution <= 1); names the field.
status validate(const vdb_options& o);

/// The partition of `key`: XXH64 of its 8 little-endian bytes, mod `partitions`.
std::uint32_t partition_of(cache_key key, std::uint32_t partitions);

class volatile_db {
 public:
  virtual ~volatile_db() = default;
  virtual std::string_view backend() const = 0;

  /// Copies the vectors of the keys present in `table` into values[i*dim ..] and
  /// sets found[i]; returns how many were found. Refreshes their access
  /// time / use count asynchronously. A table stored with another dim is an error.
  expected<std::uint64_t> lookup(std::string_view table, std::uint32_t dim,
                                 std::span<const cache_key> keys, std::span<float> values,
                                 std::span<std::uint8_t> found);

  /// Inserts or overwrites; then prunes every partition past its overflow margin.
  status insert(std::string_view table, std::uint32_t dim, std::span<const cache_key> keys,
                std::span<const float> values);

  /// Entries of `table` over all partitions.
  expected<std::uint64_t> size(std::string_view table);

  /// How many partitions `table` has (its options').
  virtual std::uint32_t partitions(std::string_view table) = 0;

  /// Entries of one partition of `table`.
  virtual expected<std::uint64_t> partition_size(std::string_view table, std::uint32_t p) = 0;

  /// Gives `table` its own options (partitions, margin, policy) instead of the
  /// backend's; only before the table is first used.
  virtual status configure_table(std::string_view table, const vdb_options& options) = 0;

  /// Applies asynchronous bookkeeping (access times) queued so far; for tests.
  virtual void flush() = 0;

 protected:
  /// The backend's lookup and insert, on a batch check_vdb_batch has passed
  /// (lookup's `found` already cleared).
  virtual expected<std::uint64_t> lookup_checked(std::string_view table, std::uint32_t dim,
                                                 std::span<const cache_key> keys,
                                                 std::span<float> values,
                                                 std::span<std::uint8_t> found) = 0;
  virtual status insert_checked(std::string_view table, std::uint32_t dim,
                                std::span<const cache_key> keys, std::span<const float> values) = 0;
};

/// In-process partitioned hash map (server-less deployment).
expected<std::unique_ptr<volatile_db>> make_hash_map_vdb(const vdb_options& options);

/// Redis (a local or shared redis-server); keys namespaced by `prefix`, table and partition.
expected<std::unique_ptr<volatile_db>> make_redis_vdb(const vdb_options& options,
                                                      const std::string& host, int port,
                                                      std::string prefix = "spindle");

/// Indices of `keys` grouped by partition: result[p] lists the positions in partition p.
std::vector<std::vector<std::uint32_t>> partition_groups(std::span<const cache_key> keys,
                                                         std::uint32_t partitions);

/// A backend's options with per-table overrides (configure_table). Not locked:
/// each backend guards it with its own mutex.
class vdb_table_options {
 public:
  explicit vdb_table_options(vdb_options defaults) : defaults_(std::move(defaults)) {}
  const vdb_options& of(std::string_view table) const {
    const auto it = per_table_.find(std::string(table));
    return it == per_table_.end() ? defaults_ : it->second;
  }
  void set(std::string_view table, const vdb_options& o) { per_table_[std::string(table)] = o; }

 private:
  vdb_options defaults_;
  std::unordered_map<std::string, vdb_options> per_table_;
};

/// A table's dim as stored by a backend (decimal text); corrupt_data naming
/// `where` when it is not a positive integer.
expected<std::uint32_t> parse_stored_dim(std::string_view text, std::string_view where);

/// Shared argument check of lookup/insert: sizes match dim, no reserved key.
status check_vdb_batch(std::string_view table, std::uint32_t dim, std::size_t keys,
                       std::size_t values, const char* op);

}  // namespace spindle::hps
