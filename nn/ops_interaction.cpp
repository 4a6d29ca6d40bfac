// DLRM's dot interaction (nn/ops.hpp): a sample's k vectors' pairwise dot
// products, strict lower triangle in row-major order. Pairs go four rows by four
// at once where a whole 4x4 tile lies below the diagonal (each vector read once
// for four products: a quarter of the loads a pair at a time costs), the rest
// one row against four, then one by one.
#include <cstring>

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

// s[a][b] = <x[a], y[b]> for four rows by four: eight loads feed sixteen products.
SPINDLE_ROW_KERNEL void dot_tile4x4(const float* const* x, const float* const* y, std::int64_t n,
                                    float (&s)[4][4]) {
  const float *__restrict__ x0 = x[0], *__restrict__ x1 = x[1], *__restrict__ x2 = x[2],
                           *__restrict__ x3 = x[3];
  const float *__restrict__ y0 = y[0], *__restrict__ y1 = y[1], *__restrict__ y2 = y[2],
                           *__restrict__ y3 = y[3];
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
  float c0 = 0, c1 = 0, c2 = 0, c3 = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
#pragma omp simd reduction(+ : a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, d0, d1, d2, d3)
  for (std::int64_t c = 0; c < n; ++c) {
    const float v0 = y0[c], v1 = y1[c], v2 = y2[c], v3 = y3[c];
    a0 += x0[c] * v0, a1 += x0[c] * v1, a2 += x0[c] * v2, a3 += x0[c] * v3;
    b0 += x1[c] * v0, b1 += x1[c] * v1, b2 += x1[c] * v2, b3 += x1[c] * v3;
    c0 += x2[c] * v0, c1 += x2[c] * v1, c2 += x2[c] * v2, c3 += x2[c] * v3;
    d0 += x3[c] * v0, d1 += x3[c] * v1, d2 += x3[c] * v2, d3 += x3[c] * v3;
  }
  s[0][0] = a0, s[0][1] = a1, s[0][2] = a2, s[0][3] = a3;
  s[1][0] = b0, s[1][1] = b1, s[1][2] = b2, s[1][3] = b3;
  s[2][0] = c0, s[2][1] = c1, s[2][2] = c2, s[2][3] = c3;
  s[3][0] = d0, s[3][1] = d1, s[3][2] = d2, s[3][3] = d3;
}

// Where pair (i, j), j < i, lies among a sample's pairs.
std::int64_t pair_at(std::int64_t i, std::int64_t j) { return i * (i - 1) / 2 + j; }

// The pairs of rows i in [i0, i1) with columns j in [j0, i): row against four, then one.
void pairs_near_diagonal(const float* const* t, std::int64_t i0, std::int64_t i1,
                         std::int64_t j0, std::int64_t d, float* pairs) {
  for (std::int64_t i = i0; i < i1; ++i) {
    float* o = pairs + pair_at(i, j0);
    std::int64_t j = j0;
    for (; j + 4 <= i; j += 4, o += 4) dot_rows4(t[i], t[j], t[j + 1], t[j + 2], t[j + 3], d, o);
    for (; j < i; ++j) *o++ = dot_row(t[i], t[j], d);
  }
}

// Every pair of one sample's k rows `t` (d wide) into `pairs`.
void sample_pairs(const float* const* t, std::int64_t k, std::int64_t d, float* pairs) {
  std::int64_t i0 = 1;
  for (; i0 + 4 <= k; i0 += 4) {
    std::int64_t j0 = 0;
    for (; j0 + 4 <= i0; j0 += 4) {
      float s[4][4];
      dot_tile4x4(t + i0, t + j0, d, s);
      for (std::int64_t a = 0; a < 4; ++a)
        std::memcpy(pairs + pair_at(i0 + a, j0), s[a], sizeof s[a]);
    }
    pairs_near_diagonal(t, i0, i0 + 4, j0, d, pairs);
  }
  pairs_near_diagonal(t, i0, k, 0, d, pairs);
}

}  // namespace

expected<tensor> dot_interaction(allocator& a, const tensor& dense,
                                 const std::vector<const tensor*>& embeddings) {
  const std::int64_t d = dense.cols(), k = std::int64_t(embeddings.size()) + 1;
  for (const tensor* e : embeddings)
    if (e->cols() != d || e->rows() != dense.rows())
      return make_error(errc::invalid_argument,
                        "interaction: embedding [{} x {}] vs dense [{} x {}]", e->rows(), e->cols(),
                        dense.rows(), d);
  SPINDLE_ASSIGN_OR_RETURN(auto out, tensor::empty(a, {dense.rows(), d + k * (k - 1) / 2}));
  std::vector<const float*> t(static_cast<std::size_t>(k));
  for (std::int64_t r = 0; r < dense.rows(); ++r) {
    t[0] = dense.row(r);
    for (std::int64_t i = 1; i < k; ++i) t[std::size_t(i)] = embeddings[std::size_t(i - 1)]->row(r);
    float* o = out.row(r);
    std::memcpy(o, t[0], std::size_t(d) * sizeof(float));
    sample_pairs(t.data(), k, d, o + d);
  }
  return out;
}

}  // namespace spindle::nn
