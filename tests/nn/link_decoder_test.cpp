// A link model's pair scores: the dot product of the pair's rows, or its
// decoder ops (an MLP on the two rows' concatenation), pairs sharing an end or
// made of one node included; odd rows refused by name.
#include "nn/link_decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace spindle::nn {
namespace {

const char* kLink = R"([model]
arch = "stack"
in = 4
out = 3
task = "link"
decoder = "{}"

[[op]]
kind = "sage"
name = "conv"
prefix = "conv"
in = 4
out = 3
)";

const char* kMlp = R"(
[[decoder_op]]
kind = "cat"
name = "both"
inputs = ["z_src", "z_dst"]

[[decoder_op]]
kind = "linear"
name = "lin1"
prefix = "dec.lin1"
in = 6
out = 5

[[decoder_op]]
kind = "relu"
name = "act"

[[decoder_op]]
kind = "linear"
name = "lin2"
prefix = "dec.lin2"
in = 5
out = 1
)";

// A link model with random weights, loaded from a scratch folder.
model link_model(const std::string& decoder, heap_allocator& weights) {
  std::string text = kLink;
  text.replace(text.find("{}"), 2, decoder);
  if (decoder == "ops") text += kMlp;
  auto d = config::parse_model_desc(text, "link");
  EXPECT_TRUE(d.has_value()) << d.error().message();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("spindle_link_" + decoder + std::to_string(::getpid()));
  EXPECT_TRUE(init_model(*d, 9, dir.string()).is_ok());
  auto m = model::load(dir.string(), weights);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(m.has_value()) << m.error().message();
  return std::move(*m);
}

std::vector<float> z_rows = {1, 2, 3,   // row 0
                             -1, 0, 4,  // row 1
                             0.5f, 0.5f, 0.5f};

// The scores of `rows`' pairs over z_rows by m's decoder (empty when refused).
std::vector<float> scores_of(const model& m, const std::vector<std::int32_t>& rows) {
  heap_allocator a;
  auto z = tensor::borrow(z_rows.data(), {3, 3});
  std::vector<float> out(rows.size() / 2, -99);
  auto st = score_pairs(m, a, z, rows, out.data());
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return st.is_ok() ? out : std::vector<float>{};
}

TEST(link_decoder_test, dot_scores_each_pair_from_its_rows) {
  heap_allocator weights;
  auto m = link_model("dot", weights);
  auto out = scores_of(m, {0, 1, 1, 1, 2, 0});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0], 1 * -1 + 2 * 0 + 3 * 4);
  EXPECT_FLOAT_EQ(out[1], 1 + 0 + 16);
  EXPECT_FLOAT_EQ(out[2], 0.5f * 6);
}

// lin2(relu(lin1([z_u, z_v]))) by hand from the model's own tensors.
float mlp_by_hand(const model& m, const float* u, const float* v) {
  std::vector<float> in(u, u + 3);
  in.insert(in.end(), v, v + 3);
  auto w1 = m.param("dec.lin1.weight").data(), b1 = m.param("dec.lin1.bias").data();
  auto w2 = m.param("dec.lin2.weight").data(), b2 = m.param("dec.lin2.bias").data();
  float score = b2[0];
  for (int h = 0; h < 5; ++h) {
    float s = b1[h];
    for (int c = 0; c < 6; ++c) s += w1[h * 6 + c] * in[std::size_t(c)];
    score += w2[h] * std::max(0.0f, s);
  }
  return score;
}

TEST(link_decoder_test, decoder_ops_score_each_pair_from_its_two_rows) {
  heap_allocator weights;
  auto m = link_model("ops", weights);
  const std::vector<std::int32_t> rows = {0, 1, 1, 0, 2, 2};
  auto out = scores_of(m, rows);
  ASSERT_EQ(out.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(out[i], mlp_by_hand(m, &z_rows[3 * rows[2 * i]], &z_rows[3 * rows[2 * i + 1]]),
                1e-5f)
        << i;
  EXPECT_NE(out[0], out[1]);  // the order of a pair's ends matters to an MLP
}

TEST(link_decoder_test, odd_rows_are_refused_by_name) {
  heap_allocator weights, a;
  auto m = link_model("dot", weights);
  auto z = tensor::borrow(z_rows.data(), {3, 3});
  float out[2] = {};
  const std::vector<std::int32_t> odd = {0, 0, 0};
  auto st = score_pairs(m, a, z, odd, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("3 nodes do not make pairs"), std::string::npos);
}

// A typed link model's pairs: the first end a row of z_src, the second of z_dst.
TEST(link_decoder_test, typed_pairs_read_each_end_from_its_types_rows) {
  heap_allocator weights, a;
  auto m = link_model("dot", weights);
  std::vector<float> users = {1, 0, 0, 0, 1, 0}, movies = {2, 3, 4};  // 2 users, 1 movie
  auto zu = tensor::borrow(users.data(), {2, 3});
  auto zv = tensor::borrow(movies.data(), {1, 3});
  float out[2] = {};
  const std::vector<std::int32_t> rows = {1, 0, 0, 0};
  ASSERT_TRUE(score_pairs(m, a, zu, zv, rows, out).is_ok());
  EXPECT_FLOAT_EQ(out[0], 3);
  EXPECT_FLOAT_EQ(out[1], 2);
  const std::vector<std::int32_t> beyond = {0, 1};  // the only movie is row 0
  EXPECT_FALSE(score_pairs(m, a, zu, zv, beyond, out).is_ok());
}

}  // namespace
}  // namespace spindle::nn
