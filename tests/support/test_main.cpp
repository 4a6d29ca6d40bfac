// The main of every C++ test binary: gtest's, after the BLAS kernel check the
// `spindle` binary makes. A test that computes answers in its own process and
// compares them bit for bit with a spindle process's must run the same OpenBLAS
// kernels (on a CPU OpenBLAS takes for Prescott, spindle restarts itself with
// others); a binary without OpenBLAS is left alone.
#include <gtest/gtest.h>

#include "core/blas_kernels.hpp"

int main(int argc, char** argv) {
  spindle::ensure_blas_kernels(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
