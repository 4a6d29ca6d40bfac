#include "nn/int8_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <dnnl.hpp>

#include "nn/detail/onednn_blocks.hpp"
#include "nn/ops.hpp"
#include "nn/row_kernel.hpp"

namespace spindle::nn {

std::string int8_unsupported_reason() {
  const auto isa = int(dnnl::get_effective_cpu_isa());
  for (auto want : {dnnl::cpu_isa::avx512_core_vnni, dnnl::cpu_isa::avx2_vnni})
    if ((isa & int(want)) == int(want)) return {};
  return "this CPU has no AVX-512 VNNI or AVX-VNNI (precision = \"int8\" needs one; use \"fp32\")";
}

namespace {

// One row's scale and codes (scale: max |v| / 127; 1 for zeros). A row holding
// NaN or infinity has no int8 codes: its codes are zeros and its scale NaN, so
// every output of that row is NaN, as float32 arithmetic would make it (a NaN
// input poisons every sum; an infinite one gives inf or NaN, never a number).
// Both passes in vector lanes (a row kernel): the scalar loop, a branch and a
// libm rounding call a value, took a quarter of an int8 DLRM batch's time.
SPINDLE_ROW_KERNEL float quantize_row(const float* v, std::int64_t n, std::int8_t* out) {
  float top = 0;
  int bad = 0;  // a NaN or an infinity: |v| <= FLT_MAX is false for both
#pragma omp simd reduction(max : top) reduction(| : bad)
  for (std::int64_t c = 0; c < n; ++c) {
    const float a = std::abs(v[c]);
    bad |= !(a <= std::numeric_limits<float>::max());
    top = std::max(top, a);
  }
  if (bad) {
    std::fill(out, out + n, std::int8_t{0});
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float scale = top > 0 ? top / 127.0f : 1.0f, inv = 1.0f / scale;
#pragma omp simd
  for (std::int64_t c = 0; c < n; ++c)
    out[c] = std::int8_t(std::min(std::max(__builtin_nearbyintf(v[c] * inv), -127.0f), 127.0f));
  return scale;
}

// out[c] = in[c] * (sx * scales[c]): the int32 sums back to floats.
SPINDLE_ROW_KERNEL void scale_row(const std::int32_t* in, float sx, const float* scales,
                                  float* out, std::int64_t n) {
#pragma omp simd
  for (std::int64_t c = 0; c < n; ++c) out[c] = float(in[c]) * (sx * scales[c]);
}

// y rows [lo, hi) = x rows W^T, one thread: each row quantised with its own
// scale, int32 sums by oneDNN, then scaled by row and output scales.
void matmul_rows(const tensor& x, std::span<const std::int8_t> w, std::span<const float> scales,
                 tensor& y, std::int64_t lo, std::int64_t hi) {
  thread_local std::vector<std::int8_t> xq;
  thread_local std::vector<float> xs;
  thread_local std::vector<std::int32_t> acc;
  const std::int64_t m = hi - lo, k = x.cols(), n = y.cols();
  xq.resize(std::size_t(detail::padded_rows(m) * k));
  std::fill(xq.begin() + m * k, xq.end(), std::int8_t{0});  // the padding rows are zeros
  xs.resize(std::size_t(m));
  for (std::int64_t r = 0; r < m; ++r) xs[std::size_t(r)] = quantize_row(x.row(lo + r), k, &xq[std::size_t(r * k)]);
  acc.resize(std::size_t(m * n));
  using dt = dnnl::memory::data_type;
  detail::blocked_matmul(xq.data(), w.data(), acc.data(), m, k, n, dt::s8, dt::s32);
  for (std::int64_t r = 0; r < m; ++r)
    scale_row(&acc[std::size_t(r * n)], xs[std::size_t(r)], scales.data(), y.row(lo + r), n);
}

}  // namespace

status quantize_rows_s8(std::span<const float> values, std::int64_t rows, std::int64_t cols,
                        std::vector<std::int8_t>& codes, std::vector<float>& scales,
                        std::string_view what) {
  if (std::int64_t(values.size()) != rows * cols)
    return make_error(errc::invalid_argument, "{}: {} values, expected {} x {}", what,
                      values.size(), rows, cols);
  if (cols > kInt8MaxInputs)
    return make_error(errc::unsupported,
                      "{}: {} inputs per output; int8 sums overflow int32 past {} (use \"bf16\" or \"fp32\")",
                      what, cols, kInt8MaxInputs);
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end())
    return make_error(errc::invalid_argument, "{}: value {} at [{}, {}] cannot be held in int8",
                      what, *bad, (bad - values.begin()) / cols, (bad - values.begin()) % cols);
  codes.resize(values.size());
  scales.resize(std::size_t(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    scales[std::size_t(r)] = quantize_row(values.data() + r * cols, cols, codes.data() + r * cols);
  return status::ok();
}

expected<tensor> linear_int8(allocator& a, const tensor& x, std::span<const std::int8_t> codes,
                             std::span<const float> scales, std::span<const float> bias,
                             std::int64_t out_features, thread_pool* pool) {
  const std::int64_t n = x.rows(), in = x.cols();
  if (std::int64_t(codes.size()) != out_features * in || std::int64_t(scales.size()) != out_features)
    return make_error(errc::invalid_argument,
                      "linear (int8): weight has {} codes and {} scales, expected {} x {} and {}",
                      codes.size(), scales.size(), out_features, in, out_features);
  if (in > kInt8MaxInputs)
    return make_error(errc::unsupported, "linear (int8): {} inputs; int8 sums overflow int32 past {}",
                      in, kInt8MaxInputs);
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {n, out_features}));
  SPINDLE_TRY(detail::linear_by_rows(
      pool, y, bias, [&](std::int64_t lo, std::int64_t hi) { matmul_rows(x, codes, scales, y, lo, hi); },
      [&] {
        return fmt::format("linear (int8): oneDNN matmul [{} x {}] x [{} x {}]", n, in, in,
                           out_features);
      }));
  return y;
}

}  // namespace spindle::nn
