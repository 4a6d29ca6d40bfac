// The device batch executor (Quiver: PSGS sends large batches to the GPU): the
// batch's sample by the CUDA sampling kernel, its feature gather by the gather
// kernel over the dataset's feature tiers (the highest-FAP rows in device
// memory, the rest read from host memory through UVA), and its forward pass:
// GraphSAGE, GCN and GIN on the device (sched/cuda_layers), GAT on the host. Needs a CUDA device;
// create() names why not. One pipeline at a time.
#pragma once

#include <map>
#include <memory>

#include "gpu/device.hpp"
#include "gpu/device_arena.hpp"
#include "graph/dataset.hpp"
#include "sched/batch_executor.hpp"
#include "sched/cuda_layers.hpp"
#include "sched/cuda_sampling.hpp"
#include "sched/feature_tiers.hpp"

namespace spindle::sched {

class cuda_executor final : public batch_executor {
 public:
  /// Copies the CSR and up to `device_feature_bytes` of feature rows (by FAP)
  /// to the device and maps the host features for the rest.
  static expected<std::unique_ptr<cuda_executor>> create(const graph::dataset& ds,
                                                         std::size_t device_feature_bytes);
  ~cuda_executor() override;
  std::string_view name() const override { return "cuda"; }
  status sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                const graph::sample_options& options, graph::sampled_subgraph& out) override;
  void gather(std::span<const float> table, std::int64_t dim, std::span<const std::int64_t> ids,
              float* out) override;
  expected<nn::tensor> forward(const nn::model& m, nn::allocator& a,
                               std::span<const nn::block> blocks, std::span<const float> degree,
                               const nn::tensor& x) override;
  const feature_tiers& tiers() const { return tiers_; }

 private:
  cuda_executor() = default;
  status gather_on_device(std::int64_t dim, std::span<const std::int64_t> ids, float* out);
  expected<const device_model*> device_model_of(const nn::model& m);

  std::unique_ptr<cuda_sampling_executor> sampler_;
  host_executor host_;  // the forward pass, and the gather of a table that is not the dataset's
  feature_tiers tiers_;
  std::span<const float> features_;
  void* device_rows_ = nullptr;
  void* lookup_tier_ = nullptr;
  void* lookup_row_ = nullptr;
  const void* host_rows_ = nullptr;  // UVA address of the host features
  void* blas_ = nullptr;
  std::unique_ptr<gpu::device_arena> arena_;  // a batch's gather and layer buffers
  std::map<const nn::model*, std::unique_ptr<device_model>> models_;  // weights uploaded once
};

/// PSGS's large executor for `device`: a cuda_executor on a GPU, none (the
/// pool) on the host. What serve, the node runtime and calibrate share.
expected<std::shared_ptr<batch_executor>> make_large_executor(const graph::dataset& ds,
                                                              gpu::device_kind device,
                                                              std::size_t device_feature_bytes);

}  // namespace spindle::sched
