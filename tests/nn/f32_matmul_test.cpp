// FP32 products through oneDNN (nn/f32_matmul): x W^T and y += x W^T equal a
// double-precision reference within float rounding at 5-300 rows, an
// accumulating product leaves y as it was when refused, empty shapes are
// refused (BLAS runs them), and a product's route does not depend on the range.
// A weight packed for oneDNN (nn/packed_weight) gives the same products through
// linear_packed: its whole blocks packed, the rest and the bias as linear; a
// ReLU epilogue is relu of the same output, bit for bit.
#include "nn/f32_matmul.hpp"

#include <algorithm>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "nn/packed_weight.hpp"
#include "nn/ops.hpp"

namespace spindle::nn {
namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// The largest |got - (base + x W^T)| over the product, with x W^T in double.
double max_error(const std::vector<float>& x, const std::vector<float>& w,
                 const std::vector<float>& base, const std::vector<float>& got, std::int64_t m,
                 std::int64_t k, std::int64_t n) {
  double worst = 0;
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 0; c < n; ++c) {
      double want = base.empty() ? 0.0 : base[std::size_t(r * n + c)];
      for (std::int64_t i = 0; i < k; ++i)
        want += double(x[std::size_t(r * k + i)]) * double(w[std::size_t(c * k + i)]);
      worst = std::max(worst, std::abs(want - double(got[std::size_t(r * n + c)])));
    }
  return worst;
}

TEST(f32_matmul_test, products_and_accumulations_match_a_double_reference) {
  for (std::int64_t m : {5, 16, 37, 64, 300}) {
    const std::int64_t k = 130, n = 47;
    const auto x = random_values(std::size_t(m * k), 1), w = random_values(std::size_t(n * k), 2);
    std::vector<float> y(std::size_t(m * n), 123.0f);
    if (!f32_matmul_onednn(x.data(), w.data(), y.data(), m, k, n, false))
      GTEST_SKIP() << "oneDNN runs no AVX-512 kernels here (" << f32_gemm_kernels() << ")";
    EXPECT_LT(max_error(x, w, {}, y, m, k, n), 1e-4) << m << " rows";
    const auto base = random_values(std::size_t(m * n), 3);
    auto acc = base;
    ASSERT_TRUE(f32_matmul_onednn(x.data(), w.data(), acc.data(), m, k, n, true));
    EXPECT_LT(max_error(x, w, base, acc, m, k, n), 1e-4) << m << " rows, accumulated";
    // The same rows again: the same bits (one primitive per shape and thread).
    std::vector<float> again(std::size_t(m * n));
    ASSERT_TRUE(f32_matmul_onednn(x.data(), w.data(), again.data(), m, k, n, false));
    EXPECT_EQ(std::memcmp(again.data(), y.data(), y.size() * sizeof(float)), 0) << m;
  }
}

TEST(f32_matmul_test, empty_shapes_are_left_to_blas) {
  std::vector<float> x(8, 1.0f), w(8, 1.0f), y(8, 7.0f);
  EXPECT_FALSE(f32_matmul_onednn(x.data(), w.data(), y.data(), 0, 4, 2, false));
  EXPECT_FALSE(f32_matmul_onednn(x.data(), w.data(), y.data(), 2, 0, 2, true));
  EXPECT_FALSE(f32_matmul_onednn(x.data(), w.data(), y.data(), 2, 4, 0, false));
  EXPECT_EQ(y, std::vector<float>(8, 7.0f));  // untouched
}

TEST(f32_matmul_test, the_route_follows_the_whole_product_not_the_range) {
  // A range of a product takes the route of the product's rows: the same
  // decision for its 8-row range as for the 8-row product it is not.
  const std::int64_t k = 32, n = 16;
  const auto x = random_values(std::size_t(400 * k), 4), w = random_values(std::size_t(n * k), 5);
  std::vector<float> a(std::size_t(8 * n)), b(std::size_t(8 * n));
  const bool as_product = f32_matmul(x.data(), w.data(), a.data(), 8, k, n, false, 8);
  const bool as_range = f32_matmul(x.data(), w.data(), b.data(), 8, k, n, false, 400);
  const std::string route = f32_gemm_kernels();
  if (route == "onednn up to 64 rows, openblas above") {
    EXPECT_TRUE(as_product);
    EXPECT_FALSE(as_range);  // a 400-row product's range goes to BLAS like the rest of it
  } else {
    EXPECT_EQ(as_product, as_range) << route;
  }
}


// One layer shape: a packed weight's products through linear_packed, with and
// without a pool, against a double reference; the blocks alone.
void expect_packed_products(std::int64_t k, std::int64_t n) {
  SCOPED_TRACE(::testing::Message() << k << " in, " << n << " out");
  const auto w = random_values(std::size_t(n * k), 4), bias = random_values(std::size_t(n), 5);
  auto packed = packed_weight::pack(w, n, k);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->in(), k);
  EXPECT_EQ(packed->out(), n);
  EXPECT_GT(packed->bytes(), 0u);
  heap_allocator alloc;
  thread_pool pool(2);
  for (std::int64_t m : {3, 5, 8, 13, 63, 64, 100, 128, 300}) {
    auto x = random_values(std::size_t(m * k), 6);
    const auto in = tensor::borrow(x.data(), {m, k});
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool}) {
      auto got = linear_packed(alloc, in, *packed, w, bias, n, p);
      ASSERT_TRUE(got.has_value()) << got.error().to_string();
      std::vector<float> y(got->data(), got->data() + m * n);
      std::vector<float> base(std::size_t(m * n));
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t c = 0; c < n; ++c) base[std::size_t(r * n + c)] = bias[std::size_t(c)];
      EXPECT_LT(max_error(x, w, base, y, m, k, n), 1e-4) << m << " rows, pool " << (p != nullptr);
      // The ReLU epilogue, packed and plain: exactly relu of the same output.
      auto fused = linear_packed(alloc, in, *packed, w, bias, n, p, epilogue::relu);
      auto plain = linear(alloc, in, w, bias, n, p);
      auto plain_fused = linear(alloc, in, w, bias, n, p, epilogue::relu);
      // Without a bias, ReLU alone.
      auto unbiased = linear_packed(alloc, in, *packed, w, {}, n, p);
      auto unbiased_fused = linear_packed(alloc, in, *packed, w, {}, n, p, epilogue::relu);
      ASSERT_TRUE(fused && plain && plain_fused && unbiased && unbiased_fused);
      for (std::int64_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(fused->data()[i], std::max(0.0f, y[std::size_t(i)])) << m << " rows, at " << i;
        ASSERT_EQ(plain_fused->data()[i], std::max(0.0f, plain->data()[i])) << m << " rows, at " << i;
        ASSERT_EQ(unbiased_fused->data()[i], std::max(0.0f, unbiased->data()[i])) << m << " rows";
      }
    }
    // The blocks alone: the whole blocks, and the last short block padded (never
    // past y's rows) unless it has fewer than kMinShortRows rows or oneDNN lays
    // the weights out otherwise for it; the rest untouched.
    std::vector<float> y(std::size_t(m * n), 7.0f);
    const auto done = packed->multiply_blocks(x.data(), y.data(), m);
    const auto whole = m / packed_weight::kBlockRows * packed_weight::kBlockRows;
    if (m - whole < packed_weight::kMinShortRows)
      EXPECT_EQ(done, whole) << m;
    else
      EXPECT_TRUE(done == m || done == whole) << m << " rows, " << done << " done";
    EXPECT_LT(max_error(x, w, {}, y, done, k, n), 1e-4) << m;
    for (std::size_t i = std::size_t(done * n); i < y.size(); ++i) ASSERT_EQ(y[i], 7.0f) << m;
  }
}

TEST(f32_packed_test, a_packed_weight_gives_linears_products_in_blocks_and_a_padded_last_one) {
  if (!packed_weight::pack(random_values(4, 1), 2, 2))
    GTEST_SKIP() << "no packing here (" << f32_gemm_kernels() << ")";
  // A GNN-like layer, the DLRM's first bottom layer (13 dense inputs) and its last (one logit).
  for (auto [k, n] : {std::pair{130, 47}, std::pair{13, 512}, std::pair{256, 1}})
    expect_packed_products(k, n);
  const std::int64_t k = 130, n = 47;
  const auto w = random_values(std::size_t(n * k), 4), bias = random_values(std::size_t(n), 5);
  auto packed = packed_weight::pack(w, n, k);
  ASSERT_NE(packed, nullptr);
  heap_allocator alloc;
  // Shapes that do not match are refused by name; a wrong-sized weight is not packed.
  auto x = random_values(std::size_t(64 * 10), 7);
  auto bad = linear_packed(alloc, tensor::borrow(x.data(), {64, 10}), *packed, w, bias, n);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("linear_packed"), std::string::npos);
  EXPECT_EQ(packed_weight::pack(std::span<const float>(w).first(10), n, k), nullptr);
}

}  // namespace
}  // namespace spindle::nn
