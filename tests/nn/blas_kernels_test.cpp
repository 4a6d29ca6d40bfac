// The BLAS kernel choice: which OpenBLAS cores count as at the AVX2 level, and
// that the pick follows the CPU's features.
#include "nn/blas_kernels.hpp"

#include <gtest/gtest.h>

namespace spindle::nn {
namespace {

TEST(blas_kernels, strong_cores_are_the_avx2_level_and_up) {
  for (auto c : {"Haswell", "SkylakeX", "Cooperlake", "Zen", "SapphireRapids", "skylakex"})
    EXPECT_TRUE(strong_blas_core(c)) << c;
  for (auto c : {"Prescott", "Core2", "Nehalem", "Sandybridge", "Atom", "", "Haswel", "Haswellx"})
    EXPECT_FALSE(strong_blas_core(c)) << c;
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
  if (!best.empty()) EXPECT_TRUE(strong_blas_core(best));
  EXPECT_FALSE(blas_core().empty());
}

}  // namespace
}  // namespace spindle::nn
