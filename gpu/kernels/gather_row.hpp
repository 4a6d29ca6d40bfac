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

/// Where element `col` of source row i lands when rows are placed by position
/// (rows_to[i]: the destination row): the place kernel's one element.
SPINDLE_HOST_DEVICE inline std::int64_t placed_at(const std::int64_t* rows_to, std::int64_t dim,
                                                  std::int64_t i, std::int64_t col) {
  return rows_to[i] * dim + col;
}

/// dst row rows_to[i] = src row i, for i < n (the host's run of the place kernel).
inline void place_rows(const float* src, const std::int64_t* rows_to, std::int64_t n,
                       std::int64_t dim, float* dst) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t c = 0; c < dim; ++c) dst[placed_at(rows_to, dim, i, c)] = src[i * dim + c];
}

}  // namespace spindle::gpu
