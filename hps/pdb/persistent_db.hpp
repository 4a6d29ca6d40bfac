// Level 3 of the hierarchical parameter server (HugeCTR HPS §5): the full
// embedding tables of a model in RocksDB on each node, one column family per
// table, batched MultiGet lookups, and bulk loading from the model's files.
// Thread-safe: RocksDB's DB is; table creation is serialised internally.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "gpu/kernels/slab_probe.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace spindle::hps {

using gpu::cache_key;

class persistent_db {
 public:
  /// Opens (creating when absent, unless read_only) the database directory `path`
  /// with every column family it already holds. Errors name the path.
  static expected<std::unique_ptr<persistent_db>> open(const std::string& path,
                                                       bool read_only = false);
  ~persistent_db();

  /// Creates table `name` (a column family) of vectors of `dim` floats; an
  /// existing table with the same dim is fine, another dim is an error.
  status create_table(const std::string& name, std::uint32_t dim);
  /// The dim of `name`, or not_found naming the table and the database.
  expected<std::uint32_t> table_dim(const std::string& name) const;
  std::vector<std::string> tables() const;
  /// Drops table `name` and its rows (RocksDB frees their files in the background);
  /// no lookup or insert of it may be in flight. not_found when absent.
  status drop_table(const std::string& name);

  /// MultiGet: values[i*dim ..] and found[i] for keys present; returns the count.
  expected<std::uint64_t> lookup(const std::string& table, std::span<const cache_key> keys,
                                 std::span<float> values, std::span<std::uint8_t> found) const;
  /// Writes (inserts or overwrites) one atomic batch.
  status insert(const std::string& table, std::span<const cache_key> keys,
                std::span<const float> values);

  /// Loads a [rows x dim] float matrix as keys first_key .. first_key+rows-1 in
  /// batches, with progress on stderr. Creates the table when absent.
  status bulk_load(const std::string& table, std::span<const float> rows, std::uint32_t dim,
                   cache_key first_key = 0);
  /// Bulk-loads a 2-D float32 .npy file.
  status bulk_load_npy(const std::string& table, const std::string& npy_path);
  /// Bulk-loads tensor `tensor` (2-D, F32/F64/F16/BF16) of a safetensors file.
  status bulk_load_safetensors(const std::string& table, const std::string& path,
                               const std::string& tensor);

  /// RocksDB's estimate of the keys in `table`.
  expected<std::uint64_t> approximate_size(const std::string& table) const;
  const std::string& path() const { return path_; }

 private:
  persistent_db() = default;
  expected<rocksdb::ColumnFamilyHandle*> handle(const std::string& table) const;

  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  mutable std::mutex mu_;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> handles_;  // guarded by mu_; owned
  std::map<std::string, std::uint32_t> dims_;                    // guarded by mu_
};

}  // namespace spindle::hps
