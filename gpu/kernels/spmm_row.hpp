// One output element of the neighbour aggregation of a sampled block: a CSR
// SpMM row (out[row] = reduce over the row's edges of x[src]) at one column.
// The CUDA SpMM kernel (gpu/cuda/gnn_kernels.cu) runs it with a thread per
// column of a row; the host operator (nn::propagate) computes whole rows with
// vector kernels and is checked against it element for element (edges summed
// in the same order, mean as the sum times 1/count, so the results are equal).
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

enum class spmm_reduce { sum, mean, max, min };

/// Row `row`, column `col` of the aggregation of x [num_src x width] over the
/// block's CSR (indptr [rows + 1], indices: src rows). A row without edges is 0.
SPINDLE_HOST_DEVICE inline float spmm_element(const std::int64_t* indptr,
                                              const std::int32_t* indices, const float* x,
                                              std::int64_t width, std::int64_t row,
                                              std::int64_t col, spmm_reduce op) {
  const std::int64_t lo = indptr[row], hi = indptr[row + 1];
  if (hi <= lo) return 0.0f;
  float acc = op == spmm_reduce::max   ? -__builtin_inff()
              : op == spmm_reduce::min ? __builtin_inff()
                                       : 0.0f;
  for (std::int64_t e = lo; e < hi; ++e) {
    const float v = x[static_cast<std::int64_t>(indices[e]) * width + col];
    if (op == spmm_reduce::max)
      acc = acc > v ? acc : v;  // as the host's max_row (a NaN propagates)
    else if (op == spmm_reduce::min)
      acc = acc < v ? acc : v;  // as the host's min_row
    else
      acc += v;
  }
  if (op == spmm_reduce::mean) acc *= 1.0f / static_cast<float>(hi - lo);
  return acc;
}

/// GCN's normalized aggregation (PyG GCNConv with add_remaining_self_loops) at
/// one element: h_i / deg_i + Σ_{j ≠ i} h_j / sqrt(deg_i deg_j) over row i's
/// edges, `degree` being 1 + the sampled in-degree (nn::gcn_degrees).
SPINDLE_HOST_DEVICE inline float gcn_element(const std::int64_t* indptr,
                                             const std::int32_t* indices, const float* h,
                                             const float* degree, std::int64_t width,
                                             std::int64_t row, std::int64_t col) {
  const float di = 1.0f / sqrtf(degree[row]);
  float acc = (1.0f / degree[row]) * h[row * width + col];
  for (std::int64_t e = indptr[row]; e < indptr[row + 1]; ++e) {
    const std::int64_t j = indices[e];
    if (j == row) continue;  // an existing i->i edge is the self-loop term
    acc += di / sqrtf(degree[j]) * h[j * width + col];
  }
  return acc;
}

/// GCNConv with its options (a stack model's `gcn` op, nn::propagate_gcn with
/// gcn_options) at one element: `neighbours[v]` is v's in-neighbour count without
/// self edges (the graph's or the block's), `fill` the self-loop weight (1, 2 when
/// improved, 0 without self-loops); deg = neighbours + fill and 1/sqrt(0) is 0, as
/// PyG masks it. With fill > 0 an existing i->i edge is the self-loop term.
SPINDLE_HOST_DEVICE inline float gcn_inv_sqrt(const float* neighbours, std::int64_t v, float fill) {
  const float d = neighbours[v] + fill;
  return d > 0 ? 1.0f / sqrtf(d) : 0.0f;
}
SPINDLE_HOST_DEVICE inline float gcn_element_ex(const std::int64_t* indptr,
                                                const std::int32_t* indices, const float* h,
                                                const float* neighbours, float fill,
                                                std::int64_t width, std::int64_t row,
                                                std::int64_t col) {
  const float di = gcn_inv_sqrt(neighbours, row, fill);
  float acc = fill > 0 ? fill * di * di * h[row * width + col] : 0.0f;
  for (std::int64_t e = indptr[row]; e < indptr[row + 1]; ++e) {
    const std::int64_t j = indices[e];
    if (j == row && fill > 0) continue;
    acc += di * gcn_inv_sqrt(neighbours, j, fill) * h[j * width + col];
  }
  return acc;
}

/// GIN's input to its MLP at one element: (1 + eps) x_i + Σ_j x_j.
SPINDLE_HOST_DEVICE inline float gin_combine(float neighbour_sum, float self, float scale) {
  return neighbour_sum + scale * self;
}

}  // namespace spindle::gpu
