#include "serving/cuda_resident.hpp"

#include "core/log.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::serving {
namespace {

expected<void*> upload(const void* data, std::size_t bytes) {
  SPINDLE_ASSIGN_OR_RETURN(void* p, gpu::device_alloc(bytes));
  if (auto st = gpu::copy_to_device(p, data, bytes); !st) {
    gpu::device_free(p);
    return st;
  }
  return p;
}

}  // namespace

expected<std::shared_ptr<cuda_resident>> cuda_resident::create(const graph::dataset& ds,
                                                               features::feature_tiers tiers, int gpu) {
  SPINDLE_TRY(gpu::set_device(gpu));
  std::shared_ptr<cuda_resident> r(new cuda_resident);
  r->gpu_ = gpu;
  SPINDLE_ASSIGN_OR_RETURN(r->csr_, device_csr::create(ds.graph()));
  const std::int64_t n = ds.metadata().num_nodes, dim = ds.feature_dim();
  r->features_ = ds.features();
  r->tiers_ = std::move(tiers);
  std::vector<float> device_table;
  device_table.reserve(r->tiers_.device_nodes.size() * std::size_t(dim));
  for (auto v : r->tiers_.device_nodes)
    device_table.insert(device_table.end(), r->features_.begin() + v * dim,
                        r->features_.begin() + (v + 1) * dim);
  SPINDLE_ASSIGN_OR_RETURN(r->device_rows_, upload(device_table.data(), device_table.size() * 4));
  SPINDLE_ASSIGN_OR_RETURN(r->lookup_tier_, upload(r->tiers_.tier.data(), r->tiers_.tier.size()));
  SPINDLE_ASSIGN_OR_RETURN(r->lookup_row_, upload(r->tiers_.row.data(), r->tiers_.row.size() * 8));
  SPINDLE_ASSIGN_OR_RETURN(r->host_rows_,
                           gpu::map_host(r->features_.data(), r->features_.size_bytes()));
  log::info(
      "cuda: GPU {} holds the graph and {} of {} feature rows ({:.0f}% of FAP mass); the rest "
      "are read over UVA or from a peer GPU",
      gpu, r->tiers_.device_nodes.size(), n, 100 * r->tiers_.device_fap_share);
  return r;
}

expected<std::shared_ptr<cuda_resident>> cuda_resident::create_for_rank(
    const graph::dataset& ds, features::feature_tiers tiers, int gpu) {
  SPINDLE_TRY(gpu::set_device(gpu));
  std::shared_ptr<cuda_resident> r(new cuda_resident);
  r->gpu_ = gpu;
  r->dim_ = ds.feature_dim();
  r->rows_ready_ = tiers.device_nodes.empty();
  SPINDLE_ASSIGN_OR_RETURN(r->csr_, device_csr::create(ds.graph()));
  r->tiers_ = std::move(tiers);
  const std::size_t bytes = r->tiers_.device_nodes.size() * std::size_t(r->dim_) * 4;
  SPINDLE_ASSIGN_OR_RETURN(r->device_rows_, gpu::device_alloc(bytes));
  SPINDLE_ASSIGN_OR_RETURN(r->lookup_tier_, upload(r->tiers_.tier.data(), r->tiers_.tier.size()));
  SPINDLE_ASSIGN_OR_RETURN(r->lookup_row_, upload(r->tiers_.row.data(), r->tiers_.row.size() * 8));
  log::info("cuda: GPU {} holds the graph and will hold {} of {} feature rows ({:.0f}% of FAP "
            "mass), read once through the cluster's shards; the rest are read from them per batch",
            gpu, r->tiers_.device_nodes.size(), ds.metadata().num_nodes,
            100 * r->tiers_.device_fap_share);
  return r;
}

status cuda_resident::fill_rows(
    const std::function<status(std::span<const std::int64_t>, float*)>& read) {
  std::lock_guard lock(fill_mu_);
  if (rows_ready()) return status::ok();
  SPINDLE_TRY(gpu::set_device(gpu_));
  constexpr std::size_t kChunk = 65536;  // rows per read: bounded host memory
  const auto& nodes = tiers_.device_nodes;
  std::vector<float> rows;
  for (std::size_t at = 0; at < nodes.size(); at += kChunk) {
    const auto n = std::min(kChunk, nodes.size() - at);
    rows.resize(n * std::size_t(dim_));
    SPINDLE_TRY(read(std::span<const std::int64_t>(nodes).subspan(at, n), rows.data()));
    SPINDLE_TRY(gpu::copy_to_device(static_cast<float*>(device_rows_) + at * std::size_t(dim_),
                                    rows.data(), rows.size() * 4));
  }
  rows_ready_.store(true, std::memory_order_release);
  log::info("cuda: GPU {}'s device tier filled: {} rows through the cluster's shards", gpu_,
            nodes.size());
  return status::ok();
}

cuda_resident::~cuda_resident() {
  (void)gpu::set_device(gpu_);
  models_.clear();
  if (host_rows_) gpu::unmap_host(features_.data());
  gpu::device_free(device_rows_);
  gpu::device_free(lookup_tier_);
  gpu::device_free(lookup_row_);
}

status cuda_resident::gather_async(std::int64_t dim, const std::int64_t* ids, std::int64_t n,
                                   float* out, void* stream) const {
  return gpu::gather_async({static_cast<const std::uint8_t*>(lookup_tier_),
                            static_cast<const std::int64_t*>(lookup_row_)},
                           static_cast<const float*>(device_rows_),
                           static_cast<const float*>(host_rows_), dim, ids, n, out, stream);
}

expected<const device_model*> cuda_resident::model(const nn::model& m) {
  std::lock_guard lock(mu_);
  if (auto it = models_.find(&m); it != models_.end()) return it->second.get();
  SPINDLE_TRY(gpu::set_device(gpu_));
  SPINDLE_ASSIGN_OR_RETURN(auto dm, device_model::create(m));
  return (models_[&m] = std::move(dm)).get();
}

void cuda_resident::forget(const nn::model& m) {
  std::lock_guard lock(mu_);
  models_.erase(&m);
}

}  // namespace spindle::serving
