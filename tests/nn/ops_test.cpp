#include "nn/interaction_groups.hpp"
#include "nn/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace spindle::nn {
namespace {

TEST(ops_test, activations_and_row_softmax) {
  heap_allocator a;
  auto t = *tensor::empty(a, {2, 3});
  float v[] = {-1, 0, 2, 1, 1, 1};
  std::copy(v, v + 6, t.data());
  elu_(t);
  EXPECT_NEAR(t.data()[0], std::expm1(-1.0f), 1e-6);
  EXPECT_EQ(t.data()[2], 2.0f);
  std::copy(v, v + 6, t.data());
  t.data()[1] = std::nanf("");  // torch.relu keeps NaN: an answer reading it stays NaN
  relu_(t);
  EXPECT_EQ(t.data()[0], 0.0f);
  EXPECT_TRUE(std::isnan(t.data()[1]));
  EXPECT_EQ(t.data()[2], 2.0f);
  std::copy(v, v + 6, t.data());
  leaky_relu_(t, 0.1f);
  EXPECT_FLOAT_EQ(t.data()[0], -0.1f);
  std::copy(v, v + 6, t.data());
  softmax_rows_(t);
  EXPECT_NEAR(t.data()[3], 1.0f / 3, 1e-6);
  EXPECT_NEAR(t.data()[0] + t.data()[1] + t.data()[2], 1.0f, 1e-6);
  std::copy(v, v + 6, t.data());
  log_softmax_rows_(t);
  EXPECT_NEAR(t.data()[4], std::log(1.0f / 3), 1e-6);
}

TEST(ops_test, linear_matches_a_hand_computation) {
  heap_allocator a;
  float xv[] = {1, 2, 3, 4};  // [2 x 2]
  float w[] = {1, 0, 0, 1, 1, 1};  // [3 x 2]
  float b[] = {0.5f, 0, -1};
  auto y = linear(a, tensor::borrow(xv, {2, 2}), w, b, 3);
  ASSERT_TRUE(y.has_value());
  float want[] = {1.5f, 2, 2, 3.5f, 4, 6};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y->data()[i], want[i]);
  EXPECT_EQ(linear(a, tensor::borrow(xv, {2, 2}), w, b, 2).error().code(), errc::invalid_argument);
}

TEST(ops_test, propagate_reduces_sum_mean_max_and_empty_rows_give_zero) {
  heap_allocator a;
  float xv[] = {1, 10, 2, 20, 3, 30};  // 3 src nodes x 2
  std::int64_t indptr[] = {0, 2, 2};   // dst 0 <- {1, 2}; dst 1 <- nothing
  std::int32_t indices[] = {1, 2};
  block b{2, 3, indptr, indices};
  auto x = tensor::borrow(xv, {3, 2});
  auto s = *propagate(a, b, x, reduce_op::sum);
  auto m = *propagate(a, b, x, reduce_op::mean);
  auto mx = *propagate(a, b, x, reduce_op::max);
  EXPECT_FLOAT_EQ(s.data()[0], 5);
  EXPECT_FLOAT_EQ(m.data()[1], 25);
  EXPECT_FLOAT_EQ(mx.data()[0], 3);
  EXPECT_FLOAT_EQ(s.data()[2], 0);
  EXPECT_FLOAT_EQ(mx.data()[3], 0);
}

// Hands out memory full of NaN: an output row a kernel leaves unwritten shows.
class poisoned_allocator final : public allocator {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = heap.allocate(bytes);
    if (p) std::fill_n(static_cast<float*>(p), bytes / sizeof(float), std::nanf(""));
    return p;
  }
  void deallocate(void* p, std::size_t bytes) override { heap.deallocate(p, bytes); }

 private:
  heap_allocator heap;
};

TEST(ops_test, propagate_writes_every_row_from_its_first_source_not_from_zeroed_memory) {
  poisoned_allocator a;
  float xv[] = {-0.0f, 4, 2, -8, 6, 1};  // 3 src nodes x 2
  std::int64_t indptr[] = {0, 1, 1, 3};   // dst 0 <- {0}; dst 1 <- nothing; dst 2 <- {1, 2}
  std::int32_t indices[] = {0, 1, 2};
  block b{3, 3, indptr, indices};
  auto x = tensor::borrow(xv, {3, 2});
  const float want_sum[] = {-0.0f, 4, 0, 0, 8, -7};
  const float want_mean[] = {-0.0f, 4, 0, 0, 4, -3.5f};
  const float want_max[] = {-0.0f, 4, 0, 0, 6, 1};
  const float want_min[] = {-0.0f, 4, 0, 0, 2, -8};
  const std::pair<reduce_op, const float*> cases[] = {{reduce_op::sum, want_sum},
                                                      {reduce_op::mean, want_mean},
                                                      {reduce_op::max, want_max},
                                                      {reduce_op::min, want_min}};
  for (const auto& [op, want] : cases) {
    auto y = propagate(a, b, x, op);
    ASSERT_TRUE(y.has_value());
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y->data()[i], want[i]) << "op " << int(op) << " at " << i;
  }
}

TEST(ops_test, concat_and_dot_interaction) {
  heap_allocator a;
  float d[] = {1, 2};
  float e[] = {3, 4};
  auto dense = tensor::borrow(d, {1, 2});
  auto emb = tensor::borrow(e, {1, 2});
  auto c = *concat_cols(a, {&dense, &emb});
  EXPECT_EQ(c.cols(), 4);
  EXPECT_FLOAT_EQ(c.data()[3], 4);
  auto z = *dot_interaction(a, dense, {&emb});
  ASSERT_EQ(z.cols(), 3);
  EXPECT_FLOAT_EQ(z.data()[2], 1 * 3 + 2 * 4);
  float bad[] = {1, 2, 3};
  auto wide = tensor::borrow(bad, {1, 3});
  EXPECT_FALSE(dot_interaction(a, dense, {&wide}).has_value());
}

// Every pair in its place: rows against four and one by one (2 to 27 vectors, a
// DLRM's 27 among them) and widths off the vector length.
// Both routes: the portable one, sample by sample, and (where the CPU has
// AVX-512) groups of 12-16 samples in the lanes, full and short, with the other
// samples one by one in the lanes' arithmetic; nothing written past a row's pairs
// (the next row's dense copy intact).
TEST(ops_test, dot_interaction_matches_a_double_reference_at_every_tiling) {
  heap_allocator a;
  std::mt19937 rng(11);
  std::normal_distribution<float> z;
  std::vector<bool> routes{false};
  if (detail::interaction_groups_available()) routes.push_back(true);
  for (const bool groups : routes)
    for (const std::int64_t k : {2, 5, 8, 9, 27})
      for (const std::int64_t d : {3, 16, 128, 130})
        for (const std::int64_t rows : {3, 8, 21, 29, 40}) {
          if (rows > 3 && d == 130 && k != 27) continue;  // enough cases for the wide tail
          std::vector<std::vector<float>> v(std::size_t(k), std::vector<float>(std::size_t(rows * d)));
          for (auto& t : v)
            for (auto& x : t) x = z(rng);
          auto dense = tensor::borrow(v[0].data(), {rows, d});
          std::vector<tensor> embs;
          std::vector<const tensor*> ptrs;
          for (std::int64_t i = 1; i < k; ++i)
            embs.push_back(tensor::borrow(v[std::size_t(i)].data(), {rows, d}));
          for (const auto& e : embs) ptrs.push_back(&e);
          auto out = detail::dot_interaction_by(a, dense, ptrs, groups);
          ASSERT_TRUE(out.has_value());
          ASSERT_EQ(out->cols(), d + k * (k - 1) / 2);
          for (std::int64_t r = 0; r < rows; ++r) {
            const float* o = out->row(r);
            for (std::int64_t c = 0; c < d; ++c) ASSERT_EQ(o[c], v[0][std::size_t(r * d + c)]);
            std::int64_t at = d;
            for (std::int64_t i = 1; i < k; ++i)
              for (std::int64_t j = 0; j < i; ++j, ++at) {
                double want = 0;
                for (std::int64_t c = 0; c < d; ++c)
                  want += double(v[std::size_t(i)][std::size_t(r * d + c)]) *
                          v[std::size_t(j)][std::size_t(r * d + c)];
                ASSERT_NEAR(o[at], want, 1e-4 * (1 + std::abs(want)))
                    << "groups " << groups << " k " << k << " d " << d << " rows " << rows
                    << " row " << r << " pair " << i << "," << j;
              }
          }
        }
}

// Where the CPU has AVX-512, a sample's pairs are the same bits whether it is
// computed in a group of 12-16 or alone (a short tail, a batch of one): its score
// does not depend on its place in a batch, on calls merged with it or on how a
// call is split over workers.
TEST(ops_test, dot_interaction_gives_a_sample_the_same_bits_in_a_group_or_alone) {
  if (!detail::interaction_groups_available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  heap_allocator a;
  std::mt19937 rng(12);
  std::normal_distribution<float> z;
  for (const std::int64_t k : {2, 5, 17, 27, 40})
    for (const std::int64_t d : {3, 16, 100, 130}) {
      const std::int64_t rows = 37;  // groups of 16 and 16, then a tail of 5
      std::vector<std::vector<float>> v(std::size_t(k), std::vector<float>(std::size_t(rows * d)));
      for (auto& t : v)
        for (auto& x : t) x = z(rng);
      auto table = [&](std::int64_t from, std::int64_t n) {
        std::vector<tensor> parts;
        for (std::int64_t i = 0; i < k; ++i)
          parts.push_back(tensor::borrow(v[std::size_t(i)].data() + from * d, {n, d}));
        std::vector<const tensor*> ptrs;
        for (std::int64_t i = 1; i < k; ++i) ptrs.push_back(&parts[std::size_t(i)]);
        auto out = dot_interaction(a, parts[0], ptrs);
        EXPECT_TRUE(out.has_value());
        return std::move(*out);
      };
      const tensor all = table(0, rows);
      for (std::int64_t r = 0; r < rows; ++r) {
        const tensor one = table(r, 1);
        ASSERT_EQ(0, std::memcmp(one.row(0), all.row(r), std::size_t(all.cols()) * sizeof(float)))
            << "k " << k << " d " << d << " row " << r;
      }
      const tensor shifted = table(3, 20);  // rows 3..22: other groups, other tails
      for (std::int64_t r = 0; r < 20; ++r)
        ASSERT_EQ(0, std::memcmp(shifted.row(r), all.row(r + 3),
                                 std::size_t(all.cols()) * sizeof(float)))
            << "k " << k << " d " << d << " row " << r + 3;
    }
}

// Bags of none, one and several keys, summed and averaged (a bag's first row is
// copied, the rest added; an empty bag is zeros).
TEST(ops_test, embedding_bag_sums_and_averages_bags_of_any_size) {
  heap_allocator a;
  const float table[] = {1, 2, 3, 4, 5, 6, 7, 8};  // 4 rows of 2
  const std::int64_t indices[] = {2, 0, 1, 3, 3};
  const std::int64_t offsets[] = {0, 1, 1, 5};  // {2}, {}, {0, 1, 3, 3}
  auto sum = embedding_bag(a, table, 2, indices, offsets, reduce_op::sum);
  ASSERT_TRUE(sum.has_value());
  const std::vector<float> want_sum{5, 6, 0, 0, 1 + 3 + 7 + 7, 2 + 4 + 8 + 8};
  EXPECT_EQ(std::vector<float>(sum->data(), sum->data() + 6), want_sum);
  auto mean = embedding_bag(a, table, 2, indices, offsets, reduce_op::mean);
  ASSERT_TRUE(mean.has_value());
  EXPECT_FLOAT_EQ(mean->row(2)[0], 18.0f / 4);
  EXPECT_EQ(mean->row(1)[1], 0.0f);
}

// dst 0 <- {0 (a self edge), 1, 2}; dst 1 <- nothing. TransformerConv's dot
// logits with one column per head: head 0's keys are the source ids and its
// query 1, so its logits are 0, 1, 2; head 1's keys are 0 (a plain mean).
TEST(ops_test, attend_is_a_softmax_over_each_targets_edges_per_head) {
  heap_allocator a;
  float vv[] = {1, 10, 2, 20, 4, 40};  // 3 src nodes, 2 heads of 1 column
  float keys[] = {0, 0, 1, 0, 2, 0};
  float queries[] = {1, 1, 1, 1};
  std::int64_t indptr[] = {0, 3, 3};
  std::int32_t indices[] = {0, 1, 2};
  block b{2, 3, indptr, indices};
  auto v = tensor::borrow(vv, {3, 2});
  const gpu::attention_inputs in{keys, queries, nullptr, 2, 1, 1.0f, gpu::attention_score::dot};
  auto y = *attend(a, b, v, 2, in, false);
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_NEAR(y.data()[0], (1 + 2 * std::exp(1.0) + 4 * std::exp(2.0)) / z, 1e-5);
  EXPECT_NEAR(y.data()[1], 70.0 / 3, 1e-4);
  EXPECT_EQ(y.data()[2], 0.0f);  // no edges: 0, as PyG's softmax aggregation gives
  // With self-loops dst 0's i->i edge is replaced by one appended (the same set),
  // and dst 1 gets one: its own row, weight 1.
  auto s = *attend(a, b, v, 2, in, true);
  EXPECT_NEAR(s.data()[0], y.data()[0], 1e-6);
  EXPECT_FLOAT_EQ(s.data()[2], 2.0f);
  EXPECT_FLOAT_EQ(s.data()[3], 20.0f);
}

TEST(ops_test, gated_sum_weighs_each_message_by_its_sigmoid_gate) {
  heap_allocator a;
  float kv[] = {0.5f};
  float qv[] = {-0.5f, 1.0f};
  float vv[] = {3, 5};
  std::int64_t indptr[] = {0, 2};
  std::int32_t indices[] = {0, 1};
  block b{1, 2, indptr, indices};
  auto y = *gated_sum(a, b, tensor::borrow(kv, {1, 1}), tensor::borrow(qv, {2, 1}),
                      tensor::borrow(vv, {2, 1}));
  auto sig = [](double t) { return 1 / (1 + std::exp(-t)); };
  EXPECT_NEAR(y.data()[0], 3 * sig(0.0) + 5 * sig(1.5), 1e-5);
}

}  // namespace
}  // namespace spindle::nn
