// GAT's attention aggregation (PyG GATConv: self-loops added, heads
// concatenated) at one output element, plus the pieces the host operator
// (nn::propagate_gat) computes whole rows with: a node's score per head, an
// edge's LeakyReLU score and its softmax weight. The CUDA GAT kernel
// (gpu/cuda/gnn_kernels.cu) runs gat_element with a thread per column of a dst
// row; the host tests check it against nn::propagate_gat element for element.
// Edge order is GATConv's: the row's sampled neighbours except itself, then
// itself; the softmax sums in double, as the host does.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

/// Node j's score for head k: Σ_t h[j, k*c + t] · att[k*c + t] (h is [* x heads*c]).
SPINDLE_HOST_DEVICE inline float gat_node_score(const float* h, std::int64_t hc, std::int64_t c,
                                                const float* att, std::int64_t j, int k) {
  const float* x = h + j * hc + k * c;
  float s = 0;
  for (std::int64_t t = 0; t < c; ++t) s += x[t] * att[k * c + t];
  return s;
}

/// An edge's score before the softmax: LeakyReLU(score_src + score_dst).
SPINDLE_HOST_DEVICE inline float gat_edge_score(float src, float dst, float negative_slope) {
  const float s = src + dst;
  return s < 0 ? s * negative_slope : s;
}

/// An edge's softmax weight from its score, the row's max score and Σ exp(s - max).
SPINDLE_HOST_DEVICE inline float gat_weight(float score, float max_score, double sum) {
  return static_cast<float>(exp(static_cast<double>(score - max_score)) / sum);
}

/// Output element (row, col) of GAT's aggregation of h [num_src x heads*c],
/// with node scores s_src [num_src x heads] and s_dst [num_dst x heads].
SPINDLE_HOST_DEVICE inline float gat_element(const std::int64_t* indptr,
                                             const std::int32_t* indices, const float* h,
                                             std::int64_t hc, std::int64_t c, const float* s_src,
                                             const float* s_dst, int heads, std::int64_t row,
                                             std::int64_t col, float negative_slope) {
  const int k = static_cast<int>(col / c);
  const float sd = s_dst[row * heads + k];
  const std::int64_t lo = indptr[row], hi = indptr[row + 1];
  // Pass 1: the max score; pass 2: Σ exp; pass 3: the weighted sum (self last).
  float mx = gat_edge_score(s_src[row * heads + k], sd, negative_slope);
  for (std::int64_t e = lo; e < hi; ++e) {
    const std::int64_t j = indices[e];
    if (j == row) continue;
    const float s = gat_edge_score(s_src[j * heads + k], sd, negative_slope);
    mx = s > mx ? s : mx;
  }
  double sum = 0;
  for (std::int64_t e = lo; e < hi; ++e) {
    const std::int64_t j = indices[e];
    if (j != row)
      sum +=
          exp(static_cast<double>(gat_edge_score(s_src[j * heads + k], sd, negative_slope) - mx));
  }
  const float self = gat_edge_score(s_src[row * heads + k], sd, negative_slope);
  sum += exp(static_cast<double>(self - mx));
  float acc = 0;
  for (std::int64_t e = lo; e < hi; ++e) {
    const std::int64_t j = indices[e];
    if (j == row) continue;
    const float w = gat_weight(gat_edge_score(s_src[j * heads + k], sd, negative_slope), mx, sum);
    acc += w * h[j * hc + col];
  }
  return acc + gat_weight(self, mx, sum) * h[row * hc + col];
}

}  // namespace spindle::gpu
