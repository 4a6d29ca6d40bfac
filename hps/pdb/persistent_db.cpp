// Keys are stored as 8 big-endian bytes (so RocksDB's byte order is key order and
// bulk loads arrive sorted); values are dim little-endian float32. Each table's
// dim lives in the default column family under "spindle.dim.<table>".
#include "hps/pdb/persistent_db.hpp"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <cstring>
#include <filesystem>
#include <optional>

#include "core/npy.hpp"
#include "core/progress.hpp"
#include "core/safetensors.hpp"
#include "hps/vdb/volatile_db.hpp"

namespace spindle::hps {
namespace {

void encode_key(cache_key k, char out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(k >> (56 - 8 * i));
}

std::string dim_key(const std::string& table) { return "spindle.dim." + table; }

status from_rocks(const rocksdb::Status& s, std::string_view what, const std::string& path) {
  if (s.ok()) return status::ok();
  const errc code = s.IsNotFound()          ? errc::not_found
                    : s.IsCorruption()      ? errc::corrupt_data
                    : s.IsInvalidArgument() ? errc::invalid_argument
                                            : errc::io_error;
  return make_error(code, "rocksdb {}: {}: {}", path, what, s.ToString());
}

}  // namespace

expected<std::unique_ptr<persistent_db>> persistent_db::open(const std::string& path,
                                                             bool read_only) {
  if (!read_only) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec)
      return make_error(errc::io_error, "rocksdb {}: cannot create the directory: {}", path,
                        ec.message());
  }
  rocksdb::Options options;
  options.create_if_missing = !read_only;
  options.IncreaseParallelism(2);
  std::vector<std::string> families;
  auto listed = rocksdb::DB::ListColumnFamilies(options, path, &families);
  if (!listed.ok()) families = {rocksdb::kDefaultColumnFamilyName};
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& f : families) descriptors.emplace_back(f, rocksdb::ColumnFamilyOptions(options));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  const auto s = read_only
                     ? rocksdb::DB::OpenForReadOnly(options, path, descriptors, &handles, &raw)
                     : rocksdb::DB::Open(options, path, descriptors, &handles, &raw);
  SPINDLE_TRY(from_rocks(s, "open", path));
  std::unique_ptr<persistent_db> db(new persistent_db());
  db->path_ = path;
  db->db_.reset(raw);
  for (auto* h : handles) db->handles_[h->GetName()] = h;
  for (const auto& f : families) {
    std::string dim;
    if (f != rocksdb::kDefaultColumnFamilyName &&
        raw->Get(rocksdb::ReadOptions(), dim_key(f), &dim).ok()) {
      SPINDLE_ASSIGN_OR_RETURN(db->dims_[f],
                               parse_stored_dim(dim, "rocksdb " + path + " " + dim_key(f)));
    }
  }
  return db;
}

persistent_db::~persistent_db() {
  if (!db_) return;
  for (auto& [name, h] : handles_) (void)db_->DestroyColumnFamilyHandle(h);
  (void)db_->Close();
}

status persistent_db::create_table(const std::string& name, std::uint32_t dim) {
  if (name.empty() || name == rocksdb::kDefaultColumnFamilyName) {
    return make_error(errc::invalid_argument, "rocksdb {}: bad table name '{}'", path_, name);
  }
  if (dim == 0)
    return make_error(errc::invalid_argument, "rocksdb {}: table '{}': dim 0", path_, name);
  std::lock_guard lock(mu_);
  if (const auto it = dims_.find(name); it != dims_.end()) {
    if (it->second == dim) return status::ok();
    return make_error(errc::invalid_argument, "rocksdb {}: table '{}' holds dim {}, asked for {}",
                      path_, name, it->second, dim);
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  if (!handles_.count(name)) {
    SPINDLE_TRY(from_rocks(db_->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), name, &h),
                           "create table " + name, path_));
    handles_[name] = h;
  }
  SPINDLE_TRY(from_rocks(db_->Put(rocksdb::WriteOptions(), dim_key(name), std::to_string(dim)),
                         "store dim of " + name, path_));
  dims_[name] = dim;
  return status::ok();
}

expected<std::uint32_t> persistent_db::table_dim(const std::string& name) const {
  std::lock_guard lock(mu_);
  const auto it = dims_.find(name);
  if (it == dims_.end()) {
    return make_error(errc::not_found, "rocksdb {}: no table '{}'", path_, name);
  }
  return it->second;
}

std::vector<std::string> persistent_db::tables() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, dim] : dims_) out.push_back(name);
  return out;
}

status persistent_db::drop_table(const std::string& name) {
  std::lock_guard lock(mu_);
  const auto it = handles_.find(name);
  if (it == handles_.end() || !dims_.count(name))
    return make_error(errc::not_found, "rocksdb {}: no table '{}'", path_, name);
  // The column family first: a crash before the dim key goes leaves a key open() ignores.
  SPINDLE_TRY(from_rocks(db_->DropColumnFamily(it->second), "drop table " + name, path_));
  (void)db_->DestroyColumnFamilyHandle(it->second);
  handles_.erase(it);
  dims_.erase(name);
  return from_rocks(db_->Delete(rocksdb::WriteOptions(), dim_key(name)),
                    "forget the dim of " + name, path_);
}

expected<rocksdb::ColumnFamilyHandle*> persistent_db::handle(const std::string& table) const {
  std::lock_guard lock(mu_);
  const auto it = handles_.find(table);
  if (it == handles_.end() || !dims_.count(table)) {
    return make_error(errc::not_found, "rocksdb {}: no table '{}'", path_, table);
  }
  return it->second;
}

expected<std::uint64_t> persistent_db::lookup(const std::string& table,
                                              std::span<const cache_key> keys,
                                              std::span<float> values,
                                              std::span<std::uint8_t> found) const {
  SPINDLE_ASSIGN_OR_RETURN(std::uint32_t dim, table_dim(table));
  SPINDLE_ASSIGN_OR_RETURN(rocksdb::ColumnFamilyHandle * h, handle(table));
  if (values.size() != keys.size() * dim || found.size() != keys.size()) {
    return make_error(errc::invalid_argument, "rocksdb {} lookup '{}': {} keys need {} values",
                      path_, table, keys.size(), keys.size() * dim);
  }
  std::vector<char> key_bytes(keys.size() * 8);
  std::vector<rocksdb::Slice> slices;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    encode_key(keys[i], key_bytes.data() + i * 8);
    slices.emplace_back(key_bytes.data() + i * 8, 8);
  }
  std::vector<rocksdb::PinnableSlice> out(keys.size());
  std::vector<rocksdb::Status> st(keys.size());
  db_->MultiGet(rocksdb::ReadOptions(), h, keys.size(), slices.data(), out.data(), st.data());
  std::uint64_t hits = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    found[i] = 0;
    if (st[i].IsNotFound()) continue;
    SPINDLE_TRY(from_rocks(st[i], fmt::format("lookup '{}' key {}", table, keys[i]), path_));
    if (out[i].size() != std::size_t{dim} * sizeof(float)) {
      return make_error(errc::corrupt_data,
                        "rocksdb {}: table '{}' key {} holds {} bytes, expected {}", path_, table,
                        keys[i], out[i].size(), dim * sizeof(float));
    }
    std::memcpy(values.data() + i * dim, out[i].data(), out[i].size());
    found[i] = 1;
    ++hits;
  }
  return hits;
}

status persistent_db::insert(const std::string& table, std::span<const cache_key> keys,
                             std::span<const float> values) {
  SPINDLE_ASSIGN_OR_RETURN(std::uint32_t dim, table_dim(table));
  SPINDLE_ASSIGN_OR_RETURN(rocksdb::ColumnFamilyHandle * h, handle(table));
  if (values.size() != keys.size() * dim) {
    return make_error(errc::invalid_argument,
                      "rocksdb {} insert '{}': {} keys need {} values, got {}", path_, table,
                      keys.size(), keys.size() * dim, values.size());
  }
  rocksdb::WriteBatch batch;
  char k[8];
  for (std::size_t i = 0; i < keys.size(); ++i) {
    encode_key(keys[i], k);
    batch.Put(h, rocksdb::Slice(k, 8),
              rocksdb::Slice(reinterpret_cast<const char*>(values.data() + i * dim),
                             dim * sizeof(float)));
  }
  return from_rocks(db_->Write(rocksdb::WriteOptions(), &batch), "insert into " + table, path_);
}

status persistent_db::bulk_load(const std::string& table, std::span<const float> rows,
                                std::uint32_t dim, cache_key first_key) {
  if (dim == 0 || rows.size() % dim != 0) {
    return make_error(errc::invalid_argument,
                      "rocksdb {} bulk load '{}': {} floats is not a "
                      "whole number of rows of dim {}",
                      path_, table, rows.size(), dim);
  }
  SPINDLE_TRY(create_table(table, dim));
  const std::uint64_t n = rows.size() / dim;
  constexpr std::uint64_t batch_rows = 8192;
  // One batch or less is instant: no bar (a table's marker row would print "1 rows").
  std::optional<progress> bar;
  if (n > batch_rows) bar.emplace("load " + table + " into rocksdb", n, "rows");
  std::vector<cache_key> keys;
  for (std::uint64_t begin = 0; begin < n; begin += batch_rows) {
    const std::uint64_t end = std::min(n, begin + batch_rows);
    keys.resize(end - begin);
    for (std::uint64_t i = begin; i < end; ++i) keys[i - begin] = first_key + i;
    SPINDLE_TRY(insert(table, keys, rows.subspan(begin * dim, (end - begin) * dim)));
    if (bar) bar->advance(end - begin);
  }
  if (bar) bar->finish();
  SPINDLE_ASSIGN_OR_RETURN(rocksdb::ColumnFamilyHandle * h, handle(table));
  return from_rocks(db_->Flush(rocksdb::FlushOptions(), h), "flush " + table, path_);
}

status persistent_db::bulk_load_npy(const std::string& table, const std::string& npy_path) {
  SPINDLE_ASSIGN_OR_RETURN(npy_array a, npy_array::open(npy_path));
  if (a.shape().size() != 2 || a.shape()[1] <= 0) {
    return make_error(errc::invalid_argument, "{}: embedding table must be 2-D [rows, dim]",
                      npy_path);
  }
  SPINDLE_ASSIGN_OR_RETURN(std::span<const float> v, a.as<float>());
  return bulk_load(table, v, static_cast<std::uint32_t>(a.shape()[1]));
}

status persistent_db::bulk_load_safetensors(const std::string& table, const std::string& path,
                                            const std::string& tensor) {
  SPINDLE_ASSIGN_OR_RETURN(safetensors_file f, safetensors_file::open(path));
  const auto it = f.tensors().find(tensor);
  if (it == f.tensors().end()) {
    return make_error(errc::not_found, "{}: no tensor '{}'", path, tensor);
  }
  if (it->second.shape.size() != 2 || it->second.shape[1] <= 0) {
    return make_error(errc::invalid_argument, "{}: tensor '{}' has shape {}, expected [rows, dim]",
                      path, tensor, format_shape(it->second.shape));
  }
  SPINDLE_ASSIGN_OR_RETURN(std::vector<float> v, f.as_f32(tensor, {}));
  return bulk_load(table, v, static_cast<std::uint32_t>(it->second.shape[1]));
}

expected<std::uint64_t> persistent_db::approximate_size(const std::string& table) const {
  SPINDLE_ASSIGN_OR_RETURN(rocksdb::ColumnFamilyHandle * h, handle(table));
  std::uint64_t n = 0;
  db_->GetIntProperty(h, "rocksdb.estimate-num-keys", &n);
  return n;
}

}  // namespace spindle::hps
