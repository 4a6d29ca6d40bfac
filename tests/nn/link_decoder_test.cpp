// A link model's pair scores: the dot product of the pair's rows, pairs sharing
// an end or made of one node included; odd rows and unknown decoders refused.
#include "nn/link_decoder.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace spindle::nn {
namespace {

TEST(link_decoder_test, dot_scores_each_pair_from_its_rows) {
  std::vector<float> z = {1, 2, 3,   // row 0
                          -1, 0, 4,  // row 1
                          0.5f, 0.5f, 0.5f};
  auto t = tensor::borrow(z.data(), {3, 3});
  const std::vector<std::int32_t> rows = {0, 1, 1, 1, 2, 0};
  std::vector<float> out(3, -99);
  ASSERT_TRUE(score_pairs("dot", t, rows, out.data()).is_ok());
  EXPECT_FLOAT_EQ(out[0], 1 * -1 + 2 * 0 + 3 * 4);
  EXPECT_FLOAT_EQ(out[1], 1 + 0 + 16);
  EXPECT_FLOAT_EQ(out[2], 0.5f * 6);
}

TEST(link_decoder_test, odd_rows_and_unknown_decoders_are_refused_by_name) {
  std::vector<float> z = {1, 2};
  auto t = tensor::borrow(z.data(), {1, 2});
  float out[2] = {};
  const std::vector<std::int32_t> odd = {0, 0, 0};
  auto st = score_pairs("dot", t, odd, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("3 nodes do not make pairs"), std::string::npos);
  const std::vector<std::int32_t> two = {0, 0};
  st = score_pairs("cosine", t, two, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("decoder 'cosine'"), std::string::npos);
}

}  // namespace
}  // namespace spindle::nn
