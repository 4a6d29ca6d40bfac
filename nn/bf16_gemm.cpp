#include "nn/bf16_gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>

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

std::string bf16_unsupported_reason() {
  const auto isa = int(dnnl::get_effective_cpu_isa());
  const auto want = int(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & want) == want) return {};
  return "this CPU has no AVX-512 BF16 or AMX (precision = \"bf16\" needs one; use \"fp32\")";
}

namespace {

// One matmul primitive per shape and thread (primitives are not shared across
// threads here). Rows go through in blocks of kBlockRows, the last one padded to
// a multiple of kRowStep, so a layer uses at most kBlockRows / kRowStep shapes
// whatever its batch's row count (a GNN's varies every batch): primitives are
// made once, not per call.
constexpr std::int64_t kBlockRows = 64, kRowStep = 8;

struct primitive_cache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, dnnl::matmul> made;

  dnnl::matmul& get(std::int64_t m, std::int64_t k, std::int64_t n) {
    auto key = std::make_tuple(m, k, n);
    auto it = made.find(key);
    if (it != made.end()) return it->second;
    if (made.size() >= 256) made.clear();  // many layer widths: start over
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc src({m, k}, dt::bf16, tag::ab), wei({k, n}, dt::bf16, tag::ba),
        dst({m, n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    return made.emplace(key, dnnl::matmul(pd)).first->second;
  }
};

// `m` rows of bf16 `xb` (k wide) times W^T into `out` (n wide), one primitive call.
void matmul_block(primitive_cache& cache, const std::uint16_t* xb, const std::uint16_t* w,
                  float* out, std::int64_t m, std::int64_t k, std::int64_t n) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  auto& e = cache.engine;
  dnnl::memory src({{m, k}, dt::bf16, tag::ab}, e, const_cast<std::uint16_t*>(xb));
  dnnl::memory wei({{k, n}, dt::bf16, tag::ba}, e, const_cast<std::uint16_t*>(w));
  dnnl::memory dst({{m, n}, dt::f32, tag::ab}, e, out);
  cache.get(m, k, n).execute(cache.stream,
                             {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  cache.stream.wait();
}

// y rows [lo, hi) = x rows W^T, one thread.
void matmul_rows(const tensor& x, std::span<const std::uint16_t> w, tensor& y, std::int64_t lo,
                 std::int64_t hi, std::vector<std::uint16_t>& xb) {
  thread_local primitive_cache cache;
  thread_local std::vector<float> padded_out;
  omp_set_num_threads(1);  // the pool splits the rows; oneDNN's own threads would oversubscribe
  const std::int64_t m = hi - lo, k = x.cols(), n = y.cols();
  const std::int64_t rows = (m + kRowStep - 1) / kRowStep * kRowStep;
  xb.resize(std::size_t(rows * k));
  std::fill(xb.begin() + m * k, xb.end(), std::uint16_t{0});  // the padding rows are zeros
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < k; ++c) xb[std::size_t(r * k + c)] = to_bf16(x.row(lo + r)[c]);
  for (std::int64_t at = 0; at < m; at += kBlockRows) {
    const std::int64_t real = std::min(kBlockRows, m - at);
    const std::int64_t shape = std::min(kBlockRows, rows - at);
    const std::uint16_t* in = xb.data() + at * k;
    if (real == shape) {
      matmul_block(cache, in, w.data(), y.row(lo + at), shape, k, n);
      continue;
    }
    padded_out.resize(std::size_t(shape * n));
    matmul_block(cache, in, w.data(), padded_out.data(), shape, k, n);
    std::copy_n(padded_out.data(), real * n, y.row(lo + at));
  }
}

}  // namespace

expected<tensor> linear_bf16(allocator& a, const tensor& x, std::span<const std::uint16_t> weight,
                             std::span<const float> bias, std::int64_t out_features,
                             thread_pool* pool) {
  const std::int64_t n = x.rows(), in = x.cols();
  if (std::int64_t(weight.size()) != out_features * in)
    return make_error(errc::invalid_argument, "linear (bf16): weight has {} values, expected {} x {}",
                      weight.size(), out_features, in);
  SPINDLE_ASSIGN_OR_RETURN(auto y, tensor::empty(a, {n, out_features}));
  std::string failed;
  std::mutex failed_mu;
  for_row_chunks(pool, n, 48, [&](std::int64_t lo, std::int64_t hi) {
    thread_local std::vector<std::uint16_t> xb;
    try {
      matmul_rows(x, weight, y, lo, hi, xb);
    } catch (const dnnl::error& e) {
      std::lock_guard lock(failed_mu);
      failed = e.what();
      return;
    }
    if (bias.empty()) return;
    for (std::int64_t r = lo; r < hi; ++r) {
      float* row = y.row(r);
      for (std::int64_t c = 0; c < out_features; ++c) row[c] += bias[std::size_t(c)];
    }
  });
  if (!failed.empty())
    return make_error(errc::internal, "linear (bf16): oneDNN matmul [{} x {}] x [{} x {}]: {}", n,
                      in, in, out_features, failed);
  return y;
}

}  // namespace spindle::nn
