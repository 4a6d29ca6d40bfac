// One element of a feature gather over Quiver's tiers (§5.2): each node's row
// lives in the device tier (device memory) or the host tier (host memory the GPU
// reads over PCIe through UVA), as the lookup table says. Shared by the CUDA
// gather kernel and the host tests that check it against a plain gather.
#pragma once

#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

/// Where each node's feature row is: tier[node] 0 (device) or 1 (host), at
/// row[node] of that tier's table.
struct tier_lookup {
  const std::uint8_t* tier = nullptr;
  const std::int64_t* row = nullptr;
};

/// out[i][col] for node ids[i]: its row's column `col` from the tier holding it.
SPINDLE_HOST_DEVICE inline float gather_element(tier_lookup lookup, const float* device_rows,
                                                const float* host_rows, std::int64_t dim,
                                                std::int64_t node, std::int64_t col) {
  const float* table = lookup.tier[node] == 0 ? device_rows : host_rows;
  return table[lookup.row[node] * dim + col];
}

}  // namespace spindle::gpu
