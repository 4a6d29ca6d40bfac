// DLRM's dot interaction (nn/ops.hpp): a sample's k vectors' pairwise dot
// products, strict lower triangle in row-major order. Where the CPU has
// AVX-512, groups of 12-16 samples run with the samples in the lanes and the
// rest one by one with the same arithmetic (nn/interaction_groups: 0.93-1.35
// against 2.7 us a sample at 27 x 128, batch 256, on an AMD EPYC); CPUs without
// it run each sample here, a row against four at once in vector lanes. (Tiles of
// four rows by four with a horizontal sum per dot were tried for this portable
// kernel: no faster, so not kept.)
#include <algorithm>
#include <cstring>

#include "nn/interaction_groups.hpp"
#include "nn/ops.hpp"
#include "nn/row_kernel.hpp"

namespace spindle::nn {
namespace {

// One pair's dot product in vector lanes; lane sums then a fixed reduction, so
// the same answer on every call (a sequential float sum cannot be vectorised).
SPINDLE_ROW_KERNEL float dot_row(const float* __restrict__ x, const float* __restrict__ y,
                                 std::int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t c = 0; c < n; ++c) s += x[c] * y[c];
  return s;
}

// x's dot products with four rows at once.
SPINDLE_ROW_KERNEL void dot_rows4(const float* __restrict__ x, const float* __restrict__ y0,
                                  const float* __restrict__ y1, const float* __restrict__ y2,
                                  const float* __restrict__ y3, std::int64_t n, float* out) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (std::int64_t c = 0; c < n; ++c) {
    s0 += x[c] * y0[c];
    s1 += x[c] * y1[c];
    s2 += x[c] * y2[c];
    s3 += x[c] * y3[c];
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
}

// Where pair (i, 0), the first of row i's pairs, lies among a sample's pairs.
std::int64_t row_pairs_at(std::int64_t i) { return i * (i - 1) / 2; }

// Every pair of one sample's k rows `t` (d wide) into `pairs`: a row against
// four at once (each read of it feeds four products), then one by one.
void sample_pairs(const float* const* t, std::int64_t k, std::int64_t d, float* pairs) {
  for (std::int64_t i = 1; i < k; ++i) {
    float* o = pairs + row_pairs_at(i);
    std::int64_t j = 0;
    for (; j + 4 <= i; j += 4, o += 4) dot_rows4(t[i], t[j], t[j + 1], t[j + 2], t[j + 3], d, o);
    for (; j < i; ++j) *o++ = dot_row(t[i], t[j], d);
  }
}

}  // namespace

namespace detail {

expected<tensor> dot_interaction_by(allocator& a, const tensor& dense,
                                    const std::vector<const tensor*>& embeddings, bool groups) {
  const std::int64_t d = dense.cols(), k = std::int64_t(embeddings.size()) + 1;
  for (const tensor* e : embeddings)
    if (e->cols() != d || e->rows() != dense.rows())
      return make_error(errc::invalid_argument,
                        "interaction: embedding [{} x {}] vs dense [{} x {}]", e->rows(), e->cols(),
                        dense.rows(), d);
  const std::int64_t rows = dense.rows(), width = d + k * (k - 1) / 2;
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {rows, width}));
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(out.row(r), dense.row(r), std::size_t(d) * sizeof(float));
  std::vector<const float*> t(static_cast<std::size_t>(k));
  auto rows_at = [&](std::int64_t r) {
    t[0] = dense.row(r);
    for (std::int64_t i = 1; i < k; ++i) t[std::size_t(i)] = embeddings[std::size_t(i - 1)]->row(r);
  };
  std::int64_t r = 0;
  if (groups) {  // groups of 12-16 in the lanes, the rest one by one: the same bits
    thread_local std::vector<float> scratch;
    scratch.resize(interaction_group_scratch(k, d));
    for (; rows - r >= kMinInteractionGroup; r += kInteractionGroup) {
      rows_at(r);
      const int n = int(std::min<std::int64_t>(kInteractionGroup, rows - r));
      interaction_group(t.data(), k, d, n, out.row(r) + d, width, scratch.data());
    }
    for (r = std::min(r, rows); r < rows; ++r) {
      rows_at(r);
      interaction_sample(t.data(), k, d, out.row(r) + d, scratch.data());
    }
    return out;
  }
  for (; r < rows; ++r) {
    rows_at(r);
    sample_pairs(t.data(), k, d, out.row(r) + d);
  }
  return out;
}

}  // namespace detail

expected<tensor> dot_interaction(allocator& a, const tensor& dense,
                                 const std::vector<const tensor*>& embeddings) {
  return detail::dot_interaction_by(a, dense, embeddings, detail::interaction_groups_available());
}

}  // namespace spindle::nn
