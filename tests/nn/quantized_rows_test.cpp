// Row-wise quantised embedding tables (model.toml table_precision = "int8" /
// "int4"): every value reads back within half its row's scale; bags sum the
// dequantised rows; each recommendation model's golden scores (PyTorch FP32)
// stay within the stated bound with its tables quantised, in a quarter (int8)
// or an eighth (int4) of the bytes plus the scales and biases; other values, GNNs
// and int4 through the parameter server refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "core/half.hpp"
#include "core/npy.hpp"
#include "nn/model.hpp"
#include "nn/quantized_rows.hpp"

namespace spindle::nn {
namespace {

// The documented bounds on a click probability against PyTorch FP32.
constexpr float kInt8ScoreBound = 1e-2f;
constexpr float kInt4ScoreBound = 5e-2f;

template <class T>
std::vector<T> golden_npy(const std::string& path) {
  auto a = npy_array::open(path);
  EXPECT_TRUE(a.has_value()) << path;
  auto s = a->as<T>();
  return {s->begin(), s->end()};
}

// Rows of mixed ranges: spread, narrow, constant, all negative, odd width.
std::vector<float> sample_rows(std::int64_t rows, std::int64_t dim) {
  std::mt19937 rng(5);
  std::vector<float> v(std::size_t(rows * dim));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float spread = r % 4 == 0 ? 3.0f : r % 4 == 1 ? 1e-4f : r % 4 == 2 ? 0.0f : 40.0f;
    const float centre = r % 4 == 3 ? -100.0f : 0.5f;
    std::uniform_real_distribution<float> u(centre - spread, centre + spread);
    for (std::int64_t c = 0; c < dim; ++c) v[std::size_t(r * dim + c)] = u(rng);
  }
  return v;
}

// int4 rows keep their scale and bias as float16 (core/half.hpp's float_to_half).
TEST(float_to_half_test, round_trips_every_half_and_rounds_to_nearest_even) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff)) continue;  // NaNs: checked below
    ASSERT_EQ(float_to_half(half_to_float(std::uint16_t(h))), h) << std::hex << h;
  }
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);             // a tie: to even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);             // a tie: to even
  EXPECT_EQ(float_to_half(1.0f + 1.5f / 2048), 0x3c01);             // nearest
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);                       // below the tie: 65504
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                       // the tie: infinity
  EXPECT_EQ(float_to_half(-1e-9f), 0x8000);                         // under the subnormals
  EXPECT_EQ(float_to_half(3e-8f), 0x0001);                          // past half of 2^-24
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

class quantized_rows_test : public ::testing::TestWithParam<int> {};

TEST_P(quantized_rows_test, every_value_reads_back_within_half_its_rows_scale) {
  const int bits = GetParam();
  const std::int64_t rows = 64, dim = 13;
  const auto v = sample_rows(rows, dim);
  auto q = quantized_table::quantize(v, rows, dim, bits, "t");
  ASSERT_TRUE(q.has_value()) << q.error().to_string();
  const std::size_t codes = bits == 8 ? dim : (dim + 1) / 2, tail = bits == 8 ? 8 : 4;
  EXPECT_EQ(q->row_bytes(), codes + tail);
  EXPECT_EQ(q->bytes(), std::size_t(rows) * (codes + tail));
  std::vector<float> back(static_cast<std::size_t>(dim));
  for (std::int64_t r = 0; r < rows; ++r) {
    q->read_row(r, back.data());
    const float scale = q->scale(r);
    float worst = 0, top = 0;
    for (std::int64_t c = 0; c < dim; ++c) {
      const float x = v[std::size_t(r * dim + c)];
      worst = std::max(worst, std::abs(x - back[std::size_t(c)]));
      top = std::max(top, std::abs(x));
    }
    // scale / 2, plus float32's rounding of code * scale + bias
    EXPECT_LE(worst, scale / 2 + 4e-7f * top) << "row " << r << " scale " << scale;
    if (r % 4 == 2) {
      EXPECT_EQ(worst, 0.0f) << "a constant row reads back exactly";
    } else {
      EXPECT_GT(scale, 0.0f);
    }
  }
}

// The bag's vector body and its tail: widths around the 16-value blocks, every
// row's read-back summed per bag; and a bag of rows near float32's limit stays
// finite where the rows' sum does (each row is added with its own bias).
TEST_P(quantized_rows_test, bags_of_every_width_and_near_the_float_limit) {
  const int bits = GetParam();
  heap_allocator a;
  for (const std::int64_t dim : {1, 2, 15, 16, 17, 33, 64}) {
    const std::int64_t rows = 9;
    const auto v = sample_rows(rows, dim);
    auto q = quantized_table::quantize(v, rows, dim, bits, "t");
    ASSERT_TRUE(q.has_value());
    const std::vector<std::int64_t> indices = {8, 0, 4, 4}, offsets = {0, 1, 4};
    auto out = embedding_bag(a, *q, indices, offsets);
    ASSERT_TRUE(out.has_value()) << out.error().to_string();
    std::vector<float> row(static_cast<std::size_t>(dim));
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t c = 0; c < dim; ++c) {
        float want = 0;
        for (std::int64_t k = offsets[b]; k < offsets[b + 1]; ++k) {
          q->read_row(indices[std::size_t(k)], row.data());
          want += row[std::size_t(c)];
        }
        EXPECT_NEAR(out->row(b)[c], want, 1e-5f * (1 + std::abs(want))) << dim << "," << c;
      }
  }
  if (bits == 4) return;  // int4 keeps float16 scales: no such range
  const std::vector<float> big = {-1e38f, 1.5e38f, -1e38f, 1.5e38f};
  auto q = quantized_table::quantize(big, 2, 2, bits, "big");
  ASSERT_TRUE(q.has_value()) << q.error().to_string();
  auto out = embedding_bag(a, *q, std::vector<std::int64_t>{0, 1}, std::vector<std::int64_t>{0, 2});
  ASSERT_TRUE(out.has_value());
  for (int c = 0; c < 2; ++c) EXPECT_TRUE(std::isfinite(out->row(0)[c])) << out->row(0)[c];
}

TEST_P(quantized_rows_test, bags_sum_the_dequantised_rows) {
  const int bits = GetParam();
  const std::int64_t rows = 16, dim = 7;
  const auto v = sample_rows(rows, dim);
  auto q = quantized_table::quantize(v, rows, dim, bits, "t");
  ASSERT_TRUE(q.has_value());
  const std::vector<std::int64_t> indices = {3, 0, 3, 15, 8}, offsets = {0, 3, 3, 5};
  heap_allocator a;
  auto out = embedding_bag(a, *q, indices, offsets);
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  ASSERT_EQ(out->rows(), 3);
  std::vector<float> row(static_cast<std::size_t>(dim));
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t c = 0; c < dim; ++c) {
      float want = 0;
      for (std::int64_t k = offsets[b]; k < offsets[b + 1]; ++k) {
        q->read_row(indices[std::size_t(k)], row.data());
        want += row[std::size_t(c)];
      }
      EXPECT_NEAR(out->row(b)[c], want, 1e-4f * (1 + std::abs(want))) << b << "," << c;
    }
  const std::vector<std::int64_t> bad = {16};
  auto outside = embedding_bag(a, *q, bad, std::vector<std::int64_t>{0, 1});
  ASSERT_FALSE(outside.has_value());
  EXPECT_NE(outside.error().message().find("index 16 at position 0 outside [0, 16)"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(bits, quantized_rows_test, ::testing::Values(8, 4));

TEST(quantized_rows_refusal_test, values_a_row_cannot_hold_are_named) {
  std::vector<float> v = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
  auto nan = quantized_table::quantize(v, 2, 2, 8, "m: emb_l.0.weight");
  ASSERT_FALSE(nan.has_value());
  EXPECT_NE(nan.error().message().find("m: emb_l.0.weight: row 1"), std::string::npos)
      << nan.error().message();
  v = {1, 2, 3, 70000};
  EXPECT_TRUE(quantized_table::quantize(v, 2, 2, 8, "t").has_value());
  auto wide = quantized_table::quantize(v, 2, 2, 4, "t");
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.error().message().find("row 1"), std::string::npos);
  EXPECT_NE(wide.error().message().find("65504"), std::string::npos);
  auto two = quantized_table::quantize(v, 2, 2, 2, "t");
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().message().find("2-bit rows are not built"), std::string::npos);
}

struct golden_case {
  std::string dir;
  model m;
  std::vector<sparse_input> sparse;
  std::vector<float> dense, want;
};

golden_case load_golden(const std::string& arch, const std::string& table_precision,
                        allocator& alloc) {
  golden_case g;
  g.dir = SPINDLE_SOURCE_DIR "/tests/nn/golden/" + arch;
  auto m = model::load(g.dir, alloc, false, table_precision);
  EXPECT_TRUE(m.has_value()) << m.error().to_string();
  g.m = std::move(*m);
  for (std::size_t t = 0; t < g.m.desc().table_rows.size(); ++t)
    g.sparse.push_back(
        {golden_npy<std::int64_t>(g.dir + "/indices" + std::to_string(t) + ".npy"),
         golden_npy<std::int64_t>(g.dir + "/offsets" + std::to_string(t) + ".npy")});
  g.dense = golden_npy<float>(g.dir + "/dense.npy");
  g.want = golden_npy<float>(g.dir + "/expected.npy");
  return g;
}

float worst_error(golden_case& g, allocator& alloc) {
  const std::int64_t batch = std::int64_t(g.sparse[0].offsets.size()) - 1;
  auto y = g.m.forward_rec(alloc, tensor::borrow(g.dense.data(), {batch, g.m.desc().dense_in}),
                           g.sparse);
  EXPECT_TRUE(y.has_value()) << y.error().to_string();
  if (!y) return std::numeric_limits<float>::infinity();
  float worst = 0;
  for (std::size_t i = 0; i < g.want.size(); ++i)
    worst = std::max(worst, std::abs(y->data()[i] - g.want[i]));
  return worst;
}

class quantized_golden_test : public ::testing::TestWithParam<const char*> {};

TEST_P(quantized_golden_test, scores_within_the_bound_of_fp32_in_fewer_bytes) {
  heap_allocator alloc;
  auto fp32 = load_golden(GetParam(), "", alloc);
  EXPECT_LE(worst_error(fp32, alloc), 1e-5f);
  EXPECT_EQ(fp32.m.desc().table_precision, "fp32");
  const auto& d = fp32.m.desc();
  std::size_t values = 0;
  for (auto rows : d.table_rows) values += std::size_t(rows * d.embedding_dim);
  EXPECT_EQ(fp32.m.table_bytes(), values * sizeof(float));
  for (const char* precision : {"int8", "int4"}) {
    auto q = load_golden(GetParam(), precision, alloc);
    const float worst = worst_error(q, alloc);
    const std::size_t rows = values / std::size_t(d.embedding_dim);
    const std::size_t want_bytes =
        std::string(precision) == "int8"
            ? values + rows * 8
            : rows * (std::size_t(d.embedding_dim + 1) / 2 + 4);
    std::printf("%s: %s worst |score - PyTorch FP32| = %.2e; tables %zu -> %zu bytes (%.2fx)\n",
                GetParam(), precision, double(worst), fp32.m.table_bytes(), q.m.table_bytes(),
                double(fp32.m.table_bytes()) / double(q.m.table_bytes()));
    EXPECT_LE(worst, std::string(precision) == "int8" ? kInt8ScoreBound : kInt4ScoreBound);
    EXPECT_GT(worst, 0.0f) << precision << ": the quantised tables were not read";
    EXPECT_EQ(q.m.table_bytes(), want_bytes);
    EXPECT_EQ(q.m.desc().table_precision, precision);
    EXPECT_EQ(q.m.parameter_count(), fp32.m.parameter_count());
  }
}

INSTANTIATE_TEST_SUITE_P(rec, quantized_golden_test,
                         ::testing::Values("dlrm", "ncf", "wnd", "din"));

TEST(quantized_rows_refusal_test, other_values_gnns_and_the_parameter_server_are_refused) {
  auto desc = [](const std::string& extra) {
    return config::parse_model_desc("[model]\narch = \"graphsage\"\nin = 4\nhidden = 8\nout = 3\n"
                                    "layers = 2\n" + extra, "m/model.toml");
  };
  auto bad = desc("table_precision = \"int2\"\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find(
                "m/model.toml: model.table_precision = 'int2': expected fp32, int8 or int4"),
            std::string::npos)
      << bad.error().message();
  auto number = desc("table_precision = 8\n");
  ASSERT_FALSE(number.has_value());
  EXPECT_NE(number.error().message().find("model.table_precision must be a string"),
            std::string::npos);
  auto gnn = desc("table_precision = \"int8\"\n");
  ASSERT_FALSE(gnn.has_value());
  EXPECT_NE(gnn.error().message().find("m/model.toml: model.table_precision = 'int8'"),
            std::string::npos);
  EXPECT_NE(gnn.error().message().find("a graphsage model's tables stay fp32"), std::string::npos)
      << gnn.error().message();
  heap_allocator alloc;
  const std::string dlrm = SPINDLE_SOURCE_DIR "/tests/nn/golden/dlrm";
  // Through the parameter server int8 is served (its L1 holds int8 rows); int4 is refused.
  EXPECT_TRUE(model::load(dlrm, alloc, true, "int8").has_value());
  auto ps = model::load(dlrm, alloc, true, "int4");
  ASSERT_FALSE(ps.has_value());
  EXPECT_NE(ps.error().message().find("the parameter server's tables"), std::string::npos)
      << ps.error().message();
  auto flag = model::load(dlrm, alloc, false, "int3");
  ASSERT_FALSE(flag.has_value());
  EXPECT_NE(flag.error().message().find("table_precision = 'int3'"), std::string::npos);
  auto sage = model::load(SPINDLE_SOURCE_DIR "/tests/nn/golden/graphsage", alloc, false, "int8");
  ASSERT_FALSE(sage.has_value());
  EXPECT_NE(sage.error().message().find("tables stay fp32"), std::string::npos);
}

}  // namespace
}  // namespace spindle::nn
