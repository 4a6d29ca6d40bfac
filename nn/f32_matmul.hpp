// FP32 products of a linear layer's rows through oneDNN's matmul (AVX-512 JIT
// kernels, one primitive per input width, output width and accumulate flag on
// each thread, the row count given at run time), used by nn/ops' linear where
// oneDNN runs AVX-512 here: OpenBLAS picks its kernels by CPU model or by
// OPENBLAS_CORETYPE and can land on AVX2 or older ones (half the throughput
// on this project's machine), and is slow on products of a few rows, so those
// go to oneDNN even where OpenBLAS runs AVX-512 kernels.
#pragma once

#include <cstdint>

namespace spindle::nn {

/// y[m x n] = (accumulate ? y : 0) + x[m x k] W^T (W: [n x k], row-major), on
/// the calling thread. False when BLAS should run it (no AVX-512 for oneDNN,
/// SPINDLE_FP32_GEMM=openblas, or more than 64 rows where OpenBLAS runs AVX-512
/// kernels; SPINDLE_FP32_GEMM=onednn takes every size): the caller uses BLAS.
/// `product_rows`: the rows of the whole product these `m` are a range of (the
/// route is chosen per product, so a pool's split does not change it; 0: m).
bool f32_matmul(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                std::int64_t n, bool accumulate, std::int64_t product_rows = 0);

/// The same through oneDNN whatever the size or BLAS (benchmarks: the GEMM-only
/// limit takes the better routine); false without AVX-512 for oneDNN.
bool f32_matmul_onednn(const float* x, const float* w, float* y, std::int64_t m, std::int64_t k,
                       std::int64_t n, bool accumulate);

/// Which products f32_matmul takes (`spindle devices` prints it).
const char* f32_gemm_kernels();

/// Whether weights fixed for a model's life may be packed for oneDNN
/// (nn/packed_weight): oneDNN runs AVX-512 here and SPINDLE_FP32_GEMM is not openblas.
bool f32_packed_allowed();
/// Whether oneDNN runs its AVX-512 kernels on this CPU.
bool onednn_runs_avx512();

}  // namespace spindle::nn
