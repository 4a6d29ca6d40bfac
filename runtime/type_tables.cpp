#include "runtime/type_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <limits>
#include <vector>

#include "config/model.hpp"
#include "core/checksum.hpp"
#include "core/log.hpp"
#include "core/path_guard.hpp"
#include "hps/lookup_session.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::runtime {
namespace {

// The error for rows the parameter server could not give exactly: the first
// id the PDB lacks (a PDB damaged or changed under the server), by type and id.
status missing_row(const hps::persistent_db& pdb, const std::string& table, const std::string& type,
                   std::span<const hps::cache_key> keys, std::uint32_t dim) {
  std::vector<float> values(keys.size() * dim);
  std::vector<std::uint8_t> found(keys.size(), 0);
  SPINDLE_TRY(pdb.lookup(table, keys, values, found).error_or_ok());
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (!found[i])
      return make_error(errc::not_found,
                        "node type '{}': id {} has no row in the parameter server's table {} "
                        "({}): refused, not answered with a default row",
                        type, keys[i], table, pdb.path());
  return make_error(errc::internal, "node type '{}': the parameter server answered a default row",
                    type);
}

status check_args(const type_table_args& a) {
  if (!(a.min_mb >= 0))
    return make_error(errc::invalid_argument, "--type-table-min-mb {}: must be 0 or more",
                      a.min_mb);
  if (!(a.cache_fraction > 0 && a.cache_fraction <= 1))
    return make_error(errc::invalid_argument, "--type-table-cache {}: must be in (0, 1]",
                      a.cache_fraction);
  if (a.vdb != "none" && a.vdb != "hash_map")
    return make_error(errc::invalid_argument, "--type-table-vdb '{}': none or hash_map", a.vdb);
  if (!(a.vdb_mb > 0 && a.vdb_mb <= 1048576))
    return make_error(errc::invalid_argument, "--type-table-vdb-mb {}: must be in (0, 1048576]",
                      a.vdb_mb);
  for (const auto& flag : a.given)
    if (flag == "--type-table-vdb-mb" && a.vdb != "hash_map")
      return make_error(errc::invalid_argument,
                        "--type-table-vdb-mb caps the hash_map VDB: give --type-table-vdb "
                        "hash_map (it is {})",
                        a.vdb);
  return status::ok();
}

// True when model `dir` has a featureless node type read from an embedding table.
expected<bool> has_embedding_table(const std::string& dir) {
  SPINDLE_ASSIGN_OR_RETURN(const auto d, config::load_model_desc(dir));
  for (const auto& n : d.types.node_types)
    if (!n.embedding.empty()) return true;
  return false;
}

// The SHA-256 of model `dir`'s weights file, the name of its tables: a CRC-32
// can be forged (4 bytes make any file match another's), and a PDB folder may
// hold several models' tables. Weights whose CRC-32 is not model.toml's are
// refused first: no damaged rows into the PDB.
expected<std::string> weights_digest(const std::string& dir, const std::string& weights,
                                     const std::string& want_crc32) {
  SPINDLE_TRY(require_file_inside(dir, weights));
  SPINDLE_ASSIGN_OR_RETURN(const auto crc, file_crc32_hex(weights));
  if (!want_crc32.empty() && crc != want_crc32)
    return make_error(errc::corrupt_data,
                      "{}: its CRC-32 {} does not match model.toml's weights_crc32 {}: the file "
                      "was changed or damaged since it was written",
                      weights, crc, want_crc32);
  return transport::net::file_sha256(weights);
}

// Settings of --type-table-pdb given without it.
status without_folder(const type_table_args& a) {
  return make_error(errc::invalid_argument,
                    "{}: --type-table-min-mb, --type-table-cache, --type-table-vdb(-mb) and "
                    "--type-table-keep-old set how --type-table-pdb DIR serves typed tables: name "
                    "the folder",
                    fmt::join(a.given, ", "));
}

}  // namespace

status check_type_table_flags(const type_table_args& a,
                              const std::vector<std::string>& model_dirs) {
  if (a.given.empty()) return status::ok();
  for (const auto& dir : model_dirs) {
    SPINDLE_ASSIGN_OR_RETURN(const bool has, has_embedding_table(dir));
    if (has) return a.pdb.empty() ? without_folder(a) : status::ok();
  }
  const std::string flags = fmt::format("{}", fmt::join(a.given, ", "));
  if (model_dirs.empty())
    return make_error(errc::invalid_argument,
                      "{}: this server serves no GNN, and these flags only move typed GNNs' "
                      "embedding tables to the parameter server: drop them",
                      flags);
  return make_error(errc::invalid_argument,
                    "{}: no GNN served at start ({}) has a featureless node type read from an "
                    "embedding table, the only tables these flags move to the parameter server: "
                    "drop them",
                    flags, fmt::join(model_dirs, ", "));
}

expected<std::shared_ptr<type_tables>> type_tables::open(const type_table_args& a) {
  SPINDLE_TRY(check_args(a));
  std::shared_ptr<type_tables> s(new type_tables());
  s->args_ = a;
  auto pdb = hps::persistent_db::open(a.pdb);
  if (!pdb) return std::move(pdb).error().with_context("--type-table-pdb " + a.pdb + ": ");
  s->pdb_ = std::move(*pdb);
  if (a.vdb == "hash_map") {
    SPINDLE_ASSIGN_OR_RETURN(s->vdb_, hps::make_hash_map_vdb(hps::vdb_options{}));
  }
  log::info(
      "typed models' embedding tables of {} MiB or more are read from the parameter "
      "server in {} (L1 {} of each table's rows, VDB {}{})",
      a.min_mb, a.pdb, a.cache_fraction, a.vdb,
      a.vdb == "hash_map" ? fmt::format(", at most {} MiB of rows per table", a.vdb_mb) : "");
  return s;
}

// One model's lookup session over its tables, with their counters; gives its
// tables back (the folder may then drop them) once its readers are gone.
struct type_tables::model_tables {
  struct counters {
    std::atomic<std::uint64_t> lookups{0}, l1_hits{0}, l1_misses{0}, vdb{0}, pdb{0}, bytes{0};
  };
  std::shared_ptr<type_tables> owner;
  std::unique_ptr<hps::lookup_session> session;
  std::vector<std::string> types, tables;
  std::vector<loaded> loads;
  std::unique_ptr<counters[]> count;

  static type_table_set wire(std::shared_ptr<model_tables> held);

  ~model_tables() {
    session.reset();  // no read of a table the release may drop
    owner->release(tables);
  }
  // Reads rows of session table `t`, every miss fetched synchronously (hit-rate
  // threshold 1): exact or an error naming the type and the id.
  status read(std::size_t t, std::span<const std::int64_t> ids, std::span<float> out) {
    const std::vector<hps::cache_key> keys(ids.begin(), ids.end());
    SPINDLE_ASSIGN_OR_RETURN(auto r, session->lookup(t, keys, out));
    auto& c = count[t];
    c.lookups.fetch_add(1, std::memory_order_relaxed);
    c.l1_hits.fetch_add(r.unique_keys - r.l1_misses, std::memory_order_relaxed);
    c.l1_misses.fetch_add(r.l1_misses, std::memory_order_relaxed);
    c.vdb.fetch_add(r.from_vdb, std::memory_order_relaxed);
    c.pdb.fetch_add(r.from_pdb, std::memory_order_relaxed);
    c.bytes.fetch_add((r.from_vdb + r.from_pdb) * session->table(t).dim * sizeof(float),
                      std::memory_order_relaxed);
    if (r.defaulted == 0) return status::ok();
    return missing_row(*owner->pdb_, tables[t], types[t], keys, session->table(t).dim);
  }
  std::vector<nn::type_table_stats> stats() const {
    std::vector<nn::type_table_stats> out;
    for (std::size_t t = 0; t < types.size(); ++t) {
      const auto& c = count[t];
      out.push_back({types[t], tables[t], c.lookups.load(), c.l1_hits.load(), c.l1_misses.load(),
                     c.vdb.load(), c.pdb.load(), c.bytes.load(), loads[t].rows, loads[t].bytes});
    }
    return out;
  }
};

expected<type_table_set> type_tables::readers(const std::string& dir) {
  SPINDLE_ASSIGN_OR_RETURN(const auto d, config::load_model_desc(dir));
  auto held = std::make_shared<model_tables>();
  held->owner = shared_from_this();  // from here on its tables are given back when it goes
  std::vector<hps::table_options> tables;
  const std::string weights = dir + "/" + d.weights;
  std::string digest;  // of the weights, read once a table goes to the parameter server
  bool any = false;
  for (const auto& n : d.types.node_types) {
    const double mb = double(n.embedding_rows) * n.in * sizeof(float) / double(1u << 20);
    any = any || !n.embedding.empty();
    if (n.embedding.empty()) continue;
    if (mb < args_.min_mb) {
      log::info("{}: node type '{}': table {} ({:.1f} MiB) held in memory (under "
                "--type-table-min-mb {})",
                dir, n.name, n.embedding, mb, args_.min_mb);
      continue;
    }
    if (digest.empty()) {
      SPINDLE_ASSIGN_OR_RETURN(digest, weights_digest(dir, weights, d.weights_crc32));
    }
    auto table = ensure_loaded(weights, digest, n.embedding, n.embedding_rows, n.in);
    if (!table)
      return std::move(table).error().with_context(fmt::format("node type '{}': ", n.name));
    held->tables.push_back(table->table);  // held: given back if a later step fails
    held->loads.push_back(*table);
    held->types.push_back(n.name);
    SPINDLE_TRY(configure_vdb(table->table, std::uint32_t(n.in)));
    // Threshold 1: every miss is fetched before the call returns (never a default row).
    tables.push_back({table->table, std::uint32_t(n.in), std::uint64_t(n.embedding_rows),
                      args_.cache_fraction, 1.0, std::numeric_limits<float>::quiet_NaN(), 2});
    log::info(
        "{}: node type '{}': table {} ({} x {}, {:.0f} MiB) read from the parameter "
        "server, not held",
        dir, n.name, n.embedding, n.embedding_rows, n.in, mb);
  }
  if (!any)
    log::info("{}: no featureless node type read from an embedding table: --type-table-pdb "
              "changes nothing for it",
              dir);
  if (tables.empty()) return type_table_set{};
  hps::session_options so;
  so.l1_device = "host";  // typed models compute on the host
  SPINDLE_ASSIGN_OR_RETURN(held->session,
                           hps::lookup_session::create(tables, vdb_.get(), pdb_.get(), so));
  held->count = std::make_unique<model_tables::counters[]>(tables.size());
  return model_tables::wire(std::move(held));
}

// The readers of `held`'s tables (each keeping them) and their counters (which do not).
type_table_set type_tables::model_tables::wire(std::shared_ptr<model_tables> held) {
  type_table_set out;
  for (std::size_t t = 0; t < held->types.size(); ++t)
    out.readers[held->types[t]] = [held, t](std::span<const std::int64_t> ids,
                                            std::span<float> rows) {
      return held->read(t, ids, rows);
    };
  // The counters do not keep the tables: they read nothing once the model is gone.
  out.stats = [weak = std::weak_ptr<model_tables>(held)] {
    const auto h = weak.lock();
    return h ? h->stats() : std::vector<nn::type_table_stats>{};
  };
  return out;
}

std::uint64_t type_tables::vdb_rows(const std::string& table) const {
  if (!vdb_) return 0;
  auto n = vdb_->size(table);
  return n ? *n : 0;
}

// The hash_map VDB holds at most --type-table-vdb-mb of each table's rows: each
// partition evicts its oldest past its share.
status type_tables::configure_vdb(const std::string& table, std::uint32_t dim) {
  if (!vdb_) return status::ok();
  std::lock_guard lock(use_mu_);
  if (!vdb_configured_.insert(table).second) return status::ok();
  hps::vdb_options o;
  const double rows = args_.vdb_mb * double(1u << 20) / (double(dim) * sizeof(float));
  o.overflow_margin = std::max<std::uint64_t>(1, std::uint64_t(rows / o.partitions));
  return vdb_->configure_table(table, o);
}

}  // namespace spindle::runtime
