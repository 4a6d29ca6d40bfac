// One output element of the neighbour aggregation of a sampled block: a CSR
// SpMM row (out[row] = reduce over the row's edges of x[src]) at one column.
// The CUDA SpMM kernel (gpu/cuda/gnn_kernels.cu) runs it with a thread per
// column of a row; the host operator (nn::propagate) computes whole rows with
// vector kernels and is checked against it element for element (edges summed
// in the same order, mean as the sum times 1/count, so the results are equal).
#pragma once

#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

enum class spmm_reduce { sum, mean, max };

/// Row `row`, column `col` of the aggregation of x [num_src x width] over the
/// block's CSR (indptr [rows + 1], indices: src rows). A row without edges is 0.
SPINDLE_HOST_DEVICE inline float spmm_element(const std::int64_t* indptr,
                                              const std::int32_t* indices, const float* x,
                                              std::int64_t width, std::int64_t row,
                                              std::int64_t col, spmm_reduce op) {
  const std::int64_t lo = indptr[row], hi = indptr[row + 1];
  if (hi <= lo) return 0.0f;
  float acc = op == spmm_reduce::max ? -__builtin_inff() : 0.0f;
  for (std::int64_t e = lo; e < hi; ++e) {
    const float v = x[static_cast<std::int64_t>(indices[e]) * width + col];
    if (op == spmm_reduce::max)
      acc = acc > v ? acc : v;  // as the host's max_row (a NaN propagates)
    else
      acc += v;
  }
  if (op == spmm_reduce::mean) acc *= 1.0f / static_cast<float>(hi - lo);
  return acc;
}

}  // namespace spindle::gpu
