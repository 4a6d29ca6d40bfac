#include "nn/bf16_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "nn/detail/onednn_blocks.hpp"
#include "nn/int8_gemm.hpp"
#include "nn/ops.hpp"

namespace spindle::nn {

std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return std::uint16_t((u >> 16) | 0x40);  // a quiet NaN, sign kept
  const auto b = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  // A finite float past bfloat16's largest (3.3895e38) would round to infinity
  // and turn a finite answer into NaN: it saturates to the largest instead.
  if ((b & 0x7fffu) == 0x7f80u && !std::isinf(f)) return std::uint16_t((b & 0x8000u) | 0x7f7fu);
  return b;
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<std::uint16_t> to_bf16(std::span<const float> values) {
  std::vector<std::uint16_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_bf16(values[i]);
  return out;
}

#if defined(__x86_64__)
// to_bf16 over a row, 16 values an instruction (AVX-512 BF16's vcvtneps2bf16,
// which every CPU that runs precision = "bf16" has): round to nearest even and
// NaN kept quiet with its sign as to_bf16 does; finite values past bfloat16's
// largest are clamped to it first (the instruction would round them to
// infinity); denormal inputs read as zero (the instruction's rule, off by less
// than 1.2e-38). The scalar loop took a third of a bf16 DLRM batch's time.
namespace {
__attribute__((target("avx512f,avx512bf16"))) void to_bf16_avx512(const float* x,
                                                                   std::uint16_t* out,
                                                                   std::int64_t n) {
  const __m512 top = _mm512_set1_ps(from_bf16(0x7f7f));
  const __m512 inf = _mm512_set1_ps(INFINITY);
  std::int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    __m512 v = _mm512_loadu_ps(x + c);
    const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_LT_OQ);
    v = _mm512_mask_max_ps(v, finite, v, _mm512_sub_ps(_mm512_setzero_ps(), top));
    v = _mm512_mask_min_ps(v, finite, v, top);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), (__m256i)_mm512_cvtneps_pbh(v));
  }
  for (; c < n; ++c) out[c] = to_bf16(x[c]);
}
}  // namespace
#endif

void to_bf16(const float* x, std::uint16_t* out, std::int64_t n) {
#if defined(__x86_64__)
  static const bool vector = __builtin_cpu_supports("avx512f") && bf16_unsupported_reason().empty();
  if (vector) return to_bf16_avx512(x, out, n);
#endif
  for (std::int64_t c = 0; c < n; ++c) out[c] = to_bf16(x[c]);
}

std::string bf16_unsupported_reason() {
  const auto isa = int(dnnl::get_effective_cpu_isa());
  const auto want = int(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & want) == want) return {};
  return "this CPU has no AVX-512 BF16 or AMX (precision = \"bf16\" needs one; use \"fp32\")";
}

namespace {


// y rows [lo, hi) = x rows W^T, one thread: the rows rounded to bfloat16, then
// oneDNN's matmul over blocks (nn/detail/onednn_blocks.hpp).
void matmul_rows(const tensor& x, std::span<const std::uint16_t> w, const packed_weight* packed,
                 tensor& y, std::int64_t lo, std::int64_t hi, std::vector<std::uint16_t>& xb) {
  const std::int64_t m = hi - lo, k = x.cols(), n = y.cols();
  xb.resize(std::size_t(detail::padded_rows(m) * k));
  std::fill(xb.begin() + m * k, xb.end(), std::uint16_t{0});  // the padding rows are zeros
  for (std::int64_t r = 0; r < m; ++r) to_bf16(x.row(lo + r), xb.data() + r * k, k);
  // The packed weight's rows (whole blocks: a multiple of kRowStep), the rest plain.
  const std::int64_t done = packed ? packed->multiply_blocks(xb.data(), y.row(lo), m) : 0;
  if (done == m) return;
  using dt = dnnl::memory::data_type;
  detail::blocked_matmul(xb.data() + done * k, w.data(), y.row(lo + done), m - done, k, n, dt::bf16,
                         dt::f32);
}

}  // namespace

expected<tensor> linear_bf16(allocator& a, const tensor& x, std::span<const std::uint16_t> weight,
                             std::span<const float> bias, std::int64_t out_features,
                             thread_pool* pool, const packed_weight* packed) {
  const std::int64_t n = x.rows(), in = x.cols();
  if (packed && (packed->type() != packed_weight::element::bf16 || packed->in() != in ||
                 packed->out() != out_features))
    packed = nullptr;  // not this weight's copy: the plain route
  if (std::int64_t(weight.size()) != out_features * in)
    return make_error(errc::invalid_argument, "linear (bf16): weight has {} values, expected {} x {}",
                      weight.size(), out_features, in);
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {n, out_features}));
  SPINDLE_TRY(detail::linear_by_rows(
      pool, y, bias,
      [&](std::int64_t lo, std::int64_t hi) {
        thread_local std::vector<std::uint16_t> xb;
        matmul_rows(x, weight, packed, y, lo, hi, xb);
      },
      [&] {
        return fmt::format("linear (bf16): oneDNN matmul [{} x {}] x [{} x {}]", n, in, in,
                           out_features);
      }));
  return y;
}

expected<tensor> linear_reduced(allocator& a, const tensor& x, const reduced_weight& w,
                                std::span<const float> bias, std::int64_t out_features,
                                thread_pool* pool) {
  if (!w.s8.empty()) return linear_int8(a, x, w.s8, w.scales, bias, out_features, pool);
  return linear_bf16(a, x, w.bf16, bias, out_features, pool, w.packed.get());
}

std::string bf16_weights::kind() const {
  const auto held = snapshot();
  if (!held || held->empty()) return "fp32";
  return held->begin()->second.s8.empty() ? "bf16" : "int8";
}

}  // namespace spindle::nn
