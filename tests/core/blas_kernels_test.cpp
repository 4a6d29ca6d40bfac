// The BLAS kernel choice: the level of each OpenBLAS core, and that the pick
// follows the CPU's features.
#include "core/blas_kernels.hpp"

#include <gtest/gtest.h>

namespace spindle {
namespace {

TEST(blas_kernels, cores_rank_by_their_instruction_level) {
  for (auto c : {"SkylakeX", "Cooperlake", "SapphireRapids", "skylakex"})
    EXPECT_EQ(blas_core_level(c), 2) << c;
  for (auto c : {"Haswell", "Zen", "HASWELL"}) EXPECT_EQ(blas_core_level(c), 1) << c;
  for (auto c : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Atom", "", "Haswel", "Haswellx"})
    EXPECT_EQ(blas_core_level(c), 0) << c;
}

TEST(blas_kernels, the_pick_follows_the_cpu_features) {
  __builtin_cpu_init();
  const auto best = best_blas_core();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    EXPECT_EQ(best, "SkylakeX");
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    EXPECT_EQ(best, "Haswell");
  else
    EXPECT_EQ(best, "");
}

}  // namespace
}  // namespace spindle
