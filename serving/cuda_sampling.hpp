// The GPU sampling executor (Quiver §4.2): each hop's frontier is expanded by
// the CUDA kernel (one thread block per frontier row, the host sampler's draw),
// and the ids are mapped to the batch's local ids on the host, as the inline
// executor does, so both give the same subgraph. Needs a CUDA device: create()
// fails naming why there is none. Uniform draws with fanouts 1..64 (or -1 for
// rows no longer than the fanout) only; other options are refused.
#pragma once

#include <memory>

#include "gpu/device_arena.hpp"
#include "graph/sampler.hpp"

namespace spindle::serving {

/// A graph's CSR copied to the device (graphs below 2^31 nodes).
class device_csr {
 public:
  static expected<std::shared_ptr<const device_csr>> create(const graph::csr_view& g);
  ~device_csr();
  device_csr(const device_csr&) = delete;
  device_csr& operator=(const device_csr&) = delete;
  const std::int64_t* indptr() const { return static_cast<const std::int64_t*>(indptr_); }
  const std::int32_t* indices() const { return static_cast<const std::int32_t*>(indices_); }
  std::int64_t num_nodes() const { return num_nodes_; }

 private:
  device_csr() = default;
  void* indptr_ = nullptr;
  void* indices_ = nullptr;
  std::int64_t num_nodes_ = 0;
};

class cuda_sampling_executor final : public graph::sampling_executor {
 public:
  /// Copies g's CSR to the device once (graphs below 2^31 nodes).
  static expected<std::unique_ptr<cuda_sampling_executor>> create(const graph::csr_view& g);
  /// Samples over a CSR already on the device (shared with other executors).
  static expected<std::unique_ptr<cuda_sampling_executor>> create(
      std::shared_ptr<const device_csr> csr);
  std::string_view name() const override { return "cuda"; }
  status sample_into(const graph::csr_view& g, std::span<const std::int64_t> seeds,
                     const graph::sample_options& options, graph::sampled_subgraph& out) override;

  /// The hop drawer over the device CSR (used by sample_into; public for tests).
  status draw_hop(std::span<const std::int64_t> frontier, int hop, int fanout, std::uint64_t seed,
                  std::vector<std::int64_t>& globals, std::vector<std::int64_t>& row_sizes);

 private:
  cuda_sampling_executor() = default;
  std::unique_ptr<gpu::device_arena> arena_;  // each hop's frontier and draws
  gpu::pinned_buffer staging_up_;             // the frontier copied up (DMA, no bounce)
  gpu::pinned_buffer staging_;                // the draws copied back
  std::shared_ptr<const device_csr> csr_;
};

}  // namespace spindle::serving
