// oneDNN matmuls over blocks of rows, shared by the reduced-precision linears
// (nn/bf16_gemm.cpp, nn/int8_gemm.cpp): one primitive per shape, types and
// thread, rows in blocks of kBlockRows with the last padded to a multiple of
// kRowStep, so a layer uses a handful of shapes whatever its batch's row count
// (a GNN's varies every batch): primitives are made once, not per call.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/status.hpp"
#include "nn/ops.hpp"
#include "nn/tensor.hpp"

namespace spindle::nn::detail {

inline constexpr std::int64_t kBlockRows = 64, kRowStep = 8;

/// A thread's primitives, by (rows, in, out, input type, output type).
struct onednn_matmuls {
  using dt = dnnl::memory::data_type;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, dt, dt>, dnnl::matmul> made;

  dnnl::matmul& get(std::int64_t m, std::int64_t k, std::int64_t n, dt in, dt out) {
    const auto key = std::make_tuple(m, k, n, in, out);
    if (auto it = made.find(key); it != made.end()) return it->second;
    if (made.size() >= 256) made.clear();  // many layer widths: start over
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc src({m, k}, in, tag::ab), wei({k, n}, in, tag::ba), dst({m, n}, out, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
    return made.emplace(key, dnnl::matmul(pd)).first->second;
  }

  // `m` rows of `x` (k wide, type `in`) times W^T ([n x k], type `in`) into `y`.
  void run(const void* x, const void* w, void* y, std::int64_t m, std::int64_t k, std::int64_t n,
           dt in, dt out) {
    using tag = dnnl::memory::format_tag;
    dnnl::memory src({{m, k}, in, tag::ab}, engine, const_cast<void*>(x));
    dnnl::memory wei({{k, n}, in, tag::ba}, engine, const_cast<void*>(w));
    dnnl::memory dst({{m, n}, out, tag::ab}, engine, y);
    get(m, k, n, in, out).execute(stream,
                                  {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    stream.wait();
  }
};

/// Rows padded up to a multiple of kRowStep (the padding rows must be zeros).
inline std::int64_t padded_rows(std::int64_t m) { return (m + kRowStep - 1) / kRowStep * kRowStep; }

/// y[0, m) = x W^T for `m` rows of `x` already padded with zero rows to
/// padded_rows(m) (In: the input type, Out: the output's), in blocks, on this
/// thread (oneDNN's own threads would oversubscribe the pool that split the rows).
template <class In, class Out>
void blocked_matmul(const In* x, const In* w, Out* y, std::int64_t m, std::int64_t k,
                    std::int64_t n, dnnl::memory::data_type in, dnnl::memory::data_type out) {
  thread_local onednn_matmuls cache;
  thread_local std::vector<Out> padded_out;
  omp_set_num_threads(1);
  const std::int64_t rows = padded_rows(m);
  for (std::int64_t at = 0; at < m; at += kBlockRows) {
    const std::int64_t real = std::min(kBlockRows, m - at);
    const std::int64_t shape = std::min(kBlockRows, rows - at);
    if (real == shape) {
      cache.run(x + at * k, w, y + at * n, shape, k, n, in, out);
      continue;
    }
    padded_out.resize(std::size_t(shape * n));
    cache.run(x + at * k, w, padded_out.data(), shape, k, n, in, out);
    std::copy_n(padded_out.data(), real * n, y + at * n);
  }
}

/// Runs `rows(lo, hi)` (y's rows [lo, hi) from x's) over row chunks of y on
/// `pool`, then adds `bias` to each row; a oneDNN error becomes one naming
/// `what()` (called only then).
template <class Rows, class What>
status linear_by_rows(thread_pool* pool, tensor& y, std::span<const float> bias, Rows&& rows,
                      What&& what) {
  std::string failed;
  std::mutex failed_mu;
  for_row_chunks(pool, y.rows(), 48, [&](std::int64_t lo, std::int64_t hi) {
    try {
      rows(lo, hi);
    } catch (const dnnl::error& e) {
      std::lock_guard lock(failed_mu);
      failed = e.what();
      return;
    }
    add_bias(y, bias, lo, hi);
  });
  if (failed.empty()) return status::ok();
  return make_error(errc::internal, "{}: {}", what(), failed);
}

}  // namespace spindle::nn::detail
