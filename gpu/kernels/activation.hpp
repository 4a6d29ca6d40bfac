// Element-wise activations of the GNN and recommendation layers, shared by the
// host operators (nn/ops) and the CUDA activation kernel (gpu/cuda/gnn_kernels.cu),
// which fuses one of them after a layer's output. Pure functions.
#pragma once

#include <cmath>

#include "gpu/host_device.hpp"

namespace spindle::gpu {

enum class activation { none, relu, leaky_relu, elu, sigmoid };

SPINDLE_HOST_DEVICE inline float relu(float v) { return v > 0.0f ? v : 0.0f; }
SPINDLE_HOST_DEVICE inline float leaky_relu(float v, float slope) { return v < 0 ? v * slope : v; }
SPINDLE_HOST_DEVICE inline float elu(float v, float alpha) { return v < 0 ? alpha * expm1f(v) : v; }
SPINDLE_HOST_DEVICE inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

/// `a` applied to v (`param`: leaky_relu's slope, elu's alpha).
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
