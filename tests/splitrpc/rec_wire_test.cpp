// The recommendation payload of the tensor path (splitrpc/rec_wire): a packed
// request unpacks to the same batch, and each malformed field is named.
#include "splitrpc/rec_wire.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace spindle::splitrpc {
namespace {

const std::vector<float> kDense = {1, 2, 3, 4, 5, 6};  // batch 3 x dense_in 2
const std::vector<nn::sparse_input> kSparse = {{{7, 8}, {0, 1, 1, 2}},
                                               {{1LL << 40, 2, 3}, {0, 1, 2, 3}}};

TEST(rec_wire, a_packed_request_unpacks_to_the_same_batch) {
  const auto w = pack_rec_request(3, kDense, kSparse);
  EXPECT_EQ(w.size(), 4 + 6 + 2 * (4 + 2) + 2 * (4 + 3));
  auto in = unpack_rec_request(w, 2, 2);
  ASSERT_TRUE(in.has_value()) << in.error().to_string();
  EXPECT_EQ(in->batch, 3);
  EXPECT_EQ(in->dense, kDense);
  ASSERT_EQ(in->sparse.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(in->sparse[t].indices, kSparse[t].indices);  // 64-bit keys survive
    EXPECT_EQ(in->sparse[t].offsets, kSparse[t].offsets);
  }
}

std::string error_of(std::vector<float> w, std::int64_t dense_in = 2, std::size_t tables = 2) {
  auto in = unpack_rec_request(w, dense_in, tables);
  return in ? "" : in.error().message();
}

void set_word(std::vector<float>& w, std::size_t at, std::uint32_t v) {
  std::memcpy(&w[at], &v, 4);
}

TEST(rec_wire, each_malformed_field_is_named) {
  const auto good = pack_rec_request(3, kDense, kSparse);
  EXPECT_NE(error_of({}).find("no header"), std::string::npos);
  auto w = good;
  set_word(w, 0, 7);
  EXPECT_NE(error_of(w).find("magic 0x7"), std::string::npos) << error_of(w);
  w = good;
  set_word(w, 1, 0);
  EXPECT_NE(error_of(w).find("batch = 0"), std::string::npos);
  EXPECT_NE(error_of(good, 3).find("dense_in = 2: the model has 3"), std::string::npos);
  EXPECT_NE(error_of(good, 2, 4).find("tables = 2: the model has 4"), std::string::npos);
  w = good;
  w[5] = std::nanf("");
  EXPECT_NE(error_of(w).find("dense[1] = nan: not a finite number (sample 0)"), std::string::npos)
      << error_of(w);
  w = good;
  std::int64_t back = -1;  // table 0's offsets[1]
  std::memcpy(&w[4 + 6 + 2], &back, 8);
  EXPECT_NE(error_of(w).find("table 0: offsets[1] = -1"), std::string::npos) << error_of(w);
  w = good;
  std::int64_t huge = std::int64_t(1) << 60;  // a key count past the payload
  std::memcpy(&w[4 + 6 + 6], &huge, 8);
  EXPECT_NE(error_of(w).find("table 0: 1152921504606846976 keys, payload ends"), std::string::npos)
      << error_of(w);
  w = good;
  w.pop_back();
  EXPECT_NE(error_of(w).find("table 1: 3 keys, payload ends"), std::string::npos);
  w = good;
  w.push_back(0);
  EXPECT_NE(error_of(w).find("1 words past the request"), std::string::npos);
}

}  // namespace
}  // namespace spindle::splitrpc
