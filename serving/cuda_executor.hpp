// The device batch executor (Quiver: PSGS sends large batches to the GPU): the
// batch's sample by the CUDA sampling kernel, its feature gather by the gather
// kernel over the dataset's feature tiers (serving/cuda_resident: the highest-FAP
// rows in device memory, the rest read from host memory through UVA), and its
// forward pass: GraphSAGE, GCN, GIN and GAT on the device (serving/cuda_layers). Each executor has
// its own arena, stream and cuBLAS handle; the graph, tiers and weights are the resident's, shared.
// Needs a CUDA device: create() names why not. One pipeline at a time; forward_in may run from
// several GNNSched workers at once (each slot its own stream and handle).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "gpu/device.hpp"
#include "gpu/device_arena.hpp"
#include "graph/dataset.hpp"
#include "serving/batch_executor.hpp"
#include "serving/cuda_resident.hpp"
#include "serving/device_rows_note.hpp"
#include "serving/peer_exchange.hpp"

namespace spindle::serving {

class cuda_executor final : public batch_executor {
 public:
  /// An executor on `resident`'s GPU; with `peers`, rows a peer GPU holds are
  /// fetched from it over NCCL (else read from host memory over UVA).
  static expected<std::unique_ptr<cuda_executor>> create(
      std::shared_ptr<cuda_resident> resident, std::shared_ptr<peer_exchange> peers = nullptr);
  ~cuda_executor() override;
  std::string_view name() const override { return "cuda"; }
  SPINDLE_BATCH_EXECUTOR_OVERRIDES;
  void gather_for_pass(std::span<const float> table, std::int64_t dim,
                       std::span<const std::int64_t> ids, float* out) override;
  status gather_from(const feature_source& source, std::int64_t dim,
                     std::span<const std::int64_t> ids, float* out, bool for_pass) override;
  status host_rows(float* out) override;
  void drop_rows() override;
  expected<nn::tensor> forward_in(device_slot slot, const nn::model& m, nn::allocator& a,
                                  std::span<const nn::block> blocks, std::span<const float> degree,
                                  const nn::tensor& x) override;
  std::uint64_t slot_bytes(const nn::model& m, std::span<const nn::block> blocks,
                           std::int64_t x_rows, std::size_t degree_bytes) const override;
  const features::feature_tiers& tiers() const { return resident_->tiers(); }

 private:
  cuda_executor() = default;
  status gather_on_device(std::int64_t dim, std::span<const std::int64_t> ids, float* out,
                          bool download);
  status download_rows(float* out, std::size_t bytes);
  void bring_back_pending();
  status gather_split(const feature_source& source, std::int64_t dim,
                      std::span<const std::int64_t> ids, float* out, bool download);
  void keep_pending(float* out, std::int64_t dim, std::span<const std::int64_t> ids,
                    std::span<const float> table, const feature_source* source);
  // ids[k] to own_ids_ where `own(ids[k])`, else peer_ids_, with k in own_at_ / peer_at_.
  template <class Own>
  void split_ids(std::span<const std::int64_t> ids, Own&& own) {
    own_ids_.clear(), peer_ids_.clear(), own_at_.clear(), peer_at_.clear();
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const bool here = own(ids[k]);
      (here ? own_ids_ : peer_ids_).push_back(ids[k]);
      (here ? own_at_ : peer_at_).push_back(std::int64_t(k));
    }
  }
  expected<nn::tensor> forward_on_device(const nn::model& m, nn::allocator& a,
                                         std::span<const nn::block> blocks,
                                         std::span<const float> degree, const nn::tensor& x,
                                         const float* x_device);
  const float* take_gathered(const nn::tensor& x);
  status grow_arena(std::size_t at_least);
  expected<void*> blas_for(void* stream);

  std::shared_ptr<cuda_resident> resident_;
  std::shared_ptr<peer_exchange> peers_;
  std::unique_ptr<cuda_sampling_executor> sampler_;
  host_executor host_;  // fallbacks, and the gather of a table that is not the dataset's
  std::unique_ptr<gpu::device_arena> arena_;  // a batch's gather and layer buffers
  gpu::pinned_buffer staging_;                // gathered rows come back through it
  void* blas_ = nullptr;                      // on arena_'s stream
  std::mutex slot_mu_;
  std::map<void*, void*> slot_blas_;              // a cuBLAS handle per GNNSched stream; guarded
  gpu::device_buffer gathered_;                   // the last gather's rows, on the device
  device_rows_note gathered_for_;                 // ... and the host rows they mirror
  // A gather_for_pass whose rows have not come back to the host: its target,
  // and what to gather there on the host should the download fail. The ids and
  // the source are the caller's (its batch's sampled nodes, the pipeline's
  // source), alive until drop_rows at the batch's end: nothing is copied per batch.
  struct pending_rows {
    float* out = nullptr;
    std::size_t bytes = 0;
    std::span<const float> table;             // ... or, for a cluster rank's rows:
    const feature_source* source = nullptr;
    std::int64_t dim = 0;
    std::span<const std::int64_t> ids;
  } pending_;
  std::vector<float> source_rows_;  // rows read through a source, before their upload
  float* lost_ = nullptr;  // a target whose rows could not be brought back (host_rows refuses it)
  std::vector<std::int64_t> own_ids_, peer_ids_;  // a gather split by where rows are
  std::vector<std::int64_t> own_at_, peer_at_;
};

/// Where a server's GPUs keep features: how many GPUs, and whether they
/// partition the device tier (NVLink: each row on one GPU, fetched by peers
/// over NCCL) or replicate it (PCIe). Quiver decides by the topology's links.
struct gpu_layout {
  int gpus = 1;
  bool partition = false;
};

/// The large executors of one dataset: on GPUs, a cuda_executor per pipeline
/// (pipelines dealt round-robin over the GPUs) over one cuda_resident per GPU;
/// on the host, none (PSGS's large executor is then the thread pool). What
/// serve, the node runtime and calibrate share.
class device_executors {
 public:
  static expected<device_executors> create(const graph::dataset& ds, gpu::device_kind device,
                                           std::size_t device_feature_bytes_per_gpu,
                                           gpu_layout layout = {});
  /// A cluster rank's (node --device cuda), on its first GPU: the graph there and
  /// a device tier of the highest-FAP rows of `device_feature_bytes`, filled by
  /// fill_rows through the cluster's shards (the rank's dataset holds its own rows at most).
  static expected<device_executors> create_for_rank(const graph::dataset& ds,
                                                    std::size_t device_feature_bytes);
  /// Fills every GPU's device tier through `read` (once; see cuda_resident).
  status fill_rows(const feature_source& read);
  bool rows_ready() const {
    return std::all_of(residents_.begin(), residents_.end(),
                       [](const auto& r) { return r->rows_ready(); });
  }
  /// A new executor (null on the host), on the next GPU in turn.
  expected<std::shared_ptr<batch_executor>> make();
  /// Frees `m`'s device weights (call when `m` is unloaded).
  void forget(const nn::model& m) const;
  int gpus() const { return int(residents_.size()); }

 private:
  std::vector<std::shared_ptr<cuda_resident>> residents_;
  std::shared_ptr<peer_exchange> peers_;
  int next_ = 0;
};

/// device_executors::create(...).make(): one executor, for a single user.
expected<std::shared_ptr<batch_executor>> make_large_executor(const graph::dataset& ds,
                                                              gpu::device_kind device,
                                                              std::size_t device_feature_bytes);

}  // namespace spindle::serving
