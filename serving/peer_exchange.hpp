// The feature exchange between the GPUs of one server whose device tier is
// partitioned (NVLink; Quiver §5.2): a GPU's batch asks each
// peer for the rows that peer holds; every owner gathers its rows with the
// gather kernel, and one grouped NCCL send/recv round (gpu::nccl_group) moves
// them to the asking GPU. Which rows cross is plan_exchange's bookkeeping and
// gpu_tiers' owners, both host-tested. Thread-safe: one exchange at a time.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "features/feature_tiers.hpp"
#include "gpu/device_arena.hpp"
#include "gpu/nccl_exchange.hpp"
#include "serving/cuda_resident.hpp"

namespace spindle::serving {

class peer_exchange {
 public:
  /// One resident per GPU (index = GPU), partitioned by `tiers`; fails, naming
  /// why, without NCCL or without that many GPUs.
  static expected<std::shared_ptr<peer_exchange>> create(
      std::vector<std::shared_ptr<cuda_resident>> residents, std::vector<std::int32_t> owner);

  /// Whether GPU `gpu` fetches node v from a peer.
  bool from_peer(int gpu, std::int64_t v) const {
    const auto o = owner_[std::size_t(v)];
    return o >= 0 && o != gpu;
  }
  /// Row place_at[k] of `dst` (device memory of `gpu`) = the row of ids[k],
  /// each held by a GPU other than `gpu`, fetched from its owner over NCCL and
  /// placed by the place kernel on `stream` (done when this returns).
  status fetch(int gpu, std::span<const std::int64_t> ids,
               const std::vector<std::int64_t>& place_at, std::int64_t dim, float* dst,
               void* stream);
  std::uint64_t rows_fetched() const { return rows_fetched_; }

 private:
  struct scratch {  // one GPU's buffers
    gpu::device_buffer ids, rows;
  };
  peer_exchange() = default;

  std::mutex mu_;
  std::unique_ptr<gpu::nccl_group> nccl_;
  std::vector<std::shared_ptr<cuda_resident>> residents_;
  std::vector<std::int32_t> owner_;
  std::vector<scratch> scratch_;    // per GPU; guarded by mu_
  std::uint64_t rows_fetched_ = 0;  // guarded by mu_
};

}  // namespace spindle::serving
