// The interaction's sample groups (nn/interaction_groups.hpp). Three steps per
// group: each row i of the group's samples is transposed sixteen columns at a
// time into T[i][c][lane]; every pair (i, j) with i > j is then the lane-wise
// sum over c of T[i][c] * T[j][c], four rows by four at once (eight loads feed
// sixteen FMAs; a tile on the diagonal computes its upper half too and drops
// it); the pairs, held as P[pair][lane], are transposed back into each
// sample's output row. Each lane sums its products in column order, with fused
// multiply-adds from zero; a sample alone (interaction_sample) sums in the same
// order, so its pairs are the same bits in a group or alone.
#include "nn/interaction_groups.hpp"

#include <algorithm>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 warns that its own _mm512_undefined_ps, inside the masked loads and
// shuffles, is uninitialized (a false positive of the intrinsics header).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define SPINDLE_AVX512 __attribute__((target("avx512f")))
#endif

namespace spindle::nn::detail {

std::size_t interaction_group_scratch(std::int64_t k, std::int64_t d) {
  const std::int64_t dp = (d + 15) / 16 * 16, pairs = k * (k - 1) / 2;
  return std::size_t(k * dp * 16 + (pairs + 15) / 16 * 16 * 16);
}

#ifdef SPINDLE_AVX512

namespace {

// Sixteen vectors' transpose in place: r[i][j] becomes r[j][i].
SPINDLE_AVX512 void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], _MM_SHUFFLE(2, 0, 2, 0));
      t[8 * i + 4 + j] =
          _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], _MM_SHUFFLE(3, 1, 3, 1));
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], _MM_SHUFFLE(3, 1, 3, 1));
  }
}

__mmask16 first_lanes(std::int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// T[i][c][lane] = row i of sample `lane`, column c (zero past d and past n).
SPINDLE_AVX512 void transpose_rows(const float* const* rows, std::int64_t k, std::int64_t d,
                                   int n, float* T) {
  const std::int64_t dp = (d + 15) / 16 * 16;
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t c = 0; c < dp; c += 16) {
      const __mmask16 m = first_lanes(d - c);
      __m512 r[16];
      for (int s = 0; s < 16; ++s)
        r[s] = s < n ? _mm512_maskz_loadu_ps(m, rows[i] + s * d + c) : _mm512_setzero_ps();
      transpose16(r);
      for (int q = 0; q < 16; ++q) _mm512_storeu_ps(T + (i * dp + c + q) * 16, r[q]);
    }
}

// Rows ib..ib+3 against rows jb..jb+3 (clamped to the last row; their products
// are dropped), the pairs below the diagonal stored to P[pair][lane].
SPINDLE_AVX512 void pair_tile(const float* T, std::int64_t k, std::int64_t dp, std::int64_t ib,
                              std::int64_t jb, float* P) {
  const float* x[4];
  const float* y[4];
  for (int a = 0; a < 4; ++a) {
    x[a] = T + std::min(ib + a, k - 1) * dp * 16;
    y[a] = T + std::min(jb + a, k - 1) * dp * 16;
  }
  __m512 acc[4][4];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < dp * 16; c += 16) {
    const __m512 y0 = _mm512_loadu_ps(y[0] + c), y1 = _mm512_loadu_ps(y[1] + c),
                 y2 = _mm512_loadu_ps(y[2] + c), y3 = _mm512_loadu_ps(y[3] + c);
    for (int a = 0; a < 4; ++a) {
      const __m512 xa = _mm512_loadu_ps(x[a] + c);
      acc[a][0] = _mm512_fmadd_ps(xa, y0, acc[a][0]);
      acc[a][1] = _mm512_fmadd_ps(xa, y1, acc[a][1]);
      acc[a][2] = _mm512_fmadd_ps(xa, y2, acc[a][2]);
      acc[a][3] = _mm512_fmadd_ps(xa, y3, acc[a][3]);
    }
  }
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      const std::int64_t i = ib + a, j = jb + b;
      if (i < k && j < i) _mm512_storeu_ps(P + (i * (i - 1) / 2 + j) * 16, acc[a][b]);
    }
}

// P[pair][lane] back into each sample's row: sixteen pairs at a time.
SPINDLE_AVX512 void scatter_pairs(const float* P, std::int64_t pairs, int n, float* out,
                                  std::int64_t out_stride) {
  for (std::int64_t p = 0; p < pairs; p += 16) {
    const std::int64_t m = std::min<std::int64_t>(16, pairs - p);
    __m512 r[16];
    for (int q = 0; q < 16; ++q)
      r[q] = q < m ? _mm512_loadu_ps(P + (p + q) * 16) : _mm512_setzero_ps();
    transpose16(r);
    for (int s = 0; s < n; ++s) _mm512_mask_storeu_ps(out + s * out_stride + p, first_lanes(m), r[s]);
  }
}

// Rows i0..i0 + R - 1 (those below k) of one sample, each with rows jb..jb +
// 16B - 1 as lanes, its rows transposed into X[c][j] (kp lanes a column): each
// product summed over c in column order from zero, the arithmetic of the
// sample's lane in a group. R rows at once: R x B independent sums keep the
// FMA units busy (one row's single sum waits on its last FMA every column).
template <int R, int B>
SPINDLE_AVX512 void rows_dots(const float* const* rows, std::int64_t k, std::int64_t d,
                              std::int64_t dp, const float* X, std::int64_t kp, std::int64_t i0,
                              std::int64_t jb, float* out) {
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = rows[std::min(i0 + r, k - 1)];
  __m512 acc[R][B];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < dp; ++c) {
    const float* xc = X + c * kp + jb;
    __m512 y[B];
    for (int b = 0; b < B; ++b) y[b] = _mm512_loadu_ps(xc + 16 * b);
    for (int r = 0; r < R; ++r) {
      const __m512 xi = _mm512_set1_ps(c < d ? x[r][c] : 0.0f);
      for (int b = 0; b < B; ++b) acc[r][b] = _mm512_fmadd_ps(xi, y[b], acc[r][b]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const std::int64_t i = i0 + r;
    if (i >= k) break;
    float* o = out + i * (i - 1) / 2;
    for (int b = 0; b < B; ++b)
      if (i > jb + 16 * b)
        _mm512_mask_storeu_ps(o + jb + 16 * b, first_lanes(i - jb - 16 * b), acc[r][b]);
  }
}

}  // namespace

SPINDLE_AVX512 void interaction_sample(const float* const* rows, std::int64_t k, std::int64_t d,
                                       float* out, float* scratch) {
  const std::int64_t dp = (d + 15) / 16 * 16, kp = (k + 15) / 16 * 16;
  // [dp][kp]: column c of every row. (transpose_rows' loop with the rows as the
  // lanes; one helper for both measured 8% slower groups, 1.05 -> 1.15 us a sample.)
  float* X = scratch;
  for (std::int64_t jb = 0; jb < kp; jb += 16)
    for (std::int64_t c = 0; c < dp; c += 16) {
      const __mmask16 m = first_lanes(d - c);
      __m512 r[16];
      for (int q = 0; q < 16; ++q)
        r[q] = jb + q < k ? _mm512_maskz_loadu_ps(m, rows[jb + q] + c) : _mm512_setzero_ps();
      transpose16(r);
      for (int t = 0; t < 16; ++t) _mm512_storeu_ps(X + (c + t) * kp + jb, r[t]);
    }
  // Rows in runs of 8 while their products fit one vector of lanes, then of 4
  // with up to four vectors (the columns past 64 in further passes).
  std::int64_t i = 1;
  for (; i < k && i + 7 <= 16; i += 8) rows_dots<8, 1>(rows, k, d, dp, X, kp, i, 0, out);
  for (; i < k; i += 4) {
    const std::int64_t last = std::min(i + 3, k - 1);  // the run's widest row
    for (std::int64_t jb = 0; jb < last; jb += 64) {
      switch (std::min<std::int64_t>(4, (last - jb + 15) / 16)) {
        case 1: rows_dots<4, 1>(rows, k, d, dp, X, kp, i, jb, out); break;
        case 2: rows_dots<4, 2>(rows, k, d, dp, X, kp, i, jb, out); break;
        case 3: rows_dots<4, 3>(rows, k, d, dp, X, kp, i, jb, out); break;
        default: rows_dots<4, 4>(rows, k, d, dp, X, kp, i, jb, out); break;
      }
    }
  }
}

bool interaction_groups_available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

void interaction_group(const float* const* rows, std::int64_t k, std::int64_t d, int n,
                       float* out, std::int64_t out_stride, float* scratch) {
  const std::int64_t dp = (d + 15) / 16 * 16, pairs = k * (k - 1) / 2;
  float* T = scratch;
  float* P = scratch + k * dp * 16;
  transpose_rows(rows, k, d, n, T);
  for (std::int64_t ib = 0; ib < k; ib += 4)
    for (std::int64_t jb = 0; jb <= ib; jb += 4) pair_tile(T, k, dp, ib, jb, P);
  scatter_pairs(P, pairs, n, out, out_stride);
}

#else  // no AVX-512 build: every sample runs the portable kernel

bool interaction_groups_available() { return false; }
void interaction_sample(const float* const*, std::int64_t, std::int64_t, float*, float*) {}
void interaction_group(const float* const*, std::int64_t, std::int64_t, int, float*,
                       std::int64_t, float*) {}

#endif

}  // namespace spindle::nn::detail
