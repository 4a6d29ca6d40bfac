// Quiver §5.2's feature tiers on one GPU: the rows of the nodes with the highest
// FAP (the ones sampling touches most) are copied to device memory up to a byte
// budget; every other row stays in host memory, read by the GPU over PCIe
// through UVA. The lookup table (tier and row per node) is what the gather
// kernel reads (gpu/kernels/gather_row.hpp). Pure logic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace spindle::features {

struct feature_tiers {
  std::vector<std::uint8_t> tier;          // per node: 0 device, 1 host
  std::vector<std::int64_t> row;           // per node: its row in that tier's table
  std::vector<std::int64_t> device_nodes;  // device table row r holds node device_nodes[r]
  double device_fap_share = 0;             // share of all FAP mass the device tier holds
};

/// Highest-FAP nodes first (ties by id) until `device_bytes` of dim-wide float
/// rows; host rows keep the dataset's own order (row = node id).
feature_tiers plan_feature_tiers(std::span<const double> fap, std::int64_t num_nodes,
                                 std::int64_t dim, std::size_t device_bytes);

/// The tiers of several GPUs in one server (Quiver §5.2 across GPUs). With
/// `partition` (GPUs joined by NVLink) the hottest gpus x fits rows are dealt
/// round-robin in FAP order, each held by one GPU, so the server keeps `gpus`
/// times as many rows on devices; otherwise (PCIe) every GPU holds the same
/// hottest rows. per_gpu[g] is GPU g's own tiers: a row another GPU holds is
/// g's host tier there, so a gather that does not fetch it from its owner still
/// reads it, over UVA.
struct gpu_tiers {
  std::vector<feature_tiers> per_gpu;
  std::vector<std::int32_t> owner;  // per node: the GPU holding it when partitioned, else -1
  double device_fap_share = 0;      // FAP mass on some GPU's memory
  /// Whether GPU g would fetch node v from a peer (a partitioned row of another GPU).
  bool from_peer(int g, std::int64_t v) const {
    const auto o = owner.empty() ? -1 : owner[std::size_t(v)];
    return o >= 0 && o != g;
  }
};
gpu_tiers plan_gpu_tiers(std::span<const double> fap, std::int64_t num_nodes, std::int64_t dim,
                         std::size_t device_bytes_per_gpu, int gpus, bool partition);

}  // namespace spindle::features
