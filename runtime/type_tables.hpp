// Typed GNN models' large embedding tables (featureless node types) served by the
// hierarchical parameter server: rows streamed once from the model's weights into
// the RocksDB PDB, then read per batch through an hps::lookup_session (L1 cache,
// optional VDB) that nn::model calls through its type_row_readers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.hpp"
#include "hps/pdb/persistent_db.hpp"
#include "hps/vdb/volatile_db.hpp"
#include "nn/type_rows.hpp"

namespace spindle::runtime {

struct type_table_args {
  std::string pdb;     // --type-table-pdb DIR; empty: every table held in memory
  double min_mb = 64;  // --type-table-min-mb: tables of at least this many MiB go to the PDB
  double cache_fraction = 0.1;  // --type-table-cache: L1 slots per table row
  std::string vdb = "none";     // --type-table-vdb none|hash_map (filled by misses, no warm-up)
};

/// The PDB (and VDB) every typed model of one server reads its large tables from.
class type_tables : public std::enable_shared_from_this<type_tables> {
 public:
  /// Opens (creating) the PDB folder; errors name the flag and the folder.
  static expected<std::shared_ptr<type_tables>> open(const type_table_args& a);

  /// Readers for the types of model directory `dir` whose tables hold at least
  /// min_mb: each table's rows are loaded into the PDB unless it already holds
  /// them for these weights (their SHA-256). Empty for an untyped model.
  expected<nn::type_row_readers> readers(const std::string& dir);

 private:
  type_tables() = default;
  /// The PDB table holding `tensor` of `weights` (rows x in; `digest`, the
  /// file's SHA-256), loaded when absent.
  expected<std::string> ensure_loaded(const std::string& weights, const std::string& digest,
                                      const std::string& tensor, std::int64_t rows, int in);

  type_table_args args_;
  std::unique_ptr<hps::persistent_db> pdb_;
  std::unique_ptr<hps::volatile_db> vdb_;
  std::mutex load_mu_;  // one table loaded at a time
};

}  // namespace spindle::runtime
