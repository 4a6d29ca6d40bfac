// The bytes one embedding-table row takes as held (nn/quantized_rows.hpp's
// row-wise layout, or float32): the one formula the tables and the memory
// estimates (colocation/pmc) both use.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spindle::nn {

/// A row of `dim` values held with `bits` 32 (float32), 8 (dim codes, float32
/// scale and bias) or 4 (two codes a byte, float16 scale and bias).
constexpr std::size_t quantized_row_bytes(std::int64_t dim, int bits) {
  if (bits == 8) return std::size_t(dim) + 2 * 4;
  if (bits == 4) return std::size_t(dim + 1) / 2 + 2 * 2;
  return std::size_t(dim) * 4;
}

}  // namespace spindle::nn
