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

// Device memory freed at scope end.
struct device_block {
  void* p = nullptr;
  explicit device_block(void* q) : p(q) {}
  device_block(const device_block&) = delete;
  ~device_block() { gpu::device_free(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

expected<std::unique_ptr<device_block>> upload_block(const void* data, std::size_t bytes) {
  SPINDLE_ASSIGN_OR_RETURN(void* p, upload(data, bytes));
  return std::make_unique<device_block>(p);
}

}  // namespace

// One model's GraphSAGE weights in device memory (lin_l, its bias, lin_r per layer).
struct cuda_executor::device_weights {
  std::vector<std::unique_ptr<device_block>> w_l, b_l, w_r;
};

expected<const cuda_executor::device_weights*> cuda_executor::weights_of(const nn::model& m) {
  if (auto it = weights_.find(&m); it != weights_.end()) return it->second.get();
  auto w = std::make_unique<device_weights>();
  for (int l = 0; l < m.desc().layers; ++l) {
    auto put = [&](std::vector<std::unique_ptr<device_block>>& to, const char* name) -> status {
      const auto& t = m.param(fmt::format("convs.{}.{}", l, name));
      SPINDLE_ASSIGN_OR_RETURN(auto b, upload_block(t.data(), std::size_t(t.numel()) * 4));
      to.push_back(std::move(b));
      return status::ok();
    };
    SPINDLE_TRY(put(w->w_l, "lin_l.weight"));
    SPINDLE_TRY(put(w->b_l, "lin_l.bias"));
    SPINDLE_TRY(put(w->w_r, "lin_r.weight"));
  }
  return (weights_[&m] = std::move(w)).get();
}

// PyG SAGEConv per layer on the device; ReLU between layers; the result (and
// log_softmax, when the model asks) on the host.
expected<nn::tensor> cuda_executor::sage_forward(const nn::model& m, nn::allocator& a,
                                                 std::span<const nn::block> blocks,
                                                 const nn::tensor& x) {
  SPINDLE_ASSIGN_OR_RETURN(const auto* w, weights_of(m));
  const auto& d = m.desc();
  arena_->reset();  // the batch's x, blocks and activations
  auto put = [&](const void* data, std::size_t bytes) -> expected<void*> {
    SPINDLE_ASSIGN_OR_RETURN(void* p, arena_->take(bytes));
    SPINDLE_TRY(gpu::copy_to_device(p, data, bytes));
    return p;
  };
  SPINDLE_ASSIGN_OR_RETURN(void* h, put(x.data(), std::size_t(x.numel()) * 4));
  std::int64_t width = x.cols();
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const auto& b = blocks[l];
    const std::int64_t out = l + 1 == blocks.size() ? d.out : d.hidden;
    SPINDLE_ASSIGN_OR_RETURN(void* indptr, put(b.indptr.data(), b.indptr.size_bytes()));
    SPINDLE_ASSIGN_OR_RETURN(void* indices, put(b.indices.data(), b.indices.size_bytes()));
    SPINDLE_ASSIGN_OR_RETURN(auto* agg, arena_->take_n<float>(std::size_t(b.num_dst * width)));
    SPINDLE_ASSIGN_OR_RETURN(auto* y, arena_->take_n<float>(std::size_t(b.num_dst * out)));
    SPINDLE_TRY(gpu::sage_layer_async(
        blas_, static_cast<const std::int64_t*>(indptr), static_cast<const std::int32_t*>(indices),
        static_cast<const float*>(h), b.num_dst, width, out, w->w_l[l]->as<const float>(),
        w->b_l[l]->as<const float>(), w->w_r[l]->as<const float>(), agg, y,
        l + 1 == blocks.size() ? gpu::activation::none : gpu::activation::relu));
    h = y;
    width = out;
  }
  SPINDLE_TRY(gpu::synchronize(nullptr));
  const std::int64_t rows = blocks.back().num_dst;
  SPINDLE_ASSIGN_OR_RETURN(auto y, nn::tensor::empty(a, {rows, width}));
  SPINDLE_TRY(gpu::copy_to_host(y.data(), h, std::size_t(rows * width) * 4));
  if (d.log_softmax) nn::log_softmax_rows_(y);
  return y;
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
  weights_.clear();
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
  if (m.desc().arch == config::model_arch::graphsage && !blocks.empty()) {
    auto y = sage_forward(m, a, blocks, x);
    if (y) return y;
    log::warn("cuda executor: GraphSAGE on the device failed ({}); running on the host",
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
