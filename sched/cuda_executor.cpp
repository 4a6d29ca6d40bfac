#include "sched/cuda_executor.hpp"

#include "core/log.hpp"
#include "gpu/gnn_kernels.hpp"

namespace spindle::sched {
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

expected<const device_model*> cuda_executor::device_model_of(const nn::model& m) {
  if (auto it = models_.find(&m); it != models_.end()) return it->second.get();
  SPINDLE_ASSIGN_OR_RETURN(auto dm, device_model::create(m));
  return (models_[&m] = std::move(dm)).get();
}

expected<std::unique_ptr<cuda_executor>> cuda_executor::create(const graph::dataset& ds,
                                                               std::size_t device_feature_bytes) {
  std::unique_ptr<cuda_executor> ex(new cuda_executor);
  SPINDLE_ASSIGN_OR_RETURN(ex->sampler_, cuda_sampling_executor::create(ds.graph()));
  const std::int64_t n = ds.metadata().num_nodes, dim = ds.feature_dim();
  ex->features_ = ds.features();
  ex->tiers_ = plan_feature_tiers(ds.fap(), n, dim, device_feature_bytes);
  std::vector<float> device_table;
  device_table.reserve(ex->tiers_.device_nodes.size() * std::size_t(dim));
  for (auto v : ex->tiers_.device_nodes)
    device_table.insert(device_table.end(), ex->features_.begin() + v * dim,
                        ex->features_.begin() + (v + 1) * dim);
  SPINDLE_ASSIGN_OR_RETURN(ex->device_rows_, upload(device_table.data(), device_table.size() * 4));
  SPINDLE_ASSIGN_OR_RETURN(ex->lookup_tier_,
                           upload(ex->tiers_.tier.data(), ex->tiers_.tier.size()));
  SPINDLE_ASSIGN_OR_RETURN(ex->lookup_row_,
                           upload(ex->tiers_.row.data(), ex->tiers_.row.size() * 8));
  SPINDLE_ASSIGN_OR_RETURN(ex->host_rows_,
                           gpu::map_host(ex->features_.data(), ex->features_.size_bytes()));
  log::info(
      "cuda executor: {} of {} feature rows on the device ({:.0f}% of FAP mass), the rest "
      "read over UVA",
      ex->tiers_.device_nodes.size(), n, 100 * ex->tiers_.device_fap_share);
  return ex;
}

cuda_executor::~cuda_executor() {
  models_.clear();
  gpu::blas_destroy(blas_);
  if (host_rows_) gpu::unmap_host(features_.data());
  gpu::device_free(device_rows_);
  gpu::device_free(lookup_tier_);
  gpu::device_free(lookup_row_);
}

status cuda_executor::sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                             const graph::sample_options& options, graph::sampled_subgraph& out) {
  return sampler_->sample_into(g, seeds, options, out);
}

status cuda_executor::gather_on_device(std::int64_t dim, std::span<const std::int64_t> ids,
                                       float* out) {
  arena_->reset();
  SPINDLE_ASSIGN_OR_RETURN(auto* d_ids, arena_->take_n<std::int64_t>(ids.size()));
  SPINDLE_ASSIGN_OR_RETURN(auto* d_out, arena_->take_n<float>(ids.size() * std::size_t(dim)));
  SPINDLE_TRY(gpu::copy_to_device(d_ids, ids.data(), ids.size_bytes()));
  SPINDLE_TRY(gpu::gather_async({static_cast<const std::uint8_t*>(lookup_tier_),
                                 static_cast<const std::int64_t*>(lookup_row_)},
                                static_cast<const float*>(device_rows_),
                                static_cast<const float*>(host_rows_), dim, d_ids,
                                std::int64_t(ids.size()), d_out, arena_->stream()));
  SPINDLE_TRY(gpu::synchronize(arena_->stream()));
  return gpu::copy_to_host(out, d_out, ids.size() * std::size_t(dim) * 4);
}

void cuda_executor::gather(std::span<const float> table, std::int64_t dim,
                           std::span<const std::int64_t> ids, float* out) {
  // The dataset's own table is on the device tiers; any other (a remote
  // shard's rows), or a device failure, is gathered on the host.
  if (table.data() == features_.data() && gather_on_device(dim, ids, out)) return;
  host_.gather(table, dim, ids, out);
}

expected<nn::tensor> cuda_executor::forward(const nn::model& m, nn::allocator& a,
                                            std::span<const nn::block> blocks,
                                            std::span<const float> degree, const nn::tensor& x) {
  if (device_model::supports(m) && !blocks.empty()) {
    auto dm = device_model_of(m);
    auto y = dm ? (*dm)->forward(*arena_, blas_, a, blocks, degree, x) : dm.error();
    if (y) return y;
    log::warn("cuda executor: the device forward pass failed ({}); running on the host",
              y.error().message());
  }
  return host_.forward(m, a, blocks, degree, x);
}

expected<std::shared_ptr<batch_executor>> make_large_executor(const graph::dataset& ds,
                                                              gpu::device_kind device,
                                                              std::size_t device_feature_bytes) {
  if (device != gpu::device_kind::cuda) return std::shared_ptr<batch_executor>();
  SPINDLE_ASSIGN_OR_RETURN(auto ex, cuda_executor::create(ds, device_feature_bytes));
  return std::shared_ptr<batch_executor>(std::move(ex));
}

}  // namespace spindle::sched
