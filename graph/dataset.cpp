#include "graph/dataset.hpp"

#include <algorithm>
#include <chrono>

#include "core/log.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>

#include "core/checksum.hpp"

namespace spindle::graph {
namespace {

// Maps one recorded array and checks it against its metadata record.
expected<npy_array> open_array(const std::string& dir, const array_record& r, bool verify) {
  SPINDLE_ASSIGN_OR_RETURN(auto a, npy_array::open(dir + "/" + r.file));
  if (a.type() != r.type)
    return make_error(errc::corrupt_data, "{}: dtype {} but metadata.json says {}", r.file,
                      to_string(a.type()), to_string(r.type));
  if (a.shape() != r.shape)
    return make_error(errc::corrupt_data, "{}: shape [{}] but metadata.json says [{}]", r.file,
                      fmt::join(a.shape(), ", "), fmt::join(r.shape, ", "));
  if (a.byte_size() != r.bytes)
    return make_error(errc::corrupt_data, "{}: {} data bytes but metadata.json says {}", r.file,
                      a.byte_size(), r.bytes);
  if (verify) {
    std::uint64_t sum = checksum(a.raw(), a.byte_size());
    if (sum != r.checksum)
      return make_error(errc::corrupt_data, "{}: checksum {} does not match metadata.json ({})",
                        r.file, checksum_hex(sum), checksum_hex(r.checksum));
  }
  return a;
}

status expect_shape(const array_record& r, std::vector<std::int64_t> shape) {
  if (r.shape != shape)
    return make_error(errc::corrupt_data, "{}: shape [{}], expected [{}] from metadata.json counts",
                      r.file, fmt::join(r.shape, ", "), fmt::join(shape, ", "));
  return status::ok();
}

status check_finite_nonneg(std::span<const double> v, const std::string& file, const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] < 0)
      return make_error(errc::corrupt_data, "{}: {}[{}]={} must be finite and >= 0", file, what, i,
                        v[i]);
  return status::ok();
}

status check_labels(std::span<const std::int64_t> labels, std::int64_t classes,
                    const std::string& file) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < -1 || labels[i] >= classes)  // -1: unlabelled (OGB's nan)
      return make_error(errc::corrupt_data, "{}: labels[{}]={} out of range (num_classes={})", file,
                        i, labels[i], classes);
  return status::ok();
}

}  // namespace

expected<dataset> dataset::open(const std::string& dir, open_options options) {
  dataset d;
  d.dir_ = dir;
  SPINDLE_ASSIGN_OR_RETURN(d.meta_, read_metadata(dir));
  const auto& m = d.meta_;
  for (const char* required : {"indptr", "indices"})
    if (!m.arrays.count(required))
      return make_error(errc::corrupt_data, "{}/metadata.json: arrays.{} is missing", dir,
                        required);
  for (const auto& [name, r] : m.arrays) {
    auto a = open_array(dir, r, options.verify_checksums);
    if (!a) return std::move(a).error().with_context(dir + "/");
    d.files_.emplace(name, std::move(*a));
  }
  auto status_in_dir = [&](status s) { return std::move(s).with_context(dir + "/"); };
  SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("indptr"), {m.num_nodes + 1})));
  SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("indices"), {m.num_edges})));
  d.graph_.num_nodes = m.num_nodes;
  SPINDLE_ASSIGN_OR_RETURN(d.graph_.indptr, d.files_.at("indptr").as<std::int64_t>());
  const npy_array& idx = d.files_.at("indices");
  if (idx.type() == dtype::i32)
    d.graph_.indices32 = *idx.as<std::int32_t>();
  else if (idx.type() == dtype::i64)
    d.graph_.indices64 = *idx.as<std::int64_t>();
  else
    return make_error(errc::corrupt_data, "{}/indices.npy: dtype {} (expected int32 or int64)", dir,
                      to_string(idx.type()));
  if (m.arrays.count("edge_weight")) {
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("edge_weight"), {m.num_edges})));
    SPINDLE_ASSIGN_OR_RETURN(d.graph_.edge_weight, d.files_.at("edge_weight").as<float>());
  }
  if (m.arrays.count("edge_attr")) {
    const auto& r = m.arrays.at("edge_attr");
    const std::int64_t k = r.shape.size() == 2 ? r.shape[1] : 0;
    SPINDLE_TRY(status_in_dir(expect_shape(r, {m.num_edges, std::max<std::int64_t>(k, 1)})));
    SPINDLE_ASSIGN_OR_RETURN(d.edge_attr_, d.files_.at("edge_attr").as<float>());
    d.edge_attr_cols_ = k;
  }
  SPINDLE_TRY(status_in_dir(d.open_types()));
  SPINDLE_TRY(status_in_dir(validate_csr(d.graph_)));
  SPINDLE_TRY(status_in_dir(d.check_edge_endpoints()));
  if (m.arrays.count("features")) {
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("features"), {m.num_nodes, m.feature_dim})));
    SPINDLE_ASSIGN_OR_RETURN(d.features_, d.files_.at("features").as<float>());
  }
  if (m.arrays.count("part_rows") || m.arrays.count("part_features")) {
    if (!m.arrays.count("part_rows") || !m.arrays.count("part_features"))
      return make_error(errc::corrupt_data, "{}: part_rows.npy and part_features.npy must be "
                                            "present together", dir);
    const auto rows = m.arrays.at("part_rows").shape.empty() ? 0 : m.arrays.at("part_rows").shape[0];
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("part_rows"), {rows})));
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("part_features"), {rows, m.feature_dim})));
    SPINDLE_ASSIGN_OR_RETURN(d.part_rows_, d.files_.at("part_rows").as<std::int64_t>());
    SPINDLE_ASSIGN_OR_RETURN(d.part_features_, d.files_.at("part_features").as<float>());
    for (std::size_t i = 0; i < d.part_rows_.size(); ++i)
      if (d.part_rows_[i] < 0 || d.part_rows_[i] >= m.num_nodes ||
          (i > 0 && d.part_rows_[i] <= d.part_rows_[i - 1]))
        return make_error(errc::corrupt_data,
                          "{}/part_rows.npy: entry {} = {} (node ids must be ascending, in 0..{})",
                          dir, i, d.part_rows_[i], m.num_nodes - 1);
  }
  for (auto [name, span] : {std::pair{"psgs", &d.psgs_}, std::pair{"fap", &d.fap_}}) {
    if (!m.arrays.count(name)) continue;
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at(name), {m.num_nodes})));
    SPINDLE_ASSIGN_OR_RETURN(*span, d.files_.at(name).as<double>());
    SPINDLE_TRY(status_in_dir(check_finite_nonneg(*span, m.arrays.at(name).file, name)));
  }
  if (m.arrays.count("psgs") != m.arrays.count("fap"))
    return make_error(errc::corrupt_data, "{}: psgs.npy and fap.npy must be present together", dir);
  if (m.arrays.count("labels")) {
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("labels"), {m.num_nodes})));
    SPINDLE_ASSIGN_OR_RETURN(d.labels_, d.files_.at("labels").as<std::int64_t>());
    SPINDLE_TRY(status_in_dir(check_labels(d.labels_, m.num_classes, "labels.npy")));
  }
  if (m.arrays.count("node_ids")) {
    SPINDLE_TRY(status_in_dir(expect_shape(m.arrays.at("node_ids"), {m.num_nodes})));
    SPINDLE_ASSIGN_OR_RETURN(d.node_ids_, d.files_.at("node_ids").as<std::int64_t>());
  }
  if (m.arrays.count("removed_nodes")) {
    const auto& r = m.arrays.at("removed_nodes");
    if (r.shape.size() != 1)
      return make_error(errc::corrupt_data, "{}/{}: must be one-dimensional", dir, r.file);
    SPINDLE_ASSIGN_OR_RETURN(d.removed_nodes_, d.files_.at("removed_nodes").as<std::int64_t>());
    for (std::size_t i = 0; i < d.removed_nodes_.size(); ++i)
      if (d.removed_nodes_[i] < 0 || d.removed_nodes_[i] >= m.num_nodes)
        return make_error(errc::corrupt_data, "{}/{}: removed_nodes[{}]={} out of range "
                          "(num_nodes={})", dir, r.file, i, d.removed_nodes_[i], m.num_nodes);
  }
  return d;
}

expected<dataset_writer> dataset_writer::create(const std::string& dir, dataset_metadata base) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(errc::io_error, "{}: cannot create directory: {}", dir, ec.message());
  dataset_writer w;
  w.dir_ = dir;
  w.meta_ = std::move(base);
  w.meta_.arrays.clear();
  return w;
}

expected<dataset_writer> dataset_writer::update(const std::string& dir) {
  dataset_writer w;
  w.dir_ = dir;
  SPINDLE_ASSIGN_OR_RETURN(w.meta_, read_metadata(dir));
  return w;
}

status dataset_writer::write_array(const std::string& name, dtype type,
                                   std::vector<std::int64_t> shape, const void* data) {
  array_record r{name + ".npy", type, shape, 0, 0};
  SPINDLE_ASSIGN_OR_RETURN(r.checksum, write_npy(dir_ + "/" + r.file, type, shape, data));
  r.bytes = dtype_size(type);
  for (auto s : shape) r.bytes *= static_cast<std::uint64_t>(s);
  meta_.arrays[name] = r;
  return status::ok();
}

status dataset_writer::write_graph(const csr_view& g) {
  meta_.num_nodes = g.num_nodes;
  meta_.num_edges = g.num_edges();
  SPINDLE_TRY(write_array("indptr", dtype::i64, {g.num_nodes + 1}, g.indptr.data()));
  if (g.wide())
    SPINDLE_TRY(write_array("indices", dtype::i64, {g.num_edges()}, g.indices64.data()));
  else
    SPINDLE_TRY(write_array("indices", dtype::i32, {g.num_edges()}, g.indices32.data()));
  meta_.arrays.erase("edge_weight");
  if (g.weighted())
    SPINDLE_TRY(write_array("edge_weight", dtype::f32, {g.num_edges()}, g.edge_weight.data()));
  meta_.arrays.erase("edge_types");
  if (g.typed())
    SPINDLE_TRY(write_array("edge_types", dtype::i16, {g.num_edges()}, g.edge_types.data()));
  return status::ok();
}

status dataset_writer::write_edge_attr(std::span<const float> values, std::int64_t cols) {
  const std::int64_t rows = cols > 0 ? std::int64_t(values.size()) / cols : 0;
  return write_array("edge_attr", dtype::f32, {rows, cols}, values.data());
}

status dataset_writer::write_features(
    std::int64_t rows, std::int64_t cols,
    const std::function<void(std::int64_t, std::int64_t, float*)>& fill) {
  std::string file = "features.npy";
  SPINDLE_ASSIGN_OR_RETURN(auto w, npy_writer::create(dir_ + "/" + file, dtype::f32, {rows, cols}));
  const std::int64_t chunk = std::max<std::int64_t>(1, (1 << 22) / std::max<std::int64_t>(cols, 1));
  std::vector<float> buf;
  for (std::int64_t lo = 0; lo < rows; lo += chunk) {
    std::int64_t hi = std::min(rows, lo + chunk);
    buf.assign(static_cast<std::size_t>((hi - lo) * cols), 0.0f);
    fill(lo, hi, buf.data());
    SPINDLE_TRY(w.write(buf.data(), buf.size() * sizeof(float)));
  }
  array_record r{file, dtype::f32, {rows, cols}, w.expected_bytes(), 0};
  SPINDLE_ASSIGN_OR_RETURN(r.checksum, w.close());
  meta_.arrays["features"] = r;
  meta_.feature_dim = cols;
  return status::ok();
}

status dataset_writer::write_labels(std::span<const std::int64_t> labels,
                                    std::int64_t num_classes) {
  meta_.num_classes = num_classes;
  return write_array("labels", dtype::i64, {static_cast<std::int64_t>(labels.size())},
                     labels.data());
}

status dataset_writer::write_removed_nodes(std::span<const std::int64_t> ids) {
  return write_array("removed_nodes", dtype::i64, {static_cast<std::int64_t>(ids.size())},
                     ids.data());
}

status dataset_writer::write_node_ids(std::span<const std::int64_t> ids) {
  return write_array("node_ids", dtype::i64, {static_cast<std::int64_t>(ids.size())}, ids.data());
}

status dataset_writer::write_node_names(const std::vector<std::string>& names) {
  std::vector<std::int64_t> ids(names.size());
  bool numeric = true;
  for (std::size_t i = 0; i < names.size() && numeric; ++i) {
    auto [p, ec] = std::from_chars(names[i].data(), names[i].data() + names[i].size(), ids[i]);
    numeric = ec == std::errc() && p == names[i].data() + names[i].size();
  }
  if (numeric) return write_node_ids(ids);
  std::string path = dir_ + "/node_names.txt";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return make_error(errc::io_error, "{}: cannot create: {}", path, std::strerror(errno));
  bool ok = true;
  for (const auto& n : names) ok = ok && std::fprintf(f, "%s\n", n.c_str()) > 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return make_error(errc::io_error, "{}: write failed", path);
  meta_.build["node_names"] = "node_names.txt";
  return status::ok();
}

status dataset_writer::write_metrics(const workload_metrics& m, const std::vector<int>& fanouts,
                                     const std::string& seed_distribution,
                                     const std::vector<std::string>& seed_node_types) {
  auto n = static_cast<std::int64_t>(m.psgs.size());
  SPINDLE_TRY(write_array("psgs", dtype::f64, {n}, m.psgs.data()));
  SPINDLE_TRY(write_array("fap", dtype::f64, {n}, m.fap.data()));
  meta_.fanouts = fanouts;
  meta_.seed_distribution = seed_distribution;
  meta_.seed_node_types = seed_node_types;
  meta_.hop_mass = m.hop_mass;
  return status::ok();
}

status dataset_writer::finish() {
  std::string path = dir_ + "/metadata.json", tmp = path + ".tmp";
  std::string text = metadata_to_json(meta_);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return make_error(errc::io_error, "{}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(errc::io_error, "{}: cannot write: {}", path, std::strerror(errno));
  return status::ok();
}

const float* dataset::feature_row(std::int64_t v) const {
  const auto f = std::size_t(meta_.feature_dim);
  if (!features_.empty()) return v >= 0 && v < num_nodes() ? features_.data() + std::size_t(v) * f : nullptr;
  auto it = std::lower_bound(part_rows_.begin(), part_rows_.end(), v);
  if (it == part_rows_.end() || *it != v) return nullptr;
  return part_features_.data() + std::size_t(it - part_rows_.begin()) * f;
}

status dataset_writer::write_partition(std::span<const std::int64_t> rows, std::int64_t dim,
                                       const std::function<const float*(std::int64_t)>& row_of) {
  SPINDLE_TRY(write_array("part_rows", dtype::i64, {std::int64_t(rows.size())}, rows.data()));
  std::string file = "part_features.npy";
  SPINDLE_ASSIGN_OR_RETURN(auto w, npy_writer::create(dir_ + "/" + file, dtype::f32,
                                                      {std::int64_t(rows.size()), dim}));
  for (auto v : rows) {
    const float* row = row_of(v);
    if (!row) return make_error(errc::invalid_argument, "partition: node {} has no feature row", v);
    SPINDLE_TRY(w.write(row, std::size_t(dim) * sizeof(float)));
  }
  array_record r{file, dtype::f32, {std::int64_t(rows.size()), dim}, w.expected_bytes(), 0};
  SPINDLE_ASSIGN_OR_RETURN(r.checksum, w.close());
  meta_.arrays["part_features"] = r;
  meta_.feature_dim = dim;
  return status::ok();
}

status dataset_writer::copy_array(const std::string& from, const std::string& name,
                                  const array_record& r) {
  std::error_code ec;
  std::filesystem::copy_file(from + "/" + r.file, dir_ + "/" + r.file,
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return make_error(errc::io_error, "{}/{}: cannot copy to {}: {}", from, r.file, dir_,
                      ec.message());
  meta_.arrays[name] = r;
  return status::ok();
}

void dataset::warm_features() const {
  if (features_.empty()) return;
  auto* base = reinterpret_cast<const std::uint8_t*>(features_.data());
  const std::size_t bytes = features_.size_bytes();
#ifdef MADV_POPULATE_READ
  const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
  const auto start = std::uintptr_t(base) / page * page;
  if (madvise(reinterpret_cast<void*>(start), bytes + (std::uintptr_t(base) - start),
              MADV_POPULATE_READ) == 0)
    return;
#endif
  volatile std::uint8_t sink = 0;  // older kernels: touch one byte per page
  for (std::size_t at = 0; at < bytes; at += 4096) sink = sink + base[at];
}

}  // namespace spindle::graph

namespace spindle::graph {

expected<dataset> open_for_serving(const std::string& dir, bool skip) {
  if (skip) {
    log::warn("{}: data checksums not verified (--no-verify-data): a damaged or altered file "
              "is served as it is",
              dir);
    return dataset::open(dir);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto d = dataset::open(dir, {.verify_checksums = true});
  if (!d) return d;
  std::uint64_t bytes = 0;
  for (const auto& [_, r] : d->metadata().arrays) bytes += r.bytes;
  log::info("{}: verified the checksums of {} arrays ({:.1f} MiB) in {:.2f} s", dir,
            d->metadata().arrays.size(), double(bytes) / 1048576.0,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return d;
}

std::int64_t dataset::live_num_nodes() const {
  return live_ ? live_->current()->num_nodes : num_nodes();
}

}  // namespace spindle::graph
