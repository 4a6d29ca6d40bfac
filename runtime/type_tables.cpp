#include "runtime/type_tables.hpp"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <cstring>
#include <limits>
#include <vector>

#include "config/model.hpp"
#include "core/checksum.hpp"
#include "core/log.hpp"
#include "core/path_guard.hpp"
#include "core/progress.hpp"
#include "core/safetensors.hpp"
#include "hps/lookup_session.hpp"
#include "transport/net/file_manifest.hpp"

namespace spindle::runtime {
namespace {

constexpr std::uint64_t load_chunk_rows = 65536;

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

// Reads rows of session table 0 (`table`), every miss fetched synchronously
// (hit-rate threshold 1); keeps the store (its PDB) and the session alive.
nn::type_row_reader session_reader(std::shared_ptr<const void> owner,
                                   std::shared_ptr<hps::lookup_session> session, std::size_t t,
                                   const hps::persistent_db& pdb, std::string type) {
  return [owner, session, t, &pdb, type](std::span<const std::int64_t> ids,
                                         std::span<float> out) -> status {
    const std::vector<hps::cache_key> keys(ids.begin(), ids.end());
    SPINDLE_ASSIGN_OR_RETURN(auto r, session->lookup(t, keys, out));
    if (r.defaulted == 0) return status::ok();
    return missing_row(pdb, session->table(t).name, type, keys, session->table(t).dim);
  };
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
  return status::ok();
}

// RocksDB stops the process on a full disk (an assertion in Debian's build) rather
// than failing the write: the load needs about twice the rows' bytes (the
// write-ahead log, then the table files), refused by name where the disk lacks it.
status check_free_space(const std::string& dir, std::uint64_t row_bytes) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return status::ok();  // RocksDB will say what is wrong
  const std::uint64_t free = std::uint64_t(fs.f_bavail) * fs.f_frsize, need = 2 * row_bytes;
  if (free < need)
    return make_error(errc::resource_exhausted,
                      "--type-table-pdb {}: loading the table needs about {} MiB free (twice its "
                      "rows), the disk has {} MiB",
                      dir, need >> 20, free >> 20);
  return status::ok();
}

}  // namespace

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
      "server in {} (L1 {} of each table's rows, VDB {})",
      a.min_mb, a.pdb, a.cache_fraction, a.vdb);
  return s;
}

expected<nn::type_row_readers> type_tables::readers(const std::string& dir) {
  SPINDLE_ASSIGN_OR_RETURN(const auto d, config::load_model_desc(dir));
  std::vector<hps::table_options> tables;
  std::vector<std::string> types;
  const std::string weights = dir + "/" + d.weights;
  std::string digest;  // of the weights, read once a table goes to the parameter server
  for (const auto& n : d.types.node_types) {
    const double mb = double(n.embedding_rows) * n.in * sizeof(float) / double(1u << 20);
    if (n.embedding.empty() || mb < args_.min_mb) continue;
    if (digest.empty()) {
      SPINDLE_TRY(require_file_inside(dir, weights));
      SPINDLE_ASSIGN_OR_RETURN(const auto crc, file_crc32_hex(weights));
      if (!d.weights_crc32.empty() && crc != d.weights_crc32)  // no damaged rows into the PDB
        return make_error(errc::corrupt_data,
                          "{}: its CRC-32 {} does not match model.toml's weights_crc32 {}: the "
                          "file was changed or damaged since it was written",
                          weights, crc, d.weights_crc32);
      // The table's name: a CRC-32 can be forged (4 bytes make any file match
      // another's), and a PDB folder may hold several models' tables.
      SPINDLE_ASSIGN_OR_RETURN(digest, transport::net::file_sha256(weights));
    }
    auto table = ensure_loaded(weights, digest, n.embedding, n.embedding_rows, n.in);
    if (!table)
      return std::move(table).error().with_context(fmt::format("node type '{}': ", n.name));
    // Threshold 1: every miss is fetched before the call returns (never a default row).
    tables.push_back({*table, std::uint32_t(n.in), std::uint64_t(n.embedding_rows),
                      args_.cache_fraction, 1.0, std::numeric_limits<float>::quiet_NaN(), 2});
    types.push_back(n.name);
    log::info(
        "{}: node type '{}': table {} ({} x {}, {:.0f} MiB) read from the parameter "
        "server, not held",
        dir, n.name, n.embedding, n.embedding_rows, n.in, mb);
  }
  nn::type_row_readers out;
  if (tables.empty()) return out;
  hps::session_options so;
  so.l1_device = "host";  // typed models compute on the host
  SPINDLE_ASSIGN_OR_RETURN(auto session,
                           hps::lookup_session::create(tables, vdb_.get(), pdb_.get(), so));
  std::shared_ptr<hps::lookup_session> shared(std::move(session));
  for (std::size_t t = 0; t < types.size(); ++t)
    out[types[t]] = session_reader(shared_from_this(), shared, t, *pdb_, types[t]);
  return out;
}

// The table is named after the tensor and the weights' SHA-256, so other weights
// never reuse it; row `rows` (past the last id) is written last, marking it whole.
expected<std::string> type_tables::ensure_loaded(const std::string& weights,
                                                 const std::string& digest,
                                                 const std::string& tensor, std::int64_t rows,
                                                 int in) {
  std::lock_guard lock(load_mu_);
  const std::string table = fmt::format("{}@sha256:{}", tensor, digest);
  const auto dim = std::uint32_t(in);
  std::vector<float> marker(dim, 0.0f);
  if (pdb_->table_dim(table)) {
    const hps::cache_key key = std::uint64_t(rows);
    std::uint8_t found = 0;
    SPINDLE_TRY(pdb_->lookup(table, {&key, 1}, marker, {&found, 1}).error_or_ok());
    if (found) {
      log::info("{}: {} already in the parameter server ({})", weights, tensor, pdb_->path());
      return table;
    }
  }
  SPINDLE_ASSIGN_OR_RETURN(const auto file, safetensors_file::open(weights));
  const auto it = file.tensors().find(tensor);
  const std::vector<std::int64_t> shape{rows, in};
  if (it == file.tensors().end() || it->second.shape != shape)
    return make_error(errc::invalid_argument,
                      "{}: tensor {} is {}, model.toml says {} "
                      "(embedding_rows x in)",
                      weights, tensor,
                      it == file.tensors().end() ? "missing" : format_shape(it->second.shape),
                      format_shape(shape));
  if (it->second.dtype != "F32")
    return make_error(errc::unsupported,
                      "{}: tensor {} is {}: the parameter server loads F32 "
                      "tables (export it as float32, or hold it in memory)",
                      weights, tensor, it->second.dtype);
  SPINDLE_TRY(check_free_space(pdb_->path(), std::uint64_t(rows) * (dim * sizeof(float) + 8)));
  SPINDLE_TRY(pdb_->create_table(table, dim));
  const auto bytes = it->second.bytes;
  progress bar("load " + tensor + " into " + pdb_->path(), std::uint64_t(rows), "rows");
  std::vector<float> chunk;
  std::vector<hps::cache_key> keys;
  for (std::uint64_t begin = 0; begin < std::uint64_t(rows); begin += load_chunk_rows) {
    const std::uint64_t end = std::min<std::uint64_t>(rows, begin + load_chunk_rows);
    chunk.resize((end - begin) * dim);
    std::memcpy(chunk.data(), bytes.data() + begin * dim * sizeof(float),
                chunk.size() * sizeof(float));  // the mapping may be unaligned
    keys.resize(end - begin);
    for (std::uint64_t k = begin; k < end; ++k) keys[k - begin] = k;
    SPINDLE_TRY(pdb_->insert(table, keys, chunk));
    bar.advance(end - begin);
  }
  bar.finish();
  // bulk_load flushes the table after writing the marker row.
  SPINDLE_TRY(pdb_->bulk_load(table, marker, dim, std::uint64_t(rows)));
  return table;
}

}  // namespace spindle::runtime
