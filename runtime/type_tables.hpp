// Typed GNN models' large embedding tables (featureless node types) served by the
// hierarchical parameter server: rows streamed once from the model's weights into
// the RocksDB PDB, then read per batch through an hps::lookup_session (L1 cache,
// optional VDB) that nn::model calls through its type_row_readers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

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
  double vdb_mb = 256;          // --type-table-vdb-mb: the hash_map VDB's rows per table, MiB
  bool keep_old = false;        // --type-table-keep-old: never drop other weights' tables
  std::vector<std::string> given;  // the --type-table-* flags on the command line, by name
};

/// Refuses the flags of `a.given` by name unless one of `model_dirs` (the GNNs a
/// server loads at start; none: it serves no GNN) has a featureless node type
/// read from an embedding table: they would change nothing.
status check_type_table_flags(const type_table_args& a, const std::vector<std::string>& model_dirs);

/// One model's large tables: their readers, and their counters (unset when none).
struct type_table_set {
  nn::type_row_readers readers;
  nn::type_table_stats_fn stats;
};

/// The PDB (and VDB) every typed model of one server reads its large tables from.
/// A table no model here reads is dropped once another table of its tensor (other
/// weights) is read (unless keep_old): at start once every start model is loaded
/// (started()), then when a table is loaded or a model unloaded (sweep()); never
/// as a server stops. The folder is one server's (RocksDB locks it).
class type_tables : public std::enable_shared_from_this<type_tables> {
 public:
  /// Opens (creating) the PDB folder; errors name the flag and the folder.
  static expected<std::shared_ptr<type_tables>> open(const type_table_args& a);

  /// Readers for the types of model directory `dir` whose tables hold at least
  /// min_mb: each table's rows are loaded into the PDB unless it already holds
  /// them for these weights (their SHA-256). Empty for an untyped model.
  expected<type_table_set> readers(const std::string& dir);
  /// Start-up is over: the tables no start model reads whose tensor a start model
  /// reads under other weights are dropped now, and from now on when found so.
  void started();
  /// After a model was unloaded: drops the tables no model reads of a tensor
  /// another model reads (a roll's old version). Not at shutdown: nothing is.
  void sweep();
  /// The tables the PDB folder holds now.
  std::vector<std::string> pdb_tables() const { return pdb_->tables(); }
  /// Rows of `table` the VDB holds now (0 without one).
  std::uint64_t vdb_rows(const std::string& table) const;

 private:
  struct model_tables;  // one model's session, counters and hold on its tables
  struct loaded {
    std::string table;
    std::uint64_t rows = 0, bytes = 0;  // streamed into it by this server (0: whole at start)
  };
  type_tables() = default;
  /// The PDB table holding `tensor` of `weights` (rows x in; `digest`, the
  /// file's SHA-256), loaded when absent, and held (release gives it back).
  expected<loaded> ensure_loaded(const std::string& weights, const std::string& digest,
                                 const std::string& tensor, std::int64_t rows, int in);
  /// Streams the rows of `tensor` into the new PDB table `table`.
  status stream_rows(const std::string& weights, const std::string& table,
                     const std::string& tensor, std::int64_t rows, std::uint32_t dim);
  void set_loading(const std::string& table);
  status configure_vdb(const std::string& table, std::uint32_t dim);
  void release(const std::vector<std::string>& tables);
  /// Drops the tables of `tensor` no model reads while another one is read.
  void drop_unread(const std::string& tensor);  // holds use_mu_

  type_table_args args_;
  std::unique_ptr<hps::persistent_db> pdb_;
  std::unique_ptr<hps::volatile_db> vdb_;
  std::mutex load_mu_;  // one table loaded at a time
  std::mutex use_mu_;   // guards what follows
  std::map<std::string, int> readers_of_;   // table -> sessions reading it
  std::map<std::string, loaded> streamed_;  // tables this server streamed, what it streamed
  std::set<std::string> start_tensors_;     // tensors read at start (dropped at started())
  std::set<std::string> vdb_configured_;
  std::string loading_;  // the table being streamed now (not whole: never dropped)
  bool started_ = false;
};

}  // namespace spindle::runtime
