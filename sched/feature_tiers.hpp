// Quiver §5.2's feature tiers on one GPU: the rows of the nodes with the highest
// FAP (the ones sampling touches most) are copied to device memory up to a byte
// budget; every other row stays in host memory, read by the GPU over PCIe
// through UVA. The lookup table (tier and row per node) is what the gather
// kernel reads (gpu/kernels/gather_row.hpp). Pure logic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace spindle::sched {

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

}  // namespace spindle::sched
