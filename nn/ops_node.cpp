// Node-wise layers of a GNN stack: normalisations and the activations beyond
// ReLU/ELU/LeakyReLU. The per-element formulas are gpu/kernels/'s, shared with
// the device.
#include <algorithm>
#include <vector>

#include "gpu/kernels/activation.hpp"
#include "gpu/kernels/norm_row.hpp"
#include "nn/ops.hpp"

namespace spindle::nn {

void batch_norm_(tensor& t, std::span<const float> mean, std::span<const float> var,
                 std::span<const float> weight, std::span<const float> bias, float eps) {
  const std::int64_t cols = t.cols();
  std::vector<float> scale(static_cast<std::size_t>(cols)), shift(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c) {
    scale[c] = gpu::bn_scale(var[c], eps, weight.empty() ? 1.0f : weight[c]);
    shift[c] = gpu::bn_shift(mean[c], scale[c], bias.empty() ? 0.0f : bias[c]);
  }
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    float* __restrict__ row = t.row(r);
    for (std::int64_t c = 0; c < cols; ++c) row[c] = row[c] * scale[c] + shift[c];
  }
}

void layer_norm_(tensor& t, std::span<const float> weight, std::span<const float> bias, float eps) {
  const std::int64_t cols = t.cols();
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    float* row = t.row(r);
    float mean = 0, inv_std = 0;
    gpu::layer_norm_stats(row, cols, eps, mean, inv_std);
    for (std::int64_t c = 0; c < cols; ++c)
      row[c] = gpu::layer_norm(row[c], mean, inv_std, weight.empty() ? 1.0f : weight[c],
                               bias.empty() ? 0.0f : bias[c]);
  }
}

void l2_normalize_rows_(tensor& t) {
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    float* row = t.row(r);
    double sq = 0;
    for (std::int64_t c = 0; c < t.cols(); ++c) sq += double(row[c]) * row[c];
    const float s = gpu::l2_scale(sq);
    for (std::int64_t c = 0; c < t.cols(); ++c) row[c] *= s;
  }
}

namespace {
void apply(tensor& t, gpu::activation a) {
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
    t.data()[i] = gpu::activate(a, t.data()[i], 0.0f);
}
}  // namespace

void gelu_(tensor& t, bool approximate_tanh) {
  apply(t, approximate_tanh ? gpu::activation::gelu_tanh : gpu::activation::gelu);
}
void tanh_(tensor& t) { apply(t, gpu::activation::tanh); }
void sigmoid_(tensor& t) { apply(t, gpu::activation::sigmoid); }

void prelu_(tensor& t, std::span<const float> weight) {
  const std::int64_t cols = t.cols();
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    float* row = t.row(r);
    for (std::int64_t c = 0; c < cols; ++c)
      row[c] = gpu::prelu(row[c], weight.size() == 1 ? weight[0] : weight[c]);
  }
}

void max_(tensor& y, const tensor& x) {
  for (std::int64_t i = 0, n = y.numel(); i < n; ++i) y.data()[i] = std::max(y.data()[i], x.data()[i]);
}

void mul_(tensor& y, const tensor& x) {
  for (std::int64_t i = 0, n = y.numel(); i < n; ++i) y.data()[i] *= x.data()[i];
}

void scale_(tensor& t, float alpha) {
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i) t.data()[i] *= alpha;
}

}  // namespace spindle::nn
