// What one dataset keeps on the GPU, shared by every pipeline's device executor
// and every model served over it: the graph's CSR (sampling), the feature
// tiers of Quiver §5.2 (the highest-FAP rows in device memory, the rest read
// from host memory over UVA, the per-node lookup on the device) and each
// model's weights, uploaded once. Per-batch memory, streams and cuBLAS handles
// are the executors' own. Thread-safe after create(). Needs a CUDA device.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "features/feature_tiers.hpp"
#include "graph/dataset.hpp"
#include "serving/cuda_layers.hpp"
#include "serving/cuda_sampling.hpp"

namespace spindle::serving {

class cuda_resident {
 public:
  /// On GPU `gpu`: uploads ds's CSR and the device tier of `tiers` (from
  /// plan_feature_tiers or plan_gpu_tiers) and maps the host features for the rest.
  static expected<std::shared_ptr<cuda_resident>> create(const graph::dataset& ds,
                                                         features::feature_tiers tiers, int gpu = 0);
  /// The same for a cluster rank, whose dataset holds its own rows at most: the
  /// device tier's rows come through fill_rows (from the cluster's shards), and
  /// rows outside it are not read here (the caller gathers them: gather_split).
  static expected<std::shared_ptr<cuda_resident>> create_for_rank(const graph::dataset& ds,
                                                                  features::feature_tiers tiers,
                                                                  int gpu = 0);
  /// Fills the device tier of a create_for_rank resident through `read` (rows
  /// of the given nodes, in order, to host memory); once: later calls return at
  /// once. The rows never change (a rank with a GPU takes no graph updates).
  status fill_rows(const std::function<status(std::span<const std::int64_t>, float*)>& read);
  /// Whether the device tier holds its rows (always, but for create_for_rank
  /// before fill_rows).
  bool rows_ready() const { return rows_ready_.load(std::memory_order_acquire); }
  /// Whether node v's row is in the device tier.
  bool on_device(std::int64_t v) const {
    return v >= 0 && std::size_t(v) < tiers_.tier.size() && tiers_.tier[std::size_t(v)] == 0;
  }
  ~cuda_resident();
  cuda_resident(const cuda_resident&) = delete;
  cuda_resident& operator=(const cuda_resident&) = delete;

  int gpu() const { return gpu_; }
  const std::shared_ptr<const device_csr>& csr() const { return csr_; }
  const features::feature_tiers& tiers() const { return tiers_; }
  /// Whether `table` is the dataset's feature table (the one held in the tiers).
  bool holds(std::span<const float> table) const {
    return !features_.empty() && table.data() == features_.data();
  }
  /// out[i * dim ...] = the feature row of ids[i] (device memory), on `stream`;
  /// the caller's current device must be gpu().
  status gather_async(std::int64_t dim, const std::int64_t* ids, std::int64_t n, float* out,
                      void* stream) const;
  /// `m`'s weights on the device (uploaded on first use, then shared).
  expected<const device_model*> model(const nn::model& m);
  /// Frees `m`'s device weights (the model is being unloaded).
  void forget(const nn::model& m);

 private:
  cuda_resident() = default;

  int gpu_ = 0;
  std::int64_t dim_ = 0;
  std::atomic<bool> rows_ready_{true};
  std::mutex fill_mu_;
  std::shared_ptr<const device_csr> csr_;
  features::feature_tiers tiers_;
  std::span<const float> features_;
  void* device_rows_ = nullptr;
  void* lookup_tier_ = nullptr;
  void* lookup_row_ = nullptr;
  const void* host_rows_ = nullptr;  // UVA address of the host features
  std::mutex mu_;
  std::map<const nn::model*, std::unique_ptr<device_model>> models_;  // guarded by mu_
};

}  // namespace spindle::serving
