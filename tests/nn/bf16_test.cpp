// Opt-in bfloat16 and int8 MLPs (model.toml precision = "bf16" / "int8"):
// rounding to bfloat16, int8 row quantisation, and each recommendation model's
// golden scores (PyTorch FP32) served within the stated bound, 1e-2 absolute;
// fp32 again when switched back; other precisions and bf16/int8 on a
// fixed-architecture GNN refused by name (GNN stacks: pyg_golden_test).
#include <gtest/gtest.h>

#include <random>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "core/npy.hpp"
#include "nn/bf16_gemm.hpp"
#include "nn/int8_gemm.hpp"
#include "nn/model.hpp"

namespace spindle::nn {
namespace {

constexpr float kBf16ScoreBound = 1e-2f;  // the documented bound on a click probability

template <class T>
std::vector<T> load_npy(const std::string& path) {
  auto a = npy_array::open(path);
  EXPECT_TRUE(a.has_value()) << path;
  auto s = a->as<T>();
  return {s->begin(), s->end()};
}

TEST(bf16_test, rounds_to_nearest_even) {
  EXPECT_EQ(from_bf16(to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);               // a tie: to even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // a tie: to even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.5f / 256)), 1.0f + 2.0f / 256);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(from_bf16(to_bf16(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(from_bf16(to_bf16(-2.5f)), -2.5f);
  // Finite floats past bfloat16's largest (3.3895e38) saturate: no infinity, no NaN later.
  const float big = std::numeric_limits<float>::max();
  EXPECT_TRUE(std::isfinite(from_bf16(to_bf16(big))));
  EXPECT_GT(from_bf16(to_bf16(big)), 3.38e38f);
  EXPECT_LT(from_bf16(to_bf16(-3.397e38f)), -3.38e38f);
  EXPECT_TRUE(std::isfinite(from_bf16(to_bf16(-3.397e38f))));
}

// The row conversion (16 values an instruction on AVX-512 BF16) gives every
// value's to_bf16: ties, NaN with its sign, infinities, saturated finite values,
// a tail shorter than 16; denormals (read as zero there) aside.
TEST(bf16_test, a_row_converts_as_each_value_does) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  std::vector<float> x(1000);
  for (auto& v : x) v = normal(rng);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges{1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -nan, nan, inf, -inf,
                                 std::numeric_limits<float>::max(), -3.397e38f, 0.0f, -0.0f};
  std::copy(edges.begin(), edges.end(), x.begin() + 5);
  std::vector<std::uint16_t> row(x.size());
  to_bf16(x.data(), row.data(), std::int64_t(x.size()) - 3);  // a tail of 13
  for (std::size_t i = 0; i + 3 < x.size(); ++i) ASSERT_EQ(row[i], to_bf16(x[i])) << i << " " << x[i];
}

// Golden scores per (model, precision): bf16 and int8 both within 1e-2 absolute.
class reduced_precision_golden_test
    : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(reduced_precision_golden_test, scores_within_the_bound_of_fp32) {
  const auto [name, precision] = GetParam();
  const std::string mode = precision;
  const auto why = mode == "int8" ? int8_unsupported_reason() : bf16_unsupported_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string dir = SPINDLE_SOURCE_DIR "/tests/nn/golden/" + std::string(name);
  heap_allocator alloc;
  auto m = model::load(dir, alloc);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  std::vector<sparse_input> sparse;
  for (std::size_t t = 0; t < m->desc().table_rows.size(); ++t)
    sparse.push_back({load_npy<std::int64_t>(dir + "/indices" + std::to_string(t) + ".npy"),
                      load_npy<std::int64_t>(dir + "/offsets" + std::to_string(t) + ".npy")});
  const std::int64_t batch = std::int64_t(sparse[0].offsets.size()) - 1;
  auto dense = load_npy<float>(dir + "/dense.npy");
  const auto want = load_npy<float>(dir + "/expected.npy");
  auto run = [&] {
    auto y = m->forward_rec(alloc, tensor::borrow(dense.data(), {batch, m->desc().dense_in}),
                            sparse);
    EXPECT_TRUE(y.has_value()) << y.error().to_string();
    float worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(y->data()[i] - want[i]));
    return worst;
  };
  ASSERT_TRUE(m->set_precision(mode).is_ok());
  EXPECT_EQ(m->precision(), mode);
  const float reduced = run();
  std::printf("%s: %s worst |score - PyTorch FP32| = %.2e\n", name, precision, double(reduced));
  EXPECT_LE(reduced, kBf16ScoreBound);
  EXPECT_GT(reduced, 0.0f) << "the " << mode << " path did not run";
  ASSERT_TRUE(m->set_precision("fp32").is_ok());
  EXPECT_LE(run(), 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(rec, reduced_precision_golden_test,
                         ::testing::Combine(::testing::Values("dlrm", "ncf", "wnd", "din"),
                                            ::testing::Values("bf16", "int8")));

TEST(int8_test, rows_quantise_to_their_own_scale_and_products_sum_exactly) {
  std::vector<float> w = {1.0f, -0.5f, 0.25f, 0.0f, 0.0f, 0.0f, 127.0f, -254.0f, 3.0f};
  std::vector<std::int8_t> codes;
  std::vector<float> scales;
  ASSERT_TRUE(quantize_rows_s8(w, 3, 3, codes, scales, "w").is_ok());
  EXPECT_FLOAT_EQ(scales[0], 1.0f / 127);
  EXPECT_EQ(codes[0], 127);
  EXPECT_NEAR(codes[1] * scales[0], -0.5f, scales[0] / 2);
  EXPECT_EQ(scales[1], 1.0f);  // a row of zeros
  EXPECT_EQ(codes[7], -127);
  EXPECT_EQ(codes[6], 64);  // 63.5 to even
  w[4] = std::numeric_limits<float>::infinity();
  auto bad = quantize_rows_s8(w, 3, 3, codes, scales, "model 'm': top_l.0.weight");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("top_l.0.weight: value inf at [1, 1]"), std::string::npos)
      << bad.message();
  if (auto why = int8_unsupported_reason(); !why.empty()) GTEST_SKIP() << why;
  // Inputs and weights that int8 holds exactly: the answer is exact, every row
  // count (blocks of 64, padded tails) and with a bias.
  heap_allocator alloc;
  for (std::int64_t rows : {1, 7, 64, 70, 200}) {
    std::vector<float> x(std::size_t(rows * 5)), wt(15), bias = {0.5f, -1.0f, 2.0f};
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 11) - 5);
    for (std::size_t i = 0; i < wt.size(); ++i) wt[i] = float(int(i % 7) - 3);
    for (std::int64_t r = 0; r < rows; ++r) x[std::size_t(r * 5)] = 127;  // scale 1 a row
    wt[0] = wt[5] = wt[10] = 127;
    ASSERT_TRUE(quantize_rows_s8(wt, 3, 5, codes, scales, "w").is_ok());
    auto y = linear_int8(alloc, tensor::borrow(x.data(), {rows, 5}), codes, scales, bias, 3);
    ASSERT_TRUE(y.has_value()) << y.error().to_string();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < 3; ++c) {
        float want = bias[std::size_t(c)];
        for (std::int64_t k = 0; k < 5; ++k) want += x[std::size_t(r * 5 + k)] * wt[std::size_t(c * 5 + k)];
        ASSERT_FLOAT_EQ(y->row(r)[c], want) << rows << " rows, row " << r << " col " << c;
      }
  }
}

TEST(int8_test, a_row_holding_nan_or_inf_answers_nan_and_too_wide_a_layer_is_refused) {
  std::vector<float> wide(std::size_t(kInt8MaxInputs + 1), 1.0f);
  std::vector<std::int8_t> codes;
  std::vector<float> scales;
  auto refused = quantize_rows_s8(wide, 1, kInt8MaxInputs + 1, codes, scales, "model 'm': mlp_l.0.weight");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("mlp_l.0.weight: 133145 inputs per output; int8 sums overflow int32 past 133144"),
            std::string::npos) << refused.message();
  if (auto why = int8_unsupported_reason(); !why.empty()) GTEST_SKIP() << why;
  std::vector<float> w = {1.0f, 2.0f, 0.0f, -1.0f}, bias = {0.0f, 0.0f};
  ASSERT_TRUE(quantize_rows_s8(w, 2, 2, codes, scales, "w").is_ok());
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.0f, 1.0f, nan, 1.0f, 1.0f, -inf, 2.0f, 0.5f};
  heap_allocator alloc;
  auto y = linear_int8(alloc, tensor::borrow(x.data(), {4, 2}), codes, scales, bias, 2);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  for (std::int64_t r : {1, 2})
    for (std::int64_t c = 0; c < 2; ++c) EXPECT_TRUE(std::isnan(y->row(r)[c])) << r << ", " << c;
  EXPECT_NEAR(y->row(0)[0], 3.0f, 0.05f);   // the finite rows keep their answers
  EXPECT_NEAR(y->row(3)[1], -0.5f, 0.05f);
}

// A bfloat16 weight reordered once for oneDNN (nn/packed_weight) gives the plain
// route's products: whole blocks, a padded last block, and rows too few for one
// (left to the plain route), with and without a pool; a float32 input is not
// multiplied by a bfloat16 copy.
TEST(bf16_test, a_packed_bf16_weight_gives_the_plain_routes_products) {
  if (auto why = bf16_unsupported_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::int64_t k = 130, n = 47;
  std::mt19937 rng(3);
  std::normal_distribution<float> z;
  std::vector<float> wf(static_cast<std::size_t>(n * k)), bias(static_cast<std::size_t>(n));
  for (auto& v : wf) v = z(rng);
  for (auto& v : bias) v = z(rng);
  const auto w = to_bf16(wf);
  auto packed = packed_weight::pack(std::span<const std::uint16_t>(w), n, k);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->type(), packed_weight::element::bf16);
  std::vector<float> one(static_cast<std::size_t>(k), 1.0f), sink(static_cast<std::size_t>(n));
  EXPECT_EQ(packed->multiply_blocks(one.data(), sink.data(), 1), 0);  // float32 rows: not its type
  heap_allocator alloc;
  thread_pool pool(2);
  for (std::int64_t m : {3, 5, 64, 100, 130}) {
    std::vector<float> x(std::size_t(m * k));
    for (auto& v : x) v = z(rng);
    const auto in = tensor::borrow(x.data(), {m, k});
    for (thread_pool* p : {static_cast<thread_pool*>(nullptr), &pool}) {
      auto plain = linear_bf16(alloc, in, w, bias, n, p);
      auto fast = linear_bf16(alloc, in, w, bias, n, p, packed.get());
      ASSERT_TRUE(plain.has_value() && fast.has_value());
      for (std::int64_t i = 0; i < m * n; ++i)
        ASSERT_NEAR(fast->data()[i], plain->data()[i], 1e-4 * (1 + std::abs(plain->data()[i])))
            << m << " rows, value " << i;
    }
  }
}

TEST(bf16_test, other_precisions_and_gnns_are_refused_by_name) {
  auto desc = [](const std::string& extra) {
    return config::parse_model_desc("[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 3\n"
                                    "layers = 2\n" + extra, "m/model.toml");
  };
  auto int4 = desc("precision = \"int4\"\n");
  ASSERT_FALSE(int4.has_value());
  EXPECT_NE(int4.error().message().find("expected fp32, bf16 or int8"), std::string::npos);
  auto int8 = desc("precision = \"int8\"\n");
  ASSERT_FALSE(int8.has_value());
  EXPECT_NE(int8.error().message().find("a graphsage model runs in fp32"), std::string::npos);
  auto gnn = desc("precision = \"bf16\"\n");
  ASSERT_FALSE(gnn.has_value());
  EXPECT_NE(gnn.error().message().find("a graphsage model runs in fp32"), std::string::npos)
      << gnn.error().message();
}

}  // namespace
}  // namespace spindle::nn
