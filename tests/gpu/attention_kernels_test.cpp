// The attention layers' device elements (gpu/kernels/attention_row.hpp) against
// the host operators: GATv2's and TransformerConv's softmax aggregation, with
// and without self-loops (blocks with i->i edges and empty rows), and
// ResGatedGraphConv's gated sum, element for element.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/kernels/attention_row.hpp"
#include "nn/ops.hpp"
#include "tests/gpu/random_block.hpp"

namespace spindle::gpu {
namespace {

// Every slot's logit as the logits kernel writes them.
std::vector<float> slot_logits(const csr_block& b, std::int64_t dst, int heads,
                               const attention_inputs& in, bool self_loops) {
  std::vector<float> out(std::size_t((std::int64_t(b.indices.size()) + dst) * heads), NAN);
  for (std::int64_t r = 0; r < dst; ++r) {
    const std::int64_t lo = b.indptr[r], deg = b.indptr[r + 1] - lo;
    const std::int64_t first = attention_first_slot(b.indptr.data(), r);
    for (std::int64_t t = 0; t < deg + (self_loops ? 1 : 0); ++t)
      for (int k = 0; k < heads; ++k)
        out[std::size_t((first + t) * heads + k)] =
            attention_logit(in, r, t < deg ? b.indices[lo + t] : r, k);
  }
  return out;
}

void expect_attention_matches(attention_score mode, bool self_loops) {
  std::mt19937 rng(17);
  const std::int64_t dst = 40, src = 90, c = 8;
  const int heads = 3;
  const std::int64_t hc = heads * c;
  auto b = random_block(rng, dst, src, 8, true);
  auto xs = normal_values(rng, src * hc), xd = normal_values(rng, dst * hc),
       att = normal_values(rng, hc), v = normal_values(rng, src * hc);
  const attention_inputs in{xs.data(), xd.data(), att.data(), hc, c,
                            mode == attention_score::gatv2 ? 0.2f : 0.35f, mode};
  nn::heap_allocator alloc;
  auto host = nn::attend(alloc, {dst, src, b.indptr, b.indices},
                         nn::tensor::borrow(v.data(), {src, hc}), heads, in, self_loops);
  ASSERT_TRUE(host.has_value());
  const auto logits = slot_logits(b, dst, heads, in, self_loops);
  for (std::int64_t r = 0; r < dst; ++r)
    for (std::int64_t col = 0; col < hc; ++col) {
      const float want = host->row(r)[col];
      ASSERT_NEAR(attend_element(b.indptr.data(), b.indices.data(), logits.data(), v.data(), hc, c,
                                 heads, r, col, self_loops),
                  want, 1e-5f * std::max(1.0f, std::abs(want)))
          << "row " << r << " column " << col;
    }
}

TEST(attention_kernels, gatv2_elements_equal_the_host_aggregation) {
  expect_attention_matches(attention_score::gatv2, true);
  expect_attention_matches(attention_score::gatv2, false);
}

TEST(attention_kernels, transformer_elements_equal_the_host_aggregation) {
  expect_attention_matches(attention_score::dot, false);
}

TEST(attention_kernels, gated_elements_equal_the_host_gated_sum) {
  std::mt19937 rng(19);
  const std::int64_t dst = 30, src = 70, c = 12;
  auto b = random_block(rng, dst, src, 9, true);
  auto k = normal_values(rng, dst * c), q = normal_values(rng, src * c),
       v = normal_values(rng, src * c);
  nn::heap_allocator alloc;
  auto host = nn::gated_sum(alloc, {dst, src, b.indptr, b.indices},
                            nn::tensor::borrow(k.data(), {dst, c}),
                            nn::tensor::borrow(q.data(), {src, c}),
                            nn::tensor::borrow(v.data(), {src, c}));
  ASSERT_TRUE(host.has_value());
  for (std::int64_t r = 0; r < dst; ++r)
    for (std::int64_t col = 0; col < c; ++col)
      ASSERT_NEAR(gated_element(b.indptr.data(), b.indices.data(), k.data(), q.data(), v.data(), c,
                                r, col),
                  host->row(r)[col], 1e-5f * std::max(1.0f, std::abs(host->row(r)[col])));
}

TEST(attention_kernels, the_beta_gate_is_the_sigmoid_of_its_three_part_dot_product) {
  const float out[] = {1, 2}, xr[] = {0.5f, -1}, w[] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  const float z = 0.1f * 1 + 0.2f * 2 + 0.3f * 0.5f + 0.4f * -1 + 0.5f * 0.5f + 0.6f * 3;
  EXPECT_NEAR(beta_gate(out, xr, w, 2), 1 / (1 + std::exp(-z)), 1e-6);
}

}  // namespace
}  // namespace spindle::gpu
