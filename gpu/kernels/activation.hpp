// Element-wise activations of the GNN and recommendation layers, shared by the
// host operators (nn/ops) and the CUDA activation kernel (gpu/cuda/gnn_kernels.cu),
// which fuses one of them after a layer's output. Pure functions.
#pragma once

#include <cmath>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

enum class activation { none, relu, leaky_relu, elu, sigmoid, tanh, gelu, gelu_tanh, prelu };

/// NaN stays NaN, as torch.relu keeps it (v > 0 ? v : 0 would answer 0).
SPINDLE_HOST_DEVICE inline float relu(float v) { return v < 0.0f ? 0.0f : v; }
SPINDLE_HOST_DEVICE inline float leaky_relu(float v, float slope) { return v < 0 ? v * slope : v; }
SPINDLE_HOST_DEVICE inline float elu(float v, float alpha) { return v < 0 ? alpha * expm1f(v) : v; }
SPINDLE_HOST_DEVICE inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
/// torch.nn.GELU(): v * Phi(v), exact (erf); approximate="tanh" is gelu_tanh.
SPINDLE_HOST_DEVICE inline float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
SPINDLE_HOST_DEVICE inline float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
}
/// PReLU with this column's weight (`weight`: one per channel, or one shared).
SPINDLE_HOST_DEVICE inline float prelu(float v, float weight) { return v < 0 ? v * weight : v; }

/// `a` applied to v (`param`: leaky_relu's slope, elu's alpha, prelu's weight).
SPINDLE_HOST_DEVICE inline float activate(activation a, float v, float param) {
  switch (a) {
    case activation::relu:
      return relu(v);
    case activation::leaky_relu:
      return leaky_relu(v, param);
    case activation::elu:
      return elu(v, param);
    case activation::sigmoid:
      return sigmoid(v);
    case activation::tanh:
      return tanhf(v);
    case activation::gelu:
      return gelu(v);
    case activation::gelu_tanh:
      return gelu_tanh(v);
    case activation::prelu:
      return prelu(v, param);
    case activation::none:
      break;
  }
  return v;
}

/// A linear layer's epilogue: its bias added, then `a` (fused after a GEMM).
SPINDLE_HOST_DEVICE inline float bias_activate(float v, float bias, activation a, float param) {
  return activate(a, v + bias, param);
}

}  // namespace spindle::gpu
