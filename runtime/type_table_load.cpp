// type_tables: a table's rows streamed into the PDB (with progress on a terminal
// and in the log), which tables the server's models hold, and dropping the ones
// of other weights no model reads.
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "core/log.hpp"
#include "core/progress.hpp"
#include "core/progress_log.hpp"
#include "core/safetensors.hpp"
#include "runtime/type_tables.hpp"

namespace spindle::runtime {
namespace {

constexpr std::uint64_t load_chunk_rows = 65536;
constexpr std::string_view digest_mark = "@sha256:";

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

// The tensor a table holds ("emb.w@sha256:..." -> "emb.w"); empty for a table
// this folder's typed tables did not name.
std::string tensor_of(const std::string& table) {
  const auto at = table.rfind(digest_mark);
  return at == std::string::npos ? std::string() : table.substr(0, at);
}

}  // namespace

// The table is named after the tensor and the weights' SHA-256, so other weights
// never reuse it; row `rows` (past the last id) is written last, marking it whole.
expected<type_tables::loaded> type_tables::ensure_loaded(const std::string& weights,
                                                         const std::string& digest,
                                                         const std::string& tensor,
                                                         std::int64_t rows, int in) {
  std::lock_guard lock(load_mu_);
  loaded out{fmt::format("{}{}{}", tensor, digest_mark, digest)};
  const auto dim = std::uint32_t(in);
  bool whole = false;
  if (pdb_->table_dim(out.table)) {
    const hps::cache_key key = std::uint64_t(rows);
    std::vector<float> marker(dim);
    std::uint8_t found = 0;
    SPINDLE_TRY(pdb_->lookup(out.table, {&key, 1}, marker, {&found, 1}).error_or_ok());
    whole = found != 0;
  }
  if (whole) {
    log::info("{}: {} already in the parameter server ({})", weights, tensor, pdb_->path());
  } else {
    set_loading(out.table);
    auto st = stream_rows(weights, out.table, tensor, rows, dim);
    set_loading({});
    SPINDLE_TRY(std::move(st));
    out.rows = std::uint64_t(rows);
    out.bytes = out.rows * dim * sizeof(float);
  }
  std::lock_guard use(use_mu_);
  if (out.rows > 0) streamed_[out.table] = {out.table, out.rows, out.bytes};
  else if (const auto it = streamed_.find(out.table); it != streamed_.end()) out = it->second;
  ++readers_of_[out.table];
  if (!started_) start_tensors_.insert(tensor);
  else drop_unread(tensor);
  return out;
}

status type_tables::stream_rows(const std::string& weights, const std::string& table,
                                const std::string& tensor, std::int64_t rows, std::uint32_t dim) {
  SPINDLE_ASSIGN_OR_RETURN(const auto file, safetensors_file::open(weights));
  const auto it = file.tensors().find(tensor);
  const std::vector<std::int64_t> shape{rows, std::int64_t(dim)};
  if (it == file.tensors().end() || it->second.shape != shape)
    return make_error(errc::invalid_argument,
                      "{}: tensor {} is {}, model.toml says {} (embedding_rows x in)", weights,
                      tensor, it == file.tensors().end() ? "missing" : format_shape(it->second.shape),
                      format_shape(shape));
  if (it->second.dtype != "F32")
    return make_error(errc::unsupported,
                      "{}: tensor {} is {}: the parameter server loads F32 "
                      "tables (export it as float32, or hold it in memory)",
                      weights, tensor, it->second.dtype);
  SPINDLE_TRY(check_free_space(pdb_->path(), std::uint64_t(rows) * (dim * sizeof(float) + 8)));
  SPINDLE_TRY(pdb_->create_table(table, dim));
  const auto bytes = it->second.bytes;
  const std::string label = "load " + tensor + " into " + pdb_->path();
  std::optional<progress> bar;  // a bar on a terminal; elsewhere the log's lines alone
  if (::isatty(STDERR_FILENO) == 1) bar.emplace(label, std::uint64_t(rows), "rows");
  progress_log logged(label, std::uint64_t(rows), "rows");  // every 10 s or 10% of the rows
  log::info("{}: {} rows of {} floats", label, rows, dim);
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
    if (bar) bar->advance(end - begin);
    logged.advance_and_log(end - begin);
  }
  if (bar) bar->finish();
  // bulk_load flushes the table after writing the marker row.
  const std::vector<float> marker(dim, 0.0f);
  SPINDLE_TRY(pdb_->bulk_load(table, marker, dim, std::uint64_t(rows)));
  log::info("{}", logged.finish());
  return status::ok();
}

void type_tables::set_loading(const std::string& table) {
  std::lock_guard lock(use_mu_);
  loading_ = table;
}

// Never drops: a server stopping gives every table back, in an order that would
// decide which survive; an unload asks for the sweep itself.
void type_tables::release(const std::vector<std::string>& tables) {
  std::lock_guard lock(use_mu_);
  for (const auto& t : tables)
    if (--readers_of_[t] <= 0) readers_of_.erase(t);
}

void type_tables::sweep() {
  std::lock_guard lock(use_mu_);
  if (!started_) return;
  std::set<std::string> tensors;
  for (const auto& t : pdb_->tables()) tensors.insert(tensor_of(t));
  for (const auto& tensor : tensors) drop_unread(tensor);
}

void type_tables::started() {
  std::lock_guard lock(use_mu_);
  started_ = true;
  for (const auto& tensor : start_tensors_) drop_unread(tensor);
  start_tensors_.clear();
}

// Other weights' rows of a tensor a model here reads: no model reads them, and a
// folder is one server's (RocksDB locks it), so nobody else does either.
void type_tables::drop_unread(const std::string& tensor) {
  if (args_.keep_old || tensor.empty()) return;
  std::vector<std::string> unread;
  bool read = false;
  for (const auto& t : pdb_->tables()) {
    if (tensor_of(t) != tensor || t == loading_) continue;
    if (readers_of_.count(t)) read = true;
    else unread.push_back(t);
  }
  if (!read) return;
  for (const auto& t : unread) {
    if (auto st = pdb_->drop_table(t); !st) {
      log::warn("--type-table-pdb {}: could not drop {}: {}", pdb_->path(), t, st.message());
      continue;
    }
    streamed_.erase(t);
    log::info("--type-table-pdb {}: dropped {}: other weights' rows of {}, read by no model here "
              "(--type-table-keep-old keeps them)",
              pdb_->path(), t, tensor);
  }
}

}  // namespace spindle::runtime
