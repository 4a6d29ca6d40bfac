// DLRM's dot interaction for a group of up to sixteen samples at once, with the
// samples in the vector lanes (AVX-512): each sample's rows are transposed so a
// lane holds one sample, the pair products run as plain lane-wise FMAs in 4x4
// register tiles, and no dot needs a horizontal sum; a sample alone gets the same
// bits. Used by dot_interaction (nn/ops.hpp) where the CPU has AVX-512.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nn/tensor.hpp"

namespace spindle::nn::detail {

/// Groups need at least this many samples; fewer run one by one (the same
/// bits). A group's transposes cost as much for one sample as for sixteen:
/// at 27 x 128 a sample costs 1.35 us alone, 1.35 us in a group of 12, 1.03 us
/// in a group of 16, 1.96 us in a group of 8 (AMD EPYC, AVX-512).
inline constexpr int kMinInteractionGroup = 12;
inline constexpr int kInteractionGroup = 16;

/// The CPU runs the group kernel (x86-64 with AVX-512F).
bool interaction_groups_available();

/// Floats of scratch one group needs: k rows of d (rounded up to 16) by 16
/// lanes, and the pairs (rounded up to 16) by 16 lanes.
std::size_t interaction_group_scratch(std::int64_t k, std::int64_t d);

/// Pairs of `n` (1-16) samples: sample s's row i is rows[i] + s * d (k rows, d
/// wide); sample s's k(k-1)/2 pair products, the strict lower triangle in
/// row-major order, go to out + s * out_stride. Nothing else is written.
/// Requires interaction_groups_available().
void interaction_group(const float* const* rows, std::int64_t k, std::int64_t d, int n,
                       float* out, std::int64_t out_stride, float* scratch);

/// One sample's pairs (as interaction_group's, in `out`), the same bits as the
/// sample's lane in a group: its rows transposed, rows 0..i-1 in the lanes of
/// row i's products. `scratch` as for a group. Requires
/// interaction_groups_available().
void interaction_sample(const float* const* rows, std::int64_t k, std::int64_t d, float* out,
                        float* scratch);

/// dot_interaction with the sample groups on or off (`groups` needs
/// interaction_groups_available()): tests compare the two routes.
expected<tensor> dot_interaction_by(allocator& a, const tensor& dense,
                                    const std::vector<const tensor*>& embeddings, bool groups);

}  // namespace spindle::nn::detail
