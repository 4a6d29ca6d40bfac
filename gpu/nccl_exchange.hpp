// Several GPUs in one server (Quiver §5.2, HPS §5): the feature exchange of a
// device tier partitioned over GPUs joined by NVLink (each GPU fetches its
// batch's rows from the GPU that holds them: one grouped ncclSend/ncclRecv
// round, an all-to-all), and the broadcast of online embedding updates to every
// GPU's cache (ncclBroadcast). The topology decides: peer links partition the
// tier and exchange; PCIe replicates it and nothing is exchanged. The
// bookkeeping (who asks whom for which rows) is pure and host-tested; the
// NCCL calls are thin and need the CUDA backend with NCCL (else unsupported).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.hpp"

namespace spindle::gpu {

enum class tier_sharing { replicate, partition };
/// NVLink (or any peer link): partition the device tier; PCIe: replicate it.
inline tier_sharing sharing_for(bool peer_links) {
  return peer_links ? tier_sharing::partition : tier_sharing::replicate;
}

/// One exchange: ask[dst][src] lists the ids GPU dst needs from GPU src, and
/// slot[dst][src][k] the position in dst's request the k-th answer fills.
struct exchange_plan {
  int gpus = 0;
  std::vector<std::vector<std::vector<std::int64_t>>> ask;
  std::vector<std::vector<std::vector<std::size_t>>> slot;
  /// Rows that cross between GPUs (own rows are read in place).
  std::uint64_t remote_rows() const;
};

/// `wanted[g]`: the ids GPU g's batch needs; `owner(id)`: the GPU holding its row.
exchange_plan plan_exchange(const std::vector<std::vector<std::int64_t>>& wanted, int gpus,
                            const std::function<int(std::int64_t)>& owner);

/// Where GPU `gpu`'s received rows go: the exchange lands them owner by owner
/// (plan.ask[gpu][0], then [1], ...); row j of that order belongs at
/// place_at[k] for the position k in `gpu`'s request it answers.
std::vector<std::int64_t> landing_positions(const exchange_plan& plan, int gpu,
                                            const std::vector<std::int64_t>& place_at);

/// A communicator over this server's GPUs 0..n-1 (ncclCommInitAll), one stream each.
class nccl_group {
 public:
  /// Fails (naming why) without NCCL, or with fewer usable GPUs than `gpus`.
  static expected<std::unique_ptr<nccl_group>> create(int gpus);
  virtual ~nccl_group() = default;
  /// The exchange's one round: send[s][d] (device memory of GPU s) holds
  /// plan.ask[d][s].size() rows of `dim` floats for GPU d; recv[d][s] receives them.
  virtual status exchange(const exchange_plan& plan, std::int64_t dim,
                          const std::vector<std::vector<const float*>>& send,
                          const std::vector<std::vector<float*>>& recv) = 0;
  /// Every GPU's buffers[g] (device memory of GPU g, `bytes` long) gets GPU root's.
  virtual status broadcast(int root, const std::vector<void*>& buffers, std::size_t bytes) = 0;
};

}  // namespace spindle::gpu
