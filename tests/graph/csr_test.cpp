#include "graph/csr.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace spindle::graph {
namespace {

csr_view view_of(std::int64_t n, const std::vector<std::int64_t>& indptr, const std::vector<std::int32_t>& idx) {
  csr_view v;
  v.num_nodes = n;
  v.indptr = indptr;
  v.indices32 = idx;
  return v;
}

TEST(csr_test, accepts_a_valid_graph) {
  std::vector<std::int64_t> indptr{0, 2, 3, 3};
  std::vector<std::int32_t> idx{1, 2, 0};
  EXPECT_TRUE(validate_csr(view_of(3, indptr, idx)).is_ok());
}

TEST(csr_test, rejects_non_monotone_indptr) {
  std::vector<std::int64_t> indptr{0, 2, 1, 3};
  std::vector<std::int32_t> idx{1, 2, 0};
  status s = validate_csr(view_of(3, indptr, idx));
  EXPECT_EQ(s.message(), "indptr.npy: not monotone: indptr[1]=2 > indptr[2]=1");
}

TEST(csr_test, rejects_out_of_range_index_naming_position_and_value) {
  std::vector<std::int64_t> indptr{0, 2, 3, 3};
  std::vector<std::int32_t> idx{1, 99999, 0};
  status s = validate_csr(view_of(3, indptr, idx));
  EXPECT_EQ(s.message(), "indices.npy: indices[1]=99999 out of range (num_nodes=3)");
  idx[1] = -1;
  EXPECT_EQ(validate_csr(view_of(3, indptr, idx)).code(), errc::corrupt_data);
}

TEST(csr_test, rejects_indptr_that_disagrees_with_indices) {
  std::vector<std::int64_t> indptr{0, 2, 3, 4};
  std::vector<std::int32_t> idx{1, 2, 0};
  EXPECT_EQ(validate_csr(view_of(3, indptr, idx)).message(),
            "indptr.npy: indptr[3]=4 but indices.npy has 3 entries");
  std::vector<std::int64_t> short_indptr{0, 2};
  EXPECT_EQ(validate_csr(view_of(3, short_indptr, idx)).code(), errc::corrupt_data);
}

TEST(csr_test, rejects_negative_or_nan_weights) {
  std::vector<std::int64_t> indptr{0, 1, 1};
  std::vector<std::int32_t> idx{1};
  std::vector<float> w{-1.0f};
  auto v = view_of(2, indptr, idx);
  v.edge_weight = w;
  EXPECT_NE(validate_csr(v).message().find("edge_weight[0]=-1"), std::string::npos);
}

}  // namespace
}  // namespace spindle::graph
