// Per-element logic of the normalisation layers a GNN stack uses between its
// message-passing layers, shared by the host operators (nn/ops_node.cpp) and
// device kernels: BatchNorm1d in eval mode (running statistics), LayerNorm
// over a row, and F.normalize's L2 row scale. Pure functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

/// BatchNorm1d (eval) as PyTorch's CPU kernel computes it: per column
/// scale = weight / sqrt(var + eps) and shift = bias - mean * scale, then
/// v * scale + shift (the host precomputes both per column: one multiply-add per
/// element).
SPINDLE_HOST_DEVICE inline float bn_scale(float var, float eps, float weight) {
  return weight / sqrtf(var + eps);
}
SPINDLE_HOST_DEVICE inline float bn_shift(float mean, float scale, float bias) {
  return bias - mean * scale;
}
SPINDLE_HOST_DEVICE inline float batch_norm(float v, float mean, float var, float eps, float weight,
                                            float bias) {
  const float s = bn_scale(var, eps, weight);
  return v * s + bn_shift(mean, s, bias);
}

/// One row's mean and 1 / sqrt(biased variance + eps), as torch.nn.LayerNorm computes
/// them (two passes, in double for the sums).
SPINDLE_HOST_DEVICE inline void layer_norm_stats(const float* row, std::int64_t n, float eps,
                                                 float& mean, float& inv_std) {
  double s = 0;
  for (std::int64_t c = 0; c < n; ++c) s += row[c];
  const double m = s / double(n);
  double q = 0;
  for (std::int64_t c = 0; c < n; ++c) q += (row[c] - m) * (row[c] - m);
  mean = float(m);
  inv_std = float(1.0 / sqrt(q / double(n) + double(eps)));
}

SPINDLE_HOST_DEVICE inline float layer_norm(float v, float mean, float inv_std, float weight,
                                            float bias) {
  return (v - mean) * inv_std * weight + bias;
}

/// F.normalize(p=2, eps=1e-12): the factor a row of squared norm `sum_sq` is scaled by.
SPINDLE_HOST_DEVICE inline float l2_scale(double sum_sq) {
  const double n = sqrt(sum_sq);
  return float(1.0 / (n > 1e-12 ? n : 1e-12));
}

}  // namespace spindle::gpu
