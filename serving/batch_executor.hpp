// Where one batch's work runs (Quiver §4.2: PSGS picks the executor per
// batch): the batch's joint k-hop sample, the gather of its unique feature
// rows, and its forward pass. Two host executors: `small` runs everything on
// the calling pipeline's thread; `large` spreads one batch over a thread pool
// (each hop's frontier split in row ranges, gather and GEMM/aggregation rows
// split over the pool's threads). A device executor (CUDA) implements the same
// three calls. An executor is used by one pipeline thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/thread_pool.hpp"
#include "gpu/memory_pool.hpp"
#include "graph/sampler.hpp"
#include "nn/model.hpp"

namespace spindle::serving {

/// Fills `out` ([ids.size() x F] float32) with the feature rows of `ids` (unique
/// ids); the default reads the dataset's own features, a cluster reader gathers
/// from shards (one call per batch: one completion per remote shard).
using feature_source = std::function<status(std::span<const std::int64_t> ids, float* out)>;

/// A GNNSched task's share of a device memory pool and the stream its work runs
/// on (GNNSched §3.2 on a GPU: the tasks of a group each on their own stream).
using device_slot = gpu::pool_slot;

class batch_executor {
 public:
  virtual ~batch_executor() = default;
  virtual std::string_view name() const = 0;
  /// The batch's joint sample into `out` (capacity reused).
  virtual status sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                        const graph::sample_options& options, graph::sampled_subgraph& out) = 0;
  /// out[i] = table row ids[i] ([ids.size() x dim]); ids are unique and in range.
  virtual void gather(std::span<const float> table, std::int64_t dim,
                      std::span<const std::int64_t> ids, float* out) = 0;
  /// gather() for a forward pass this executor runs next, on the same thread: a
  /// device executor may keep the rows on the device and fill `out` only when
  /// host_rows(out) asks (its forward pass of those rows reads them there). `ids`
  /// (and gather_from's `source`) must stay alive until drop_rows.
  virtual void gather_for_pass(std::span<const float> table, std::int64_t dim,
                               std::span<const std::int64_t> ids, float* out) {
    gather(table, dim, ids, out);
  }
  /// The rows of `ids` through `source` (a cluster rank's shards), of `dim`
  /// floats each; `for_pass` as gather_for_pass. A device executor whose device
  /// tier holds some of them reads those there and the rest through `source`.
  virtual status gather_from(const feature_source& source, std::int64_t /*dim*/,
                             std::span<const std::int64_t> ids, float* out, bool /*for_pass*/) {
    return source(ids, out);
  }
  /// Fills `out` when it is a gather_for_pass target whose rows are still on the
  /// device (before anything but this executor's forward() reads them).
  virtual status host_rows(float* /*out*/) { return status::ok(); }
  /// Forgets a gather_for_pass target not read back (its batch is done).
  virtual void drop_rows() {}
  /// The model's forward pass over the batch's blocks.
  virtual expected<nn::tensor> forward(const nn::model& m, nn::allocator& a,
                                       std::span<const nn::block> blocks,
                                       std::span<const float> degree, const nn::tensor& x) = 0;
  /// The forward pass with its buffers in `slot` and its work on the slot's
  /// stream (may run beside other slots' passes). Executors without device
  /// layers for `m` answer errc::unsupported, and the caller runs forward().
  virtual expected<nn::tensor> forward_in(device_slot slot, const nn::model& m, nn::allocator& a,
                                          std::span<const nn::block> blocks,
                                          std::span<const float> degree, const nn::tensor& x);
  /// The slot bytes forward_in needs beyond the host estimate's (a device pass
  /// copies the features and block CSR into its slot); 0 on the host.
  virtual std::uint64_t slot_bytes(const nn::model&, std::span<const nn::block>, std::int64_t,
                                   std::size_t) const {
    return 0;
  }
};

/// The three calls every executor overrides (sample, gather, forward), declared once.
#define SPINDLE_BATCH_EXECUTOR_OVERRIDES                                                         \
  status sample(const graph::csr_view& g, std::span<const std::int64_t> seeds,                   \
                const graph::sample_options& options, graph::sampled_subgraph& out) override;    \
  void gather(std::span<const float> table, std::int64_t dim, std::span<const std::int64_t> ids, \
              float* out) override;                                                              \
  expected<nn::tensor> forward(const nn::model& m, nn::allocator& a,                             \
                               std::span<const nn::block> blocks, std::span<const float> degree, \
                               const nn::tensor& x) override

/// The host executors: `pool` null is the small one (the caller's thread), a
/// pool the large one (the pool's threads and the caller; the pool must outlive it).
class host_executor final : public batch_executor {
 public:
  explicit host_executor(thread_pool* pool = nullptr);
  std::string_view name() const override { return name_; }
  SPINDLE_BATCH_EXECUTOR_OVERRIDES;

 private:
  thread_pool* pool_;
  std::string name_;
  graph::inline_executor inline_;
  std::unique_ptr<graph::pooled_executor> pooled_;
};

/// out[i] = table row ids[i], prefetching a few rows ahead: the gather's
/// per-thread kernel.
void gather_rows(std::span<const float> table, std::int64_t dim, std::span<const std::int64_t> ids,
                 float* out);

}  // namespace spindle::serving
